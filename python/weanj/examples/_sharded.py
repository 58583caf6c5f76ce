"""The Poisson iterations split over devices: `jax-jacobi-sharded`, `jax-rb-sharded`.

JAX's own SPMD machinery, written out by hand: `jax.shard_map` over a 1-D mesh of
devices (axis `"rows"`), each device holding a block of consecutive interior rows of
the grid, one-cell halos exchanged with `lax.ppermute` before every iteration (before
every half-sweep for red-black), nothing but the halos crossing devices in the loop.

**Why rows (a 1-D mesh), not a 2-D mesh.** A row of a C-ordered grid is contiguous, so a
halo is one contiguous (n,) slice, and an iteration is two ppermutes (up and down), not
four plus corners; the red-black colour of a block depends on one row offset only; and a
block of n/P rows already divides the per-device memory by P (issue 18 asks for ≤ 1/4 at
8 devices). A 2-D mesh sends ~4n/√P values per device and iteration instead of 2n, so it
pays when the exchange is bandwidth-bound (large n, many devices, slow links); no real
interconnect has been measured here, so the simpler layout wins. A 2-D version would
change `RowBlocks`, `_with_halo` and the colour mask's column offset.

**Layout and padding.** n interior rows over P devices: every device holds
`b = ceil(n/P)` rows (`RowBlocks`), θ and uobs are padded with zero rows to P·b. A padding
row is outside the domain: it stays exactly zero (it is masked out of every update, as
the boundary is), so the first padding row plays the part of the Dirichlet row n+1 and
the others are never read by a real point. Devices may hold only padding (n < P). The
boundary columns are not stored; the stencil pads them back as zeros.

**Halo exchange.** Before an update every device sends its last row down (to device
d+1, where it is the row above the block) and its first row up (to d−1). `ppermute`
leaves zeros where no device sends: the rows above device 0 and below device P−1 are
the zero boundary. On one device there is nothing to send: the halos are zeros, a mesh
of one.

**Bitwise equality with `jax-jacobi` / `jax-rb`.** Every point update is the same
expression, `(h2*θ + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4`, on the same operands
in the same order, written as the single-device variants write it (`h2 * theta` inside
the loop body), and the masks only select. XLA could still compile the same source
differently in two programs (for the kernex variants it contracts `h2*θ + u[i-1,j]` into
an FMA and for `jax-jacobi` it does not); here neither program contracts (both grids
equal a numpy evaluation's bits), and the tests compare the bits at every size they run.
The loss is summed as `_poisson.misfit` sums it, on the assembled grid: after the loop,
u^K and uobs are all-gathered (once, outside the loop) and every device reduces the full
(n, n) residual with the same `jnp.sum` as the single-device program. **Summation
order:** XLA's order for that single reduce over the (n, n) residual, the same as in
`jax-jacobi` and `jax-rb` (whatever order that is, it is the same program text on the
same shape), not per-device partial sums combined by `psum` (that reassociates: the
tests see the difference). A `pmax` of the devices' equal values then types the scalar
as replicated for `shard_map`; the max of equal values is exact.

**Gradient.** JAX AD through the sharded iteration (ppermute transposes to the reverse
ppermute, the masks to masks): the adjoint sweeps run sharded with the same halo
exchanges. The misfit alone has a hand-written derivative (`_assembled_misfit`): its
forward sums the gathered grid for the bits above, its derivative 2(u^K − uobs) is
elementwise and stays on each device's block, so the gradient program gathers no grid.
Plain AD through the gather would form the full residual on every device: at n = 512 on
8 devices its gradient needed 4.3 MiB of temp per device against 1.6 MiB with the hand
derivative (`jax-jacobi`: 12.0 MiB), i.e. more than the 1/4 issue 18 allows.

**Memory.** The gradient's scratch is per block (`benchmarks/sharded.py`,
`docs/benchmark-scripts.md`). The loss alone holds the gathered u^K and uobs, n² values
each, on every device: the price of the bitwise sum, paid once after the loop. With n
not divisible by the device count, the (n, n) arrays at the boundary of `jax.jit`
cannot be split evenly: XLA keeps θ and uobs whole on each device (each takes its
rows) and assembles the gradient with one all-gather after the loops.

**Devices.** `mesh()` is built at trace time from `weanj.set_devices(...)`'s selection, by
default every device of JAX's default backend (`jax.devices()`): the CPU, or every GPU
of the host. Nothing here is specific to a platform; only simulated CPU devices have
run it. Several hosts (`jax.distributed.initialize()`, after which `jax.devices()` lists
every process's devices) have not been tried: the inputs would then have to be global
arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from .._backends._devices import chosen_devices
from . import _poisson

AXIS = "rows"


def mesh(devices: int | Sequence | None = None) -> Mesh:
    """The 1-D device mesh (axis `"rows"`) the sharded variants run on.

    **Arguments:**

    - `devices`: None for the selection of `weanj.set_devices` (by default all of
      `jax.devices()`, the default backend's devices); an int N for the first N of them;
      or a sequence of devices.

    **Returns:** a `jax.sharding.Mesh` of shape (number of devices,).
    """
    selection = None if devices is None else (devices, None)
    return Mesh(np.array(chosen_devices(selection), dtype=object), (AXIS,))


@dataclass(frozen=True)
class RowBlocks:
    """n interior rows split over `parts` devices: `rows` = ceil(n/parts) rows each."""

    n: int
    parts: int

    @property
    def rows(self) -> int:
        return -(-self.n // self.parts)

    @property
    def padded(self) -> int:
        return self.rows * self.parts

    def pad(self, a):
        """(n, n) → (padded, n): zero rows appended, outside the domain."""
        return jnp.pad(a, ((0, self.padded - self.n), (0, 0)))


def _global_rows(layout: RowBlocks):
    """0-based global interior row of each local row, shape (rows, 1)."""
    first = lax.axis_index(AXIS) * layout.rows
    return first + lax.broadcasted_iota(jnp.int32, (layout.rows, 1), 0)


def _with_halo(block, parts: int):
    """The local block (rows, n) with the neighbours' rows above and below and the zero
    boundary columns: (rows+2, n+2), indexed like the padded grid `u` of `_poisson`."""
    if parts == 1:
        above = below = jnp.zeros_like(block[0])
    else:
        down = [(d, d + 1) for d in range(parts - 1)]
        up = [(d + 1, d) for d in range(parts - 1)]
        above = lax.ppermute(block[-1], AXIS, down)  # device 0 receives none: zeros
        below = lax.ppermute(block[0], AXIS, up)  # likewise device parts-1
    return jnp.pad(jnp.concatenate([above[None], block, below[None]]), ((0, 0), (1, 1)))


def _point_update(u, theta, h2):
    """The point update of docs/DESIGN.md on every point of the block, as jax-jacobi writes it."""
    return (h2 * theta + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) / 4


def _jacobi_blocks(theta, K: int, layout: RowBlocks):
    """u^K on this device's block (shard_map body): K Jacobi iterations from u⁰ = 0."""
    h2 = _poisson.h2(layout.n)
    inside = _global_rows(layout) < layout.n

    def iteration(block, _):
        new = _point_update(_with_halo(block, layout.parts), theta, h2)
        return jnp.where(inside, new, 0), None

    block, _ = lax.scan(iteration, jnp.zeros_like(theta), None, length=K)
    return block


def _rb_blocks(theta, K: int, layout: RowBlocks):
    """u^K on this device's block: K red-black sweeps, halos before each half-sweep."""
    h2 = _poisson.h2(layout.n)
    rows = _global_rows(layout)
    cols = lax.broadcasted_iota(jnp.int32, (1, layout.n), 1)
    inside = rows < layout.n
    red = ((rows + cols) % 2 == 0) & inside  # (i+j) even in 1-based indices, as jax-rb
    black = ~red & inside

    def half_sweep(block, colour):
        new = _point_update(_with_halo(block, layout.parts), theta, h2)
        return jnp.where(colour, new, block)

    def sweep(block, _):
        return half_sweep(half_sweep(block, red), black), None

    block, _ = lax.scan(sweep, jnp.zeros_like(theta), None, length=K)
    return block


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _assembled_misfit(block, obs_block, n: int):
    """`_poisson.misfit` of the assembled grid: Σ (u^K − uobs)², summed in one reduce.

    u^K and uobs are gathered onto every device (once, after the loop) and summed there
    exactly as the single-device variants sum them, so the loss is bitwise theirs.
    """
    u = lax.all_gather(block, AXIS, tiled=True)[:n]
    uobs = lax.all_gather(obs_block, AXIS, tiled=True)[:n]
    loss = jnp.sum((u - uobs) ** 2)
    # Every device computed the same value; the max of equal values is that value, and
    # tells shard_map's type check that the loss is the same on every device (a scalar
    # all-reduce; jax.lax.all_gather's result is typed as device-varying).
    return lax.pmax(loss, AXIS)


def _assembled_misfit_fwd(block, obs_block, n):
    return _assembled_misfit(block, obs_block, n), (block, obs_block)


def _assembled_misfit_bwd(n, residuals, loss_bar):
    # The derivative is elementwise: each device keeps its block (padding rows: 0 − 0).
    block, obs_block = residuals
    residual_bar = 2 * (block - obs_block) * loss_bar
    return residual_bar, -residual_bar


_assembled_misfit.defvjp(_assembled_misfit_fwd, _assembled_misfit_bwd)


def _sharded_loss(blocks, theta, uobs, K):
    n = theta.shape[0]
    m = mesh()
    layout = RowBlocks(n, m.size)

    def local(theta_block, obs_block):
        return _assembled_misfit(blocks(theta_block, K, layout), obs_block, n)

    loss = jax.shard_map(local, mesh=m, in_specs=(P(AXIS), P(AXIS)), out_specs=P())
    return loss(layout.pad(theta), layout.pad(uobs))


def _sharded_solve(blocks, theta, K):
    n = theta.shape[0]
    m = mesh()
    layout = RowBlocks(n, m.size)
    solve = jax.shard_map(
        functools.partial(blocks, K=K, layout=layout), mesh=m, in_specs=P(AXIS), out_specs=P(AXIS)
    )
    return jnp.pad(solve(layout.pad(theta))[:n], 1)


# --- the variants: loss(theta, uobs, K), K static; gradient by jax.grad -----------------


def jacobi_sharded_loss(theta, uobs, K):
    """`jax-jacobi-sharded`: jax-jacobi's iterations over a row-split mesh."""
    return _sharded_loss(_jacobi_blocks, theta, uobs, K)


def rb_sharded_loss(theta, uobs, K):
    """`jax-rb-sharded`: jax-rb's red-black sweeps over a row-split mesh."""
    return _sharded_loss(_rb_blocks, theta, uobs, K)


def jacobi_sharded_solve(theta, K):
    """u^K of `jax-jacobi-sharded`, assembled as the padded (n+2)×(n+2) grid (for tests)."""
    return _sharded_solve(_jacobi_blocks, theta, K)


def rb_sharded_solve(theta, K):
    """u^K of `jax-rb-sharded`, assembled as the padded (n+2)×(n+2) grid (for tests)."""
    return _sharded_solve(_rb_blocks, theta, K)
