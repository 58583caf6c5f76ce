"""`weanj check --format jsonl`: one JSON object per line, as the run goes (a listener of
its events, `_judge._events`; pytest's `report_log.py` is the model).

Each case judged is one line as soon as it is judged (`"event": "case"`, the case's JSON
as `weanj diff --json` writes it, with its example); each example judged one line
(`"event": "example"`); the run's end one line (`"event": "run"`: the verdict, the
headline, what did not run, the suspects). Each line is flushed: a reader follows the
check while it runs.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from .._judge._alone import alone
from .._judge._events import CaseJudged, ExampleJudged, RunFinished
from ._json import judgement_json


class JsonLines:
    """The listener: each event a line of `out` (stdout by default)."""

    def __init__(self, *, verbose: bool = False, out: TextIO | None = None):
        self.out = out

    def _write(self, data: dict[str, Any]) -> None:
        out = self.out or sys.stdout
        out.write(json.dumps(data, allow_nan=False, default=str) + "\n")
        out.flush()

    def __call__(self, event: Any) -> None:
        if isinstance(event, CaseJudged):
            self._write(
                {"event": "case", "example": event.example, **judgement_json(event.judgement)}
            )
        elif isinstance(event, ExampleJudged):
            ej = event.judgement
            self._write(
                {"event": "example", "example": ej.name, "state": ej.state, "ok": ej.ok}
                | {"alone": [a.to_json() for a in alone(ej)]}  # compared with nothing
                | ({"error": ej.error} if ej.error is not None else {})
            )
        elif isinstance(event, RunFinished):
            from ._judgement import JudgementView

            data = JudgementView.of(event.judgement).to_json()
            data.pop("examples")  # said line by line above
            self._write({"event": "run", **data})
