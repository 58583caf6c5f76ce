"""What a case needed beyond a check's first pass, said beside its verdict
(`CaseJudgement.evidence`; docs/DESIGN.md, "What a check costs").

A check gathers first only what decides most cases: the evaluation, the Taylor test's
regime estimated along directions its arrays share, one forward-mode call for all arrays.
Where that does not decide a case, more evidence is gathered, and named here from the
judgement's own numbers, so that a re-check from the evaluation records says the same:

- a pair beyond the relative tolerance: the runs' **rounding levels** (the floors);
- a Taylor test whose estimate was not borne out: **every step walked**; arrays that
  shared directions, one of which did not pass: **tested alone**;
- a jvp check that did not agree in one call: **checked alone**, and its floor from the
  rounding levels where the tolerance alone did not decide;
- a gradient check that is not ok (or `--fd`): **central differences**.
"""

from __future__ import annotations

import math

from ..._judge._jvp import base_tolerance
from ..._judge._verdict import PRECISION, CaseJudgement
from ..._model import Example, Gradient
from ..._model._verdicts import GRADIENT_CHECKS, CaseKind, Verdict


def with_evidence(j: CaseJudgement, ex: Example, subjects: tuple = ()) -> CaseJudgement:
    """`j` with the evidence its numbers show was gathered beyond the first pass."""
    found: list[str] = []
    if j.kind == CaseKind.PAIR and j.comparison is not None and j.verdict != Verdict.INFO:
        measured = [g.label for g in subjects if isinstance(g, Gradient) and g.noise]
        if j.comparison.beyond_tolerance and measured:
            found.append(f"rounding levels of {', '.join(measured)}")
            found.extend(_precision(j, subjects))
    elif j.kind in GRADIENT_CHECKS and j.result is not None:
        found.extend(_of_check(j, ex))
    if j.fd is not None:
        found.append("central differences")
    j.evidence = tuple(found)
    return j


def _precision(j: CaseJudgement, subjects: tuple) -> list[str]:
    """A variant's float32 run that differs from its float64 run beyond float32's
    tolerance and agrees within its measured rounding: precision, not a wrong port, said
    with the digits float32 keeps here."""
    a, b = (tuple(subjects) + (None, None))[:2]
    same = isinstance(a, Gradient) and isinstance(b, Gradient) and a.variant == b.variant
    if not (same and b.dtype == "float32" and j.verdict.agreeing):
        return []
    c = j.comparison
    worst = max(c.max_rel or 0.0, c.loss_rel or 0.0)
    digits = -math.log10(worst) if worst > 0 else float("inf")
    return [
        f"{PRECISION} {digits:.1f} digits here: beyond float32's tolerance, within the "
        "rounding it measured (precision, not a wrong port)"
    ]


def _of_check(j: CaseJudgement, ex: Example) -> list[str]:
    result, out = j.result, []
    several = len(ex.wrt_names) > 1
    if j.kind == CaseKind.TAYLOR:
        if several and not result.shared and len(_group_of(ex, j.array)) > 1:
            out.append("tested alone (its shared directions did not all pass)")
        if result.walked:
            out.append("every step walked (the regime's estimate was not borne out)")
    elif j.kind == CaseKind.JVP:
        if several and not result.shared:
            out.append("checked alone (the arrays' one call did not agree)")
        if result.tolerance > _base_tolerance(j, ex):
            out.append("the gradient's rounding level along its direction")
    return out


def _group_of(ex: Example, array: str | None) -> tuple[str, ...]:
    from ..checks._gradchecks import groups

    return next((g for g in groups(ex) if array in g), ())


def _base_tolerance(j: CaseJudgement, ex: Example) -> float:
    own = j.result.by == (j.subjects[0] if j.subjects else "")
    return base_tolerance(own, ex.declared_tolerance(j.family))
