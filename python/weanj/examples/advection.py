"""03-advection: limited upwind advection (MUSCL, minmod limiter) on a periodic grid.

A periodic n×n grid, 0-based indices taken mod n, `i` along axis 0, `j` along axis 1.
`c0` is the initial field (the gradient is taken with respect to it), `u[i,j]` the
velocity through the face between cells (i,j) and (i+1,j), `v[i,j]` through the face
between (i,j) and (i,j+1), |u|, |v| <= 1, λ = dt/dx = 0.25. One step maps c to c'
(docs/DESIGN.md, in exactly this order and parenthesisation):

    minmod(a, b) = 0 if a*b <= 0;  else a if |a| <= |b|;  else b
    sx[i,j] = minmod(c[i+1,j] − c[i,j], c[i,j] − c[i−1,j]);  sy likewise along j
    F[i,j]  = u[i,j] * (c[i,j]   + 0.5*(1 − λ*u[i,j])*sx[i,j])      if u[i,j] >= 0
              u[i,j] * (c[i+1,j] − 0.5*(1 + λ*u[i,j])*sx[i+1,j])    otherwise;  G likewise
    c'[i,j] = c[i,j] − λ*(F[i,j] − F[i−1,j]) − λ*(G[i,j] − G[i,j−1])

Loss `Σ (c^T − cobs)²` after T steps; gradient `∂L/∂c0`. Julia counterpart:
`julia/src/advection.jl`.

The hazards of a port, side by side below:

- **Kinks, and whose derivative a tie gets.** minmod is piecewise linear; on its kinks
  (`a*b == 0`, or `a == b`) the derivative depends on how the code is written. The
  branches above (`jax-muscl`, Julia's `if`/`else`) follow the branch taken: at `a == b`
  the derivative is that of `a`, where `a*b <= 0` it is zero. The usual vectorised form
  `0.5*(sign(a)+sign(b))*min(abs(a),abs(b))` has the same value to the bit (below) but
  other derivatives there:

  | at the kink              | branches  | JAX `jnp.minimum`  | Julia `min` (Enzyme) |
  | ------------------------ | --------- | ------------------ | -------------------- |
  | `a == b != 0`            | (1, 0)    | (½, ½)             | (0, 1)               |
  | `a == 0`, `b != 0`       | (0, 0)    | (½·sign b, 0)      | (½·sign b, 0)        |
  | `a != 0`, `b == 0`       | (0, 0)    | (0, ½·sign a)      | (0, ½·sign a)        |
  | `a == b == 0`, `a == −b` | (0, 0)    | (0, 0)             | (0, 0)               |

  (∂minmod/∂a, ∂minmod/∂b). JAX gives a tie of `lax.min` half the cotangent each way,
  `abs'(0) = +1` and `sign' = 0`. Julia's `min(x::Float64, y::Float64)` returns `y` when
  `x == y`, and Enzyme differentiates the operand returned: on x86-64 up to 1.11 it is
  `ifelse(signbit(x − y), x, y)` (since 1.9, JuliaLang/julia#41709; before, it returned
  `x`); where it is `llvm.minimum` (aarch64 since #47814, every platform from 1.12,
  #56371), Enzyme's rule for that intrinsic is `x < y ? dx : dy`, `y` again. Enzyme's
  `fabs'(0) = +1`, and Julia's `sign(0.0)` returns its argument (`sign'(0) = 1`, here
  multiplied by `min(...) = 0`). The Julia column is read off those sources, not measured
  (there is no Julia where this project is developed). A central difference across
  `a == b != 0` gives (½, ½) (it averages the two one-sided slopes), JAX's value; across
  `a*b == 0` it is not even linear in the direction.
- **Bitwise equality.** The two forms: where `a*b > 0`, `0.5*(sign(a)+sign(b))` is
  exactly ±1 and `±min(|a|, |b|)` is exactly the one of `a`, `b` that the branches pick
  (at a tie both are the same number); where `a*b < 0` the sign sum is 0 and the product
  ±0; where `a*b == 0` it is ±0 (e.g. `0.5*(0 + −1)*0 = −0.0`) against the branches'
  +0.0. A signed zero only meets sums with a nonzero term (unchanged), products (a zero
  again) and the final square, so every nonzero value, and the loss, are the same bits.
  The loops: XLA's CPU backend lets LLVM fuse a multiply into the add that follows
  (`c + k*s` of the flux, and `u*(...)` into `F[i] − F[i−1]`), each rounded once, where
  Julia and the Python reference round twice; so jax-muscl's c^T differs from the loops
  in the last bits (tests/crossval/reference_advection.py reproduces it bit for bit),
  while all JAX variants here have bitwise the same loss.
- **Reverse-mode memory grows with T.** Unlike the linear Poisson sweeps, every step
  has residuals: JAX AD of a `lax.scan` over T keeps each step's branch masks (4 boolean
  fields; the step is linear in c once they are known), O(T·n²) bytes.
  `jax-muscl-checkpoint` nests checkpointed blocks ⌈log_16 T⌉ levels deep and keeps
  ≈ T^(1/d) states per level, recomputing a block when its cotangent arrives: at n = 128
  its gradient's scratch memory is 5.0 MB at T = 1000 against jax-muscl's 67 MB.

Finite differences (`weanj check`): the loss is piecewise quadratic in c0, so a central
difference is exact up to rounding unless the step crosses a kink, and across a kink it
averages two slopes (see the table). The policy leaves out every c0 entry within the
stencil's reach of a minmod on a kink at any of the T steps (`fd_mask`), and takes a step
small enough to cross no other kink. On the shared inputs (T = 20) the mask leaves out
1152 of 4096 entries: the four feature blocks, all from the first step's kinks (the
rough, slightly compressible velocities break every tie at once, so no kink survives
the first step). Along twenty random masked unit directions the nearest other kink is
3.5e-5 to 3.2e-4 away (median 1.2e-4); `FD_STEP = 1e-5` stays below all of them, with a
rounding error of 1e-9 to 1e-7 relative (the more, the closer the direction is to
orthogonal to the gradient), 10× below the threshold 1e-6 that still flags any wrong
gradient (off by O(1)). At 1e-4 one direction in ten crosses a kink (error 1e-5); at
1e-6 rounding reaches 3e-6.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

import weanj

from ._advection_inputs import (
    ARRAYS,
    LAMBDA,
    describe,
    generate,
    validate,
)

FD_STEP = 1e-5


# --- the shared inputs (`_advection_inputs.py`): ties at the first step ------------------

# --- the mathematics, pointwise -----------------------------------------------------------
# Written once on scalars-or-arrays, so that every JAX variant (rolled arrays, kernex
# windows) performs exactly docs/DESIGN.md's operations in docs/DESIGN.md's order.


def minmod(a, b):
    """docs/DESIGN.md's branches: 0 where a*b <= 0, else a where |a| <= |b|, else b.

    `jnp.where` passes the cotangent to the branch it took, so the derivative is that of
    the branch taken: at a tie `a == b` that of `a`; where `a*b <= 0` zero."""
    return jnp.where(a * b <= 0, 0.0, jnp.where(jnp.abs(a) <= jnp.abs(b), a, b))


def minmod_minmax(a, b):
    """The usual vectorised form: the same value (see the module docstring), but JAX's
    derivatives of `minimum`/`abs`/`sign` at the kinks (½ each way at a tie)."""
    return 0.5 * (jnp.sign(a) + jnp.sign(b)) * jnp.minimum(jnp.abs(a), jnp.abs(b))


def face_flux(w, c_here, c_next, s_here, s_next):
    """F (or G) through the face between a cell and the next: upwind by the sign of the
    face velocity `w`, with the limited slopes `s` of the two cells."""
    upwind = w * (c_here + 0.5 * (1 - LAMBDA * w) * s_here)
    downwind = w * (c_next - 0.5 * (1 + LAMBDA * w) * s_next)
    return jnp.where(w >= 0, upwind, downwind)


def update(c, F, F_behind, G, G_behind):
    """c' = c − λ(F − F[i−1]) − λ(G − G[j−1])."""
    return c - LAMBDA * (F - F_behind) - LAMBDA * (G - G_behind)


def misfit(c, cobs):
    """Σ (c^T − cobs)²."""
    return jnp.sum((c - cobs) ** 2)


# --- muscl: vectorised with jnp.roll and jnp.where (jax-muscl) -------------------------
# The literal port: every loop over (i, j) becomes one array expression; x[i+1] is
# jnp.roll(x, -1) along the axis, x[i−1] is jnp.roll(x, 1); the time loop is a lax.scan.


def ahead(x, axis: int):
    """x[i+1] (axis 0) or x[j+1] (axis 1), periodic."""
    return jnp.roll(x, -1, axis)


def behind(x, axis: int):
    """x[i−1] (axis 0) or x[j−1] (axis 1), periodic."""
    return jnp.roll(x, 1, axis)


def step(c, u, v, limiter=minmod):
    """One time step c → c'."""
    sx = limiter(ahead(c, 0) - c, c - behind(c, 0))
    sy = limiter(ahead(c, 1) - c, c - behind(c, 1))
    F = face_flux(u, c, ahead(c, 0), sx, ahead(sx, 0))
    G = face_flux(v, c, ahead(c, 1), sy, ahead(sy, 1))
    return update(c, F, behind(F, 0), G, behind(G, 1))


def advect(c0, u, v, T: int, limiter=minmod):
    """c^T: T steps from c0."""
    c, _ = jax.lax.scan(lambda c, _: (step(c, u, v, limiter), None), c0, None, length=T)
    return c


# --- kinks, and the finite-difference policy --------------------------------------------
# A minmod is on a kink where a*b == 0 or |a| == |b|, or within rounding of one (a few
# ulps of the field). The c0 entries that can move its arguments at step t: its own three
# cells along its axis, then t times the reach of one step (c'[i,j] reads c[i±2, j] and
# c[i, j±2]).

KINK_ULPS = 64
ONE_STEP_REACH = ((0, 0), (1, 0), (-1, 0), (2, 0), (-2, 0), (0, 1), (0, -1), (0, 2), (0, -2))


def _on_kink(a, b, tol):
    margin = jnp.minimum(jnp.minimum(jnp.abs(a), jnp.abs(b)), jnp.abs(jnp.abs(a) - jnp.abs(b)))
    return margin <= tol


def kinks(c0, u, v, T: int) -> np.ndarray:
    """Boolean (T, 2, n, n): where the minmods of sx (`[t, 0]`) and sy (`[t, 1]`) are on
    a kink at step t = 0..T−1, along jax-muscl's trajectory in float64."""

    def record(c, _):
        tol = KINK_ULPS * jnp.finfo(c.dtype).eps * jnp.max(jnp.abs(c))
        on_x = _on_kink(ahead(c, 0) - c, c - behind(c, 0), tol)
        on_y = _on_kink(ahead(c, 1) - c, c - behind(c, 1), tol)
        return step(c, u, v), jnp.stack([on_x, on_y])

    with jax.enable_x64(True):
        c0, u, v = (jnp.asarray(a, jnp.float64) for a in (c0, u, v))
        _, marks = jax.jit(lambda c: jax.lax.scan(record, c, None, length=T))(c0)
    return np.asarray(marks)


def _dilate(mask: np.ndarray, offsets) -> np.ndarray:
    out = np.zeros_like(mask)
    for di, dj in offsets:
        out |= np.roll(mask, (di, dj), (0, 1))
    return out


def kink_reach(c0, u, v, T: int) -> np.ndarray:
    """Boolean (n, n): the c0 entries that can move a minmod on a kink at some step."""
    marks = kinks(c0, u, v, T)
    reach = np.zeros(marks.shape[2:], bool)
    for t in reversed(range(T)):  # Horner: K_0 | D(K_1 | D(K_2 | ...)), T dilations
        reach = _dilate(reach, ONE_STEP_REACH) if t < T - 1 else reach
        reach |= _dilate(marks[t, 0], ((0, 0), (1, 0), (-1, 0)))
        reach |= _dilate(marks[t, 1], ((0, 0), (0, 1), (0, -1)))
    return reach


def fd_mask(arrays: Mapping[str, np.ndarray], params: Mapping[str, int]) -> dict:
    """`weanj check`'s finite-difference mask: every c0 entry outside `kink_reach`."""
    return {"c0": ~kink_reach(arrays["c0"], arrays["u"], arrays["v"], int(params["T"]))}


EXAMPLE = weanj.register_example(
    weanj.Example(
        name="03-advection",
        stem="advection",
        title="MUSCL upwind advection, minmod limiter, periodic 2-D grid (kinks, memory)",
        arrays=ARRAYS,
        shapes={name: ("n", "n") for name in ARRAYS},
        wrt="c0",
        params=(
            weanj.Param(
                "T",
                default=20,
                minimum=1,
                help="number of time steps",
                bench=20,
                sweep=(10, 100, 1000),  # reverse-mode memory against T
            ),
        ),
        seed=3,
        generate=generate,
        validate=validate,
        describe=describe,
        sizes=weanj.Sizes(
            generate=generate,
            values=(32, 64, 128, 256, 512),
            name="n",
            help="grid size (n×n periodic cells)",
        ),
        fd=weanj.FDPolicy(
            directions=10,
            step=FD_STEP,
            threshold=1e-6,
            mask=fd_mask,
            why="leaves out c0 entries within the stencil's reach of a minmod on a kink "
            "(a*b == 0 or |a| == |b|) at any step: there a central difference averages "
            "two slopes",
        ),
        # The Taylor test's window: its remainder (the loss is piecewise quadratic, C·h²
        # between kinks) is resolved above its rounding level from h ≈ 1.2e-4 on, and the
        # nearest kink the mask keeps lies 1e-4 to 6e-4 away along a random direction
        # (module docstring). From 2.5e-4 the test reads h² at its smallest resolved steps
        # both ways on the shared inputs, for eleven seeds of the direction in twelve,
        # and fails a gradient off by 1e-3 for all twelve; from FD_STEP it resolves
        # nothing (every remainder at rounding level: no test at all).
        taylor=weanj.TaylorPolicy(h0=2.5e-4),
    )
)


@weanj.jax_variant(EXAMPLE, "jax-muscl", family="muscl")
def muscl_loss(c0, u, v, cobs, T):
    """vectorised (jnp.roll, jnp.where branches) in a lax.scan over T; JAX AD"""
    return misfit(advect(c0, u, v, T), cobs)


# --- kernex: docs/DESIGN.md's three stencils as kernex kernels (kernex-muscl) ----------------
# kmap applies a kernel to every window of an array; the windows here are taken from
# periodically padded arrays ('valid' windows), one kernel per formula: the slope of a
# cell from its two neighbours, the flux through a face from the two cells beside it,
# the update of a cell from its own faces. The j direction is the i direction of the
# transposed arrays. kernex resolves a kernel's shape on its first array, so the kernels
# are built at trace time (and kernex is imported only when the variant is used).


def _wrap(x, before: int, after: int, axis: int):
    pad = [(0, 0)] * x.ndim
    pad[axis] = (before, after)
    return jnp.pad(x, pad, mode="wrap")


def kernex_slopes(c):
    """sx: minmod of the differences across each cell along axis 0."""
    import kernex

    @kernex.kmap(kernel_size=(3, 1), relative=True)  # x[d, 0] is c[i+d, j]
    def slope(x):
        return minmod(x[1, 0] - x[0, 0], x[0, 0] - x[-1, 0])

    return slope(_wrap(c, 1, 1, 0))


def kernex_fluxes(c, s, w):
    """F: the flux through the face between (i, j) and (i+1, j), for every (i, j)."""
    import kernex

    @kernex.kmap(kernel_size=(3, 2, 1))  # channels c, s, w; x[k, 0] this cell, x[k, 1] next
    def flux(x):
        return face_flux(x[2, 0, 0], x[0, 0, 0], x[0, 1, 0], x[1, 0, 0], x[1, 1, 0])

    return flux(_wrap(jnp.stack([c, s, w]), 0, 1, 1))[0]


def kernex_update(c, F, G):
    """c': each cell from the fluxes through its four faces."""
    import kernex

    @kernex.kmap(kernel_size=(3, 2, 2))  # channels c, F, G; x[k, 1, 1] is this cell
    def new(x):
        return update(x[0, 1, 1], x[1, 1, 1], x[1, 0, 1], x[2, 1, 1], x[2, 1, 0])

    padded = _wrap(_wrap(jnp.stack([c, F, G]), 1, 0, 1), 1, 0, 2)
    return new(padded)[0]


def kernex_step(c, u, v):
    sx = kernex_slopes(c)
    sy = kernex_slopes(c.T).T
    F = kernex_fluxes(c, sx, u)
    G = kernex_fluxes(c.T, sy.T, v.T).T
    return kernex_update(c, F, G)


@weanj.jax_variant(EXAMPLE, "kernex-muscl", family="muscl", backend="kernex", requires=("kernex",))
def kernex_muscl_loss(c0, u, v, cobs, T):
    """slopes, fluxes and update as kernex.kmap stencils in a lax.scan; JAX AD"""
    c, _ = jax.lax.scan(lambda c, _: (kernex_step(c, u, v), None), c0, None, length=T)
    return misfit(c, cobs)


# --- Enzyme-JAX: jax-muscl's forward, gradient by Enzyme's MLIR AD ----------------------
# A second AD engine on the very same program; Enzyme differentiates the `select`s of
# jnp.where as JAX does, into the branch taken.

weanj.enzyme_variant(EXAMPLE, "jax-muscl-enzyme", family="muscl", loss=muscl_loss)


# --- muscl with rematerialisation (jax-muscl-checkpoint) --------------------------------
# jax-muscl's steps, nested: T steps are a lax.scan over blocks of ≈ T^((d−1)/d) steps, each
# block (d−1 levels deeper) wrapped in jax.checkpoint, down to plain scans of ≈ T^(1/d)
# steps, with d = ⌈log_16 T⌉ levels (so no level stores more than ≈ 16 states). The
# backward pass keeps ≈ T^(1/d) states per level and re-runs a block forward when its
# cotangent arrives: O(d·T^(1/d)) fields instead of O(T) (T = 1000: 10 + 10 states and the
# branch masks of 10 steps, against the masks of 1000 steps), for d − 1 more forward
# passes (JAX's backward of a step costs several forward steps, so this stays well under
# 2× the gradient time at T = 200, d = 2). The forward arithmetic is unchanged: the loss
# is bitwise jax-muscl's.

SEGMENT = 16


def remat_levels(T: int) -> int:
    """d = ⌈log_16 T⌉ (at least 1): the nesting depth for T steps."""
    levels = 1
    while SEGMENT**levels < T:
        levels += 1
    return levels


def advect_nested(c, u, v, T: int, levels: int):
    """`advect`'s c^T, rematerialised over `levels` nested levels of checkpointed blocks."""
    if levels == 1 or T <= 2:
        return advect(c, u, v, T)
    length = math.ceil(T ** ((levels - 1) / levels))
    blocks, rest = divmod(T, length)
    block = jax.checkpoint(functools.partial(advect_nested, T=length, levels=levels - 1))
    c, _ = jax.lax.scan(lambda c, _: (block(c, u, v), None), c, None, length=blocks)
    if rest:
        c = jax.checkpoint(functools.partial(advect_nested, T=rest, levels=levels - 1))(c, u, v)
    return c


@weanj.jax_variant(EXAMPLE, "jax-muscl-checkpoint", family="muscl")
def muscl_checkpoint_loss(c0, u, v, cobs, T):
    """jax-muscl's steps in nested jax.checkpoint'ed blocks; O(log T) states"""
    return misfit(advect_nested(c0, u, v, T, remat_levels(T)), cobs)


# --- muscl-minmax: the usual vectorised limiter (jax-muscl-minmax) ----------------------
# Same loss to the bit; at the kinks JAX's derivatives of minimum/abs/sign, not those of
# the branches (the module docstring's table): `weanj diff` shows where.


@weanj.jax_variant(EXAMPLE, "jax-muscl-minmax", family="muscl-minmax")
def muscl_minmax_loss(c0, u, v, cobs, T):
    """jax-muscl with minmod = 0.5*(sign a + sign b)*minimum(|a|, |b|); JAX AD"""
    return misfit(advect(c0, u, v, T, minmod_minmax), cobs)


# --- Julia: the loops of julia/src/advection.jl, gradients by Enzyme.jl (through juliacall) --

# julia-muscl: in-place loops, if/else minmod; gradient by Enzyme.jl
weanj.julia_variant(EXAMPLE, "julia-muscl", family="muscl", loss="muscl_loss")
# julia-muscl-minmax: minmod by sign and min; gradient by Enzyme.jl
weanj.julia_variant(EXAMPLE, "julia-muscl-minmax", family="muscl-minmax", loss="muscl_minmax_loss")

# The two ports of the minmax limiter: the same loss, but at a tie JAX's `minimum` splits
# the derivative ½/½ and Julia's `min` (under Enzyme) gives it to its second argument
# (module docstring): one family by docs/DESIGN.md, so their pair must agree away from the
# kinks and is reported, not failed, where they differ at them.
weanj.differ_at_kinks(
    EXAMPLE,
    "jax-muscl-minmax",
    "julia-muscl-minmax",
    why="at a minmod tie JAX's minimum splits the derivative ½/½, Julia's min gives it to b",
)
