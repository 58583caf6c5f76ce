"""One judgement as text: its summary line, its details and the numbers in them, in one
form for every view (`num`, `ulp_text`, both index conventions). The terminal, the
pytest messages, the JSON summaries and the pages all say a case this way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .._judge._checks import num
from .._judge._compare import ArrayComparison
from .._judge._verdict import CaseJudgement
from .._model._verdicts import CaseKind, Verdict

MAX_REGION_LINES = 6


def ulp_text(ulp: int | None) -> str:
    """ULPs in one form in every view: `12 ULP`, `1.5e15 ULP`, `—` where not finite."""
    if ulp is None or ulp < 0:
        return "—"
    if ulp < 100_000:
        return f"{ulp} ULP"
    return f"{ulp:.1e}".replace("e+", "e") + " ULP"


def worst_ulp_text(c: ArrayComparison) -> str:
    """A comparison's ULPs at its worst element, or `reference ≈ 0` where the reference
    there is at or below the rounding level of the array's scale (a ULP count from about
    zero says nothing: `ArrayComparison.reference_near_zero`)."""
    return "reference ≈ 0" if c.reference_near_zero else ulp_text(c.ulp)


def index(idx: Iterable[int]) -> str:
    return "(" + ", ".join(str(i) for i in idx) + ")"


def julia(idx: Iterable[int]) -> str:
    return index(i + 1 for i in idx)


def box(lo, hi) -> str:
    """A bounding box (`lo`, `hi`: 0-based, inclusive) as each language's users write it:
    `numpy slice [3:8, 0:1] / Julia range [4:8, 1:1]` (numpy's slice is half-open, one past
    the end; Julia's range is inclusive, 1-based), so that neither reads as an empty slice."""
    if not lo:
        return "the scalar"
    numpy_box = ", ".join(f"{a}:{b + 1}" for a, b in zip(lo, hi, strict=True))
    julia_box = ", ".join(f"{a + 1}:{b + 1}" for a, b in zip(lo, hi, strict=True))
    return f"numpy slice [{numpy_box}] / Julia range [{julia_box}]"


def region_lines(c: ArrayComparison, indent: str = "    ") -> list[str]:
    """One line per region beyond the tolerance (largest first), and how many more."""
    out = []
    for r in c.regions[:MAX_REGION_LINES]:
        if r.nonfinite:
            worst = str(Verdict.NONFINITE)
        elif not math.isfinite(r.worst_rel):  # the scale is zero: in absolute terms
            worst = f"|Δ| {num(r.worst_abs)} (the reference is zero there)"
        else:
            worst = f"{r.worst_rel:.2e}·max|g_ref|"
        out.append(
            f"{indent}{r.count} element(s) in {box(r.lo, r.hi)}, worst {worst} at numpy "
            f"{index(r.worst)} / Julia {julia(r.worst)}"
        )
    shown = min(len(c.regions), MAX_REGION_LINES)
    if c.region_count > shown:
        out.append(f"{indent}… and {c.region_count - shown} more region(s)")
    return out


def floor_text(c: ArrayComparison) -> str:
    """`, noise floor 2.5e-19` where the array's floor bounds |Δ| rather than the relative
    tolerance, and `, 3 element(s) within their own rounding level` where entries beyond
    both are within their own floors (`ArrayComparison.own_rounding`)."""
    text = ""
    if c.grad_floor > c.tolerance.grad * c.reference_max:
        text += f", noise floor {num(c.grad_floor)}"
    if c.own_rounding:
        text += f", {c.own_rounding} element(s) within their own rounding level"
    return text


def relative_text(c: ArrayComparison) -> str:
    """`max|Δ|/max|g_ref| = 1.2e-13`, or, against a reference of zeros, the absolute max|Δ|;
    with the noise floor where it, not the relative tolerance, bounds |Δ|."""
    floor = floor_text(c)
    if c.reference_zero:
        return f"reference is all zeros; max|Δ| = {num(c.max_abs)}{floor}"
    return f"max|Δ|/max|g_ref| = {num(c.max_rel)}{floor}"


def comparison_text(c: ArrayComparison) -> str:
    tol = c.tolerance
    if c.max_abs == 0:
        text = "bitwise equal"
    else:
        text = (
            f"{relative_text(c)} (tolerance {tol.grad:g}) at numpy {index(c.worst)} / "
            f"Julia {julia(c.worst)}, {worst_ulp_text(c)}"
        )
    if c.differing:
        text += (
            f"; {c.differing} of {c.size} element(s) beyond tolerance in {c.region_count} region(s)"
        )
    if c.loss_abs is not None:
        if c.loss_rel is None:  # the reference loss is 0: in absolute terms
            text += (
                f"; |ΔL| = {num(c.loss_abs)} (the reference loss is 0; "
                f"noise floor {num(c.loss_floor)})"
            )
        else:
            beyond = (c.loss_rel > tol.loss or c.loss_floored) and c.loss_floor > 0
            floor = f", noise floor {num(c.loss_floor)}" if beyond else ""
            text += f"; |ΔL|/|L| = {num(c.loss_rel)} (tolerance {tol.loss:g}{floor})"
    if c.declared is not None:
        text += f"; {c.declared.describe()}"
    return text


def fault_text(j: CaseJudgement) -> str:
    """A run's fault: what, and the command that reproduces it."""
    again = f" (reproduce: `{j.command}`)" if j.command else ""
    return f"{j.reason}{again}"


def summary(j: CaseJudgement) -> str:
    """One line: the case, the verdict and why (the pytest message's first line)."""
    head = f"{j.case}: {j.verdict}"
    if j.kind == CaseKind.RUN:
        body = fault_text(j) if j.verdict != Verdict.OK else ""
    elif CaseKind(j.kind).compares and j.comparison is not None:
        body = comparison_text(j.comparison)
        if j.verdict.at_kinks:
            body += (
                "; differs only at the kinks, as declared "
                f"({j.kinks}); away from them {num(j.away.max_rel)}"
            )
        if j.reason:
            body = f"{j.reason}; {body}"
    elif j.result is not None:  # a gradient check: its result says what it carries
        body = j.result.summary(j.reason)
    else:  # any other case, or a gradient check with a generic result: its reason
        body = j.reason
    return f"{head}: {body}" if body else head


def details(j: CaseJudgement) -> list[str]:
    """The lines below a summary: regions of a failing pair, masks, central differences."""
    out = []
    if CaseKind(j.kind).compares and j.comparison is not None and j.comparison.differing:
        out.extend(region_lines(j.comparison))
    if j.masked is not None:
        m = j.masked
        out.append(f"    {m.left_out} of {m.size} entries left out by the kink mask ({m.why})")
    if j.fd is not None:
        fd = j.fd
        flag = " (above the example's threshold; information only)" if fd.above else ""
        out.append(
            f"    central differences (h = {fd.step:g}): relative error {num(fd.error, 1)}{flag}"
        )
    return out


def compared_name(j: CaseJudgement) -> str:
    """What a compared case compares, as the pair tables name it: a gradient array (`x`),
    an output (`output uT`), an array's Hessian-vector product (`Hv x`), an output's
    pullback by a wrt array (`Jᵀw uT by x`)."""
    if j.kind == CaseKind.OUTPUT:
        return f"output {j.array}"
    if j.kind == CaseKind.HVP:
        return f"Hv {j.array}"
    if j.kind == CaseKind.PULLBACK:
        return f"Jᵀw {(j.array or '').replace('::', ' by ')}"
    return j.array or ""


def message(j: CaseJudgement) -> str:
    """The whole text of one judgement (pytest's failure message)."""
    return "\n".join([summary(j), *details(j)])


def file_name(j: CaseJudgement) -> str:
    """The file a file case judged: its case id's last part (`EX::file::LABEL`)."""
    return j.case.split("::file::", 1)[-1]


def expected_count(n: int) -> str:
    """`1 expected difference`, `2 expected differences`."""
    return f"{n} expected difference{'' if n == 1 else 's'}"


def declared_text(j: CaseJudgement) -> str:
    """A judgement's declaration: its place and bound (`x[0], at most 0.5·max|g_ref|`)."""
    e = j.expected
    if e is None:
        return ""
    bound = f", at most {e.bound:g}·max|g_ref|" if e.bound is not None else ""
    return f"{j.declared or e.where()}{bound}"


def expected_lines(ej, indent: str = "    ") -> list[str]:
    """One line per declared difference that shows as declared: which, where, why."""
    out = []
    for e, cases in ej.expected.items():
        places = [c.declared for c in cases if c.declared]
        where = "; ".join(dict.fromkeys(places)) or (e.check or "")
        out.append(f"{indent}{e.what()} ({where}, {len(cases)} case(s)): {e.reason}")
    return out


def ranges_text(values) -> str:
    """`1…8, 15…17, 31…33` for a set of integers (the sizes bisect tried, fuzz draws)."""
    out, run = [], []
    for v in sorted(values):
        if run and v == run[-1] + 1:
            run.append(v)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}…{run[-1]}")
        run = [v]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}…{run[-1]}")
    return ", ".join(out)


# --- what a run did not judge: the headline's clause, in every view ---------------------------


def not_run_text(missing: Iterable[tuple[str, str, bool]]) -> str:
    """`julia-a, julia-b and 5 more did not run (no Julia found); jax-a@tpu did not run
    (…)`: the variants (or runs, or devices) that did not run, one reason per cause."""
    by_cause: dict[str, list[str]] = {}
    for label, why, _ in missing:
        by_cause.setdefault(why, []).append(label)
    parts = []
    for why, labels in by_cause.items():
        shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        parts.append(f"{shown} did not run ({why})")
    return "; ".join(parts)


def alone_text(alone: Iterable, *, strict: bool = False) -> str:
    """`compared with nothing: 03-advection jax-x (family x: one member here)`: the
    variants that ran and that no other member of their family was compared with
    (`_judge._alone`), "" where there is none; `strict` (`weanj check --strict`) says
    that it is what fails."""
    shown = [a.short for a in alone]
    if not shown:
        return ""
    return f"compared with nothing{' (--strict)' if strict else ''}: {'; '.join(shown)}"


def coverage_text(
    coverage, did_not_run: Iterable[tuple[str, str, bool]] = (), alone: Iterable = ()
) -> str:
    """What the run did not judge, in one clause (empty where it judged everything it
    covers): `compared with nothing: …` (`alone_text`); `partial: 1 of 6 variants judged
    (5 outside --variants); tpu: not run (no TPU visible to JAX here); JAX only: julia-x
    did not run (no Julia found)`; a required one is the overall line's failure, not said
    here."""
    from .._judge._contract import first_clause

    parts = [alone_text(alone)] if alone_text(alone) else []
    if coverage is not None and coverage.partial:
        parts.append(
            f"partial: {coverage.judged} of {coverage.variants} variants judged "
            f"({len(coverage.left_out)} outside --variants)"
        )
    did_not_run = list(did_not_run)
    required = {label for label, _, needed in did_not_run if needed}
    for kind, why in (coverage.absent if coverage is not None else {}).items():
        if kind not in required:  # a required one: the overall line's failure says it
            parts.append(f"{kind}: not run ({first_clause(why)})")
    optional = [m for m in did_not_run if not m[2]]
    if optional:
        parts.append(f"JAX only: {not_run_text(optional)}")
    return "; ".join(parts)


def not_judged_text(
    coverage,
    did_not_run: Iterable[tuple[str, str, bool]],
    sep: str,
    alone: Iterable = (),
    strict: bool = False,
) -> str:
    """`required but not run: …` (what is required and did not run: the failure), what
    was compared with nothing (with `strict`, a failure too), then `coverage_text`,
    joined by `sep`; empty where the run judged everything it covers."""
    did_not_run, alone = list(did_not_run), list(alone)
    required = [m for m in did_not_run if m[2]]
    parts = [f"required but not run: {not_run_text(required)}"] if required else []
    if strict and alone:
        parts.append(alone_text(alone, strict=True))
    covered = coverage_text(coverage, did_not_run, () if strict else alone)
    return sep.join([*parts, covered] if covered else parts)


def not_run_cases(results: Iterable) -> str:
    """`121 case(s) not run: no Julia found`, or with several reasons `125 case(s) not
    run: no Julia found (121), not compared (4)`: the cases of the examples `results`
    that did not run here (`unavailable`, `skipped`), by the first clause of their reason."""
    from .._judge._contract import first_clause

    reasons: dict[str, int] = {}
    for ej in results:
        for j in ej.judgements:
            if not j.verdict.ran:
                why = first_clause(j.reason or str(j.verdict))
                reasons[why] = reasons.get(why, 0) + 1
    total = sum(reasons.values())
    if len(reasons) <= 1:
        return f"{total} case(s) not run" + "".join(f": {why}" for why in reasons)
    ranked = sorted(reasons.items(), key=lambda item: -item[1])
    return f"{total} case(s) not run: " + ", ".join(f"{why} ({n})" for why, n in ranked)


def spent_lines(ej: Any) -> list[str]:
    """`weanj check -v`'s account of what each evaluation spent: the kernel's executions
    per phase and the programs compiled for it (`_model._cost.Cost`); none for a record
    or a file, which ran nothing here."""
    out = []
    for label, g in ej.subjects.items():
        cost = getattr(g, "cost", None)
        if cost is not None and cost.runs:
            out.append(f"    {label}: {cost.describe()}")
    head = "  spent (the kernel's executions, forward+backward, per phase):"
    return [head, *out] if out else []
