"""What every table says of one variant, computed once for the terminal, the HTML page,
the Markdown summary and a notebook: its gradient checks, its float32 run, and whether it
agrees with its family. Which side of a failing pair is wrong is the judge's word
(`ExampleJudgement.suspects`, `_judge._suspects`), handed in as `accused`; nothing here
decides a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._judge._checks import num
from .._judge._verdict import CaseJudgement, ExampleJudgement
from .._model._verdicts import GRADIENT_CHECKS, CaseKind, Verdict
from ._lines import compared_name, summary


@dataclass
class Cell:
    """One table cell: its text, the verdict that colours it, links to the cases behind it
    (`(text, case id)`) and a longer explanation."""

    text: str = "—"
    verdict: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)
    title: str = ""
    plain: str = ""  # the text where no links are drawn (the terminal), when it differs

    def terminal(self) -> str:
        return self.plain or self.text


def shown_checks(ej: ExampleJudgement) -> tuple[CaseKind, ...]:
    """The gradient checks a variants' table of this example has a column for: every one
    but those of some examples only (`CaseKind.optional`: the second order, the outputs'
    Jacobian), which have one where the example has such cases."""
    return tuple(k for k in GRADIENT_CHECKS if not getattr(k, "optional", False) or ej.of_kind(k))


def compared(ej: ExampleJudgement) -> list[CaseJudgement]:
    """The cases that compare two subjects elementwise, in table order: the gradients'
    pairs, and the outputs' and Hessian-vector products' where the example has them."""
    return [j for j in ej.judgements if CaseKind(j.kind).compares]


def same_family_pairs(ej: ExampleJudgement) -> list[CaseJudgement]:
    """The compared float64 same-family pairs (float32 pairs are the float32 column's):
    their gradients, outputs and Hessian-vector products."""
    return [
        j
        for j in compared(ej)
        if j.verdict.judged  # not skipped, not the information across families
        and len(j.subjects) == 2
        and not j.subjects[1].endswith("@float32")
    ]


def checks_of(ej: ExampleJudgement, label: str, kind: CaseKind) -> list[CaseJudgement]:
    """The judgements of one gradient check of one variant, every array."""
    return [j for j in ej.of_kind(kind) if j.subjects == (label,)]


def _measure(js: list[CaseJudgement]) -> str:
    """The number a check's cell shows, as its result type measures it over the arrays
    (the smallest Taylor rate, the largest forward against reverse error); "" where no
    judgement carries numbers (its verdict and summary say it)."""
    results = [j.result for j in js if j.result is not None]
    return type(results[0]).measure(results) if results else ""


def _of_numbers(v: Verdict) -> bool:
    """A verdict the numbers alone give (`ok`, `FAIL`): its cell shows the number; any other
    (`NaN/Inf`, `expected`, `unexpectedly ok`, …) says its word, whose reason is the title."""
    return v is Verdict.OK or v is Verdict.FAIL


def _skipped_cell(js: list[CaseJudgement]) -> Cell:
    """Cases all skipped: `not compared` where a subject is at fault (naming it), else
    `skipped`, with the reason."""
    reason = next((j.reason for j in js if j.reason), "")
    text = "not compared" if any(j.blocked_by for j in js) else str(Verdict.SKIPPED)
    return Cell(text, str(Verdict.SKIPPED), [], reason)


def check_cell(js: list[CaseJudgement], kind: CaseKind | str) -> Cell:
    """A variant's cell of one gradient check: its worst verdict with the check's number
    (`_measure`), links to the arrays of that verdict, the summaries as its title."""
    if not js:
        return Cell("—", "", [], f"no {kind} check")
    worst = Verdict.worst(j.verdict for j in js)
    if worst == Verdict.SKIPPED:
        return _skipped_cell(js)
    shown = _measure(js)
    links = [(j.array or str(kind), j.case) for j in js if j.verdict == worst]
    text = f"{worst} {shown}".strip() if _of_numbers(worst) else str(worst)
    return Cell(text, str(worst), links, "\n".join(summary(j) for j in js))


def float32_cell(ej: ExampleJudgement, name: str) -> Cell:
    """The float32 column: the float32 run against its own float64 run (precision alone;
    against the family's float64 reference where it has none), `not compared` where that
    run is at fault."""
    label = f"{name}@float32"
    run = ej.run_of(label)
    if run is not None and run.verdict != Verdict.OK:
        return Cell(str(run.verdict), str(run.verdict), [], run.reason)  # said in its row
    mine = [j for j in compared(ej) if len(j.subjects) == 2 and j.subjects[1] == label]
    if not mine:
        if label in ej.unavailable:
            return Cell(
                str(Verdict.UNAVAILABLE), str(Verdict.UNAVAILABLE), [], ej.unavailable[label]
            )
        if label in ej.skipped:
            return Cell(str(Verdict.SKIPPED), str(Verdict.SKIPPED), [], ej.skipped[label])
        return Cell("—", "", [], f"no float32 gradient of {name}")
    worst = Verdict.worst(j.verdict for j in mine)
    if worst == Verdict.SKIPPED:
        return _skipped_cell(mine)
    rels = [
        j.comparison.max_rel
        for j in mine
        if j.comparison is not None and j.comparison.max_rel is not None
    ]
    links = [(j.array or "", j.case) for j in mine if j.verdict == worst and j.failed]
    shown = num(max(rels), 1) if rels and _of_numbers(worst) else ""
    text = f"{worst} {shown}".strip()
    return Cell(text, str(worst), links, "\n".join(summary(j) for j in mine))


def family_cell(ej: ExampleJudgement, label: str, accused: set[str]) -> Cell:
    """Whether a variant agrees with the members of its family it was compared with:
    `ok ×3`, `FAIL vs 2 of 3` for the suspect, `ok ×1; FAIL vs` for a member that fails
    only against the suspects (each with the pairs' own worst verdict: `unexpectedly ok
    vs`), `kinks`, or `not compared`."""
    mine = [j for j in same_family_pairs(ej) if label in j.subjects]
    blocked = [j for j in compared(ej) if label in j.subjects and j.blocked_by]
    if not mine:
        if blocked:
            return Cell("not compared", str(Verdict.SKIPPED), [], blocked[0].reason)
        return Cell("—", "", [], "no other member of its family was compared with it")

    def other(j: CaseJudgement) -> str:
        return next(s for s in j.subjects if s != label)

    # counted in members, not in (pair, array) rows: a family of four others is "of 4"
    members = dict.fromkeys(other(j) for j in mine)
    failing = [j for j in mine if j.failed]
    if failing:
        links = [(f"{other(j)} ({compared_name(j)})", j.case) for j in failing]
        why = "\n".join(summary(j) for j in failing)
        against = dict.fromkeys(other(j) for j in failing)
        worst = Verdict.worst(j.verdict for j in failing)
        if label in accused:
            return Cell(f"{worst} vs {len(against)} of {len(members)}", str(worst), links, why)
        # It fails only against the family's suspects: the suspects are the news; where the
        # judge names none (`unexpectedly ok`: a declaration, not a port), the verdict is.
        text = f"{Verdict.OK} ×{len(members) - len(against)}; {worst} vs"  # links name them
        news = "differs" if any(other in accused for other in against) else str(worst)
        return Cell(text, news, links, why, plain=f"{text} {', '.join(against)}")
    kinks = [j for j in mine if j.verdict.at_kinks]
    if kinks:
        n = len(dict.fromkeys(other(j) for j in kinks))
        return _as_declared(kinks, f"{kinks[0].verdict} ({n}), {Verdict.OK} {len(members) - n}")
    # the declared variant's cell says it; its partners simply agree with the rest
    expected = [
        j for j in mine if j.verdict.declared and j.expected and j.expected.variant == label
    ]
    if expected:
        n = len(dict.fromkeys(other(j) for j in expected))
        rest = f", {Verdict.OK} ×{len(members) - n}" if len(members) > n else ""
        return _as_declared(expected, f"{expected[0].verdict} ×{n}{rest}")
    return Cell(
        f"{Verdict.OK} ×{len(members)}",
        str(Verdict.OK),
        [],
        "agrees with every member of its family compared",
    )


def _as_declared(js: list[CaseJudgement], text: str) -> Cell:
    """A member's cell where its pairs differ only as declared: in their verdict's colour,
    linking each pair, saying each."""
    links = [(j.array or "", j.case) for j in js]
    return Cell(text, str(js[0].verdict), links, "\n".join(summary(j) for j in js))
