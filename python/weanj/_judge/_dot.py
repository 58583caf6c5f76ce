"""The numbers of the outputs' Jacobian check, the dot-product test, and its rule
(docs/outputs.md); running it is the execution layer's (`_pipeline.checks._beyond_checks`).

For each output and each `wrt` array, along the array's jvp direction v and the output's
seeded weight w: `⟨w, J·v⟩` by forward mode (the variant's own, else a trusted family
member's) against `⟨Jᵀ·w, v⟩` by the variant's reverse mode. They are the same number
for the Jacobian of any function; a hand-written adjoint of an output that is not the
transpose of its derivative (a transposed matrix, a wrong residual) differs, even where
the loss's gradient, which may not pass through it, is right.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .._model._verdicts import Verdict
from ._checks import check_result, finite, num


@dataclass(frozen=True)
class OutputDot:
    """One output's two sides: `ahead` `⟨w, J·v⟩`, `back` `⟨Jᵀ·w, v⟩`, `scale` the sizes of
    their terms (the larger of `Σ|w_i·(Jv)_i|` and `Σ|(Jᵀw)_i·v_i|`)."""

    output: str
    ahead: float
    back: float
    scale: float

    @property
    def error(self) -> float:
        if not (math.isfinite(self.ahead) and math.isfinite(self.back)):
            return math.inf
        diff = abs(self.ahead - self.back)
        return diff / self.scale if self.scale > 0 else (0.0 if diff == 0 else math.inf)


@check_result("dot")
@dataclass(frozen=True)
class DotResult:
    """The dot-product test of every output along one array's direction; `by` the variant
    whose forward mode gave `⟨w, J·v⟩`."""

    array: str
    by: str
    outputs: tuple[OutputDot, ...]
    tolerance: float

    @property
    def error(self) -> float:
        return max((o.error for o in self.outputs), default=0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "array": self.array,
            "by": self.by,
            "outputs": [[o.output, o.ahead, o.back, o.scale] for o in self.outputs],
            "tolerance": self.tolerance,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DotResult:
        outputs = tuple(
            OutputDot(str(o), float(a), float(b), float(s)) for o, a, b, s in data["outputs"]
        )
        return cls(str(data["array"]), str(data["by"]), outputs, float(data["tolerance"]))

    def judge(self) -> tuple[Verdict, str]:
        if any(not (math.isfinite(o.ahead) and math.isfinite(o.back)) for o in self.outputs):
            return Verdict.NONFINITE, "NaN/Inf in ⟨w, J·v⟩ or ⟨Jᵀ·w, v⟩"
        worst = max(self.outputs, key=lambda o: o.error, default=None)
        if worst is None or worst.error <= self.tolerance:
            return Verdict.OK, ""
        return Verdict.FAIL, (
            f"output {worst.output}: ⟨w, J·v⟩ = {worst.ahead:.15g} by {self.by}'s forward mode, "
            f"⟨Jᵀ·w, v⟩ = {worst.back:.15g} by reverse mode along {self.array}: "
            f"{worst.error:.1e} relative, above {self.tolerance:g} (the output's vjp is not "
            "the transpose of its jvp)"
        )

    def summary(self, reason: str) -> str:
        return reason or (
            f"⟨w, J·v⟩ by {self.by} and ⟨Jᵀ·w, v⟩ agree to {num(self.error, 1)} for "
            f"{', '.join(o.output for o in self.outputs)} (tolerance {self.tolerance:g})"
        )

    @classmethod
    def measure(cls, results) -> str:
        return num(max(r.error for r in results), 0)

    def view_json(self) -> dict[str, Any]:
        return {
            "dot": {
                "by": self.by,
                "tolerance": self.tolerance,
                "outputs": [
                    {
                        "output": o.output,
                        "jvp": finite(o.ahead),
                        "vjp": finite(o.back),
                        "error": finite(o.error),
                    }
                    for o in self.outputs
                ],
            }
        }
