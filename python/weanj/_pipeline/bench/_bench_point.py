"""One point of a variant's benchmark series (`weanj bench`): measured through the
variant's runtime (`measure_point`, with `_measure`), its record, and the line the
command says of it.
"""

from __future__ import annotations

from typing import Any

from ..._model import Example, Inputs, Variant
from . import _measure as measure
from ._bench_plan import BenchPoint


def _mib(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else f"{nbytes / 2**20:.2f} MiB"


def point_label(ex: Example, p: BenchPoint) -> str:
    """How `weanj bench` names a point: its size (or the shared inputs), its parameters
    and dimensions."""
    size = (
        [f"{ex.sizes.name}={p.size}"]
        if p.size is not None and ex.sizes is not None
        else ["shared inputs"]
    )
    return " ".join(size + [f"{k}={v}" for k, v in (*p.params, *p.dims)])


def _inside_text(inside: dict) -> str:
    """The times measured inside a worker (a Julia variant's), labelled by its clock."""
    return (
        f"{inside['clock']}: forward {1e3 * inside['forward_s']:.3f} ms "
        f"(fastest {1e3 * inside['forward_min_s']:.3f}), gradient "
        f"{1e3 * inside['grad_s']:.3f} ms (fastest {1e3 * inside['grad_min_s']:.3f}), "
        f"medians of {inside['samples']}"
    )


def point_record(
    ex: Example, v: Variant, p: BenchPoint, base: dict, values: dict
) -> dict[str, Any]:
    """A point's record: the series' shared fields (`base`), the point's size, parameters
    and dimensions, and what was measured (`values`)."""
    size_fields: dict[str, Any] = {"size": p.size}
    if ex.sizes is not None:
        size_fields[ex.sizes.name] = p.size
        size_fields["size_name"] = ex.sizes.name
    return {**base, "sweep": p.sweep, **size_fields, **dict(p.params), **dict(p.dims), **values}


def measure_point(
    ex: Example,
    v: Variant,
    p: BenchPoint,
    where,
    *,
    runtime,
    device,
    budget_s: float,
    samples: int | None,
    shared: Inputs | None,
) -> dict:
    """One point, in the calling thread (the `Watch`'s worker), through the variant's
    runtime: a default device (JAX's) is a per-thread setting, so it is set here; it also
    puts any computation that has no array input of its own on the device the inputs are
    placed on."""
    with runtime.on_device(device):
        arrays = measure.generator_for(ex, dict(p.dims), shared)(p.size)
        config = v.configuration(p.dtype)  # a backend without JAX's x64 places as it is
        x64 = config.x64 is None or config.x64.enabled
        args, n_entries = measure.call_args(
            ex, arrays, dict(p.params), p.dtype, where, runtime, x64
        )
        if p.timed:
            return measure.measure(
                v, args, n_entries, p.size, runtime=runtime, budget_s=budget_s, samples=samples
            )
        return measure.memory_only(v, args, n_entries, runtime=runtime)


def point_lines(ex: Example, v: Variant, p: BenchPoint, values: dict) -> list[str]:
    """What `weanj bench` says of a point it measured: its times and scratch memory, the
    times measured inside a worker beside a round trip's, or a compiled-only point's
    memory."""
    if not p.timed:
        return [f"  {v.name:<20} {point_label(ex, p):<18} temp {_mib(values['peak_mem_bytes'])}"]
    inside = values.get("timed_inside")
    out = [
        f"  {v.name:<20} {point_label(ex, p):<18} first "
        f"call {values['compile_s']:8.3f} s  forward "
        f"{1e3 * values['forward_s']:10.3f} ms  "
        f"gradient {1e3 * values['grad_s']:10.3f} ms  "
        + ("(round trip)" if inside else f"temp {_mib(values['peak_mem_bytes'])}")
    ]
    if inside:
        out.append(f"  {'':<20} {'':<18} {_inside_text(inside)}")
    return out
