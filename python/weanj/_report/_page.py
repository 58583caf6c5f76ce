"""`weanj report`: one page of every verdict and benchmark, rendered from the judgement.

It runs nothing and judges nothing. Per example it is handed the judge's
`ExampleJudgement` (from a live `weanj check`, or read back from the `check.json` that
check wrote: the same object) or, where there is none to show, the one line saying so
(`not checked: run `weanj check EX``); and the benchmark records. This module gathers
those into `ExamplePage`s, one per example; `_html` and `_md` only render them.

Which variant is wrong is the judge's word (`ExampleJudgement.suspects`,
`_judge._suspects`): the page's first table names each suspect with the array and links
to the pair's section; a variant's row shows the judge's verdict of it
(`ExampleJudgement.variant_verdict`). A variant at fault (`error`, `NaN/Inf`, `timeout`)
is named once, with its line and the command that reproduces it; its pairs and checks are
"not compared". An unavailable variant says why; an example whose inputs cannot be read
is "not judged". Comparisons against a reference of zeros are said in absolute terms
(`_where`).
"""

from __future__ import annotations

import math
from typing import Any

from .._judge._verdict import CaseJudgement, ExampleJudgement
from .._model import Catalog
from .._model._verdicts import GRADIENT_CHECKS, NOT_RUN, CaseKind, Verdict
from ._cells import (
    Cell,
    check_cell,
    compared,
    family_cell,
    float32_cell,
    same_family_pairs,
    shown_checks,
)
from ._lines import compared_name, fault_text, relative_text
from ._page_model import ExamplePage, Failure, VariantRow, anchor, variant_anchor

__all__ = ["Cell", "ExamplePage", "Failure", "VariantRow", "anchor", "gather"]

# At most this many pair pictures per example (failing pairs beyond it are in the table).
MAX_PICTURES = 12


# --- gathering ---------------------------------------------------------------------------


def gather(
    cat: Catalog,
    ej: ExampleJudgement | None,
    state: str = "",
    bench: tuple[list[dict[str, Any]] | None, list[str], dict[str, dict]] = (None, [], {}),
) -> ExamplePage:
    """Everything the page says about one example: `ej`, its judgement, or None with
    `state`, the one line saying why there is none (not checked, checked on other inputs,
    an unreadable check file); `bench`, the benchmark records, the problems met reading
    them and each file's environment. An example the judge could not judge (its inputs)
    is "not judged", not a failure."""
    page = ExamplePage(cat.example, ej, state, error=ej.error if ej is not None else None)
    page.catalog = cat
    page.bench, problems, page.bench_environments = bench
    page.missing.extend(problems)
    if ej is None:
        page.missing.insert(0, state)
        return page
    if ej.error is not None:
        return page
    page.suspects = set(ej.suspects())
    page.not_compared = _not_compared(ej)
    _rows(page)
    _failures(page)
    page.pictures, page.left_out_pictures = _pictures(ej)
    return page


def _not_compared(ej: ExampleJudgement) -> dict[str, list[str]]:
    """`{label at fault: the cases not compared because of it}`."""
    out: dict[str, list[str]] = {}
    for j in ej.judgements:
        if j.blocked_by and j.verdict == Verdict.SKIPPED:
            out.setdefault(j.blocked_by, []).append(j.case)
    return out


def _rows(page: ExamplePage) -> None:
    ej, cat = page.ej, page.catalog
    faults = ej.faults
    stale = {
        j.subjects[0]: j.reason
        for j in ej.of_kind(CaseKind.FILE)
        if j.verdict.outdated and j.subjects
    }
    for family, members in cat.families().items():
        for v in members:
            name = v.name
            verdict = ej.variant_verdict(name)
            row = VariantRow(name, family, variant_anchor(cat.name, name), str(verdict or ""))
            g = ej.subjects.get(name)
            row.loss = g.loss if g is not None else None
            row.seconds = g.seconds if g is not None else None
            row.checks = {
                kind: check_cell([j for j in ej.of_kind(kind) if j.subjects == (name,)], kind)
                for kind in shown_checks(ej)
            }
            row.float32 = float32_cell(ej, name)
            if f"{name}@float32" in faults:  # the float32 run at fault (its row says it once)
                f = faults[f"{name}@float32"]
                row.float32 = Cell(str(f.verdict), str(f.verdict), [], fault_text(f))
            row.pairs = family_cell(ej, name, page.suspects)
            if name in faults:  # at fault: its line and command; its pairs not compared
                f = faults[name]
                row.note = fault_text(f)
                blocked = page.not_compared.get(name, [])
                row.pairs = Cell(
                    "not compared",
                    str(Verdict.SKIPPED),
                    [],
                    f"{len(blocked)} case(s) not compared: {f.reason}",
                )
            elif verdict == Verdict.UNAVAILABLE:
                row.note = ej.unavailable[name]
                page.unavailable.setdefault(row.note, []).append(name)
            elif verdict == Verdict.SKIPPED:
                row.note = ej.skipped[name]
                page.skipped.setdefault(row.note, []).append(name)
            elif verdict is not None and verdict.outdated:
                row.note = stale.get(name, "")
            elif verdict is None:
                row.note = f"not in the last check: run `weanj check {cat.name}`"
            page.rows.append(row)
    for reason, labels in _check_skips(page).items():
        page.skipped.setdefault(reason, []).extend(labels)


def _check_skips(page: ExamplePage) -> dict[str, list[str]]:
    """Skipped jvp checks of variants that did run (no family member can push it
    forward), one entry per reason; the checks not compared because their variant is at
    fault are that variant's row, not a skip."""
    out: dict[str, list[str]] = {}
    ej = page.ej
    not_run = {str(v) for v in NOT_RUN}
    ran = {r.variant for r in page.rows if r.verdict not in not_run}
    ran -= set(ej.faults)
    for j in ej.judgements:
        if j.kind not in GRADIENT_CHECKS or j.verdict != Verdict.SKIPPED or j.blocked_by:
            continue
        labels = [s for s in j.subjects if s.split("@")[0] in ran]
        if labels and j.kind == CaseKind.JVP:  # as the terminal lists them (`_text._skips`)
            out.setdefault(j.reason, []).append(f"{labels[0]} ({j.kind})")
    return out


def _badness(j: CaseJudgement) -> float:
    """How far a pair is off, relative to its reference (a reference of zeros that differs:
    infinitely; a non-finite comparison: infinitely)."""
    c = j.comparison
    if c is None:
        return 0.0
    if c.max_rel is None or not math.isfinite(c.max_rel):
        return math.inf if c.max_abs != 0 else 0.0
    return c.max_rel


def _where(c) -> str:
    """`, max|Δ|/max|g_ref| 1.2e-04 at numpy (7,)`; against a reference of zeros, in
    absolute terms."""
    if c is None or not c.worst:
        return ""
    return f", {relative_text(c)} at numpy {tuple(c.worst)}"


def _failures(page: ExamplePage) -> None:
    ej = page.ej
    pairs = [j for j in compared(ej) if j.failed]
    named = set()
    # The judge's suspects (`_judge._suspects`), each against its family's trusted group
    # (a float32 run is judged against its own float64 run: precision alone).
    for label, js in ej.suspects().items():
        by_array: dict[str | None, list[CaseJudgement]] = {}
        for j in js:  # by what they compare: a gradient array, an output, a product
            by_array.setdefault(compared_name(j), []).append(j)
        for array, group in by_array.items():
            others = [next(s for s in j.subjects if s != label) for j in group]
            worst = max(group, key=_badness)
            what = f"{group[0].verdict}: differs from {', '.join(others)}{_where(worst.comparison)}"
            page.failures.append(
                Failure(
                    label, array, what, [(o, j.case) for o, j in zip(others, group, strict=True)]
                )
            )
            named.update(j.case for j in group)
    for j in pairs:
        if j.case in named:
            continue
        ref, other = j.subjects
        if other.endswith("@float32"):  # a float32 run off its own float64 run
            what = f"{j.verdict}: differs from {ref}{_where(j.comparison)}"
            page.failures.append(Failure(other, compared_name(j), what, [(ref, j.case)]))
        else:  # a failing pair the judge names no suspect of
            page.failures.append(
                Failure(
                    " vs ".join(j.subjects), compared_name(j), str(j.verdict), [(j.kind, j.case)]
                )
            )
    for j in ej.judgements:
        if j.kind in GRADIENT_CHECKS and j.failed:
            what = f"{j.kind} {j.verdict}: {j.reason}"
            page.failures.append(Failure(j.subjects[0], j.array, what, [(j.kind, j.case)]))
    faults = ej.faults  # one row per variant at fault, with its line and command
    for label, f in faults.items():
        base, _, dtype = label.partition("@")
        if dtype and base in faults and faults[base].verdict == f.verdict:
            continue  # its float64 row says it
        page.failures.append(
            Failure(
                label,
                None,
                f"{f.verdict}: {fault_text(f)}",
                [("variant", variant_anchor(page.name, base))],
            )
        )
    for j in ej.of_kind(CaseKind.FILE):
        if j.failed:
            label = j.case.split(f"::{CaseKind.FILE}::", 1)[1]
            page.failures.append(
                Failure(f"file {label}", None, f"{j.verdict}: {j.reason}", [(j.kind, j.case)])
            )


def _pictures(ej: ExampleJudgement) -> tuple[list[CaseJudgement], int]:
    """The pairs drawn: failing, kink and expected pairs (float64 ones first, then worst
    first); when none, the agreeing same-family pair of the largest error and every pair of family
    references (`info`)."""
    pairs = [j for j in compared(ej) if j.comparison is not None]
    notable = [j for j in pairs if j.failed or j.verdict.as_declared]
    if notable:
        notable.sort(key=lambda j: (j.subjects[1].endswith("@float32"), -_badness(j)))
        return notable[:MAX_PICTURES], max(0, len(notable) - MAX_PICTURES)
    chosen = []
    agreeing = [j for j in same_family_pairs(ej) if j.comparison.max_abs > 0]
    if agreeing:
        chosen.append(max(agreeing, key=_badness))
    chosen += [j for j in pairs if j.verdict == Verdict.INFO]
    return chosen[:MAX_PICTURES], max(0, len(chosen) - MAX_PICTURES)
