"""The Poisson point update as a kernex kernel (the optional backend `weanj[kernex]`).

kernex applies a kernel to every window of an array: `kmap` to all windows at once
(`jax.vmap`), `kscan` to one window after another in row-major order, writing each
result back in place before the next window is read (`jax.lax.scan`). Its kernels see
only their window, and θ varies per point, so the kernel reads the *stacked grid*
`(u, θ)`, shape (2, n+2, n+2), through (2, 3, 3) windows: channel `c` is u and `c+1` is
θ, padded like u. The axes are named (kernex's `named_axis`, relative indices), so one
kernel, written with `i` and `j`, serves both layouts: `kmap` keeps `i` on the first grid
axis; `kscan` gets the transposed grid (`j` first), so that its row-major order is the
Julia loop's `j` outer, `i` inner.

kernex's interface objects resolve their shape (and any function mesh) on the first
array they see, so `new_interior` builds a fresh one at every trace, i.e. per shape.
"""

from __future__ import annotations

from collections.abc import Sequence


def point_update(x, h2):
    """The point update on one window `x` of the stacked grid.

    **Arguments:**

    - `x`: kernex's named, relative view: `x["c", "i-1", "j"]` is u[i-1,j] and
      `x["c+1", "i", "j"]` is θ[i,j].
    - `h2`: `1/(n+1)^2`.

    **Returns:** `(h2*θ[i,j] + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4`, the additions
    in docs/DESIGN.md's order. (Whether XLA then contracts `h2*θ + u[i-1,j]` into a fused
    multiply-add is its choice: on CPU it does for these gathered windows and for jax-lex's
    scans, not for jax-jacobi's slices; see docs/gallery/gauss_seidel.md, "kernex".)
    """
    return (
        h2 * x["c+1", "i", "j"]
        + x["c", "i-1", "j"]
        + x["c", "i+1", "j"]
        + x["c", "i", "j-1"]
        + x["c", "i", "j+1"]
    ) / 4


def new_interior(u, theta_padded, h2, *, transform: str, axes: Sequence[str]):
    """The point update applied to every interior point of `u` by kernex.

    **Arguments:**

    - `u`, `theta_padded`: (n+2)×(n+2) grids of the same layout (θ padded with zeros).
    - `h2`: `1/(n+1)^2`.
    - `transform`: `"kmap"` (every point from the old `u`: a Jacobi iteration) or
      `"kscan"` (in place, row-major: a lexicographic Gauss–Seidel sweep).
    - `axes`: the names of `u`'s two axes, `("i", "j")` or `("j", "i")` for a transposed
      grid.

    **Returns:** the (n, n) new interior, in `u`'s layout.
    """
    import jax.numpy as jnp
    import kernex

    window = getattr(kernex, transform)(
        kernel_size=(2, 3, 3),
        padding="valid",
        relative=True,
        named_axis={0: "c", 1: axes[0], 2: axes[1]},
    )
    # 'valid' windows over the 2 channels: one output channel, the interior points.
    return window(point_update)(jnp.stack([u, theta_padded]), h2)[0]
