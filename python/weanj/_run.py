"""Evaluating a variant on an example's inputs: loss and gradient, with provenance."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import InputError
from ._inputs import check_params, inputs_path, read_inputs_file
from ._registry import example, variant
from ._store import save_gradient


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

    @property
    def gradient(self):
        """The gradient as the variant's `grad` returns it: one array, or a dict of several."""
        if len(self.gradients) == 1:
            return next(iter(self.gradients.values()))
        return dict(self.gradients)

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.loss)) and all(
            bool(np.all(np.isfinite(g))) for g in self.gradients.values()
        )

    def save(self, path: Path | str | None = None, *, allow_nonfinite: bool = False) -> Path:
        """Save to the store (or `path`) with full provenance."""
        return save_gradient(
            self.example,
            self.variant,
            self.gradients,
            loss=self.loss,
            family=self.family,
            params=self.params,
            inputs_sha256=self.inputs_sha256,
            path=path,
            allow_nonfinite=allow_nonfinite,
        )


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
    )
