"""The numbers of the second-order checks and their rules (docs/outputs.md): the
second-order Taylor test of a variant's gradient, by its Hessian-vector product, and the
symmetry check of its Hessian products; running them is the execution layer's
(`_pipeline.checks._beyond_checks`).

- **Second-order Taylor test** (`Taylor2Result`): along an array's direction v, read
  against its second direction u, the remainder `|⟨u, g(x + h·v) − g(x)⟩ − h·⟨u, H·v⟩|`
  falls as h² where `H·v` is the derivative of the variant's own gradient and as h where
  it is not, whatever the kernel: the first-order test of the function `⟨u, g(·)⟩`, whose
  derivative along v the product claims, judged by its very rule (`TaylorResult`; both
  ways, rounding-aware). Read along u, a wrong product is seen unless its error is
  orthogonal to a random direction.
- **Symmetry** (`SymmetryResult`): a Hessian is symmetric, so `⟨u, H·v⟩ = ⟨v, H·u⟩` to
  rounding: a hand-written adjoint whose derivative is not a Hessian's shows here.

Each keeps the protocol of `_checks` and is registered there by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .._model._verdicts import Verdict
from ._checks import check_result, finite, num
from ._taylor import TaylorResult

# How the first-order test's words read for the second-order test (its function is
# ⟨u, g(·)⟩, its claimed derivative the Hessian-vector product).
_WORDS = (
    ("is not the loss's derivative", "is not its gradient's derivative"),
    ("the gradient of", "the Hessian-vector product of"),
    ("the gradient's error term", "the Hessian product's error term"),
    ("the loss has a kink", "the gradient has a kink"),
    ("the loss is smooth", "the gradient is smooth"),
    ("the loss moves", "the gradient moves"),
    ("the loss does not move", "the gradient does not move"),
    ("a loss that does not depend on it", "a gradient linear in it"),
    ("the loss is linear", "the gradient is linear"),
    ("a relative gradient error", "a relative error of the product"),
    ("a correct gradient gives 2", "a correct product gives 2"),
    ("a correct one gives 2", "a correct one gives 2"),
)


def second_words(text: str) -> str:
    for first, second in _WORDS:
        text = text.replace(first, second)
    return text


@check_result("taylor2")
@dataclass(frozen=True)
class Taylor2Result(TaylorResult):
    """The second-order Taylor test of one array (module docstring): its one direction v
    both ways, the remainders of `⟨u, g(x + h·v)⟩` against the product `⟨u, H·v⟩`."""

    def judge(self) -> tuple[Verdict, str]:
        verdict, reason = super().judge()
        return verdict, second_words(reason)

    def view_json(self) -> dict[str, Any]:
        return {"taylor2": super().view_json()["taylor"]}

    def plot(self, ax: Any, subject: str) -> tuple[str, str]:
        super().plot(ax, subject)
        ax.set(ylabel="|⟨u, g(x+h·v) − g(x)⟩ − h⟨u, Hv⟩|")
        return "second-order Taylor remainders (dotted: rounding level)", "Taylor² remainders"


# The two sides of the symmetry check are each a sum over the array of products that
# forward-over-reverse computed along different paths: a Hessian's, computed right, agree
# to the rounding of their terms; 1e-10 of the sum of their sizes leaves room for a long
# recurrence's accumulated rounding and catches a product that is not a Hessian's
# (tests/test_outputs_second.py).
SYMMETRY_TOLERANCE = 1e-10


@check_result("symmetry")
@dataclass(frozen=True)
class SymmetryResult:
    """`⟨u, H·v⟩` against `⟨v, H·u⟩` for one array's own Hessian block, u and v its two
    seeded directions; `scale` the sizes of their terms, `Σ|u_i·(Hv)_i| + Σ|v_i·(Hu)_i|`."""

    array: str
    u_hv: float
    v_hu: float
    scale: float
    tolerance: float = SYMMETRY_TOLERANCE

    @property
    def error(self) -> float:
        if not (math.isfinite(self.u_hv) and math.isfinite(self.v_hu)):
            return math.inf
        diff = abs(self.u_hv - self.v_hu)
        return diff / self.scale if self.scale > 0 else (0.0 if diff == 0 else math.inf)

    def to_json(self) -> dict[str, Any]:
        return {
            "array": self.array,
            "u_hv": self.u_hv,
            "v_hu": self.v_hu,
            "scale": self.scale,
            "tolerance": self.tolerance,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SymmetryResult:
        return cls(
            str(data["array"]),
            float(data["u_hv"]),
            float(data["v_hu"]),
            float(data["scale"]),
            float(data["tolerance"]),
        )

    def judge(self) -> tuple[Verdict, str]:
        if not (math.isfinite(self.u_hv) and math.isfinite(self.v_hu)):
            return Verdict.NONFINITE, "NaN/Inf in a Hessian-vector product"
        if self.error <= self.tolerance:
            return Verdict.OK, ""
        return Verdict.FAIL, (
            f"⟨u, H·v⟩ = {self.u_hv:.15g} but ⟨v, H·u⟩ = {self.v_hu:.15g} for {self.array}: "
            f"{self.error:.1e} relative, above {self.tolerance:g} (a Hessian is symmetric: "
            "the products are not a Hessian's)"
        )

    def summary(self, reason: str) -> str:
        return reason or (
            f"⟨u, H·v⟩ and ⟨v, H·u⟩ agree to {num(self.error, 1)} (tolerance {self.tolerance:g})"
        )

    @classmethod
    def measure(cls, results) -> str:
        return num(max(r.error for r in results), 0)

    def view_json(self) -> dict[str, Any]:
        return {
            "symmetry": {
                "u_hv": finite(self.u_hv),
                "v_hu": finite(self.v_hu),
                "error": finite(self.error),
                "tolerance": self.tolerance,
            }
        }
