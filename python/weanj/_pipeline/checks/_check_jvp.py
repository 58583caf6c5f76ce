"""Forward against reverse mode of a variant's gradient (docs/DESIGN.md §9.2): its
judgement, policy, record and evidence, for its entry of `_gradchecks.CHECKS`. Each `wrt`
array is pushed forward alone (no array's error cancels another's), in the evaluation's
own call (`Session.tangents`); `JvpResult.judge` decides.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._judge import _verdict as judge
from ..._judge._directions import inner
from ..._judge._information import information_fields
from ..._judge._jvp import OWN_JVP_TOLERANCE, JvpResult, base_tolerance
from ..._judge._policy import NOISE_MULTIPLE, TOLERANCES, Tolerance, entry_levels
from ..._model import Catalog, Example, Gradient, Inputs
from ..._model._verdicts import CaseKind
from ..session._donors import pushed
from ._beside import EVIDENCE, information_beside, keep, recall, with_fd


def jvp_judgement(
    session, case: str, catalog: Catalog, inputs: Inputs, g: Gradient, array: str, **fields: Any
):
    """`jvp(L)(x; dx)` against `⟨g, dx⟩` for `array` alone, along its own direction: by the
    variant's own forward mode (1e-12), else by the first member of its family that may
    lend one (`_donors.pushed`: none the same check judges at fault) under the family
    tolerance; from an evaluation record's numbers where the evaluation was reused."""
    recorded = recall(session, g, CaseKind.JVP, array)
    if recorded is not None:
        if "skipped" in recorded:
            return judge.skipped(case, CaseKind.JVP, recorded["skipped"], array=array, **fields)
        result = JvpResult.from_json(recorded["result"])
        j = judge.judge_check(case, CaseKind.JVP, result, **fields)
        j = dataclasses.replace(j, **information_fields(recorded.get("info", {})))
        if with_fd(session, inputs, g, array, j):
            keep(session, g, CaseKind.JVP, array, {"result": recorded["result"], "info": j.info})
        return j
    with session.phase(f"{inputs.example.name} {g.variant}: jvp of {array}"):
        found = _jvp_results(session, catalog, inputs, g)[array]
    if isinstance(found, str):
        keep(session, g, CaseKind.JVP, array, {"skipped": found})
        return judge.skipped(case, CaseKind.JVP, found, array=array, **fields)
    j = judge.judge_check(case, CaseKind.JVP, found, **fields)
    numbers: dict[str, Any] = {"result": found.to_json()}
    if with_fd(session, inputs, g, array, j):
        numbers["info"] = {"fd": j.fd.to_json()}
    keep(session, g, CaseKind.JVP, array, numbers)
    return j


def _jvp_results(session, catalog: Catalog, inputs: Inputs, g: Gradient) -> dict:
    """`{array: JvpResult, or why skipped}` for one run, once per session: each array
    pushed forward along its own direction with the others still (`Session.tangents`),
    judged on its own terms: no array's error can cancel or drown another's. The
    evaluation's own call computed these derivatives where the variant has a forward mode
    (or its lender's, for a borrower): nothing runs again."""
    return session.once(("jvp", id(g)), lambda: _jvp_each(session, catalog, inputs, g))


def _jvp_each(session, catalog: Catalog, inputs: Inputs, g: Gradient) -> dict:
    tangents = session.tangents(inputs.example, inputs)
    found = pushed(session, catalog, inputs, g, tangents)
    if isinstance(found, str):
        return {a: found for a in tangents}
    v, forward = found
    base = base_tolerance(v is g.of, g.example.declared_tolerance(g.family))
    out = {}
    for a, dx in tangents.items():
        reverse = inner(g.gradients[a], dx)
        scale = float(np.sum(np.abs(g.gradients[a]) * np.abs(dx)))
        result = JvpResult(a, v.name, forward[a], reverse, scale, base)
        if not result.passes:  # the floor, measured only where the tolerance alone fails
            session.levels(g)
            tol = max(base, _jvp_floor(g, a, dx, scale))
            result = JvpResult(a, v.name, forward[a], reverse, scale, tol)
        out[a] = result
    return out


def _jvp_floor(g: Gradient, array: str, dx: np.ndarray, scale: float) -> float:
    """The relative tolerance below which forward and reverse mode cannot be told apart:
    the gradient's rounding level (`Gradient.noise`, as the pairs' floor; each entry's own
    where larger, `entry_levels`) carried along `dx`, `NOISE_MULTIPLE·Σ level_i·|dx_i| /
    Σ|g_i dx_i|`; and a tolerance the example declares for the family (its `grad`)."""
    declared = g.example.declared_tolerance(g.family)
    floor = declared.grad if isinstance(declared, Tolerance) else 0.0
    level = float(g.noise.get(array, 0.0)) if g.noise else 0.0
    own = entry_levels(g, array)
    levels = level if own is None else np.maximum(own, level)
    carried = float(np.sum(levels * np.abs(dx)))
    if scale > 0 and carried > 0:
        floor = max(floor, NOISE_MULTIPLE * carried / scale)
    return floor


def jvp_policy(ex: Example) -> dict[str, Any]:
    """The jvp tolerances: the variant's own forward mode, a sibling's (the record's key)."""
    return {CaseKind.JVP: [OWN_JVP_TOLERANCE, TOLERANCES["float64"].grad], "jvp_evidence": EVIDENCE}


def jvp_beside(numbers: dict) -> bool:
    """A jvp record's numbers beside its result: central differences, where gathered."""
    if set(numbers) == {"result"}:
        return True
    return information_beside(numbers, {"fd"}) and set(numbers["info"]) == {"fd"}


def jvp_evidence(j: judge.CaseJudgement, ex: Example) -> list[str]:
    """A jvp check whose tolerance alone did not decide: its floor from the gradient's
    rounding level along its direction."""
    own = j.result.by == (j.subjects[0] if j.subjects else "")
    if j.result.tolerance > base_tolerance(own, ex.declared_tolerance(j.family)):
        return ["the gradient's rounding level along its direction"]
    return []
