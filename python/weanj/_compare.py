"""Comparing gradients: the tolerance policy, elementwise pair comparison, ULPs, and
finite-difference checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

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


# How many differing elements a comparison lists by index (the count is always exact).
MAX_LISTED = 20


@dataclass(frozen=True)
class PairComparison:
    """How one gradient array (and the loss) differs from a reference."""

    max_abs: float  # max |g - g_ref|
    max_rel: float  # max |g - g_ref| / max |g_ref|
    worst: tuple[int, ...]  # 0-based numpy index of the worst element
    ulp: int  # ULP distance at the worst element
    loss_abs: float | None  # |L - L_ref| when both losses are known
    loss_rel: float | None  # |L - L_ref| / |L_ref|
    nonfinite: bool  # NaN/Inf in either gradient or loss
    agree: bool  # within the tolerance policy of `dtype` (False when nonfinite)
    dtype: str
    differing: int = 0  # elements with |Δ| > tolerance·max|g_ref| (or NaN/Inf in either)
    differing_at: tuple[tuple[int, ...], ...] = ()  # the first MAX_LISTED of them, C order

    @property
    def worst_julia(self) -> tuple[int, ...]:
        """The worst element as Julia's 1-based index (same axis order, see DESIGN.md)."""
        return tuple(i + 1 for i in self.worst)


def compare(g_ref, g, loss_ref: float | None = None, loss: float | None = None) -> PairComparison:
    """Compare the array `g` with `g_ref` (same shape) under the tolerance policy."""
    g_ref, g = np.asarray(g_ref), np.asarray(g)
    if g_ref.shape != g.shape:
        raise ValueError(f"gradient shapes differ: {g_ref.shape} vs {g.shape}")
    coarse = np.float32 if np.float32 in (g_ref.dtype, g.dtype) else np.float64
    tol = tolerance(coarse)
    finite = np.isfinite(g) & np.isfinite(g_ref)
    nonfinite = not bool(np.all(finite))
    diff = np.abs(g.astype(np.float64) - g_ref.astype(np.float64))
    scale = float(np.max(np.abs(g_ref[finite]))) if finite.any() else 0.0
    if nonfinite:
        worst = tuple(int(i) for i in np.argwhere(~finite)[0])
        max_abs = max_rel = float("nan")
        ulp = -1
        outside = ~finite
    else:
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
        max_abs = float(diff[worst]) if diff.size else 0.0
        max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
        ulp = ulp_distance(float(g_ref[worst]), float(g[worst]), coarse) if diff.size else 0
        outside = diff > tol.grad * scale
    where = np.argwhere(outside)
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
        differing=len(where),
        differing_at=tuple(tuple(int(i) for i in row) for row in where[:MAX_LISTED]),
    )


def _as_arrays(x, what: str) -> dict:
    """`{name: float64 array}` from an array or a dict of arrays (several `wrt` arrays)."""
    if isinstance(x, Mapping):
        return {k: np.asarray(v, dtype=np.float64) for k, v in x.items()}
    return {"": np.asarray(x, dtype=np.float64)}


def _rebuild(template, arrays: dict):
    return arrays[""] if not isinstance(template, Mapping) else dict(arrays)


def fd_check(
    f: Callable[[Any], float],
    x,
    g,
    n: int = 10,
    h: float = 1e-2,
    seed: int = 0,
    mask=None,
) -> float:
    """Largest relative error of `g` against central differences of `f` along `n` directions.

    **Arguments:**

    - `f`: scalar function of an array shaped like `x` (e.g. a loss with other inputs
      fixed), or of a dict of arrays when `x` is one (several gradient arrays).
    - `x`: the point; `g`: the claimed gradient `∇f(x)`, shaped like `x`.
    - `n`: number of random directions (unit-norm, standard normal, seeded by `seed`);
      with a dict, each direction has components in every array at once.
    - `h`: step; the central difference `(f(x+hv) - f(x-hv)) / 2h` is exact for quadratics,
      as the Poisson examples' losses are, so a large `h` keeps rounding error small.
    - `mask`: booleans shaped like `x` (a dict for a dict): only the True entries are
      perturbed, e.g. to keep central differences off a kink. None: all of them.

    **Returns:** `max_k |D_k - g·v_k| / max(|g·v_k|, |D_k|)` (0 where both vanish).
    """
    xs, gs = _as_arrays(x, "x"), _as_arrays(g, "g")
    # InputError (a ValueError): a caller's mistake, reported in one line by the CLI.
    if set(gs) != set(xs):
        raise InputError(f"gradient arrays {sorted(gs)} differ from x's {sorted(xs)}")
    for k in xs:
        if gs[k].shape != xs[k].shape:
            label = f"{k}: " if k else ""
            raise InputError(
                f"{label}gradient shape {gs[k].shape} differs from x shape {xs[k].shape}"
            )
    if n < 1 or not h > 0:
        raise InputError("fd_check needs n >= 1 directions and a step h > 0")
    masks = {k: np.ones(a.shape, bool) for k, a in xs.items()}
    if mask is not None:
        given = mask if isinstance(mask, Mapping) else {"": mask}
        for k, m in given.items():
            if k not in xs or np.shape(m) != xs[k].shape:
                raise InputError(f"fd_check: mask {k!r} does not match x")
            masks[k] = np.asarray(m, bool)
    if not any(m.any() for m in masks.values()):
        raise InputError("fd_check: the mask leaves no entry to perturb")
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        v = {k: rng.standard_normal(a.shape) * masks[k] for k, a in xs.items()}
        norm = float(np.sqrt(sum(np.sum(d**2) for d in v.values())))
        v = {k: d / norm for k, d in v.items()}
        plus = _rebuild(x, {k: xs[k] + h * v[k] for k in xs})
        minus = _rebuild(x, {k: xs[k] - h * v[k] for k in xs})
        fd = (float(f(plus)) - float(f(minus))) / (2 * h)
        ad = float(sum(np.vdot(gs[k], v[k]) for k in xs))
        if not (np.isfinite(fd) and np.isfinite(ad)):
            return float("inf")
        scale = max(abs(fd), abs(ad))
        worst = max(worst, abs(fd - ad) / scale if scale > 0 else 0.0)
    return worst
