"""What the Poisson examples share: inputs, their checks, the grid and the loss.

A 2-D Poisson problem on the unit square: n×n interior unknowns, zero Dirichlet
boundary, stored padded as an (n+2)×(n+2) array `u`, `h2 = 1/(n+1)^2`, `u⁰ = 0`. Loss:
`Σ (u^K[i,j] − uobs[i,j])²` over the interior; gradient with respect to `theta`.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np

from .._errors import InputError
from .._model import Param, Sizes

ARRAYS = ("theta", "uobs")
SHAPES = {"theta": ("n", "n"), "uobs": ("n", "n")}
WRT = "theta"
N_SHARED = 64
PARAMS = (
    Param(
        "K",
        default=20,
        minimum=1,
        help="number of iterations (sweeps)",
        bench=100,  # the seed notebook's sweep over n
        sweep=(10, 100, 1000),  # memory against K
    ),
)


def generate(seed: int, n: int = N_SHARED) -> dict[str, np.ndarray]:
    """A source θ ~ N(0, 1) and observations of the size of a solution, both (n, n)."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((n, n))
    uobs = 0.01 * rng.standard_normal((n, n))
    return {"theta": theta, "uobs": uobs}


# The seed notebook's sweep: grid sizes n (n×n unknowns).
SIZES = Sizes(
    generate=generate,
    values=(32, 64, 128, 256, 512, 1024),
    name="n",
    help="grid size (n×n unknowns)",
)


def validate(arrays: Mapping[str, np.ndarray]) -> None:
    theta, uobs = arrays["theta"], arrays["uobs"]
    if theta.ndim != 2 or theta.shape[0] != theta.shape[1] or theta.shape[0] < 1:
        raise InputError(
            f"theta must be a square (n, n) array with n >= 1, got shape {theta.shape}"
        )
    if uobs.shape != theta.shape:
        raise InputError(f"uobs has shape {uobs.shape}, theta has {theta.shape}; they must match")


def describe(arrays: Mapping[str, np.ndarray]) -> dict:
    return {"n": int(arrays["theta"].shape[0])}


def h2(n: int) -> float:
    return 1.0 / (n + 1) ** 2


def zero_grid(theta):
    """u⁰ = 0, padded: (n+2)×(n+2) in θ's dtype."""

    n = theta.shape[0]
    return jnp.zeros((n + 2, n + 2), theta.dtype)


def misfit(u, uobs):
    """Σ (u[i,j] − uobs[i,j])² over the interior of the padded grid `u`."""

    return jnp.sum((u[1:-1, 1:-1] - uobs) ** 2)
