"""The judge's verdicts as text: `weanj check`, `weanj diff` and pytest messages.

Nothing here decides anything: every line renders a `Judgement` (or an
`ExampleJudgement`), so the terminal, the JSON and the pytest messages say the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .._judge._compare import ArrayComparison, tolerance
from .._judge._verdict import ExampleJudgement, Judgement, Verdict

MAX_REGION_LINES = 6


def num(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "—"
    return f"{x:.{digits}e}" if math.isfinite(x) else "NaN/Inf"


def index(idx: Iterable[int]) -> str:
    return "(" + ", ".join(str(i) for i in idx) + ")"


def julia(idx: Iterable[int]) -> str:
    return index(i + 1 for i in idx)


def box(lo, hi) -> str:
    """`(3:7, 0:0)` numpy / `(4:8, 1:1)` Julia: a bounding box in both conventions."""
    if not lo:
        return "the scalar"
    numpy_box = "(" + ", ".join(f"{a}:{b}" for a, b in zip(lo, hi, strict=True)) + ")"
    julia_box = "(" + ", ".join(f"{a + 1}:{b + 1}" for a, b in zip(lo, hi, strict=True)) + ")"
    return f"numpy {numpy_box} / Julia {julia_box}"


def region_lines(c: ArrayComparison, indent: str = "    ") -> list[str]:
    """One line per region beyond the tolerance (largest first), and how many more."""
    out = []
    for r in c.regions[:MAX_REGION_LINES]:
        if r.nonfinite:
            worst = "NaN/Inf"
        elif not math.isfinite(r.worst_rel):  # the reference is zero throughout
            worst = f"|Δ| {num(r.worst_abs)} (max|g_ref| = 0)"
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


def comparison_text(c: ArrayComparison) -> str:
    tol = tolerance(c.dtype)
    if c.max_abs == 0:
        text = "bitwise equal"
    else:
        text = (
            f"max|Δ|/max|g_ref| = {num(c.max_rel)} (tolerance "
            f"{tol.grad:g}) at numpy {index(c.worst)} / "
            f"Julia {julia(c.worst)}, {c.ulp if c.ulp >= 0 else '—'} ULP"
        )
    if c.differing:
        text += (
            f"; {c.differing} of {c.size} element(s) beyond tolerance in {c.region_count} region(s)"
        )
    if c.loss_rel is not None:
        text += f"; |ΔL|/|L| = {num(c.loss_rel)} (tolerance {tol.loss:g})"
    return text


def taylor_text(j: Judgement) -> str:
    t = j.taylor
    if t is None or not t.directions:
        return j.reason
    rates = ["/".join(f"{r:.2f}" for r in rates) or "—" for rates in t.asymptotic]
    text = (
        f"rates at the smallest steps {'; '.join(rates)} (h0 {t.h0:.1e}, bound {t.policy.rate:g}; "
        f"resolves relative errors from {t.sensitivity:.0e})"
    )
    if j.reason:
        text += f": {j.reason}"
    return text


def summary(j: Judgement) -> str:
    """One line: the case, the verdict and why (the pytest message's first line)."""
    head = f"{j.case}: {j.verdict}"
    if j.kind == "pair" and j.comparison is not None:
        body = comparison_text(j.comparison)
        if j.verdict == Verdict.KINKS:
            body += (
                "; differs only at the kinks, as declared "
                f"({j.kinks}); away from them {num(j.away.max_rel)}"
            )
        if j.reason:
            body = f"{j.reason}; {body}"
    elif j.kind == "taylor":
        body = taylor_text(j)
    elif j.kind == "jvp" and j.directional is not None:
        d = j.directional
        body = (
            j.reason
            or f"jvp by {d.by} agrees with ⟨g, dx⟩ to {num(d.error, 1)} (tolerance {d.tolerance:g})"
        )
    else:
        body = j.reason
    return f"{head}: {body}" if body else head


def details(j: Judgement) -> list[str]:
    """The lines below a summary: regions of a failing pair, masks, central differences."""
    out = []
    if j.kind == "pair" and j.comparison is not None and j.comparison.differing:
        out.extend(region_lines(j.comparison))
    if "masked" in j.info:
        m = j.info["masked"]
        out.append(
            f"    {m['left_out']} of {m['size']} entries left out by the kink mask ({m['why']})"
        )
    if "fd" in j.info:
        fd = j.info["fd"]
        flag = (
            " (above the example's threshold; information only)"
            if fd["error"] > fd["threshold"]
            else ""
        )
        out.append(
            f"    central differences (h = {fd['step']:g}): "
            f"relative error {num(fd['error'], 1)}{flag}"
        )
    return out


def message(j: Judgement) -> str:
    """The whole text of one judgement (pytest's failure message)."""
    return "\n".join([summary(j), *details(j)])


# --- an example ------------------------------------------------------------------------------


def _checks_of(ej: ExampleJudgement, label: str) -> dict[str, list[Judgement]]:
    out: dict[str, list[Judgement]] = {"taylor": [], "jvp": [], "float32": []}
    for j in ej.judgements:
        if j.kind in ("taylor", "jvp") and j.subjects == (label,):
            out[j.kind].append(j)
        elif j.kind == "pair" and len(j.subjects) == 2 and j.subjects[1] == f"{label}@float32":
            out["float32"].append(j)
    return out


def _cell(judgements: list[Judgement], value) -> str:
    if not judgements:
        return "—"
    worst = next((j for j in judgements if j.failed), None) or next(
        (j for j in judgements if j.verdict == Verdict.SKIPPED), judgements[0]
    )
    if worst.verdict == Verdict.SKIPPED:
        return "skipped"
    shown = value(judgements)
    return f"{worst.verdict} {shown}".strip()


def _min_rate(js: list[Judgement]) -> str:
    rates = [r for j in js if j.taylor for rates in j.taylor.asymptotic for r in rates]
    return f"{min(rates):.2f}" if rates else "lin."


def _jvp_error(js: list[Judgement]) -> str:
    errors = [j.directional.error for j in js if j.directional is not None]
    return num(max(errors), 0) if errors else ""


def _f32_error(js: list[Judgement]) -> str:
    rels = [j.comparison.max_rel for j in js if j.comparison is not None]
    return num(max(rels), 1) if rels else ""


def variant_rows(ej: ExampleJudgement) -> list[str]:
    """The table of variants: loss, Taylor (smallest rate), jvp, float32 error, time."""
    out = [
        f"  {'variant':<24} {'family':<13} {'loss':<22} "
        f"{'taylor':<10} {'jvp':<10} {'float32':<12} time"
    ]
    for label, g in ej.subjects.items():
        if g.source != "run" or g.dtype != "float64":
            continue
        checks = _checks_of(ej, label)
        loss = num(g.loss, 15) if g.loss is not None else "—"
        time_s = f"{g.seconds:.1f} s" if g.seconds is not None else ""
        out.append(
            f"  {label:<24} {g.family:<13} {loss:<22} {_cell(checks['taylor'], _min_rate):<10} "
            f"{_cell(checks['jvp'], _jvp_error):<10} "
            f"{_cell(checks['float32'], _f32_error):<12} {time_s}"
        )
    for label, error in ej.errors.items():
        verdict = "timeout" if label in ej.timed_out else "ERROR"
        out.append(f"  {label:<24} {verdict} {error}")
    return out


def pair_row(j: Judgement) -> str:
    c = j.comparison
    ref, other = j.subjects
    if c is None:
        return (
            f"  {ref:<24} {other:<26} {j.array or '':<8} {'':>9} "
            f"{'':>9} {'':>12} {'':>12} {'':>5} {'':>9}  {j.verdict}"
        )
    numpy_i, julia_i = ("—", "—") if c.max_abs == 0 else (index(c.worst), julia(c.worst))
    ulp = "—" if c.ulp < 0 else (str(c.ulp) if c.ulp < 100000 else ">1e5")
    return (
        f"  {ref:<24} {other:<26} {j.array or '':<8} {num(c.max_abs):>9} {num(c.max_rel):>9} "
        f"{numpy_i:>12} {julia_i:>12} {ulp:>5} {num(c.loss_rel):>9}  {j.verdict}"
        + (f"  ({j.family})" if j.verdict == Verdict.INFO else "")
    )


def pair_lines(ej: ExampleJudgement, *, everything: bool) -> list[str]:
    """The pair table (`everything=False`: the family references' pairs, float32 and
    what fails or differs at kinks: `weanj check`'s compact table)."""
    pairs = [j for j in ej.of_kind("pair") if j.verdict != Verdict.SKIPPED]
    if not everything:
        firsts = {}
        for j in pairs:
            firsts.setdefault(j.family, j.subjects[0])
        pairs = [
            j
            for j in pairs
            if j.subjects[0] == firsts.get(j.family)
            or j.failed
            or j.verdict in (Verdict.KINKS, Verdict.INFO)
        ]
    if not pairs:
        return []
    out = [
        "  pairs (rel = max|Δ| / max|g_ref|, ref = left; worst "
        "element as 0-based numpy / 1-based Julia index):",
        f"  {'ref':<24} {'other':<26} {'array':<8} "
        f"{'max|Δ|':>9} {'rel':>9} {'numpy':>12} {'Julia':>12} "
        f"{'ULP':>5} {'|ΔL|/|L|':>9}  verdict",
    ]
    out.extend(pair_row(j) for j in pairs)
    differing = [
        j
        for j in pairs
        if j.comparison is not None and j.comparison.differing and j.verdict != Verdict.INFO
    ]
    if differing:
        out.append("  where pairs differ beyond the tolerance (connected regions, largest first):")
        for j in differing:
            c = j.comparison
            out.append(
                f"   {j.subjects[0]} vs {j.subjects[1]} "
                f"({j.array}): {c.differing} of {c.size} element(s)"
            )
            out.extend(region_lines(c))
            if j.verdict == Verdict.KINKS:
                out.append(
                    f"    only at the kinks, as declared ({j.kinks}); "
                    f"away from them {num(j.away.max_rel)}"
                )
    return out


def example_lines(ej: ExampleJudgement, *, mode: str = "check") -> list[str]:
    """`weanj check`'s (`mode="check"`) or `weanj diff`'s block for one example."""
    if ej.error is not None:
        return [f"== {ej.name}: not judged: {ej.error}", f"  {ej.name}: FAIL"]
    dtypes = " and ".join(ej.dtypes)
    out = [f"== {ej.name} ({ej.inputs.describe()}; {dtypes})"]
    if mode == "check":
        out.extend(variant_rows(ej))
    else:
        for label, g in ej.subjects.items():
            loss = "loss ?" if g.loss is None else f"loss {g.loss:.15e}"
            out.append(
                f"  {label:<26} {g.family:<13} {g.dtype:<8} "
                f"{loss}  {g.backend_version or g.backend}"
            )
    skips: dict[str, list[str]] = {}
    for label, why in ej.skipped.items():  # one line per reason, however many variants
        skips.setdefault(why, []).append(label)
    for j in ej.judgements:
        if (
            j.verdict == Verdict.SKIPPED
            and j.kind == "jvp"
            and not set(j.subjects) & set(ej.skipped)
        ):
            skips.setdefault(j.reason, []).append(f"{j.subjects[0]}::jvp")
    for why, labels in skips.items():
        out.append(f"  skipped {', '.join(labels)}: {why}")
    for j in ej.of_kind("taylor") + ej.of_kind("jvp"):
        if j.failed:
            out.append("  " + summary(j))
    masked = next((j.info["masked"] for j in ej.of_kind("taylor") if "masked" in j.info), None)
    if masked:
        out.append(
            f"  kink mask: {masked['left_out']} of "
            f"{masked['size']} entries left out ({masked['why']})"
        )
    out.extend(pair_lines(ej, everything=mode != "check"))
    files = ej.of_kind("file")
    for j in files:
        if j.verdict != Verdict.OK:
            label = j.case.split("::file::", 1)[1]
            out.append(f"  file {label}: {j.verdict}" + (f": {j.reason}" if j.reason else ""))
    fine = sum(j.verdict == Verdict.OK for j in files)
    if fine:
        out.append(f"  {fine} file(s) of the store and recorded/ read, current and finite")
    failures = len(ej.failures) + len(ej.errors)
    out.append(
        f"  {ej.name}: {'ok' if ej.ok else 'FAIL'}"
        + (f" ({failures} failure(s))" if failures else "")
    )
    return out


def overall_line(results: list[ExampleJudgement], seconds: float, dtypes: tuple[str, ...]) -> str:
    runs = sum(1 for ej in results for g in ej.subjects.values() if g.source == "run")
    skipped = sum(1 for ej in results for j in ej.judgements if j.verdict == Verdict.SKIPPED)
    failed = [ej.name for ej in results if not ej.ok]
    unchecked = [d for d in ("float64", "float32") if d not in dtypes]
    note = f"; {'/'.join(unchecked)} not checked (weanj check --dtype both)" if unchecked else ""
    return (
        f"overall: {'ok' if not failed else 'FAIL'} — {len(results)} example(s), {runs} run(s) in "
        f"{' and '.join(dtypes)}, {skipped} case(s) skipped, {seconds:.0f} s{note}"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
