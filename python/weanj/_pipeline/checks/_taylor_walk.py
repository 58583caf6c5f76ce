"""The Taylor remainder test's steps, spent where they decide (docs/DESIGN.md §9.1).

Along a direction dx the remainder `r(h) = |L(x + h·dx) − L(x) − h⟨g, dx⟩|` falls as h²
when g is the gradient and as h when it is not. What decides is the few steps just above
rounding level: there a wrong gradient's linear term cannot hide behind the curvature.
The steps lie on one grid, `h_k = h0/2^k`, and each loss on it is computed once:

- **The regime, estimated.** From the first remainder (resolved: above `RESOLVED` times
  its rounding level ρ) the h² model says how many halvings bring it to `REGIME·RESOLVED·ρ`;
  the test goes there and halves from there until a remainder is at rounding level.
  It accepts when at least `RATES` consecutive halvings above rounding level each fall at
  a rate between the policy's bound and `BAND`, and the next step is at rounding level:
  a correct gradient's h², seen down to where nothing smaller could be resolved. Where
  the estimate lands too low (already at rounding level) or too high, it moves and tries
  again, `HOPS` times at most. Four or five losses per direction, where halving from h0
  took twenty and more.
- **The walk, where the estimate is not borne out.** Anything else — a rate out of the
  band (a wrong gradient, or a wrong one whose two terms cancel: `r = |h²C − hε|` dips
  towards zero once, and the halving before the dip falls faster than h²), a kink, a
  noisy loss, a NaN — and the test walks the grid from h0 step by step as it always did,
  until `AT_ROUNDING` remainders in a row stand at rounding level (reusing every loss
  already computed): its verdict is the walk's.

Before the walk, where the rounding floor was only the free one (`ε·Σ|x·∂L/∂x|`, known
from the gradient), the loss's measured rounding level is asked for (`escalate`) and the
estimate tried again with it: a loss that cancels is noisy above its own size's rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..._judge._taylor import AT_ROUNDING, RESOLVED, ROUNDING, TaylorDirection

# The regime's first step is aimed at REGIME·RESOLVED·ρ to 4·REGIME·RESOLVED·ρ: the next
# halving stays above rounding level (200ρ to 800ρ), the one after stands at it or just
# above (50ρ to 200ρ). Where it is at rounding level already, one step higher gives the
# second halving: five losses a direction, six at times (a larger aim costs one more).
REGIME = 8.0
# A halving that falls faster than this is not the h² of a correct gradient: the dip of a
# wrong gradient's cancelling terms (up to 4.9 times per halving where the dip is a few
# steps on), or third-order terms, which the walk then reads.
BAND = 2.3
RATES = 2  # consecutive halvings above rounding level, each within [rate, BAND]
HOPS = 4  # moves of the estimate before the walk


@dataclass
class Grid:
    """One direction's losses on the grid `h_k = h0/2^k` (each computed once), and the
    remainders and rounding levels they give under a rounding floor."""

    loss: Callable[[float], float]  # L(x + h·dx) as a function of h
    base: float
    slope: float  # ⟨g, dx⟩
    h0: float
    max_steps: int
    tell: Callable[[str, int], None] = lambda how, k: None  # before each loss computed
    values: dict[int, float] = field(default_factory=dict)
    how: str = ""  # what the heartbeat says of the steps now ("escalated: ..." on the walk)

    def step(self, k: int) -> float:
        return self.h0 / 2.0**k

    def value(self, k: int) -> float:
        if k not in self.values:
            self.tell(self.how, k)
            self.values[k] = float(self.loss(self.step(k)))
        return self.values[k]

    def finite(self, k: int) -> bool:
        return math.isfinite(self.value(k))

    def remainder(self, k: int) -> float:
        return abs(self.value(k) - self.base - self.step(k) * self.slope)

    def rounding(self, k: int, floor: float) -> float:
        v, hs = self.value(k), self.step(k) * self.slope
        return max(ROUNDING * max(abs(self.base), abs(v), abs(hs)), floor)

    def resolved(self, k: int, floor: float) -> bool:
        return self.remainder(k) > RESOLVED * self.rounding(k, floor)

    def direction(self, ks: list[int], floor: float, nonfinite: bool = False) -> TaylorDirection:
        return TaylorDirection(
            tuple(self.step(k) for k in ks),
            tuple(self.remainder(k) for k in ks),
            tuple(self.rounding(k, floor) for k in ks),
            nonfinite=nonfinite,
            slope=self.slope,
        )


def walk(grid: Grid, floor: float) -> TaylorDirection:
    """Halve from h0 until `AT_ROUNDING` remainders in a row are at rounding level, or
    `max_steps` (the test as it always ran; a wrong gradient's cancelling terms cross
    rounding level once, and one remainder there would end it too soon)."""
    ks: list[int] = []
    quiet = 0
    for k in range(grid.max_steps):
        if not grid.finite(k):
            return grid.direction(ks, floor, nonfinite=True)
        ks.append(k)
        quiet = quiet + 1 if not grid.resolved(k, floor) else 0
        if quiet == AT_ROUNDING:
            break
    return grid.direction(ks, floor)


def _halvings(grid: Grid, k: int, floor: float) -> int:
    """How many halvings from step k bring its remainder to `REGIME·RESOLVED·ρ` under the
    h² model (0 where it is there already)."""
    ratio = grid.remainder(k) / (REGIME * RESOLVED * grid.rounding(k, floor))
    return max(0, int(math.floor(math.log(ratio, 4.0)))) if ratio > 1 else 0


def _run_from(grid: Grid, a: int, floor: float, rate: float) -> tuple[list[int], str]:
    """Halve from `a` until a remainder is at rounding level: `(steps, how)`, `how` "ok"
    (the regime seen: at least `RATES` halvings in the band, then rounding level), "few"
    (at rounding level after fewer, or from the start: it began too low), "band" (a
    halving out of the band) or "end" (a NaN/Inf, or the last step)."""
    if not grid.finite(a):
        return [a], "end"
    if not grid.resolved(a, floor):
        return [a], "few"
    ks = [a]
    rates = 0
    for k in range(a + 1, grid.max_steps):
        if not grid.finite(k):
            return ks, "end"
        ks.append(k)
        if not grid.resolved(k, floor):
            return ks, "ok" if rates >= RATES else "few"
        if not rate <= math.log2(grid.remainder(k - 1) / grid.remainder(k)) <= BAND:
            return ks, "band"
        rates += 1
    return ks, "end"


def _last_resolved(grid: Grid, lo: int, hi: int, floor: float) -> int | None:
    """The last resolved step between `lo` (resolved) and `hi` (at rounding level), by
    bisection; None at a NaN/Inf."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if not grid.finite(mid):
            return None
        lo, hi = (mid, hi) if grid.resolved(mid, floor) else (lo, mid)
    return lo


def estimate(grid: Grid, floor: float, rate: float) -> TaylorDirection | None:
    """The direction decided from the regime estimated (module docstring), or None where
    the estimate is not borne out (then the walk decides)."""
    if not grid.finite(0) or not grid.resolved(0, floor):
        return None
    k = 0  # a resolved step above the regime
    for _ in range(HOPS):
        a = k + _halvings(grid, k, floor)
        if a >= grid.max_steps or not grid.finite(a):
            return None
        if grid.resolved(a, floor):
            if a > k and _halvings(grid, a, floor) > 1:
                k = a  # still well above the regime: estimate again from there
                continue
        else:  # too far: the regime ends between k and a
            last = _last_resolved(grid, k, a, floor)
            if last is None or last - RATES < 0:
                return None
            a = last - RATES
        run, how = _run_from(grid, a, floor, rate)
        if how == "few" and a > 0:  # at rounding level too soon: one halving higher
            run, how = _run_from(grid, a - 1, floor, rate)
        return grid.direction(sorted({0, *run}), floor) if how == "ok" else None
    return None


class Floor:
    """The rounding floor of a test's remainders: the free one first, the loss's measured
    rounding level once a direction needs it (`escalate()`, called once)."""

    def __init__(self, value: float, escalate: Callable[[], float] | None = None):
        self.value, self._escalate = float(value), escalate

    def measure(self) -> bool:
        """Ask for the measured level (once): whether it raised the floor."""
        if self._escalate is None:
            return False
        measured, self._escalate = float(self._escalate()), None
        if measured > self.value:
            self.value = measured
            return True
        return False


def one_direction(grid: Grid, floor: Floor, rate: float) -> tuple[TaylorDirection, bool]:
    """`(direction, walked)`: the regime estimated under the floor; where it is not borne
    out, estimated again under the measured floor (where that raises it), then the walk."""
    if not (math.isfinite(grid.base) and math.isfinite(grid.slope)):
        return TaylorDirection((), (), (), nonfinite=True, slope=grid.slope), False
    found = estimate(grid, floor.value, rate)
    if found is None and floor.measure():
        found = estimate(grid, floor.value, rate)
    if found is not None:
        return found, False
    grid.how = "escalated: every step walked, "
    return walk(grid, floor.value), True
