"""Gradient checks that hold for any kernel: the numbers behind the judge's verdicts.

- **Taylor remainder test** (`taylor`): along a direction dx, the remainder
  `r(h) = |L(x + h dx) − L(x) − h⟨g, dx⟩|` falls as h² when g is the gradient and as h
  when it is not, whatever the kernel; the step halves until r stays at rounding level.
  The observed rates are `log2(r(h)/r(h/2))`. (dolfin-adjoint / pyadjoint's
  `taylor_test`; the judge decides on the rates, `_verdict.judge_taylor`.)
- **Forward vs reverse** (`directional`): `jvp(L)(x; dx)` against `⟨g, dx⟩`, exact up
  to rounding and independent of any step.
- **Central differences** (`fd_check`): the seed notebook's check, kept as information.

`⟨g, dx⟩` is the real inner product `Re Σ conj(g)·dx`, so complex arrays (with g in
weanj's convention `∂L/∂Re z + i·∂L/∂Im z`) are checked like pairs of real arrays. Every
check keeps its directions inside the example's kink mask.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError
from .._model import Example, TaylorPolicy

EPS = float(np.finfo(np.float64).eps)
# Rounding level of a remainder: a few hundred roundings of the loss's own size. Rates
# are taken only between remainders this far above it (`RESOLVED` times), so that
# rounding noise (about 1% of a remainder there) cannot move a rate by more than 0.02.
ROUNDING = 64 * EPS
RESOLVED = 100.0
AT_ROUNDING = 3  # consecutive steps at rounding level that end a direction's halving


def inner(g: np.ndarray, dx: np.ndarray) -> float:
    """`Re Σ conj(g)·dx`: the real inner product (complex arrays as pairs of reals)."""
    return float(np.real(np.vdot(np.asarray(g), np.asarray(dx))))


def random_direction(
    rng: np.random.Generator, x: np.ndarray, mask: np.ndarray | None = None
) -> np.ndarray:
    """A standard normal direction shaped like `x` (complex for complex `x`), zero
    outside `mask`, of unit 2-norm."""
    shape = np.shape(x)
    v = rng.standard_normal(shape)
    if np.iscomplexobj(x):
        v = v + 1j * rng.standard_normal(shape)
    if mask is not None:
        v = v * mask
    norm = float(np.sqrt(np.sum(np.abs(v) ** 2)))
    return v / norm if norm > 0 else v


# --- kink masks ------------------------------------------------------------------------

_MASKS: dict[tuple, dict[str, np.ndarray]] = {}


def kink_masks(
    ex: Example, arrays: Mapping[str, np.ndarray], params: Mapping[str, Any], digest: str
) -> dict[str, np.ndarray]:
    """The example's kink mask per wrt array (True: may be perturbed; all True where it
    declares none), computed once per inputs and parameters: a mask may be costly
    (03-advection traces the T steps to find its kinks), and every check asks for it."""
    key = (ex.fd.mask, ex.wrt_names, digest, tuple(sorted(params.items())))
    if key not in _MASKS:
        given = dict(ex.fd.mask(arrays, params)) if ex.fd.mask is not None else {}
        unknown = set(given) - set(ex.wrt_names)
        if unknown:
            raise InputError(f"{ex.name}: the kink mask names arrays {sorted(unknown)} outside wrt")
        masks = {}
        for name in ex.wrt_names:
            m = np.asarray(given.get(name, np.ones(np.shape(arrays[name]), bool)), bool)
            if m.shape != np.shape(arrays[name]):
                raise InputError(
                    f"{ex.name}: the kink mask of {name} has shape "
                    f"{m.shape}, not {np.shape(arrays[name])}"
                )
            masks[name] = m
        _MASKS[key] = masks
    return {name: m.copy() for name, m in _MASKS[key].items()}


# --- the Taylor remainder test -----------------------------------------------------------


@dataclass(frozen=True)
class TaylorDirection:
    """One direction's sequence: steps, remainders and their rounding levels."""

    steps: tuple[float, ...]
    remainders: tuple[float, ...]
    rounding: tuple[float, ...]
    nonfinite: bool = False
    slope: float = 0.0  # ⟨g, dx⟩

    @property
    def sensitivity(self) -> float:
        """The smallest relative error of ⟨g, dx⟩ this direction resolves: an error ε
        adds h·ε·|⟨g, dx⟩| to the remainder, seen once it stands above rounding level
        at the first step."""
        if not self.steps or self.slope == 0:
            return math.inf
        return RESOLVED * self.rounding[0] / (self.steps[0] * abs(self.slope))

    @property
    def rates(self) -> tuple[float, ...]:
        """`log2(r_k / r_{k+1})` over consecutive steps whose remainders are resolved."""
        out = []
        for k in range(len(self.remainders) - 1):
            a, b = self.remainders[k], self.remainders[k + 1]
            if a > RESOLVED * self.rounding[k] and b > RESOLVED * self.rounding[k + 1]:
                out.append(math.log2(a / b))
        return tuple(out)

    @property
    def resolved(self) -> bool:
        return any(
            r > RESOLVED * rho for r, rho in zip(self.remainders, self.rounding, strict=True)
        )


@dataclass(frozen=True)
class TaylorResult:
    """The Taylor test of one gradient array: every direction, and what it left out."""

    array: str
    policy: TaylorPolicy
    h0: float
    directions: tuple[TaylorDirection, ...]
    left_out: int
    size: int

    @property
    def sensitivity(self) -> float:
        """The smallest relative gradient error along the directions the test resolves."""
        return min((d.sensitivity for d in self.directions), default=math.inf)

    @property
    def asymptotic(self) -> tuple[tuple[float, ...], ...]:
        """Per direction, the rates at its three smallest resolved steps."""
        return tuple(d.rates[-3:] for d in self.directions)


def taylor(
    loss: Callable[[np.ndarray], float],
    x: np.ndarray,
    g: np.ndarray,
    policy: TaylorPolicy,
    *,
    array: str = "",
    mask: np.ndarray | None = None,
) -> TaylorResult:
    """The remainders of `loss` (a function of one array, the others fixed) at `x` with
    claimed gradient `g`, along `policy.directions` seeded directions inside `mask`."""
    x = np.asarray(x)
    g = np.asarray(g)
    keep = np.ones(x.shape, bool) if mask is None else np.asarray(mask, bool)
    if not keep.any():
        return TaylorResult(array, policy, 0.0, (), int(x.size), int(x.size))
    if policy.h0 is not None:
        h0 = float(policy.h0)
    else:
        norm = float(np.sqrt(np.sum(np.abs(x[keep]) ** 2)))
        h0 = 1e-2 * (norm if norm > 0 else math.sqrt(int(keep.sum())))
    rng = np.random.default_rng(policy.seed)
    base = float(loss(x))
    directions = []
    for _ in range(policy.directions):
        dx = random_direction(rng, x, None if mask is None else keep)
        directions.append(_one_direction(loss, x, dx, inner(g, dx), base, h0, policy.max_steps))
    return TaylorResult(array, policy, h0, tuple(directions), int(x.size - keep.sum()), int(x.size))


def _one_direction(loss, x, dx, slope, base, h0, max_steps) -> TaylorDirection:
    steps, remainders, rounding = [], [], []
    h = h0
    quiet = 0  # consecutive remainders at rounding level
    if not (math.isfinite(base) and math.isfinite(slope)):
        return TaylorDirection((), (), (), nonfinite=True, slope=slope)
    for _ in range(max_steps):
        value = float(loss(x + h * dx))
        if not math.isfinite(value):
            return TaylorDirection(
                tuple(steps), tuple(remainders), tuple(rounding), nonfinite=True, slope=slope
            )
        r = abs(value - base - h * slope)
        rho = ROUNDING * max(abs(base), abs(value), abs(h * slope))
        steps.append(h)
        remainders.append(r)
        rounding.append(rho)
        # One remainder at rounding level may be a wrong gradient's two terms cancelling:
        # r = |h²C − h·ε| crosses zero once, then falls as h; only AT_ROUNDING in a row
        # mean the remainders are noise from here on.
        quiet = quiet + 1 if r <= RESOLVED * rho else 0
        if quiet == AT_ROUNDING:
            break
        h /= 2
    return TaylorDirection(tuple(steps), tuple(remainders), tuple(rounding), slope=slope)


# --- forward vs reverse --------------------------------------------------------------------


@dataclass(frozen=True)
class DirectionalResult:
    """`jvp(L)(x; dx)` by `by` against the variant's `⟨g, dx⟩`."""

    array: str
    by: str  # the variant whose forward mode was used
    forward: float
    reverse: float
    scale: float  # Σ |g_i|·|dx_i|: the size of the terms of ⟨g, dx⟩
    tolerance: float

    @property
    def error(self) -> float:
        """`|jvp − ⟨g, dx⟩| / Σ|g_i||dx_i|` (NaN/Inf where either is not finite)."""
        if not (math.isfinite(self.forward) and math.isfinite(self.reverse)):
            return math.inf
        diff = abs(self.forward - self.reverse)
        return diff / self.scale if self.scale > 0 else (0.0 if diff == 0 else math.inf)


def jvp_direction(
    ex: Example, array: str, x: np.ndarray, mask: np.ndarray | None, seed: int = 1
) -> np.ndarray:
    """The direction of the forward-vs-reverse check of `array`: seeded by the array's
    position, so that every variant of a family is checked along the same one."""
    rng = np.random.default_rng([seed, ex.wrt_names.index(array)])
    return random_direction(rng, x, mask)


# --- central differences (information; the seed notebook's call) ---------------------------


def _as_arrays(x: Any) -> dict:
    """`{name: array}` (float64, or complex128 for complex values) from an array or a
    dict of arrays (several `wrt` arrays)."""

    def widen(v):
        v = np.asarray(v)
        return v.astype(np.complex128 if np.iscomplexobj(v) else np.float64)

    if isinstance(x, Mapping):
        return {k: widen(v) for k, v in x.items()}
    return {"": widen(x)}


def _rebuild(template: Any, arrays: dict) -> Any:
    return arrays[""] if not isinstance(template, Mapping) else dict(arrays)


def fd_check(
    f: Callable[[Any], float],
    x: Any,
    g: Any,
    n: int = 10,
    h: float = 1e-2,
    seed: int = 0,
    mask: Any = None,
) -> float:
    """Largest relative error of `g` against central differences of `f` along `n` directions.

    **Arguments:**

    - `f`: scalar function of an array shaped like `x` (e.g. a loss with other inputs
      fixed), or of a dict of arrays when `x` is one (several gradient arrays).
    - `x`: the point; `g`: the claimed gradient `∇f(x)`, shaped like `x`.
    - `n`: number of random directions (unit-norm, standard normal, seeded by `seed`);
      with a dict, each direction has components in every array at once.
    - `h`: step; the central difference `(f(x+hv) - f(x-hv)) / 2h` is exact for
      quadratics, so a large `h` keeps rounding error small there; for other losses its
      truncation error is O(h²) (the Taylor test needs no step: `weanj check`).
    - `mask`: booleans shaped like `x` (a dict for a dict): only the True entries are
      perturbed, e.g. to keep central differences off a kink. None: all of them.

    **Returns:** `max_k |D_k - ⟨g, v_k⟩| / max(|⟨g, v_k⟩|, |D_k|)` (0 where both vanish).
    """
    xs, gs = _as_arrays(x), _as_arrays(g)
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
        v = {}
        for k, a in xs.items():
            d = rng.standard_normal(a.shape)
            if np.iscomplexobj(a):
                d = d + 1j * rng.standard_normal(a.shape)
            v[k] = d * masks[k]
        norm = float(np.sqrt(sum(np.sum(np.abs(d) ** 2) for d in v.values())))
        v = {k: d / norm for k, d in v.items()}
        plus = _rebuild(x, {k: xs[k] + h * v[k] for k in xs})
        minus = _rebuild(x, {k: xs[k] - h * v[k] for k in xs})
        fd = (float(f(plus)) - float(f(minus))) / (2 * h)
        ad = sum(inner(gs[k], v[k]) for k in xs)
        if not (np.isfinite(fd) and np.isfinite(ad)):
            return float("inf")
        scale = max(abs(fd), abs(ad))
        worst = max(worst, abs(fd - ad) / scale if scale > 0 else 0.0)
    return worst
