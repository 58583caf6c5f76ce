"""01-jacobi: K Jacobi iterations for the 2-D Poisson problem.

Every interior point is updated from the previous iterate at once:

    u[i,j] ← (h2*θ[i,j] + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4

with the additions in exactly this order (so implementations that perform the same
arithmetic agree to the last bit). Julia counterpart: `julia/jacobi.jl`.
"""

from __future__ import annotations

import jax
from .._registry import Example, Variant, jax_variant, register_example, register_variant
from . import _poisson

EXAMPLE = register_example(
    Example(
        name="01-jacobi",
        stem="jacobi",
        title="Jacobi iteration, 2-D Poisson, zero Dirichlet boundary",
        arrays=_poisson.ARRAYS,
        wrt=_poisson.WRT,
        params=_poisson.PARAMS,
        seed=1,
        generate=_poisson.generate,
        validate=_poisson.validate,
        describe=_poisson.describe,
    )
)


def jacobi_step(u, theta, h2):
    """One Jacobi iteration on the padded grid `u` (boundary stays zero)."""
    new = (h2 * theta + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) / 4
    return u.at[1:-1, 1:-1].set(new)


def jacobi_solve(theta, K):
    """u^K from u⁰ = 0."""

    h2 = _poisson.h2(theta.shape[0])
    u, _ = jax.lax.scan(
        lambda u, _: (jacobi_step(u, theta, h2), None), _poisson.zero_grid(theta), None, length=K
    )
    return u


def jacobi_loss(theta, uobs, K):
    return _poisson.misfit(jacobi_solve(theta, K), uobs)


register_variant(
    Variant(
        example=EXAMPLE.name,
        name="jax-jacobi",
        family="jacobi",
        backend="jax",
        build=lambda: jax_variant(jacobi_loss, static_argnums=EXAMPLE.static_argnums()),
        description="vectorised stencil in a lax.scan over K; gradient by JAX AD",
    )
)
