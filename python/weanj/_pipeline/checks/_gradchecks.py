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

Each `wrt` array is checked on its own evidence: its own Taylor directions (no other
array moves) and its own forward-mode derivative (the other tangents zero), so that no
array's curvature hides another's error and no array's error cancels another's. The
Taylor test calls the variant's loss through the session's watch, a phase of its
heartbeat that says where it is ("taylor test of u0, direction 1 of 2, step 3");
the jvp check's derivatives come from the evaluation's own call (`Session.tangents`).
The numbers they collect are judged by the rules of `_judge` (`TaylorResult.judge`,
`JvpResult.judge`, through `judge_check`), the same for every kernel and every front end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._judge import _verdict as judge
from ..._judge._directions import inner
from ..._judge._dot import DotResult
from ..._judge._information import CentralDifferences, Masked, information_fields
from ..._judge._jvp import OWN_JVP_TOLERANCE, JvpResult, base_tolerance
from ..._judge._policy import NOISE_MULTIPLE, TOLERANCES, Tolerance, entry_levels
from ..._judge._second import SymmetryResult, Taylor2Result
from ..._judge._taylor import TaylorResult
from ..._model import Catalog, Example, Gradient, Inputs
from ..._model._verdicts import CaseKind, Verdict
from ..evaluation._levels import backward_level
from ..session._donors import pushed
from ..session._runs import loss_along, loss_of, program_rounding
from ._beyond_checks import (
    dot_judgement,
    dot_policy,
    result_only,
    symmetry_judgement,
    symmetry_policy,
    taylor2_judgement,
    taylor2_policy,
)
from ._remainders import counted, fd_check, taylor_arrays

# --- the checks of one variant's gradient, as judgements -------------------------------------


def _recorded(session, g: Gradient, kind: CaseKind, array: str) -> dict | None:
    records = getattr(session, "records", None)
    return None if records is None else records.recall_check(g.of, g.dtype, kind, array)


def _keep(session, g: Gradient, kind: CaseKind, array: str, numbers: dict) -> None:
    records = getattr(session, "records", None)
    if records is not None:
        records.keep_check(g.of, g.dtype, kind, array, numbers)


def taylor_judgement(session, case: str, inputs: Inputs, g: Gradient, array: str, **fields: Any):
    """The Taylor test of `g`'s `array` (the example's policy, inside its kink mask), on
    that array's own evidence (`_taylor_results`); from an evaluation record's numbers
    where the evaluation was reused (the judge decides afresh)."""
    recorded = _recorded(session, g, CaseKind.TAYLOR, array)
    if recorded is not None:
        result = TaylorResult.from_json(recorded["result"])
        j = judge.judge_check(case, CaseKind.TAYLOR, result, **fields)
        j = dataclasses.replace(j, **information_fields(recorded.get("info", {})))
        if _with_fd(session, inputs, g, array, j):
            _keep(
                session, g, CaseKind.TAYLOR, array, {"result": recorded["result"], "info": j.info}
            )
        return j
    ex = inputs.example
    with session.phase(f"{ex.name} {g.variant}: taylor test of {array}"):
        result = _taylor_results(session, inputs, g)[array]
    j = judge.judge_check(case, CaseKind.TAYLOR, result, **fields)
    if result.left_out:
        j.masked = Masked(result.left_out, result.size, ex.fd.why)
    _with_fd(session, inputs, g, array, j)
    _keep(session, g, CaseKind.TAYLOR, array, {"result": result.to_json(), "info": j.info})
    return j


def _with_fd(session, inputs: Inputs, g: Gradient, array: str, j) -> bool:
    """Central differences beside a check that is not ok, or where asked (`Session.fd`),
    as information (`fd_information`); **Returns** whether they were added now."""
    failed = j.verdict.failing and j.verdict != Verdict.TIMEOUT  # its numbers say not ok
    if j.fd is not None or not (getattr(session, "fd", False) or failed):
        return False
    if g.of is None or g.of.unavailable_reason() is not None:
        return False
    j.fd = fd_information(session, inputs, g, array)
    return True


def _taylor_results(session, inputs: Inputs, g: Gradient) -> dict[str, TaylorResult]:
    """Every wrt array's Taylor result for one run, computed once per session, each array
    on its own directions (`taylor_arrays`): the loss at x and the rounding floor shared,
    nothing else. Its losses are counted under `taylor`; its rounding floor is the free
    one (`backward_level`) until a direction needs the loss's measured level (an
    escalation: the perturbed runs' spread, `Session.levels`, or float64's rounding from
    float32's emulated on the program where larger, `Session.program_rounding`)."""

    def compute() -> dict[str, TaylorResult]:
        ex = inputs.example
        masks = session.masks(ex, inputs)
        loss = loss_of(session, g.of, inputs, tuple(ex.wrt_names), g.cost, "taylor")
        run = inputs.run_arrays("float64")

        def escalate() -> float:
            session.levels(g)
            return max(float(g.noise.get("loss", 0.0)), program_rounding(session, g, inputs))

        free = backward_level(inputs, g.gradients, "float64")
        floor = float(g.noise["loss"]) if "loss" in g.noise else free
        return taylor_arrays(
            loss,
            {a: run[a] for a in ex.wrt_names},
            {a: g.gradients[a] for a in ex.wrt_names},
            {a: ex.taylor_for(a) for a in ex.wrt_names},
            {a: (None if masks[a].all() else masks[a]) for a in ex.wrt_names},
            floor=floor,
            escalate=escalate,  # measured once, where a direction needs it
            progress=session.step,
        )

    return session.once(("taylor", id(g)), compute)


def fd_information(session, inputs: Inputs, g: Gradient, array: str) -> CentralDifferences:
    """Central differences of `g`'s `array` under the example's `FDPolicy`, inside its
    kink mask, as information beside a check that is not ok (or where asked: `--fd`);
    computed once per session, its losses counted under `fd`."""

    def compute() -> CentralDifferences:
        ex = inputs.example
        mask = session.masks(ex, inputs)[array]
        fd = ex.fd
        loss = loss_along(session, g.of, inputs, array, g.cost, "fd")
        x = inputs.run_arrays("float64")[array]
        with session.phase(f"{ex.name} {g.variant}: escalated: central differences of {array}"):
            each = counted(loss, session.step, f"loss {{}} of {2 * fd.directions}")
            keep = None if mask.all() else mask
            error = fd_check(each, x, g.gradients[array], n=fd.directions, h=fd.step, mask=keep)
        return CentralDifferences(error, fd.step, fd.threshold)

    return session.once(("fd", id(g), array), compute)


def _declared(g: Gradient) -> float:
    """The tolerance the example declares for `g`'s family (its `grad`), else 0."""
    declared = g.example.declared_tolerance(g.family)
    return declared.grad if isinstance(declared, Tolerance) else 0.0


def _jvp_floor(g: Gradient, array: str, dx: np.ndarray, scale: float) -> float:
    """The relative tolerance below which forward and reverse mode cannot be told apart:
    the gradient's rounding level (`Gradient.noise`, as the pairs' floor; each entry's own
    where larger, `entry_levels`) carried along `dx`, `NOISE_MULTIPLE·Σ level_i·|dx_i| /
    Σ|g_i dx_i|`; and a tolerance the example declares for the family (its `grad`)."""
    floor = _declared(g)
    level = float(g.noise.get(array, 0.0)) if g.noise else 0.0
    own = entry_levels(g, array)
    levels = level if own is None else np.maximum(own, level)
    carried = float(np.sum(levels * np.abs(dx)))
    if scale > 0 and carried > 0:
        floor = max(floor, NOISE_MULTIPLE * carried / scale)
    return floor


def jvp_judgement(
    session, case: str, catalog: Catalog, inputs: Inputs, g: Gradient, array: str, **fields: Any
):
    """`jvp(L)(x; dx)` against `⟨g, dx⟩` for `array` alone, along its own direction: by the
    variant's own forward mode (1e-12), else by the first member of its family that may
    lend one (`_donors.pushed`: none the same check judges at fault) under the family
    tolerance; from an evaluation record's numbers where the evaluation was reused."""
    recorded = _recorded(session, g, CaseKind.JVP, array)
    if recorded is not None:
        if "skipped" in recorded:
            return judge.skipped(case, CaseKind.JVP, recorded["skipped"], array=array, **fields)
        result = JvpResult.from_json(recorded["result"])
        j = judge.judge_check(case, CaseKind.JVP, result, **fields)
        j = dataclasses.replace(j, **information_fields(recorded.get("info", {})))
        if _with_fd(session, inputs, g, array, j):
            _keep(session, g, CaseKind.JVP, array, {"result": recorded["result"], "info": j.info})
        return j
    with session.phase(f"{inputs.example.name} {g.variant}: jvp of {array}"):
        found = _jvp_results(session, catalog, inputs, g)[array]
    if isinstance(found, str):
        _keep(session, g, CaseKind.JVP, array, {"skipped": found})
        return judge.skipped(case, CaseKind.JVP, found, array=array, **fields)
    j = judge.judge_check(case, CaseKind.JVP, found, **fields)
    numbers: dict[str, Any] = {"result": found.to_json()}
    if _with_fd(session, inputs, g, array, j):
        numbers["info"] = {"fd": j.fd.to_json()}
    _keep(session, g, CaseKind.JVP, array, numbers)
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


# --- the table of the checks ------------------------------------------------------------------


TAYLOR_INFO = ("fd", "masked")
# How the checks gather their evidence, in a check's record key: 2, each wrt array on its
# own directions and its own forward-mode derivative (a record of the shared evidence
# before it is recomputed, not reused)
EVIDENCE = 2  # what a Taylor check's record keeps beside its result


def _taylor_case(
    session, case: str, catalog: Catalog, inputs: Inputs, g: Gradient, array, **fields
):
    return taylor_judgement(session, case, inputs, g, array, **fields)


def _taylor_policy(ex: Example) -> dict[str, Any]:
    """The example's Taylor and central-difference policies (the record's key)."""
    taylor = {}
    for name in ex.wrt_names:
        p = ex.taylor_for(name)
        taylor[name] = [p.h0, p.directions, p.rate, p.max_steps, p.seed]
    fd = ex.fd
    return {
        CaseKind.TAYLOR: taylor,
        "taylor_evidence": EVIDENCE,
        "fd": [fd.directions, fd.step, fd.threshold, fd.mask is not None, fd.why],
    }


def _info_of(numbers: dict, allowed: set[str]) -> bool:
    """A check record's numbers: its result, and beside it an `info` mapping of the kinds
    `allowed`, each as the judge writes it (`_judge._information`)."""
    if set(numbers) != {"result", "info"} or not isinstance(numbers["info"], dict):
        return False
    if not set(numbers["info"]) <= allowed:
        return False
    try:
        information_fields(numbers["info"])
    except ValueError:
        return False
    return True


def _taylor_beside(numbers: dict) -> bool:
    """A Taylor record's numbers beside its result: the central differences and the
    masked entries, as `taylor_judgement` keeps them."""
    return _info_of(numbers, set(TAYLOR_INFO))


def _jvp_beside(numbers: dict) -> bool:
    """A jvp record's numbers beside its result: central differences, where gathered."""
    if set(numbers) == {"result"}:
        return True
    return _info_of(numbers, {"fd"}) and set(numbers["info"]) == {"fd"}


def _jvp_policy(ex: Example) -> dict[str, Any]:
    """The jvp tolerances: the variant's own forward mode, a sibling's (the record's key)."""
    return {CaseKind.JVP: [OWN_JVP_TOLERANCE, TOLERANCES["float64"].grad], "jvp_evidence": EVIDENCE}


@dataclass(frozen=True)
class GradientCheck:
    """One gradient check of the case table (a `CaseKind` with `is_check`):

    - `judgement(session, case, catalog, inputs, g, array, **fields)`: the check of `g`'s
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
        JvpResult,
        _jvp_beside,
        may_skip=True,
    ),
    # beyond the gradient (`_beyond_checks`): cases only where the example asks for them
    CaseKind.TAYLOR2: GradientCheck(
        CaseKind.TAYLOR2, taylor2_judgement, taylor2_policy, Taylor2Result, result_only, True
    ),
    CaseKind.SYMMETRY: GradientCheck(
        CaseKind.SYMMETRY, symmetry_judgement, symmetry_policy, SymmetryResult, result_only, True
    ),
    CaseKind.DOT: GradientCheck(
        CaseKind.DOT, dot_judgement, dot_policy, DotResult, result_only, True
    ),
}
