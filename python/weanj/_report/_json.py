"""The judge's verdicts as JSON (`weanj diff --json`, the report's data).

The same judgements as the text, field for field; non-finite numbers become `null`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._judge._alone import alone
from .._judge._checks import finite
from .._judge._compare import ArrayComparison
from .._judge._verdict import CaseJudgement, ExampleJudgement
from .._model import Gradient
from .._model._verdicts import GRADIENT_CHECKS, CaseKind, Verdict
from ._lines import summary, worst_ulp_text


def comparison_json(c: ArrayComparison) -> dict[str, Any]:
    tol = c.tolerance
    equal = c.max_abs == 0
    return {
        "max_abs": finite(c.max_abs),
        "max_rel": finite(c.max_rel),
        "worst": None if equal or c.nonfinite and not c.worst else list(c.worst),
        "worst_julia": None if equal or c.nonfinite and not c.worst else list(c.worst_julia),
        "ulp": c.ulp if c.ulp >= 0 and not c.reference_near_zero else None,
        "ulp_text": worst_ulp_text(c),
        "reference_zero": c.reference_zero,
        "reference_near_zero": c.reference_near_zero,  # at the worst element: no ULP figure
        "reference_max": finite(c.reference_max),
        "grad_floor": finite(c.grad_floor),
        "own_rounding": c.own_rounding,
        "loss_floor": finite(c.loss_floor),
        "differing": c.differing,
        "differing_at": [list(i) for i in c.differing_at],
        "regions": [r.to_json() for r in c.regions],
        "region_count": c.region_count,
        "size": c.size,
        "left_out": c.left_out,
        "loss_abs": finite(c.loss_abs),
        "loss_rel": finite(c.loss_rel),
        "dtype": c.dtype,
        "tolerance": {"grad": tol.grad, "loss": tol.loss},
        "declared": None
        if c.declared is None
        else {"grad": c.declared.grad, "loss": c.declared.loss, "why": c.declared.why},
        "loss_floored": c.loss_floored,
        "nonfinite": c.nonfinite,
    }


def judgement_json(j: CaseJudgement) -> dict[str, Any]:
    out: dict[str, Any] = {
        "case": j.case,
        "kind": j.kind,
        "verdict": str(j.verdict),
        "failed": j.failed,
        "family": j.family,
        "subjects": list(j.subjects),
        "array": j.array,
        "reason": j.reason,
        "summary": summary(j),
    }
    if j.command:
        out["command"] = j.command
    if j.expected is not None:  # the declaration it was held to, and how it differs
        out["expected"] = {**j.expected.to_json(), "where": j.declared or j.expected.where()}
        out["departure"] = j.departure or None
    if j.blocked_by:
        out["blocked_by"] = j.blocked_by
    if j.comparison is not None:
        out.update(comparison_json(j.comparison))
    if CaseKind(j.kind).compares and len(j.subjects) == 2:
        out["reference"], out["other"] = j.subjects
        out["same_family"] = " vs " not in j.family
        out["kinks"] = j.kinks
        out["away_from_kinks_max_rel"] = finite(j.away.max_rel) if j.away is not None else None
    if j.result is not None:  # a gradient check: its numbers, as its result type writes them
        out.update(j.result.view_json())
    if j.info:
        out["info"] = {
            k: {kk: finite(vv) if isinstance(vv, float) else vv for kk, vv in v.items()}
            for k, v in j.info.items()
        }
    if j.evidence:  # what was gathered beyond the first pass to decide it
        out["evidence"] = list(j.evidence)
    return out


def gradient_json(g: Gradient) -> dict[str, Any]:
    return {
        "label": g.label,
        "variant": g.variant,
        "family": g.family,
        "source": g.source,
        "recorded": g.recorded,
        "path": str(g.path) if g.path else None,
        "dtype": g.dtype,
        "key": g.key,
        "backend": g.backend,
        "backend_version": g.backend_version,
        "created": g.created,
        "loss": finite(g.loss),
        "seconds": g.seconds,
        "arrays": {name: _array_json(a) for name, a in g.gradients.items()},
        **_outputs_json(g),
        "nonfinite": not g.finite,
        "nonfinite_count": g.nonfinite_count,
        "noise": {k: finite(v) for k, v in g.noise.items()},
        "levels_measured": g.levels_measured,
        "cost": g.cost.to_json(),
        "compiled": g.cost.compiled_json(),
        "x64": g.x64,
    }


def _beyond_json(ej: ExampleJudgement) -> dict[str, Any]:
    """The outputs', their pullbacks' and Hessian-vector products' pairs, where the
    example has them (`outputs`, `pullbacks`, `hvp`: each as a pair is, docs/outputs.md)."""
    out = {}
    kinds = (("outputs", CaseKind.OUTPUT), ("pullbacks", CaseKind.PULLBACK), ("hvp", CaseKind.HVP))
    for key, kind in kinds:
        found = ej.of_kind(kind)
        if found:
            out[key] = [judgement_json(j) for j in found if j.verdict != Verdict.SKIPPED]
    return out


def _outputs_json(g: Gradient) -> dict[str, Any]:
    """A run's outputs (shape, largest magnitude), where the example declares some."""
    if not g.outputs:
        return {}
    return {"outputs": {name: _array_json(a) for name, a in g.outputs.items()}}


def _array_json(a: Any) -> dict[str, Any]:
    return {
        "shape": list(np.shape(a)),
        "max_abs": finite(float(np.max(np.abs(a))))
        if np.size(a) and np.all(np.isfinite(a))
        else None,
    }


def example_json(ej: ExampleJudgement) -> dict[str, Any]:
    """One example's judgement, every case with its numbers (`weanj diff --json`, the
    check file the report reads, the notebook's data)."""
    inputs = ej.inputs
    return {
        "example": ej.name,
        "params": dict(inputs.params) if inputs else None,
        "inputs_sha256": inputs.digest if inputs else None,
        "key": inputs.key("float64") if inputs else None,
        "dtypes": list(ej.dtypes),
        "error": ej.error,
        "gradients": [gradient_json(g) for g in ej.subjects.values()],
        "runs": [judgement_json(j) for j in ej.of_kind(CaseKind.RUN)],
        "faults": {
            label: {"verdict": str(j.verdict), "reason": j.reason, "command": j.command}
            for label, j in ej.faults.items()
        },
        "unavailable": dict(ej.unavailable),
        "skipped_subjects": dict(ej.skipped),
        # families whose designated reference is at fault or did not run (DESIGN §5)
        "references": [
            {
                "family": r.family,
                "designated": r.designated,
                "state": r.state,
                "judged_against": r.judged_against,
                "line": r.line,
            }
            for r in ej.references()
            if r.state
        ],
        # families whose members that ran were compared with nothing (`_judge._alone`)
        "alone": [a.to_json() for a in alone(ej)],
        "pairs": [
            judgement_json(j) for j in ej.of_kind(CaseKind.PAIR) if j.verdict != Verdict.SKIPPED
        ],
        **_beyond_json(ej),
        "checks": [judgement_json(j) for j in ej.judgements if j.kind in GRADIENT_CHECKS],
        "files": [judgement_json(j) for j in ej.of_kind(CaseKind.FILE)],
        "skipped": [
            judgement_json(j)
            for j in ej.judgements
            if j.verdict == Verdict.SKIPPED and j.kind != CaseKind.FILE
        ],
        "failures": [summary(j) for j in ej.failures],
        "expected": [
            {
                **e.to_json(),
                "where": "; ".join(dict.fromkeys(j.declared for j in cases if j.declared))
                or e.where(),
                "cases": [j.case for j in cases],
            }
            for e, cases in ej.expected.items()
        ],
        "verdict": ej.state,
        "ok": ej.ok,
        "reuse": dict(ej.reuse),
    }
