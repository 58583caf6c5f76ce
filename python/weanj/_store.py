"""The gradient store: one HDF5 file per (example, variant), with provenance.

`results/<example>/gradients/<variant>.h5` holds what runs on this machine produce (not
committed); `results/<example>/recorded/<variant>.h5` holds reference gradients recorded
elsewhere (a Julia run, a GPU run) and committed, so that every CI run compares the live
variants with them. Each file has a dataset `gradient` and the attributes `loss`,
`variant`, `family`, `example`, the example's parameters (e.g. `K`), `dtype`,
`inputs_sha256`, `backend`, `backend_version` and `created`. `loss` is absent when the
saver did not know it. Files are written atomically (see `_atomic`).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ._atomic import atomic_path
from ._errors import InputError, InputFileError, StaleGradientError
from ._inputs import inputs_path, read_inputs_file
from ._registry import example, find_variant
from ._root import results_dir

PRODUCED, RECORDED = "gradients", "recorded"


@dataclass
class StoredGradient:
    """A gradient with its provenance, as read from the store."""

    gradient: np.ndarray
    loss: float | None
    variant: str
    family: str
    example: str
    params: dict[str, int]
    dtype: str
    inputs_sha256: str
    backend: str
    backend_version: str
    created: str
    path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def recorded(self) -> bool:
        return self.path.parent.name == RECORDED


def gradient_path(example_name: str, variant: str, *, recorded: bool = False) -> Path:
    """Where the store keeps a variant's gradient (`recorded=True`: committed references)."""
    ex = example(example_name)
    return results_dir(ex.name) / (RECORDED if recorded else PRODUCED) / f"{variant}.h5"


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def save_gradient(
    example_name: str,
    variant: str,
    gradient: Any,
    *,
    loss: float | None = None,
    family: str | None = None,
    params: dict[str, int] | None = None,
    inputs_sha256: str | None = None,
    backend: str | None = None,
    backend_version: str | None = None,
    path: Path | str | None = None,
    allow_nonfinite: bool = False,
) -> Path:
    """Save a gradient with its provenance, atomically.

    **Arguments:**

    - `example_name`, `variant`: where it goes (`results/<example>/gradients/<variant>.h5`).
    - `gradient`: float32/float64 array, the shape of the example's `wrt` input.
    - `loss`: the loss at the same inputs, if known.
    - `family`: needed for names the registry does not know (a user's own experiment).
    - `params`, `inputs_sha256`: what the gradient was computed on; default: the shared
      inputs file and its parameters (e.g. the `K` used for checks).
    - `backend`, `backend_version`: default from the registry (else the name's prefix).
    - `path`: write here instead of the store (same format).
    - `allow_nonfinite`: store NaN/Inf instead of refusing them (for failure reports).

    **Returns:** the path written.
    """
    ex = example(example_name)
    # The name becomes a file name in the store: keep it inside the store's folder.
    if not variant or variant.startswith(".") or any(c in variant for c in "/\\"):
        raise InputError(f"variant name {variant!r} cannot name a file in the store")
    g = np.asarray(gradient)
    if g.dtype not in (np.float32, np.float64):
        raise InputError(f"gradient of {variant} has dtype {g.dtype}; expected float64 or float32")
    if not allow_nonfinite and not np.all(np.isfinite(g)):
        raise InputError(f"gradient of {variant} contains NaN/Inf; not saved")
    if inputs_sha256 is None:
        shared = read_inputs_file(ex.name, inputs_path(ex.name), shared=True)
        inputs_sha256 = shared["sha256"]
        expected = shared["arrays"][ex.wrt].shape
        if g.shape != expected:
            raise InputError(
                f"gradient of {variant} has shape {g.shape}; the shared inputs' {ex.wrt} "
                f"has {expected}"
            )
        params = {**shared["params"], **(params or {})}
    params = {p.name: int((params or {}).get(p.name, p.default)) for p in ex.params}

    registered = find_variant(ex.name, variant)
    if family is None:
        if registered is None:
            raise InputError(
                f"{variant!r} is not a registered variant of {ex.name}; pass family=... "
                "so that `weanj diff` knows which gradients it must agree with"
            )
        family = registered.family
    if backend is None:
        backend = registered.backend if registered is not None else variant.split("-")[0]
    if backend_version is None:
        backend_version = registered.backend_version() if registered is not None else ""

    attrs: dict[str, Any] = {
        "variant": variant,
        "family": family,
        "example": ex.name,
        **params,
        "dtype": str(g.dtype),
        "inputs_sha256": inputs_sha256,
        "backend": backend,
        "backend_version": backend_version,
        "created": _utc_now(),
    }
    if loss is not None:
        attrs["loss"] = float(loss)
    target = Path(path) if path is not None else gradient_path(ex.name, variant)
    with atomic_path(target) as tmp:
        with h5py.File(tmp, "w", track_order=False) as f:
            f.create_dataset("gradient", data=np.ascontiguousarray(g), track_times=False)
            for key, value in attrs.items():
                f.attrs[key] = value
    return target


_REQUIRED = ("variant", "family", "example", "dtype", "inputs_sha256")


def read_gradient_file(path: Path | str) -> StoredGradient:
    """Read one gradient file; a missing or corrupt file raises `InputFileError`."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"gradient file {path} does not exist")
    try:
        with h5py.File(path, "r") as f:
            g = f["gradient"][()]
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    # RuntimeError: how h5py reports some damaged metadata (e.g. a corrupt attribute heap).
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputFileError(f"cannot read gradient file {path} ({first})") from None
    missing = [k for k in _REQUIRED if k not in attrs]
    if missing:
        raise InputFileError(f"gradient file {path} lacks attribute(s) {', '.join(missing)}")
    ex = example(str(attrs["example"]))
    params = {p.name: int(attrs[p.name]) for p in ex.params if p.name in attrs}
    known = set(_REQUIRED) | {"loss", "backend", "backend_version", "created"} | set(params)
    return StoredGradient(
        gradient=g,
        loss=float(attrs["loss"]) if "loss" in attrs else None,
        variant=str(attrs["variant"]),
        family=str(attrs["family"]),
        example=ex.name,
        params=params,
        dtype=str(attrs["dtype"]),
        inputs_sha256=str(attrs["inputs_sha256"]),
        backend=str(attrs.get("backend", "")),
        backend_version=str(attrs.get("backend_version", "")),
        created=str(attrs.get("created", "")),
        path=path,
        extra={k: v for k, v in attrs.items() if k not in known},
    )


def _check_fresh(stored: StoredGradient) -> None:
    current = read_inputs_file(stored.example, inputs_path(stored.example), shared=True)
    if stored.inputs_sha256 != current["sha256"]:
        raise StaleGradientError(
            f"{stored.path} was computed on other inputs (sha256 {stored.inputs_sha256[:16]}…, "
            f"current {current['sha256'][:16]}…); recompute it with "
            f"`weanj run {stored.example} {stored.variant}` or pass allow_stale=True"
        )


def load_gradient(
    example_name: str,
    variant: str,
    *,
    recorded: bool = False,
    allow_stale: bool = False,
    path: Path | str | None = None,
) -> StoredGradient:
    """A stored gradient; refuses one computed on other inputs unless `allow_stale`."""
    stored = read_gradient_file(
        path if path is not None else gradient_path(example_name, variant, recorded=recorded)
    )
    if stored.example != example(example_name).name:
        raise InputError(f"{stored.path} holds a gradient of {stored.example}, not {example_name}")
    if not allow_stale:
        _check_fresh(stored)
    return stored


def stored_gradients(
    example_name: str, *, produced: bool = True, recorded: bool = True
) -> list[StoredGradient]:
    """Every gradient file of an example in the store (unchecked for staleness)."""
    ex = example(example_name)
    kinds = [k for k, on in ((PRODUCED, produced), (RECORDED, recorded)) if on]
    out = []
    for kind in kinds:
        folder = results_dir(ex.name) / kind
        if folder.is_dir():
            out.extend(read_gradient_file(p) for p in sorted(folder.glob("*.h5")))
    return out
