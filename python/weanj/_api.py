"""The Python API's helpers for notebooks and scripts: the seed notebook's calls
(`load_inputs`, `save_gradient`, `write_results`, ...) and evaluating one variant.

These are front doors: they take an example's name (or the `Example`) and a variant's
name, look them up once in the registry, and hand objects to the layers below. The
judgement functions themselves (`weanj.check`, `weanj.diff`, `weanj.report`) are the
commands' (`_commands`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _arguments as arg
from ._errors import InputError, InputFileError, StaleGradientError, WeanjError
from ._io import _bench, _inputs
from ._io._gradient_files import _SHA256, fix_hint, read_gradient_file, scan_store
from ._model import (
    Example,
    Gradient,
    Inputs,
    Variant,
    check_dtype,
    check_name,
    provenance_key,
    shown,
)
from ._pipeline._run import evaluation_run
from ._pipeline._store_writes import save_gradient as write_gradient
from ._places import Places, places
from ._registry import example as example_named
from ._registry import find_variant
from ._registry import variant as variant_named


def _path_argument(path: Any, what: str = "path") -> Any:
    """A notebook's path argument, as given (None included), or an `InputError` naming
    the argument: a NUL byte (which no file name holds) or something that is no path is
    one line here, not a raw `ValueError` from deep inside a file-system call."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"{what} must be a file path (str or Path), got {shown(path)}")
    text = os.fsdecode(path)
    if "\0" in text:
        raise InputError(f"{what} {shown(text)} contains a NUL byte; no file name holds one")
    return path


def _example(example: Any, function: str) -> Example:
    """The example an API call names (its name or the `Example`), or one line saying what
    the argument accepts."""
    return example_named(arg.example_name(example, function))


# --- inputs ----------------------------------------------------------------------------------


def inputs_path(example: Example | str) -> Path:
    """`shared_inputs/<example>.h5` under the project root."""
    return places().inputs(example_named(example).name)


def read_inputs(example: Example | str, path: Path | str | None = None) -> Inputs:
    """The `Inputs` of an inputs file: the shared inputs (`path` None), or any HDF5 file
    holding the example's arrays."""
    return _inputs.read_inputs(_example(example, "read_inputs"), places(), _path_argument(path))


def generate_inputs(example: Example | str, seed: int | None = None) -> Inputs:
    """The shared inputs of an example, computed from its seed (or `seed`)."""
    ex = _example(example, "generate_inputs")
    return _inputs.generate_inputs(ex, arg.seed(seed, "seed", "generate_inputs"))


def write_inputs(
    example: Example | str, path: Path | str | None = None, *, force: bool = False
) -> Path:
    """Write the shared inputs file of an example (atomically, byte-identical each time);
    at `path`, a file weanj did not write is replaced only with `force` (never a module)."""
    ex, force = _example(example, "write_inputs"), arg.flag(force, "force", "write_inputs")
    return _inputs.write_inputs(ex, places(), _path_argument(path), force=force)


def verify_inputs(names: Sequence[str] | None = None) -> list[tuple[str, bool, str]]:
    """Recompute each example's inputs and compare them with the committed files:
    `[(example, ok, message)]`."""
    from ._registry import example_names

    here = places()
    out = []
    for name in arg.names(names, "names", "verify_inputs") or example_names():
        ok, message = _inputs.verify_inputs(example_named(name), here)
        out.append((name, ok, message))
    return out


def load_inputs(example: Example | str, path: Path | str | None = None) -> dict[str, Any]:
    """The shared inputs of an example, as numpy arrays (the seed notebook's call).

    **Returns:** a dict with one numpy array per array input (`theta`, `uobs`), the
    parameters used for checks (`K`), and `sha256`, the digest of the arrays. The arrays
    are copies: changing them changes nothing weanj holds.
    """
    inputs = _inputs.read_inputs(_example(example, "load_inputs"), places(), _path_argument(path))
    out: dict[str, Any] = {k: np.array(a) for k, a in inputs.arrays.items()}
    out.update(inputs.params)
    out["sha256"] = inputs.digest
    return out


# --- one variant -------------------------------------------------------------------------------


def evaluate(
    example: Example | str,
    variant: Variant | str,
    *,
    inputs: Inputs | Path | str | None = None,
    params: dict[str, Any] | None = None,
    dtype: str = "float64",
    timeout: float | None = None,
) -> Gradient:
    """Loss and gradient of a variant on the shared inputs (or on `inputs`: an `Inputs`
    object or an inputs file), held to the variant contract.

    **Arguments:**

    - `params`: overrides of the example's parameters (default: the inputs').
    - `dtype`: `"float64"` or `"float32"`: the float arrays are cast before the call.
    - `timeout`: seconds before the run is given up (`timeout`; default: the project's
      `[tool.weanj] timeout`, else 600; 0: no limit).

    **Returns:** a `Gradient` with `source="run"`, its key and the seconds the first
    loss and gradient calls took (compilation included). A variant at fault raises
    `VariantError` (its `error`, `NaN/Inf` or `timeout`, in one line); one that cannot
    run here `UnavailableError`; one declared not to apply to these inputs `ExcludedError`.
    """
    from ._judge._contract import Fault

    ex = _example(example, "evaluate")
    variant = arg.variant_name(variant, "evaluate")
    v = variant if isinstance(variant, Variant) else variant_named(ex, variant)
    dtype = check_dtype(dtype)
    params = arg.mapping(params, "params", "evaluate")
    timeout = arg.time_limit(timeout, "timeout", "evaluate")
    here = places()
    if not isinstance(inputs, Inputs):
        inputs = _inputs.read_inputs(ex, here, _path_argument(inputs, "inputs"))
    if params:
        inputs = inputs.with_params(params)
    found = evaluation_run(here, timeout=timeout, cache=False).evaluate(v, inputs, dtype)
    if isinstance(found, Fault):
        raise found.error()
    return found


# --- the store -------------------------------------------------------------------------------


def gradient_path(
    example: Example | str, variant: str, *, recorded: bool = False, dtype: str = "float64"
) -> Path:
    """Where the store keeps a variant's gradient (`recorded=True`: committed references)."""
    ex = example_named(example)
    check_name("variant", variant)
    if recorded:
        return places().recorded(ex.name, variant)
    return places().gradient(ex.name, variant, check_dtype(dtype))


def stored_gradients(
    example: Example | str, *, produced: bool = True, recorded: bool = True
) -> list[Gradient]:
    """Every readable gradient file of an example in the store (unchecked for staleness);
    an unreadable one raises its `InputFileError`."""
    scan = scan_store(example_named(example), places(), produced=produced, recorded=recorded)
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
    ex = example_named(example)
    here = places()
    path = _path_argument(path)
    target = (
        path if path is not None else gradient_path(ex, variant, recorded=recorded, dtype=dtype)
    )
    g = read_gradient_file(target, ex, here)
    g.of = find_variant(ex, g.variant)
    if g.of is not None and g.family != g.of.family:  # what the judge's file case refuses
        raise InputFileError(
            f"{g.path} says {g.variant} is of family {g.family!r}, but it is registered in "
            f"family {g.of.family!r}{fix_hint(g.path, here)}"
        )
    if not allow_stale:
        current = _inputs.read_inputs(ex, here)
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
    ex = example_named(example)
    try:  # a notebook's argument: an InputError, like every other refusal here
        check_name("variant", variant)
    except WeanjError as e:
        raise InputError(str(e)) from None
    here = places()
    path = _path_argument(path)
    arrays, dtype = gradient_arrays(ex, variant, gradient)
    loss = _checked_loss(variant, arrays, loss, allow_nonfinite)
    shared, inputs_sha256, params = _computed_on(
        ex, variant, arrays, params, inputs_sha256, path, here
    )
    if not isinstance(inputs_sha256, str) or not _SHA256.match(inputs_sha256):
        raise InputError(f"inputs_sha256 must be 64 hexadecimal digits, got {shown(inputs_sha256)}")
    checked = ex.check_params(dict(params or {}))
    family, backend, backend_version = _provenance(ex, variant, family, backend, backend_version)
    if backend == "julia":
        raise InputError(
            f"{variant} is a Julia variant: only the Julia worker writes a gradient file that "
            "says backend julia (weanj check, weanj run); save this gradient under another name "
            "(and family=) to keep it"
        )
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
    if backend_version is None:
        backend_version = registered.backend_version() if registered is not None else ""
    return family, backend, backend_version


# --- benchmark records -----------------------------------------------------------------------


def write_results(
    example: Example | str,
    backend: str,
    device: str,
    records: Sequence[dict[str, Any]],
    *,
    env: dict[str, Any] | None = None,
) -> Path:
    """Write benchmark records to `results/<example>/bench/<backend>-<device>.json` (the
    seed notebook's call; the records' fields: docs/DESIGN.md, "Benchmark results").

    **Returns:** the path written (atomically; the previous file is replaced).
    """
    return _bench.write_results(example_named(example), backend, device, records, places(), env=env)
