"""Benchmark sweeps: time, compile time and memory of each variant against a size and
against any parameter or symbolic dimension.

The seed notebook's sweep, for any example and variant of the registry. The points come
from the case table (`_cases.bench_points`): for each variant, the sizes (inputs from the
example's seeded `Sizes.generate`, e.g. the grid size n), then, at the middle size, a
timed sweep `over` a parameter or a dimension (`--over T 10 20 40`) and a compiled-only
one of scratch memory (`--memory-over`, by default the example's `Param.sweep`). Each
point records the first gradient call (compilation plus one evaluation), the median
forward and gradient times and XLA's scratch memory of the compiled gradient
(`_bench_measure`); a variant's size sweep stops once its gradient takes longer than the
budget. Sizes whose inputs would not fit in memory are refused before anything is
allocated.

Records go to `results/<example>/bench/<backend>-<device>.json`, one file per backend,
merged by `_bench_files.write` (re-exported here as `write`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Callable, Sequence
from typing import Any

from . import _bench_measure as measure
from ._bench_files import _say, write  # noqa: F401  (`_bench.write`: the CLI, benchmarks/)
from ._cases import BenchPoint, bench_points
from ._errors import InputError
from ._model import Example, Variant, check_dtype
from ._registry import example, variant, variants
from ._watch import Watch

DEFAULT_BUDGET_S = 5.0
DEFAULT = object()  # "the example's own default" for `memory_over`


def _mib(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else f"{nbytes / 2**20:.2f} MiB"


def _label(ex: Example, p: BenchPoint) -> str:
    size = (
        [f"{ex.sizes.name}={p.size}"]
        if p.size is not None and ex.sizes is not None
        else ["shared inputs"]
    )
    return " ".join(size + [f"{k}={v}" for k, v in (*p.params, *p.dims)])


def _record(ex: Example, v: Variant, p: BenchPoint, base: dict, values: dict) -> dict[str, Any]:
    size_fields: dict[str, Any] = {"size": p.size}
    if ex.sizes is not None:
        size_fields[ex.sizes.name] = p.size
        size_fields["size_name"] = ex.sizes.name
    return {**base, "sweep": p.sweep, **size_fields, **dict(p.params), **dict(p.dims), **values}


def _point(
    ex: Example, v: Variant, p: BenchPoint, where, *, device, budget_s: float, samples: int | None
) -> dict:
    """One point, in the calling thread (the `Watch`'s worker): JAX's default device is a
    per-thread setting, so it is set here; it also puts any computation that has no array
    input of its own on the device the inputs are placed on."""
    import jax

    with jax.default_device(device):
        arrays = measure.generator_for(ex, dict(p.dims))(p.size)
        args, n_entries = measure.call_args(ex, arrays, dict(p.params), p.dtype, where)
        if p.timed:
            return measure.measure(v, args, n_entries, p.size, budget_s=budget_s, samples=samples)
        return measure.memory_only(v, args, n_entries)


def sweep_variant(
    ex: Example,
    v: Variant,
    series: list[list[BenchPoint]],
    *,
    device: str,
    budget_s: float,
    samples: int | None,
    watch: Watch,
    say: Callable[[str], None] = _say,
) -> list[dict[str, Any]]:
    """The records of one variant's series (stopping a series once its gradient is slower
    than the budget; a point that times out ends its series too)."""
    from ._devices import device_count

    on_jax = hasattr(v.grad, "lower")
    target = measure.jax_device(device)
    where = measure.placement(target, v.multi_device) if on_jax else None
    base = {
        "example": ex.name,
        "variant": v.name,
        "family": v.family,
        "backend": v.backend,
        "device": device,
        "devices": device_count() if v.multi_device else 1,
        "dtype": series[0][0].dtype if series and series[0] else "float64",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    records = []
    for run in series:
        for p in run:
            if not p.timed and not on_jax:
                break
            try:
                values = watch.run(
                    lambda p=p: _point(
                        ex, v, p, where, device=target, budget_s=budget_s, samples=samples
                    ),
                    f"{v.name} at {_label(ex, p)}",
                )
            except TimeoutError as e:
                say(f"  {v.name}: {e}; skipping the rest of this series")
                break
            records.append(_record(ex, v, p, base, values))
            if p.timed:
                say(
                    f"  {v.name:<20} {_label(ex, p):<18} first "
                    f"call {values['compile_s']:8.3f} s  forward "
                    f"{1e3 * values['forward_s']:10.3f} ms  "
                    f"gradient {1e3 * values['grad_s']:10.3f} ms  "
                    f"temp {_mib(values['peak_mem_bytes'])}"
                )
                if values["grad_s"] > budget_s and p is not run[-1]:
                    say(
                        f"  {v.name}: gradient took {values['grad_s']:.2f} "
                        f"s > budget {budget_s:g} s; "
                        "skipping the rest of this series"
                    )
                    break
            else:
                say(f"  {v.name:<20} {_label(ex, p):<18} temp {_mib(values['peak_mem_bytes'])}")
    return records


def _sweep_spec(ex: Example, what: str, spec) -> tuple[str, tuple] | None:
    """`(name, values)` checked against the example's parameters and dimensions."""
    if spec is None:
        return None
    name, values = spec
    if not values:
        raise InputError(f"{what} {name} needs at least one value")
    if name in ex.param_names:
        p = ex.param(name)
        return name, tuple(
            sorted({p.check(p.parse(str(x)) if isinstance(x, str) else x) for x in values})
        )
    if name in ex.symbols:
        checked = []
        for x in values:
            try:
                value = int(x)
            except (TypeError, ValueError):
                raise InputError(f"{what} {name}: a dimension takes integers, got {x!r}") from None
            if value < 1:
                raise InputError(f"{what} {name}: a dimension must be at least 1, got {value}")
            checked.append(value)
        return name, tuple(sorted(set(checked)))
    known = [*ex.param_names, *ex.symbols]
    raise InputError(
        f"{what}: {ex.name} has no parameter or dimension "
        f"{name} (it has: {', '.join(known) or 'none'})"
    )


def _sweep_sizes(ex: Example, sizes: Sequence[int] | None) -> list[int | None]:
    """The sizes of the sweep (the example's by default), refused in one line before any
    allocation when their inputs would not fit in memory."""
    if ex.sizes is None:
        if sizes:
            raise InputError(f"example {ex.name} declares no sizes to sweep (weanj.Sizes)")
        return [None]
    chosen = sorted({int(s) for s in (sizes or ex.sizes.values)})
    if chosen[0] < 1:
        raise InputError(f"sizes ({ex.sizes.name}) must be at least 1, got {chosen}")
    measure.check_reachable(ex, ex.sizes.name, chosen, measure.generator_for(ex, {}))
    return chosen


def _sweeps(ex: Example, over, memory_over) -> tuple:
    """`over` and `memory_over` checked (`memory_over` default: the first parameter with a
    `Param.sweep`); a dimension no generator takes is refused before any work."""
    over = _sweep_spec(ex, "--over", over)
    if memory_over is DEFAULT:
        swept = [p for p in ex.params if p.sweep]
        memory_over = (swept[0].name, swept[0].sweep) if swept else None
    memory_over = _sweep_spec(ex, "--memory-over", memory_over)
    for spec in (over, memory_over):
        if spec is not None and spec[0] not in ex.param_names:
            measure.generator_for(ex, {spec[0]: spec[1][0]})
    return over, memory_over


def _checked(
    ex: Example,
    device: str,
    sizes: Sequence[int] | None,
    params: dict[str, Any] | None,
    samples: int | None,
    devices: int | None,
    budget_s: float,
    over: Any,
    memory_over: Any,
) -> tuple[list[int], dict[str, Any], Any, Any]:
    """`bench`'s options checked before any work: (sizes, the size sweep's parameters,
    over, memory_over); a dimension's values out of reach are refused here too."""
    if device not in ("cpu", "gpu"):
        raise InputError(f"device must be cpu or gpu, got {device!r}")
    sweep_sizes = _sweep_sizes(ex, sizes)
    for what, value in (("samples", samples), ("devices", devices)):
        if value is not None and value < 1:
            raise InputError(f"{what} must be at least 1, got {value}")
    if not (budget_s > 0 and budget_s != float("inf")):
        raise InputError(f"the budget must be a finite number of seconds > 0, got {budget_s}")
    given = {k: v for k, v in (params or {}).items() if v is not None}
    point = ex.check_params({p.name: given.get(p.name, p.bench_value) for p in ex.params})
    over, memory_over = _sweeps(ex, over, memory_over)
    for spec in (over, memory_over):  # a dimension's values out of reach: refused before any work
        if spec is not None and spec[0] not in ex.param_names:
            middle = sweep_sizes[len(sweep_sizes) // 2]  # where bench_points sweeps it
            measure.check_reachable(
                ex,
                spec[0],
                list(spec[1]),
                lambda d, name=spec[0], at=middle: measure.generator_for(ex, {name: d})(at),
            )
    return sweep_sizes, point, over, memory_over


def bench(
    example_name: str,
    variant_names: Sequence[str] | None = None,
    *,
    sizes: Sequence[int] | None = None,
    params: dict[str, Any] | None = None,
    dtype: str = "float64",
    device: str = "cpu",
    budget_s: float = DEFAULT_BUDGET_S,
    samples: int | None = None,
    over: tuple[str, Sequence] | None = None,
    memory_over: Any = DEFAULT,
    devices: int | None = None,
    timeout_s: float | None = None,
    say: Callable[[str], None] = _say,
) -> dict[str, list[dict[str, Any]]]:
    """Benchmark the variants of an example; nothing is written (see `write`).

    **Arguments:**

    - `variant_names`: default all variants available here.
    - `sizes`: problem sizes (the example's `Sizes`, default its `values`), in increasing
      order until the gradient exceeds `budget_s`; an example without `Sizes` is measured
      at its shared inputs.
    - `params`: parameter values of the size sweep (default each `Param.bench`).
    - `over`: `(parameter or dimension, values)`: time and memory against it, at the
      middle size. A dimension (a symbol of the arrays' shapes, e.g. the `T` of
      `("T", "d")`) needs a generator taking it as a keyword.
    - `memory_over`: the same, compiled only (scratch memory); default the first
      parameter with a `Param.sweep`; None: none.
    - `device`: `"cpu"` or `"gpu"`; `devices`: how many devices sharded variants span.
    - `samples`: timing samples per point (default 10, 3 from size 512, fewer within the
      budget); `timeout_s`: a time limit per point.

    **Returns:** `{backend: [records]}` with the fields of docs/DESIGN.md.
    """
    ex = example(example_name)
    dtype = check_dtype(dtype)
    sweep_sizes, point, over, memory_over = _checked(
        ex, device, sizes, params, samples, devices, budget_s, over, memory_over
    )
    measure.jax_device(device)  # fails before any work when the GPU is missing
    chosen = [
        variant(ex.name, name)
        for name in (list(variant_names) if variant_names else variants(ex.name))
    ]
    from ._devices import using_devices

    # Too many devices: one line, before any work.
    selection = contextlib.nullcontext() if devices is None else using_devices(devices, device)
    watch = Watch(timeout_s=timeout_s, say=say)
    by_backend: dict[str, list[dict[str, Any]]] = {}
    with selection:
        for v in chosen:
            if device != "cpu" and not hasattr(v.grad, "lower"):
                say(f"{v.name}: skipped on {device} (not a JAX function; it runs on the CPU)")
                continue
            shown = ", ".join(f"{k}={val}" for k, val in point.items())
            say(f"{ex.name} {v.name} on {device} ({dtype}{', ' + shown if shown else ''}):")
            series = bench_points(
                ex,
                v.name,
                sizes=sweep_sizes,
                params=point,
                dtype=dtype,
                over=over,
                memory_over=memory_over,
            )
            records = sweep_variant(
                ex,
                v,
                series,
                device=device,
                budget_s=budget_s,
                samples=samples,
                watch=watch,
                say=say,
            )
            by_backend.setdefault(v.backend, []).extend(records)
    if watch.abandoned:
        say(
            f"note: {len(watch.abandoned)} call(s) that timed out still run in the background: "
            + ", ".join(watch.abandoned)
        )
    return by_backend


def sweep_option(values: list[str] | None, option: str) -> tuple[str, list[str]] | None:
    """`--over T 10 20 40` -> ("T", ["10", "20", "40"]) (checked by `bench`); an empty
    list means none."""
    if not values:
        return None
    name, *rest = values
    if not rest:
        raise InputError(f"{option} {name} needs at least one value, e.g. {option} {name} 10 100")
    return name, rest


def markdown_table(ex: Example, records: Sequence[dict[str, Any]]) -> str:
    """The timed records as a Markdown table (times in ms, scratch memory in MiB)."""

    def cell(value, scale, digits):
        return "–" if value is None else f"{value * scale:.{digits}f}"

    size_name = ex.sizes.name if ex.sizes is not None else None
    columns = ([size_name] if size_name else []) + list(ex.param_names)
    if any(r.get("devices", 1) != 1 for r in records):
        columns.append("devices")
    lines = [
        "| variant | device | dtype | "
        + "".join(f"{c} | " for c in columns)
        + "forward [ms] | gradient [ms] | gradient/forward | first call [s] | scratch [MiB] |",
        "| --- | --- | --- | " + "---: | " * len(columns) + "---: | ---: | ---: | ---: | ---: |",
    ]
    for r in records:
        if not r.get("timed", r.get("forward_s") is not None):
            continue
        ratio = r["grad_s"] / r["forward_s"] if r["forward_s"] else None
        lines.append(
            f"| `{r['variant']}` | {r['device']} | {r['dtype']} | "
            + "".join(f"{r.get(c, '–')} | " for c in columns)
            + f"{cell(r['forward_s'], 1e3, 3)} | {cell(r['grad_s'], 1e3, 3)} | "
            f"{cell(ratio, 1, 1)} | {cell(r['compile_s'], 1, 2)} | "
            f"{cell(r['peak_mem_bytes'], 2**-20, 2)} |"
        )
    return "\n".join(lines)
