"""The arguments of `weanj.compare` and `weanj.ulp_distance` checked at the call: each
mistake one `InputError` line naming the function, the argument and what it accepts,
never numpy's error from deep inside (`Cannot interpret '5' as a data type`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._arguments import refused
from .._errors import InputError
from .._model import shown
from ._policy import Tolerance, tolerance


def numbers(value: Any, what: str) -> np.ndarray:
    """`value` as an array of real or complex numbers, or one `InputError` line (a text, a
    None, a ragged list: never a KeyError from deep inside)."""
    try:
        a = np.asarray(value)
    except Exception:
        a = None
    if a is None or a.dtype.kind not in "iufc" or isinstance(value, (str, bytes)):
        raise InputError(
            f"compare: {what} must be an array of numbers (numpy or JAX) or a weanj.Gradient, "
            f"got {shown(value)}"
        )
    return a


def float_dtype(value: Any, what: str, function: str) -> str:
    """A float or complex dtype under test (float64, float32, complex128, complex64), as
    given."""
    try:
        tolerance(value)
    except InputError:
        raise refused(function, what, "float64, float32, complex128 or complex64", value) from None
    return value


def _number(value: Any, what: str, function: str, minimum: float | None = None) -> None:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )
    if value is None or (ok and not math.isnan(value) and (minimum is None or value >= minimum)):
        return
    accepts = "a number" if minimum is None else f"a number >= {minimum:g}"
    raise refused(function, what, f"None or {accepts}", value)


def checked_keep(
    shape: tuple, dtype: Any, keep: Any, losses: tuple, floors: tuple, declared: Any
) -> np.ndarray:
    """`compare`'s options (its `dtype`, `keep`, `(loss_ref, loss)`, `(loss_floor,
    grad_floor)` and `declared`) checked against arrays of `shape`; **returns** `keep` as
    booleans of that shape (all True when None)."""
    if dtype is not None:
        float_dtype(dtype, "dtype", "compare")
    for what, value in zip(("loss_ref", "loss"), losses, strict=True):
        _number(value, what, "compare")
    for what, value in zip(("loss_floor", "grad_floor"), floors, strict=True):
        _number(value, what, "compare", minimum=0.0)
    if declared is not None and not isinstance(declared, Tolerance):
        raise refused("compare", "declared", "None or a weanj.Tolerance", declared)
    if keep is None:
        return np.ones(shape, bool)
    if np.shape(keep) != shape or np.asarray(keep).dtype.kind not in "biu":
        raise InputError(
            f"compare: keep must be booleans shaped like the arrays {shape}, got "
            f"{shown(keep)} (shape {np.shape(keep)})"
        )
    return np.asarray(keep, bool)


def ulp_arguments(a: Any, b: Any, dtype: Any) -> None:
    """`ulp_distance`'s arguments: two numbers (real or complex) and a float dtype."""
    for what, value in (("a", a), ("b", b)):
        if isinstance(value, (str, bytes)) or np.asarray(value).dtype.kind not in "iufcb":
            raise refused("ulp_distance", what, "a number", value)
    float_dtype(dtype, "dtype", "ulp_distance")
