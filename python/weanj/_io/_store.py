"""The gradient store: one HDF5 file per (example, variant, dtype), with provenance.

    results/<example>/gradients/<variant>.h5          float64 runs on the shared inputs
    results/<example>/gradients/float32/<variant>.h5  float32 runs on the shared inputs
    results/<example>/recorded/<name>.h5              committed references (any dtype)
    results/<example>/runs/<variant>-<...>.h5         anything else; never compared

A gradient file (format 2) holds the dataset `gradient` (one `wrt` array) or a group
`gradient` with one dataset per array, each with the `sha256` of its values, and the
attributes `format`, `key` (the provenance key), `loss`, `variant`, `family`, `example`,
every parameter (typed), `dtype`, `inputs_sha256`, `backend`, `backend_version` and
`created`. Files are written atomically (`_atomic`) and read without trusting them
(`_safeh5`, then every attribute's type, every dataset's digest and dtype, and the key
recomputed from the attributes). Format-1 files (no `format`, no `key`) are still read.

The store is weanj's to write (`check_target`): a file of `gradients/` holds exactly
that variant's gradient of this example on the shared inputs' key at that dtype, and a
recorded reference is never replaced without `force` (the old file is kept aside).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .._errors import InputError, InputFileError, WeanjError
from .._model import COMPLEX_OF, Example, Gradient, check_dtype, check_name, shown
from .._project import project_root, results_dir
from .._registry import example as example_named
from .._registry import example_names, find_variant
from ._atomic import atomic_path
from ._h5 import provenance_key, read_array, read_attributes, write_array, write_attributes
from ._safeh5 import open_h5, trust_file

PRODUCED, RECORDED, RUNS = "gradients", "recorded", "runs"
FORMAT = 2


def gradient_path(
    example: Example | str, variant: str, *, recorded: bool = False, dtype: str = "float64"
) -> Path:
    """Where the store keeps a variant's gradient (`recorded=True`: committed references)."""
    ex = example_named(example)
    check_name("variant", variant)
    if recorded:
        return results_dir(ex.name) / RECORDED / f"{variant}.h5"
    folder = results_dir(ex.name) / PRODUCED
    if check_dtype(dtype) != "float64":
        folder = folder / dtype
    return folder / f"{variant}.h5"


def array_sha256(a: np.ndarray) -> str:
    """Digest of an array's values: little-endian, its own dtype, C order."""
    a = np.asarray(a)
    return hashlib.sha256(
        np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
    ).hexdigest()


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# --- where a file may go ----------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """Where a path lies in a project's results: `kind` is "gradients", "recorded",
    "runs" or "other" (anything else under results/)."""

    example: str
    kind: str
    dtype: str = "float64"


def place_of(path: Path) -> Place | None:
    """The store place of `path`, or None outside `results/`."""
    results = (project_root() / "results").resolve()
    try:
        parts = path.resolve().relative_to(results).parts
    except ValueError:
        return None
    if len(parts) == 3 and parts[1] in (PRODUCED, RECORDED, RUNS):
        return Place(parts[0], parts[1])
    if len(parts) == 4 and parts[1] == PRODUCED and parts[2] == "float32":
        return Place(parts[0], PRODUCED, "float32")
    return Place(parts[0] if len(parts) > 1 else "", "other")


def check_target(
    path: Path | str, g: Gradient, shared_key: str | None, *, force: bool = False
) -> Path:
    """`path` if `g` may be written there, else an `InputFileError` saying why.

    Under `results/`: a file of `gradients/` must be this example's file of this very
    variant at this dtype, computed on the shared inputs (`shared_key`); a recorded
    reference must be of this example and the shared inputs too, and an existing one is
    replaced only with `force`; `runs/` takes anything of the example; nothing else
    there. Elsewhere: not a directory, not `shared_inputs/`, not an existing file that
    is not a readable weanj gradient file.
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
    if target.resolve().parent == (project_root() / "shared_inputs").resolve():
        raise InputFileError(
            f"refusing to write a gradient into {target.parent} (the shared inputs)"
        )
    place = place_of(target)
    if place is None:
        _check_outside(target)
        return target
    ex = g.example.name
    if place.kind in ("other", "") or place.example != ex or target.suffix != ".h5":
        raise InputFileError(
            f"refusing to write {target}: under results/ weanj writes only "
            f"results/{ex}/gradients/, recorded/ and runs/ files of {ex}"
        )
    fresh = shared_key is not None and g.key == shared_key
    if place.kind == PRODUCED:
        if target.stem != g.variant or place.dtype != g.dtype:
            raise InputFileError(
                f"refusing to write {g.variant} ({g.dtype}) to {target}: that is the store file of "
                f"{target.stem} ({place.dtype}); omit --out to use the store"
            )
        if not fresh:
            raise InputFileError(
                f"refusing to write {target}: the store holds only gradients of the shared inputs "
                f"and their parameters; omit --out (the run then goes to results/{ex}/runs/)"
            )
    elif place.kind == RECORDED:
        if not fresh:
            raise InputFileError(
                f"refusing to record {target}: a reference must be computed on the shared inputs "
                "and their parameters"
            )
        if target.exists() and not force:
            raise InputFileError(
                f"{target} exists: a recorded reference is replaced only with --force "
                "(the old file is then kept aside)"
            )
    return target


def _check_outside(target: Path) -> None:
    if target.exists():
        try:
            read_gradient_file(target)
        except WeanjError:
            raise InputFileError(
                f"refusing to overwrite {target}: it is not a readable weanj gradient file "
                "(only those are replaced); choose another file or remove it"
            ) from None


def _keep_aside(target: Path) -> Path | None:
    if not target.exists():
        return None
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    aside = target.with_name(f"{target.name}.replaced-{stamp}")
    k = 1
    while aside.exists():
        k += 1
        aside = target.with_name(f"{target.name}.replaced-{stamp}-{k}")
    os.replace(target, aside)
    return aside


# --- writing ------------------------------------------------------------------------


def _attributes(g: Gradient) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "format": FORMAT,
        "variant": g.variant,
        "family": g.family,
        "example": g.example.name,
        **g.params,
        "dtype": g.dtype,
        "inputs_sha256": g.inputs_sha256,
        "key": g.key,
        "backend": g.backend,
        "backend_version": g.backend_version,
        "created": g.created or _utc_now(),
    }
    if g.loss is not None:
        attrs["loss"] = float(g.loss)
    return attrs


def write_gradient(g: Gradient, target: Path, *, force: bool = False) -> Path:
    """Write `g` to `target` (already checked by `check_target`), atomically; with
    `force`, a recorded reference it replaces is moved aside first."""
    place = place_of(target)
    if force and place is not None and place.kind == RECORDED:
        _keep_aside(target)
    names = g.example.wrt_names
    try:
        with atomic_path(target) as tmp:
            with h5py.File(tmp, "w", track_order=False) as f:
                if len(names) == 1:
                    places = {"gradient": g.gradients[names[0]]}
                else:
                    f.create_group("gradient", track_order=True)
                    places = {f"gradient/{name}": g.gradients[name] for name in names}
                for where, values in places.items():
                    ds = write_array(f, where, np.asarray(values))
                    ds.attrs["sha256"] = array_sha256(values)
                write_attributes(f, _attributes(g))
            trust_file(tmp)  # weanj wrote these bytes itself: no need to probe them on reading
    except OSError as e:
        if isinstance(e, WeanjError):
            raise
        raise InputFileError(
            f"cannot write gradient file {target} ({e.strerror or e}); choose a writable place"
        ) from None
    return target


def expected_dtype(ex: Example, array: str, dtype: str) -> str:
    """The dtype of a gradient array of a run in `dtype` (complex arrays: complex)."""
    return COMPLEX_OF[dtype] if ex.array(array).kind == "complex" else dtype


def gradient_arrays(
    ex: Example, variant: str, gradient: Any, dtype: str | None = None
) -> tuple[dict, str]:
    """`({name: array}, dtype under test)` from what a `grad` returns, each array of the
    dtype its kind implies, all of one dtype under test, or an `InputError`."""
    try:
        named = ex.gradients(gradient)
    except InputError as e:
        raise InputError(f"gradient of {variant}: {e}") from None
    out = {name: np.asarray(g) for name, g in named.items()}
    implied = set()
    for name, g in out.items():
        kind = ex.array(name).kind
        if kind == "float" and g.dtype.name in ("float64", "float32"):
            implied.add(g.dtype.name)
        elif kind == "complex" and g.dtype.name in ("complex128", "complex64"):
            implied.add("float64" if g.dtype.name == "complex128" else "float32")
        else:
            raise InputError(
                f"gradient of {variant} ({name}) has dtype {g.dtype}; expected a {kind} dtype"
            )
    if len(implied) > 1:
        raise InputError(f"gradient arrays of {variant} mix float32 and float64")
    found = implied.pop()
    if dtype is not None and check_dtype(dtype) != found:
        raise InputError(f"gradient of {variant} is {found}, not {dtype}")
    return out, found


def save_gradient(
    example: Example | str,
    variant: str,
    gradient: Any,
    *,
    loss: float | None = None,
    family: str | None = None,
    params: dict[str, Any] | None = None,
    inputs_sha256: str | None = None,
    backend: str | None = None,
    backend_version: str | None = None,
    path: Path | str | None = None,
    allow_nonfinite: bool = False,
    force: bool = False,
) -> Path:
    """Save a gradient with its provenance, atomically (the seed notebook's call).

    **Arguments:**

    - `example`, `variant`: what it is a gradient of (`variant` names the store file).
    - `gradient`: an array shaped like the example's `wrt` input; for several `wrt`
      arrays a dict `{name: array}` (or a tuple in `wrt` order). Its dtype is the dtype
      under test (float64 or float32; complex arrays complex128 or complex64).
    - `loss`: the loss at the same inputs, if known.
    - `family`: needed for names the registry does not know (a user's own experiment).
    - `params`, `inputs_sha256`: what it was computed on; default: the shared inputs and
      their parameters (e.g. the `K` used for checks).
    - `backend`, `backend_version`: default from the registry (else the name's prefix).
    - `path`: where to write (default: the store, or `runs/` for other inputs); the
      store's rules apply (`check_target`). `force`: replace a recorded reference.
    - `allow_nonfinite`: store NaN/Inf instead of refusing them (for failure reports).

    **Returns:** the path written. Everything the store would refuse on reading (a
    parameter out of range, a malformed digest, a name that is not a safe file name)
    is refused here, in one line.
    """
    from ._inputs import read_inputs

    ex = example_named(example)
    check_name("variant", variant)
    arrays, dtype = gradient_arrays(ex, variant, gradient)
    if not allow_nonfinite:
        for name, g in arrays.items():
            if not np.all(np.isfinite(g)):
                label = f" ({name})" if len(arrays) > 1 else ""
                raise InputError(f"gradient of {variant}{label} contains NaN/Inf; not saved")
    shared = None
    if inputs_sha256 is None or path is None:
        try:
            shared = read_inputs(ex)
        except InputFileError:
            if inputs_sha256 is None:
                raise
    if inputs_sha256 is None:
        inputs_sha256 = shared.digest
        for name, g in arrays.items():
            if g.shape != shared.arrays[name].shape:
                raise InputError(
                    f"gradient of {variant} has shape {g.shape}; the shared inputs' {name} has "
                    f"{shared.arrays[name].shape}"
                )
        params = {**shared.params, **(params or {})}
    if not isinstance(inputs_sha256, str) or not _SHA256.match(inputs_sha256):
        raise InputError(f"inputs_sha256 must be 64 hexadecimal digits, got {shown(inputs_sha256)}")
    checked = ex.check_params(dict(params or {}))
    registered = find_variant(ex.name, variant)
    if family is None:
        if registered is None:
            raise InputError(
                f"{variant!r} is not a registered variant of {ex.name}; pass family=... so "
                "that the judge knows which gradients it must agree with"
            )
        family = registered.family
    elif registered is not None and family != registered.family:
        raise InputError(
            f"{variant} is registered in family {registered.family!r}, not {family!r}; "
            "save it under another name to record it as another family"
        )
    for what, value in (
        ("family", family),
        ("backend", backend),
        ("backend_version", backend_version),
    ):
        if value is not None and (not isinstance(value, str) or "\n" in value or len(value) > 500):
            raise InputError(f"{what} must be one line of text, got {shown(value)}")
    if backend is None:
        backend = registered.backend if registered is not None else variant.split("-")[0]
    if backend_version is None:
        backend_version = registered.backend_version() if registered is not None else ""
    g = Gradient(
        example=ex,
        variant=variant,
        family=family,
        dtype=dtype,
        gradients=arrays,
        loss=None if loss is None else float(loss),
        params=checked,
        inputs_sha256=inputs_sha256,
        key=provenance_key(inputs_sha256, checked, dtype),
        backend=backend,
        backend_version=backend_version,
    )
    shared_key = shared.key(dtype) if shared is not None else None
    if path is None:
        path = gradient_path(ex, variant, dtype=dtype) if g.key == shared_key else runs_path(g)
    target = check_target(path, g, shared_key, force=force)
    return write_gradient(g, target, force=force)


def runs_path(g: Gradient, differences: list[str] | None = None) -> Path:
    """`results/<example>/runs/<variant>-<what differs>.h5` for a run off the store."""
    parts = differences if differences else [f"key-{g.key[:12]}"]
    return results_dir(g.example.name) / RUNS / ("-".join([g.variant, *parts]) + ".h5")


# --- reading ------------------------------------------------------------------------

_REQUIRED = ("variant", "family", "example", "dtype", "inputs_sha256")
_OPTIONAL_TEXT = ("backend", "backend_version", "created", "key")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


def fix_hint(path: Path) -> str:
    """What recomputes a gradient file, from where it lies in the store."""
    place = place_of(path)
    if place is not None and place.kind == PRODUCED:
        flag = "" if place.dtype == "float64" else f" --dtype {place.dtype}"
        return f"; recompute it with `weanj run {place.example} {path.stem}{flag}` or delete it"
    if place is not None and place.kind == RECORDED:
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
            f"{where}: attribute dtype must be float32 or float64, got {shown(attrs['dtype'])}{hint}"
        )
    for key in ("inputs_sha256", "key"):
        if key in attrs and not _SHA256.match(attrs[key]):
            raise InputFileError(
                f"{where}: attribute {key} must be 64 hexadecimal digits, got {shown(attrs[key])}{hint}"
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
    try:
        with open_h5(path, "gradient file", hint, ("gradient", "sha256", *_REQUIRED)) as f:
            datasets = _read_datasets(f, where, hint)
            attrs = read_attributes(f.attrs, where, hint)
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
            f"does not have{hint}"
        )
    ex = example_named(attrs["example"])
    gradients = _gradient_datasets(ex, datasets, attrs["dtype"], where, hint)
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
                f"{where}: the values of {name} do not match their recorded sha256 (modified or corrupt){hint}"
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
            raise StaleGradientError(
                f"{g.path} was computed on other inputs ({_key_text(g)}; current "
                f"{current.describe(g.dtype)}); recompute it with `weanj run {ex.name} {g.variant}` "
                "or pass allow_stale=True"
            )
    return g


def _key_text(g: Gradient) -> str:
    parts = [f"inputs sha256 {g.inputs_sha256[:12]}…"] + [f"{k}={v}" for k, v in g.params.items()]
    return ", ".join([*parts, g.dtype])
