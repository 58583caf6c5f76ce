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

Reading trusts nothing in a file: it is probed before it is parsed (`_safeh5`), and every
attribute must have its type (text, an integer parameter within its range, a real
`loss`), `dtype` must be the arrays' dtype and `family` the registered family of the
variant the file names. Runs on other inputs than the shared ones are kept apart, in
`results/<example>/runs/` (see `_run`), never in `gradients/`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ._atomic import atomic_path
from ._errors import InputError, InputFileError, StaleGradientError, WeanjError
from ._inputs import check_param, inputs_path, plain_attributes, read_inputs_file, shown
from ._registry import Example, example, example_names, find_variant
from ._root import project_root, results_dir
from ._safeh5 import open_h5, trust_file

PRODUCED, RECORDED, RUNS = "gradients", "recorded", "runs"


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
        return example(self.example).gradient_value(self.gradients)

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
    elif registered is not None and family != registered.family:
        raise InputError(
            f"{variant} is registered in family {registered.family!r}, not {family!r}; "
            "save it under another name to record it as another family"
        )
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
    target = check_gradient_target(path) if path is not None else gradient_path(ex.name, variant)
    try:
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
            trust_file(tmp)  # weanj wrote these bytes itself: no need to probe them on reading
    except OSError as e:
        if isinstance(e, WeanjError):
            raise
        raise InputFileError(
            f"cannot write gradient file {target} ({e.strerror or e}); choose a writable place"
        ) from None
    return target


def check_gradient_target(path: Path | str) -> Path:
    """`path` if a gradient file may be written there, else an `InputFileError` saying why.

    Refused: an empty path, a directory, a path under a regular file, anything in
    `shared_inputs/`, and, outside the store's own folders, an existing file that is not a
    readable weanj gradient file (an inputs file, say): only gradient files are ever
    replaced. `weanj run --out` checks this before it runs the variant (`_run.check_out_path`),
    and `save_gradient(path=...)` again before it writes.
    """
    if path is None or not str(path).strip():
        raise InputFileError("the output path is empty; give a file name, e.g. --out grad.h5")
    target = Path(path).expanduser()
    if target.is_dir():
        raise InputFileError(
            f"{target} is a directory; give a file name, e.g. {target / 'gradient.h5'}"
        )
    above = target.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise InputFileError(f"cannot write {target}: {above} is a file, not a directory")
    resolved = target.resolve()
    if resolved.parent == (project_root() / "shared_inputs").resolve():
        raise InputFileError(
            f"refusing to write a gradient into {resolved.parent} (the shared inputs); "
            "choose another file"
        )
    in_store = (
        resolved.suffix == ".h5"
        and resolved.parent.name in (PRODUCED, RECORDED, RUNS)
        and resolved.parent.parent.parent == (project_root() / "results").resolve()
    )
    # The store's own files are replaced whatever state they are in (that is how a
    # damaged one is repaired); anywhere else only a readable gradient file is.
    if target.exists() and not in_store:
        try:
            read_gradient_file(target)
        except WeanjError:
            raise InputFileError(
                f"refusing to overwrite {target}: it is not a readable weanj gradient file "
                "(only those are replaced); choose another file or remove it"
            ) from None
    return target


_REQUIRED = ("variant", "family", "example", "dtype", "inputs_sha256")
_OPTIONAL_TEXT = ("backend", "backend_version", "created")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


def _fix_hint(path: Path) -> str:
    """What recomputes a gradient file, from where it lies in the store."""
    if path.parent.name == PRODUCED:
        return f"; recompute it with `weanj run {path.parent.parent.name} {path.stem}` or delete it"
    if path.parent.name == RECORDED:
        return "; re-record it (README: Recording a reference gradient) or delete it"
    return "; write it again or delete it"


def _read_datasets(f: h5py.File, where: str, hint: str) -> dict[str, tuple[np.ndarray, Any]]:
    """`{name: (values, recorded sha256 or None)}`; name "" for the single dataset."""
    if "gradient" not in f:
        raise InputFileError(f"{where} has no `gradient` dataset or group{hint}")
    node = f["gradient"]
    items = [("", node)] if isinstance(node, h5py.Dataset) else list(node.items())
    out = {}
    for name, ds in items:
        if not isinstance(ds, h5py.Dataset):
            raise InputFileError(f"{where}: gradient/{name} is not a dataset{hint}")
        sha = plain_attributes(ds.attrs, f"{where}: gradient/{name}".rstrip("/"), hint).get(
            "sha256"
        )
        if sha is not None and not isinstance(sha, str):
            label = f"gradient/{name}".rstrip("/")
            raise InputFileError(f"{where}: the sha256 attribute of {label} is not text{hint}")
        out[name] = (ds[()], sha)
    return out


def _typed_attributes(attrs: dict[str, Any], where: str, hint: str) -> None:
    """Each provenance attribute of the type the format says, or an `InputFileError`."""
    missing = [k for k in _REQUIRED if k not in attrs]
    if missing:
        raise InputFileError(f"{where} lacks attribute(s) {', '.join(missing)}{hint}")
    for key in (*_REQUIRED, *_OPTIONAL_TEXT):
        if key in attrs and not isinstance(attrs[key], str):
            raise InputFileError(
                f"{where}: attribute {key} must be text, got {shown(attrs[key])}{hint}"
            )
    if attrs["dtype"] not in ("float32", "float64"):
        raise InputFileError(
            f"{where}: attribute dtype must be float32 or float64, got {shown(attrs['dtype'])}"
            f"{hint}"
        )
    if not _SHA256.match(attrs["inputs_sha256"]):
        raise InputFileError(
            f"{where}: attribute inputs_sha256 must be 64 hexadecimal digits, got "
            f"{shown(attrs['inputs_sha256'])}{hint}"
        )
    if "loss" in attrs:
        loss = attrs["loss"]
        if isinstance(loss, bool) or not isinstance(loss, (int, float)):
            raise InputFileError(
                f"{where}: attribute loss must be a number, got {shown(loss)}{hint}"
            )


def read_gradient_file(path: Path | str) -> StoredGradient:
    """Read one gradient file; a missing, corrupt, mistyped or tampered file raises
    `InputFileError` (one line naming the file and what recomputes it)."""
    path = Path(path)
    hint = _fix_hint(path)
    where = f"gradient file {path}"
    try:
        with open_h5(path, "gradient file", hint, ("gradient", "sha256", *_REQUIRED)) as f:
            datasets = _read_datasets(f, where, hint)
            attrs = plain_attributes(f.attrs, where, hint)
    except InputFileError:
        raise
    # RuntimeError: how h5py reports some damaged metadata (e.g. a corrupt attribute heap).
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputFileError(f"cannot read {where} ({first}){hint}") from None
    _typed_attributes(attrs, where, hint)
    if attrs["example"] not in example_names():
        raise InputFileError(
            f"{where} is a gradient of example {shown(attrs['example'])}, which this project "
            f"does not have (its examples: {', '.join(example_names())}){hint}"
        )
    ex = example(attrs["example"])
    names = ex.wrt_names
    if set(datasets) == {""}:
        if len(names) != 1:
            raise InputFileError(
                f"{where} holds one array; {ex.name} has the gradient arrays "
                f"{', '.join(names)} (a group `gradient`){hint}"
            )
        datasets = {names[0]: datasets[""]}
    elif set(datasets) != set(names):
        raise InputFileError(
            f"{where} holds gradient/{', gradient/'.join(sorted(datasets))}; "
            f"{ex.name} has the gradient arrays {', '.join(names)}{hint}"
        )
    for name, (values, sha) in datasets.items():
        if not isinstance(values, np.ndarray) or values.dtype not in (np.float32, np.float64):
            raise InputFileError(f"{where}: {name} is not a float32/float64 array{hint}")
        if str(values.dtype) != attrs["dtype"]:
            raise InputFileError(
                f"{where}: {name} is {values.dtype} but the attribute dtype says "
                f"{attrs['dtype']}{hint}"
            )
        if sha is not None and sha != array_sha256(values):
            raise InputFileError(
                f"{where}: the values of {name} do not match their recorded "
                f"sha256 (modified or corrupt){hint}"
            )
    params = {}
    for p in ex.params:
        if p.name in attrs:
            try:
                params[p.name] = check_param(p, attrs[p.name])
            except InputError as e:
                raise InputFileError(f"{where}: attribute {e}{hint}") from None
    registered = find_variant(ex.name, attrs["variant"])
    if registered is not None and registered.family != attrs["family"]:
        raise InputFileError(
            f"{where} says {attrs['variant']} is of family {attrs['family']!r}, but "
            f"{attrs['variant']} is registered in family {registered.family!r}{hint}"
        )
    known = set(_REQUIRED) | {"loss", *_OPTIONAL_TEXT} | set(params)
    return StoredGradient(
        gradients={name: datasets[name][0] for name in names},
        loss=float(attrs["loss"]) if "loss" in attrs else None,
        variant=attrs["variant"],
        family=attrs["family"],
        example=ex.name,
        params=params,
        dtype=attrs["dtype"],
        inputs_sha256=attrs["inputs_sha256"],
        backend=attrs.get("backend", ""),
        backend_version=attrs.get("backend_version", ""),
        created=attrs.get("created", ""),
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
    """Every gradient file of an example in the store (unchecked for staleness): the
    `gradients/` and `recorded/` folders only (never `runs/`). A file of the folder that
    holds a gradient of another example is an `InputFileError`."""
    ex = example(example_name)
    kinds = [k for k, on in ((PRODUCED, produced), (RECORDED, recorded)) if on]
    out = []
    for kind in kinds:
        folder = results_dir(ex.name) / kind
        if folder.is_dir():
            for p in sorted(folder.glob("*.h5")):
                if not p.is_file():
                    continue
                s = read_gradient_file(p)
                if s.example != ex.name:
                    raise InputFileError(
                        f"gradient file {p} holds a gradient of {s.example}, not of {ex.name} "
                        f"(whose store it is in); move it to {results_dir(s.example) / kind}"
                    )
                out.append(s)
    return out
