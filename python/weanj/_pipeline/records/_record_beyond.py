"""What an evaluation record keeps beyond the loss and gradient (docs/outputs.md; the
record itself is `_records`'): the outputs, with their rounding levels per entry where
measured; the outputs' Jacobian's dot-product numbers; the Hessian-vector products.

In the record's JSON text (under its payload digest):

- `outputs`: `{name: {"shape": [...], "sha256": ..., "noise_sha256": ... (where the
  entries' levels were measured)}}`, exactly the example's outputs;
- `jacobian`: `{"uT::u0": [⟨w, J·v⟩ or null, ⟨Jᵀ·w, v⟩, the size of their terms]}`,
  where computed;
- `hvp`: `{"sha256": {array: ...}, "sha256_u": {array: ...}}`, where computed;
- `pullback`: `{"uT::u0": sha256}`, the outputs' pullbacks `Jᵀ·w`, where computed.

Their arrays are members of the `.npz` beside the gradient's: `o_NAME` (the output, in
the run's dtype), `q_NAME` (its entries' levels, float64), `h_ARRAY` and `s_ARRAY` (the
Hessian-vector products along the array's two directions, float64, its shape),
`j_OUTPUT~ARRAY` (a pullback, float64, the array's shape). Each is held to its header
before it is inflated and to its digest after, as the gradient's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._io._gradient_files import SHA256_HEX
from ..._io._h5 import array_sha256
from ..._model import Gradient, Variant
from ..._model._beyond import OUTPUT, pullback_names
from ._record_form import Discarded

FIELDS = ("outputs", "jacobian", "hvp", "pullback")
_MOST = 2**28  # bytes of one output array (a record is never larger)


def _require(ok: bool, why: str) -> None:
    if not ok:
        raise Discarded(why)


def _le(a: Any, dtype: Any = None) -> np.ndarray:
    a = np.asarray(a) if dtype is None else np.asarray(a, dtype)
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def written(g: Gradient) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """`(record fields, npz members)` of what `g` holds beyond its gradient."""
    fields: dict[str, Any] = {}
    members: dict[str, np.ndarray] = {}
    if g.outputs:  # (a backend that computes none keeps none)
        outputs = {}
        for name in g.outputs:
            a = members[f"o_{name}"] = _le(g.outputs[name])
            outputs[name] = {"shape": list(a.shape), "sha256": array_sha256(a)}
            entries = g.noise_entries.get(OUTPUT + name)
            if entries is not None and np.shape(entries) == a.shape:
                q = members[f"q_{name}"] = _le(entries, "<f8")
                outputs[name]["noise_sha256"] = array_sha256(q)
        fields["outputs"] = outputs
        if g.jacobian:
            fields["jacobian"] = {k: list(v) for k, v in g.jacobian.items()}
    if g.hvp is not None:
        digests: dict[str, dict[str, str]] = {"sha256": {}, "sha256_u": {}}
        for a in g.example.wrt_names:
            h, s = members[f"h_{a}"], members[f"s_{a}"] = (
                _le(g.hvp[a], "<f8"),
                _le(g.hvp_u[a], "<f8"),
            )
            digests["sha256"][a], digests["sha256_u"][a] = array_sha256(h), array_sha256(s)
        fields["hvp"] = digests
    if g.pullback is not None:
        pulled = {}
        for k, a in g.pullback.items():
            members[_pulled(k)] = _le(a, "<f8")
            pulled[k] = array_sha256(members[_pulled(k)])
        fields["pullback"] = pulled
    return fields, members


def _pulled(name: str) -> str:
    """The npz member of a pullback `OUTPUT::ARRAY` (`~` is in no output's or array's
    name)."""
    return "j_" + name.replace("::", "~")


def check_fields(record: dict, variant: Variant) -> None:
    """The record's fields beyond the gradient, of the form `written` gives, or
    `Discarded`."""
    ex = variant.example
    bad = "what it keeps beyond the gradient is malformed"
    if "outputs" in record:
        outputs = record["outputs"]
        _require(isinstance(outputs, dict) and set(outputs) == set(ex.outputs), bad)
        for o in outputs.values():
            _require(isinstance(o, dict) and set(o) <= {"shape", "sha256", "noise_sha256"}, bad)
            shape = o.get("shape")
            _require(isinstance(shape, list) and all(_count(n) for n in shape), bad)
            _require(8 * math.prod(shape) <= _MOST, "an output larger than any weanj writes")
            digests = [o.get("sha256"), o.get("noise_sha256", "0" * 64)]
            _require(all(isinstance(d, str) and SHA256_HEX.match(d) for d in digests), bad)
    if "jacobian" in record:
        jacobian = record["jacobian"]
        keys = {f"{o}::{a}" for o in ex.outputs for a in ex.wrt_names}
        _require(isinstance(jacobian, dict) and set(jacobian) == keys, bad)
        for three in jacobian.values():
            _require(isinstance(three, list) and len(three) == 3, bad)
            ahead, back, scale = three
            _require((ahead is None or _finite(ahead)) and _finite(back) and _finite(scale), bad)
    if "hvp" in record:
        hvp = record["hvp"]
        _require(isinstance(hvp, dict) and set(hvp) == {"sha256", "sha256_u"}, bad)
        for digests in hvp.values():
            _require(isinstance(digests, dict) and set(digests) == set(ex.wrt_names), bad)
            _require(all(isinstance(d, str) and SHA256_HEX.match(d) for d in digests.values()), bad)
    if "pullback" in record:
        pulled = record["pullback"]
        _require(isinstance(pulled, dict) and set(pulled) <= set(pullback_names(ex)), bad)
        _require(all(isinstance(d, str) and SHA256_HEX.match(d) for d in pulled.values()), bad)


def _count(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 0


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def expected_members(record: dict, variant: Variant, dtype: str, wrt_shapes: dict) -> dict:
    """`{member: (dtype, shape)}` of the arrays the record says it holds beyond the
    gradient's (each held to its npy header before it is read)."""
    out = {}
    for name, o in record.get("outputs", {}).items():
        shape = tuple(o["shape"])
        out[f"o_{name}"] = (np.dtype(dtype).newbyteorder("<"), shape)
        if "noise_sha256" in o:
            out[f"q_{name}"] = (np.dtype("<f8"), shape)
    if "hvp" in record:
        for a in variant.example.wrt_names:
            shape = tuple(wrt_shapes[a])
            out[f"h_{a}"] = out[f"s_{a}"] = (np.dtype("<f8"), shape)
    for k in record.get("pullback", {}):
        out[_pulled(k)] = (np.dtype("<f8"), tuple(wrt_shapes[k.split("::")[-1]]))
    return out


def check_members(record: dict, arrays: dict[str, np.ndarray]) -> None:
    """Each member beyond the gradient against its digest, finite (levels not negative)."""
    for name, o in record.get("outputs", {}).items():
        _require(array_sha256(arrays[f"o_{name}"]) == o["sha256"], f"the output {name} changed")
        if "noise_sha256" in o:
            q = arrays[f"q_{name}"]
            _require(array_sha256(q) == o["noise_sha256"], f"the levels of {name} changed")
            _require(bool(np.all(np.isfinite(q)) and np.all(q >= 0)), f"bad levels of {name}")
    hvp = record.get("hvp")
    for a, digest in (hvp or {}).get("sha256", {}).items():
        for member, d in ((f"h_{a}", digest), (f"s_{a}", hvp["sha256_u"][a])):
            _require(array_sha256(arrays[member]) == d, f"the Hessian products of {a} changed")
            _require(bool(np.all(np.isfinite(arrays[member]))), f"the products of {a} not finite")
    for k, digest in record.get("pullback", {}).items():
        pulled = arrays[_pulled(k)]
        _require(array_sha256(pulled) == digest, f"the pullback {k} changed")
        _require(bool(np.all(np.isfinite(pulled))), f"the pullback {k} not finite")


def into(g: Gradient, record: dict, arrays: dict[str, np.ndarray]) -> None:
    """`g` with what its record keeps beyond the gradient."""
    for name, o in record.get("outputs", {}).items():
        g.outputs[name] = arrays[f"o_{name}"]
        if "noise_sha256" in o:
            g.noise_entries[OUTPUT + name] = arrays[f"q_{name}"]
    g.jacobian = {
        k: (None if a is None else float(a), float(b), float(s))
        for k, (a, b, s) in record.get("jacobian", {}).items()
    }
    if "hvp" in record:
        g.hvp = {a: arrays[f"h_{a}"] for a in g.example.wrt_names}
        g.hvp_u = {a: arrays[f"s_{a}"] for a in g.example.wrt_names}
    if "pullback" in record:
        g.pullback = {k: arrays[_pulled(k)] for k in record["pullback"]}
