"""`weanj.save_gradient`: a gradient a notebook computed, saved with its provenance
(the seed notebook's call), held to the store's rules: whatever the store would refuse on
reading is refused here, in one line, and the one writer of gradient files
(`_pipeline/records/_store_writes.save_gradient`) writes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import _arguments as arg
from ._errors import InputError, InputFileError
from ._io import _inputs
from ._io._gradient_files import SHA256_HEX
from ._model import Example, Gradient, check_dtype, provenance_key, shown
from ._pipeline.records._store_writes import save_gradient as write_gradient
from ._places import Places, places
from ._registry import example as example_named
from ._registry import find_variant
from ._vocabulary import DTYPES


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
        if kind == "float" and g.dtype.name in DTYPES:
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
    - `path`: where to write (default: the store, or for other inputs
      `runs/<variant>-<what differs>.h5`, named as `weanj run` names it); the store's
      rules apply (`check_target`). `force`: replace a recorded reference.
    - `allow_nonfinite`: store NaN/Inf instead of refusing them (for failure reports).

    **Returns:** the path written. Everything the store would refuse on reading (a
    parameter out of range, a malformed digest, a name that is not a safe file name)
    is refused here, in one line.
    A Julia variant's gradient is refused: only the Julia worker writes a file that says
    backend `julia` (docs/DESIGN.md, "The Julia side").
    """
    ex = example_named(arg.example_name(example, "save_gradient"))
    variant = arg.variant_file_name(variant, "save_gradient")
    params = arg.mapping(params, "params", "save_gradient")
    allow_nonfinite = arg.flag(allow_nonfinite, "allow_nonfinite", "save_gradient")
    force = arg.flag(force, "force", "save_gradient")
    here, path = places(), arg.in_path(path, "path", "save_gradient")
    arrays, dtype = gradient_arrays(ex, variant, gradient)
    loss = _checked_loss(variant, arrays, loss, allow_nonfinite)
    shared, inputs_sha256, params = _computed_on(
        ex, variant, arrays, params, inputs_sha256, path, here
    )
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
    g.of = find_variant(ex, variant)
    # to `path`, else the store or runs/ under the one scheme (`weanj run`'s): one writer
    return write_gradient(g, shared, here, out=path, force=force)


def _computed_on(
    ex: Example,
    variant: str,
    arrays: dict[str, Any],
    params: dict[str, Any] | None,
    inputs_sha256: str | None,
    path: Path | str | None,
    here: Places,
) -> tuple[Any, Any, dict[str, Any] | None]:
    """(the shared inputs or None, the inputs' digest, the parameters) of a gradient to be
    saved: by default the shared inputs', whose shapes the gradient must then have. The
    shared inputs are read where the digest or the path is left to them."""
    shared = None
    if inputs_sha256 is None or path is None:
        try:
            shared = _inputs.read_inputs(ex, here)
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
    if not isinstance(inputs_sha256, str) or not SHA256_HEX.match(inputs_sha256):
        raise InputError(f"inputs_sha256 must be 64 hexadecimal digits, got {shown(inputs_sha256)}")
    return shared, inputs_sha256, params


def _checked_loss(variant: str, arrays: dict, loss: Any, allow_nonfinite: bool) -> float | None:
    """The loss as a float (the reader refuses one that is not a number); NaN/Inf in it or
    in the arrays refused unless `allow_nonfinite`."""
    if loss is not None:
        if isinstance(loss, (str, bytes, bool)) or np.ndim(loss) != 0:
            raise InputError(f"save_gradient: loss must be a number, got {shown(loss)}")
        try:
            loss = float(loss)
        except (TypeError, ValueError):
            raise InputError(f"save_gradient: loss must be a number, got {shown(loss)}") from None
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
    registered = find_variant(ex, variant)
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
    if backend == "julia":
        raise InputError(
            f"{variant} is a Julia variant: only the Julia worker writes a gradient file that "
            "says backend julia (weanj check, weanj run); save this gradient under another name "
            "(and family=) to keep it"
        )
    if backend_version is None:
        backend_version = registered.backend_version() if registered is not None else ""
    return family, backend, backend_version
