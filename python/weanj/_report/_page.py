"""`weanj report`: one page of every verdict and benchmark, written from what is stored.

It runs nothing. Per example, the report command (`_commands.report`) hands over the
store judged by the one judge (what `weanj diff` says: pairs, float32 pairs, files), the
gradient checks and faults the last `weanj check` left (`_verdicts_file`, shown while
their inputs key is the current one) and the benchmark records; what is missing is said,
with the command that computes it. This module gathers those into `ExamplePage`s, one
per example; `_html` and `_md` only render them.

Which variant is wrong: in a family, a pair that fails names two variants. The one that
fails against most of its family (or fails its own gradient check) is the *suspect*, and
the page's first table names it with the array and links to the pair's section.
"""

from __future__ import annotations

from typing import Any

from .._judge._verdict import CaseJudgement, ExampleJudgement, Verdict
from .._model import Catalog
from ._cells import family_cell, float32_cell
from ._lines import relative_text
from ._page_model import (
    Cell,
    ExamplePage,
    Failure,
    VariantRow,
    anchor,
    overall,
    same_family_pairs,
    suspects,
    variant_anchor,
)
from ._text import num
from ._verdicts_file import CheckVerdicts

__all__ = ["Cell", "ExamplePage", "Failure", "VariantRow", "anchor", "gather"]

# At most this many pair pictures per example (failing pairs beyond it are in the table).
MAX_PICTURES = 12


# --- gathering ---------------------------------------------------------------------------


def gather(
    cat: Catalog,
    ej: ExampleJudgement,
    check: CheckVerdicts,
    bench: tuple[list[dict[str, Any]] | None, list[str], dict[str, dict]] = (None, [], {}),
) -> ExamplePage:
    """Everything the page says about one example: `ej`, the store judged (or why it was
    not); `check`, the last check's verdicts; `bench`, the benchmark records, the problems
    met reading them and each file's environment."""
    page = ExamplePage(cat.example, ej if ej.error is None else None, check, error=ej.error)
    page.catalog = cat
    page.bench, problems, page.bench_environments = bench
    page.missing.extend(problems)
    if ej.error is not None:
        page.failures.append(Failure(cat.name, None, f"not judged: {ej.error}", []))
        return page
    if page.check.state != "current":
        page.missing.append(page.check.note)
    page.suspects = set(suspects([j for j in same_family_pairs(ej) if j.failed]))
    _rows(page)
    _failures(page)
    page.pictures, page.left_out_pictures = _pictures(ej)
    return page


def _check_gradients(page: ExamplePage) -> dict[str, dict]:
    if not page.check.current:
        return {}
    return {g["label"]: g for g in page.check.data.get("gradients", [])}


def _rows(page: ExamplePage) -> None:
    ej, cat = page.ej, page.catalog
    checked = _check_gradients(page)
    current = page.check.current
    check_skips = page.check.data.get("skipped_subjects", {}) if current else {}
    faults = page.check.data.get("faults", {}) if current else {}
    unavailable = cat.unavailable()
    stale = {
        j.subjects[0]: j.reason
        for j in ej.of_kind("file")
        if j.verdict == Verdict.STALE and j.subjects
    }
    for family, members in cat.families().items():
        for v in members:
            name = v.name
            row = VariantRow(name, family, variant_anchor(cat.name, name), "ok")
            g = ej.subjects.get(name)
            row.loss = g.loss if g is not None else (checked.get(name) or {}).get("loss")
            row.seconds = (checked.get(name) or {}).get("seconds")
            row.taylor = _check_cell(page, name, "taylor")
            row.jvp = _check_cell(page, name, "jvp")
            row.float32 = _float32_cell(page, name, faults, check_skips)
            row.pairs = family_cell(ej, name, page.suspects)
            why = check_skips.get(name) or unavailable.get(name)
            if name in faults:
                row.verdict, row.note = faults[name]["verdict"], faults[name]["reason"]
            elif g is None and why:
                row.verdict, row.note = "skipped", why
                page.skipped.setdefault(why, []).append(name)
            elif g is None and name in stale:
                row.verdict, row.note = "stale", stale[name]
            elif g is None:
                row.verdict = "missing"
                row.note = f"no gradient file: run `weanj check {cat.name}`"
            cells = (row.taylor, row.jvp, row.float32, row.pairs)
            if any(_failing(c.verdict) for c in cells) and not _failing(row.verdict):
                row.verdict = "FAIL"
            page.rows.append(row)
    for reason, labels in _check_skips(page).items():
        page.skipped.setdefault(reason, []).extend(labels)
    if any(r.verdict == "missing" for r in page.rows):
        page.missing.append(
            f"gradient files of {', '.join(r.variant for r in page.rows if r.verdict == 'missing')}"
            f": run `weanj check {cat.name}`"
        )


def _failing(verdict: str) -> bool:
    try:
        return Verdict.parse(verdict).failing
    except ValueError:
        return False


def _check_skips(page: ExamplePage) -> dict[str, list[str]]:
    """Skipped checks of variants that did run (a jvp no family member can push forward;
    float32 not supported), one entry per reason."""
    out: dict[str, list[str]] = {}
    ran = {r.variant for r in page.rows if r.verdict != "skipped"}
    for j in page.check.data.get("skipped", []) if page.check.current else []:
        labels = [s for s in j.get("subjects", []) if s.split("@")[0] in ran]
        if labels and j["kind"] == "jvp":
            out.setdefault(j["reason"], []).append(f"{labels[0]} (jvp)")
    return out


def _worst(verdicts: list[str]) -> str:
    """The worst of some verdicts as files spell them (`Verdict`'s ranking)."""
    known = []
    for v in verdicts:
        try:
            known.append(Verdict.parse(v))
        except ValueError:
            continue
    worst = Verdict.worst(known)
    return str(worst) if worst is not None else (verdicts[0] if verdicts else "")


def _check_cell(page: ExamplePage, name: str, kind: str) -> Cell:
    if not page.check.current:
        stale = page.check.state == "stale"
        return Cell("stale" if stale else "—", "stale" if stale else "", [], page.check.note)
    mine = [j for j in page.checks if j["kind"] == kind and j["subjects"] == [name]]
    if not mine:
        return Cell("—", "", [], f"no {kind} check recorded for {name}")
    verdict = _worst([j["verdict"] for j in mine])
    if verdict == "skipped":
        return Cell("skipped", "skipped", [], next(j["reason"] for j in mine if j["reason"]))
    if kind == "taylor":
        rates = [
            r
            for j in mine
            for d in (j.get("taylor") or {}).get("directions", [])
            for r in d["rates"][-3:]
        ]
        shown = f"{min(rates):.2f}" if rates else "lin."
    else:
        errors = [j["jvp"]["error"] for j in mine if j.get("jvp") and j["jvp"]["error"] is not None]
        shown = num(max(errors), 0) if errors else ""
    links = [(j["array"] or kind, j["case"]) for j in mine if j["verdict"] == verdict]
    return Cell(f"{verdict} {shown}".strip(), verdict, links, "\n".join(j["summary"] for j in mine))


def _float32_cell(page: ExamplePage, name: str, faults: dict, check_skips: dict[str, str]) -> Cell:
    label = f"{name}@float32"
    if label in faults:
        f = faults[label]
        return Cell(f["verdict"], f["verdict"], [("variant", variant_anchor(page.name, name))], f["reason"])
    c = float32_cell(page.ej, name)
    if c.text == "—" and label in check_skips:
        return Cell("skipped", "skipped", [], check_skips[label])
    return c


def _failures(page: ExamplePage) -> None:
    ej = page.ej
    pairs = [j for j in ej.of_kind("pair") if j.failed]
    named = set()
    for label, js in suspects(pairs).items():
        by_array: dict[str | None, list[CaseJudgement]] = {}
        for j in js:
            by_array.setdefault(j.array, []).append(j)
        for array, group in by_array.items():
            others = [next(s for s in j.subjects if s != label) for j in group]
            worst = max(group, key=_relative)
            c = worst.comparison
            where = ""
            if c is not None and c.worst:
                rel = f"max|Δ|/max|g_ref| {num(c.max_rel)}"
                if c.reference_zero:  # judged in absolute terms (`max_rel` is None)
                    rel = relative_text(c)
                where = f", {rel} at numpy {tuple(c.worst)}"
            what = f"{group[0].verdict}: differs from {', '.join(others)}{where}"
            page.failures.append(
                Failure(
                    label, array, what, [(o, j.case) for o, j in zip(others, group, strict=True)]
                )
            )
            named.update(j.case for j in group)
    for j in pairs:
        if j.case not in named:  # a failing pair of two non-suspects
            page.failures.append(
                Failure(" vs ".join(j.subjects), j.array, str(j.verdict), [("pair", j.case)])
            )
    for j in page.checks:
        if j["failed"]:
            what = f"{j['kind']} {j['verdict']}: {j['reason']}"
            page.failures.append(
                Failure(j["subjects"][0], j["array"], what, [(j["kind"], j["case"])])
            )
    if page.check.current:
        faults = page.check.data.get("faults", {})
        for label, f in faults.items():
            base, _, dtype = label.partition("@")
            if dtype and base in faults and faults[base]["verdict"] == f["verdict"]:
                continue  # one row per variant: its float64 row says it
            again = f" (reproduce: `{f['command']}`)" if f.get("command") else ""
            page.failures.append(
                Failure(
                    label,
                    None,
                    f"{f['verdict']}: {f['reason']}{again}",
                    [("variant", variant_anchor(page.name, base))],
                )
            )
    for j in ej.of_kind("file"):
        if j.failed:
            label = j.case.split("::file::", 1)[1]
            page.failures.append(
                Failure(f"file {label}", None, f"{j.verdict}: {j.reason}", [("file", j.case)])
            )


def _relative(j: CaseJudgement) -> float:
    """How far a pair differs relative to its reference (inf where the reference is all
    zeros and the other is not: judged in absolute terms, `max_rel` None)."""
    c = j.comparison
    if c is None:
        return 0.0
    return float("inf") if c.max_rel is None else c.max_rel


def _pictures(ej: ExampleJudgement) -> tuple[list[CaseJudgement], int]:
    """The pairs drawn: failing and kink pairs (float64 ones first, then worst first); when
    none, the agreeing same-family pair of the largest error and every pair of family
    references (`info`)."""
    pairs = [j for j in ej.of_kind("pair") if j.comparison is not None]
    notable = [j for j in pairs if j.failed or j.verdict == Verdict.KINKS]
    if notable:
        notable.sort(
            key=lambda j: (j.subjects[1].endswith("@float32"), -(j.comparison.max_rel or 0))
        )
        return notable[:MAX_PICTURES], max(0, len(notable) - MAX_PICTURES)
    chosen = []
    agreeing = [j for j in same_family_pairs(ej) if j.comparison.max_abs > 0]
    if agreeing:
        chosen.append(max(agreeing, key=_relative))
    chosen += [j for j in pairs if j.verdict == Verdict.INFO]
    return chosen[:MAX_PICTURES], max(0, len(chosen) - MAX_PICTURES)
