"""What `weanj check --format` prints on stdout: each format one listener of the run's
events (`_judge._events`), made with the command's `verbose`."""

from __future__ import annotations

import sys
from typing import Any

from .._judge._events import RunFinished
from ._jsonl import JsonLines


class Text:
    """The terminal's text, once the run is over (`JudgementView.lines`)."""

    def __init__(self, *, verbose: bool = False):
        self.verbose = verbose

    def __call__(self, event: Any) -> None:
        if isinstance(event, RunFinished):
            from ._judgement import JudgementView

            lines = JudgementView.of(event.judgement).lines(verbose=self.verbose)
            print("\n".join(lines), file=sys.stdout)


# {--format: the listener's class}; the command line's choices are these names
FORMATS = {"text": Text, "jsonl": JsonLines}
