"""`weanj.jvp_check`: forward mode against reverse mode for any JAX function (a
notebook's), with the judge's rule (`JvpResult`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._errors import InputError
from .._judge._directions import inner, random_direction
from .._judge._jvp import OWN_JVP_TOLERANCE, JvpResult


def jvp_check(
    f: Callable[[Any], Any],
    x: Any,
    g: Any,
    *,
    dx: Any = None,
    tolerance: float = OWN_JVP_TOLERANCE,
    seed: int = 1,
) -> JvpResult:
    """Forward mode against reverse mode for any JAX-traceable scalar function: `jax.jvp`
    of `f` at `x` along `dx` (default: a seeded unit direction) against `⟨g, dx⟩`, exact up
    to rounding and independent of any step.

    **Returns:** a `JvpResult`: `.forward`, `.reverse`, `.error` (relative to
    `Σ|g_i||dx_i|`, the size of the terms of ⟨g, dx⟩) and `.passes` (`error ≤ tolerance`).
    """
    import jax
    import numpy as np

    from .. import _arguments as arg

    f = arg.function_of_x(f, "f", "jvp_check")
    x, g = arg.numbers(x, "x", "jvp_check"), arg.numbers(g, "g", "jvp_check")
    tolerance = arg.real(tolerance, "tolerance", "jvp_check", positive=True)
    seed = arg.seed(seed, "seed", "jvp_check")
    if x.shape != g.shape:
        raise InputError(f"jvp_check: g has shape {g.shape}, x has {x.shape}")
    if dx is None:
        dx = random_direction(np.random.default_rng(seed), x)
    dx = np.asarray(arg.numbers(dx, "dx", "jvp_check"), dtype=x.dtype)
    if dx.shape != x.shape:
        raise InputError(f"jvp_check: dx has shape {dx.shape}, x has {x.shape}")
    with jax.enable_x64(x.dtype in (np.float64, np.complex128)):
        forward = float(np.real(np.asarray(jax.jvp(f, (x,), (dx,))[1])))
    reverse = inner(g, dx)
    scale = float(np.sum(np.abs(g) * np.abs(dx)))
    return JvpResult("", "jax.jvp", forward, reverse, scale, float(tolerance))
