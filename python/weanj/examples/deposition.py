"""05-deposition: cloud-in-cell charge deposition, a scatter-add with floor.

Particles `pos` (P, 2) in the periodic unit square [0, 1)², charges `q` (P,), an observed
grid `rhoobs` (n, n). For each particle p in order p = 0..P−1 (docs/DESIGN.md):

    gx = pos[p,0]*n − 0.5;  i0 = floor(gx);  fx = gx − i0;  i1 = i0 + 1   (likewise gy, j0, fy, j1)
    all indices mod n, then in this order, from ρ = 0:
    ρ[i0,j0] += q[p]*((1−fx)*(1−fy));  ρ[i1,j0] += q[p]*(fx*(1−fy))
    ρ[i0,j1] += q[p]*((1−fx)*fy);      ρ[i1,j1] += q[p]*(fx*fy)

Loss `Σ (ρ − rhoobs)²`; gradient with respect to `pos` and `q`.

The hazards of a port, side by side below:

- **Summation order.** The Julia loop adds into each cell in (particle, corner) order. A
  scatter adds in whatever order its implementation visits the updates: XLA's CPU scatter
  visits them in order, one scatter after the other (so four `.at[].add`s add all the
  first corners, then all the second ones: another order, other last bits); a GPU scatter
  uses atomics, whose order changes from run to run. `jax-segment-sum` feeds the updates
  in the loop's order (bitwise the loop on a CPU); `jax-sorted` sums each cell itself, in
  the loop's order, on any device.
- **Kinks.** `floor` has derivative zero, so on a kink line (gx or gy an integer) the
  derivative is the one of the cell the particle is assigned to (fx = 0: cells i0 = gx
  and i1 = gx + 1), and finite differences straddling a kink average two slopes; the
  finite-difference policy leaves such entries out.
- **The periodic wrap.** gx ∈ [−0.5, n − 0.5): a particle below the first cell centre
  (pos < 0.5/n) has i0 = −1, i.e. cell n−1, and i1 = 0; one above the last centre has
  i1 = n, i.e. cell 0. Indices are taken mod n, never clamped.

Julia counterpart: `julia/src/deposition.jl`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as _P

import weanj

from . import _sharded

P_SHARED, N_SHARED = 4096, 32
# weanj bench sweeps P with 16 particles per cell (n = √(P/16)), the density of the
# acceptance point P = 2²⁰, n = 256: 64 contributions per cell on average.
PARTICLES_PER_CELL = 16
# Cell indices are flattened to i*n + j in int32.
N_MAX = 46340  # floor(√(2³¹ − 1))

# Finite differences: central differences along random unit directions v with step
# FD_STEP, so no entry moves by more than FD_STEP (|v_i| <= 1). Within a cell the loss is
# a polynomial of degree 4 in a position (bilinear weights, squared misfit), so away from
# the kinks the O(h²) truncation error remains: on the shared inputs 5.5e-4, 5.5e-6,
# 5.6e-8 at h = 1e-2, 1e-3, 1e-4 (relative, worst of 10 directions), against rounding of
# about eps·L/h ≈ 5e-9 for q (quadratic: no truncation) at 1e-4. Hence 1e-4, 20× below
# the threshold 1e-6 that still flags any wrong gradient (off by O(1)).
FD_STEP = 1e-4


def grid_size_for(P: int) -> int:
    """The bench sweep's (and the fuzzer's) grid size for P particles: n = √(P/16), at
    least 2. On a 1×1 periodic grid every particle's four corners are the one cell, their
    weights sum to 1 whatever its position, so ∂L/∂pos vanishes exactly and the variants
    return rounding noise (up to 1e-15 against ∂L/∂q of order 1): judged against its own
    max|g_ref|, itself noise, that pair would "fail" (found by `weanj fuzz`). The grid
    starts at 2×2, where every position matters."""
    return max(2, int(np.sqrt(P // PARTICLES_PER_CELL)))


def _kink_positions(rng: np.random.Generator, count: int, n: int) -> np.ndarray:
    """Positions exactly on kink lines: pos = (k + 0.5)/n, so that pos*n − 0.5 = k."""
    return (rng.integers(0, n, count) + 0.5) / n


def generate(seed: int, P: int = P_SHARED, n: int = N_SHARED, *, kinks: bool = True):
    """Uniform particles, charges q ~ 1 + N(0, 1/16), and observations near the mean density.

    With `kinks` (the shared inputs; n must be a power of two, so that (k + 0.5)/n and
    pos*n − 0.5 are exact), some particles sit exactly on kink lines — 128 with gx
    integral, 128 with gy integral, 64 on both (grid nodes) — and 16 on the wrap: every
    pair of the coordinates 0 (i0 = −1 → n−1), 0.5/n (gx = 0: the kink between cell n−1
    and cell 0 as i0), 1 − 0.5/n (gx = n−1: i1 = n → 0) and the largest double below 1
    (i1 = n → 0 with fx just below 1/2). They are spread over the particle order.
    """
    rng = np.random.default_rng(seed)
    pos = rng.random((P, 2))
    q = 1.0 + 0.25 * rng.standard_normal(P)
    rhoobs = (P / n**2) * (1.0 + 0.1 * rng.standard_normal((n, n)))
    if kinks:
        if n & (n - 1) or P < 336:
            raise ValueError("kink placement needs n a power of two and P >= 336")
        where = rng.permutation(P)
        on_x, on_y, on_both, wrap = np.split(where[:336], [128, 256, 320])
        pos[on_x, 0] = _kink_positions(rng, 128, n)
        pos[on_y, 1] = _kink_positions(rng, 128, n)
        pos[on_both, 0] = _kink_positions(rng, 64, n)
        pos[on_both, 1] = _kink_positions(rng, 64, n)
        edges = np.array([0.0, 0.5 / n, 1.0 - 0.5 / n, np.nextafter(1.0, 0.0)])
        pos[wrap] = np.stack(np.meshgrid(edges, edges, indexing="ij"), axis=-1).reshape(16, 2)
    return {"pos": pos, "q": q, "rhoobs": rhoobs}


SIZES = weanj.Sizes(
    generate=lambda seed, P: generate(seed, P, grid_size_for(P), kinks=False),
    values=tuple(2**k for k in range(10, 21, 2)),
    name="P",
    help="number of particles; the grid is n×n with n = √(P/16) (16 particles per cell)",
)


def validate(arrays: Mapping[str, np.ndarray]) -> None:
    pos, q, rhoobs = (np.asarray(arrays[a]) for a in ("pos", "q", "rhoobs"))
    if pos.ndim != 2 or pos.shape[1] != 2 or pos.shape[0] < 1:
        raise weanj.InputError(f"pos must have shape (P, 2) with P >= 1, got {pos.shape}")
    if q.shape != (pos.shape[0],):
        raise weanj.InputError(f"q must have shape (P,) = ({pos.shape[0]},), got {q.shape}")
    if rhoobs.ndim != 2 or rhoobs.shape[0] != rhoobs.shape[1] or rhoobs.shape[0] < 1:
        raise weanj.InputError(f"rhoobs must be a square (n, n) array, got shape {rhoobs.shape}")
    if rhoobs.shape[0] > N_MAX:
        raise weanj.InputError(
            f"rhoobs is {rhoobs.shape[0]}×{rhoobs.shape[0]}; n <= {N_MAX} (int32 cell indices)"
        )
    for name, a in (("pos", pos), ("q", q), ("rhoobs", rhoobs)):
        if not np.all(np.isfinite(a)):
            raise weanj.InputError(f"{name} has {int(np.sum(~np.isfinite(a)))} NaN/Inf value(s)")
    outside = (pos < 0) | (pos >= 1)
    if outside.any():
        p, axis = np.argwhere(outside)[0]
        raise weanj.InputError(
            f"pos has {int(outside.sum())} coordinate(s) outside the periodic unit square "
            f"[0, 1), e.g. pos[{p}, {axis}] = {float(pos[p, axis])!r}"
        )


def describe(arrays: Mapping[str, np.ndarray]) -> dict:
    return {"P": int(arrays["pos"].shape[0]), "n": int(arrays["rhoobs"].shape[0])}


def fd_mask(arrays: Mapping[str, np.ndarray], params: Mapping[str, int]) -> dict:
    """Entries finite differences may perturb: a position at least FD_STEP (in position
    units) from every kink line of its own axis, i.e. |g − round(g)| > n·FD_STEP with
    g = pos*n − 0.5 as the loop computes it; every charge."""
    pos = np.asarray(arrays["pos"], dtype=np.float64)
    n = np.asarray(arrays["rhoobs"]).shape[0]
    g = pos * n - 0.5
    return {"pos": np.abs(g - np.round(g)) > n * FD_STEP, "q": np.ones(pos.shape[0], bool)}


EXAMPLE = weanj.register_example(
    weanj.Example(
        shapes={"pos": ("P", 2), "q": ("P",), "rhoobs": ("n", "n")},
        name="05-deposition",
        stem="deposition",
        title="cloud-in-cell deposition of particles on a periodic grid (scatter-add, floor)",
        arrays=("pos", "q", "rhoobs"),
        wrt=("pos", "q"),
        seed=5,
        generate=generate,
        validate=validate,
        describe=describe,
        sizes=SIZES,
        fd=weanj.FDPolicy(
            directions=10,
            step=FD_STEP,
            threshold=1e-6,
            mask=fd_mask,
            why=f"pos entries within {FD_STEP:g} of a kink line of their axis (gx or gy "
            "integral: floor switches cells, a central difference would straddle two "
            "slopes) are not perturbed; q enters linearly: all perturbed",
        ),
        # A step below FD_STEP moves no kept position across its kink line (the mask
        # keeps those at least FD_STEP away, and a unit direction moves each by <= h).
        taylor={"pos": weanj.TaylorPolicy(h0=FD_STEP)},
    )
)


# --- What every variant shares: the particles' cells and weights ---------------------


def cell_coordinate(x, n):
    """g = x*n − 0.5, rounded after the product and after the difference, as the loop is.

    XLA's CPU backend contracts `x*n − 0.5` into one fused multiply-add (one rounding),
    which for n not a power of two moves g by an ulp: enough to change the last bits of ρ
    and, for a particle on a kink, the cell it is assigned to. A select it cannot see
    through keeps the product rounded on its own; on finite x it is the identity, and so
    is its derivative.
    """
    scaled = x * n
    return jnp.where(jnp.isfinite(scaled), scaled, 0.0) - 0.5


def cells_and_fractions(pos, n):
    """Per particle, along each axis: the cells i0, i1 = i0 + 1 (mod n, so −1 is n−1 and
    n is 0) and the fraction f = g − floor(g).

    `floor` (and the integer cast) has derivative zero: on a kink f = 0 and the
    derivative is the one of the assigned cells.
    """
    g = cell_coordinate(pos, n)
    below = jnp.floor(g)
    i0 = below.astype(jnp.int32) % n
    return i0, (i0 + 1) % n, g - below


def corner_weights(q, fx, fy):
    """The four weights in the loop's corner order and parenthesisation."""
    return (q * ((1 - fx) * (1 - fy)), q * (fx * (1 - fy)), q * ((1 - fx) * fy), q * (fx * fy))


def corners(pos, q, n):
    """The four cells and weights of every particle, each (P, 4), corners in the loop's
    order (i0,j0), (i1,j0), (i0,j1), (i1,j1); cells flattened to i*n + j, int32."""
    (i0, i1, fx), (j0, j1, fy) = (cells_and_fractions(pos[:, axis], n) for axis in (0, 1))
    cells = jnp.stack([i0 * n + j0, i1 * n + j0, i0 * n + j1, i1 * n + j1], axis=1)
    return cells, jnp.stack(corner_weights(q, fx, fy), axis=1)


def misfit(rho, rhoobs):
    return jnp.sum((rho - rhoobs) ** 2)


# --- jax-scatter: the direct port, four scatters -------------------------------------
# `ρ[i0,j0] += w` becomes `ρ.at[i0, j0].add(w)`, one scatter per corner. Each cell then
# receives all its first-corner contributions, then all second-corner ones, ...: not the
# loop's order (XLA's CPU scatter adds the updates of one scatter in order; on a GPU in
# an unspecified order, with atomics).


def deposit_scatter(pos, q, n):
    """ρ (n, n) by four `.at[].add` scatters, one per corner."""
    (i0, i1, fx), (j0, j1, fy) = (cells_and_fractions(pos[:, axis], n) for axis in (0, 1))
    w00, w10, w01, w11 = corner_weights(q, fx, fy)
    rho = jnp.zeros((n, n), pos.dtype)
    rho = rho.at[i0, j0].add(w00)
    rho = rho.at[i1, j0].add(w10)
    rho = rho.at[i0, j1].add(w01)
    return rho.at[i1, j1].add(w11)


@weanj.jax_variant(EXAMPLE, "jax-scatter", family="cic")
def scatter_loss(pos, q, rhoobs):
    """the direct port: four .at[].add scatters (corner-major order); JAX AD"""
    return misfit(deposit_scatter(pos, q, rhoobs.shape[0]), rhoobs)


# --- jax-segment-sum: one scatter in the loop's (particle, corner) order -------------
# Flattening the (P, 4) contributions row by row lists them in the loop's order, so a
# scatter that adds its updates in order (XLA's on a CPU) adds into every cell in the
# loop's order: ρ bitwise the loop's. On a GPU, segment_sum is an atomic scatter again.


def deposit_segment_sum(pos, q, n):
    """ρ (n, n) by one `jax.ops.segment_sum` over the contributions in (particle, corner) order."""
    cells, w = corners(pos, q, n)
    return jax.ops.segment_sum(w.reshape(-1), cells.reshape(-1), num_segments=n * n).reshape(n, n)


@weanj.jax_variant(EXAMPLE, "jax-segment-sum", family="cic")
def segment_sum_loss(pos, q, rhoobs):
    """one segment_sum over the contributions in the loop's order; JAX AD"""
    return misfit(deposit_segment_sum(pos, q, rhoobs.shape[0]), rhoobs)


# --- jax-sorted: sort by cell, then each cell sums its own run, in order --------------
# A stable sort by cell keeps each cell's contributions in (particle, corner) order; then
# step k adds the k-th contribution of every cell at once (a while loop over the longest
# run, CELL_BLOCK contributions per step). No two threads ever add into the same cell, so
# the sums are the loop's, to the bit, on every device. ρ is linear in the weights,
# ∂ρ[c]/∂w_k = [cell_k = c]: the backward pass is a gather of the cotangent, whatever
# the order the forward summed in.

# Contributions per cell and while-loop step: one gather of (cells, CELL_BLOCK) per step
# instead of one per contribution; at P = 2²⁰, n = 256 (≈ 64 per cell, at most ≈ 100) a
# step per contribution spends 4× longer in the loop's overhead than 16 per step.
CELL_BLOCK = 16


def sort_by_cell(cells, num_cells):
    """`(order, cells[order])`: the permutation that sorts `cells` (each in
    [0, num_cells)) stably, and the sorted cells.

    Sorting the unique keys cell·m + k (k = 0..m−1) is that stable sort, and XLA's CPU
    sorts one integer array about three times faster than (cell, k) pairs with a
    comparator; the keys also hold both results, so no gather is needed. Where they do
    not fit the integer type (x64 off), a stable argsort.
    """
    m = cells.shape[0]
    key_type = jax.dtypes.canonicalize_dtype(jnp.int64)
    if num_cells * m - 1 > jnp.iinfo(key_type).max:
        order = jnp.argsort(cells, stable=True)
        return order, cells[order]
    keys = jnp.sort(cells.astype(key_type) * m + jnp.arange(m, dtype=key_type))
    return keys % m, (keys // m).astype(cells.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def cell_sums(weights, cells, num_cells):
    """ρ[c] = Σ of `weights[k]` over `cells[k] == c`, each cell summed in the order of k."""
    order, sorted_cells = sort_by_cell(cells, num_cells)
    sorted_weights = weights[order]
    every_cell = jnp.arange(num_cells, dtype=cells.dtype)
    start = jnp.searchsorted(sorted_cells, every_cell, side="left")
    count = jnp.searchsorted(sorted_cells, every_cell, side="right") - start
    longest, last = jnp.max(count), sorted_weights.shape[0] - 1
    offsets = jnp.arange(CELL_BLOCK, dtype=start.dtype)

    def add_block(state):
        k, rho = state
        block = sorted_weights[jnp.minimum(start[:, None] + k + offsets, last)]
        inside = k + offsets < count[:, None]
        for b in range(CELL_BLOCK):  # in order: contribution k + b of every cell
            rho = jnp.where(inside[:, b], rho + block[:, b], rho)
        return k + CELL_BLOCK, rho

    rho0 = jnp.zeros(num_cells, weights.dtype)
    k0 = jnp.zeros((), start.dtype)
    return jax.lax.while_loop(lambda state: state[0] < longest, add_block, (k0, rho0))[1]


def _cell_sums_fwd(weights, cells, num_cells):
    return cell_sums(weights, cells, num_cells), cells


def _cell_sums_bwd(num_cells, cells, cotangent):
    return cotangent[cells], None


cell_sums.defvjp(_cell_sums_fwd, _cell_sums_bwd)


def deposit_sorted(pos, q, n):
    """ρ (n, n): contributions stably sorted by cell, each cell summed in the loop's order."""
    cells, w = corners(pos, q, n)
    return cell_sums(w.reshape(-1), cells.reshape(-1), n * n).reshape(n, n)


@weanj.jax_variant(EXAMPLE, "jax-sorted", family="cic")
def sorted_loss(pos, q, rhoobs):
    """stable sort by cell, each cell summed in the loop's order (any device); custom VJP"""
    return misfit(deposit_sorted(pos, q, rhoobs.shape[0]), rhoobs)


# --- particles split over devices (jax-cic-sharded) -------------------------------------
# The particles, not the grid, are split: device d deposits its block of particles into
# a whole (n, n) grid of its own (jax-segment-sum's deposit: its particles in the loop's
# order), and `psum` adds the P partial grids. The mesh axis is the same 1-D device list.
#
# Summation order: a cell's contributions are summed per device in the loop's order, then
# the devices' partial sums are added in the order of XLA's all-reduce (a tree or a ring,
# by platform and device count), so ρ is not the loop's bits: Σ over devices of partial
# sums reassociates the one sum the loop makes. It agrees with jax-scatter (whose order
# differs again) under the tolerance policy, not bitwise, and it is deterministic for a
# given device count and platform, but not across them. Padding particles (P not
# divisible by the device count) carry charge 0 at position 0: they add exact zeros.


def cic_sharded_loss(pos, q, rhoobs):
    """`jax-cic-sharded`: particles split over a 1-D device mesh, each device deposits
    into its own grid (segment_sum in the loop's order), `psum` adds the grids."""
    n = rhoobs.shape[0]
    m = _sharded.mesh()
    particles = q.shape[0]
    padded = -(-particles // m.size) * m.size
    pos_padded = jnp.pad(pos, ((0, padded - particles), (0, 0)))
    q_padded = jnp.pad(q, (0, padded - particles))

    def local(pos_block, q_block, obs):
        rho = jax.lax.psum(deposit_segment_sum(pos_block, q_block, n), _sharded.AXIS)
        return misfit(rho, obs)

    specs = (_P(_sharded.AXIS), _P(_sharded.AXIS), _P())
    loss = jax.shard_map(local, mesh=m, in_specs=specs, out_specs=_P())
    return loss(pos_padded, q_padded, rhoobs)


weanj.jax_variant(
    EXAMPLE,
    "jax-cic-sharded",
    family="cic",
    loss=cic_sharded_loss,
    description="particles split over a 1-D device mesh (shard_map), grids added by psum; JAX AD",
    multi_device=True,
)


# --- Enzyme-JAX: jax-scatter's forward, gradient by Enzyme's MLIR AD -----------------

weanj.enzyme_variant(EXAMPLE, "jax-cic-enzyme", family="cic", loss=scatter_loss)


# --- Julia: the loop of julia/src/deposition.jl, gradients by Enzyme.jl (juliacall) -------

# julia-cic: the particle loop, ρ[i,j] += w in place; Enzyme.jl
weanj.julia_variant(EXAMPLE, "julia-cic", family="cic", loss="cic_loss")
