"""A check's progress on stderr (docs/DESIGN.md §8.3): with `-v`, one line per evaluation
(`[3/29] 01-jacobi jax-jacobi: 1.2 s, ok`); without, one line per example once it is
judged (`[2/6] 02-gauss-seidel: 18 evaluation(s), 4.1 s, ok`), so that a long check says
where it is without a line per run. The heartbeat (`_watch`) speaks for slow phases
either way, and what is absent (a device `[tool.weanj] devices` names) is said once."""

from __future__ import annotations

from collections.abc import Callable

from .._judge._contract import Fault
from .._model import Gradient
from .._model._verdicts import Verdict


class Progress:
    """Called by the session per evaluation (`__call__`), or by an engine evaluating
    elsewhere (`line`); `example_done` at each example's end."""

    def __init__(self, total: int, say: Callable[[str], None], *, examples: int, verbose: bool):
        self.done, self.total, self.say = 0, total, say
        self.example = ""
        self.verbose = verbose
        self.examples, self.judged = examples, 0
        self._evaluations = 0

    def __call__(self, label: str, found: Gradient | Fault, seconds: float, reused: bool) -> None:
        self.line(self.example, label, found, "reused" if reused else f"{seconds:.1f} s")

    def line(self, example: str, label: str, found: Gradient | Fault, how: str, tail="") -> None:
        """One evaluation done: `how` it went (`1.2 s`, `reused`), then `tail`."""
        self.done += 1
        self._evaluations += 1
        if self.verbose:
            status = Verdict.OK if isinstance(found, Gradient) else found.verdict
            self.say(f"[{self.done}/{self.total}] {example} {label}: {how}, {status}{tail}")

    def example_done(self, name: str, seconds: float, state: str) -> None:
        """One example judged (without `-v`: its one line)."""
        self.judged += 1
        if not self.verbose:
            self.say(
                f"[{self.judged}/{self.examples}] {name}: {self._evaluations} evaluation(s), "
                f"{seconds:.1f} s, {state}"
            )
        self._evaluations = 0
