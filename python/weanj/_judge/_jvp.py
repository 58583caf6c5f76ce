"""The numbers of the forward-vs-reverse check (the jvp check, docs/DESIGN.md, "Gradient
checks") and the rule that reads them: `jvp(L)(x; dx)` against `⟨g, dx⟩`, exact up to
rounding and independent of any step; running the losses is the execution layer's
(`_pipeline.checks._check_jvp`).

`JvpResult` keeps the protocol of `_checks` (its verdict, its record, its text,
its cell, its JSON) and is registered there by name, so no view branches on a check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._model import Example
from .._model._verdicts import Verdict
from ._checks import check_result, finite, num
from ._directions import random_direction
from ._policy import TOLERANCES, Tolerance

# forward vs reverse: the variant's own jvp to rounding; a sibling's at the family tolerance
OWN_JVP_TOLERANCE = 1e-12


def base_tolerance(own: bool, declared: Any) -> float:
    """The jvp check's tolerance before any rounding level: `OWN_JVP_TOLERANCE` for the
    variant's own forward mode, float64's gradient tolerance for a sibling's, or the
    family's declared `Tolerance.grad` where that is larger."""
    base = OWN_JVP_TOLERANCE if own else TOLERANCES["float64"].grad
    return max(base, declared.grad if isinstance(declared, Tolerance) else 0.0)


@check_result("directional")  # its field in check.json (a file format's name, kept)
@dataclass(frozen=True)
class JvpResult:
    """`jvp(L)(x; dx)` by `by` against the variant's `⟨g, dx⟩`, along `array`'s own
    direction dx (the other arrays still)."""

    array: str
    by: str  # the variant whose forward mode was used
    forward: float
    reverse: float
    scale: float  # Σ |g_i|·|dx_i|: the size of the terms of ⟨g, dx⟩
    tolerance: float

    @property
    def passes(self) -> bool:
        return self.error <= self.tolerance

    def to_json(self) -> dict[str, Any]:
        return {
            "array": self.array,
            "by": self.by,
            "forward": self.forward,
            "reverse": self.reverse,
            "scale": self.scale,
            "tolerance": self.tolerance,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JvpResult:
        return cls(
            str(data["array"]),
            str(data["by"]),
            float(data["forward"]),
            float(data["reverse"]),
            float(data["scale"]),
            float(data["tolerance"]),
        )

    def __repr__(self) -> str:
        return (
            f"<jvp check{' of ' + self.array if self.array else ''}: forward {self.forward:.15g}, "
            f"⟨g, dx⟩ {self.reverse:.15g}, error {self.error:.1e} (tolerance {self.tolerance:g}): "
            f"{'passes' if self.passes else 'fails'}>"
        )

    @property
    def error(self) -> float:
        """`|jvp − ⟨g, dx⟩| / Σ|g_i||dx_i|` (NaN/Inf where either is not finite)."""
        if not (math.isfinite(self.forward) and math.isfinite(self.reverse)):
            return math.inf
        diff = abs(self.forward - self.reverse)
        return diff / self.scale if self.scale > 0 else (0.0 if diff == 0 else math.inf)

    # --- its verdict and its views (the protocol of `_checks`) ---------------------------

    def judge(self) -> tuple[Verdict, str]:
        """ok when `|jvp − ⟨g, dx⟩| ≤ tolerance·Σ|g_i dx_i|`."""
        if not (math.isfinite(self.forward) and math.isfinite(self.reverse)):
            return Verdict.NONFINITE, "NaN/Inf in jvp or ⟨g, dx⟩"
        if self.passes:
            return Verdict.OK, ""
        return Verdict.FAIL, (
            f"forward mode ({self.by}) gives {self.forward:.15g}, ⟨g, dx⟩ {self.reverse:.15g}: "
            f"{self.error:.1e} relative, above {self.tolerance:g}"
        )

    def summary(self, reason: str) -> str:
        return reason or (
            f"jvp by {self.by} agrees with ⟨g, dx⟩ to {num(self.error, 1)} "
            f"(tolerance {self.tolerance:g})"
        )

    @classmethod
    def measure(cls, results) -> str:
        """The largest relative error over the arrays."""
        return num(max(d.error for d in results), 0)

    def view_json(self) -> dict[str, Any]:
        return {
            "jvp": {
                "by": self.by,
                "forward": finite(self.forward),
                "reverse": finite(self.reverse),
                "error": finite(self.error),
                "tolerance": self.tolerance,
            }
        }


def jvp_direction(
    ex: Example, array: str, x: np.ndarray, mask: np.ndarray | None, seed: int = 1
) -> np.ndarray:
    """The direction of the forward-vs-reverse check of `array`: seeded by the array's
    position, so that every variant of a family is checked along the same one."""
    rng = np.random.default_rng([seed, ex.wrt_names.index(array)])
    return random_direction(rng, x, mask)
