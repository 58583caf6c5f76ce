"""`Judgement`, the data: every example's `ExampleJudgement` from one `weanj check` or
`weanj diff`, and what follows from them (ok, failures, the verdict, the exit code). Its
views (the terminal's text, JSON, a notebook's HTML) are `weanj.JudgementView`'s
(`_report/_judgement.py`), the subclass `weanj.check()` and `weanj.diff()` return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._model._verdicts import Verdict
from ._alone import alone
from ._verdict import CaseJudgement, ExampleJudgement


@dataclass
class Coverage:
    """What a run did not judge, said in every headline (docs/DESIGN.md §8.2) with the
    `Judgement`'s `did_not_run` (the Julia variants and family references that did not
    run): the registered variants its scope left out (`--variants`), and the devices asked
    for in `[tool.weanj] devices` that are absent here (`{kind: why}`)."""

    variants: int = 0  # the registered variants of the examples judged
    left_out: tuple[str, ...] = ()  # of them, those outside the run's scope
    absent: dict[str, str] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return bool(self.left_out)

    @property
    def judged(self) -> int:
        return self.variants - len(self.left_out)

    def to_json(self) -> dict[str, Any]:
        return {
            "partial": self.partial,
            "variants": self.variants,
            "judged": self.judged,
            "left_out": list(self.left_out),
            "devices_not_run": dict(self.absent),
        }


@dataclass
class Judgement:
    """Every example's judgement from one `check` or `diff`.

    - `examples`: `{name: ExampleJudgement}` in the order judged (also `judgement[name]`).
    - `ok`: every example judged and nothing failing; `failures`: every failing case.
    - `exit_code`: 0, 1 (something fails) or 2 (an example could not be judged).
    - `alone`: the families whose members that ran were compared with nothing
      (`_alone.Alone`, each with its `line`); with `strict` (`weanj check --strict`) they
      fail the check.
    """

    command: str  # "check" or "diff"
    examples: dict[str, ExampleJudgement] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ("float64",)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # compilation, reuse, what else was done
    # variants that did not run and that the result leans on: [(label, why, required)]
    did_not_run: list[tuple[str, str, bool]] = field(default_factory=list)
    suspects: list[Any] = field(default_factory=list)  # `_judge._suspects.Suspect`s, by example
    coverage: Coverage = field(default_factory=Coverage)  # what the run's scope left out
    # `weanj check --strict`: a variant compared with nothing (`alone`) fails the check
    strict: bool = False

    def __getitem__(self, name: str) -> ExampleJudgement:
        return self.examples[name]

    def __iter__(self):
        return iter(self.examples.values())

    def __len__(self) -> int:
        return len(self.examples)

    @property
    def ok(self) -> bool:
        every = all(ej.ok for ej in self.examples.values())
        return every and not self.required_missing and not self.strict_failure

    @property
    def alone(self) -> list[Any]:
        """The families whose members that ran were compared with nothing, every example's
        (`_alone.Alone`: said in every headline, a failure only with `strict`)."""
        return [a for ej in self.examples.values() for a in alone(ej)]

    @property
    def strict_failure(self) -> bool:
        """`strict` and a variant compared with nothing: the check fails on it."""
        return self.strict and bool(self.alone)

    @property
    def required_missing(self) -> list[tuple[str, str, bool]]:
        """The variants the project requires (`require`) that did not run."""
        return [m for m in self.did_not_run if m[2]]

    @property
    def failures(self) -> list[CaseJudgement]:
        return [j for ej in self.examples.values() for j in ej.failures]

    @property
    def not_judged(self) -> dict[str, str]:
        return {name: ej.error for name, ej in self.examples.items() if ej.error is not None}

    @property
    def verdict(self) -> str:
        if any(ej.judged and not ej.ok for ej in self.examples.values()):
            return str(Verdict.FAIL)
        if self.required_missing or self.strict_failure:
            return str(Verdict.FAIL)
        return "not judged" if self.not_judged else str(Verdict.OK)

    @property
    def exit_code(self) -> int:
        if self.not_judged:
            return 2
        return 0 if self.ok else 1

    @property
    def expected(self) -> list[CaseJudgement]:
        """Every case that differs as declared (`weanj.Expected`): verdict `expected`."""
        return [j for ej in self.examples.values() for j in ej.judgements if j.verdict.declared]

    def verdicts(self) -> dict[str, str]:
        """`{case id: verdict}` of every case of every example (what front ends compare)."""
        return {j.case: str(j.verdict) for ej in self for j in ej.judgements}
