"""Gradient files as an earlier weanj, another machine or a careless hand left them.

`weanj.save_gradient` keeps the store's rules (a file of `gradients/` holds that very
variant on the shared inputs; a reference is recorded on the shared inputs), so the files
those rules exist to catch (stale ones, mislabelled ones) are written here directly, in
the store's own file format, with the provenance key written out from its definition
(`helpers.provenance_key`) rather than taken from weanj.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import weanj
from weanj._io._store import write_gradient
from weanj._places import places
from weanj._registry import find_variant

from .helpers import provenance_key


def plant(
    example: str,
    variant: str,
    gradient,
    *,
    path: Path,
    family: str | None = None,
    loss: float | None = None,
    params: dict | None = None,
    inputs_sha256: str | None = None,
) -> Path:
    """Write a gradient file at `path`, bypassing the store's rules. Defaults: the shared
    inputs' digest and parameters, the registered family; the dtype is the gradient's."""
    ex = weanj.example(example)
    shared = weanj.read_inputs(example)
    arrays = gradient if isinstance(gradient, dict) else {ex.wrt_names[0]: gradient}
    arrays = {name: np.asarray(a) for name, a in arrays.items()}
    single = next(iter(arrays.values())).dtype.name in ("float32", "complex64")
    dtype = "float32" if single else "float64"
    digest = inputs_sha256 or shared.digest
    chosen = {**shared.params, **(params or {})}
    # What the file claims it was computed on, the key written out from its definition.
    claimed = {
        "params": chosen,
        "inputs_sha256": digest,
        "key": provenance_key(digest, chosen, dtype),
    }
    g = weanj.Gradient(
        example=ex,
        variant=variant,
        family=family or find_variant(example, variant).family,
        dtype=dtype,
        gradients=arrays,
        loss=loss,
        backend=variant.split("-")[0],
        **claimed,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_gradient(g, path, places())
