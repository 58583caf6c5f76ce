"""The fault line of a run whose dtype follows from its program's x64 configuration, with
whatever else the run breaks (docs/DESIGN.md §8.3).

A float64 run of a program with x64 off computes in float32, and its dtype is the first
breach the contract check meets; a loss that is also not a scalar, a gradient of the wrong
shape, or NaN in either, would then stay hidden until x64 is fixed. So the line names the
x64 configuration first, then every other breach found in what the run returned, each
checked as if its dtype were the one under test.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _x64
from ..._judge._contract import Breach, checked_gradients, checked_loss
from ..._model import Configuration, Variant


def _dtype_name(value: Any) -> str:
    """The dtype of what a loss or grad returned (its first array), or ""."""
    if isinstance(value, dict):
        value = next(iter(value.values()), None)
    elif isinstance(value, (tuple, list)):
        value = value[0] if value else None
    try:
        return np.asarray(value).dtype.name
    except Exception:
        return ""


def x64_fault_line(
    variant: Variant, config: Configuration, returned: dict[str, Any], inputs: Any
) -> str | None:
    """The x64 line (`_x64.fault_line`: a float64 run computed in float32 with x64 off, a
    float32 run promoted to 64 bits with it on), then the run's other breaches (held to
    `inputs`' shapes); None for
    any other breach, and for a backend without JAX's x64 (`config.x64` None)."""
    if config.x64 is None:
        return None
    for what, value in returned.items():  # the loss is checked first: the first at fault
        found = _x64.fault_line(variant.name, config.x64, _dtype_name(value), config.dtype, what)
        if found is not None:
            others = other_breaches(variant, returned, inputs.wrt_shapes)
            return found + (f"; it also {'; and '.join(others)}" if others else "")
    return None


def other_breaches(variant: Variant, returned: dict[str, Any], shapes: Any) -> list[str]:
    """What else the run's loss and gradient break, their dtype aside: the loss's form,
    the gradient's form and shapes, NaN/Inf in either."""
    out = []
    if "the loss" in returned:
        loss = returned["the loss"]
        try:
            value = checked_loss(loss, _float_name(loss))
            if not np.isfinite(value):
                out.append(f"returned a loss that is not finite ({value})")
        except Breach as e:
            out.append(str(e))
    if "the gradient" in returned:
        raw = returned["the gradient"]
        try:
            arrays = checked_gradients(variant.example, raw, _float_name(raw), shapes)
        except Breach as e:
            out.append(str(e))
        else:
            for name, a in arrays.items():
                bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
                if bad:
                    out.append(f"returned NaN/Inf in {bad} entr(ies) of the gradient of {name}")
    return out


def _float_name(value: Any) -> str:
    """The real dtype a run's output has (`float32` for float32 and complex64): the dtype
    its other checks are held to, so that its dtype alone raises nothing more."""
    name = _dtype_name(value)
    return "float32" if name in ("float32", "complex64") else "float64"
