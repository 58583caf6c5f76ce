"""What a case needed beyond a check's first pass, said beside its verdict
(`CaseJudgement.evidence`; docs/DESIGN.md, "What a check costs").

A check gathers first only what decides most cases: the evaluation (with each array's
forward-mode derivative in its own call), the Taylor test of each array at its last
resolved steps, estimated.
Where that does not decide a case, more evidence is gathered, and named here from the
judgement's own numbers, so that a re-check from the evaluation records says the same:

- a pair beyond the relative tolerance: the runs' **rounding levels** (the floors);
- a Taylor test whose estimate was not borne out: **every step walked**; one that fails:
  its **second differences** (a kink, or a wrong gradient of a smooth loss);
- a jvp check whose tolerance alone did not decide: its floor from the rounding levels;
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
    if CaseKind(j.kind).compares and j.comparison is not None and j.verdict != Verdict.INFO:
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
    if j.kind == CaseKind.TAYLOR:
        if result.walked:
            out.append("every step walked (the estimate of the last resolved step not borne out)")
        if any(d.second for d in result.directions):
            out.append("second differences (a kink, or a wrong gradient of a smooth loss)")
    elif j.kind == CaseKind.JVP:
        if result.tolerance > _base_tolerance(j, ex):
            out.append("the gradient's rounding level along its direction")
    return out


def _base_tolerance(j: CaseJudgement, ex: Example) -> float:
    own = j.result.by == (j.subjects[0] if j.subjects else "")
    return base_tolerance(own, ex.declared_tolerance(j.family))
