"""Comparing gradient arrays: the tolerance policy, the elementwise comparison, ULPs and
the regions where two arrays part ways.

The policy (docs/DESIGN.md, "Tolerance policy"; docs/verdicts.md, "The floors"):
variants of one family agree when `|ΔL| ≤ max(loss·|L_ref|, F_L)` and
`|Δg| ≤ max(grad·max|g_ref|, F_g)` at every element of every gradient array; a pair of
mixed dtypes is judged by the coarser one; a tolerance the example declares for the family
(`Example.tolerance`, `family_tolerance`) raises `loss` and `grad`. The floors `F` estimate
the rounding error of the computations, not a constant: `NOISE_MULTIPLE` times the larger
rounding level of the two runs (`Gradient.noise`, measured by `_pipeline._evaluate`: for
the loss, the largest of how far it moved under several random-sign one-ulp perturbations
of the inputs and ε·Σ|x_i·∂L/∂x_i|, what a backward-stable computation's rounding can
move it; for each gradient array, the median move of its entries), each scaled from its
run's dtype to the judged one (a float64 run's level times ε32/ε64 in a float32 pair).
A loss that cancels to ~1e-15 out of terms of order 1 moves by about as much, so 0.0
against -1.8e-15 agrees, while a difference of 1e-10 relative on a well-conditioned loss
still fails; a reference gradient that is all zeros is judged in absolute terms the same
way. The elements beyond the tolerance are grouped
into connected regions (any rank), so a report can say *where* two ports differ, not only
the first elements in C order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InputError
from .._model._kinds import shown


@dataclass(frozen=True)
class Tolerance:
    """Same-family agreement: `|ΔL| ≤ loss·|L|` and `|Δg| ≤ grad·max|g_ref|` elementwise;
    declared on an example (`Example(tolerance=...)`), `why` says what needs it."""

    loss: float
    grad: float
    why: str = field(default="", repr=False)

    def __post_init__(self):
        for name in ("loss", "grad"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"Tolerance {name} must be a number ≥ 0, got {value!r}")

    def describe(self) -> str:
        """`declared tolerance loss 1e-06, grad 1e-06 (why)`."""
        why = f" ({self.why})" if self.why else ""
        return f"declared tolerance loss {self.loss:g}, grad {self.grad:g}{why}"


# Why these numbers: a K-sweep iteration in float64 accumulates O(K·n) roundings of
# size 1e-16 relative to max|g|; 1e-11 leaves two orders of margin for reordered sums
# (adjoints, other AD engines) while catching any algorithmic difference (red-black vs
# lexicographic differ at 1e-3). float32 scales the same argument by its epsilon.
TOLERANCES = {
    "float64": Tolerance(loss=1e-12, grad=1e-11),
    "float32": Tolerance(loss=1e-5, grad=1e-4),
}
REAL_OF = {
    "complex128": "float64",
    "complex64": "float32",
    "float64": "float64",
    "float32": "float32",
}


def tolerance(dtype: Any) -> Tolerance:
    """The policy for a dtype (complex dtypes: that of their real parts)."""
    try:
        return TOLERANCES[REAL_OF[np.dtype(dtype).name]]
    except (KeyError, TypeError):  # one line naming what it accepts, not numpy's error
        from .._errors import InputError

        raise InputError(
            f"tolerance: dtype must be float64, float32, complex128 or complex64, got {dtype!r}"
        ) from None


def eps(dtype: Any) -> float:
    """The machine epsilon of a dtype under test (complex: of its real parts)."""
    return float(np.finfo(REAL_OF[np.dtype(dtype).name]).eps)


# A difference within this many times a run's own rounding noise is rounding: the same
# two orders of margin as the relative tolerances leave over the roundings they expect.
NOISE_MULTIPLE = 100.0


def floor_from(levels: list[tuple[float, Any]], judged: Any) -> float:
    """`NOISE_MULTIPLE` times the largest of the rounding levels `[(level, run dtype)]`,
    each scaled from its run's dtype to the `judged` one (ε_judged / ε_run)."""
    scale = eps(judged)
    return NOISE_MULTIPLE * max((float(v) * scale / eps(d) for v, d in levels), default=0.0)


def floor_of(a: Any, b: Any, key: str) -> float:
    """The floor of `key` ("loss" or a gradient array) for a pair: `NOISE_MULTIPLE` times
    the larger rounding level of its two runs, each scaled from its own dtype to the one
    that judges the pair (ε_judged / ε_run: a float64 run's level is worth 2²⁹ times as
    much in float32). The same rule in float64 and float32 (docs/verdicts.md); 0 where
    the levels are unknown (a file written before they were measured)."""
    levels = [(g.noise.get(key, 0.0), g.dtype) for g in (a, b) if g.noise]
    return max(floor_from(levels, coarser(a.dtype, b.dtype)), precision_floor(a, b, key))


# A device run under a reduced matmul precision (a TPU's one bfloat16 pass) rounds the
# operands of every product to that precision: its error is the rounding of its inputs
# (what a random-sign perturbation by the precision's unit roundoff measures, on the device,
# `precision_level`), carried through, plus that of each intermediate operand, each of the
# same size or smaller; a few times the level. Four keeps a correct port of a dense network
# over time steps (max|Δg| ≈ 2.2x its level) and catches a port that the reduced precision
# breaks (9x) or an indexing bug (600x): tests/test_devices.py.
PRECISION_MULTIPLE = 4.0


def precision_floor(a: Any, b: Any, key: str) -> float:
    """`PRECISION_MULTIPLE` times the larger precision level of the pair's runs (0 where
    neither ran under a reduced matmul precision)."""
    levels = [getattr(g, "extra", {}).get("precision_level") for g in (a, b)]
    found = [float(v.get(key, 0.0)) for v in levels if isinstance(v, dict)]
    return PRECISION_MULTIPLE * max(found, default=0.0)


def declared_between(a: Any, b: Any) -> Tolerance | None:
    """The tolerance the example declares for the pair's family (None: the default)."""
    if a.family != b.family:
        return None
    found = a.example.declared_tolerance(a.family)
    return found if isinstance(found, Tolerance) else None


def coarser(*dtypes: Any) -> str:
    """The coarser of the dtypes under test (a float32 in a pair makes it float32)."""
    reals = {REAL_OF[np.dtype(d).name] for d in dtypes}
    return "float32" if "float32" in reals else "float64"


def ulp_distance(a: Any, b: Any, dtype: Any = np.float64) -> int:
    """Representable values of `dtype` between `a` and `b` (0 when equal); for complex
    numbers the larger distance of the real and imaginary parts."""
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


# How many regions a comparison describes (the count of the others is kept), and how
# many differing elements it lists by index (the count is always exact).
MAX_REGIONS = 6
MAX_LISTED = 20


@dataclass(frozen=True)
class Region:
    """A connected set of elements beyond the tolerance (neighbours along any axis,
    diagonals included)."""

    count: int
    lo: tuple[int, ...]  # bounding box, 0-based numpy indices, inclusive
    hi: tuple[int, ...]
    worst: tuple[int, ...]  # the element of the largest |Δ| (or the first NaN/Inf)
    worst_rel: float  # |Δ| there / max|g_ref| (inf for NaN/Inf, or where max|g_ref| = 0)
    worst_abs: float | None = None  # |Δ| there (NaN for NaN/Inf; None: not given)

    @property
    def nonfinite(self) -> bool:
        """Whether the worst element is a NaN/Inf (not merely a difference from zero)."""
        if self.worst_abs is not None:
            return not np.isfinite(self.worst_abs)
        return not np.isfinite(self.worst_rel)

    def to_json(self) -> dict[str, Any]:
        finite = np.isfinite(self.worst_rel)
        return {
            "count": self.count,
            "numpy": {"lo": list(self.lo), "hi": list(self.hi), "worst": list(self.worst)},
            "julia": {
                "lo": [i + 1 for i in self.lo],
                "hi": [i + 1 for i in self.hi],
                "worst": [i + 1 for i in self.worst],
            },
            "worst_rel": float(self.worst_rel) if finite else None,
            "worst_abs": (
                None if self.nonfinite or self.worst_abs is None else float(self.worst_abs)
            ),
            "nonfinite": bool(self.nonfinite),
        }


def regions(
    outside: np.ndarray,
    severity: np.ndarray,
    limit: int = MAX_REGIONS,
    delta: np.ndarray | None = None,
) -> tuple[tuple[Region, ...], int]:
    """The connected regions of `outside` (booleans), largest first (then worst), at most
    `limit` of them, and how many there are in all. `severity` ranks elements (the
    relative |Δ|, inf at NaN/Inf); `delta`, where given, is |Δ| (NaN at NaN/Inf)."""
    if not outside.any():
        return (), 0

    def at(worst: tuple[int, ...]) -> float | None:
        return None if delta is None else float(delta[worst])

    if outside.ndim == 0:
        return (Region(1, (), (), (), float(severity), at(())),), 1
    from scipy import ndimage

    structure = ndimage.generate_binary_structure(outside.ndim, outside.ndim)
    labels, total = ndimage.label(outside, structure=structure)
    boxes = ndimage.find_objects(labels)
    counts = np.bincount(labels.ravel())
    ranked = []
    for k, box in enumerate(boxes, start=1):
        part = labels[box] == k
        sev = np.where(part, severity[box], -1.0)
        local = np.unravel_index(int(np.argmax(sev)), part.shape)
        worst = tuple(int(s.start + i) for s, i in zip(box, local, strict=True))
        lo = tuple(int(s.start) for s in box)
        hi = tuple(int(s.stop - 1) for s in box)
        ranked.append(Region(int(counts[k]), lo, hi, worst, float(severity[worst]), at(worst)))
    ranked.sort(key=lambda r: (-r.count, -min(r.worst_rel, 1e308), r.lo))
    return tuple(ranked[:limit]), int(total)


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
    loss_floor: float = 0.0  # F_L: the loss's noise floor (absolute)
    declared: Tolerance | None = None  # the example's declared tolerance, where it applied

    @property
    def reference_zero(self) -> bool:
        """The reference is all zeros (judged in absolute terms, against the noise floor)."""
        return self.reference_max == 0 and not self.nonfinite

    @property
    def tolerance(self) -> Tolerance:
        """The relative tolerance that applied: the dtype's, raised by a declared one."""
        return applied(self.dtype, self.declared)

    @property
    def floored(self) -> bool:
        """The noise floor, not the relative tolerance, bounds the gradient's |Δ|."""
        return self.grad_floor > self.tolerance.grad * self.reference_max

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
        ref = self.loss_abs / self.loss_rel if self.loss_rel else 0.0
        return self.loss_floor > self.tolerance.loss * ref

    @property
    def worst_julia(self) -> tuple[int, ...]:
        """The worst element as Julia's 1-based index (same axis order)."""
        return tuple(i + 1 for i in self.worst)


PairComparison = ArrayComparison  # the name of earlier versions


def _relative(abs_: float, ref: float) -> float | None:
    if ref != 0:
        return abs_ / ref
    return 0.0 if abs_ == 0 else None


def applied(dtype: str, declared: Tolerance | None) -> Tolerance:
    """The dtype's tolerance, raised where `declared` is larger."""
    tol = tolerance(dtype)
    if declared is None:
        return tol
    return Tolerance(max(tol.loss, declared.loss), max(tol.grad, declared.grad), declared.why)


def _numbers(value: Any, what: str) -> np.ndarray:
    """`value` as an array of real or complex numbers, or one `InputError` line (a text, a
    None, a ragged list: never a KeyError from deep inside)."""
    try:
        a = np.asarray(value)
    except Exception:
        a = None
    if a is None or a.dtype.kind not in "iufc" or isinstance(value, (str, bytes)):
        raise InputError(
            f"compare: {what} must be an array of numbers (numpy or JAX) or a weanj.Gradient, "
            f"got {shown(value)}"
        )
    return a


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
) -> ArrayComparison:
    """Compare the array `g` with `g_ref` (same shape) under the judge's rule: the
    tolerance policy with its rounding floors (docs/verdicts.md, "The floors").

    `g_ref` and `g` may be two `weanj.Gradient`s (what `weanj.load_gradient` returns, a
    check's stored arrays): their losses, rounding levels (`.noise`), dtypes and the
    example's declared tolerance then give exactly the verdict `weanj check` gives, on
    `array` (default: the first `wrt` array). For plain arrays, the floors come from
    `loss_floor`/`grad_floor` (absolute) or from the runs' rounding levels
    `noise_ref`/`noise` (`{"loss": level, "grad": level}`, as `Gradient.noise` holds them,
    scaled by the arrays' dtypes the judge's way; 0 where neither is given). `keep`
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
        )
    g_ref, g = _numbers(g_ref, "g_ref"), _numbers(g, "g")
    judged = dtype or coarser(g_ref.dtype, g.dtype)
    runs = [(n, a.dtype) for n, a in ((noise_ref, g_ref), (noise, g)) if n]
    if loss_floor is None:
        loss_floor = floor_from([(n.get("loss", 0.0), d) for n, d in runs], judged)
    if grad_floor is None:
        grad_floor = floor_from([(n.get("grad", 0.0), d) for n, d in runs], judged)
    if g_ref.shape != g.shape:
        raise ValueError(f"gradient shapes differ: {g_ref.shape} vs {g.shape}")
    tol = applied(judged, declared)
    keep = np.ones(g.shape, bool) if keep is None else np.asarray(keep, bool)
    gap = _gradient_gap(g_ref, g, keep, judged, tol.grad, float(grad_floor))
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


def _gradient_gap(
    g_ref: np.ndarray, g: np.ndarray, keep: np.ndarray, judged: str, rel: float, floor: float
) -> dict[str, Any]:
    """The gradient part of an `ArrayComparison` (the fields it names), with `nonfinite`
    and `grad_ok` (|Δ| within `rel`·max|g_ref|, or the floor) for `compare` to combine
    with the loss: where `g` departs from `g_ref` on the `keep` entries, the worst entry,
    the regions beyond the bound."""
    wide = np.complex128 if np.iscomplexobj(g) or np.iscomplexobj(g_ref) else np.float64
    finite = np.isfinite(g) & np.isfinite(g_ref)
    bad = ~finite & keep
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite & keep, np.abs(g.astype(wide) - g_ref.astype(wide)), 0.0).astype(
            np.float64
        )
    kept_ref = np.abs(g_ref[finite & keep])
    reference_max = float(np.max(kept_ref)) if kept_ref.size else 0.0
    bound = max(rel * reference_max, floor)  # the largest |Δ| that agrees
    nonfinite = bool(bad.any())
    if nonfinite:
        worst = tuple(int(i) for i in np.argwhere(bad)[0])
        max_abs, max_rel = float("nan"), float("nan")
        ulp = -1
    else:
        worst = (
            tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
            if diff.size
            else ()
        )
        max_abs = float(diff[worst]) if diff.size else 0.0
        max_rel = _relative(max_abs, reference_max)
        ulp = ulp_distance(g_ref[worst], g[worst], judged) if diff.size else 0
    outside = bad | (diff > bound)
    severity = np.where(
        bad, np.inf, diff / reference_max if reference_max > 0 else np.where(diff > 0, np.inf, 0.0)
    )
    found, total = regions(outside, severity, delta=np.where(bad, np.nan, diff))
    where = np.argwhere(outside)
    return {
        "max_abs": max_abs,
        "max_rel": max_rel,
        "worst": worst,
        "ulp": ulp,
        "differing": len(where),
        "differing_at": tuple(tuple(int(i) for i in row) for row in where[:MAX_LISTED]),
        "regions": found,
        "region_count": total,
        "reference_max": reference_max,
        "nonfinite": nonfinite,
        "grad_ok": max_abs <= bound,
    }


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
