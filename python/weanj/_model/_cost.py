"""What a check spent: the kernel's forward and backward executions, per phase.

A check runs the user's kernel for its evaluation and for each piece of evidence after it
(docs/DESIGN.md, "What a check costs"). Each call weanj makes is counted where it is made:
a loss alone is one forward execution, a loss with its gradient one forward and one
backward, a forward-mode derivative one forward (and one backward where the program that
computes it computes the gradient too). `Cost` keeps the counts per phase; the evaluation
carries it, its record keeps it, `weanj check -v` and `check.json` show it.

The programs compiled for it are counted beside them (`compiled`, `compile_s`: JAX's own
compilation events while the evaluation and its checks ran; a program the persistent
compilation cache served counts too, with the seconds it took to load): what a cold check
spends before it runs anything. A record keeps only the executions: a reused evaluation
compiled nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The phases, in the order a check reaches them. `jvp`: a forward mode called apart from
# the evaluation (a lender's whose evaluation was reused; the evaluation's own call
# computes the jvp check's numbers otherwise); `rounding`: the loss floor's perturbed runs
# (gathered where a comparison needs them); `fd`: central differences (where a gradient
# check is not ok, or asked for); `jacobian`: the outputs' vector-Jacobian products of the
# dot-product test (one backward per output, in the evaluation's call); `hvp`: the
# Hessian-vector products (one forward-over-reverse execution each, a forward and a
# backward carrying a tangent); `taylor2`: the gradients of the second-order Taylor test.
PHASES = (
    "evaluation",
    "taylor",
    "jvp",
    "rounding",
    "fd",
    "precision",
    "jacobian",
    "hvp",
    "taylor2",
)


@dataclass
class Cost:
    """`{phase: [forward, backward]}`, the kernel's executions of one evaluation and its
    checks (module docstring)."""

    runs: dict[str, list[int]] = field(default_factory=dict)
    compiled: list[str] = field(default_factory=list)  # JAX's names of the programs
    compile_s: float = 0.0

    def compiling(self, program: str, seconds: float) -> None:
        """Count one program compiled (or loaded from the compilation cache) for it."""
        self.compiled.append(program)
        self.compile_s += float(seconds)

    def compiled_json(self) -> dict[str, Any]:
        """`{"programs": [...], "seconds": s}`, as `check.json` holds it beside `cost`."""
        return {"programs": list(self.compiled), "seconds": round(self.compile_s, 6)}

    def read_compiled(self, data: Any) -> None:
        """The programs `compiled_json` wrote, added; anything else leaves it as it is."""
        if not isinstance(data, dict) or not isinstance(data.get("programs"), list):
            return
        seconds = data.get("seconds", 0.0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            return
        self.compiled.extend(str(p) for p in data["programs"])
        self.compile_s += float(seconds)

    def add(self, phase: str, forward: int = 1, backward: int = 0) -> None:
        """Count `forward` and `backward` executions of the kernel in `phase`."""
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r} (one of {', '.join(PHASES)})")
        found = self.runs.setdefault(phase, [0, 0])
        found[0] += forward
        found[1] += backward

    @property
    def forward(self) -> int:
        return sum(f for f, _ in self.runs.values())

    @property
    def backward(self) -> int:
        return sum(b for _, b in self.runs.values())

    def of(self, phase: str) -> tuple[int, int]:
        f, b = self.runs.get(phase, (0, 0))
        return f, b

    def describe(self) -> str:
        """`13 forward, 2 backward (evaluation 1+1, taylor 11, jvp 1+1)`: forward+backward
        per phase, in the order of `PHASES`."""
        if not self.runs:
            return "not counted"
        parts = []
        for phase in PHASES:
            if phase in self.runs:
                f, b = self.runs[phase]
                parts.append(f"{phase} {f}" + (f"+{b}" if b else ""))
        text = f"{self.forward} forward, {self.backward} backward ({', '.join(parts)})"
        if self.compiled:
            text += f"; {len(self.compiled)} program(s) compiled in {self.compile_s:.1f} s"
        return text

    def to_json(self) -> dict[str, list[int]]:
        return {phase: list(self.runs[phase]) for phase in PHASES if phase in self.runs}

    @classmethod
    def from_json(cls, data: Any) -> Cost:
        """The counts `to_json` wrote, or a `ValueError`."""
        if not isinstance(data, dict):
            raise ValueError("a cost is a table of phases")
        cost = cls()
        for phase, counts in data.items():
            if (
                not isinstance(counts, list)
                or len(counts) != 2
                or not all(
                    isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts
                )
            ):
                raise ValueError(f"the cost of {phase} is not two counts")
            cost.add(phase, *counts)
        return cost
