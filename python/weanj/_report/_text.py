"""An example's judgement as text: `weanj check`'s and `weanj diff`'s blocks (the
variants' table, the pairs, the files, the failures) and the overall line.

Nothing here decides anything: every line renders the judge's `CaseJudgement`s (one
case's text is `_lines`), so the terminal, the JSON, the page and the pytest messages say
the same.
"""

from __future__ import annotations

from .._judge._alone import alone
from .._judge._checks import num
from .._judge._contract import first_clause
from .._judge._suspects import kink_hypotheses
from .._judge._verdict import PRECISION, CaseJudgement, ExampleJudgement
from .._model._verdicts import CaseKind, Verdict
from .._vocabulary import ACCELERATORS, DTYPES
from ._cells import check_cell, checks_of, compared, family_cell, float32_cell, shown_checks
from ._lines import (
    compared_name,
    declared_text,
    expected_count,
    expected_lines,
    fault_text,
    file_name,
    index,
    julia,
    not_judged_text,
    not_run_cases,
    region_lines,
    spent_lines,
    summary,
    worst_ulp_text,
)

# --- an example ------------------------------------------------------------------------------


def fault_rows(ej: ExampleJudgement) -> list[tuple[str, CaseJudgement]]:
    """One row per variant at fault: `(who, its run judgement)`; a float32 run that
    fails as its float64 run does is folded into that row (`jax-bad (float64, float32)`)."""
    faults = ej.faults
    rows = []
    for label, j in faults.items():
        base, _, dtype = label.partition("@")
        if dtype and base in faults and faults[base].verdict == j.verdict:
            continue  # said with the float64 row
        also = f"{label}@float32" in faults and faults[f"{label}@float32"].verdict == j.verdict
        rows.append((f"{label} (float64, float32)" if also else label, j))
    return rows


def failure_lines(ej: ExampleJudgement, indent: str = "  ") -> list[str]:
    """Every failure once: one row per variant at fault, then each failing case."""
    out = [f"{indent}{who}: {j.verdict}: {fault_text(j)}" for who, j in fault_rows(ej)]
    for j in ej.failures:
        if j.kind == CaseKind.RUN:
            continue
        out.append(f"{indent}{summary(j)}")
    return out


def not_compared_line(ej: ExampleJudgement) -> str | None:
    """Pairs and checks not compared because a side is at fault, listed once."""
    blocked = [j for j in ej.judgements if j.blocked_by]
    if not blocked:
        return None
    who = sorted({j.blocked_by for j in blocked})
    return f"  not compared: {len(blocked)} case(s) with {', '.join(who)} (at fault, above)"


def reference_lines(ej: ExampleJudgement) -> list[str]:
    """One line per family whose designated reference is at fault or did not run: the
    member it was judged against instead (the judge's `ExampleJudgement.references`)."""
    return [f"  {r.line}" for r in ej.references() if r.line]


def variant_rows(ej: ExampleJudgement) -> list[str]:
    """The table of variants: loss, Taylor (smallest rate), jvp, float32, agreement with
    its family, time; a variant at fault gets its verdict and one line."""
    suspects = set(ej.suspects())
    shown = shown_checks(ej)
    checks = "".join(f"{str(kind):<10} " for kind in shown)
    out = [
        f"  {'variant':<24} {'family':<13} {'loss':<22} {checks}"
        f"{'float32':<12} {'family agreement':<22} time"
    ]
    for run in ej.of_kind(CaseKind.RUN):
        label = run.subjects[0]
        if "@" in label:
            continue
        if run.verdict != Verdict.OK:
            if run.verdict.failing or run.verdict.as_declared:
                out.append(f"  {label:<24} {run.family:<13} {run.verdict}: {run.reason}")
            continue
        g = ej.subjects.get(label)
        loss = num(g.loss, 15) if g is not None and g.loss is not None else "—"
        time_s = f"{g.seconds:.1f} s" if g is not None and g.seconds is not None else ""
        if g is not None and g.reused is not None:
            time_s += " (earlier run)"
        own = "".join(
            f"{check_cell(checks_of(ej, label, kind), kind).terminal():<10} " for kind in shown
        )
        f32, fam = float32_cell(ej, label), family_cell(ej, label, suspects)
        out.append(
            f"  {label:<24} {run.family:<13} {loss:<22} {own}"
            f"{f32.terminal():<12} {fam.terminal():<22} {time_s}"
        )
    return out + x64_lines(ej)


def x64_lines(ej: ExampleJudgement) -> list[str]:
    """Which JAX x64 configuration the runs used, and where it comes from (one line per
    configuration: `x64 on (x64 = true in [tool.weanj] of …): jax-a, jax-b`)."""
    groups: dict[tuple, list[str]] = {}
    for run in ej.of_kind(CaseKind.RUN):
        if run.x64 is not None and "@" not in run.subjects[0]:
            key = (run.x64.enabled, run.x64.source)
            groups.setdefault(key, []).append(run.subjects[0])
    return [
        f"  x64 {'on' if on else 'off'} ({source}): {', '.join(labels)}"
        for (on, source), labels in groups.items()
    ]


def alone_lines(ej: ExampleJudgement) -> list[str]:
    """One line per family whose members that ran were compared with nothing (the judge's
    `_alone`): what the report's example sections say of it."""
    return [f"  {a.line}" for a in alone(ej)]


def declared_lines(ej: ExampleJudgement) -> list[str]:
    """The tolerances the example declares, where the judge applied them (one line per
    family: `family sq: declared tolerance loss 1e-09, grad 1e-09 (why)`)."""
    declared: dict[str, str] = {}
    for j in ej.of_kind(CaseKind.PAIR):
        if j.comparison is not None and j.comparison.declared is not None:
            declared.setdefault(j.family, j.comparison.declared.describe())
    return [f"  family {family}: {text}" for family, text in declared.items()]


def pair_row(j: CaseJudgement) -> str:
    c = j.comparison
    ref, other = j.subjects
    if c is None:
        blank = f"{'':>9} {'':>9} {'':>12} {'':>12} {'':>10} {'':>9}"
        return f"  {ref:<24} {other:<26} {compared_name(j):<8} {blank}  {j.verdict}"
    numpy_i, julia_i = ("—", "—") if c.max_abs == 0 else (index(c.worst), julia(c.worst))
    rel = "0 (all 0)" if c.reference_zero and c.max_abs > 0 else num(c.max_rel)
    return (
        f"  {ref:<24} {other:<26} {compared_name(j):<8} {num(c.max_abs):>9} {rel:>9} "
        f"{numpy_i:>12} {julia_i:>12} {worst_ulp_text(c):>10} {num(c.loss_rel):>9}  {j.verdict}"
        + (f"  ({j.family})" if j.verdict == Verdict.INFO else "")
    )


def pair_lines(ej: ExampleJudgement, *, everything: bool, failing_only: bool = False) -> list[str]:
    """The pair table (`everything=False`: the pairs of each family's reference (the
    first member compared), the float32 runs and whatever is not plainly `ok` (fails,
    differs at kinks or as declared, information): `weanj check -v`'s compact table;
    `failing_only`: the failing pairs alone, `weanj check`'s default)."""
    pairs = [j for j in compared(ej) if j.verdict != Verdict.SKIPPED]
    if failing_only:
        pairs = [j for j in pairs if j.failed]
    elif not everything:
        firsts = {}
        for j in pairs:
            firsts.setdefault(j.family, j.subjects[0])
        pairs = [
            j
            for j in pairs
            if j.subjects[0] == firsts.get(j.family)
            or "@" in j.subjects[1]
            or j.verdict != Verdict.OK
        ]
    if not pairs:
        return []
    out = [
        "  pairs (rel = max|Δ| / max|g_ref|, ref = left; worst "
        "element as 0-based numpy / 1-based Julia index):",
        f"  {'ref':<24} {'other':<26} {'array':<8} "
        f"{'max|Δ|':>9} {'rel':>9} {'numpy':>12} {'Julia':>12} "
        f"{'ULP':>10} {'|ΔL|/|L|':>9}  verdict",
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
                f"({compared_name(j)}): {c.differing} of {c.size} element(s)"
            )
            out.extend(region_lines(c))
            if j.verdict.at_kinks:
                out.append(
                    f"    only at the kinks, as declared ({j.kinks}); "
                    f"away from them {num(j.away.max_rel)}"
                )
            if j.expected is not None and j.verdict.declared:
                out.append(f"    as declared: {declared_text(j)}")
    return out


def precision_lines(ej: ExampleJudgement) -> list[str]:
    """One line per float32 run whose difference from its float64 run is float32's own
    rounding (the pair's evidence, `PRECISION`): how many digits float32 keeps there."""
    out = []
    for j in ej.of_kind(CaseKind.PAIR):
        for said in j.evidence:
            if said.startswith(PRECISION):
                of = f" ({j.array})" if j.array else ""
                out.append(f"  {j.subjects[1]}{of}: {said}")
    return out


def _skips(ej: ExampleJudgement, *, short: bool = False) -> list[str]:
    """One line per reason, however many variants: what is unavailable or skipped here
    (`short`: the reason's first clause; the whole reason is said once per check,
    `unavailable_lines`)."""
    reasons: dict[str, list[str]] = {}
    for label, why in {**ej.unavailable, **ej.skipped}.items():
        reasons.setdefault(why, []).append(label)
    for j in ej.of_kind(CaseKind.JVP):
        if (
            j.verdict == Verdict.SKIPPED
            and not j.blocked_by
            and j.subjects[0] not in {**ej.skipped, **ej.unavailable}
        ):
            reasons.setdefault(j.reason, []).append(f"{j.subjects[0]}::jvp")
    out = []
    for why, labels in reasons.items():
        unavailable = labels[0] in ej.unavailable
        head = str(Verdict.UNAVAILABLE if unavailable else Verdict.SKIPPED)
        # a variant that cannot run here at all: its whole reason (an install hint) once
        # per check, below (`unavailable_lines`); a run on a device keeps its own
        once = short and unavailable and "@" not in labels[0]
        said = first_clause(why) + " (below)" if once else why
        out.append(f"  {head} {', '.join(labels)}: {said}")
    return out


def unavailable_lines(results: list[ExampleJudgement]) -> list[str]:
    """What cannot run here, once per check: one line per reason, with the variants of
    every example it holds for (the install hint said once)."""
    reasons: dict[str, list[str]] = {}
    for ej in results:
        for label, why in ej.unavailable.items():
            if "@" not in label:  # a variant's float64 run names the variant
                reasons.setdefault(why, []).append(label)
    return [f"unavailable here: {', '.join(labels)}: {why}" for why, labels in reasons.items()]


def example_lines(
    ej: ExampleJudgement, *, mode: str = "check", verbose: bool = True, strict: bool = False
) -> list[str]:
    """`weanj check`'s (`mode="check"`) or `weanj diff`'s block for one example (one not
    judged: its line says why, as the command line's stderr does once). Not `verbose`
    (`weanj check` without `-v`): the variants' table, what fails in full, what is
    expected, skipped or unavailable (each reason's first clause), and the verdict; the
    agreeing pairs, the files read and the evaluations reused are `-v`'s. `strict`
    (`weanj check --strict`): a family compared with nothing fails it."""
    if ej.error is not None:
        return [f"== {ej.name}: not judged: {ej.error}"]
    dtypes = " and ".join(ej.dtypes)
    out = [f"== {ej.name} ({ej.inputs.describe()}; {dtypes})"]
    if mode == "check":
        out.extend(variant_rows(ej))
    else:
        for label, g in ej.subjects.items():
            loss = "loss ?" if g.loss is None else f"loss {g.loss:.15e}"
            x64 = f"  {g.x64}" if g.x64 is not None else ""
            out.append(
                f"  {label:<26} {g.family:<13} {g.dtype:<8} "
                f"{loss}  {g.backend_version or g.backend}{x64}"
            )
    out.extend(_skips(ej, short=not verbose))
    masked = next((j.masked for j in ej.of_kind(CaseKind.TAYLOR) if j.masked is not None), None)
    if masked:
        out.append(
            f"  kink mask: {masked.left_out} of {masked.size} entries left out ({masked.why})"
        )
    blocked = not_compared_line(ej)
    if blocked:
        out.append(blocked)
    out.extend(reference_lines(ej))
    out.extend(pair_lines(ej, everything=mode != "check", failing_only=not verbose))
    out.extend(precision_lines(ej))
    out.extend(declared_lines(ej))
    files = ej.of_kind(CaseKind.FILE)
    for j in files:
        if j.verdict != Verdict.OK:
            out.append(
                f"  file {file_name(j)}: {j.verdict}" + (f": {j.reason}" if j.reason else "")
            )
    fine = sum(j.verdict == Verdict.OK for j in files)
    if fine and verbose:
        out.append(f"  {fine} file(s) of the store and recorded/ read, current and finite")
    # the per-example reuse line (`_records.summary`) is -v's, unless something changed
    # since the records were made (it says what): the run's total is said once
    changed = any(
        why.startswith("recomputed") and not any(x in why for x in ("no earlier", "afresh"))
        for why in ej.reuse.values()
    )
    out.extend(n for n in ej.notes if verbose or changed or not n.startswith("  evaluations: "))
    out.extend(spent_lines(ej) if verbose else [])
    expected = expected_lines(ej)
    if expected:
        out.append("  expected differences (declared with weanj.Expected; they pass):")
        out.extend(expected)
    failing = failure_lines(ej, indent="    ")
    if failing:
        out.append("  failures:")
        out.extend(failing)
        out.extend(f"  {h.line}" for h in kink_hypotheses(ej))  # a family failing alike
    return out + [verdict_line(ej, len(failing), len(expected), strict=strict)]


def verdict_line(ej: ExampleJudgement, failing: int, expected: int, *, strict: bool) -> str:
    """`  EX: ok (1 expected difference) — family wav has one member here, jax-bug:
    nothing to compare it with; did you mean wave?`: the example's verdict, what fails or
    is expected, and each family compared with nothing (`_judge._alone`; with `strict`, a
    failure)."""
    notes = [f"{failing} failure(s)"] if failing else []
    if expected:
        notes.append(expected_count(expected))
    lonely = alone(ej)
    verdict = Verdict.OK if ej.ok and not (strict and lonely) else Verdict.FAIL
    said = "".join(f" — {a.line}" for a in lonely)
    return f"  {ej.name}: {verdict}" + (f" ({', '.join(notes)})" if notes else "") + said


def suspect_lines(found: list) -> list[str]:
    """The end of `weanj check`: the judge's most likely wrong variant(s) of each failing
    family, and the commands that look closer."""
    if not found:
        return []
    out = ["suspects (the judge's most likely wrong variants, per failing family):"]
    for example, s in found:
        arrays = ", ".join(dict.fromkeys(j.array for j in s.against if j.array)) or "the loss"
        on_device = s.label.rpartition("@")[2] in ACCELERATORS
        # a device run's pairs are check's (check.json, the report); the store holds CPU runs
        closer = [f"`weanj report {example}`" if on_device else f"`weanj diff {example}`"]
        if "/" not in s.reference + s.label:  # bisect follows every run's name (V@float32@tpu)
            closer.append(f"`weanj bisect {example} {s.reference} {s.label}`")
        worst = Verdict.worst(j.verdict for j in s.against)
        out.append(
            f"  {example} family {s.family}: {s.label} ({worst} vs {s.reference}: {arrays}); "
            f"look closer: {', '.join(closer)}"
        )
    return out


def overall_line(
    results: list[ExampleJudgement],
    seconds: float,
    dtypes: tuple[str, ...],
    did_not_run: list[tuple[str, str, bool]] = (),
    coverage=None,
    strict: bool = False,
) -> str:
    """`overall: ok — compared with nothing: …; partial: …; tpu: not run (…) — 6
    example(s), …`: the verdict, what was compared with nothing (`_judge._alone`; with
    `strict` a failure) and what was not judged (`coverage_text`; what is required and
    did not run is the failure, each cause once), then what was and what did not run."""
    runs = sum(1 for ej in results for j in ej.of_kind(CaseKind.RUN) if j.verdict.ran)
    failed = [ej.name for ej in results if ej.judged and not ej.ok]
    unjudged = [ej.name for ej in results if not ej.judged]
    unchecked = [d for d in DTYPES if d not in dtypes]
    note = f"; {'/'.join(unchecked)} not checked (weanj check --dtype both)" if unchecked else ""
    required = [m for m in did_not_run if m[2]]
    lonely = [a for ej in results for a in alone(ej)]
    verdict = str(Verdict.FAIL if failed or required or strict and lonely else Verdict.OK)
    if verdict == Verdict.OK and unjudged:
        verdict = "not judged"
    not_judged = not_judged_text(coverage, did_not_run, " — ", lonely, strict)
    if not_judged:
        verdict += f" — {not_judged}"
    expected = sum(len(ej.expected) for ej in results if ej.judged)
    return (
        f"overall: {verdict} — {len(results)} example(s), {runs} run(s) in "
        f"{' and '.join(dtypes)}, {not_run_cases(results)}"
        + (f", {expected_count(expected)}" if expected else "")
        + f", {seconds:.0f} s{note}"
        + (f"; failed: {', '.join(failed)}" if failed else "")
        + (f"; not judged: {', '.join(unjudged)}" if unjudged else "")
    )
