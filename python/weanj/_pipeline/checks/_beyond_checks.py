"""The checks beyond the gradient, run and judged (docs/outputs.md): the second-order Taylor
test and the symmetry check of a variant's Hessian-vector products, and the dot-product
test of its outputs' Jacobian. Their rules are the judge's (`_judge._second`,
`_judge._dot`); their entries in `_gradchecks.CHECKS` make them gradient checks like the
others (records, workers, every view), cases only where the example asks for them
(`_model._beyond.applies`).

What each spends: the symmetry check nothing (the evaluation's call computed both
products); the dot-product test nothing (its numbers came with the evaluation: the jvp
check's pushes and one backward per output), or a lender's evaluation where the variant
has no forward mode; the second-order Taylor test one gradient per step, counted under
`taylor2`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._judge import _verdict as judge
from ..._judge._contract import Fault, checked_gradients
from ..._judge._directions import inner
from ..._judge._dot import DotResult, OutputDot
from ..._judge._jvp import OWN_JVP_TOLERANCE, base_tolerance
from ..._judge._policy import TOLERANCES, entry_levels
from ..._judge._remainder import EPS, ROUNDING
from ..._judge._second import SYMMETRY_TOLERANCE, SymmetryResult, Taylor2Result
from ..._model import Catalog, Example, Gradient, Inputs
from ..._model._verdicts import CaseKind
from ..evaluation._calls import compiling_into, counter, for_checks
from ..evaluation._on_device import on_device
from ..session._donors import lenders
from ._remainders import first_step, in_units
from ._taylor_walk import Floor, Grid, both_ways

# How the second-order Taylor test gathers its evidence (its record's key): 1, one
# direction per array (its jvp direction v), read against its second direction u.
EVIDENCE = 1


def _recorded(session, g: Gradient, kind: CaseKind, array: str) -> dict | None:
    records = getattr(session, "records", None)
    return None if records is None else records.recall_check(g.of, g.dtype, kind, array)


def _keep(session, g: Gradient, kind: CaseKind, array: str, numbers: dict) -> None:
    records = getattr(session, "records", None)
    if records is not None:
        records.keep_check(g.of, g.dtype, kind, array, numbers)


def _judged(session, case, kind, g, array, result, fields) -> judge.CaseJudgement:
    """The check judged by its result's rule, its numbers kept in the evaluation's record."""
    _keep(session, g, kind, array, {"result": result.to_json()})
    return judge.judge_check(case, kind, result, **fields)


def _skipped(session, case, kind, g, array, why, fields) -> judge.CaseJudgement:
    _keep(session, g, kind, array, {"skipped": why})
    return judge.skipped(case, kind, why, array=array, **fields)


def _from_record(session, case, kind, g, array, result_type, fields):
    """The check from a reused evaluation's record (its numbers; the judge decides
    afresh), or None."""
    recorded = _recorded(session, g, kind, array)
    if recorded is None:
        return None
    if "skipped" in recorded:
        return judge.skipped(case, kind, recorded["skipped"], array=array, **fields)
    return judge.judge_check(case, kind, result_type.from_json(recorded["result"]), **fields)


def _no_second(g: Gradient) -> str | None:
    """Why `g` has no Hessian-vector products to check, or None."""
    if g.hvp is not None:
        return None
    runs = getattr(getattr(for_checks(g.of.built, True), "evaluation", None), "__self__", None)
    refused = getattr(getattr(runs, "grown", None) or runs, "second_refused", None)
    why = (str(refused).strip().splitlines() or [""])[0][:160] if refused is not None else ""
    return f"no Hessian-vector products of {g.variant}" + (f" ({why})" if why else "")


# --- symmetry ------------------------------------------------------------------------------


def symmetry_judgement(session, case, catalog, inputs, g, array, **fields):
    """`⟨u, H·v⟩` against `⟨v, H·u⟩` of `array`'s own block (no execution: the evaluation's
    call computed both products)."""
    found = _from_record(session, case, CaseKind.SYMMETRY, g, array, SymmetryResult, fields)
    if found is not None:
        return found
    why = _no_second(g)
    if why is not None:
        return _skipped(session, case, CaseKind.SYMMETRY, g, array, why, fields)
    ex = inputs.example
    v = session.tangents(ex, inputs)[array]
    u = session.second_tangents(ex, inputs)[array]
    hv, hu = g.hvp[array], g.hvp_u[array]
    scale = float(np.sum(np.abs(u * hv)) + np.sum(np.abs(v * hu)))
    result = SymmetryResult(array, inner(u, hv), inner(v, hu), scale)
    return _judged(session, case, CaseKind.SYMMETRY, g, array, result, fields)


# --- the second-order Taylor test ------------------------------------------------------------


def _gradient_along(session, g: Gradient, inputs: Inputs, array: str):
    """`x -> g_array(..., array=x, ...)`: the variant's gradient by the program of its
    check (the derivatives' branch, no Hessian product), each call under the watch and
    counted under `taylor2` (a forward and a backward)."""
    ex = inputs.example
    fns = on_device(for_checks(g.of.built, True), "cpu")[0]
    run_arrays = inputs.run_arrays("float64")
    where = f"{ex.name} {g.variant} (second-order Taylor test of {array})"
    spent = counter(g.cost, "taylor2")

    def at(x: np.ndarray) -> np.ndarray:
        args = ex.args({**run_arrays, array: x}, inputs.params)
        with compiling_into(g.cost):
            _, raw = session.watch.run(lambda: fns.value_and_grad(*args), where)
        spent(1, 1)
        return checked_gradients(ex, raw, "float64", inputs.wrt_shapes)[array]

    return at


def _taylor2(session, inputs: Inputs, g: Gradient, array: str) -> Taylor2Result:
    """The remainders of `⟨u, g(x + t·dx)⟩` against `⟨u, H·dx⟩` (dx = h0·v), both ways,
    by the first-order test's walk (`both_ways`): its rounding floor first the size of
    its terms' own rounding, then, where the estimate is not borne out, the gradient's
    measured level carried along u."""
    ex = inputs.example
    v = session.tangents(ex, inputs)[array]
    u = session.second_tangents(ex, inputs)[array]
    x = np.asarray(inputs.run_arrays("float64")[array])
    mask = session.masks(ex, inputs)[array]
    policy = ex.taylor_for(array)
    h0 = first_step(policy, x, mask)
    along = _gradient_along(session, g, inputs, array)

    def phi(t: float) -> float:
        return inner(u, along(x + t * h0 * v))

    session.step("the gradient at x")
    base = phi(0.0)

    def escalate() -> float:
        session.levels(g)
        level = float(g.noise.get(array, 0.0))
        own = entry_levels(g, array)
        levels = level if own is None else np.maximum(own, level)
        return float(np.sum(np.abs(u) * levels))

    free = ROUNDING * float(np.sum(np.abs(u * g.gradients[array]))) + EPS * abs(base)
    plus = Grid(
        phi,
        base,
        h0 * inner(u, g.hvp[array]),
        1.0,
        policy.max_steps,
        lambda how, k: session.step(f"{how}step h0/2^{k}"),
    )
    ways, walked, _ = both_ways(
        plus, Floor(free, None if g.levels_measured else escalate), policy.rate
    )
    size = int(np.size(x))
    scale = first_step(type(policy)(), x, mask)
    directions = tuple(in_units(w, h0) for w in ways)
    return Taylor2Result(array, policy, h0, directions, size - int(mask.sum()), size, walked, scale)


def taylor2_judgement(session, case, catalog, inputs, g, array, **fields):
    """The second-order Taylor test of `array` (module docstring of `_judge._second`)."""
    found = _from_record(session, case, CaseKind.TAYLOR2, g, array, Taylor2Result, fields)
    if found is not None:
        return found
    why = _no_second(g)
    if why is not None:
        return _skipped(session, case, CaseKind.TAYLOR2, g, array, why, fields)
    with session.phase(f"{inputs.example.name} {g.variant}: second-order Taylor test of {array}"):
        result = _taylor2(session, inputs, g, array)
    return _judged(session, case, CaseKind.TAYLOR2, g, array, result, fields)


# --- the outputs' Jacobian: the dot-product test ----------------------------------------------


def _lent(session, catalog: Catalog, inputs: Inputs, g: Gradient, keys: list[str]):
    """`(lender, its Gradient)`: the first trusted family member whose evaluation pushed
    the outputs forward (`_donors.lenders`), or why none did."""
    found = lenders(session, catalog, inputs, g.of)  # a Dask worker's: left to the client
    for v in found.members:
        outcome = session.outcome(v, inputs, "float64")
        if isinstance(outcome, Fault):
            continue
        if all(outcome.jacobian.get(k, (None,))[0] is not None for k in keys):
            return v, outcome
    aside = "; ".join(f"{n}: {why}" for n, why in found.aside.items())
    return (
        f"neither {g.variant} (no forward mode) nor a member of family {g.family} not at fault "
        "pushed its outputs forward" + (f" ({aside})" if aside else "")
    )


def dot_judgement(session, case, catalog, inputs, g, array, **fields):
    """Each output's `⟨w, J·v⟩` against `⟨Jᵀ·w, v⟩` along `array`'s jvp direction: the
    forward side the variant's own, else a trusted family member's."""
    found = _from_record(session, case, CaseKind.DOT, g, array, DotResult, fields)
    if found is not None:
        return found
    ex = inputs.example
    keys = [f"{o}::{array}" for o in ex.outputs]
    if not all(k in g.jacobian for k in keys):
        why = f"no Jacobian numbers of {g.variant}'s outputs (its backend computes none)"
        return _skipped(session, case, CaseKind.DOT, g, array, why, fields)
    by, ahead = g, g
    if any(g.jacobian[k][0] is None for k in keys):
        lent = _lent(session, catalog, inputs, g, keys)
        if isinstance(lent, str):
            return _skipped(session, case, CaseKind.DOT, g, array, lent, fields)
        by, ahead = lent
    own = ahead is g
    tolerance = base_tolerance(own, ex.declared_tolerance(g.family))
    outputs = tuple(
        OutputDot(
            o,
            ahead.jacobian[k][0],
            g.jacobian[k][1],
            max(g.jacobian[k][2], ahead.jacobian[k][2]),
        )
        for o, k in zip(ex.outputs, keys, strict=True)
    )
    name = g.variant if own else by.name
    result = DotResult(array, name, outputs, tolerance)
    return _judged(session, case, CaseKind.DOT, g, array, result, fields)


# --- what their records are keyed on and hold -----------------------------------------------


def result_only(numbers: dict) -> bool:
    """A record's numbers of these checks: the result alone (or why it was skipped)."""
    return set(numbers) == {"result"}


def taylor2_policy(ex: Example) -> dict[str, Any]:
    return {CaseKind.TAYLOR2: EVIDENCE}


def symmetry_policy(ex: Example) -> dict[str, Any]:
    return {CaseKind.SYMMETRY: SYMMETRY_TOLERANCE}


def dot_policy(ex: Example) -> dict[str, Any]:
    return {CaseKind.DOT: [OWN_JVP_TOLERANCE, TOLERANCES["float64"].grad]}
