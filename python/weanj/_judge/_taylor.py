"""The numbers of the Taylor remainder test, which holds for any kernel (docs/DESIGN.md,
"Gradient checks"), and the rule that reads them; running the losses is the execution
layer's (`_pipeline.checks._gradchecks`). The forward-vs-reverse check is `_jvp`'s.

- **Taylor remainder test**: along a direction dx, the remainder
  `r(h) = |L(x + h dx) − L(x) − h⟨g, dx⟩|` falls as h² when g is the gradient and as h
  when it is not, whatever the kernel; the step halves until r stays at rounding level.
  The observed rates are `log2(r(h)/r(h/2))` (dolfin-adjoint / pyadjoint's `taylor_test`).

Each result type keeps the protocol of `_checks` (its verdict, its record, its text, its
cell, its JSON) and is registered there by name, so no view branches on a check.

`⟨g, dx⟩` is the real inner product `Re Σ conj(g)·dx`, so complex arrays (with g in
weanj's convention `∂L/∂Re z + i·∂L/∂Im z`) are checked like pairs of real arrays. Every
check keeps its directions inside the example's kink mask (`checked_masks`); `inner` and
`random_direction` serve every check.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError
from .._model import Example, TaylorPolicy
from .._model._verdicts import Verdict
from ._checks import check_result

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


def checked_masks(
    ex: Example, given: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The kink mask of every wrt array (True: may be perturbed; all True where the
    example's mask function names none), from what that function returned, or an
    `InputError` saying what is wrong with it."""
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
    return masks


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


@check_result("taylor")
@dataclass(frozen=True)
class TaylorResult:
    """The Taylor test of one gradient array: every direction, and what it left out."""

    array: str
    policy: TaylorPolicy
    h0: float
    directions: tuple[TaylorDirection, ...]
    left_out: int
    size: int
    # the arrays whose directions were shared (each moved along its part of one direction:
    # `_pipeline.checks._gradchecks`), () for a test of this array alone
    shared: tuple[str, ...] = ()
    # whether a direction was walked step by step (the regime's estimate not borne out)
    walked: bool = False

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
    def others(self) -> tuple[str, ...]:
        """The other arrays whose directions this test shared."""
        return tuple(a for a in self.shared if a != self.array)

    @property
    def passes(self) -> bool:
        """The rule (docs/DESIGN.md, "The Taylor remainder test"): along every direction,
        the rates at the smallest resolved steps are at least the policy's (about 2), or
        every remainder is at rounding level (the loss is linear along the direction). A
        direction with a NaN/Inf, or a test with no direction, does not pass."""
        if not self.directions or any(d.nonfinite for d in self.directions):
            return False
        return not any(rates and min(rates) < self.policy.rate for rates in self.asymptotic)

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
            "shared": list(self.shared),
            "walked": self.walked,
            "directions": [
                {
                    "steps": list(d.steps),
                    "remainders": list(d.remainders),
                    "rounding": list(d.rounding),
                    "nonfinite": d.nonfinite,
                    "slope": d.slope,
                }
                for d in self.directions
            ],
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
            tuple(str(a) for a in data["shared"]),
            bool(data["walked"]),
        )

    # --- its verdict and its views (the protocol of `_checks`) ---------------------------

    def judge(self) -> tuple[Verdict, str]:
        """ok when it passes (`passes`); FAIL with the rates otherwise; skipped where the
        kink mask leaves nothing to perturb; NaN/Inf where a loss along a direction is."""
        if not self.directions:
            return Verdict.SKIPPED, f"the kink mask leaves no entry of {self.array} to perturb"
        if any(d.nonfinite for d in self.directions):
            return Verdict.NONFINITE, "a loss along a direction is NaN/Inf"
        bound = self.policy.rate
        failing = [rates for rates in self.asymptotic if rates and min(rates) < bound]
        reason = ""
        if failing:
            reason = (
                f"remainders fall with rate(s) {', '.join(f'{r:.2f}' for r in failing[0])} at "
                f"the smallest steps, below {bound:g}: the gradient of {self.array} is not the "
                "loss's derivative (a correct one gives 2)"
            )
        elif not any(d.resolved for d in self.directions):
            reason = (
                "every remainder is at rounding level (the loss is linear along the directions "
                f"at this step); a relative gradient error above {self.sensitivity:.0e} would "
                "have shown"
            )
        return (Verdict.OK if self.passes else Verdict.FAIL), reason

    def summary(self, reason: str) -> str:
        """The rates at the smallest steps, the first step and what the test resolves."""
        if not self.directions:
            return reason
        rates = ["/".join(f"{r:.2f}" for r in rates) or "—" for rates in self.asymptotic]
        shared = f", directions shared with {', '.join(self.others)}" if self.others else ""
        text = (
            f"rates at the smallest steps {'; '.join(rates)} (h0 {self.h0:.1e}, bound "
            f"{self.policy.rate:g}; resolves relative errors from {self.sensitivity:.0e}"
            f"{shared})"
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
                "shared": list(self.shared),
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
        outcome = "passes" if self.passes else "fails"
        return f"<Taylor test{what}: rates {shown or '—'} (bound {self.policy.rate:g}): {outcome}>"
