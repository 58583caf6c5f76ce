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
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .._errors import InputError, InputFileError, WeanjError
from .._model import Example, Gradient, check_dtype, check_name, shown
from .._project import project_root
from .._registry import example as example_named
from .._registry import find_variant
from ._atomic import aside_path, atomic_path
from ._gradient_files import (  # noqa: F401 (the store's reading side, re-exported)
    _SHA256,
    FORMAT,
    StoreScan,
    expected_dtype,
    load_gradient,
    read_gradient_file,
    scan_store,
    stored_gradients,
)
from ._h5 import array_sha256, provenance_key, write_array, write_attributes
from ._places import (  # noqa: F401 (where files live, re-exported)
    PRODUCED,
    RECORDED,
    RUNS,
    Place,
    fix_hint,
    gradient_path,
    place_of,
    runs_path,
)
from ._safeh5 import trust_file


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


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
    if Path(os.path.realpath(target)).parent == (project_root() / "shared_inputs").resolve():
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
    aside = aside_path(target, "replaced")
    os.replace(target, aside)
    return aside


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
    ex = example_named(example)
    try:  # a notebook's argument: an InputError, like every other refusal here
        check_name("variant", variant)
    except WeanjError as e:
        raise InputError(str(e)) from None
    arrays, dtype = gradient_arrays(ex, variant, gradient)
    loss = _checked_loss(variant, arrays, loss, allow_nonfinite)
    shared, inputs_sha256, params = _computed_on(ex, variant, arrays, params, inputs_sha256, path)
    if not isinstance(inputs_sha256, str) or not _SHA256.match(inputs_sha256):
        raise InputError(f"inputs_sha256 must be 64 hexadecimal digits, got {shown(inputs_sha256)}")
    checked = ex.check_params(dict(params or {}))
    family, backend, backend_version = _provenance(ex, variant, family, backend, backend_version)
    g = Gradient(
        example=ex,
        variant=variant,
        family=family,
        dtype=dtype,
        gradients=arrays,
        loss=loss,
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


def _computed_on(
    ex: Example,
    variant: str,
    arrays: dict[str, Any],
    params: dict[str, Any] | None,
    inputs_sha256: str | None,
    path: Path | str | None,
) -> tuple[Any, Any, dict[str, Any] | None]:
    """(the shared inputs or None, the inputs' digest, the parameters) of a gradient to be
    saved: by default the shared inputs', whose shapes the gradient must then have. The
    shared inputs are read where the digest or the path is left to them."""
    from ._inputs import read_inputs

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
    return shared, inputs_sha256, params


def _checked_loss(variant: str, arrays: dict, loss: Any, allow_nonfinite: bool) -> float | None:
    """The loss as a float (the reader refuses one that is not a number); NaN/Inf in it or
    in the arrays refused unless `allow_nonfinite`."""
    if loss is not None:
        if isinstance(loss, (str, bytes, bool)) or np.ndim(loss) != 0:
            raise InputError(f"loss must be a number, got {shown(loss)}")
        try:
            loss = float(loss)
        except (TypeError, ValueError):
            raise InputError(f"loss must be a number, got {shown(loss)}") from None
    if not allow_nonfinite:
        for name, g in arrays.items():
            if not np.all(np.isfinite(g)):
                label = f" ({name})" if len(arrays) > 1 else ""
                raise InputError(f"gradient of {variant}{label} contains NaN/Inf; not saved")
        if loss is not None and not np.isfinite(loss):
            raise InputError(f"the loss of {variant} is {loss}; not saved")
    return loss


def _provenance(
    ex: Example, variant: str, family, backend, backend_version
) -> tuple[str, str, str]:
    """`(family, backend, backend_version)`, checked against the registry: a registered
    variant's family is its own; names the registry does not know need `family=`."""
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
    return family, backend, backend_version
