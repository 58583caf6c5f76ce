"""What every table says of one variant, computed once for the terminal, the HTML page,
the Markdown summary and a notebook: its gradient checks, its float32 run, and whether it
agrees with its family (and, when a pair fails, which side is the suspect).

Which variant is wrong: in a family, a failing pair names two variants. The one that
fails against most of its family is the *suspect*: with one wrong variant of three, it
fails against both others, they only against it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .._judge._verdict import CaseJudgement, ExampleJudgement, Verdict
from ._lines import num, summary


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


def same_family_pairs(ej: ExampleJudgement) -> list[CaseJudgement]:
    """The compared float64 same-family pairs (float32 pairs are the float32 column's)."""
    return [
        j
        for j in ej.of_kind("pair")
        if j.verdict not in (Verdict.SKIPPED, Verdict.INFO)
        and len(j.subjects) == 2
        and not j.subjects[1].endswith("@float32")
    ]


def suspects(
    ej: ExampleJudgement, own_failures: frozenset[str] = frozenset()
) -> dict[str, list[CaseJudgement]]:
    """`{label: its failing pairs}` for the labels that fail most often, per family. A tie
    (two members, one failing pair) goes to the members that also fail their own gradient
    checks (Taylor, jvp: those in `ej`, and the labels `own_failures` names, which the
    report reads from `check.json`), where some do and some don't; otherwise both are
    named."""
    failing = [j for j in same_family_pairs(ej) if j.failed]
    self_failing = set(own_failures) | {
        j.subjects[0] for j in ej.judgements if j.kind in ("taylor", "jvp") and j.failed
    }
    out: dict[str, list[CaseJudgement]] = {}
    by_family: dict[str, list[CaseJudgement]] = {}
    for j in failing:
        by_family.setdefault(j.family, []).append(j)
    for js in by_family.values():
        counts = Counter(s for j in js for s in j.subjects)
        top = max(counts.values())
        tied = [label for label, count in counts.items() if count == top]
        also_own = [label for label in tied if label in self_failing]
        if 0 < len(also_own) < len(tied):
            tied = also_own
        for label in tied:
            out[label] = [j for j in js if label in j.subjects]
    return out


def checks_of(ej: ExampleJudgement, label: str, kind: str) -> list[CaseJudgement]:
    """The judgements of one kind ("taylor", "jvp") of one variant, every array."""
    return [j for j in ej.of_kind(kind) if j.subjects == (label,)]


def check_cell(js: list[CaseJudgement], kind: str) -> Cell:
    """The Taylor (smallest rate) or jvp (largest error) cell of a variant."""
    if not js:
        return Cell("—", "", [], f"no {kind} check")
    worst = Verdict.worst(j.verdict for j in js)
    if worst == Verdict.SKIPPED:
        reason = next((j.reason for j in js if j.reason), "")
        text = "not compared" if any(j.blocked_by for j in js) else "skipped"
        return Cell(text, "skipped", [], reason)
    if kind == "taylor":
        rates = [r for j in js if j.taylor for rs in j.taylor.asymptotic for r in rs]
        shown = f"{min(rates):.2f}" if rates else "lin."
    else:
        errors = [j.directional.error for j in js if j.directional is not None]
        shown = num(max(errors), 0) if errors else ""
    links = [(j.array or kind, j.case) for j in js if j.verdict == worst]
    text = f"{worst} {shown}".strip() if worst in (Verdict.OK, Verdict.FAIL) else str(worst)
    return Cell(text, str(worst), links, "\n".join(summary(j) for j in js))


def float32_cell(ej: ExampleJudgement, name: str) -> Cell:
    """The float32 column: the float32 run against its family's float64 reference."""
    label = f"{name}@float32"
    run = ej.run_of(label)
    if run is not None and run.verdict != Verdict.OK:
        return Cell(str(run.verdict), str(run.verdict), [(label, run.case)], run.reason)
    mine = [j for j in ej.of_kind("pair") if len(j.subjects) == 2 and j.subjects[1] == label]
    if not mine:
        why = ej.skipped.get(label) or ej.unavailable.get(label)
        if why:
            return Cell("skipped", "skipped", [], why)
        return Cell("—", "", [], f"no float32 gradient of {name}")
    worst = Verdict.worst(j.verdict for j in mine)
    rels = [
        j.comparison.max_rel
        for j in mine
        if j.comparison is not None and j.comparison.max_rel is not None
    ]
    links = [(j.array or "", j.case) for j in mine if j.verdict == worst and j.failed]
    text = f"{worst} {num(max(rels), 1) if rels else ''}".strip()
    return Cell(text, str(worst), links, "\n".join(summary(j) for j in mine))


def family_cell(ej: ExampleJudgement, label: str, accused: set[str]) -> Cell:
    """Whether a variant agrees with the members of its family it was compared with:
    `ok ×3`, `FAIL vs 2 of 3` for the suspect, `ok ×1; FAIL vs` for a member that fails
    only against the suspects, `kinks`, or `not compared`."""
    mine = [j for j in same_family_pairs(ej) if label in j.subjects]
    blocked = [j for j in ej.of_kind("pair") if label in j.subjects and j.blocked_by]
    if not mine:
        if blocked:
            return Cell("not compared", "skipped", [], blocked[0].reason)
        return Cell("—", "", [], "no other member of its family was compared with it")

    def other(j: CaseJudgement) -> str:
        return next(s for s in j.subjects if s != label)

    # counted in members, not in (pair, array) rows: a family of four others is "of 4"
    members = dict.fromkeys(other(j) for j in mine)
    failing = [j for j in mine if j.failed]
    if failing:
        links = [(f"{other(j)} ({j.array})", j.case) for j in failing]
        why = "\n".join(summary(j) for j in failing)
        against = dict.fromkeys(other(j) for j in failing)
        if label in accused:
            worst = Verdict.worst(j.verdict for j in failing)
            return Cell(f"FAIL vs {len(against)} of {len(members)}", str(worst), links, why)
        # It fails only against the family's suspects: the suspects are the news.
        text = f"ok ×{len(members) - len(against)}; FAIL vs"  # the links name them
        return Cell(text, "differs", links, why, plain=f"{text} {', '.join(against)}")
    kinks = [j for j in mine if j.verdict == Verdict.KINKS]
    if kinks:
        at_kinks = dict.fromkeys(other(j) for j in kinks)
        return Cell(
            f"kinks ({len(at_kinks)}), ok {len(members) - len(at_kinks)}",
            "kinks",
            [(j.array or "", j.case) for j in kinks],
            "\n".join(summary(j) for j in kinks),
        )
    # the declared variant's cell says it; its partners simply agree with the rest
    expected = [
        j
        for j in mine
        if j.verdict == Verdict.EXPECTED and j.expected and j.expected.variant == label
    ]
    if expected:
        declared = dict.fromkeys(other(j) for j in expected)
        rest = len(members) - len(declared)
        text = f"expected ×{len(declared)}" + (f", ok ×{rest}" if rest else "")
        return Cell(
            text,
            "expected",
            [(j.array or "", j.case) for j in expected],
            "\n".join(summary(j) for j in expected),
        )
    return Cell(f"ok ×{len(members)}", "ok", [], "agrees with every member of its family compared")


def accused(ej: ExampleJudgement) -> set[str]:
    """The suspects of the example's failing same-family pairs."""
    return set(suspects(ej))
