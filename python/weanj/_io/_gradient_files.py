"""Reading gradient files without trusting them.

A file is probed before it is parsed (`_safeh5`); then every attribute must have its
type, every dataset its recorded digest and the dtype its kind implies, and the key
recomputed from the attributes must be the stored one. Format-1 files (no `format`, no
`key`) are still read: their key comes from their legacy `inputs_sha256`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .._errors import InputError, InputFileError, WeanjError
from .._model import COMPLEX_OF, Example, Gradient, check_name, provenance_key, shown
from .._places import PRODUCED, RECORDED, Places, ResultPath
from .._vocabulary import DTYPES
from ._beyond_files import GROUPS, beyond_into, read_beyond
from ._h5 import array_sha256, read_array, read_attributes
from ._safeh5 import parsed

FORMAT = 2

_REQUIRED = ("variant", "family", "example", "dtype", "inputs_sha256")

_OPTIONAL_TEXT = ("backend", "backend_version", "created", "key", "x64", "levels", "evaluation")
_OPTIONAL_NUMBERS = ("loss", "noise_loss")

SHA256_HEX = re.compile(r"[0-9a-f]{64}\Z")  # a sha256 digest as files and records write it


def expected_dtype(ex: Example, array: str, dtype: str) -> str:
    """The dtype of a gradient array of a run in `dtype` (complex arrays: complex)."""
    return COMPLEX_OF[dtype] if ex.array(array).kind == "complex" else dtype


def fix_hint(path: Path, places: Places) -> str:
    """What recomputes a gradient file, from where it lies in the store."""
    at = places.result_path(path)
    if at is not None and at.kind == PRODUCED:
        flag = "" if at.dtype == "float64" else f" --dtype {at.dtype}"
        return f"; recompute it with `weanj run {at.example} {path.stem}{flag}` or delete it"
    if at is not None and at.kind == RECORDED:
        return "; re-record it (`pytest --weanj --weanj-record`) or delete it"
    return "; write it again or delete it"


def _read_datasets(f: h5py.File, where: str, hint: str) -> dict[str, tuple[np.ndarray, Any, Any]]:
    """`{name: (values, recorded sha256 or None, noise or None)}`; "" for the single dataset."""
    if "gradient" not in f:
        raise InputFileError(f"{where} has no `gradient` dataset or group{hint}")
    node = f["gradient"]
    items = [("", node)] if isinstance(node, h5py.Dataset) else list(node.items())
    out = {}
    for name, ds in items:
        label = f"gradient/{name}".rstrip("/")
        values = read_array(ds, f"{where}: {label}", hint)
        attrs = read_attributes(ds.attrs, f"{where}: {label}", hint)
        sha, noise = attrs.get("sha256"), attrs.get("noise")
        if sha is not None and not isinstance(sha, str):
            raise InputFileError(f"{where}: the sha256 attribute of {label} is not text{hint}")
        if noise is not None and not _number(noise):
            raise InputFileError(f"{where}: the noise attribute of {label} is not a number{hint}")
        out[name] = (values, sha, noise)
    return out


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _typed_attributes(attrs: dict[str, Any], where: str, hint: str) -> None:
    """Each provenance attribute of the type the format says, or an `InputFileError`."""
    missing = [k for k in _REQUIRED if k not in attrs]
    if missing:
        raise InputFileError(f"{where} lacks attribute(s) {', '.join(missing)}{hint}")
    for key in (*_REQUIRED, *_OPTIONAL_TEXT):
        if key in attrs and (not isinstance(attrs[key], str) or "\n" in attrs[key]):
            raise InputFileError(
                f"{where}: attribute {key} must be one line of text, got {shown(attrs[key])}{hint}"
            )
    if attrs["dtype"] not in DTYPES:
        raise InputFileError(
            f"{where}: attribute dtype must be float32 or "
            f"float64, got {shown(attrs['dtype'])}{hint}"
        )
    for key in ("inputs_sha256", "key"):
        if key in attrs and not SHA256_HEX.match(attrs[key]):
            raise InputFileError(
                f"{where}: attribute {key} must be 64 hexadecimal "
                f"digits, got {shown(attrs[key])}{hint}"
            )
    fmt = attrs.get("format", 1)
    if fmt not in (1, FORMAT) or isinstance(fmt, bool):
        raise InputFileError(
            f"{where}: format {shown(fmt)} is not one this weanj reads (1 or {FORMAT}){hint}"
        )
    if fmt == FORMAT and "key" not in attrs:
        raise InputFileError(f"{where} lacks attribute key{hint}")
    for key in _OPTIONAL_NUMBERS:
        if key in attrs and not _number(attrs[key]):
            raise InputFileError(
                f"{where}: attribute {key} must be a number, got {shown(attrs[key])}{hint}"
            )
    try:
        check_name("variant", attrs["variant"])
    except WeanjError:
        raise InputFileError(
            f"{where}: attribute variant {shown(attrs['variant'])} is not a safe name{hint}"
        ) from None


def read_gradient_file(
    path: Path | str, ex: Example, places: Places, *, source: str | None = None
) -> Gradient:
    """Read one gradient file of example `ex`; a missing, corrupt, mistyped or tampered
    file, or one of another example or lying in the store of another dtype, raises
    `InputFileError` (one line naming the file and what recomputes it)."""
    path = Path(path)
    hint = fix_hint(path, places)
    where = f"gradient file {path}"
    lookups = ("gradient", "noise", "sha256", *GROUPS, *_REQUIRED)
    with parsed(path, "gradient file", hint, lookups) as f:
        datasets = _read_datasets(f, where, hint)
        attrs = read_attributes(f.attrs, where, hint)
        entries = _read_entries(f, where, hint)
        _typed_attributes(attrs, where, hint)
        beyond = read_beyond(f, ex, attrs["dtype"], where, hint)
    if attrs["example"] != ex.name:
        raise InputFileError(
            f"{where} holds a gradient of {shown(attrs['example'])}, not of {ex.name}{hint}"
        )
    at = places.result_path(path)
    _check_store_dtype(at, attrs["dtype"], where, hint)
    gradients = _gradient_datasets(ex, datasets, attrs["dtype"], where, hint)
    unsigned = [f"gradient/{n}".rstrip("/") for n, (_, sha, _) in datasets.items() if sha is None]
    if attrs.get("format", 1) == FORMAT and unsigned:  # the writer signs every dataset
        raise InputFileError(f"{where}: {', '.join(unsigned)} lacks its sha256 attribute{hint}")
    params = _params_of(ex, attrs, where, hint)
    key = provenance_key(attrs["inputs_sha256"], params, attrs["dtype"])
    fmt = attrs.get("format", 1)
    if fmt == FORMAT and attrs["key"] != key:
        raise InputFileError(
            f"{where}: its key does not match its attributes (modified or corrupt){hint}"
        )
    known = set(_REQUIRED) | {"format", *_OPTIONAL_NUMBERS, *_OPTIONAL_TEXT} | set(ex.param_names)
    if source is None:
        source = _source_of(path, at, attrs["variant"])
    noise = {name: float(n) for name, (_, _, n) in _named(ex, datasets).items() if n is not None}
    if "noise_loss" in attrs:
        noise["loss"] = float(attrs["noise_loss"])
    noise_entries = _entries_of(ex, entries, gradients, where, hint)
    g = Gradient(
        example=ex,
        variant=attrs["variant"],
        family=attrs["family"],
        dtype=attrs["dtype"],
        gradients=gradients,
        loss=float(attrs["loss"]) if "loss" in attrs else None,
        params=params,
        inputs_sha256=attrs["inputs_sha256"],
        key=key,
        backend=attrs.get("backend", ""),
        backend_version=attrs.get("backend_version", ""),
        created=attrs.get("created", ""),
        path=path,
        source=source,
        format=fmt,
        attributes={k: v for k, v in attrs.items() if k not in known},
        x64=attrs.get("x64"),  # the run's configuration
        noise=noise,
        noise_entries=noise_entries,
        levels_measured=attrs.get("levels", "measured") == "measured",
        evaluated="levels" in attrs or "noise_loss" in attrs,
    )
    beyond_into(g, beyond)
    return g


def _check_store_dtype(at: ResultPath | None, dtype: str, where: str, hint: str) -> None:
    """A file of the store lies in the store of its own dtype (an `InputFileError` if not)."""
    if at is not None and at.kind == PRODUCED and at.dtype != dtype:
        raise InputFileError(
            f"{where} holds a {dtype} gradient but lies in the {at.dtype} store "
            f"(results/{at.example}/{PRODUCED}/"
            f"{'' if at.dtype == 'float64' else at.dtype + '/'})"
            f"{hint}"
        )


def _params_of(ex: Example, attrs: dict[str, Any], where: str, hint: str) -> dict[str, Any]:
    """The example's parameters as the file's attributes give them, each checked, none
    missing (an `InputFileError` naming the file otherwise)."""
    try:
        params = ex.check_params({p: attrs[p] for p in ex.param_names if p in attrs})
    except InputError as e:
        raise InputFileError(f"{where}: attribute {e}{hint}") from None
    missing = [p for p in ex.param_names if p not in attrs]
    if missing:
        raise InputFileError(f"{where} lacks the parameter attribute(s) {', '.join(missing)}{hint}")
    return params


def _source_of(path: Path, at: ResultPath | None, variant: str) -> str:
    """Where a gradient file comes from, by where it lies: "recorded", "store" (its
    variant's own file of the store) or "file"."""
    if at is not None and at.kind == RECORDED:
        return "recorded"
    if at is not None and at.kind == PRODUCED and path.stem == variant:
        return "store"
    return "file"


def _read_entries(f: Any, where: str, hint: str) -> dict[str, np.ndarray]:
    """The entries' rounding levels (`noise`, a dataset or a group of them, laid out as
    `gradient`; `Gradient.noise_entries`): `{name: values}`, "" for the single dataset;
    {} where the file has none (written before weanj measured them, or not by a run)."""
    if "noise" not in f:
        return {}
    node = f["noise"]
    items = [("", node)] if isinstance(node, h5py.Dataset) else list(node.items())
    return {name: read_array(ds, f"{where}: noise/{name}".rstrip("/"), hint) for name, ds in items}


def _entries_of(ex: Example, entries: dict, gradients: dict, where: str, hint: str) -> dict:
    """The entries' rounding levels by wrt name, each held to its gradient's shape, real,
    finite and not negative, or an `InputFileError`."""
    if not entries:
        return {}
    named = {ex.wrt_names[0]: entries[""]} if set(entries) == {""} else entries
    if set(named) != set(gradients):
        raise InputFileError(
            f"{where}: its noise arrays ({', '.join(sorted(named)) or 'one'}) are not its "
            f"gradient arrays ({', '.join(gradients)}){hint}"
        )
    out = {}
    for name, values in named.items():
        fine = values.dtype.kind == "f" and values.shape == np.shape(gradients[name])
        if not fine or not (np.isfinite(values).all() and (values >= 0).all()):
            raise InputFileError(
                f"{where}: noise/{name} is not a level per entry of its gradient (real, "
                f"finite, not negative, shaped {np.shape(gradients[name])}){hint}"
            )
        out[name] = values.astype(np.float64)
    return out


def _named(ex: Example, datasets: dict) -> dict:
    """The datasets by wrt name (the single dataset "" is the one wrt array's)."""
    if set(datasets) == {""} and len(ex.wrt_names) == 1:
        return {ex.wrt_names[0]: datasets[""]}
    return datasets


def _gradient_datasets(ex: Example, datasets: dict, dtype: str, where: str, hint: str) -> dict:
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
            f"{where} holds gradient/{', gradient/'.join(sorted(datasets))}; {ex.name} has "
            f"the gradient arrays {', '.join(names)}{hint}"
        )
    out = {}
    for name in names:
        values, sha, _ = datasets[name]
        expected = expected_dtype(ex, name, dtype)
        if values.dtype.name != expected:
            raise InputFileError(
                f"{where}: {name} is {values.dtype}, but a {dtype} gradient is {expected}{hint}"
            )
        if sha is not None and sha != array_sha256(values):
            raise InputFileError(
                f"{where}: the values of {name} do not match their "
                f"recorded sha256 (modified or corrupt){hint}"
            )
        out[name] = values
    return out


@dataclass
class StoreScan:
    """Every gradient file of an example in the store, read; and the ones that could not
    be read, with why (the judge reports them, the others are still compared)."""

    gradients: list[Gradient]
    problems: list[tuple[Path, str]]


def scan_store(
    ex: Example,
    places: Places,
    *,
    produced: bool = True,
    recorded: bool = True,
    skip: Any = None,
) -> StoreScan:
    """Read `gradients/`, `gradients/float32/` and `recorded/` (never `runs/`); `skip`:
    `path -> bool`, files not to read at all (the variants' own store files, which a live
    run replaces)."""
    folders = []
    if produced:
        folders += [places.gradients(ex.name), places.gradients(ex.name, "float32")]
    if recorded:
        folders.append(places.recorded_dir(ex.name))
    scan = StoreScan([], [])
    for folder in folders:
        if not folder.is_dir():
            continue
        for p in sorted(folder.glob("*.h5")):
            if skip is not None and skip(p):
                continue
            if p.is_symlink() or not p.is_file():
                scan.problems.append(
                    (p, f"{p} is not a regular file; weanj reads only regular files")
                )
                continue
            try:
                scan.gradients.append(read_gradient_file(p, ex, places))
            except InputFileError as e:
                scan.problems.append((p, str(e)))
    return scan
