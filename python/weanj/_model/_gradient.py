"""A gradient with its provenance: what a run computes and what the store holds.

One object for both (an evaluation is a `Gradient` with `source="run"`, a file read from
the store one with `source="store"` or `"recorded"`), so the judge compares like with
like whatever the front end read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._cost import Cost
from ._example import Example
from ._kinds import first_nonfinite, index_text, is_number
from ._provenance import DeviceProvenance, Distributed, provenance_json
from ._variant import Variant


@dataclass(frozen=True)
class Emulated:
    """float32's rounding of a run's float64 program, emulated
    (`_pipeline/evaluation/_emulation.py`): how far the program's loss (`"loss"`) and each
    gradient array (the median of its entries' moves) land from the float64 program's when
    every value in it is rounded to float32's precision, folded into the float32 run's
    `noise`; or, where the program cannot be looked into, `refused` says why (no levels)."""

    levels: dict[str, float]
    refused: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"levels": dict(self.levels), "refused": self.refused}

    @classmethod
    def from_json(cls, data: Any) -> Emulated:
        """What `to_json` wrote (a `ValueError` for anything else)."""
        if not isinstance(data, dict) or set(data) != {"levels", "refused"}:
            raise ValueError("an emulated rounding that is not levels and a reason")
        levels, refused = data["levels"], data["refused"]
        if not isinstance(levels, dict) or not isinstance(refused, str):
            raise ValueError("an emulated rounding that is not levels and a reason")
        if not all(is_number(v) and math.isfinite(v) and v >= 0 for v in levels.values()):
            raise ValueError("an emulated rounding whose levels are not numbers")
        return cls({str(k): float(v) for k, v in levels.items()}, refused)


@dataclass(repr=False)
class Gradient:
    """A variant's loss and gradient arrays on some inputs, with their provenance.

    `variant` is the variant's name (as run, or as a file records it); `of` the
    registered `Variant` itself (None for a file of a name this project does not
    register). `noise` holds how far the loss and each gradient array moved when every
    float input was perturbed by one unit in the last place (the rounding level of the
    computation, which the judge's floors scale with; docs/DESIGN.md, "Tolerance policy"),
    `noise_entries` how far each entry moved. Where it was computed beyond its inputs and
    configuration (a device, its matmul precision and that precision's level, the x64
    configuration, a reused record, jax.distributed) is in typed fields
    (`_provenance`); `extra` is them as files hold them.
    """

    example: Example
    variant: str
    family: str
    dtype: str  # the dtype under test
    gradients: dict[str, np.ndarray]  # {wrt array name: gradient}, in wrt order
    loss: float | None
    params: dict[str, Any]
    inputs_sha256: str
    key: str  # the provenance key (docs/DESIGN.md)
    backend: str = ""
    backend_version: str = ""
    created: str = ""
    path: Path | None = None
    source: str = "run"  # "run" (this process), "store", "recorded" or "file": where from
    format: int = 2
    seconds: float | None = None  # first loss + gradient call, compilation included
    # a run on a device: where, and the matmul precision in effect (None: the CPU)
    device: DeviceProvenance | None = None
    # a device run under a reduced matmul precision: that precision's rounding level,
    # `{"loss" or array: level}` (`_judge._policy.precision_floor`; None: not measured)
    precision_level: dict[str, float] | None = None
    x64: str | None = None  # the JAX x64 configuration it ran in, described (`X64.describe`)
    reused: str | None = None  # reused from an evaluation record: that record's creation time
    distributed: Distributed | None = None  # run under jax.distributed: its processes
    # a file's attributes that weanj does not read, kept as the file has them (a user's
    # own metadata: free-form, so a mapping)
    attributes: dict[str, Any] = field(default_factory=dict)
    of: Variant | None = None
    noise: dict[str, float] = field(default_factory=dict)
    # each array's level entry by entry, `{array: |g̃ − g|}` (float64, the gradient's shape;
    # {}: not measured, or a file written before): where an entry's rounding is far above
    # its array's median (an ill-conditioned entry), the judge's floor there
    noise_entries: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    # the `Configuration` it was computed in (None: read from a file, not known)
    configuration: Any = field(default=None, compare=False)
    # whether `noise` was measured: True (measured, or a file's, as it holds them), False
    # (an evaluation whose levels a check gathers where a comparison needs them:
    # `_pipeline.session._session.Session.levels`)
    levels_measured: bool = True
    # computed by a weanj evaluation (a run, its record, or a store file it wrote), not
    # arrays a user saved
    evaluated: bool = False
    # the kernel's executions spent on it, per phase (`Cost`; empty: not counted, a file)
    cost: Cost = field(default_factory=Cost, compare=False)
    # each wrt array's forward-mode derivative along its jvp direction, computed in the
    # evaluation's own call (`Functions.evaluation`; the jvp check's numbers, for this
    # variant and for a family member that borrows its forward mode); None: not computed
    forward: dict[str, float] | None = field(default=None, compare=False)
    # a float32 run's rounding emulated on its float64 program, where its levels were
    # measured (`Emulated`; None: not emulated, or a file's, which keeps only `noise`)
    emulated: Emulated | None = field(default=None, compare=False)
    # the outputs the example declares (`Example.outputs`), from the evaluation's own call
    # ({}: none declared, or a file written without them)
    outputs: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    # the outputs' Jacobian, per output and wrt array (`"uT::u0"`): `(⟨w, J·v⟩, ⟨Jᵀ·w, v⟩,
    # the size of their terms)` along the array's jvp direction v and the output's seeded
    # weight w, computed in the evaluation's own call (the first None where the variant
    # has no forward mode)
    jacobian: dict[str, tuple[float | None, float, float]] = field(
        default_factory=dict, compare=False
    )
    # the outputs' pullbacks, per output and real wrt array (`"uT::u0"`): `(Jᵀ·w)_a`, the
    # vector-Jacobian product whose inner product the dot-product test takes, compared
    # across variants (case kind `pullback`); None: not computed
    pullback: dict[str, np.ndarray] | None = field(default=None, compare=False)
    # the second order (`Example.order`): each wrt array's own Hessian block times its
    # seeded directions, `hvp[a] = H_aa·v_a` (v_a its jvp direction) and `hvp_u[a] =
    # H_aa·u_a` (u_a its second direction); None: not computed
    hvp: dict[str, np.ndarray] | None = field(default=None, compare=False)
    hvp_u: dict[str, np.ndarray] | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        loss = "None" if self.loss is None else f"{self.loss:.6g}"
        return (
            f"Gradient({self.label!r}, example={self.example.name!r}, dtype={self.dtype!r}, "
            f"loss={loss}, source={self.source!r})"
        )

    @property
    def recorded(self) -> bool:
        return self.source == "recorded"

    @property
    def label(self) -> str:
        """How reports name it: `jax-lex`, `jax-lex@float32`, `jax-lex@float32@tpu`,
        `recorded/julia-lex`."""
        if self.source == "recorded":
            return f"recorded/{self.path.stem}" if self.path else f"recorded/{self.variant}"
        stem = self.path.stem if self.source == "file" and self.path else self.variant
        label = stem if self.dtype == "float64" else f"{stem}@{self.dtype}"
        if self.device is None:
            return label
        return f"{label}@{self.device.label}"  # a device run: `jax-lex@float32@tpu`

    @property
    def extra(self) -> dict[str, Any]:
        """Its provenance as the flat mapping files hold under `extra` (read-only: a copy,
        `_provenance.provenance_json`)."""
        return provenance_json(self)

    @property
    def gradient(self) -> Any:
        """The gradient as a variant's `grad` returns it: one array, or a dict of several."""
        return self.example.gradient_value(self.gradients)

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {k: tuple(np.shape(g)) for k, g in self.gradients.items()}

    @property
    def nonfinite_count(self) -> int:
        return sum(
            int(np.size(g) - np.count_nonzero(np.isfinite(g))) for g in self.gradients.values()
        )

    @property
    def finite(self) -> bool:
        return self.nonfinite_count == 0 and (self.loss is None or math.isfinite(self.loss))

    def nonfinite_text(self) -> str:
        """Where the NaN/Inf are: the count and the first, in both index conventions."""
        for name, g in self.gradients.items():
            first = first_nonfinite(np.asarray(g))
            if first is not None:
                count = int(np.size(g) - np.count_nonzero(np.isfinite(g)))
                return (
                    f"{count} NaN/Inf value(s) in the gradient {name}, first at {index_text(first)}"
                )
        return f"the loss is {self.loss}"
