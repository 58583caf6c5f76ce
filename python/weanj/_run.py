"""Evaluating a variant on inputs: its loss and gradient, as a `Gradient` with provenance.

The store (`results/<example>/gradients/`) holds only gradients whose key is the shared
inputs' key at their dtype, so that the judge always compares like with like. A run on
anything else (another inputs file, another parameter value) is saved apart, in
`results/<example>/runs/<variant>-<what differs>.h5`, unless told where.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import ExcludedError, WeanjError
from ._io._inputs import Inputs, read_inputs
from ._io._store import gradient_arrays, gradient_path, runs_path
from ._model import Example, Gradient, Variant, check_dtype
from ._registry import example as example_named
from ._registry import variant as variant_named


def evaluate(
    example: Example | str,
    variant: Variant | str,
    *,
    inputs: Inputs | Path | str | None = None,
    params: dict[str, Any] | None = None,
    dtype: str = "float64",
) -> Gradient:
    """Loss and gradient of a variant on the shared inputs (or on `inputs`: an `Inputs`
    object or an inputs file).

    **Arguments:**

    - `params`: overrides of the example's parameters (default: the inputs').
    - `dtype`: `"float64"` or `"float32"`: the float arrays are cast before the call.

    **Returns:** a `Gradient` with `source="run"`, its key and the seconds the first
    loss and gradient calls took (compilation included).
    """
    ex = example_named(example)
    v = variant if isinstance(variant, Variant) else variant_named(ex, variant)
    dtype = check_dtype(dtype)
    if not isinstance(inputs, Inputs):
        inputs = read_inputs(ex, inputs)
    if params:
        inputs = inputs.with_params(params)
    why = v.excluded(inputs.arrays, inputs.params)
    if why is not None:
        raise ExcludedError(f"{v.name} does not apply to these inputs: {why}")
    args = inputs.args(dtype)
    t0 = time.perf_counter()
    loss = float(np.asarray(v.loss(*args)))
    gradients, _ = gradient_arrays(ex, v.name, v.grad(*args), dtype)
    seconds = time.perf_counter() - t0
    what = (ex, v.name, v.family, dtype, gradients, loss, dict(inputs.params))
    provenance = dict(backend=v.backend, backend_version=v.backend_version(), seconds=seconds)
    return Gradient(*what, inputs.digest, inputs.key(dtype), source="run", **provenance)


def shared_inputs_or_none(example: Example) -> Inputs | None:
    """The shared inputs, or None where they cannot be read (a run on another file can
    still go on; it just cannot be store material)."""
    try:
        return read_inputs(example)
    except WeanjError:
        return None


def differences(g: Gradient, shared: Inputs | None) -> list[str]:
    """What sets a run apart from one on the shared inputs, as file-name parts
    (`inputs-1a2b3c4d5e6f`, `K5`, `float32`); empty when it is store material."""
    if shared is not None and shared.matches(g):
        return []
    out = []
    if shared is None or g.inputs_sha256 != shared.digest:
        out.append(f"inputs-{g.inputs_sha256[:12]}")
    if shared is not None:
        out.extend(f"{k}{v}" for k, v in g.params.items() if shared.params.get(k) != v)
    if g.dtype != "float64":
        out.append(g.dtype)
    return out or [f"key-{g.key[:12]}"]


def default_path(g: Gradient, shared: Inputs | None) -> Path:
    """The store file for store material (shared inputs, their parameters), else
    `results/<example>/runs/<variant>-<differences>.h5`."""
    if shared is not None and shared.matches(g):
        return gradient_path(g.example, g.variant, dtype=g.dtype)
    return runs_path(g, differences(g, shared))


def apart_note(g: Gradient, shared: Inputs | None) -> str:
    """One line saying why a run was not saved to the store ("" when it was)."""
    if shared is not None and shared.matches(g):
        return ""
    return (
        f"not saved to the store: computed on other inputs than the shared inputs "
        f"({', '.join(differences(g, shared))}); the store holds only gradients of the shared "
        "inputs and their parameters, which the judge compares"
    )
