"""The stream of a check: one event per thing done, in the order it is done (docs/DESIGN.md,
"One stream of events").

A run (`_pipeline.engine._run.CheckRun`) emits these, and every front end is a listener of them:
the progress on stderr, the terminal's text, `--format jsonl`, `check.json`, the store
writes, the notebook's `Judgement` and the pytest plugin. None drives the run, none
re-implements its iteration (pytest's reporters and `report_log.py` are the model).

A listener is any callable of one event; it is called in the run's thread, in the order
the listeners were registered (`Stream.listen`), and it sees each event once. The events
are data: the judgements and evaluations they carry are the judge's own objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .._model import Gradient
from ._contract import Fault
from ._judgement import Judgement
from ._verdict import CaseJudgement, ExampleJudgement


@dataclass(frozen=True)
class EvaluationStarted:
    """An evaluation (a variant on the run's inputs, in a dtype, on a device) begins
    here: in this process, or sent to an engine's workers."""

    example: str
    label: str


@dataclass(frozen=True)
class EvaluationFinished:
    """An evaluation came back (`outcome`: its `Gradient`, or its `Fault`): `how` it
    went (`1.2 s`, `reused`), and where, for an engine's (`tail`: ` (on tcp://…)`)."""

    example: str
    label: str
    outcome: Gradient | Fault
    how: str
    tail: str = ""


@dataclass(frozen=True)
class CaseJudged:
    """One case of an example's table, judged."""

    example: str
    judgement: CaseJudgement


@dataclass(frozen=True)
class ExampleJudged:
    """Every case of one example judged (or the example not judged, saying why)."""

    judgement: ExampleJudgement


@dataclass(frozen=True)
class RunFinished:
    """The run is over: the whole `Judgement` (the data: every example, and what is said
    once per run: what did not run, the suspects, the notes)."""

    judgement: Judgement


Event = EvaluationStarted | EvaluationFinished | CaseJudged | ExampleJudged | RunFinished
Listener = Callable[[Any], None]


class Stream:
    """The listeners of one run, each called with every event in turn."""

    def __init__(self, listeners: Iterable[Listener] = ()):
        self.listeners: list[Listener] = [x for x in listeners if x is not None]

    def listen(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def emit(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)
