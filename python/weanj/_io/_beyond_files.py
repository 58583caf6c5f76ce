"""What a gradient file holds beyond the gradient (docs/outputs.md; docs/reference/
formats.md): the outputs an example declares, their pullbacks and the Hessian-vector
products of a second-order check, so that `weanj diff` and a report of `check.json`
judge and draw them as the check did.

- `outputs/NAME`: each output (the run's dtype), with its `sha256` and, where measured,
  its rounding level (`noise`); `outputs_noise/NAME`: its entries' levels (float64);
- `hvp/ARRAY` and `hvp_u/ARRAY`: each wrt array's Hessian block times its two seeded
  directions (float64, the array's shape), each with its `sha256`;
- `pullback/OUTPUT::ARRAY`: each output's `Jᵀ·w`, the wrt array's part (float64, the
  array's shape), with its `sha256`.

A file without them (written before, or of an example that declares none) reads as none;
one whose outputs are not the example's is refused, as a gradient of other arrays is.
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

from .._errors import InputFileError
from .._model import Example, Gradient
from .._model._beyond import OUTPUT, pullback_names
from ._h5 import array_sha256, read_array, read_attributes, write_array

GROUPS = ("outputs", "outputs_noise", "hvp", "hvp_u", "pullback")


def write_beyond(f: Any, g: Gradient) -> None:
    """`g`'s outputs, their pullbacks and Hessian-vector products into the open file
    `f`."""
    if g.outputs:
        f.create_group("outputs", track_order=True)
        for name, values in g.outputs.items():
            ds = write_array(f, f"outputs/{name}", np.asarray(values))
            ds.attrs["sha256"] = array_sha256(values)
            if OUTPUT + name in g.noise:
                ds.attrs["noise"] = np.float64(g.noise[OUTPUT + name])
        entries = {n: g.noise_entries.get(OUTPUT + n) for n in g.outputs}
        if all(e is not None for e in entries.values()):
            f.create_group("outputs_noise", track_order=True)
            for name, e in entries.items():
                write_array(f, f"outputs_noise/{name}", np.asarray(e, np.float64))
    products = [("hvp", g.hvp), ("hvp_u", g.hvp_u)] if g.hvp is not None else []
    if g.pullback is not None:
        products.append(("pullback", g.pullback))
    if products:
        for group, found in products:
            f.create_group(group, track_order=True)
            for name, values in found.items():
                ds = write_array(f, f"{group}/{name}", np.asarray(values, np.float64))
                ds.attrs["sha256"] = array_sha256(np.asarray(values, np.float64))


def _group(f: Any, group: str, where: str, hint: str) -> dict[str, tuple[np.ndarray, dict]]:
    """`{name: (values, attributes)}` of a group's datasets ({} where there is none)."""
    if group not in f:
        return {}
    node = f[group]
    if not isinstance(node, h5py.Group):
        raise InputFileError(f"{where}: {group} is not a group of datasets{hint}")
    out = {}
    for name, ds in node.items():
        label = f"{where}: {group}/{name}"
        out[name] = (read_array(ds, label, hint), read_attributes(ds.attrs, label, hint))
    return out


def _signed(found: dict, group: str, where: str, hint: str) -> dict[str, np.ndarray]:
    """The datasets whose values match their `sha256` (an `InputFileError` otherwise)."""
    out = {}
    for name, (values, attrs) in found.items():
        if attrs.get("sha256") != array_sha256(values):
            raise InputFileError(
                f"{where}: the values of {group}/{name} do not match their recorded sha256 "
                f"(modified or corrupt){hint}"
            )
        out[name] = values
    return out


def read_beyond(f: Any, ex: Example, dtype: str, where: str, hint: str) -> dict[str, Any]:
    """What the open file `f` holds beyond the gradient, held to the example: `{"outputs",
    "noise" (the outputs' levels, `output:NAME`), "entries", "hvp", "hvp_u", "pullback"}`."""
    outputs = _group(f, "outputs", where, hint)
    if outputs and set(outputs) != set(ex.outputs):
        raise InputFileError(
            f"{where} holds the outputs {', '.join(sorted(outputs))}; {ex.name} declares "
            f"{', '.join(ex.outputs) or 'none'}{hint}"
        )
    values = _signed(outputs, "outputs", where, hint)
    for name, a in values.items():
        if a.dtype.name != dtype:
            raise InputFileError(f"{where}: outputs/{name} is {a.dtype}, not {dtype}{hint}")
    noise = {
        OUTPUT + n: float(attrs["noise"])
        for n, (_, attrs) in outputs.items()
        if isinstance(attrs.get("noise"), (int, float)) and not isinstance(attrs["noise"], bool)
    }
    entries = {}
    for name, (e, _) in _group(f, "outputs_noise", where, hint).items():
        fine = name in values and e.dtype.kind == "f" and e.shape == values[name].shape
        if not fine or not (np.isfinite(e).all() and (e >= 0).all()):
            raise InputFileError(f"{where}: outputs_noise/{name} is not its output's levels{hint}")
        entries[OUTPUT + name] = e.astype(np.float64)
    found: dict[str, Any] = {"outputs": values, "noise": noise, "entries": entries}
    for group in ("hvp", "hvp_u"):
        products = _signed(_group(f, group, where, hint), group, where, hint)
        if products and set(products) != set(ex.wrt_names):
            raise InputFileError(f"{where}: {group} is not one product per wrt array{hint}")
        found[group] = products or None
    pulled = _signed(_group(f, "pullback", where, hint), "pullback", where, hint)
    if not set(pulled) <= set(pullback_names(ex)):
        raise InputFileError(f"{where}: pullback holds others than its outputs' pullbacks{hint}")
    found["pullback"] = pulled if "pullback" in f else None
    return found


def beyond_into(g: Gradient, found: dict[str, Any]) -> None:
    """`g` with what `read_beyond` found."""
    g.outputs = found["outputs"]
    g.noise.update(found["noise"])
    g.noise_entries.update(found["entries"])
    g.hvp, g.hvp_u, g.pullback = found["hvp"], found["hvp_u"], found["pullback"]
