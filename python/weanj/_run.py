"""Evaluating a variant on an example's inputs: loss and gradient, with provenance.

The store (`results/<example>/gradients/`) holds only gradients of the shared inputs, so
that `weanj diff` and `weanj check` always compare like with like. An evaluation on
anything else (another inputs file, another parameter value, float32) is saved apart, in
`results/<example>/runs/<variant>-<what differs>.h5`, unless told where.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import InputError, WeanjError
from ._inputs import check_params, inputs_path, read_inputs_file
from ._registry import example, variant
from ._root import results_dir
from ._store import RUNS, check_gradient_target, gradient_path, save_gradient

# The dtype of the shared inputs (float64 on disk); a float32 run differs from them.
SHARED_DTYPE = "float64"


@dataclass
class Evaluation:
    """A variant's loss and gradient on given inputs, and what they were computed on."""

    example: str
    variant: str
    family: str
    loss: float
    gradients: dict[str, np.ndarray]  # {wrt array name: gradient}
    params: dict[str, int]
    dtype: str
    inputs_sha256: str
    seconds: float  # wall time of the first loss + gradient call, compilation included
    # The shared inputs' digest and parameters when they could be read (None otherwise).
    shared_sha256: str | None = None
    shared_params: dict[str, int] = field(default_factory=dict)

    @property
    def gradient(self):
        """The gradient as the variant's `grad` returns it: one array, or a dict of several."""
        return example(self.example).gradient_value(self.gradients)

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.loss)) and all(
            bool(np.all(np.isfinite(g))) for g in self.gradients.values()
        )

    @property
    def differences(self) -> list[str]:
        """What sets this evaluation apart from one on the shared inputs, as file-name
        parts (`inputs-1a2b3c4d5e6f`, `K5`, `float32`); empty when nothing does."""
        out = []
        if self.inputs_sha256 != self.shared_sha256:
            out.append(f"inputs-{self.inputs_sha256[:12]}")
        out.extend(
            f"{name}{value}"
            for name, value in self.params.items()
            if self.shared_params.get(name) != value
        )
        if self.dtype != SHARED_DTYPE:
            out.append(self.dtype)
        return out

    @property
    def on_shared_inputs(self) -> bool:
        """Computed on the shared inputs, with their parameters, in float64: store material."""
        return not self.differences

    def default_path(self) -> Path:
        """Where `save()` writes: the store for an evaluation on the shared inputs, else
        `results/<example>/runs/<variant>-<differences>.h5`."""
        if self.on_shared_inputs:
            return gradient_path(self.example, self.variant)
        name = "-".join([self.variant, *self.differences])
        return results_dir(self.example) / RUNS / f"{name}.h5"

    def apart_note(self) -> str:
        """One line saying why a run was not saved to the store ("" when it was)."""
        if self.on_shared_inputs:
            return ""
        shared = inputs_path(self.example)
        return (
            f"not saved to the store: computed on other inputs than {shared} "
            f"({', '.join(self.differences)}); the store holds only gradients of the shared "
            "inputs, which `weanj diff` and `weanj check` compare"
        )

    def save(self, path: Path | str | None = None, *, allow_nonfinite: bool = False) -> Path:
        """Save with full provenance to `path`, or by default to the store (shared inputs)
        or `results/<example>/runs/` (anything else; see `default_path`)."""
        return save_gradient(
            self.example,
            self.variant,
            self.gradients,
            loss=self.loss,
            family=self.family,
            params=self.params,
            inputs_sha256=self.inputs_sha256,
            path=path if path is not None else self.default_path(),
            allow_nonfinite=allow_nonfinite,
        )


def check_out_path(path: Path | str | None) -> Path | None:
    """`weanj run --out FILE`, checked before the variant runs: None (no `--out`) or the
    path, else an `InputFileError` saying why a gradient cannot be written there (see
    `_store.check_gradient_target`: a directory, '', under a file, the inputs...)."""
    return None if path is None else check_gradient_target(path)


def evaluate(
    example_name: str,
    variant_name: str,
    *,
    inputs: Path | str | None = None,
    params: dict[str, Any] | None = None,
    dtype: str = "float64",
) -> Evaluation:
    """Loss and gradient of a variant on the shared inputs (or the inputs file `inputs`).

    **Arguments:**

    - `params`: overrides of the example's parameters (default: the file's, e.g. its `K`).
    - `dtype`: `"float64"` or `"float32"`; the arrays are cast before the call.
    """
    ex = example(example_name)
    v = variant(ex.name, variant_name)
    if dtype not in ("float64", "float32"):
        raise InputError(f"dtype must be float64 or float32, got {dtype!r}")
    shared = inputs is None
    data = read_inputs_file(ex.name, inputs_path(ex.name) if shared else inputs, shared=shared)
    current = data
    if not shared:
        try:  # the shared inputs, to tell whether this run belongs in the store
            current = read_inputs_file(ex.name, inputs_path(ex.name), shared=True)
        except WeanjError:
            current = {"sha256": None, "params": {}}
    overrides = {k: val for k, val in (params or {}).items() if val is not None}
    p = check_params(ex, {**data["params"], **overrides})
    arrays = {k: a.astype(dtype) for k, a in data["arrays"].items()}
    args = ex.args(arrays, p)
    t0 = time.perf_counter()
    loss = float(np.asarray(v.loss(*args)))
    gradients = {k: np.asarray(g) for k, g in ex.gradients(v.grad(*args)).items()}
    seconds = time.perf_counter() - t0
    return Evaluation(
        example=ex.name,
        variant=v.name,
        family=v.family,
        loss=loss,
        gradients=gradients,
        params=p,
        dtype=dtype,
        inputs_sha256=data["sha256"],
        seconds=seconds,
        shared_sha256=current["sha256"],
        shared_params=dict(current["params"]),
    )
