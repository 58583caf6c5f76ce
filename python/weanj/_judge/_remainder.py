"""One direction of the Taylor remainder test: its steps, remainders and rounding levels,
and the rule that reads them (`TaylorDirection.agrees`); the test of an array is
`_taylor.TaylorResult`, made of such directions (docs/DESIGN.md §9.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

EPS = float(np.finfo(np.float64).eps)
# Rounding level of a remainder: a few hundred roundings of the loss's own size. Rates
# are taken only between remainders this far above it (`RESOLVED` times), so that
# rounding noise (about 1% of a remainder there) cannot move a rate by more than 0.02.
ROUNDING = 64 * EPS
RESOLVED = 100.0
AT_ROUNDING = 3  # consecutive steps at rounding level that end a direction's halving


def share_bound(rate: float) -> float:
    """The largest error term `t = ε·h / (C·h²)` whose halving still falls at `rate`:
    `r(h) = C·h²·(1 + t)` gives `log2((4 + 2t)/(1 + t)) = rate`, so `t = (4 − 2^rate) /
    (2^rate − 2)` (0.35 for the default 1.8): the rate's own bound, read both ways."""
    return (4.0 - 2.0**rate) / (2.0**rate - 2.0)


# A second difference that falls slower than this (h^1.5) is a kink's (h), not a smooth
# loss's curvature (h²): the two are a factor two apart per halving, this the middle.
KINK_RATE = 1.5


# --- the Taylor remainder test -----------------------------------------------------------


@dataclass(frozen=True)
class TaylorDirection:
    """One direction's sequence: steps, remainders and their rounding levels."""

    steps: tuple[float, ...]
    remainders: tuple[float, ...]
    rounding: tuple[float, ...]
    nonfinite: bool = False
    slope: float = 0.0  # ⟨g, dx⟩
    # where it fails: `(h, |L(x+h·dx) + L(x−h·dx) − 2L(x)|, its rounding level)` at its two
    # smallest resolved steps one halving apart (`_pipeline.checks._taylor_walk`)
    second: tuple[tuple[float, float, float], ...] = ()
    # both ways at its deciding step (the estimate's, `_pipeline.checks._taylor_walk`):
    # `(h, L(x+h·dx) − L(x) − h⟨g,dx⟩, L(x−h·dx) − L(x) + h⟨g,dx⟩, rounding level)`, signed:
    # their half-sum is the curvature's C·h², their half-difference the gradient's error
    # ε·h (`error_share`)
    behind: tuple[float, float, float, float] | None = None

    def error_share(self) -> float:
        """`|ε·h| / |C·h²|` at the deciding step, from both ways (0 without `behind`)."""
        if self.behind is None:
            return 0.0
        _, ahead, back, _ = self.behind
        curvature, error = abs(ahead + back), abs(back - ahead)
        return error / curvature if curvature > 0 else math.inf

    def agrees(self, rate: float) -> bool:
        """The rule of one direction: the rates at its smallest resolved steps at least
        `rate`, and, read both ways at its deciding step (`behind`), the gradient's error
        term no larger against the curvature than that rate allows there (`share_bound`),
        nor at the next, smaller step where that one would still be resolved (the walk
        would read it: the error term doubles as h halves)."""
        if not self.rates or min(self.rates[-3:]) < rate:
            return False
        if self.behind is None:
            return True
        share, bound = self.error_share(), share_bound(rate)
        if not share <= bound:
            return False
        _, ahead, back, rho = self.behind
        following = max(abs(ahead), abs(back)) * (1 + 2 * share) / (4 * (1 + share))
        return following <= RESOLVED * rho or share <= bound / 2

    @property
    def kink(self) -> bool | None:
        """Whether its second differences show a kink within its smallest steps (they fall
        as h: one-sided slopes that differ) rather than a smooth loss (as h², or at
        rounding level); None where they were not computed."""
        if len(self.second) < 2:
            return None
        (_, wide, rho_w), (_, narrow, rho_n) = self.second[-2:]
        if narrow <= RESOLVED * rho_n or wide <= RESOLVED * rho_w:
            return False  # at rounding level: nothing bends the loss at these steps
        return math.log2(wide / narrow) < KINK_RATE

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
        """`log2(r_k / r_{k+1})` over consecutive steps, one halving apart, whose
        remainders are resolved (a step the test jumped over leaves no rate)."""
        out = []
        for k in range(len(self.remainders) - 1):
            a, b = self.remainders[k], self.remainders[k + 1]
            halving = abs(self.steps[k] - 2.0 * self.steps[k + 1]) <= 1e-12 * self.steps[k]
            if halving and a > RESOLVED * self.rounding[k] and b > RESOLVED * self.rounding[k + 1]:
                out.append(math.log2(a / b))
        return tuple(out)

    @property
    def resolved(self) -> bool:
        return any(
            r > RESOLVED * rho for r, rho in zip(self.remainders, self.rounding, strict=True)
        )


def direction_json(d: TaylorDirection) -> dict[str, Any]:
    out: dict[str, Any] = {
        "steps": list(d.steps),
        "remainders": list(d.remainders),
        "rounding": list(d.rounding),
        "nonfinite": d.nonfinite,
        "slope": d.slope,
    }
    if d.second:
        out["second"] = [list(row) for row in d.second]
    if d.behind is not None:
        out["behind"] = list(d.behind)
    return out
