"""Comparing gradients: the tolerance policy, elementwise pair comparison, ULPs, and
finite-difference checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._errors import InputError


@dataclass(frozen=True)
class Tolerance:
    """Same-family agreement: `|ΔL| ≤ loss·|L|` and `|Δg| ≤ grad·max|g_ref|` elementwise."""

    loss: float
    grad: float


# Why these numbers: a K-sweep iteration in float64 accumulates O(K·n) roundings of
# size 1e-16 relative to max|g|; 1e-11 leaves two orders of margin for reordered sums
# (adjoints, other AD engines) while catching any algorithmic difference (red-black vs
# lexicographic differ at 1e-3). float32 scales the same argument by its epsilon.
TOLERANCES = {
    "float64": Tolerance(loss=1e-12, grad=1e-11),
    "float32": Tolerance(loss=1e-5, grad=1e-4),
}


def tolerance(dtype) -> Tolerance:
    """The policy for a dtype; a pair of mixed dtypes is judged by the coarser one."""
    return TOLERANCES[np.dtype(dtype).name]


def ulp_distance(a: float, b: float, dtype=np.float64) -> int:
    """Number of representable values of `dtype` between `a` and `b` (0 when equal)."""
    dt = np.dtype(dtype)
    itype = {4: np.int32, 8: np.int64}[dt.itemsize]
    x = np.array([a, b], dtype=dt).view(itype).astype(object)
    # Map the sign-magnitude bit patterns onto a monotone integer line.
    lo = -(1 << (8 * dt.itemsize - 1))
    x = [v if v >= 0 else lo - v for v in x]
    return abs(int(x[0]) - int(x[1]))


@dataclass(frozen=True)
class PairComparison:
    """How one gradient (and loss) differs from a reference."""

    max_abs: float  # max |g - g_ref|
    max_rel: float  # max |g - g_ref| / max |g_ref|
    worst: tuple[int, ...]  # 0-based numpy index of the worst element
    ulp: int  # ULP distance at the worst element
    loss_abs: float | None  # |L - L_ref| when both losses are known
    loss_rel: float | None  # |L - L_ref| / |L_ref|
    nonfinite: bool  # NaN/Inf in either gradient or loss
    agree: bool  # within the tolerance policy of `dtype` (False when nonfinite)
    dtype: str

    @property
    def worst_julia(self) -> tuple[int, ...]:
        """The worst element as Julia's 1-based index (same axis order, see DESIGN.md)."""
        return tuple(i + 1 for i in self.worst)


def compare(g_ref, g, loss_ref: float | None = None, loss: float | None = None) -> PairComparison:
    """Compare `g` with `g_ref` (same shape) under the tolerance policy."""
    g_ref, g = np.asarray(g_ref), np.asarray(g)
    if g_ref.shape != g.shape:
        raise ValueError(f"gradient shapes differ: {g_ref.shape} vs {g.shape}")
    coarse = np.float32 if np.float32 in (g_ref.dtype, g.dtype) else np.float64
    tol = tolerance(coarse)
    nonfinite = not (np.all(np.isfinite(g_ref)) and np.all(np.isfinite(g)))
    diff = np.abs(g.astype(np.float64) - g_ref.astype(np.float64))
    if nonfinite:
        bad = ~(np.isfinite(g) & np.isfinite(g_ref))
        worst = tuple(int(i) for i in np.argwhere(bad)[0])
        max_abs = max_rel = float("nan")
        ulp = -1
    else:
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
        max_abs = float(diff[worst]) if diff.size else 0.0
        scale = float(np.max(np.abs(g_ref))) if g_ref.size else 0.0
        max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
        ulp = ulp_distance(float(g_ref[worst]), float(g[worst]), coarse) if diff.size else 0
    loss_abs = loss_rel = None
    loss_ok = True
    if loss_ref is not None and loss is not None:
        loss_abs = abs(float(loss) - float(loss_ref))
        nonfinite = nonfinite or not (np.isfinite(loss) and np.isfinite(loss_ref))
        loss_rel = (
            loss_abs / abs(loss_ref) if loss_ref != 0 else (0.0 if loss_abs == 0 else float("inf"))
        )
        loss_ok = loss_abs <= tol.loss * abs(float(loss_ref))
    agree = (not nonfinite) and max_rel <= tol.grad and loss_ok
    return PairComparison(
        max_abs=max_abs,
        max_rel=max_rel,
        worst=worst,
        ulp=ulp,
        loss_abs=loss_abs,
        loss_rel=loss_rel,
        nonfinite=nonfinite,
        agree=agree,
        dtype=np.dtype(coarse).name,
    )


def fd_check(
    f: Callable[[np.ndarray], float],
    x,
    g,
    n: int = 10,
    h: float = 1e-2,
    seed: int = 0,
) -> float:
    """Largest relative error of `g` against central differences of `f` along `n` directions.

    **Arguments:**

    - `f`: scalar function of an array shaped like `x` (e.g. a loss with other inputs fixed).
    - `x`: the point; `g`: the claimed gradient `∇f(x)`.
    - `n`: number of random directions (unit-norm, standard normal, seeded by `seed`).
    - `h`: step; the central difference `(f(x+hv) - f(x-hv)) / 2h` is exact for quadratics,
      as the Poisson examples' losses are, so a large `h` keeps rounding error small.

    **Returns:** `max_k |D_k - g·v_k| / max(|g·v_k|, |D_k|)` (0 where both vanish).
    """
    x = np.asarray(x, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    # InputError (a ValueError): a caller's mistake, reported in one line by the CLI.
    if g.shape != x.shape:
        raise InputError(f"gradient shape {g.shape} differs from x shape {x.shape}")
    if n < 1 or not h > 0:
        raise InputError("fd_check needs n >= 1 directions and a step h > 0")
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        v = rng.standard_normal(x.shape)
        v /= np.linalg.norm(v)
        fd = (float(f(x + h * v)) - float(f(x - h * v))) / (2 * h)
        ad = float(np.vdot(g, v))
        if not (np.isfinite(fd) and np.isfinite(ad)):
            return float("inf")
        scale = max(abs(fd), abs(ad))
        worst = max(worst, abs(fd - ad) / scale if scale > 0 else 0.0)
    return worst
