"""The Taylor remainder test's steps, spent where they decide (docs/DESIGN.md §9.1).

Along a direction dx the remainder `r(h) = |L(x + h·dx) − L(x) − h⟨g, dx⟩|` falls as h²
when g is the gradient and as h when it is not. What decides is the few steps just above
rounding level: there a wrong gradient's linear term cannot hide behind the curvature.
The steps lie on one grid, `h_k = h0/2^k`, and each loss on it is computed once.

Each direction is read **both ways**, along +dx and along −dx. The curvature term is
the same both ways and the error term changes sign: `r±(h) = |C·h² ∓ ε·h|`. Along one
way a wrong gradient's error can cancel the curvature just where the test looks (the
remainder dips towards zero, and the halvings above the dip fall faster than h²); along
the other it adds to it, and the rate falls below 2 there.

- **The last resolved step, estimated.** From the first remainder along +dx (resolved:
  above `RESOLVED` times its rounding level ρ) the h² model says how many halvings bring
  it to the last resolved step k, whose remainder lies between `RESOLVED·ρ` and
  `4·RESOLVED·ρ`. The test computes it and the step before along +dx, and step k the
  other way: four losses with the first. It accepts when the halving into k falls at a
  rate between the policy's bound and `BAND`, and, both ways at k, the gradient's error
  term (the half-difference of the two remainders, ε·h) is no larger against the
  curvature's (their half-sum, C·h²) than that rate allows, nor than it allows at the
  next step where the next would still be resolved (where the walk would read it: the
  error term doubles as h halves; `TaylorDirection.agrees`). So an error of either sign
  is seen as soon as either way would show it, where one way alone misses one sign near
  its threshold. Where the estimate lands too low (at rounding level) or too high, it
  moves and tries again, `HOPS` times at most. A further direction of the array starts
  where the first found its last resolved step (three losses).
- **A first step that resolves nothing** either way stands for a loss linear along the
  direction where it is the array's own scale (a secant check, exact for a linear loss:
  `TaylorResult`), and for an unresolved test where it is a declared, smaller `h0`:
  never a pass.
- **The walk, where the estimate is not borne out.** Anything else — a rate out of the
  band (a wrong gradient), a kink, a noisy loss, a NaN — and the test walks the grid
  step by step both ways, as it always did one way, until `AT_ROUNDING` remainders in a
  row stand at rounding level (reusing every loss already computed): its verdict is the
  walk's.
- **Kink or wrong gradient.** Where a direction fails, its second differences
  `|L(x+h·dx) + L(x−h·dx) − 2L(x)|` at its two smallest resolved steps tell the two
  apart: smooth at x they fall as h² (or stand at rounding level); across a kink, whose
  one-sided slopes differ, as h.

Before the walk, where the rounding floor was only the free one (`ε·Σ|x·∂L/∂x|`, known
from the gradient), the loss's measured rounding level is asked for (`escalate`) and the
estimate tried again with it: a loss that cancels is noisy above its own size's rounding.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..._judge._remainder import AT_ROUNDING, RESOLVED, ROUNDING, TaylorDirection

# A halving that falls faster than this is not the h² of a correct gradient: the dip of a
# wrong gradient's cancelling terms (up to 4.9 times per halving where the dip is a few
# steps on), or third-order terms, which the walk then reads.
BAND = 2.3
HOPS = 4  # moves of the estimate before the walk


@dataclass
class Grid:
    """One way's losses on the grid `h_k = h0/2^k` (each computed once), and the
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

    def reversed(self, tell: Callable[[str, int], None]) -> Grid:
        """The same direction the other way: −dx, its slope −⟨g, dx⟩."""
        return Grid(lambda h: self.loss(-h), self.base, -self.slope, self.h0, self.max_steps, tell)


def walk(grid: Grid, floor: float, start: int = 0) -> TaylorDirection:
    """Halve from step `start` (h0) until `AT_ROUNDING` remainders in a row are at rounding
    level, or `max_steps` (the test as it always ran; a wrong gradient's cancelling terms
    cross rounding level once, and one remainder there would end it too soon)."""
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
    """How many halvings from resolved step k bring its remainder, under the h² model, to
    the last resolved step (between `RESOLVED·ρ` and `4·RESOLVED·ρ`)."""
    ratio = grid.remainder(k) / (RESOLVED * grid.rounding(k, floor))
    return int(math.floor(math.log(ratio, 4.0))) if ratio >= 4.0 else 0


class Unresolved(Exception):
    """The first step resolves nothing, either way: no rate to read."""


def _last_step(plus: Grid, floor: float, start: int) -> int | None:
    """The estimated last resolved step along +dx (module docstring), or None where the
    estimate is not borne out. Raises `Unresolved` where `start` and h0 resolve nothing."""
    k = start
    if not plus.finite(k) or not plus.resolved(k, floor):
        k = 0
        if not plus.finite(0):
            return None
        if not plus.resolved(0, floor):
            raise Unresolved
    for _ in range(HOPS):
        n = _halvings(plus, k, floor)
        if n == 0:
            return k
        k += n
        if k >= plus.max_steps or not plus.finite(k):
            return None
        while not plus.resolved(k, floor):  # too far: back up, one halving at a time
            k -= 1
            if not plus.finite(k):
                return None
    return None


def estimate(
    plus: Grid, minus: Grid, floor: float, rate: float, start: int = 0
) -> TaylorDirection | None:
    """The direction decided at its estimated last resolved step k (module docstring):
    along +dx the halving into k within `[rate, BAND]`, and at k the other way too
    (`TaylorDirection.behind`), the gradient's error term within what the rate allows
    (`TaylorDirection.agrees`); None where that is not borne out (then the walk decides).
    Raises `Unresolved` where its first step resolves nothing either way."""
    try:
        k = _last_step(plus, floor, start)
    except Unresolved:
        if not minus.finite(min(start, 0)) or minus.resolved(min(start, 0), floor):
            return None  # one way resolved, the other not: read by the walk
        raise
    if k is None:
        return None
    for i in (k - 1, k):
        if not plus.finite(i) or not plus.resolved(i, floor):
            return None
    if not rate <= math.log2(plus.remainder(k - 1) / plus.remainder(k)) <= BAND:
        return None
    if not minus.finite(k) or not minus.resolved(k, floor):
        return None
    h = plus.step(k)
    ahead = plus.value(k) - plus.base - h * plus.slope
    back = minus.value(k) - minus.base - h * minus.slope
    rho = max(plus.rounding(k, floor), minus.rounding(k, floor))
    found = dataclasses.replace(
        plus.direction(sorted(plus.values), floor), behind=(h, ahead, back, rho)
    )
    return found if found.agrees(rate) else None


def second_differences(
    plus: Grid, minus: Grid, direction: TaylorDirection, floor: float
) -> TaylorDirection:
    """`direction` with its second differences `|L(x+h·dx) + L(x−h·dx) − 2L(x)|` at its
    two smallest resolved steps one halving apart (module docstring; a loss each way
    where not computed already): a kink's signature, or a smooth loss's."""
    resolved = [k for k in sorted(plus.values) if plus.finite(k) and plus.resolved(k, floor)]
    pairs = [k for k in resolved if k - 1 in resolved]
    if not pairs:
        return direction
    out = []
    for k in (pairs[-1] - 1, pairs[-1]):
        minus.how = "kink or wrong gradient: "
        ahead, behind = plus.value(k), minus.value(k)
        second = abs(ahead + behind - 2.0 * plus.base)
        rho = max(ROUNDING * max(abs(plus.base), abs(ahead), abs(behind)), floor)
        out.append((plus.step(k), second, rho))
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


def both_ways(
    plus: Grid, floor: Floor, rate: float, start: int = 0
) -> tuple[tuple[TaylorDirection, ...], bool, int]:
    """`(ways, walked, next)`: one direction read both ways (module docstring). Decided at
    its estimated last resolved step (`estimate`, from `start`): one `TaylorDirection`,
    the other way at its deciding step in its `behind`. Where that is not borne out,
    again under the measured floor (where that raises it), then the walk both ways: two,
    along +dx and −dx, a failing one with its second differences (a kink, or the
    gradient). Where the first step resolves nothing: two, each with that one step (no
    rate: linear, where it is the array's scale, else unresolved). `next`: where the
    array's next direction starts."""
    minus = plus.reversed(lambda how, k: plus.tell(how + "the other way, ", k))
    if not (math.isfinite(plus.base) and math.isfinite(plus.slope)):
        broken = TaylorDirection((), (), (), nonfinite=True, slope=plus.slope)
        return (broken,), False, start
    try:
        found = estimate(plus, minus, floor.value, rate, start)
        if found is None and floor.measure():
            found = estimate(plus, minus, floor.value, rate, start)
    except Unresolved:
        ways = tuple(g.direction(sorted(g.values), floor.value) for g in (plus, minus))
        return ways, False, start
    if found is not None:
        return (found,), False, _next_start(plus, floor.value, start)
    plus.how = minus.how = "escalated: every step walked, "
    out = []
    for grid, other in ((plus, minus), (minus, plus)):
        way = walk(grid, floor.value)
        if way.rates and min(way.rates[-3:]) < rate:
            way = second_differences(grid, other, way, floor.value)
        out.append(way)
    return tuple(out), True, _next_start(plus, floor.value, start)


def _next_start(plus: Grid, floor: float, start: int) -> int:
    """Where the array's next direction starts: where this one found its last resolved
    step along +dx (the same array and h0, a curvature of the same order: one loss there
    and its neighbour both ways, where it is borne out)."""
    resolved = [k for k in plus.values if plus.finite(k) and plus.resolved(k, floor)]
    return max(resolved) if resolved else start
