"""The Taylor remainder test of a variant's gradient (docs/DESIGN.md §9.1): its judgement,
policy, record and evidence, for its entry of `_gradchecks.CHECKS`. Each `wrt` array is
tested on its own directions (no other array's curvature hides its error), the loss
called through the session's watch, a phase of its heartbeat ("taylor test of u0,
direction 1 of 2, step 3"); `TaylorResult.judge` decides, for every kernel alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..._judge import _verdict as judge
from ..._judge._information import Masked, information_fields
from ..._judge._taylor import TaylorResult
from ..._model import Catalog, Example, Gradient, Inputs
from ..._model._verdicts import CaseKind
from ..evaluation._levels import backward_level
from ..session._runs import loss_of, program_rounding
from ._beside import EVIDENCE, information_beside, keep, recall, with_fd
from ._remainders import taylor_arrays

# What a Taylor check's record keeps beside its result
TAYLOR_INFO = ("fd", "masked")


def taylor_judgement(
    session, case: str, catalog: Catalog, inputs: Inputs, g: Gradient, array: str, **fields: Any
):
    """The Taylor test of `g`'s `array` (the example's policy, inside its kink mask), on
    that array's own evidence (`_taylor_results`); from an evaluation record's numbers
    where the evaluation was reused (the judge decides afresh)."""
    recorded = recall(session, g, CaseKind.TAYLOR, array)
    if recorded is not None:
        result = TaylorResult.from_json(recorded["result"])
        j = judge.judge_check(case, CaseKind.TAYLOR, result, **fields)
        j = dataclasses.replace(j, **information_fields(recorded.get("info", {})))
        if with_fd(session, inputs, g, array, j):
            keep(session, g, CaseKind.TAYLOR, array, {"result": recorded["result"], "info": j.info})
        return j
    ex = inputs.example
    with session.phase(f"{ex.name} {g.variant}: taylor test of {array}"):
        result = _taylor_results(session, inputs, g)[array]
    j = judge.judge_check(case, CaseKind.TAYLOR, result, **fields)
    if result.left_out:
        j.masked = Masked(result.left_out, result.size, ex.fd.why)
    with_fd(session, inputs, g, array, j)
    keep(session, g, CaseKind.TAYLOR, array, {"result": result.to_json(), "info": j.info})
    return j


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


def taylor_policy(ex: Example) -> dict[str, Any]:
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


def taylor_beside(numbers: dict) -> bool:
    """A Taylor record's numbers beside its result: the central differences and the
    masked entries, as `taylor_judgement` keeps them."""
    return information_beside(numbers, set(TAYLOR_INFO))


def taylor_evidence(j: judge.CaseJudgement, ex: Example) -> list[str]:
    """What a Taylor test gathered beyond its estimate: every step, where the estimate of
    the last resolved step was not borne out; second differences, where it failed."""
    out = []
    if j.result.walked:
        out.append("every step walked (the estimate of the last resolved step not borne out)")
    if any(d.second for d in j.result.directions):
        out.append("second differences (a kink, or a wrong gradient of a smooth loss)")
    return out
