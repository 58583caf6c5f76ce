"""The gradient checks of one gradient on its inputs, as judgements: the Taylor test
(with central differences as information) and forward-vs-reverse agreement.

These compute (they call the variant's loss and, for jvp, a family member's forward mode)
and then ask the judge (`_verdict`) for the verdict. The kink mask of the inputs is
computed once (`_gradcheck.kink_masks`); the directional derivative of a family member
once per inputs and array, since every member is checked along the same direction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._io._inputs import Inputs
from .._model import Gradient
from .._registry import families, find_variant
from . import _verdict as judge
from ._compare import TOLERANCES
from ._gradcheck import DirectionalResult, fd_check, inner, jvp_direction, kink_masks, taylor

# forward vs reverse: the variant's own jvp to rounding; a sibling's at the family tolerance
OWN_JVP_TOLERANCE = 1e-12

_DIRECTIONAL: dict[tuple, Any] = {}


def forget() -> None:
    """Forget the cached directional derivatives (a redefined variant must not reuse them)."""
    _DIRECTIONAL.clear()


def masks(inputs: Inputs) -> dict[str, np.ndarray]:
    """The kink mask of every wrt array on these inputs (True: may be perturbed)."""
    arrays = inputs.run_arrays("float64")
    return kink_masks(inputs.example, arrays, dict(inputs.params), inputs.digest)


def _loss_of(inputs: Inputs, variant_name: str, array: str) -> Callable[[np.ndarray], float]:
    ex = inputs.example
    v = find_variant(ex, variant_name)
    arrays = inputs.run_arrays("float64")

    def loss(x: np.ndarray) -> float:
        return float(np.asarray(v.loss(*ex.args({**arrays, array: x}, inputs.params))))

    return loss


def taylor_judgement(
    case: str, inputs: Inputs, g: Gradient, array: str, **what: Any
) -> judge.Judgement:
    """The Taylor test of `g`'s `array` (the example's policy, inside its kink mask), and
    the central-difference error as information."""
    ex = inputs.example
    mask = masks(inputs)[array]
    keep = None if mask.all() else mask
    loss = _loss_of(inputs, g.variant, array)
    x = inputs.run_arrays("float64")[array]
    result = taylor(loss, x, g.gradients[array], ex.taylor_for(array), array=array, mask=keep)
    j = judge.judge_taylor(case, result, **what)
    if result.directions:
        error = fd_check(loss, x, g.gradients[array], n=ex.fd.directions, h=ex.fd.step, mask=keep)
        j.info["fd"] = {"error": error, "step": ex.fd.step, "threshold": ex.fd.threshold}
    if result.left_out:
        j.info["masked"] = {"left_out": result.left_out, "size": result.size, "why": ex.fd.why}
    return j


def _forward(inputs: Inputs, variant_name: str, array: str, dx: np.ndarray) -> float:
    """`jvp(L)(x; dx)` by one variant (cached per inputs and array: siblings share it)."""
    key = (inputs.example.name, variant_name, inputs.key("float64"), array)
    if key not in _DIRECTIONAL:
        v = find_variant(inputs.example, variant_name)
        try:
            if v.unavailable_reason() is not None or v.jvp is None:
                raise TypeError("no forward mode")
            run = inputs.run_arrays("float64")
            tangents = {
                n: (dx if n == array else np.zeros_like(run[n])) for n in inputs.example.wrt_names
            }
            _DIRECTIONAL[key] = float(np.asarray(v.jvp(*inputs.args("float64"), tangents)))
        except Exception as e:  # custom_vjp, Julia, an Enzyme forward: not pushed forward
            _DIRECTIONAL[key] = e
    found = _DIRECTIONAL[key]
    if isinstance(found, Exception):
        raise found
    return found


def jvp_judgement(
    case: str, inputs: Inputs, g: Gradient, array: str, **what: Any
) -> judge.Judgement:
    """`jvp(L)(x; dx)` against `⟨g, dx⟩`: by the variant's own forward mode (1e-12), else
    by the first member of its family that has one (the family tolerance)."""
    ex = inputs.example
    mask = masks(inputs)[array]
    x = inputs.run_arrays("float64")[array]
    dx = jvp_direction(ex, array, x, None if mask.all() else mask)
    reverse = inner(g.gradients[array], dx)
    scale = float(np.sum(np.abs(g.gradients[array]) * np.abs(dx)))
    order = [g.variant] + [n for n in families(ex)[g.family] if n != g.variant]
    why = {}
    for name in order:
        try:
            forward = _forward(inputs, name, array, dx)
        except Exception as e:
            why[name] = (str(e).strip().splitlines() or [type(e).__name__])[0][:120]
            continue
        tol = OWN_JVP_TOLERANCE if name == g.variant else TOLERANCES["float64"].grad
        result = DirectionalResult(array, name, forward, reverse, scale, tol)
        return judge.judge_directional(case, result, **what)
    own = why.get(g.variant, "no forward mode")
    reason = (
        f"neither {g.variant} ({own}) nor a member of family {g.family} can be pushed forward "
        "by jax.jvp"
    )
    return judge.skipped(case, "jvp", reason, array=array, **what)
