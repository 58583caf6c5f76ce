"""02-gauss-seidel: K Gauss–Seidel sweeps for the 2-D Poisson problem.

The point update is Jacobi's (`julia/jacobi.jl`, `jacobi.py`), applied in place:

- `lex`: a sweep visits `j = 1..n` (outer), `i = 1..n` (inner, fastest) — the Julia
  column-major loop `for j, for i` — so u[i-1,j] and u[i,j-1] are already new.
- `rb`: a sweep updates all red points ((i+j) even, 1-based interior indices), then all
  black points; a different algorithm from `lex` (they meet only at the fixed point).

Julia counterpart: `julia/gauss_seidel.jl`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from .._registry import Example, Variant, jax_variant, register_example, register_variant
from . import _poisson

EXAMPLE = register_example(
    Example(
        name="02-gauss-seidel",
        stem="gauss_seidel",
        title="Gauss–Seidel sweeps (lexicographic and red-black), 2-D Poisson",
        arrays=_poisson.ARRAYS,
        wrt=_poisson.WRT,
        params=_poisson.PARAMS,
        seed=2,
        generate=_poisson.generate,
        validate=_poisson.validate,
        describe=_poisson.describe,
    )
)


# --- lex: the seed notebook's nested scans ------------------------------------------
# Arrays are immutable and loop bodies must be pure, so the sweep is a scan over
# columns, each a scan over rows carrying the new u[i-1, j]: one scan step per point,
# in the Julia loop's order (i fastest, then j).


def lex_sweep(u, theta, h2):
    n = theta.shape[0]

    def column(u, j):
        left, old, right = u[:, j], u[:, j + 1], u[:, j + 2]

        def point(below, i):  # below = the new u[i-1, j]
            new = (h2 * theta[i, j] + below + old[i + 2] + left[i + 1] + right[i + 1]) / 4
            return new, new

        _, col = jax.lax.scan(point, old[0], jnp.arange(n))
        return u.at[1 : n + 1, j + 1].set(col), None

    return jax.lax.scan(column, u, jnp.arange(n))[0]


def lex_solve(theta, K):

    h2 = _poisson.h2(theta.shape[0])
    u, _ = jax.lax.scan(
        lambda u, _: (lex_sweep(u, theta, h2), None), _poisson.zero_grid(theta), None, length=K
    )
    return u


def lex_loss(theta, uobs, K):
    return _poisson.misfit(lex_solve(theta, K), uobs)


# --- rb: masked vectorised half-sweeps -----------------------------------------------
# The reformulation JAX users write: each colour is one vectorised stencil over the
# whole grid, kept only where the colour's mask is set.


def red_mask(n):

    i, j = jnp.meshgrid(jnp.arange(1, n + 1), jnp.arange(1, n + 1), indexing="ij")
    return (i + j) % 2 == 0  # 1-based interior indices, as in the Julia kernel


def half_sweep(u, theta, h2, colour):

    new = (h2 * theta + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) / 4
    return u.at[1:-1, 1:-1].set(jnp.where(colour, new, u[1:-1, 1:-1]))


def rb_solve(theta, K):

    n = theta.shape[0]
    h2, red = _poisson.h2(n), red_mask(n)

    def sweep(u, _):
        return half_sweep(half_sweep(u, theta, h2, red), theta, h2, ~red), None

    u, _ = jax.lax.scan(sweep, _poisson.zero_grid(theta), None, length=K)
    return u


def rb_loss(theta, uobs, K):
    return _poisson.misfit(rb_solve(theta, K), uobs)


_STATIC = EXAMPLE.static_argnums()

register_variant(
    Variant(
        example=EXAMPLE.name,
        name="jax-lex",
        family="lex",
        backend="jax",
        build=lambda: jax_variant(lex_loss, static_argnums=_STATIC),
        description="seed notebook: nested lax.scan, one step per point; gradient by JAX AD",
    )
)
register_variant(
    Variant(
        example=EXAMPLE.name,
        name="jax-rb",
        family="rb",
        backend="jax",
        build=lambda: jax_variant(rb_loss, static_argnums=_STATIC),
        description="seed notebook: masked vectorised red/black half-sweeps; gradient by JAX AD",
    )
)
