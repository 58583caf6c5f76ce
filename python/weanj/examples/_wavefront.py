"""Lexicographic Gauss–Seidel sweeps scheduled by hyperplanes (the `jax-wavefront` kernel).

K lexicographic sweeps (`for j in 1:n, for i in 1:n`, in place) are one sequence of
n²·K point updates. Point (i, j) of sweep k reads (i−1, j) and (i, j−1) of sweep k and
(i+1, j) and (i, j+1) of sweep k−1. Place it at step

    t = i + j + 2k:

the first two were written at step t − 1 (same k, one index less) and are rewritten
only at step t + 1 (sweep k+1); the last two were written at step t − 1 (sweep k−1,
one index more) and are rewritten at t + 1. So every point of step t reads exactly
the values the sequential loop reads, all points of a step can be updated at once in
one array, and K sweeps take 2n + 2K − 3 steps instead of K·n². Each point still
performs the same operations on the same operands in the same order, so the result is
bitwise `jax-lex`'s, provided the compiler treats the two programs' arithmetic alike
(fused multiply-adds, the loss's sum: see `lex_sweeps` and its loop's last step).

Step t updates the anti-diagonals a = i + j ≡ t (mod 2) with t − 2K ≤ a ≤ t − 2
(k = (t − a)/2 in 1..K). To make that a contiguous block, the padded grid is stored
sheared by anti-diagonal and split by the parity of a:

    even[m, j] = u[2m − j, j],    odd[m, j] = u[2m + 1 − j, j]   (zero off the grid),

so step t = 2s updates the rows m ∈ [s − K, s − 1] of `even` and step t = 2s + 1 the
same rows of `odd`, each reading two consecutive row blocks of the other array. The
block has min(K, n) rows whatever the step, so the loop body has static shapes and
one `lax.fori_loop` over s runs unchanged on any device. The last few rows of a block
at the ramps and the cells of a row that lie off the grid are masked, not skipped.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def _shear_indices(n: int):
    """Gather indices from the padded (n+2)² grid into `even`/`odd` and back.

    `even` and `odd` have n+2 rows (m = 0..n+1; row n+1 only feeds reads past the last
    diagonal) and n+2 columns (j = 0..n+1). Off-grid cells point at the corner (0, 0),
    which is boundary and so zero.
    """
    m = np.arange(n + 2)[:, None]
    j = np.arange(n + 2)[None, :]
    sheared = []
    for parity in (0, 1):
        i = 2 * m + parity - j
        on_grid = (i >= 0) & (i <= n + 1)
        sheared.append((np.where(on_grid, i, 0), np.where(on_grid, j, 0)))
    # Back: padded u[i, j] lives in row (i + j) // 2 of the array of parity (i + j) % 2.
    i, j = np.meshgrid(np.arange(n + 2), np.arange(n + 2), indexing="ij")
    unshear = ((i + j) % 2, (i + j) // 2, j)
    return sheared, unshear


def _shear(grid, indices):
    rows, cols = indices
    return grid[rows, cols]


def lex_sweeps(source, K: int, scale: float = 1.0):
    """K lexicographic Gauss–Seidel sweeps from u⁰ = 0 with the point update
    `u[i,j] ← (scale*source[i,j] + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4`.

    **Arguments:**

    - `source`: (n, n) array: θ for the forward problem, the residual for the adjoint.
    - `K`: number of sweeps (static).
    - `scale`: `h2` for the forward problem. It is multiplied inside the loop body, next
      to the first addition, as in `jax-lex`: the compiler may contract the two into one
      fused multiply-add (XLA's CPU backend does), and it must do the same in both.

    **Returns:** u^K as the padded (n+2)×(n+2) grid, bitwise equal to `jax-lex`'s.
    """
    n = source.shape[0]
    dtype = source.dtype
    if K == 0:  # as jax-lex's scan of length 0 (the registry asks for K >= 1)
        return jnp.zeros((n + 2, n + 2), dtype)
    (even_idx, odd_idx), (parity, row, col) = _shear_indices(n)
    padded = jnp.zeros((n + 2, n + 2), dtype).at[1:-1, 1:-1].set(source)
    src_even, src_odd = _shear(padded, even_idx), _shear(padded, odd_idx)
    # Interior cells of each sheared array (u[i, j] with 1 <= i, j <= n).
    m = np.arange(n + 2)[:, None]
    j = np.arange(n + 2)[None, :]
    interior = [
        jnp.asarray((2 * m + p - j >= 1) & (2 * m + p - j <= n) & (j >= 1) & (j <= n))
        for p in (0, 1)
    ]

    width = min(K, n)  # rows per block: the band of K diagonals, at most all of them
    block_rows = jnp.arange(width)[:, None]

    def update(target, other, src, inside, s, lag):
        # Rows [start, start+width) of `target` hold diagonals 2m+p; their neighbours
        # are rows m-1+lag and m+lag of `other` (lag 0 for even, 1 for odd targets).
        start = jnp.clip(s - K, 1, n - width + 1)
        nbr = jax.lax.dynamic_slice(other, (start - 1 + lag, 0), (width + 1, n + 2))
        old = jax.lax.dynamic_slice(target, (start, 1), (width, n))
        here = jax.lax.dynamic_slice(src, (start, 1), (width, n))
        # u[i-1,j], u[i+1,j], u[i,j-1], u[i,j+1] in the sheared arrays:
        new = (scale * here + nbr[:-1, 1:-1] + nbr[1:, 1:-1] + nbr[:-1, :-2] + nbr[1:, 2:]) / 4
        rows = start + block_rows
        active = (rows >= s - K) & (rows <= s - 1)
        active = active & jax.lax.dynamic_slice(inside, (start, 1), (width, n))
        return jax.lax.dynamic_update_slice(target, jnp.where(active, new, old), (start, 1))

    def unshear(even, odd):
        return jnp.stack([even, odd])[parity, row, col]

    def step(s, grids):
        even, odd, u = grids
        even = update(even, odd, src_even, interior[0], s, 0)  # t = 2s
        odd = update(odd, even, src_odd, interior[1], s, 1)  # t = 2s + 1
        # Unshear inside the loop, at its last step, so that u leaves the loop as a plain
        # array, as jax-lex's does: a gather after the loop is fused into the loss's sum,
        # which XLA then orders differently, and the loss is no longer bitwise jax-lex's.
        u = jax.lax.cond(s == n + K, unshear, lambda even, odd: u, even, odd)
        return even, odd, u

    zero = jnp.zeros((n + 2, n + 2), dtype)
    # Steps t = 4 .. 2n+2K, i.e. s = 2 .. n+K (at s = n+K only `even` has work left).
    return jax.lax.fori_loop(2, n + K + 1, step, (zero, zero, zero))[2]
