"""What the numbers of a gradient check are to the judge, to `check.json` and to every view
(docs/DESIGN.md §9): one protocol that each check's result type keeps, and the registry of
those types by name.

A check (`_pipeline.checks._gradchecks.CHECKS`) names the class of the numbers it collects
(`TaylorResult` in `_taylor`, `JvpResult` in `_jvp`); that class says
everything that is particular to the check, so that the judge, the serialisation and the
views handle every check alike and none of them branches on one:

- `array`: the gradient array it checks;
- `to_json()` / `from_json(data)`: its numbers as its evaluation record keeps them;
- `judge() -> (Verdict, reason)`: its rule (`_verdict.judge_check` makes the judgement);
- `summary(reason) -> str`: what its summary line says after `case: verdict: ` (the
  terminal, pytest's message, the JSON's `summary`, every table's title);
- `measure(results) -> str`, a class method: the number a variant's cell of the check shows
  over its arrays (`ok 2.00`, `FAIL 8e-03`);
- `view_json() -> dict`: what its case adds to the JSON (`weanj diff --json`, the views in
  `check.json`, `Judgement.to_json()`);
- optionally `plot(ax, subject) -> (title, what)`: draws it on a matplotlib `Axes` where it
  fails (the report's picture; the report makes the figure, titles it and embeds it).

Why here and not in `_report`: the views (`_report`, layer 5) may import the judge, never
the other way round, and a check's numbers are the judge's; a result type writes its own
text with the numbers' one form (`num`, `finite`, which the views use too), importing no
view. `RESULTS` holds the types by name: the name is the field of a case in `check.json`
that holds its numbers (`taylor`; `directional` for the jvp check's `JvpResult`), so
`_serial` reads and writes any registered check without naming one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .._model._verdicts import Verdict


def num(x: float | None, digits: int = 2) -> str:
    """A number as every view writes it: `1.23e-04`, `—` for none, `NaN/Inf` where not
    finite."""
    if x is None:
        return "—"
    return f"{x:.{digits}e}" if math.isfinite(x) else str(Verdict.NONFINITE)


def finite(x: float | None) -> float | None:
    """A number as the JSON writes it: `null` where none or not finite."""
    return float(x) if x is not None and math.isfinite(x) else None


@runtime_checkable
class CheckResult(Protocol):
    """The numbers of one gradient check of one array (see the module's docstring)."""

    array: str

    def to_json(self) -> dict[str, Any]: ...

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult: ...

    def judge(self) -> tuple[Verdict, str]: ...

    def summary(self, reason: str) -> str: ...

    @classmethod
    def measure(cls, results: Sequence[CheckResult]) -> str: ...

    def view_json(self) -> dict[str, Any]: ...


# name (its field in check.json) -> result type, in the order check.json writes the fields
RESULTS: dict[str, type] = {}


def check_result(name: str):
    """Registers a result type under `name` (a class decorator)."""

    def register(cls: type) -> type:
        missing = [
            m
            for m in ("to_json", "from_json", "judge", "summary", "measure", "view_json")
            if not callable(getattr(cls, m, None))
        ]
        if missing:
            raise TypeError(f"{cls.__name__} lacks {', '.join(missing)} of a check's result")
        if name in RESULTS and RESULTS[name] is not cls:
            raise ValueError(f"a check result named {name!r} is registered already")
        RESULTS[name] = cls
        return cls

    return register
