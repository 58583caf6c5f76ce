"""01-jacobi: K Jacobi iterations for the 2-D Poisson problem.

Every interior point is updated from the previous iterate at once:

    u[i,j] ← (h2*θ[i,j] + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4

with the additions in exactly this order (so implementations that perform the same
arithmetic agree to the last bit). Julia counterpart: `julia/src/jacobi.jl`.
"""

from __future__ import annotations

import jax

import weanj

from . import _adjoint, _poisson, _sharded

TITLE = "Jacobi iteration, 2-D Poisson, zero Dirichlet boundary"
EXAMPLE = weanj.register_example(_poisson.example("01-jacobi", "jacobi", 1, TITLE))


def jacobi_step(u, theta, h2):
    """One Jacobi iteration on the padded grid `u` (boundary stays zero)."""
    new = (h2 * theta + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) / 4
    return u.at[1:-1, 1:-1].set(new)


def jacobi_solve(theta, K):
    """u^K from u⁰ = 0."""
    return _poisson.iterate(jacobi_step, theta, K)


@weanj.jax_variant(EXAMPLE, "jax-jacobi", family="jacobi")
def jacobi_loss(theta, uobs, K):
    """vectorised stencil in a lax.scan over K; gradient by JAX AD"""
    return _poisson.misfit(jacobi_solve(theta, K), uobs)


# --- jacobi with a discrete adjoint (jax-jacobi-adjoint) -----------------------------
# Forward: jax-jacobi's own iterations. Jacobi is its own transpose (`_adjoint.py`): the
# gradient is K Jacobi iterations with the residual as the source.


def jacobi_transpose_solve(source, K):
    def iteration(z, _):
        # jacobi_step's update with `source` for h2·θ. Padding the new interior, rather
        # than setting it into z, lets XLA write each iterate to a fresh buffer without
        # first copying the old one: about twice as fast on a CPU.
        new = (source + z[:-2, 1:-1] + z[2:, 1:-1] + z[1:-1, :-2] + z[1:-1, 2:]) / 4
        return jax.numpy.pad(new, 1), None

    z, _ = jax.lax.scan(iteration, _poisson.zero_grid(source), None, length=K)
    return z


jacobi_adjoint_loss = _poisson.loss_of(
    _adjoint.with_adjoint(jacobi_solve, jacobi_transpose_solve),
    "jax-jacobi's iterations; discrete adjoint (custom_vjp), no stored states",
)
weanj.jax_variant(EXAMPLE, "jax-jacobi-adjoint", family="jacobi", loss=jacobi_adjoint_loss)


# --- jacobi split over devices (jax-jacobi-sharded) ----------------------------------
# jax-jacobi's point updates on blocks of rows, one block per device of a 1-D mesh,
# halos by ppermute (`_sharded.py`): bitwise jax-jacobi's loss on any number of devices.

weanj.jax_variant(
    EXAMPLE,
    "jax-jacobi-sharded",
    family="jacobi",
    multi_device=True,
    loss=_sharded.jacobi_sharded_loss,
)


# --- kernex: the point update as a kernex kernel over all windows at once (kmap) ----
# The kernel reads θ from a second channel of the stacked grid (see examples/_kernex.py);
# kernex is imported at trace time, i.e. only when the variant is used.


def kernex_jacobi_solve(theta, K):
    from . import _kernex

    h2 = _poisson.h2(theta.shape[0])
    theta_padded = jax.numpy.pad(theta, 1)

    def iteration(u, _):
        new = _kernex.new_interior(u, theta_padded, h2, transform="kmap", axes=("i", "j"))
        return u.at[1:-1, 1:-1].set(new), None

    u, _ = jax.lax.scan(iteration, _poisson.zero_grid(theta), None, length=K)
    return u


@weanj.jax_variant(
    EXAMPLE, "kernex-jacobi", family="jacobi", backend="kernex", requires=("kernex",)
)
def kernex_jacobi_loss(theta, uobs, K):
    """kernex.kmap over (u, θ) windows in a lax.scan over K; gradient by JAX AD"""
    return _poisson.misfit(kernex_jacobi_solve(theta, K), uobs)


# --- Enzyme-JAX: jax-jacobi's forward, gradient by Enzyme's MLIR AD ------------------

weanj.enzyme_variant(EXAMPLE, "jax-jacobi-enzyme", family="jacobi", loss=jacobi_loss)


# --- Julia: the loops of julia/src/jacobi.jl, gradient by Enzyme.jl (through juliacall) ---

# julia-jacobi: in-place loops, two buffers; gradient by Enzyme.jl
weanj.julia_variant(EXAMPLE, "julia-jacobi", family="jacobi", loss="jacobi_loss")
