"""A check's progress on stderr (docs/DESIGN.md §8.3): with `-v`, one line per evaluation
(`[3/29] 01-jacobi jax-jacobi: 1.2 s, ok`); without, one line per example once it is
judged (`[2/6] 02-gauss-seidel: 18 evaluation(s), 4.1 s, ok`), so that a long check says
where it is without a line per run. The heartbeat (`_watch`) speaks for slow phases
either way, and what is absent (a device `[tool.weanj] devices` names) is said once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._judge._events import EvaluationFinished, ExampleJudged
from ..._model import Gradient
from ..._model._verdicts import Verdict


class Progress:
    """A listener of a run's events (`_judge._events`): each evaluation finished (with
    `verbose`, its line), each example judged (without, its line)."""

    def __init__(self, total: int, say: Callable[[str], None], *, examples: int, verbose: bool):
        self.done, self.total, self.say = 0, total, say
        self.verbose = verbose
        self.examples, self.judged = examples, 0
        self._evaluations = 0

    def __call__(self, event: Any) -> None:
        if isinstance(event, EvaluationFinished):
            self.line(event)
        elif isinstance(event, ExampleJudged):
            ej = event.judgement
            if ej.error is None:
                self.example_done(ej.name, ej.seconds, ej.state)

    def line(self, event: EvaluationFinished) -> None:
        """One evaluation done: `how` it went (`1.2 s`, `reused`), then where."""
        self.done += 1
        self._evaluations += 1
        if self.verbose:
            found = event.outcome
            status = Verdict.OK if isinstance(found, Gradient) else found.verdict
            compiled = ""
            if isinstance(found, Gradient) and found.cost.compiled:
                n, seconds = len(found.cost.compiled), found.cost.compile_s
                compiled = f" ({n} program(s) compiled, {seconds:.1f} s)"
            self.say(
                f"[{self.done}/{self.total}] {event.example} {event.label}: {event.how}, "
                f"{status}{compiled}{event.tail}"
            )

    def example_done(self, name: str, seconds: float, state: str) -> None:
        """One example judged (without `-v`: its one line)."""
        self.judged += 1
        if not self.verbose:
            self.say(
                f"[{self.judged}/{self.examples}] {name}: {self._evaluations} evaluation(s), "
                f"{seconds:.1f} s, {state}"
            )
        self._evaluations = 0
