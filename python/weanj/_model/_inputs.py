"""Inputs: the typed arrays and parameters a run is computed on, with their provenance.

`Inputs` is the object every command passes along: the example, its arrays (as the
inputs file stores them, read-only), its parameters (typed), the digest of the arrays and
the provenance key (docs/DESIGN.md, "The provenance key"): "the same inputs" means the
same key, whoever asks. Reading and writing inputs files is `_io._inputs`' business.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from .._vocabulary import DTYPES
from ._example import Example
from ._kinds import check_dtype

KEY_HEADER = "weanj-key/2"
_DIGEST_HEADER = b"weanj-inputs/2\n"


def digest(ex: Example, arrays: Mapping[str, np.ndarray]) -> str:
    """The inputs digest: every array's name, dtype, shape and C-order little-endian
    bytes, in the example's order (docs/DESIGN.md, "Inputs files")."""
    h = hashlib.sha256(_DIGEST_HEADER)
    for name in ex.arrays:
        a = np.asarray(arrays[name])
        a = np.asarray(a, dtype=a.dtype.newbyteorder("<"), order="C")  # 0-d stays 0-d
        shape = ",".join(str(d) for d in a.shape)
        h.update(f"{name}\0{a.dtype.str}\0{shape}\0".encode())
        h.update(a.reshape(-1).view(np.uint8) if a.size else b"")  # its buffer, not a copy
    return h.hexdigest()


def legacy_digest(ex: Example, arrays: Mapping[str, np.ndarray]) -> str | None:
    """The format-1 digest (every array's float64 bytes), for examples whose arrays are
    all float: what format-1 gradient files recorded as `inputs_sha256`."""
    if any(spec.kind != "float" for spec in ex.specs):
        return None
    h = hashlib.sha256()
    for name in ex.arrays:
        h.update(np.ascontiguousarray(arrays[name], dtype="<f8").reshape(-1).view(np.uint8))
    return h.hexdigest()


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return f"bool:{'true' if value else 'false'}"
    if isinstance(value, int):
        return f"int:{value}"
    return f"float:{struct.pack('>d', float(value)).hex()}"


def provenance_key(inputs_sha256: str, params: Mapping[str, Any], dtype: str) -> str:
    """The key deciding "the same inputs": digest, typed parameters and dtype under test
    (floats by their IEEE bits, so that every language computes the same text)."""
    lines = [KEY_HEADER, f"inputs={inputs_sha256}", f"dtype={dtype}"]
    lines += [f"param:{name}={_param_text(params[name])}" for name in sorted(params)]
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()


def frozen_arrays(arrays: Mapping[str, np.ndarray], copy: bool = True) -> Mapping[str, np.ndarray]:
    """The arrays, read-only (`copy`: copied first; not where the caller just read them
    and holds no other reference)."""
    out = {}
    for name, a in arrays.items():
        a = np.array(a, copy=True) if copy else np.asarray(a)
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
    # the format-1 digest (`legacy_digest`), or what computes it when first asked
    legacy_of: Any = field(default=None, compare=False, repr=False)

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        return f"Inputs({self.example.name!r}, {self.describe()}{where})"

    @property
    def name(self) -> str:
        return self.example.name

    def key(self, dtype: str = "float64") -> str:
        """The provenance key of a run on these inputs in `dtype`."""
        return provenance_key(self.digest, dict(self.params), check_dtype(dtype))

    @property
    def legacy(self) -> str | None:
        """The format-1 digest of these arrays (None where the example has arrays that
        are not float), computed once, when first asked."""
        found = self.legacy_of
        if callable(found):
            found = found()
            object.__setattr__(self, "legacy_of", found)
        return found

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

    def sizes_text(self) -> str:
        """`n = 4, K = 6` (the symbolic dimensions, then the parameters)."""
        parts = [f"{d} = {size}" for d, size in self.dims.items()]
        if not parts:
            parts = [f"{name} {tuple(a.shape)}" for name, a in self.arrays.items()]
        parts += [f"{k} = {v}" for k, v in self.params.items()]
        return ", ".join(parts)


def from_arrays(
    ex: Example,
    arrays: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
    *,
    what: str = "inputs",
) -> Inputs:
    """`Inputs` from arrays in memory (checked, typed, digested); not written anywhere."""
    stored = ex.check_arrays(arrays, what)
    return Inputs(
        ex,
        frozen_arrays(stored),
        MappingProxyType(ex.check_params(dict(params or {}))),
        digest(ex, stored),
        legacy_of=lambda: legacy_digest(ex, stored),
    )


def stored_inputs(
    ex: Example,
    arrays: Mapping[str, np.ndarray],
    params: Mapping[str, Any],
    sha: str,
    *,
    path: Path,
    shared: bool,
    attrs: Mapping[str, Any],
) -> Inputs:
    """`Inputs` as an inputs file holds them (already checked by its reader)."""
    frozen = frozen_arrays(arrays, copy=False)  # read from the file for these inputs alone
    return Inputs(
        ex,
        frozen,
        MappingProxyType(dict(params)),
        sha,
        path=path,
        shared=shared,
        attrs=MappingProxyType(dict(attrs)),
        legacy_of=lambda: legacy_digest(ex, frozen),
    )
