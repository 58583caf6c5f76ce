"""The gradient store: one HDF5 file per (example, variant), with provenance.

`results/<example>/gradients/<variant>.h5` holds what runs on this machine produce (not
committed); `results/<example>/recorded/<variant>.h5` holds reference gradients recorded
elsewhere (a Julia run, a GPU run) and committed, so that every CI run compares the live
variants with them. Each file has the gradient and the attributes `loss`, `variant`,
`family`, `example`, the example's parameters (e.g. `K`), `dtype`, `inputs_sha256`,
`backend`, `backend_version` and `created`. `loss` is absent when the saver did not know it.

The gradient is the dataset `gradient` when the example differentiates with respect to
one array, else a group `gradient` with one dataset per array name (DESIGN.md, "Several
gradient arrays"). Each gradient dataset carries `sha256`, the digest of its values
(little-endian, its own dtype, C order), checked on every read. Files are written
atomically (see `_atomic`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ._atomic import atomic_path
from ._errors import InputError, InputFileError, StaleGradientError
from ._inputs import inputs_path, read_inputs_file
from ._registry import Example, example, find_variant
from ._root import results_dir

PRODUCED, RECORDED = "gradients", "recorded"


@dataclass
class StoredGradient:
    """A gradient with its provenance, as read from the store."""

    gradients: dict[str, np.ndarray]  # {wrt array name: gradient}, in the example's order
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

    @property
    def gradient(self):
        """The gradient as a variant's `grad` returns it: one array, or a dict of several."""
        if len(self.gradients) == 1:
            return next(iter(self.gradients.values()))
        return dict(self.gradients)

    @property
    def shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return tuple((k, tuple(g.shape)) for k, g in self.gradients.items())


def gradient_path(example_name: str, variant: str, *, recorded: bool = False) -> Path:
    """Where the store keeps a variant's gradient (`recorded=True`: committed references)."""
    ex = example(example_name)
    return results_dir(ex.name) / (RECORDED if recorded else PRODUCED) / f"{variant}.h5"


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def array_sha256(a: np.ndarray) -> str:
    """Digest of an array's values: little-endian, its own dtype, C order."""
    a = np.asarray(a)
    return hashlib.sha256(
        np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
    ).hexdigest()


def _gradient_arrays(ex: Example, variant: str, gradient: Any) -> dict[str, np.ndarray]:
    """`{name: array}` in `wrt` order, each float32/float64 and of one dtype."""
    try:
        named = ex.gradients(gradient)
    except InputError as e:
        raise InputError(f"gradient of {variant}: {e}") from None
    out = {}
    for name, g in named.items():
        g = np.asarray(g)
        if g.dtype not in (np.float32, np.float64):
            raise InputError(
                f"gradient of {variant} ({name}) has dtype {g.dtype}; expected float64 or float32"
            )
        out[name] = g
    if len({g.dtype for g in out.values()}) > 1:
        raise InputError(f"gradient arrays of {variant} mix float32 and float64")
    return out


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
    - `gradient`: float32/float64 array shaped like the example's `wrt` input; for
      several `wrt` arrays a dict `{name: array}` (or a tuple in `wrt` order).
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
    arrays = _gradient_arrays(ex, variant, gradient)
    for name, g in arrays.items():
        if not allow_nonfinite and not np.all(np.isfinite(g)):
            label = f" ({name})" if len(arrays) > 1 else ""
            raise InputError(f"gradient of {variant}{label} contains NaN/Inf; not saved")
    if inputs_sha256 is None:
        shared = read_inputs_file(ex.name, inputs_path(ex.name), shared=True)
        inputs_sha256 = shared["sha256"]
        for name, g in arrays.items():
            expected = shared["arrays"][name].shape
            if g.shape != expected:
                raise InputError(
                    f"gradient of {variant} has shape {g.shape}; the shared inputs' {name} "
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
        "dtype": str(next(iter(arrays.values())).dtype),
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
            if len(ex.wrt_names) == 1:
                places = {"gradient": arrays[ex.wrt_names[0]]}
            else:
                f.create_group("gradient", track_order=True)
                places = {f"gradient/{name}": g for name, g in arrays.items()}
            for where, g in places.items():
                ds = f.create_dataset(where, data=np.ascontiguousarray(g), track_times=False)
                ds.attrs["sha256"] = array_sha256(g)
            for key, value in attrs.items():
                f.attrs[key] = value
    return target


_REQUIRED = ("variant", "family", "example", "dtype", "inputs_sha256")


def _read_datasets(f: h5py.File, path: Path) -> dict[str, tuple[np.ndarray, Any]]:
    """`{name: (values, recorded sha256 or None)}`; name "" for the single dataset."""
    if "gradient" not in f:
        raise InputFileError(f"gradient file {path} has no `gradient` dataset or group")
    node = f["gradient"]
    items = [("", node)] if isinstance(node, h5py.Dataset) else list(node.items())
    out = {}
    for name, ds in items:
        if not isinstance(ds, h5py.Dataset):
            raise InputFileError(f"gradient file {path}: gradient/{name} is not a dataset")
        sha = ds.attrs.get("sha256")
        out[name] = (ds[()], sha.decode() if isinstance(sha, bytes) else sha)
    return out


def read_gradient_file(path: Path | str) -> StoredGradient:
    """Read one gradient file; a missing, corrupt or tampered file raises `InputFileError`."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"gradient file {path} does not exist")
    try:
        with h5py.File(path, "r") as f:
            datasets = _read_datasets(f, path)
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    except InputFileError:
        raise
    # RuntimeError: how h5py reports some damaged metadata (e.g. a corrupt attribute heap).
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputFileError(f"cannot read gradient file {path} ({first})") from None
    missing = [k for k in _REQUIRED if k not in attrs]
    if missing:
        raise InputFileError(f"gradient file {path} lacks attribute(s) {', '.join(missing)}")
    ex = example(str(attrs["example"]))
    names = ex.wrt_names
    if set(datasets) == {""}:
        if len(names) != 1:
            raise InputFileError(
                f"gradient file {path} holds one array; {ex.name} has the gradient arrays "
                f"{', '.join(names)} (a group `gradient`)"
            )
        datasets = {names[0]: datasets[""]}
    elif set(datasets) != set(names):
        raise InputFileError(
            f"gradient file {path} holds gradient/{', gradient/'.join(sorted(datasets))}; "
            f"{ex.name} has the gradient arrays {', '.join(names)}"
        )
    for name, (values, sha) in datasets.items():
        if not isinstance(values, np.ndarray) or values.dtype not in (np.float32, np.float64):
            raise InputFileError(f"gradient file {path}: {name} is not a float32/float64 array")
        if sha is not None and sha != array_sha256(values):
            raise InputFileError(
                f"gradient file {path}: the values of {name} do not match their recorded "
                "sha256 (modified or corrupt)"
            )
    params = {p.name: int(attrs[p.name]) for p in ex.params if p.name in attrs}
    known = set(_REQUIRED) | {"loss", "backend", "backend_version", "created"} | set(params)
    return StoredGradient(
        gradients={name: datasets[name][0] for name in names},
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
