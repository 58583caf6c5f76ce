"""The Python API's helpers for notebooks and scripts: the seed notebook's calls
(`load_inputs`, `load_gradient`, `write_results`, ...; `save_gradient` is
`_saved_gradient`'s) and evaluating one variant.

These are front doors: they take an example's name (or the `Example`) and a variant's
name, look them up once in the registry, and hand objects to the layers below. The
judgement functions themselves (`weanj.check`, `weanj.diff`, `weanj.report`) are the
commands' (`_commands`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _arguments as arg
from ._errors import InputError, InputFileError, StaleGradientError
from ._io import _bench, _inputs
from ._io._gradient_files import fix_hint, read_gradient_file, scan_store
from ._model import (
    Example,
    Gradient,
    Inputs,
    Variant,
    shown,
)
from ._pipeline.engine._run import evaluation_run
from ._places import places
from ._registry import example as example_named
from ._registry import find_variant
from ._registry import variant as variant_named


def _example(example: Any, function: str) -> Example:
    """The example an API call names (its name or the `Example`), or one line saying what
    the argument accepts."""
    return example_named(arg.example_name(example, function))


# --- inputs ----------------------------------------------------------------------------------


def inputs_path(example: Example | str) -> Path:
    """`shared_inputs/<example>.h5` under the project root."""
    return places().inputs(_example(example, "inputs_path").name)


def read_inputs(example: Example | str, path: Path | str | None = None) -> Inputs:
    """The `Inputs` of an inputs file: the shared inputs (`path` None), or any HDF5 file
    holding the example's arrays."""
    path = arg.in_path(path, "path", "read_inputs")
    return _inputs.read_inputs(_example(example, "read_inputs"), places(), path)


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
    return _inputs.write_inputs(
        ex, places(), arg.in_path(path, "path", "write_inputs"), force=force
    )


def verify_inputs(names: Sequence[str] | str | None = None) -> list[tuple[str, bool, str]]:
    """Recompute each example's inputs (of the examples named, one or several; default
    every one) and compare them with the committed files: `[(example, ok, message)]`."""
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
    path = arg.in_path(path, "path", "load_inputs")
    inputs = _inputs.read_inputs(_example(example, "load_inputs"), places(), path)
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
    dtype = arg.dtype(dtype, "evaluate")
    params = arg.mapping(params, "params", "evaluate")
    timeout = arg.time_limit(timeout, "timeout", "evaluate")
    here = places()
    if not isinstance(inputs, Inputs):
        inputs = _inputs.read_inputs(ex, here, arg.in_path(inputs, "inputs", "evaluate"))
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
    ex = _example(example, "gradient_path")
    variant = arg.variant_file_name(variant, "gradient_path")
    if arg.flag(recorded, "recorded", "gradient_path"):
        return places().recorded(ex.name, variant)
    return places().gradient(ex.name, variant, arg.dtype(dtype, "gradient_path"))


def stored_gradients(
    example: Example | str, *, produced: bool = True, recorded: bool = True
) -> list[Gradient]:
    """Every readable gradient file of an example in the store (unchecked for staleness);
    an unreadable one raises its `InputFileError`."""
    ex = _example(example, "stored_gradients")
    produced = arg.flag(produced, "produced", "stored_gradients")
    recorded = arg.flag(recorded, "recorded", "stored_gradients")
    scan = scan_store(ex, places(), produced=produced, recorded=recorded)
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
    ex = _example(example, "load_gradient")
    variant = arg.variant_file_name(variant, "load_gradient")
    recorded = arg.flag(recorded, "recorded", "load_gradient")
    allow_stale = arg.flag(allow_stale, "allow_stale", "load_gradient")
    dtype = arg.dtype(dtype, "load_gradient")
    here = places()
    path = arg.in_path(path, "path", "load_gradient")
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
    ex = _example(example, "write_results")
    if not isinstance(records, (list, tuple)):
        raise InputError(
            f"write_results: records must be a list of dicts (one per measurement), got "
            f"{shown(records)}"
        )
    env = arg.mapping(env, "env", "write_results", accepts="a dict (the environment block)")
    return _bench.write_results(ex, backend, device, records, places(), env=env)


def environment(device: str | None = None) -> dict[str, Any]:
    """Facts that make a measurement reproducible: versions, device (`device`: a device
    kind, `"cpu"`, `"gpu"`, `"tpu"`), CPU, cores, date and revision (imports JAX)."""
    from ._environment import environment as facts

    if device is not None and not isinstance(device, str):
        raise InputError(f"environment: device must be a device kind (str), got {shown(device)}")
    return facts(device)
