"""The numbers of the Taylor remainder test, which holds for any kernel (docs/DESIGN.md,
"Gradient checks"), and the rule that reads them; running the losses is the execution
layer's (`_pipeline.checks._check_taylor`). The forward-vs-reverse check is `_jvp`'s.

- **Taylor remainder test**: along a direction dx, the remainder
  `r(h) = |L(x + h dx) − L(x) − h⟨g, dx⟩|` falls as h² when g is the gradient and as h
  when it is not, whatever the kernel; the step halves until r stays at rounding level.
  The observed rates are `log2(r(h)/r(h/2))` (dolfin-adjoint / pyadjoint's `taylor_test`).

Each result type keeps the protocol of `_checks` (its verdict, its record, its text, its
cell, its JSON) and is registered there by name, so no view branches on a check.

One direction's remainders and their rule are `_remainder`'s; the directions, the inner
product and the kink masks every check shares are `_directions`'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._model import TaylorPolicy
from .._model._verdicts import Verdict
from ._checks import check_result
from ._remainder import RESOLVED, TaylorDirection, direction_json


@check_result("taylor")
@dataclass(frozen=True)
class TaylorResult:
    """The Taylor test of one gradient array: every direction, and what it left out. Each
    array is tested on its own directions (no other array moves), so no other array's
    curvature enters its remainders."""

    array: str
    policy: TaylorPolicy
    h0: float
    directions: tuple[TaylorDirection, ...]
    left_out: int
    size: int
    # whether a direction was walked step by step (the estimate not borne out)
    walked: bool = False
    # the array's own scale, `1e-2·‖x‖` (the default first step): a direction whose steps
    # reached it with every remainder at rounding level shows a loss linear along it
    scale: float = 0.0

    @property
    def sensitivity(self) -> float:
        """The smallest relative gradient error along the directions the test resolves."""
        return min((d.sensitivity for d in self.directions), default=math.inf)

    @property
    def asymptotic(self) -> tuple[tuple[float, ...], ...]:
        """Per direction, the rates at its three smallest resolved steps."""
        return tuple(d.rates[-3:] for d in self.directions)

    @property
    def rates(self) -> tuple[tuple[float, ...], ...]:
        """Per direction, every rate between resolved remainders (`asymptotic`: the last)."""
        return tuple(d.rates for d in self.directions)

    @property
    def failing(self) -> tuple[TaylorDirection, ...]:
        """The directions whose rates at the smallest resolved steps fall below the bound."""
        return tuple(d for d in self.directions if d.rates and not d.agrees(self.policy.rate))

    def _linear(self, d: TaylorDirection) -> bool:
        """A direction with no rate whose steps reached the array's own scale: every
        remainder at rounding level there, the loss is linear along it, and its slope
        agrees with the gradient's to the direction's sensitivity (a secant check, exact
        for a linear loss)."""
        scale = self.scale or self.h0
        return not d.rates and bool(d.steps) and max(d.steps) >= scale * (1 - 1e-9)

    @property
    def linear(self) -> bool:
        """Some direction showed a loss linear along it (`_linear`)."""
        return any(self._linear(d) for d in self.directions)

    @property
    def unresolved(self) -> bool:
        """No direction fails, and one resolves no rate without reaching the array's own
        scale: every remainder it reached stood at rounding level at steps too small to
        show a gradient error (a first step declared too small, a loss whose rounding
        hides its curvature): the gradient was not tested there."""
        return not self.failing and any(
            not d.rates and not self._linear(d) for d in self.directions
        )

    @property
    def zero(self) -> bool:
        """The claimed gradient is zero along every direction (`⟨g, dx⟩ = 0`)."""
        return bool(self.directions) and all(d.slope == 0 for d in self.directions)

    @property
    def kink(self) -> bool:
        """A failing direction whose second differences fall as h: the loss has a kink
        within its smallest steps (not a wrong gradient of a smooth loss)."""
        return any(d.kink for d in self.failing)

    @property
    def passes(self) -> bool:
        """The rule (docs/DESIGN.md, "The Taylor remainder test"): along every direction,
        the rates at the smallest resolved steps are at least the policy's (about 2). A
        direction with a NaN/Inf, a direction that resolves no rate (`unresolved`), or a
        test with no direction, does not pass."""
        if not self.directions or any(d.nonfinite for d in self.directions):
            return False
        return all(
            d.agrees(self.policy.rate) if d.rates else self._linear(d) for d in self.directions
        )

    def to_json(self) -> dict[str, Any]:
        """The numbers, as an evaluation record keeps them (`from_json` reads them back)."""
        p = self.policy
        return {
            "array": self.array,
            "policy": {
                "h0": p.h0,
                "directions": p.directions,
                "rate": p.rate,
                "max_steps": p.max_steps,
                "seed": p.seed,
            },
            "h0": self.h0,
            "left_out": self.left_out,
            "size": self.size,
            "walked": self.walked,
            "scale": self.scale,
            "directions": [direction_json(d) for d in self.directions],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaylorResult:
        directions = tuple(
            TaylorDirection(
                tuple(map(float, d["steps"])),
                tuple(map(float, d["remainders"])),
                tuple(map(float, d["rounding"])),
                bool(d["nonfinite"]),
                float(d["slope"]),
                tuple(tuple(map(float, row)) for row in d.get("second", ())),
                None if d.get("behind") is None else tuple(map(float, d["behind"])),
            )
            for d in data["directions"]
        )
        return cls(
            str(data["array"]),
            TaylorPolicy(**data["policy"]),
            float(data["h0"]),
            directions,
            int(data["left_out"]),
            int(data["size"]),
            bool(data["walked"]),
            float(data.get("scale", 0.0)),
        )

    # --- its verdict and its views (the protocol of `_checks`) ---------------------------

    def judge(self) -> tuple[Verdict, str]:
        """ok when it passes (`passes`); FAIL with the rates (and whether the loss bends
        there: a kink or a wrong gradient) otherwise, or naming a gradient of zero where
        the loss moves; skipped where it resolved nothing (`unresolved`, never a pass) or
        where the kink mask leaves nothing to perturb; NaN/Inf where a loss along a
        direction is."""
        if not self.directions:
            return Verdict.SKIPPED, f"the kink mask leaves no entry of {self.array} to perturb"
        if any(d.nonfinite for d in self.directions):
            return Verdict.NONFINITE, "a loss along a direction is NaN/Inf"
        if self.zero and self.failing:  # (a zero gradient at a minimum passes: h²)
            h, r = _largest_resolved(self.failing[0])
            return Verdict.FAIL, (
                f"the gradient of {self.array} is zero but the loss moves by {r:.1e} at "
                f"h = {h:.1e} along the test's direction"
            )
        if self.failing:
            d = self.failing[0]
            rates = d.rates[-3:]
            if min(rates) >= self.policy.rate:  # its rates are fine: both ways say otherwise
                return Verdict.FAIL, (
                    f"read both ways at h = {d.behind[0]:.1e}, the gradient's error term is "
                    f"{d.error_share():.2f} of the curvature's, more than rate "
                    f"{self.policy.rate:g} allows: {self._why_failing()}"
                )
            return Verdict.FAIL, (
                f"remainders fall with rate(s) {', '.join(f'{r:.2f}' for r in rates)} at the "
                f"smallest steps, below {self.policy.rate:g}: {self._why_failing()}"
            )
        if self.unresolved:
            return Verdict.SKIPPED, self._why_unresolved()
        if self.linear:
            reached = max(max(d.steps) for d in self.directions if self._linear(d))
            return Verdict.OK, (
                f"every remainder up to h = {reached:.1e} is at rounding level: the loss is "
                f"linear along the directions, and a relative gradient error above "
                f"{self.sensitivity:.0e} would have shown"
            )
        return Verdict.OK, ""

    def _why_failing(self) -> str:
        d = self.failing[0]
        if d.kink:
            (h, second, _), *_ = d.second[-1:]
            return (
                f"the loss has a kink within {h:.1e} of the inputs along the test's direction "
                f"(its second difference falls as h, {second:.1e} at h = {h:.1e}: one-sided "
                "slopes that differ), which the steps cross"
            )
        if d.kink is False:
            return (
                f"the gradient of {self.array} is not the loss's derivative (the loss is "
                "smooth at these steps: its second difference falls as h² or stands at "
                "rounding level; a correct gradient gives 2)"
            )
        return f"the gradient of {self.array} is not the loss's derivative (a correct one gives 2)"

    def _why_unresolved(self) -> str:
        d = next(d for d in self.directions if not d.rates)
        if not d.steps:
            return f"unresolved: no step of {self.array} was computed"
        reached = f"h = {min(d.steps):.1e} to {max(d.steps):.1e}"
        if self.zero:
            return (
                f"unresolved: the gradient of {self.array} is zero and the loss does not move "
                f"beyond rounding level from {reached} (a loss that does not depend on it)"
            )
        return (
            f"unresolved: every remainder from {reached} stands at rounding level (about "
            f"{d.rounding[0]:.1e}), steps below the array's own scale "
            f"({self.scale or self.h0:.1e}): too small to show a gradient error above "
            f"{d.sensitivity:.0e}; the gradient of {self.array} was not tested (declare a "
            "larger `TaylorPolicy(h0=...)`)"
        )

    def summary(self, reason: str) -> str:
        """The rates at the smallest steps, the first step and what the test resolves."""
        if not self.directions:
            return reason
        rates = ["/".join(f"{r:.2f}" for r in rates) or "—" for rates in self.asymptotic]
        text = (
            f"rates at the smallest steps {'; '.join(rates)} (h0 {self.h0:.1e}, bound "
            f"{self.policy.rate:g}; resolves relative errors from {self.sensitivity:.0e})"
        )
        return f"{text}: {reason}" if reason else text

    @classmethod
    def measure(cls, results) -> str:
        """The smallest rate over the arrays; `lin.` where no remainder was resolved."""
        rates = [r for t in results for rs in t.asymptotic for r in rs]
        return f"{min(rates):.2f}" if rates else "lin."

    def view_json(self) -> dict[str, Any]:
        return {
            "taylor": {
                "h0": self.h0,
                "rate_bound": self.policy.rate,
                "left_out": self.left_out,
                "walked": self.walked,
                "directions": [
                    {
                        "steps": list(d.steps),
                        "remainders": list(d.remainders),
                        "rounding": list(d.rounding),
                        "rates": list(d.rates),
                    }
                    for d in self.directions
                ],
            }
        }

    def plot(self, ax: Any, subject: str) -> tuple[str, str]:
        """The remainders against the step, log-log, with slope 2 for scale and the
        rounding level dotted."""
        for k, d in enumerate(self.directions):
            steps, rem = np.asarray(d.steps), np.asarray(d.remainders)
            if steps.size == 0:
                continue
            good = rem > 0
            ax.loglog(steps[good], rem[good], "o-", markersize=3, label=f"direction {k + 1}")
            ax.loglog(steps, d.rounding, ":", color="grey", linewidth=1)
            if good.any():
                h0, r0 = steps[good][0], rem[good][0]
                ax.loglog(
                    steps,
                    r0 * (steps / h0) ** 2,
                    "--",
                    color="black",
                    linewidth=0.8,
                    label="slope 2 (a correct gradient)" if k == 0 else None,
                )
        ax.set(xlabel="step h", ylabel="|L(x+h·dx) − L(x) − h⟨g, dx⟩|")
        return "Taylor remainders (dotted: rounding level)", "Taylor remainders"

    def __repr__(self) -> str:
        shown = "; ".join("/".join(f"{r:.2f}" for r in rates) or "—" for rates in self.asymptotic)
        what = f" of {self.array}" if self.array else ""
        outcome = "passes" if self.passes else "unresolved" if self.unresolved else "fails"
        return f"<Taylor test{what}: rates {shown or '—'} (bound {self.policy.rate:g}): {outcome}>"


def _largest_resolved(d: TaylorDirection) -> tuple[float, float]:
    """`(h, remainder)` of the largest remainder above rounding level along `d`."""
    rows = [
        (r, h)
        for h, r, rho in zip(d.steps, d.remainders, d.rounding, strict=True)
        if r > RESOLVED * rho
    ]
    r, h = max(rows)
    return h, r
