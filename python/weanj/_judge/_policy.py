"""The tolerance policy: what two runs of one family may differ by (docs/DESIGN.md,
"Tolerance policy"; docs/verdicts.md, "The floors").

Variants of one family agree when `|ΔL| ≤ max(loss·|L_ref|, F_L)` and
`|Δg_i| ≤ max(grad·max|g_ref|, F_g, F_i)` at every element of every gradient array; a pair
of mixed dtypes is judged by the coarser one; a tolerance the example declares for the
family (`Example.tolerance`, `family_tolerance`) raises `loss` and `grad`. The floors `F`
estimate the rounding error of the computations, not a constant: `NOISE_MULTIPLE` times the
larger rounding level of the two runs (`Gradient.noise`, measured by
`_pipeline.evaluation._levels`: for the loss, the largest of how far it moved under several
random-sign one-ulp perturbations of the inputs and ε·Σ|x_i·∂L/∂x_i|, what a backward-stable
computation's rounding can move it; for each gradient array, the median move of its entries;
for each entry, its own move, `Gradient.noise_entries`; for a float32 run each at least
float32's rounding of its float64 program, emulated, `_pipeline.evaluation._emulation`,
which a spread of perturbed runs misses on a long recurrence), each scaled from its run's
dtype to the judged one (a float64 run's level times ε32/ε64 in a float32 pair).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


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


def floor_of(a: Any, b: Any, key: str, *, trusted: bool = True) -> float:
    """The floor of `key` ("loss" or a gradient array) for a pair: `NOISE_MULTIPLE` times
    the larger rounding level of its two runs, each scaled from its own dtype to the one
    that judges the pair (ε_judged / ε_run: a float64 run's level is worth 2²⁹ times as
    much in float32). The same rule in float64 and float32 (docs/verdicts.md); 0 where
    the levels are unknown (a file written before they were measured). Not `trusted`
    (the loss of a pair whose gradients disagree: one of them is wrong), the smaller of
    the two: a run's loss level counts ε·Σ|x·∂L/∂x| of its own gradient
    (`_pipeline.evaluation._levels.backward_level`), which a bogus gradient inflates (to a
    floor of 22 % of the loss, issue 70), so the floor never comes from the larger."""
    judged = coarser(a.dtype, b.dtype)
    levels = [(g.noise.get(key, 0.0), g.dtype) for g in (a, b) if g.noise]
    if not trusted and levels:
        levels = [min(levels, key=lambda level: floor_from([level], judged))]
    return max(floor_from(levels, judged), precision_floor(a, b, key))


def pair_floors(a: Any, b: Any, array: str, *, rounding: bool, trusted: bool = True) -> dict:
    """The floors `compare` takes for the pair of `a` and `b` on `array` (`loss_floor`,
    `grad_floor`, `entry_floor`, and the family's `declared` tolerance); without
    `rounding`, none (the relative tolerance alone); `trusted`: as `floor_of`, the loss's."""
    return {
        "loss_floor": floor_of(a, b, "loss", trusted=trusted) if rounding else 0.0,
        "grad_floor": floor_of(a, b, array) if rounding else 0.0,
        "declared": declared_between(a, b),
        "entry_floor": entry_floor_of(a, b, array) if rounding else None,
    }


# An entry's own rounding level (how far it moved under the perturbation that measures
# the array's, `Gradient.noise_entries`) raises the floor at that entry where the move is
# at most ENTRY_SQRT_EPS·√ε of the array's largest entry (`entry_share`: 1.5e-7 in
# float64, 3.5e-3 in float32): an ill-conditioned entry (a cofactor of a nearly singular
# matrix, computed by cofactor expansion, moves by up to 4e-8 of the largest under a
# one-ulp move of the matrix, hundreds of times its array's median; tests/test_floors.py)
# is judged by the rounding it shows, while a kink's jump never raises a floor: it stays
# the kink judgement's. In 03-advection's MUSCL limiters a one-ulp move flips kinks that
# move entries by 5e-6 of the largest and more; a share of 1e-3 of the entry itself let 20
# of them through as rounding, and a share of the entry itself, however small, misses a
# small cofactor's rounding (6.5e-9 of the largest, 7e-7 of itself).
ENTRY_SQRT_EPS = 10.0


def entry_share(dtype: Any) -> float:
    """The largest move, relative to its array's largest entry, that counts as an entry's
    own rounding."""
    return ENTRY_SQRT_EPS * float(np.sqrt(eps(dtype)))


def counted_levels(move: np.ndarray, gradient: Any, dtype: Any) -> np.ndarray:
    """The moves `move` of the entries of `gradient` (a run in `dtype`) that count as
    their rounding: at most `entry_share` of the array's largest finite entry; 0 elsewhere."""
    own = np.abs(np.asarray(gradient))
    with np.errstate(invalid="ignore", over="ignore"):
        scale = float(np.max(own, initial=0.0, where=np.isfinite(own)))
        return np.where(move <= entry_share(dtype) * scale, move, 0.0)


def entry_levels(g: Any, key: str) -> np.ndarray | None:
    """A run's own level of each entry of the gradient array `key`, where it counts as
    rounding (`counted_levels`), in its own dtype's units; None where the run did not
    measure them."""
    own = np.asarray(g.gradients.get(key, ()))
    move = (getattr(g, "noise_entries", None) or {}).get(key)
    if move is None or np.shape(move) != own.shape or not own.size:
        return None
    return counted_levels(move, own, g.dtype)


def entry_floor_of(a: Any, b: Any, key: str) -> np.ndarray | None:
    """The floor of each entry of the gradient array `key` for a pair (None where neither
    run measured its entries): `NOISE_MULTIPLE` times the larger of the two runs' entry
    levels (`entry_levels`), each scaled from its run's dtype to the judged one, as
    `floor_of` scales."""
    judged = coarser(a.dtype, b.dtype)
    found = None
    for g in (a, b):
        counted = entry_levels(g, key)
        if counted is None:
            continue
        level = counted * (eps(judged) / eps(g.dtype))
        found = level if found is None else np.maximum(found, level)
    return None if found is None else NOISE_MULTIPLE * found


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
    levels = [getattr(g, "precision_level", None) for g in (a, b)]
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


def applied(dtype: str, declared: Tolerance | None) -> Tolerance:
    """The dtype's tolerance, raised where `declared` is larger."""
    tol = tolerance(dtype)
    if declared is None:
        return tol
    return Tolerance(max(tol.loss, declared.loss), max(tol.grad, declared.grad), declared.why)
