"""The report's data: what `_page` gathers per example and `_html` and `_md` render.

`ExamplePage` holds one example's judgement (`ExampleJudgement`, from a live run or read
back from its `check.json`), or the one line saying why there is none to show (`state`:
not checked, checked on other inputs, an unreadable file); its table of variants, the
failures for the first table, the pairs to draw and its benchmark records; `anchor`
names the element ids the pages link to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._judge._alone import alone
from .._judge._verdict import CaseJudgement, ExampleJudgement
from .._model import Example
from .._model._verdicts import Verdict
from ._cells import Cell
from ._lines import alone_text, expected_count

# The page's states beside the judge's verdicts: an example without a judgement to show,
# one whose inputs could not be read, a page with either.
NOT_CHECKED, NOT_JUDGED, INCOMPLETE = "not checked", "not judged", "incomplete"
# a page whose judgements leave variants out (`weanj check --variants`, a variant added since)
PARTIAL = "partial"


@dataclass
class VariantRow:
    variant: str
    family: str
    anchor: str
    verdict: str  # the judge's verdict of the variant (`ExampleJudgement.variant_verdict`)
    loss: float | None = None
    checks: dict[Any, Cell] = field(default_factory=dict)  # a `CaseKind` of GRADIENT_CHECKS
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
    ej: ExampleJudgement | None  # None: nothing to show (`state` says why)
    state: str = ""  # one line, where there is no judgement: what runs it
    error: str | None = None  # the judge could not judge it (its inputs)
    rows: list[VariantRow] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)  # reason: labels
    unavailable: dict[str, list[str]] = field(default_factory=dict)  # reason: labels
    # label at fault: the cases not compared because of it
    not_compared: dict[str, list[str]] = field(default_factory=dict)
    pictures: list[CaseJudgement] = field(default_factory=list)
    suspects: set[str] = field(default_factory=set)  # the judge's suspects (`_judge._suspects`)
    left_out_pictures: int = 0
    bench: list[dict[str, Any]] | None = None
    bench_environments: dict[str, dict] = field(default_factory=dict)  # file name: environment
    catalog: Any = None  # the example with its variants

    @property
    def name(self) -> str:
        return self.example.name

    @property
    def judged(self) -> bool:
        return self.ej is not None and self.error is None

    @property
    def verdict(self) -> str:
        """The judge's verdict of the example (its worst failing verdict, or ok), `not
        judged` (its inputs could not be read) or `not checked` (no judgement to show)."""
        if self.ej is None:
            return NOT_CHECKED
        if self.error is not None:
            return NOT_JUDGED
        return str(self.ej.verdict)

    @property
    def failing(self) -> bool:
        return self.judged and not self.ej.ok


def anchor(*parts: str) -> str:
    """An element id: the parts joined as case ids are (`EX::FAMILY::A~B`), so that a
    pair's anchor is its pytest id; whitespace, which no id may hold, becomes `_`."""
    return "::".join("_".join(p.split()) for p in parts)


def judged_line(p: ExamplePage) -> str:
    """When and by what the example was judged (the judgement's own time)."""
    return f"judged by `weanj check` at {p.ej.judged_at}"


def variant_anchor(example_name: str, variant: str) -> str:
    return anchor(example_name, "variant", variant)


def overall(pages: list[ExamplePage]) -> tuple[str, str]:
    """The overall verdict and the sentence after it."""
    failed = [p.name for p in pages if p.failing]
    unjudged = [p.name for p in pages if p.verdict == NOT_JUDGED]
    unchecked = [p.name for p in pages if p.verdict == NOT_CHECKED]
    rows = [r for p in pages if p.judged for r in p.rows]
    unseen = [r.variant for r in rows if not r.verdict]  # not in the judgement shown
    verdict = str(Verdict.FAIL if failed else Verdict.OK)
    if not failed and (unjudged or unchecked):
        verdict = INCOMPLETE
    elif not failed and unseen:
        verdict = PARTIAL
    parts = []
    if unseen:  # a partial check never reads as a full one
        shown = ", ".join(unseen[:3]) + (f" and {len(unseen) - 3} more" if len(unseen) > 3 else "")
        parts.append(
            f"partial: {len(rows) - len(unseen)} of {len(rows)} variants judged "
            f"({shown} not in the last check: weanj check judges them)"
        )
    lonely = [a for p in pages if p.judged for a in alone(p.ej)]
    if lonely:  # an ok that compared nothing never reads as a cross-validation
        parts.append(alone_text(lonely))
    parts.append(f"{len(pages)} example(s)")
    if failed:
        parts.append(f"failing: {', '.join(failed)}")
    if unjudged:
        parts.append(f"not judged: {', '.join(unjudged)}")
    expected = sum(len(p.ej.expected) for p in pages if p.ej is not None)
    if expected:
        parts.append(f"{expected_count(expected)} (declared, shown with the reason)")
    if unchecked:
        parts.append(f"not checked: {', '.join(unchecked)} (weanj check)")
    return verdict, "; ".join(parts)
