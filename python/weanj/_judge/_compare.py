"""Comparing gradient arrays: the elementwise comparison under the tolerance policy and
its floors (`_policy`), ULPs, and the regions where two arrays part ways.

Variants of one family agree when `|ΔL| ≤ max(loss·|L_ref|, F_L)` and
`|Δg_i| ≤ max(grad·max|g_ref|, F_g, F_i)` at every element of every gradient array
(`_policy`: the tolerances, the floors from the runs' rounding levels, each entry's own).
A loss that cancels to ~1e-15 out of terms of order 1 moves by about as much, so 0.0
against -1.8e-15 agrees, while a difference of 1e-10 relative on a well-conditioned loss
still fails; a reference gradient that is all zeros is judged in absolute terms the same
way. The elements beyond the tolerance are grouped into connected regions (any rank,
`_regions`), so a report can say *where* two ports differ, not only the first elements in
C order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._compare_arguments import checked_keep, numbers, ulp_arguments
from ._policy import (
    REAL_OF,
    Tolerance,
    applied,
    coarser,
    declared_between,
    entry_floor_of,
    floor_from,
    floor_of,
)
from ._regions import Region, regions


def ulp_distance(a: Any, b: Any, dtype: Any = np.float64) -> int:
    """Representable values of `dtype` between `a` and `b` (0 when equal); for complex
    numbers the larger distance of the real and imaginary parts."""
    ulp_arguments(a, b, dtype)
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        real = REAL_OF[np.dtype(dtype).name]
        return max(
            ulp_distance(np.real(a), np.real(b), real), ulp_distance(np.imag(a), np.imag(b), real)
        )
    dt = np.dtype(REAL_OF[np.dtype(dtype).name])
    itype = {4: np.int32, 8: np.int64}[dt.itemsize]
    x = np.array([a, b], dtype=dt).view(itype).astype(object)
    # Map the sign-magnitude bit patterns onto a monotone integer line.
    lo = -(1 << (8 * dt.itemsize - 1))
    x = [v if v >= 0 else lo - v for v in x]
    return abs(int(x[0]) - int(x[1]))


# How many differing elements a comparison lists by index (the count is always exact).
MAX_LISTED = 20


@dataclass(frozen=True)
class ArrayComparison:
    """How one gradient array (and the loss) differs from a reference."""

    max_abs: float  # max |g - g_ref|
    max_rel: float | None  # max |g - g_ref| / max|g_ref| (None: the reference is 0, |Δ| not)
    worst: tuple[int, ...]  # 0-based numpy index of the worst element
    ulp: int  # ULP distance at the worst element (-1 where not finite)
    loss_abs: float | None  # |L - L_ref| when both losses are known
    loss_rel: float | None  # |L - L_ref| / |L_ref|
    nonfinite: bool  # NaN/Inf in either gradient or loss
    agree: bool  # within the tolerance policy of `dtype` (False when nonfinite)
    dtype: str  # the dtype whose tolerance judged it
    differing: int = 0  # elements with |Δ| > tolerance·max|g_ref| (or NaN/Inf in either)
    differing_at: tuple[tuple[int, ...], ...] = ()  # the first MAX_LISTED of them, C order
    regions: tuple[Region, ...] = ()
    region_count: int = 0
    size: int = 0
    left_out: int = 0  # elements not compared (outside a mask)
    reference_max: float = 0.0  # max |g_ref| over the compared elements
    grad_floor: float = 0.0  # F_g: the gradient's noise floor (absolute)
    # entries beyond max(tolerance·max|g_ref|, F_g) but within their own rounding level
    # (`entry_floor_of`): an ill-conditioned entry, judged by the rounding it shows
    own_rounding: int = 0
    loss_floor: float = 0.0  # F_L: the loss's noise floor (absolute)
    declared: Tolerance | None = None  # the example's declared tolerance, where it applied
    worst_reference: float | None = None  # |g_ref| at the worst element (None: not known)

    @property
    def reference_zero(self) -> bool:
        """The reference is all zeros (judged in absolute terms, against the noise floor)."""
        return self.reference_max == 0 and not self.nonfinite

    @property
    def reference_near_zero(self) -> bool:
        """The reference at the worst element is at or below the rounding level of the
        array's scale (`eps·max|g_ref|` of the judged dtype): there a ULP count measures
        how far zero is from a rounding error, not the difference (`9.2e18 ULP`)."""
        if self.worst_reference is None or self.max_abs == 0 or self.nonfinite:
            return False
        return self.worst_reference <= float(np.finfo(self.dtype).eps) * self.reference_max

    @property
    def tolerance(self) -> Tolerance:
        """The relative tolerance that applied: the dtype's, raised by a declared one."""
        return applied(self.dtype, self.declared)

    @property
    def floored(self) -> bool:
        """The noise floor, not the relative tolerance, bounds the gradient's |Δ| (the
        array's floor, or an entry's own: `own_rounding`)."""
        return self.grad_floor > self.tolerance.grad * self.reference_max or self.own_rounding > 0

    @property
    def decided_by(self) -> dict[str, str]:
        """Which bound decided, for the loss and the gradient: "tolerance" (relative) or
        "floor" (the rounding floor, larger here)."""
        return {
            "loss": "floor" if self.loss_floored else "tolerance",
            "grad": "floor" if self.floored else "tolerance",
        }

    @property
    def loss_floored(self) -> bool:
        """The noise floor, not the relative tolerance, bounds the loss's |ΔL|."""
        if self.loss_abs is None:
            return False
        return self.loss_floor > self.tolerance.loss * self._loss_reference

    @property
    def _loss_reference(self) -> float:
        """|L_ref|, as |ΔL| / its relative difference (0 where that is not defined)."""
        return self.loss_abs / self.loss_rel if self.loss_rel else 0.0

    @property
    def worst_julia(self) -> tuple[int, ...]:
        """The worst element as Julia's 1-based index (same axis order)."""
        return tuple(i + 1 for i in self.worst)

    @property
    def beyond_tolerance(self) -> bool:
        """Some entry, or the loss, differs by more than the relative tolerance alone
        allows (finite numbers): where the rounding floors may decide, and a check gathers
        the runs' rounding levels (`_pipeline.session._pair_rule.judge_pair_of`)."""
        if self.nonfinite:
            return False
        tol = self.tolerance
        if self.max_abs > tol.grad * self.reference_max:
            return True
        return self.loss_abs is not None and self.loss_abs > tol.loss * self._loss_reference


def _relative(abs_: float, ref: float) -> float | None:
    if ref != 0:
        return abs_ / ref
    return 0.0 if abs_ == 0 else None


def compare(
    g_ref: Any,
    g: Any,
    loss_ref: float | None = None,
    loss: float | None = None,
    *,
    keep: np.ndarray | None = None,
    dtype: str | None = None,
    loss_floor: float | None = None,
    grad_floor: float | None = None,
    declared: Tolerance | None = None,
    noise_ref: dict[str, float] | None = None,
    noise: dict[str, float] | None = None,
    array: str | None = None,
    entry_floor: np.ndarray | None = None,
) -> ArrayComparison:
    """Compare the array `g` with `g_ref` (same shape) under the judge's rule: the
    tolerance policy with its rounding floors (docs/verdicts.md, "The floors").

    `g_ref` and `g` may be two `weanj.Gradient`s (what `weanj.load_gradient` returns, a
    check's stored arrays): their losses, rounding levels (`.noise`), dtypes and the
    example's declared tolerance then give exactly the verdict `weanj check` gives, on
    `array` (default: the first `wrt` array). For plain arrays, the floors come from
    `loss_floor`/`grad_floor` (absolute) or from the runs' rounding levels
    `noise_ref`/`noise` (`{"loss": level, "grad": level}`, as `Gradient.noise` holds them,
    scaled by the arrays' dtypes the judge's way; 0 where neither is given), and
    `entry_floor` (absolute, shaped like the arrays) a floor per entry where it is larger
    (two `Gradient`s: their entries' own rounding levels, `entry_floor_of`). `keep`
    (booleans shaped like the arrays) restricts the comparison to its True elements;
    `dtype` forces the policy's dtype (default: the coarser of the two arrays');
    `declared` a tolerance the example declares, which raises the dtype's. The result's
    `decided_by` says which bound decided.
    """
    if hasattr(g_ref, "gradients") and hasattr(g, "gradients"):
        return _compare_gradients(
            g_ref,
            g,
            loss_ref,
            loss,
            array=array,
            keep=keep,
            dtype=dtype,
            loss_floor=loss_floor,
            grad_floor=grad_floor,
            declared=declared,
            entry_floor=entry_floor,
        )
    return _compare_arrays(
        g_ref,
        g,
        loss_ref,
        loss,
        keep=keep,
        dtype=dtype,
        loss_floor=loss_floor,
        grad_floor=grad_floor,
        declared=declared,
        noise_ref=noise_ref,
        noise=noise,
        entry_floor=entry_floor,
    )


def _compare_arrays(
    g_ref: Any,
    g: Any,
    loss_ref: float | None,
    loss: float | None,
    *,
    keep: np.ndarray | None,
    dtype: str | None,
    loss_floor: float | None,
    grad_floor: float | None,
    declared: Tolerance | None,
    noise_ref: dict[str, float] | None,
    noise: dict[str, float] | None,
    entry_floor: np.ndarray | None,
) -> ArrayComparison:
    """`compare` of two arrays of numbers (checked here): the floors from the runs'
    rounding levels unless given, the gradient's gap and the loss's, combined."""
    g_ref, g = numbers(g_ref, "g_ref"), numbers(g, "g")
    keep = checked_keep(g.shape, dtype, keep, (loss_ref, loss), (loss_floor, grad_floor), declared)
    judged = dtype or coarser(g_ref.dtype, g.dtype)
    runs = [(n, a.dtype) for n, a in ((noise_ref, g_ref), (noise, g)) if n]
    if loss_floor is None:
        loss_floor = floor_from([(n.get("loss", 0.0), d) for n, d in runs], judged)
    if grad_floor is None:
        grad_floor = floor_from([(n.get("grad", 0.0), d) for n, d in runs], judged)
    if g_ref.shape != g.shape:
        raise ValueError(f"gradient shapes differ: {g_ref.shape} vs {g.shape}")
    tol = applied(judged, declared)
    if entry_floor is not None and np.shape(entry_floor) != g.shape:
        raise ValueError(f"entry floors of shape {np.shape(entry_floor)} for arrays {g.shape}")
    gap = _gradient_gap(g_ref, g, keep, judged, tol.grad, float(grad_floor), entry_floor)
    loss_abs, loss_rel, loss_ok, loss_finite = _loss_gap(loss_ref, loss, tol.loss, loss_floor)
    grad_ok, nonfinite = gap.pop("grad_ok"), gap.pop("nonfinite") or not loss_finite
    return ArrayComparison(
        **gap,
        loss_abs=loss_abs,
        loss_rel=loss_rel,
        nonfinite=nonfinite,
        agree=not nonfinite and grad_ok and loss_ok,
        dtype=judged,
        size=int(g.size),
        left_out=int(g.size - keep.sum()),
        grad_floor=float(grad_floor),
        loss_floor=float(loss_floor),
        declared=declared,
    )


def _compare_gradients(g_ref, g, loss_ref, loss, *, array, declared, **given) -> ArrayComparison:
    """`compare` of two `Gradient`s on `array` (default: their first): their losses, the
    floors their rounding levels give (unless given) and the example's declared tolerance
    between them (unless given)."""
    name = array or next(iter(g_ref.gradients))
    loss_floor, grad_floor = given.pop("loss_floor"), given.pop("grad_floor")
    if given.get("entry_floor") is None and grad_floor is None:
        given["entry_floor"] = entry_floor_of(g_ref, g, name)
    return compare(
        g_ref.gradients[name],
        g.gradients[name],
        g_ref.loss if loss_ref is None else loss_ref,
        g.loss if loss is None else loss,
        declared=declared if declared is not None else declared_between(g_ref, g),
        loss_floor=floor_of(g_ref, g, "loss") if loss_floor is None else loss_floor,
        grad_floor=floor_of(g_ref, g, name) if grad_floor is None else grad_floor,
        **given,
    )


def _largest(a: np.ndarray) -> float:
    """max|a| of a finite array, without an array of |a| (real: its largest and smallest)."""
    if not a.size:
        return 0.0
    if np.iscomplexobj(a):
        return float(np.max(np.abs(a)))
    return float(max(np.max(a), -np.min(a)))


def _gradient_gap(
    g_ref: np.ndarray,
    g: np.ndarray,
    keep: np.ndarray,
    judged: str,
    rel: float,
    floor: float,
    entry_floor: np.ndarray | None = None,
) -> dict[str, Any]:
    """The gradient part of an `ArrayComparison` (the fields it names), with `nonfinite`
    and `grad_ok` (|Δ| within `rel`·max|g_ref|, or the floor, or the entry's own floor)
    for `compare` to combine with the loss: where `g` departs from `g_ref` on the `keep`
    entries, the worst entry, the regions beyond the bound."""
    wide = np.complex128 if np.iscomplexobj(g) or np.iscomplexobj(g_ref) else np.float64
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(np.subtract(g, g_ref, dtype=wide)).astype(np.float64, copy=False)
    # the common case, every entry finite and kept: |Δ| finite says so in one pass
    everywhere = bool(keep.all()) and bool(np.isfinite(diff).all())
    if everywhere:
        bad, usable = np.zeros(diff.shape, bool), keep
        reference_max = _largest(g_ref)
    else:
        usable = np.isfinite(g) & np.isfinite(g_ref)
        bad = ~usable & keep
        usable &= keep
        diff[~usable] = 0.0
        own = np.abs(g_ref)
        reference_max = float(np.max(own, where=usable, initial=0.0)) if own.size else 0.0
    bound = max(rel * reference_max, floor)  # the largest |Δ| that agrees
    nonfinite = bool(bad.any())
    worst, max_abs, max_rel, ulp = _worst(g_ref, g, diff, bad, reference_max, judged)
    at_worst = float(np.abs(g_ref[worst])) if diff.size and not nonfinite else None
    beyond = diff > bound
    outside = bad | beyond
    own_rounding = 0
    if entry_floor is not None:
        within = beyond & (diff <= np.asarray(entry_floor, np.float64))
        own_rounding = int(np.count_nonzero(within))
        outside &= ~within
    found, total, where = (), 0, np.empty((0, diff.ndim), int)
    if outside.any():  # where it departs, and how far (nothing to find where it agrees)
        severity = np.where(
            bad,
            np.inf,
            diff / reference_max if reference_max > 0 else np.where(diff > 0, np.inf, 0.0),
        )
        found, total = regions(outside, severity, delta=np.where(bad, np.nan, diff))
        where = np.argwhere(outside)
    return {
        "max_abs": max_abs,
        "max_rel": max_rel,
        "worst": worst,
        "ulp": ulp,
        "worst_reference": at_worst,
        "differing": len(where),
        "differing_at": tuple(tuple(int(i) for i in row) for row in where[:MAX_LISTED]),
        "regions": found,
        "region_count": total,
        "reference_max": reference_max,
        "nonfinite": nonfinite,
        "own_rounding": own_rounding,
        "grad_ok": not bool((outside & ~bad).any()),
    }


def _worst(
    g_ref: np.ndarray,
    g: np.ndarray,
    diff: np.ndarray,
    bad: np.ndarray,
    reference_max: float,
    judged: str,
) -> tuple[tuple[int, ...], float, float | None, int]:
    """The worst entry (the first NaN/Inf where `bad` has one, else the largest |Δ|), its
    |Δ|, |Δ|/max|g_ref| and its ULP distance (NaN, NaN and -1 at a NaN/Inf)."""
    if bad.any():
        worst = tuple(int(i) for i in np.argwhere(bad)[0])
        return worst, float("nan"), float("nan"), -1
    worst = (
        tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
        if diff.size
        else ()
    )
    max_abs = float(diff[worst]) if diff.size else 0.0
    max_rel = _relative(max_abs, reference_max)
    ulp = ulp_distance(g_ref[worst], g[worst], judged) if diff.size else 0
    return worst, max_abs, max_rel, ulp


def _loss_gap(
    loss_ref: float | None, loss: float | None, rel: float, floor: float
) -> tuple[float | None, float | None, bool, bool]:
    """`|ΔL|`, `|ΔL|/|L_ref|`, whether it is within `rel`·|L_ref| or the floor, and whether
    both losses are finite; (None, None, True, True) where either loss is not given."""
    if loss_ref is None or loss is None:
        return None, None, True, True
    loss_abs = abs(float(loss) - float(loss_ref))
    finite = bool(np.isfinite(loss) and np.isfinite(loss_ref))
    loss_rel = _relative(loss_abs, abs(float(loss_ref)))
    return loss_abs, loss_rel, loss_abs <= max(rel * abs(float(loss_ref)), float(floor)), finite
