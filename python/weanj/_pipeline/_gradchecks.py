"""The gradient checks of a variant, run and judged: the Taylor remainder test, forward
against reverse and central differences (docs/DESIGN.md, "Gradient checks"; their
numerics for any function are `_remainders`).

`CHECKS` is the one table of the case table's gradient checks (`GRADIENT_CHECKS`, the
`CaseKind` members with `is_check`): per check, how a variant's gradient is checked and
judged, the policy numbers its evaluation record is keyed on, what its record's numbers
must be, and the class of those numbers (its `result`: a type registered in
`_judge._checks.RESULTS`, which holds the check's rule, its record, its place in
`check.json` and its views: its summary, its cell, its JSON, its picture). The case table,
the workers, the records, `check.json` and every view dispatch through it; none names a
check.

These call the variant's loss through the session's watch, each check a phase of its
heartbeat that says where it is ("taylor test of u0, direction 1 of 2, step 3");
`weanj.jvp_check`, which pushes any JAX function forward, is the JAX backend's
(`_backends._jax`). The numbers they collect are judged by the rules of `_judge`
(`TaylorResult.judge`, `DirectionalResult.judge`, through `judge_check`), the same for
every kernel and every front end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._judge import _verdict as judge
from .._judge._policy import NOISE_MULTIPLE, TOLERANCES, Tolerance, entry_levels
from .._judge._taylor import (
    OWN_JVP_TOLERANCE,
    DirectionalResult,
    TaylorResult,
    inner,
    jvp_direction,
)
from .._model import Catalog, Example, Gradient, Inputs
from .._model._verdicts import CaseKind
from ._remainders import counted, fd_check, taylor

# --- the checks of one variant's gradient, as judgements -------------------------------------


def _recorded(session, g: Gradient, kind: CaseKind, array: str) -> dict | None:
    records = getattr(session, "records", None)
    return None if records is None else records.recall_check(g.of, g.dtype, kind, array)


def _keep(session, g: Gradient, kind: CaseKind, array: str, numbers: dict) -> None:
    records = getattr(session, "records", None)
    if records is not None:
        records.keep_check(g.of, g.dtype, kind, array, numbers)


def taylor_judgement(session, case: str, inputs: Inputs, g: Gradient, array: str, **what: Any):
    """The Taylor test of `g`'s `array` (the example's policy, inside its kink mask), and
    the central-difference error as information; from an evaluation record's numbers where
    the evaluation was reused (the judge decides afresh)."""
    recorded = _recorded(session, g, CaseKind.TAYLOR, array)
    if recorded is not None:
        result = TaylorResult.from_json(recorded["result"])
        j = judge.judge_check(case, CaseKind.TAYLOR, result, **what)
        j.info.update(recorded.get("info", {}))
        return j
    ex = inputs.example
    mask = session.masks(ex, inputs)[array]
    keep = None if mask.all() else mask
    loss = session.loss_along(g.of, inputs, array)
    x = inputs.run_arrays("float64")[array]
    noise = float(g.noise.get("loss", 0.0))
    with session.phase(f"{ex.name} {g.variant}: taylor test of {array}"):
        policy = ex.taylor_for(array)
        told = {"array": array, "mask": keep, "noise": noise, "progress": session.step}
        result = taylor(loss, x, g.gradients[array], policy, **told)
    j = judge.judge_check(case, CaseKind.TAYLOR, result, **what)
    if result.directions:
        with session.phase(f"{ex.name} {g.variant}: central differences of {array}"):
            each = counted(loss, session.step, f"loss {{}} of {2 * ex.fd.directions}")
            fd = ex.fd
            error = fd_check(each, x, g.gradients[array], n=fd.directions, h=fd.step, mask=keep)
        j.info["fd"] = {"error": error, "step": ex.fd.step, "threshold": ex.fd.threshold}
    if result.left_out:
        j.info["masked"] = {"left_out": result.left_out, "size": result.size, "why": ex.fd.why}
    _keep(session, g, CaseKind.TAYLOR, array, {"result": result.to_json(), "info": j.info})
    return j


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


def jvp_judgement(
    session, case: str, catalog: Catalog, inputs: Inputs, g: Gradient, array: str, **what: Any
):
    """`jvp(L)(x; dx)` against `⟨g, dx⟩`: by the variant's own forward mode (1e-12), else
    by the first member of its family that has one (the family tolerance); from an
    evaluation record's numbers where the evaluation was reused."""
    recorded = _recorded(session, g, CaseKind.JVP, array)
    if recorded is not None:
        if "skipped" in recorded:
            return judge.skipped(case, CaseKind.JVP, recorded["skipped"], array=array, **what)
        result = DirectionalResult.from_json(recorded["result"])
        return judge.judge_check(case, CaseKind.JVP, result, **what)
    ex = inputs.example
    mask = session.masks(ex, inputs)[array]
    x = inputs.run_arrays("float64")[array]
    dx = jvp_direction(ex, array, x, None if mask.all() else mask)
    reverse = inner(g.gradients[array], dx)
    scale = float(np.sum(np.abs(g.gradients[array]) * np.abs(dx)))
    family = catalog.families().get(g.family, [])
    order = [g.of] + [v for v in family if v is not g.of]
    why = {}
    for v in order:
        try:
            by = "" if v is g.of else f" by {v.name}"
            with session.phase(f"{ex.name} {g.variant}: jvp of {array}{by}"):
                forward = session.forward(v, inputs, array, dx)
        except TimeoutError:
            raise
        except Exception as e:
            why[v.name] = (str(e).strip().splitlines() or [type(e).__name__])[0][:120]
            continue
        tol = max(
            OWN_JVP_TOLERANCE if v is g.of else TOLERANCES["float64"].grad,
            _jvp_floor(g, array, dx, scale),
        )
        result = DirectionalResult(array, v.name, forward, reverse, scale, tol)
        _keep(session, g, CaseKind.JVP, array, {"result": result.to_json()})
        return judge.judge_check(case, CaseKind.JVP, result, **what)
    own = why.get(g.variant, "no forward mode")
    reason = (
        f"neither {g.variant} ({own}) nor a member of family {g.family} can be pushed forward "
        "by jax.jvp"
    )
    _keep(session, g, CaseKind.JVP, array, {"skipped": reason})
    return judge.skipped(case, CaseKind.JVP, reason, array=array, **what)


# --- the table of the checks ------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


TAYLOR_INFO = ("fd", "masked")  # what a Taylor check's record keeps beside its result


def _taylor_case(session, case: str, catalog: Catalog, inputs: Inputs, g: Gradient, array, **what):
    return taylor_judgement(session, case, inputs, g, array, **what)


def _taylor_policy(ex: Example) -> dict[str, Any]:
    """The example's Taylor and central-difference policies (the record's key)."""
    taylor = {}
    for name in ex.wrt_names:
        p = ex.taylor_for(name)
        taylor[name] = [p.h0, p.directions, p.rate, p.max_steps, p.seed]
    fd = ex.fd
    return {
        CaseKind.TAYLOR: taylor,
        "fd": [fd.directions, fd.step, fd.threshold, fd.mask is not None, fd.why],
    }


def _taylor_beside(numbers: dict) -> bool:
    """A Taylor record's numbers beside its result: the central differences and the
    masked entries, as `taylor_judgement` keeps them."""
    if set(numbers) != {"result", "info"} or not isinstance(numbers["info"], dict):
        return False
    info = numbers["info"]
    if not set(info) <= set(TAYLOR_INFO):
        return False
    if "fd" in info:
        fd = info["fd"]
        if not (
            isinstance(fd, dict)
            and set(fd) == {"error", "step", "threshold"}
            and all(_is_number(x) for x in fd.values())
        ):
            return False
    if "masked" in info:
        m = info["masked"]
        if not (
            isinstance(m, dict)
            and set(m) == {"left_out", "size", "why"}
            and _is_number(m["left_out"])
            and _is_number(m["size"])
            and isinstance(m["why"], str)
        ):
            return False
    return True


def _jvp_policy(ex: Example) -> dict[str, Any]:
    """The jvp tolerances: the variant's own forward mode, a sibling's (the record's key)."""
    return {CaseKind.JVP: [OWN_JVP_TOLERANCE, TOLERANCES["float64"].grad]}


@dataclass(frozen=True)
class GradientCheck:
    """One gradient check of the case table (a `CaseKind` with `is_check`):

    - `judgement(session, case, catalog, inputs, g, array, **what)`: the check of `g`'s
      `array`, judged (from an evaluation record's numbers where there are some);
    - `policy(example)`: the entries of the evaluation record's check policy it adds
      (`_record_form.check_policy`: a change of one recomputes the evaluation);
    - `result`: the class of the numbers it records, registered in `_judge._checks.RESULTS`
      (`from_json`/`to_json` for its record; its rule, `judge`; its views: `summary`,
      `measure`, `view_json`, and `plot` where it draws one);
    - `beside(numbers)`: whether a record's numbers beside `result` are what it writes;
    - `may_skip`: its record may hold only why it was skipped (`{"skipped": why}`).
    """

    kind: CaseKind
    judgement: Callable[..., judge.CaseJudgement]
    policy: Callable[[Example], dict[str, Any]]
    result: type
    beside: Callable[[dict], bool]
    may_skip: bool = False


# one per member of `GRADIENT_CHECKS`, in its order (tests/test_kinds.py holds them equal)
CHECKS: dict[CaseKind, GradientCheck] = {
    CaseKind.TAYLOR: GradientCheck(
        CaseKind.TAYLOR, _taylor_case, _taylor_policy, TaylorResult, _taylor_beside
    ),
    CaseKind.JVP: GradientCheck(
        CaseKind.JVP,
        jvp_judgement,
        _jvp_policy,
        DirectionalResult,
        lambda numbers: set(numbers) == {"result"},
        may_skip=True,
    ),
}
