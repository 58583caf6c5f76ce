"""The report's data: what `_page` gathers per example and `_html` and `_md` render.

`ExamplePage` holds one example's judgement of the store, its last check's verdicts,
its table of variants, the failures for the first table, the pairs to draw and its
benchmark records; `anchor` names the element ids the pages link to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._judge._verdict import CaseJudgement, ExampleJudgement
from .._model import Example
from ._cells import Cell, same_family_pairs, suspects  # noqa: F401 (the page's cells)
from ._lines import expected_count
from ._verdicts_file import CheckVerdicts


@dataclass
class VariantRow:
    variant: str
    family: str
    anchor: str
    verdict: str  # a verdict (ok, FAIL, error, NaN/Inf, timeout, unavailable, ...), missing, stale
    loss: float | None = None
    taylor: Cell = field(default_factory=Cell)
    jvp: Cell = field(default_factory=Cell)
    float32: Cell = field(default_factory=Cell)
    pairs: Cell = field(default_factory=Cell)
    seconds: float | None = None
    note: str = ""


@dataclass
class Failure:
    """One line of the first table: who fails, in which array, and where the evidence is."""

    subject: str
    array: str | None
    what: str
    links: list[tuple[str, str]]


@dataclass
class ExamplePage:
    example: Example
    ej: ExampleJudgement | None
    check: CheckVerdicts
    error: str | None = None
    rows: list[VariantRow] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)  # reason: labels
    unavailable: dict[str, list[str]] = field(default_factory=dict)  # reason: labels
    # label at fault in the last check: the cases not compared because of it
    not_compared: dict[str, list[str]] = field(default_factory=dict)
    pictures: list[CaseJudgement] = field(default_factory=list)
    suspects: set[str] = field(default_factory=set)  # labels failing against most of a family
    left_out_pictures: int = 0
    bench: list[dict[str, Any]] | None = None
    bench_environments: dict[str, dict] = field(default_factory=dict)  # file name: environment
    catalog: Any = None  # the example with its variants

    @property
    def name(self) -> str:
        return self.example.name

    @property
    def checks(self) -> list[dict[str, Any]]:
        return self.check.data.get("checks", []) if self.check.current else []

    @property
    def verdict(self) -> str:
        """FAIL, ok, or "not judged" (its inputs could not be read, or nothing is stored)."""
        if self.failures:
            return "FAIL"
        if self.error is not None or self.ej is None or not self.ej.subjects:
            return "not judged"
        return "ok"


def anchor(*parts: str) -> str:
    """An element id: the parts joined as case ids are (`EX::FAMILY::A~B`), so that a
    pair's anchor is its pytest id; whitespace, which no id may hold, becomes `_`."""
    return "::".join("_".join(p.split()) for p in parts)


def variant_anchor(example_name: str, variant: str) -> str:
    return anchor(example_name, "variant", variant)


def overall(pages: list[ExamplePage]) -> tuple[str, str]:
    """The overall verdict and the sentence after it."""
    failed = [p.name for p in pages if p.verdict == "FAIL"]
    unjudged = [p.name for p in pages if p.verdict == "not judged"]
    verdict = "FAIL" if failed else ("ok" if not unjudged else "incomplete")
    parts = [f"{len(pages)} example(s)"]
    if failed:
        parts.append(f"failing: {', '.join(failed)}")
    if unjudged:
        parts.append(f"not judged: {', '.join(unjudged)}")
    expected = sum(len(p.ej.expected) for p in pages if p.ej is not None)
    if expected:
        parts.append(f"{expected_count(expected)} (declared, shown with the reason)")
    no_checks = [p.name for p in pages if p.error is None and not p.check.current]
    if no_checks:
        parts.append(f"no current gradient checks for {', '.join(no_checks)} (weanj check)")
    return verdict, "; ".join(parts)
