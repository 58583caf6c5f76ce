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
from .._model import COMPLEX_OF, Example, Gradient, check_name, shown
from .._project import results_dir
from .._registry import example as example_named
from .._registry import example_names, find_variant
from ._h5 import array_sha256, provenance_key, read_array, read_attributes
from ._places import PRODUCED, RECORDED, fix_hint, gradient_path, place_of
from ._safeh5 import parsed

FORMAT = 2

_REQUIRED = ("variant", "family", "example", "dtype", "inputs_sha256")

_OPTIONAL_TEXT = ("backend", "backend_version", "created", "key")

_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


def expected_dtype(ex: Example, array: str, dtype: str) -> str:
    """The dtype of a gradient array of a run in `dtype` (complex arrays: complex)."""
    return COMPLEX_OF[dtype] if ex.array(array).kind == "complex" else dtype


def _read_datasets(f: h5py.File, where: str, hint: str) -> dict[str, tuple[np.ndarray, Any]]:
    """`{name: (values, recorded sha256 or None)}`; name "" for the single dataset."""
    if "gradient" not in f:
        raise InputFileError(f"{where} has no `gradient` dataset or group{hint}")
    node = f["gradient"]
    items = [("", node)] if isinstance(node, h5py.Dataset) else list(node.items())
    out = {}
    for name, ds in items:
        label = f"gradient/{name}".rstrip("/")
        values = read_array(ds, f"{where}: {label}", hint)
        sha = read_attributes(ds.attrs, f"{where}: {label}", hint).get("sha256")
        if sha is not None and not isinstance(sha, str):
            raise InputFileError(f"{where}: the sha256 attribute of {label} is not text{hint}")
        out[name] = (values, sha)
    return out


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
    if attrs["dtype"] not in ("float32", "float64"):
        raise InputFileError(
            f"{where}: attribute dtype must be float32 or "
            f"float64, got {shown(attrs['dtype'])}{hint}"
        )
    for key in ("inputs_sha256", "key"):
        if key in attrs and not _SHA256.match(attrs[key]):
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
    loss = attrs.get("loss")
    if loss is not None and (isinstance(loss, bool) or not isinstance(loss, (int, float))):
        raise InputFileError(f"{where}: attribute loss must be a number, got {shown(loss)}{hint}")
    try:
        check_name("variant", attrs["variant"])
    except WeanjError:
        raise InputFileError(
            f"{where}: attribute variant {shown(attrs['variant'])} is not a safe name{hint}"
        ) from None


def read_gradient_file(path: Path | str, *, source: str | None = None) -> Gradient:
    """Read one gradient file; a missing, corrupt, mistyped or tampered file raises
    `InputFileError` (one line naming the file and what recomputes it)."""
    path = Path(path)
    hint = fix_hint(path)
    where = f"gradient file {path}"
    with parsed(path, "gradient file", hint, ("gradient", "sha256", *_REQUIRED)) as f:
        datasets = _read_datasets(f, where, hint)
        attrs = read_attributes(f.attrs, where, hint)
    _typed_attributes(attrs, where, hint)
    if attrs["example"] not in example_names():
        raise InputFileError(
            f"{where} is a gradient of example {shown(attrs['example'])}, which this project "
            f"does not have{hint}"
        )
    ex = example_named(attrs["example"])
    gradients = _gradient_datasets(ex, datasets, attrs["dtype"], where, hint)
    unsigned = [f"gradient/{n}".rstrip("/") for n, (_, sha) in datasets.items() if sha is None]
    if attrs.get("format", 1) == FORMAT and unsigned:  # the writer signs every dataset
        raise InputFileError(f"{where}: {', '.join(unsigned)} lacks its sha256 attribute{hint}")
    try:
        params = ex.check_params({p: attrs[p] for p in ex.param_names if p in attrs})
    except InputError as e:
        raise InputFileError(f"{where}: attribute {e}{hint}") from None
    missing = [p for p in ex.param_names if p not in attrs]
    if missing:
        raise InputFileError(f"{where} lacks the parameter attribute(s) {', '.join(missing)}{hint}")
    key = provenance_key(attrs["inputs_sha256"], params, attrs["dtype"])
    fmt = attrs.get("format", 1)
    if fmt == FORMAT and attrs["key"] != key:
        raise InputFileError(
            f"{where}: its key does not match its attributes (modified or corrupt){hint}"
        )
    registered = find_variant(ex.name, attrs["variant"])
    if registered is not None and registered.family != attrs["family"]:
        raise InputFileError(
            f"{where} says {attrs['variant']} is of family {attrs['family']!r}, but it is "
            f"registered in family {registered.family!r}{hint}"
        )
    known = set(_REQUIRED) | {"loss", "format", *_OPTIONAL_TEXT} | set(ex.param_names)
    place = place_of(path)
    if source is None:
        source = "file"
        if place is not None and place.kind == RECORDED:
            source = "recorded"
        elif (
            place is not None
            and place.kind == PRODUCED
            and registered is not None
            and path.stem == attrs["variant"]
        ):
            source = "store"
    return Gradient(
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
        extra={k: v for k, v in attrs.items() if k not in known},
    )


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
        values, sha = datasets[name]
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
    example: Example | str, *, produced: bool = True, recorded: bool = True
) -> StoreScan:
    """Read `gradients/`, `gradients/float32/` and `recorded/` (never `runs/`)."""
    ex = example_named(example)
    folders = []
    if produced:
        folders += [results_dir(ex.name) / PRODUCED, results_dir(ex.name) / PRODUCED / "float32"]
    if recorded:
        folders.append(results_dir(ex.name) / RECORDED)
    scan = StoreScan([], [])
    for folder in folders:
        if not folder.is_dir():
            continue
        for p in sorted(folder.glob("*.h5")):
            if p.is_symlink() or not p.is_file():
                scan.problems.append(
                    (p, f"{p} is not a regular file; weanj reads only regular files")
                )
                continue
            try:
                g = read_gradient_file(p)
            except InputFileError as e:
                scan.problems.append((p, str(e)))
                continue
            if g.example.name != ex.name:
                scan.problems.append(
                    (p, f"gradient file {p} holds a gradient of {g.example.name}, not of {ex.name}")
                )
                continue
            scan.gradients.append(g)
    return scan


def stored_gradients(
    example: Example | str, *, produced: bool = True, recorded: bool = True
) -> list[Gradient]:
    """Every readable gradient file of an example in the store (unchecked for staleness);
    an unreadable one raises its `InputFileError`."""
    scan = scan_store(example, produced=produced, recorded=recorded)
    if scan.problems:
        raise InputFileError(scan.problems[0][1])
    return scan.gradients


def load_gradient(
    example: Example | str,
    variant: str,
    *,
    recorded: bool = False,
    allow_stale: bool = False,
    path: Path | str | None = None,
    dtype: str = "float64",
) -> Gradient:
    """A stored gradient; refuses one computed on other inputs unless `allow_stale`."""
    from .._errors import StaleGradientError
    from ._inputs import read_inputs

    ex = example_named(example)
    g = read_gradient_file(
        path if path is not None else gradient_path(ex, variant, recorded=recorded, dtype=dtype)
    )
    if g.example.name != ex.name:
        raise InputError(f"{g.path} holds a gradient of {g.example.name}, not {ex.name}")
    if not allow_stale:
        current = read_inputs(ex)
        if not current.matches(g):
            raise StaleGradientError(  # the details below: the first line stays short
                f"{g.path.name} was computed on other inputs; recompute it with `weanj run "
                f"{ex.name} {g.variant}` or pass allow_stale=True\n  stored: {_key_text(g)}; "
                f"current: {current.describe(g.dtype)}\n  file: {g.path}"
            )
    return g


def _key_text(g: Gradient) -> str:
    parts = [f"inputs sha256 {g.inputs_sha256[:12]}…"] + [f"{k}={v}" for k, v in g.params.items()]
    return ", ".join([*parts, g.dtype])
