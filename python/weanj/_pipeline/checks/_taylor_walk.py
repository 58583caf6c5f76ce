"""The Taylor remainder test's steps, spent where they decide (docs/DESIGN.md §9.1).

Along a direction dx the remainder `r(h) = |L(x + h·dx) − L(x) − h⟨g, dx⟩|` falls as h²
when g is the gradient and as h when it is not. What decides is the few steps just above
rounding level: there a wrong gradient's linear term cannot hide behind the curvature.
The steps lie on one grid, `h_k = h0/2^k`, and each loss on it is computed once:

- **The regime, estimated.** From the first remainder (resolved: above `RESOLVED` times
  its rounding level ρ) the h² model says how many halvings bring it to
  `REGIME·RESOLVED·ρ`; the test goes there and halves from there until a remainder is
  at rounding level. It accepts when at least `RATES` consecutive halvings above
  rounding level each fall at a rate between the policy's bound and `BAND`, and the next
  step is at rounding level: a correct gradient's h², seen down to where nothing
  smaller could be resolved (where a wrong gradient's linear term is largest against
  the curvature). Where the estimate lands too low (already at rounding level) or too
  high, it moves and tries again, `HOPS` times at most. Five losses per direction (four
  for a further direction of the same array, which starts two halvings above where the
  first found its last resolved step), where halving from h0 took twenty and more.
- **A larger step where the first resolves nothing.** Where the first step's remainder
  is at rounding level (a loss nearly linear at that scale, or an `h0` declared too
  small), the test tries `2**TOP·h0` and goes down from there. A direction that resolves
  nothing even there has no rate: the loss is linear along it where its steps reached
  the array's own scale (a secant check, exact for a linear loss, `TaylorResult`), and
  the test is *unresolved* where they did not: never a pass.
- **The walk, where the estimate is not borne out.** Anything else — a rate out of the
  band (a wrong gradient, or a wrong one whose two terms cancel: `r = |h²C − hε|` dips
  towards zero once, and the halving before the dip falls faster than h²), a kink, a
  noisy loss, a NaN — and the test walks the grid step by step as it always did, until
  `AT_ROUNDING` remainders in a row stand at rounding level (reusing every loss already
  computed): its verdict is the walk's.
- **Kink or wrong gradient.** Where a direction fails, its second differences at its two
  smallest resolved steps (two losses at −h) tell the two apart: smooth at x they fall
  as h² (or stand at rounding level); across a kink, whose one-sided slopes differ, as h.

Before the walk, where the rounding floor was only the free one (`ε·Σ|x·∂L/∂x|`, known
from the gradient), the loss's measured rounding level is asked for (`escalate`) and the
estimate tried again with it: a loss that cancels is noisy above its own size's rounding.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..._judge._taylor import AT_ROUNDING, RESOLVED, ROUNDING, TaylorDirection

# A halving that falls faster than this is not the h² of a correct gradient: the dip of a
# wrong gradient's cancelling terms (up to 4.9 times per halving where the dip is a few
# steps on), or third-order terms, which the walk then reads.
BAND = 2.3
RATES = 2  # consecutive halvings above rounding level, each within [rate, BAND]
HOPS = 4  # moves of the estimate before the walk
# The regime's first step is aimed at REGIME·RESOLVED·ρ to 4·REGIME·RESOLVED·ρ: the next
# halving stays above rounding level (200ρ to 800ρ), the one after stands at it or just
# above (50ρ to 200ρ). Where it is at rounding level already, one step higher gives the
# second halving: five losses a direction, six at times (a larger aim costs one more).
REGIME = 8.0
# Where the first step resolves nothing: the step 2**TOP times larger (64·h0: a remainder
# 4096 times larger under h², 64 times under a wrong gradient's h)
TOP = 6


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


def walk(grid: Grid, floor: float, start: int = 0) -> TaylorDirection:
    """Halve from step `start` (h0, or the largest step tried above it) until
    `AT_ROUNDING` remainders in a row are at rounding level, or `max_steps` (the test as
    it always ran; a wrong gradient's cancelling terms cross rounding level once, and one
    remainder there would end it too soon)."""
    ks: list[int] = []
    quiet = 0
    for k in range(start, grid.max_steps):
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


class Unresolved(Exception):
    """Nothing resolved from the first step up to `2**TOP` times it: no rate to read."""


def _first_resolved(grid: Grid, floor: float, start: int) -> int | None:
    """A resolved step to estimate from: `start` (h0's index 0, or a further direction's
    guess), else h0, else `2**TOP·h0`; None at a NaN/Inf. Raises `Unresolved` where
    none of them resolves anything."""
    for k in dict.fromkeys((start, min(start, 0), -TOP)):
        if not grid.finite(k):
            return None
        if grid.resolved(k, floor):
            return k
    raise Unresolved


def estimate(grid: Grid, floor: float, rate: float, start: int = 0) -> TaylorDirection | None:
    """The direction decided from the regime estimated (module docstring), or None where
    the estimate is not borne out (then the walk decides). `start`: the step to estimate
    from first (0, h0; a further direction of the array: two halvings above where the
    previous one found its last resolved step)."""
    top = _first_resolved(grid, floor, start)
    if top is None:
        return None
    k = top  # a resolved step above the regime
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
            if last is None:
                return None
            a = last - RATES
        run, how = _run_from(grid, a, floor, rate)
        if how == "few":  # at rounding level too soon: one halving higher
            run, how = _run_from(grid, a - 1, floor, rate)
        if how != "ok":
            return None
        probes = [i for i in grid.values if i < top]  # the larger steps tried, unresolved
        return grid.direction(sorted({*probes, top, *run}), floor)
    return None


def second_differences(grid: Grid, direction: TaylorDirection, floor: float) -> TaylorDirection:
    """`direction` with the second difference `|L(x+h·dx) + L(x−h·dx) − 2L(x)|` at its two
    smallest resolved steps one halving apart (two losses, at −h): where a gradient fails
    the test, what tells a kink from a wrong gradient. A loss smooth at x has a second
    difference that falls as h² (or stands at rounding level); across a kink, whose
    one-sided slopes differ by σ, it is about σ·h, falling as h (`TaylorDirection.kink`)."""
    resolved = [
        k for k in sorted(grid.values) if grid.finite(k) and grid.resolved(k, floor)
    ]
    pairs = [k for k in resolved if k - 1 in resolved]
    if not pairs:
        return direction
    out = []
    for k in (pairs[-1] - 1, pairs[-1]):
        h = grid.step(k)
        grid.tell("kink or wrong gradient: ", k)
        minus = float(grid.loss(-h))
        second = abs(grid.value(k) + minus - 2.0 * grid.base)
        rho = max(ROUNDING * max(abs(grid.base), abs(minus), abs(grid.value(k))), floor)
        out.append((h, second, rho))
    return dataclasses.replace(direction, second=tuple(out))


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


def one_direction(
    grid: Grid, floor: Floor, rate: float, start: int = 0
) -> tuple[TaylorDirection, bool, int]:
    """`(direction, walked, next)`: decided at its last resolved step (`estimate`, from
    `start`); where that is not borne out, again under the measured floor (where that
    raises it), then the walk. Where it fails, its second differences say whether a kink
    or the gradient is to blame. `last`: the index of its last resolved step (where the
    array's next direction starts). A direction that resolves nothing is returned as
    computed (no rate: the test is unresolved)."""
    if not (math.isfinite(grid.base) and math.isfinite(grid.slope)):
        return TaylorDirection((), (), (), nonfinite=True, slope=grid.slope), False, start
    try:
        found = estimate(grid, floor.value, rate, start)
        if found is None and floor.measure():
            found = estimate(grid, floor.value, rate, start)
    except Unresolved:
        return grid.direction(sorted(grid.values), floor.value), False, start
    walked = found is None
    if walked:
        grid.how = "escalated: every step walked, "
        found = walk(grid, floor.value, min(min(grid.values, default=0), 0))
    if found.rates and min(found.rates[-3:]) < rate:
        found = second_differences(grid, found, floor.value)
    return found, walked, _next_start(grid, floor.value)


def _next_start(grid: Grid, floor: float) -> int:
    """Where the array's next direction starts: two halvings above this one's last
    resolved step (the same array and h0, a curvature of the same order: its first
    remainder then about `REGIME·RESOLVED·ρ`, where the regime is read from: four losses,
    not five); where nothing resolved, at the largest step tried (one loss to see it
    linear)."""
    resolved = [k for k in grid.values if grid.finite(k) and grid.resolved(k, floor)]
    return max(resolved) - 2 if resolved else min(grid.values, default=0)
