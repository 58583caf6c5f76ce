"""`weanj report`: one page of every verdict and benchmark, written from what is stored.

It runs nothing. Per example, the report command (`_commands.report`) hands over the
store judged by the one judge (what `weanj diff` says: pairs, float32 pairs, files), the
gradient checks and faults the last `weanj check` left (`_verdicts_file`, shown while
their inputs key is the current one) and the benchmark records; what is missing is said,
with the command that computes it. This module gathers those into `ExamplePage`s, one
per example; `_html` and `_md` only render them.

Which variant is wrong: in a family, a pair that fails names two variants. The one that
fails against most of its family (or fails its own gradient check) is the *suspect*, and
the page's first table names it with the array and links to the pair's section. A
variant the last check found at fault (`error`, `NaN/Inf`, `timeout`) is named once, with
its line and the command that reproduces it; its pairs and checks are "not compared".
An unavailable variant says why; an example whose inputs cannot be read is "not judged".
Comparisons against a reference of zeros are said in absolute terms (`_where`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
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
    met reading them and each file's environment. An example that could not be judged
    (its inputs) is "not judged", not a failure; a check file with entries of another form
    than `weanj check` writes is shown without them, saying so in one line."""
    check, problem = usable_check(cat.name, check)
    page = ExamplePage(cat.example, ej if ej.error is None else None, check, error=ej.error)
    page.catalog = cat
    page.bench, problems, page.bench_environments = bench
    page.missing.extend(problems)
    if problem:
        page.missing.append(problem)
    if ej.error is not None:
        return page
    if page.check.state != "current":
        page.missing.append(page.check.note)
    page.suspects = set(suspects(ej, _own_failures(page)))
    page.not_compared = _not_compared(page)
    _rows(page)
    _failures(page)
    page.pictures, page.left_out_pictures = _pictures(ej)
    return page


# --- a check file read without trusting it ---------------------------------------------------


def _number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _numbers(v: Any) -> bool:
    return isinstance(v, list) and all(_number(x) for x in v)


def _check_problem(j: dict) -> str | None:
    """Why a gradient check of a check file cannot be shown (None: it can)."""
    for key in ("case", "summary"):
        if not isinstance(j.get(key), str):
            return f"a check without {key}"
    if not j.get("subjects"):
        return "a check without subjects"
    if j.get("kind") not in ("taylor", "jvp"):
        return f"a check of kind {str(j.get('kind'))[:20]!r}"
    if not isinstance(j.get("array"), (str, type(None))):
        return "a check whose array is not text"
    taylor = j.get("taylor")
    if taylor is not None:
        directions = taylor.get("directions") if isinstance(taylor, dict) else None
        fields = ("steps", "remainders", "rounding", "rates")
        if not isinstance(directions, list) or not all(
            isinstance(d, dict) and all(_numbers(d.get(f)) for f in fields) for d in directions
        ):
            return "a Taylor check whose steps, remainders or rates are not numbers"
    jvp = j.get("jvp")
    if jvp is not None and not (
        isinstance(jvp, dict) and (jvp.get("error") is None or _number(jvp.get("error")))
    ):
        return "a jvp check whose error is not a number"
    return None


def _gradient_problem(g: dict) -> str | None:
    for key in ("loss", "seconds"):
        if g.get(key) is not None and not _number(g.get(key)):
            return f"a gradient whose {key} is not a number"
    return None


def usable_check(name: str, check: CheckVerdicts) -> tuple[CheckVerdicts, str]:
    """The check file with the entries the page can show (`check_json`'s form), and one
    line naming what was left out ("" when nothing was): a file changed by hand or by
    another version costs those entries, never the page."""
    if not check.data:
        return check, ""
    data = dict(check.data)
    left: list[str] = []
    for key, problem in (("checks", _check_problem), ("gradients", _gradient_problem)):
        entries = data.get(key, [])
        kept = [j for j in entries if problem(j) is None]
        left += [problem(j) for j in entries if problem(j) is not None]
        data[key] = kept
    for j in data.get("skipped", []):
        if not isinstance(j.get("blocked_by"), (str, type(None))):
            j["blocked_by"] = None
    if not left:
        return check, ""
    note = (
        f"{check.path}: {len(left)} entr{'y' if len(left) == 1 else 'ies'} not of the form "
        f"`weanj check` writes ({left[0]}), left out; rerun `weanj check {name}`"
    )
    return dataclasses.replace(check, data=data), note


def _not_compared(page: ExamplePage) -> dict[str, list[str]]:
    """`{label at fault: the cases the last check did not compare because of it}`."""
    out: dict[str, list[str]] = {}
    for j in page.check.data.get("skipped", []) if page.check.current else []:
        if j.get("blocked_by"):
            out.setdefault(j["blocked_by"], []).append(j.get("case") or "")
    return out


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
    unavailable = {
        **cat.unavailable(),
        **(page.check.data.get("unavailable", {}) if current else {}),
    }
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
            if name in faults:  # at fault: its line and command; its pairs not compared
                f = faults[name]
                row.verdict, row.note = f["verdict"], _fault_text(f)
                blocked = page.not_compared.get(name, [])
                row.pairs = Cell(
                    "not compared",
                    "skipped",
                    [],
                    f"{len(blocked)} case(s) not compared: {f['reason']}",
                )
            elif g is None and name in unavailable:
                row.verdict, row.note = "unavailable", unavailable[name]
                page.unavailable.setdefault(unavailable[name], []).append(name)
            elif g is None and name in check_skips:
                row.verdict, row.note = "skipped", check_skips[name]
                page.skipped.setdefault(check_skips[name], []).append(name)
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


def _fault_text(f: dict) -> str:
    """A fault of the check file as every view says it: what, and how to reproduce it."""
    again = f" (reproduce: `{f['command']}`)" if f.get("command") else ""
    return f"{f['reason']}{again}"


def _failing(verdict: str) -> bool:
    try:
        return Verdict.parse(verdict).failing
    except ValueError:
        return False


def _check_skips(page: ExamplePage) -> dict[str, list[str]]:
    """Skipped checks of variants that did run (a jvp no family member can push forward;
    float32 not supported), one entry per reason; the checks not compared because their
    variant is at fault are that variant's row, not a skip."""
    out: dict[str, list[str]] = {}
    ran = {r.variant for r in page.rows if r.verdict not in ("skipped", "unavailable")}
    ran -= set(page.check.data.get("faults", {}))
    for j in page.check.data.get("skipped", []) if page.check.current else []:
        labels = [s for s in j.get("subjects", []) if s.split("@")[0] in ran]
        if labels and j["kind"] == "jvp" and not j.get("blocked_by"):
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
    unavailable = page.check.data.get("unavailable", {})
    if name in unavailable:
        return Cell("unavailable", "unavailable", [], unavailable[name])
    if not mine:
        return Cell("—", "", [], f"no {kind} check recorded for {name}")
    verdict = _worst([j["verdict"] for j in mine])
    if verdict == "skipped":
        why = next((j["reason"] for j in mine if j["reason"]), "")
        blocked = any(j.get("blocked_by") for j in mine)
        return Cell("not compared" if blocked else "skipped", "skipped", [], why)
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
    if label in faults:  # the float32 run at fault (its row says it once)
        f = faults[label]
        return Cell(f["verdict"], f["verdict"], [], _fault_text(f))
    c = float32_cell(page.ej, name)
    unavailable = page.check.data.get("unavailable", {}) if page.check.current else {}
    if c.text == "—" and label in unavailable:
        return Cell("unavailable", "unavailable", [], unavailable[label])
    if c.text == "—" and label in check_skips:
        return Cell("skipped", "skipped", [], check_skips[label])
    return c


def _badness(j: CaseJudgement) -> float:
    """How far a pair is off, relative to its reference (a reference of zeros that differs:
    infinitely; a non-finite comparison: infinitely)."""
    c = j.comparison
    if c is None:
        return 0.0
    if c.max_rel is None or not math.isfinite(c.max_rel):
        return math.inf if c.max_abs != 0 else 0.0
    return c.max_rel


def _own_failures(page: ExamplePage) -> frozenset[str]:
    """The variants whose own gradient checks (in `check.json`) failed."""
    return frozenset(j["subjects"][0] for j in page.checks if j["failed"] and j["subjects"])


def _where(c) -> str:
    """`, max|Δ|/max|g_ref| 1.2e-04 at numpy (7,)`; against a reference of zeros, in
    absolute terms."""
    if c is None or not c.worst:
        return ""
    return f", {relative_text(c)} at numpy {tuple(c.worst)}"


def _failures(page: ExamplePage) -> None:
    ej = page.ej
    pairs = [j for j in ej.of_kind("pair") if j.failed]
    named = set()
    # The suspects among the float64 members (a float32 run is judged against its
    # family's reference, and named on its own below: never the reference's fault).
    for label, js in suspects(ej, _own_failures(page)).items():
        by_array: dict[str | None, list[CaseJudgement]] = {}
        for j in js:
            by_array.setdefault(j.array, []).append(j)
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
        if other.endswith("@float32"):  # a float32 run off its family's float64 reference
            what = f"{j.verdict}: differs from {ref}{_where(j.comparison)}"
            page.failures.append(Failure(other, j.array, what, [(ref, j.case)]))
        else:  # a failing pair of two non-suspects
            page.failures.append(
                Failure(" vs ".join(j.subjects), j.array, str(j.verdict), [("pair", j.case)])
            )
    for j in page.checks:
        if j["failed"]:
            what = f"{j['kind']} {j['verdict']}: {j['reason']}"
            page.failures.append(
                Failure(j["subjects"][0], j["array"], what, [(j["kind"], j["case"])])
            )
    if page.check.current:  # one row per variant at fault, with its line and command
        faults = page.check.data.get("faults", {})
        for label, f in faults.items():
            base, _, dtype = label.partition("@")
            if dtype and base in faults and faults[base]["verdict"] == f["verdict"]:
                continue  # its float64 row says it
            page.failures.append(
                Failure(
                    label,
                    None,
                    f"{f['verdict']}: {_fault_text(f)}",
                    [("variant", variant_anchor(page.name, base))],
                )
            )
    for j in ej.of_kind("file"):
        if j.failed:
            label = j.case.split("::file::", 1)[1]
            page.failures.append(
                Failure(f"file {label}", None, f"{j.verdict}: {j.reason}", [("file", j.case)])
            )


def _pictures(ej: ExampleJudgement) -> tuple[list[CaseJudgement], int]:
    """The pairs drawn: failing, kink and expected pairs (float64 ones first, then worst
    first); when none, the agreeing same-family pair of the largest error and every pair of family
    references (`info`)."""
    pairs = [j for j in ej.of_kind("pair") if j.comparison is not None]
    notable = [j for j in pairs if j.failed or j.verdict in (Verdict.KINKS, Verdict.EXPECTED)]
    if notable:
        notable.sort(key=lambda j: (j.subjects[1].endswith("@float32"), -_badness(j)))
        return notable[:MAX_PICTURES], max(0, len(notable) - MAX_PICTURES)
    chosen = []
    agreeing = [j for j in same_family_pairs(ej) if j.comparison.max_abs > 0]
    if agreeing:
        chosen.append(max(agreeing, key=_badness))
    chosen += [j for j in pairs if j.verdict == Verdict.INFO]
    return chosen[:MAX_PICTURES], max(0, len(chosen) - MAX_PICTURES)
