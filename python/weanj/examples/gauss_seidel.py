"""02-gauss-seidel: K Gauss–Seidel sweeps for the 2-D Poisson problem.

The point update is Jacobi's (`julia/src/jacobi.jl`, `jacobi.py`), applied in place:

- `lex`: a sweep visits `j = 1..n` (outer), `i = 1..n` (inner, fastest) — the Julia
  column-major loop `for j, for i` — so u[i-1,j] and u[i,j-1] are already new.
- `rb`: a sweep updates all red points ((i+j) even, 1-based interior indices), then all
  black points; a different algorithm from `lex` (they meet only at the fixed point).

Julia counterpart: `julia/src/gauss_seidel.jl`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import weanj

from . import _adjoint, _poisson, _sharded, _wavefront

TITLE = "Gauss–Seidel sweeps (lexicographic and red-black), 2-D Poisson"
EXAMPLE = weanj.register_example(_poisson.example("02-gauss-seidel", "gauss_seidel", 2, TITLE))


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
    return _poisson.iterate(lex_sweep, theta, K)


@weanj.jax_variant(EXAMPLE, "jax-lex", family="lex")
def lex_loss(theta, uobs, K):
    """seed notebook: nested lax.scan, one step per point; gradient by JAX AD"""
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


@weanj.jax_variant(EXAMPLE, "jax-rb", family="rb")
def rb_loss(theta, uobs, K):
    """seed notebook: masked vectorised red/black half-sweeps; gradient by JAX AD"""
    return _poisson.misfit(rb_solve(theta, K), uobs)


# --- kernex: the point update as a kernex kernel (examples/_kernex.py) ------------------
# lex: kernex.kscan visits windows in row-major order, updating in place, so it runs on
# the transposed grid, whose row-major order is the Julia loop's j outer, i inner.
# rb: the masked half-sweep of jax-rb with its stencil from kernex.kmap; kernex's own way
# to vary the kernel per point (a function mesh) dispatches a lax.switch at every point.
# kernex is imported at trace time, i.e. only when a variant is used.


def kernex_lex_solve(theta, K):
    from . import _kernex

    h2 = _poisson.h2(theta.shape[0])
    theta_t = jnp.pad(theta, 1).T

    def sweep(u_t, _):
        new = _kernex.new_interior(u_t, theta_t, h2, transform="kscan", axes=("j", "i"))
        return u_t.at[1:-1, 1:-1].set(new), None

    u_t, _ = jax.lax.scan(sweep, _poisson.zero_grid(theta), None, length=K)
    return u_t.T


@weanj.jax_variant(EXAMPLE, "kernex-lex", family="lex", backend="kernex", requires=("kernex",))
def kernex_lex_loss(theta, uobs, K):
    """kernex.kscan over (u, θ) windows of the transposed grid; gradient by JAX AD"""
    return _poisson.misfit(kernex_lex_solve(theta, K), uobs)


def kernex_rb_solve(theta, K):
    from . import _kernex

    n = theta.shape[0]
    h2, red = _poisson.h2(n), red_mask(n)
    theta_padded = jnp.pad(theta, 1)

    def half_sweep(u, colour):
        new = _kernex.new_interior(u, theta_padded, h2, transform="kmap", axes=("i", "j"))
        return u.at[1:-1, 1:-1].set(jnp.where(colour, new, u[1:-1, 1:-1]))

    def sweep(u, _):
        return half_sweep(half_sweep(u, red), ~red), None

    u, _ = jax.lax.scan(sweep, _poisson.zero_grid(theta), None, length=K)
    return u


@weanj.jax_variant(EXAMPLE, "kernex-rb", family="rb", backend="kernex", requires=("kernex",))
def kernex_rb_loss(theta, uobs, K):
    """masked red/black half-sweeps, stencil by kernex.kmap; gradient by JAX AD"""
    return _poisson.misfit(kernex_rb_solve(theta, K), uobs)


# --- Enzyme-JAX: the forwards of jax-lex and jax-rb, gradients by Enzyme's MLIR AD ----

weanj.enzyme_variant(EXAMPLE, "jax-lex-enzyme", family="lex", loss=lex_loss)
weanj.enzyme_variant(EXAMPLE, "jax-rb-enzyme", family="rb", loss=rb_loss)


# --- lex by hyperplanes, with a discrete adjoint (jax-wavefront) ---------------------
# jax-lex's point updates, each with the same operands in the same order, scheduled so
# that one step updates a whole block of points at once (`_wavefront.py`). Gradient: the
# transposed sweeps (`_adjoint.py`), lexicographic sweeps in the reverse order, i.e. the
# same kernel on the grid flipped in both axes.


def wavefront_solve(theta, K):
    return _wavefront.lex_sweeps(theta, K, scale=_poisson.h2(theta.shape[0]))


def lex_transpose_solve(source, K):
    return _wavefront.lex_sweeps(source[::-1, ::-1], K)[::-1, ::-1]


wavefront_adjoint_solve = _adjoint.with_adjoint(wavefront_solve, lex_transpose_solve)


@weanj.jax_variant(EXAMPLE, "jax-wavefront", family="lex")
def wavefront_loss(theta, uobs, K):
    """lex by hyperplanes t = i+j+2k, bitwise jax-lex; discrete adjoint (custom_vjp)"""
    return _poisson.misfit(wavefront_adjoint_solve(theta, K), uobs)


# --- rb with a discrete adjoint (jax-rb-adjoint) -------------------------------------
# Forward: jax-rb's own sweeps. Gradient: the transposed sweeps, black then red.


def rb_transpose_solve(source, K):
    red = red_mask(source.shape[0])

    def sweep(z, _):
        return half_sweep(half_sweep(z, source, 1.0, ~red), source, 1.0, red), None

    z, _ = jax.lax.scan(sweep, _poisson.zero_grid(source), None, length=K)
    return z


rb_adjoint_solve = _adjoint.with_adjoint(rb_solve, rb_transpose_solve)
rb_adjoint_loss = _poisson.loss_of(
    rb_adjoint_solve, "jax-rb's sweeps; discrete adjoint (custom_vjp): black, then red"
)
weanj.jax_variant(EXAMPLE, "jax-rb-adjoint", family="rb", loss=rb_adjoint_loss)


# --- rb split over devices (jax-rb-sharded) ------------------------------------------
# jax-rb's half-sweeps on blocks of rows, one block per device of a 1-D mesh, halos by
# ppermute before every half-sweep (`_sharded.py`): bitwise jax-rb's loss.

weanj.jax_variant(
    EXAMPLE, "jax-rb-sharded", family="rb", multi_device=True, loss=_sharded.rb_sharded_loss
)


# --- Julia: the loops of julia/src/gauss_seidel.jl, gradients by Enzyme.jl (juliacall) ----

# julia-lex: in-place loop, j outer, i inner; Enzyme.jl
weanj.julia_variant(EXAMPLE, "julia-lex", family="lex", loss="lex_loss")
# julia-rb: in-place red, then black points; Enzyme.jl
weanj.julia_variant(EXAMPLE, "julia-rb", family="rb", loss="rb_loss")
