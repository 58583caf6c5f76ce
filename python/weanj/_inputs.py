"""Shared inputs: deterministic HDF5 files that every backend reads.

`shared_inputs/<example>.h5` holds one float64 dataset per array input of the example
(C order) and the attributes `example`, the example's parameters (e.g. `K`), `seed`,
`generator`, `layout = "C"`, `sha256` and whatever the example describes (e.g. `n`).

`sha256` is the digest of the datasets' bytes: for each array in the example's order,
its little-endian float64 values in C order, concatenated. The files are byte-identical
on every regeneration: no HDF5 timestamps, fixed attribute order, written atomically.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ._atomic import atomic_path
from ._errors import InputError, InputFileError
from ._registry import INT32_MAX, Example, Param, example
from ._root import project_root
from ._safeh5 import open_h5, trust_file

# Bump when the generating code changes what it writes; recorded in every inputs file.
GENERATOR = "weanj-inputs/1"


def inputs_path(example_name: str) -> Path:
    """`shared_inputs/<example>.h5` under the project root."""
    return project_root() / "shared_inputs" / f"{example(example_name).name}.h5"


def regenerate_hint(example_name: str) -> str:
    return f"`weanj inputs regenerate {example_name}`"


def digest(ex: Example, arrays: Mapping[str, np.ndarray]) -> str:
    """The `sha256` of the example's arrays (see the module docstring)."""
    h = hashlib.sha256()
    for name in ex.arrays:
        h.update(np.ascontiguousarray(arrays[name], dtype="<f8").tobytes())
    return h.hexdigest()


def generate_inputs(example_name: str) -> dict[str, Any]:
    """The shared inputs of an example, computed from its seed: arrays and attributes."""
    ex = example(example_name)
    arrays = ex.generate(ex.seed)
    ex.validate(arrays)
    attrs: dict[str, Any] = {"example": ex.name}
    attrs.update(ex.describe(arrays))
    attrs.update(ex.default_params)
    attrs.update(seed=ex.seed, generator=GENERATOR, layout="C", sha256=digest(ex, arrays))
    return {"arrays": arrays, "attrs": attrs}


def write_inputs(example_name: str, path: Path | None = None) -> Path:
    """Write the shared inputs file of an example (atomically, byte-identical each time)."""
    ex = example(example_name)
    path = Path(path) if path is not None else inputs_path(ex.name)
    content = generate_inputs(ex.name)
    try:
        with atomic_path(path) as tmp:
            with h5py.File(tmp, "w", track_order=False) as f:
                for name in ex.arrays:
                    f.create_dataset(
                        name,
                        data=np.ascontiguousarray(content["arrays"][name], dtype="<f8"),
                        track_times=False,
                    )
                for key, value in content["attrs"].items():
                    f.attrs[key] = value
            trust_file(tmp)  # weanj wrote these bytes itself: no need to probe them on reading
    except OSError as e:
        raise InputFileError(f"cannot write inputs file {path} ({e.strerror or e})") from None
    return path


def check_arrays(ex: Example, arrays: Mapping[str, Any], what: str) -> dict[str, np.ndarray]:
    """numpy arrays of the example's inputs, or an `InputError` naming `what` is wrong."""
    out = {}
    for name in ex.arrays:
        if name not in arrays:
            raise InputError(f"{what}: missing array {name!r} (expected {', '.join(ex.arrays)})")
        a = np.asarray(arrays[name])
        if a.dtype not in (np.float32, np.float64):
            raise InputError(f"{what}: {name} has dtype {a.dtype}; expected float64 or float32")
        if not np.all(np.isfinite(a)):
            bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
            raise InputError(f"{what}: {name} has {bad} NaN/Inf value(s)")
        out[name] = a
    try:
        ex.validate(out)
    except InputError as e:
        raise InputError(f"{what}: {e}") from None
    return out


def shown(value: Any, limit: int = 40) -> str:
    """`repr(value)` on one short line (arrays and long strings are cut)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_param(p: Param, value: Any) -> int:
    """One parameter's value as an int in `[p.minimum, p.maximum]`, or an `InputError`.

    Integers (Python or numpy) and integral floats are accepted; bools, strings, arrays,
    NaN and the rest are not.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        number = None
    elif isinstance(value, (int, np.integer)):
        number = int(value)
    elif isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
        number = int(value)
    else:
        number = None
    if number is None:
        raise InputError(f"{p.name} must be an integer, got {shown(value)}")
    if number < p.minimum:
        raise InputError(f"{p.name} must be at least {p.minimum}, got {number}")
    if number > p.maximum:
        why = " (the kernels' loop counters are int32)" if p.maximum == INT32_MAX else ""
        raise InputError(f"{p.name} must be at most {p.maximum}{why}, got {number}")
    return number


def check_params(ex: Example, params: Mapping[str, Any]) -> dict[str, int]:
    """The example's parameters as ints, each within its `[minimum, maximum]`, or an
    `InputError`; missing ones take their default."""
    return {p.name: check_param(p, params.get(p.name, p.default)) for p in ex.params}


def plain_attributes(attrs: Any, what: str, hint: str = "") -> dict[str, Any]:
    """An HDF5 object's attributes as `{str: str | int | float | ndarray}`.

    Text comes back as `str` whether stored fixed-length, variable-length or as bytes;
    numpy scalars as Python scalars. A name that is not text, or bytes that are not
    UTF-8, is an `InputFileError` ("`what`: ...`hint`").
    """
    out: dict[str, Any] = {}
    for key in attrs.keys():
        if not isinstance(key, str):
            raise InputFileError(
                f"{what} has an attribute whose name is not UTF-8 text ({shown(key)}){hint}"
            )
        value = attrs[key]
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if isinstance(value, (bytes, np.bytes_)):
            try:
                value = bytes(value).decode()
            except UnicodeDecodeError:
                raise InputFileError(f"{what}: attribute {key} is not UTF-8 text{hint}") from None
        elif isinstance(value, np.generic):
            value = value.item()
        out[key] = value
    return out


def read_inputs_file(example_name: str, path: Path | str, *, shared: bool) -> dict[str, Any]:
    """Arrays, parameters and digest from an inputs file, validated.

    `shared` files (the committed `shared_inputs/`) must carry a `sha256` equal to their
    contents; other files (`weanj run --inputs F`) need only the array datasets. The
    parameters (attributes named like the example's parameters; default where absent)
    must be integers within their range. The file is probed before it is parsed
    (`_safeh5`): damage that would crash or hang libhdf5, and datasets whose values are
    not stored in the file itself, are `InputFileError`s.
    """
    ex = example(example_name)
    path = Path(path)
    hint = f"; regenerate it with {regenerate_hint(ex.name)}" if shared else ""
    where = f"inputs file {path}"
    lookups = (*ex.arrays, *ex.param_names, "example", "sha256")
    try:
        with open_h5(path, "inputs file", hint, lookups) as f:
            missing = [a for a in ex.arrays if a not in f]
            if missing:
                raise InputFileError(f"{where} lacks dataset(s) {', '.join(missing)}{hint}")
            arrays = {}
            for name in ex.arrays:
                node = f[name]
                if not isinstance(node, h5py.Dataset):
                    raise InputFileError(f"{where}: {name} is a group, not a dataset{hint}")
                arrays[name] = node[()]
            attrs = plain_attributes(f.attrs, where, hint)
    except InputFileError:
        raise
    # h5py reports damaged metadata as any of these (RuntimeError for a corrupt attribute
    # heap, for instance); all of them mean the file is unusable, not that weanj is broken.
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputFileError(f"cannot read {where} ({first}){hint}") from None
    try:
        arrays = check_arrays(ex, arrays, str(path))
    except InputError as e:
        if not shared:
            raise
        # The shared file is generated, so bad arrays there mean a damaged file.
        raise InputFileError(f"{e}{hint}") from None
    sha = digest(ex, arrays)
    if shared:
        recorded = attrs.get("sha256")
        if not isinstance(recorded, str) or recorded != sha:
            raise InputFileError(
                f"{where} does not match its recorded sha256 (modified or corrupt){hint}"
            )
        named = attrs.get("example", ex.name)
        if not isinstance(named, str) or named != ex.name:
            raise InputFileError(f"{where} is for example {shown(named)}, not {ex.name}{hint}")
    try:
        params = check_params(ex, {k: attrs[k] for k in ex.param_names if k in attrs})
    except InputError as e:
        raise InputFileError(f"{where}: attribute {e}{hint}") from None
    return {"arrays": arrays, "params": params, "sha256": sha, "attrs": attrs, "path": path}


def load_inputs(example_name: str, path: Path | str | None = None) -> dict[str, Any]:
    """The shared inputs of an example, as numpy arrays.

    **Arguments:**

    - `example_name`: e.g. `"02-gauss-seidel"`.
    - `path`: another inputs file (default: `shared_inputs/<example>.h5`).

    **Returns:** a dict with one numpy array per array input (`theta`, `uobs`), the
    parameters used for checks (`K`), and `sha256`, the digest of the arrays.
    """
    ex = example(example_name)
    shared = path is None
    data = read_inputs_file(ex.name, inputs_path(ex.name) if shared else path, shared=shared)
    out: dict[str, Any] = dict(data["arrays"])
    out.update(data["params"])
    out["sha256"] = data["sha256"]
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal attribute values: the same kind (text, integer, real, array) and value."""
    a, b = (x.item() if isinstance(x, np.generic) else x for x in (a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b)
        )
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) != isinstance(b, str):
        return type(a) is type(b) and a == b
    return a == b


def _differing_attrs(expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """Names of the attributes that are missing, extra or different in `found`."""
    return sorted(
        k
        for k in set(expected) | set(found)
        if k not in expected or k not in found or not _same(expected[k], found[k])
    )


def verify_inputs(example_names: list[str] | None = None) -> list[tuple[str, bool, str]]:
    """Recompute each example's inputs and compare digests with the committed files.

    **Returns:** `[(example, ok, message)]`; a missing or corrupt file is not ok.
    """
    from ._registry import example_names as all_examples

    report = []
    for name in example_names or all_examples():
        generated = generate_inputs(name)
        expected = generated["attrs"]["sha256"]
        try:
            read = read_inputs_file(name, inputs_path(name), shared=True)
        except InputFileError as e:
            report.append((name, False, str(e)))
            continue
        found, found_attrs = read["sha256"], read["attrs"]
        if found == expected:
            # The digest covers only the arrays; `K`, `seed`, ... must match as well.
            wrong = _differing_attrs(generated["attrs"], found_attrs)
            if wrong:
                report.append(
                    (
                        name,
                        False,
                        f"{inputs_path(name)} has attribute(s) {', '.join(wrong)} "
                        f"other than the generator writes; regenerate it with "
                        f"{regenerate_hint(name)}",
                    )
                )
            else:
                report.append((name, True, f"{inputs_path(name)}: sha256 {found[:16]}… ok"))
        else:
            report.append(
                (
                    name,
                    False,
                    f"{inputs_path(name)} differs from what the generator makes "
                    f"(sha256 {found[:16]}… vs {expected[:16]}…); regenerate it with "
                    f"{regenerate_hint(name)}",
                )
            )
    return report
