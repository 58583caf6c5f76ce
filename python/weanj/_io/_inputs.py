"""Inputs: the typed arrays and parameters a run is computed on, with their provenance.

`Inputs` is the object every command passes along: the example, its arrays (as the
inputs file stores them, read-only), its parameters (typed), the digest of the arrays
and the provenance key. A command reads, digests and validates each inputs file once
(`read_inputs`, memoised per file state), then hands the object on.

`shared_inputs/<example>.h5` (format 2) holds one dataset per array, of its declared
kind and shape exactly (float64, complex128, the integer dtype, bool; a 0-d array as a
scalar dataset), and the attributes `format`, `example`, every parameter (typed),
`seed`, `generator`, `layout = "C"`, `sha256` (the digest, docs/DESIGN.md "Inputs
files") and what the example describes. Files are byte-identical on every
regeneration (no timestamps, fixed attribute order, written atomically). Format-1 files
(float64 only, an older digest) are refused with the command that rewrites them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import h5py
import numpy as np

from .._errors import InputError, InputFileError
from .._model import DTYPES, Example, check_dtype, shown
from .._project import project_root
from .._registry import example as example_named
from ._atomic import atomic_path
from ._h5 import provenance_key, read_array, read_attributes, write_array, write_attributes
from ._safeh5 import parsed, trust_file

FORMAT = 2
# Bump when the generating code changes what it writes; recorded in every inputs file.
GENERATOR = "weanj-inputs/2"
_DIGEST_HEADER = b"weanj-inputs/2\n"


def inputs_path(example: Example | str) -> Path:
    """`shared_inputs/<example>.h5` under the project root."""
    return project_root() / "shared_inputs" / f"{example_named(example).name}.h5"


def regenerate_hint(example_name: str) -> str:
    return f"`weanj inputs regenerate {example_name}`"


def digest(ex: Example, arrays: Mapping[str, np.ndarray]) -> str:
    """The inputs digest: every array's name, dtype, shape and C-order little-endian
    bytes, in the example's order (docs/DESIGN.md, "Inputs files")."""
    h = hashlib.sha256(_DIGEST_HEADER)
    for name in ex.arrays:
        a = np.asarray(arrays[name])
        a = np.asarray(a, dtype=a.dtype.newbyteorder("<"), order="C")  # 0-d stays 0-d
        shape = ",".join(str(d) for d in a.shape)
        h.update(f"{name}\0{a.dtype.str}\0{shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def legacy_digest(ex: Example, arrays: Mapping[str, np.ndarray]) -> str | None:
    """The format-1 digest (every array's float64 bytes), for examples whose arrays are
    all float: what format-1 gradient files recorded as `inputs_sha256`."""
    if any(spec.kind != "float" for spec in ex.specs):
        return None
    h = hashlib.sha256()
    for name in ex.arrays:
        h.update(np.ascontiguousarray(arrays[name], dtype="<f8").tobytes())
    return h.hexdigest()


def _frozen(arrays: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
    out = {}
    for name, a in arrays.items():
        a = np.array(a, copy=True)
        a.flags.writeable = False  # one object, shared by every run: nobody may change it
        out[name] = a
    return MappingProxyType(out)


@dataclass(frozen=True)
class Inputs:
    """The arrays and parameters of a run, typed, with their digest and key."""

    example: Example
    arrays: Mapping[str, np.ndarray]
    params: Mapping[str, Any]
    digest: str
    path: Path | None = None
    shared: bool = False
    attrs: Mapping[str, Any] = field(default_factory=dict, compare=False)
    legacy: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return self.example.name

    def key(self, dtype: str = "float64") -> str:
        """The provenance key of a run on these inputs in `dtype`."""
        return provenance_key(self.digest, dict(self.params), check_dtype(dtype))

    def keys(self, dtype: str) -> frozenset[str]:
        """The keys that mean "these inputs" in `dtype` (with the format-1 spelling)."""
        keys = {self.key(dtype)}
        if self.legacy is not None:
            keys.add(provenance_key(self.legacy, dict(self.params), dtype))
        return frozenset(keys)

    def matches(self, gradient: Any) -> bool:
        """Whether `gradient` (anything with `.key` and `.dtype`) was computed on these
        inputs: the one test of "the same inputs" every command uses."""
        return gradient.dtype in DTYPES and gradient.key in self.keys(gradient.dtype)

    def with_params(self, params: Mapping[str, Any]) -> Inputs:
        """The same arrays with some parameters changed (checked). Changed parameters make
        other inputs than the shared ones (`shared` False): their runs never go to the store."""
        given = {k: v for k, v in params.items() if v is not None}
        checked = self.example.check_params({**self.params, **given})
        same = checked == dict(self.params)
        return replace(self, params=MappingProxyType(checked), shared=self.shared and same)

    def run_arrays(self, dtype: str) -> dict[str, np.ndarray]:
        return self.example.for_run(self.arrays, check_dtype(dtype))

    def args(self, dtype: str = "float64") -> tuple:
        """The positional arguments of a variant's `loss`/`grad` in `dtype`."""
        return self.example.args(self.run_arrays(dtype), self.params)

    @property
    def dims(self) -> dict[str, int]:
        """The sizes of the example's symbolic dimensions in these arrays."""
        return self.example.check_shapes({k: a.shape for k, a in self.arrays.items()})

    @property
    def wrt_shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(self.arrays[name].shape) for name in self.example.wrt_names}

    def describe(self, dtype: str | None = None) -> str:
        """`inputs sha256 1a2b3c4d5e6f…, K=20, float64` for headers and messages."""
        parts = [f"inputs sha256 {self.digest[:12]}…"]
        parts += [f"{k}={v}" for k, v in self.params.items()]
        if dtype:
            parts.append(dtype)
        return ", ".join(parts)


def from_arrays(
    example: Example | str,
    arrays: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
    *,
    what: str = "inputs",
) -> Inputs:
    """`Inputs` from arrays in memory (checked, typed, digested); not written anywhere."""
    ex = example_named(example)
    stored = ex.check_arrays(arrays, what)
    return Inputs(
        ex,
        _frozen(stored),
        MappingProxyType(ex.check_params(dict(params or {}))),
        digest(ex, stored),
        legacy=legacy_digest(ex, stored),
    )


def generate_inputs(example: Example | str, seed: int | None = None) -> Inputs:
    """The shared inputs of an example, computed from its seed (or `seed`)."""
    ex = example_named(example)
    generated = ex.generate(ex.seed if seed is None else seed)
    if not isinstance(generated, Mapping):
        raise InputError(
            f"{ex.name}: generate must return a dict of arrays, got {type(generated).__name__}"
        )
    return from_arrays(ex, generated, what=f"{ex.name}'s generator")


def file_attributes(inputs: Inputs, seed: int) -> dict[str, Any]:
    """The attributes of an inputs file, in their fixed order."""
    ex = inputs.example
    attrs: dict[str, Any] = {"format": FORMAT, "example": ex.name}
    attrs.update(ex.describe(dict(inputs.arrays)))
    attrs.update(inputs.params)
    attrs.update(seed=int(seed), generator=GENERATOR, layout="C", sha256=inputs.digest)
    return attrs


def write_inputs_file(inputs: Inputs, path: Path, *, seed: int) -> Path:
    """Write `inputs` as an inputs file (atomically, byte-identical each time)."""
    try:
        with atomic_path(path) as tmp:
            with h5py.File(tmp, "w", track_order=False) as f:
                for name in inputs.example.arrays:
                    write_array(f, name, inputs.arrays[name])
                write_attributes(f, file_attributes(inputs, seed))
            trust_file(tmp)  # weanj wrote these bytes itself: no need to probe them on reading
    except OSError as e:
        raise InputFileError(f"cannot write inputs file {path} ({e.strerror or e})") from None
    return path


def write_inputs(example: Example | str, path: Path | None = None) -> Path:
    """Write the shared inputs file of an example (atomically, byte-identical each time)."""
    ex = example_named(example)
    return write_inputs_file(
        generate_inputs(ex), Path(path) if path else inputs_path(ex), seed=ex.seed
    )


_CACHE: dict[tuple, Inputs] = {}


def read_inputs(example: Example | str, path: Path | str | None = None) -> Inputs:
    """The `Inputs` of an inputs file: the shared inputs (`path` None), or any HDF5 file
    holding the example's arrays (`weanj run --inputs FILE`). Read once per file state.

    Shared files must be format 2, for this example, and match their `sha256`; other
    files need only the arrays (cast to their declared kinds where that loses nothing);
    an `example` attribute, where present, must name this example. The file is probed
    before it is parsed (`_safeh5`).
    """
    ex = example_named(example)
    # realpath, not Path.resolve: a symbolic link loop is then an error line, not a RuntimeError
    shared = path is None or os.path.realpath(path) == os.path.realpath(inputs_path(ex))
    path = inputs_path(ex) if path is None else Path(path)
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    cache_key = (id(ex), str(path.resolve()) if stamp else str(path), stamp)
    if stamp is not None and cache_key in _CACHE:
        return _CACHE[cache_key]
    inputs = _read(ex, path, shared)
    if stamp is not None:
        _CACHE[cache_key] = inputs
    return inputs


def _read_file(ex: Example, path: Path, hint: str) -> tuple[dict, dict]:
    where = f"inputs file {path}"
    lookups = (*ex.arrays, *ex.param_names, "example", "sha256", "format")
    with parsed(path, "inputs file", hint, lookups) as f:
        missing = [a for a in ex.arrays if a not in f]
        if missing:
            raise InputFileError(f"{where} lacks dataset(s) {', '.join(missing)}{hint}")
        arrays = {name: read_array(f[name], f"{where}: {name}", hint) for name in ex.arrays}
        attrs = read_attributes(f.attrs, where, hint)
    return arrays, attrs


def _read(ex: Example, path: Path, shared: bool) -> Inputs:
    hint = f"; regenerate it with {regenerate_hint(ex.name)}" if shared else ""
    where = f"inputs file {path}"
    arrays, attrs = _read_file(ex, path, hint)
    named = attrs.get("example", ex.name)
    if not isinstance(named, str) or named != ex.name:  # an array attribute: not a name
        raise InputFileError(f"{where} is for example {shown(named)}, not {ex.name}{hint}")
    fmt = attrs.get("format", 1)
    current = type(fmt) is int and fmt == FORMAT  # an array or a bool is no format number
    if shared and not current:
        raise InputFileError(
            f"{where} was written by an earlier weanj (format {shown(attrs.get('format', 1))}, "
            f"not {FORMAT}); rewrite it with {regenerate_hint(ex.name)}"
        )
    lacking = [k for k in ("example", *ex.param_names) if k not in attrs]
    if shared and lacking:  # the writer writes them all: a file without one is not its own
        raise InputFileError(f"{where} lacks attribute(s) {', '.join(lacking)}{hint}")
    try:
        stored = ex.check_arrays(arrays, str(path))
    except InputError as e:
        if not shared:
            raise
        raise InputFileError(f"{e}{hint}") from None  # generated files: bad arrays = damage
    if shared:
        for name, a in arrays.items():
            if a.dtype != stored[name].dtype:
                raise InputFileError(
                    f"{where}: {name} is stored as {a.dtype}, not {stored[name].dtype}{hint}"
                )
    sha = digest(ex, stored)
    recorded = attrs.get("sha256")
    checked = shared or (current and recorded is not None)
    if checked and (not isinstance(recorded, str) or recorded != sha):
        raise InputFileError(
            f"{where} does not match its recorded sha256 (modified or corrupt){hint}"
        )
    try:
        params = ex.check_params({k: attrs[k] for k in ex.param_names if k in attrs})
    except InputError as e:
        raise InputFileError(f"{where}: attribute {e}{hint}") from None
    return Inputs(
        ex,
        _frozen(stored),
        MappingProxyType(params),
        sha,
        path=path,
        shared=shared,
        attrs=MappingProxyType(attrs),
        legacy=legacy_digest(ex, stored),
    )


def load_inputs(example: Example | str, path: Path | str | None = None) -> dict[str, Any]:
    """The shared inputs of an example, as numpy arrays (the seed notebook's call).

    **Returns:** a dict with one numpy array per array input (`theta`, `uobs`), the
    parameters used for checks (`K`), and `sha256`, the digest of the arrays. The arrays
    are copies: changing them changes nothing weanj holds.
    """
    inputs = read_inputs(example, path)
    out: dict[str, Any] = {k: np.array(a) for k, a in inputs.arrays.items()}
    out.update(inputs.params)
    out["sha256"] = inputs.digest
    return out


def _differing_attrs(expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """Names of the attributes that are missing, extra or different in `found`."""

    def same(a, b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
        return type(a) is type(b) and a == b

    keys = set(expected) | set(found)
    return sorted(
        k for k in keys if k not in expected or k not in found or not same(expected[k], found[k])
    )


def verify_inputs(names: list[str] | None = None) -> list[tuple[str, bool, str]]:
    """Recompute each example's inputs and compare them with the committed files.

    **Returns:** `[(example, ok, message)]`; a missing, corrupt or outdated file is not ok.
    """
    from .._registry import example_names

    report = []
    for name in names or example_names():
        ex = example_named(name)
        path = inputs_path(ex)
        generated = generate_inputs(ex)
        try:
            found = read_inputs(ex)
        except InputFileError as e:
            report.append((name, False, str(e)))
            continue
        fix = f"regenerate it with {regenerate_hint(name)}"
        if found.digest != generated.digest:
            report.append(
                (
                    name,
                    False,
                    f"{path} differs from what the generator makes "
                    f"(sha256 {found.digest[:16]}… vs {generated.digest[:16]}…); {fix}",
                )
            )
            continue
        wrong = _differing_attrs(file_attributes(generated, ex.seed), dict(found.attrs))
        if wrong:
            report.append(
                (
                    name,
                    False,
                    f"{path} has attribute(s) {', '.join(wrong)} other "
                    f"than the generator writes; {fix}",
                )
            )
        else:
            report.append((name, True, f"{path}: sha256 {found.digest[:16]}… ok"))
    return report


def cached_count() -> int:  # for tests: how many inputs files this process has read
    return len(_CACHE)


def _forget() -> None:
    _CACHE.clear()
