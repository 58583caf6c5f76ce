"""What a case needed beyond a check's first pass, said beside its verdict
(`CaseJudgement.evidence`; docs/DESIGN.md, "What a check costs").

A check gathers first only what decides most cases: the evaluation (with each array's
forward-mode derivative in its own call), the Taylor test of each array at its last
resolved steps, estimated.
Where that does not decide a case, more evidence is gathered, and named here from the
judgement's own numbers, so that a re-check from the evaluation records says the same:

- a pair beyond the relative tolerance: the runs' **rounding levels** (the floors), for a
  float32 run with float32's rounding of its float64 program **emulated** (or why not);
- a gradient check: what the check itself names (`GradientCheck.evidence`: the Taylor
  test's **every step walked** and **second differences**, the jvp check's floor from the
  rounding levels);
- a gradient check that is not ok (or `--fd`): **central differences**.
"""

from __future__ import annotations

import math

import numpy as np

from ..._judge._verdict import PRECISION, CaseJudgement
from ..._model import Example, Gradient
from ..._model._verdicts import CaseKind, Verdict
from ..checks._gradchecks import CHECKS


def with_evidence(j: CaseJudgement, ex: Example, subjects: tuple = ()) -> CaseJudgement:
    """`j` with the evidence its numbers show was gathered beyond the first pass."""
    found: list[str] = []
    if CaseKind(j.kind).compares and j.comparison is not None and j.verdict != Verdict.INFO:
        measured = [g.label for g in subjects if isinstance(g, Gradient) and g.noise]
        if j.comparison.beyond_tolerance and measured:
            found.append(f"rounding levels of {', '.join(measured)}")
            found.extend(_emulation(j, subjects))
            found.extend(_precision(j, subjects))
    elif j.kind in CHECKS and j.result is not None:  # the check says what it gathered
        found.extend(CHECKS[j.kind].evidence(j, ex))
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
    moved = _emulated_moves(b, a, j.array)
    how = "" if moved is None else f", float32's own rounding of its float64 program {moved}"
    return [
        f"{PRECISION} {digits:.1f} digits here: beyond float32's tolerance, within the "
        f"rounding it measured{how} (precision, not a wrong port)"
    ]


def _emulation(j: CaseJudgement, subjects: tuple) -> list[str]:
    """What a float32 run's level holds beside its perturbed runs' spread: float32's
    rounding of its variant's float64 program, emulated (`_pipeline/evaluation/_emulation`),
    or why it could not be."""
    out, ref = [], subjects[0] if subjects else None
    for g in subjects:
        e = g.emulated if isinstance(g, Gradient) else None
        if e is not None and e.refused:
            out.append(
                f"float32's rounding of {g.label} not emulated: {e.refused} (its level is "
                "its perturbed runs' spread alone)"
            )
        elif e is not None and (moved := _emulated_moves(g, ref, j.array)) is not None:
            out.append(
                f"float32's rounding of {g.label}, emulated on its float64 program (every "
                f"value rounded to float32): {moved}"
            )
    return out


def _emulated_moves(g: Gradient, ref: Gradient, array: str | None) -> str | None:
    """`|ΔL|/|L| 1.2e-03, w 7.4e-04 of max|g|`: `g`'s emulated rounding's levels,
    relative to the pair's reference `ref` (None where it was not emulated)."""
    e = g.emulated if isinstance(g, Gradient) else None
    if e is None or e.refused or not isinstance(ref, Gradient):
        return None
    parts = [f"|ΔL|/|L| {_relative(e.levels.get('loss', 0.0), abs(ref.loss or 0.0))}"]
    if array in e.levels and array in ref.gradients:
        scale = float(np.max(np.abs(ref.gradients[array]), initial=0.0))
        parts.append(f"{array} {_relative(e.levels[array], scale)} of max|g|")
    return ", ".join(parts)


def _relative(level: float, scale: float) -> str:
    return f"{level / scale:.1e}" if scale > 0 else f"{level:.1e} (absolute)"
