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
from .._model import Example, Param, Sizes

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


def iterate(step, theta, K):
    """u^K: K applications of `step(u, theta, h2)` from u⁰ = 0, in a `lax.scan`."""
    import jax

    scale = h2(theta.shape[0])
    u, _ = jax.lax.scan(
        lambda u, _: (step(u, theta, scale), None), zero_grid(theta), None, length=K
    )
    return u


def zero_grid(theta):
    """u⁰ = 0, padded: (n+2)×(n+2) in θ's dtype."""

    n = theta.shape[0]
    return jnp.zeros((n + 2, n + 2), theta.dtype)


def misfit(u, uobs):
    """Σ (u[i,j] − uobs[i,j])² over the interior of the padded grid `u`."""

    return jnp.sum((u[1:-1, 1:-1] - uobs) ** 2)


def example(name: str, stem: str, seed: int, title: str) -> Example:
    """A Poisson example: the arrays, parameters, inputs and sizes 01 and 02 share."""
    return Example(
        name=name,
        stem=stem,
        title=title,
        seed=seed,
        arrays=ARRAYS,
        shapes=SHAPES,
        wrt=WRT,
        params=PARAMS,
        generate=generate,
        validate=validate,
        describe=describe,
        sizes=SIZES,
    )


def loss_of(solve, description: str):
    """`(theta, uobs, K) -> Σ (u^K − uobs)²` for a solver `solve(theta, K) -> u^K` (padded):
    the loss every Poisson variant shares, so that a variant is its solver; `description`
    becomes its docstring (the variant's description)."""

    def loss(theta, uobs, K):
        return misfit(solve(theta, K), uobs)

    loss.__name__ = f"{getattr(solve, '__name__', 'solve')}_loss"
    loss.__doc__ = description
    return loss
