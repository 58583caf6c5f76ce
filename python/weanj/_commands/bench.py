"""Benchmark sweeps: time, compile time and memory of each variant against a size and
against any parameter or symbolic dimension.

The seed notebook's sweep, for any example and variant of the registry. Which variants
run here comes from the case table (`_pipeline.engine._cases`: unavailable or excluded ones are
skipped saying why); the points of each: the sizes (inputs from the example's seeded
`Sizes.generate`, e.g. the grid size n), then, at the middle size, a timed sweep `over` a
parameter or a dimension (`--over T 10 20 40`) and a compiled-only one of scratch memory
(`--memory-over`, by default the example's `Param.sweep`). Each point records the first
gradient call (compilation plus one evaluation), the median forward and gradient times
and XLA's scratch memory of the compiled gradient (`_pipeline.bench._measure`); a Julia
variant's times are round trips through its worker, and the times measured inside Julia
are recorded beside them (`timed_inside`); a variant's size
sweep stops once its gradient takes longer than the budget. Sizes whose inputs would not
fit in memory are refused before anything is allocated. A variant at fault (it raises,
or returns what the variant contract refuses) is that variant's `error`, said in one line;
its series is not measured, the others are, and the command exits 1.

Records go to `results/<example>/bench/<backend>-<device>.json`, one file per backend,
merged by `_io._bench.merge`. A point is measured, recorded and said by
`_pipeline.bench._bench_point`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._backends._placement import device_environment, is_standin
from .._backends._runtime import runtime_of
from .._environment import environment, now
from .._errors import InputError, UnavailableError, WeanjError, say, wrapped
from .._io import _bench, _inputs, _jax_cache
from .._judge._contract import Breach
from .._judge._platform import platform_limit, unavailable_on
from .._model import Catalog, Example, Inputs, Variant, check_dtype
from .._pipeline.bench import _bench_point
from .._pipeline.bench._bench_plan import (
    DEFAULT,
    DEFAULT_BUDGET_S,
    BenchPoint,
    bench_points,
    checked_options,
)
from .._pipeline.engine._table import build_plan
from .._pipeline.evaluation._evaluate import first_line
from .._places import places
from .._project import time_limit
from .._watch import Watch


def _say(message: str) -> None:
    """`weanj bench`'s notes: on stderr, wrapped as an error's first line is."""
    say(wrapped(message))


@dataclass
class Benched:
    """What `weanj bench` measured: the records per backend, the variants at fault
    (`{variant: one line}`) and those it skipped (`{variant: why}`)."""

    example: Example
    by_backend: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    paths: list = field(default_factory=list)

    @property
    def records(self) -> list[dict[str, Any]]:
        return [r for rs in self.by_backend.values() for r in rs]


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
    shared: Inputs | None = None,
    records: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The records of one variant's series (stopping a series once its gradient is slower
    than the budget; a point that times out ends its series too), each added to `records`
    (default: a new list) as it is measured, so that an interrupt keeps it. A variant at
    fault raises `Breach` (its error, one line)."""
    runtime = runtime_of(v)
    target = runtime.device(device)
    with runtime.on_device(target):  # a sharded variant spans the devices of this platform
        where = runtime.placement(target, v.multi_device)
    base = _base_record(ex, v, device, series)
    records = [] if records is None else records
    for run in series:
        for p in run:
            if not p.timed and not runtime.compiled:
                break
            values = _measured(
                v,
                lambda p=p: _bench_point.measure_point(
                    ex,
                    v,
                    p,
                    where,
                    runtime=runtime,
                    device=target,
                    budget_s=budget_s,
                    samples=samples,
                    shared=shared,
                ),
                f"{v.name} at {_bench_point.point_label(ex, p)}",
                watch=watch,
                device=device,
                say=say,
            )
            if values is None:  # it timed out: the rest of its series is skipped
                break
            records.append(_bench_point.point_record(ex, v, p, base, values))
            for line in _bench_point.point_lines(ex, v, p, values):
                say(line)
            if p.timed and values["grad_s"] > budget_s and p is not run[-1]:
                say(
                    f"  {v.name}: gradient took {values['grad_s']:.2f} "
                    f"s > budget {budget_s:g} s; "
                    "skipping the rest of this series"
                )
                break
    return records


def _base_record(
    ex: Example, v: Variant, device: str, series: list[list[BenchPoint]]
) -> dict[str, Any]:
    """The fields every record of a variant's series shares."""
    from .._backends._devices import device_count

    return {
        "example": ex.name,
        "variant": v.name,
        "family": v.family,
        "backend": v.backend,
        "device": device,
        **({"standin": True} if is_standin(device) else {}),  # said in plots and tables
        "devices": device_count() if v.multi_device else 1,
        "dtype": series[0][0].dtype if series and series[0] else "float64",
        "date": now(),
    }


def _measured(
    v: Variant,
    measure_point: Callable[[], dict],
    what: str,
    *,
    watch: Watch,
    device: str,
    say: Callable[[str], None],
) -> dict | None:
    """A point's values, measured under the `watch`; None where it timed out (said). The
    variant's own exception is a `Breach`, or, what the device cannot run, an
    `UnavailableError`."""
    try:
        return watch.run(measure_point, what)
    except TimeoutError as e:
        say(f"  {v.name}: {e}; skipping the rest of this series")
        return None
    except (WeanjError, Breach):
        raise
    except Exception as e:  # the variant's own exception: its error
        limit = platform_limit(f"{type(e).__name__}: {e}", device)
        if limit is not None:  # or what the device cannot run (docs/devices.md)
            raise UnavailableError(
                unavailable_on(device, limit, standin=is_standin(device))
            ) from None
        raise Breach(first_line(e)) from None


def bench(
    cat: Catalog,
    variants: Sequence[Variant] | None = None,
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
    timeout: float | None = None,
    write: bool = True,
    replace: bool = False,
    say: Callable[[str], None] = _say,
) -> Benched:
    """Benchmark the variants of an example and merge the records into its files.

    **Arguments:**

    - `cat`: the example's catalog; `variants`: some of its variants (default: all; those
      that cannot run here are skipped, saying why).
    - `sizes`: problem sizes (the example's `Sizes`, default its `values`), in increasing
      order until the gradient exceeds `budget_s`; an example without `Sizes` is measured
      at its shared inputs.
    - `params`: parameter values of the size sweep (default each `Param.bench`).
    - `over`: `(parameter or dimension, values)`: time and memory against it, at the
      middle size. A dimension (a symbol of the arrays' shapes, e.g. the `T` of
      `("T", "d")`) needs a generator taking it as a keyword.
    - `memory_over`: the same, compiled only (scratch memory); default the first
      parameter with a `Param.sweep`; None: none.
    - `device`: `"cpu"`, `"gpu"` or `"tpu"` (a stand-in says so); `devices`: how many
      devices sharded variants span.
    - `samples`: timing samples per point (default 10, 3 from size 512, fewer within the
      budget); `timeout`: a time limit per point.
    - `write`: merge the records into `results/<example>/bench/` (`replace`: replacing
      every earlier record of a series measured).

    **Returns:** a `Benched`: the records per backend, the variants at fault and skipped.
    """
    ex = cat.example
    here = places()
    _jax_cache.enable()
    dtype = check_dtype(dtype)
    shared = _shared_inputs(ex, here)
    sweep_sizes, point, over, memory_over = checked_options(
        ex, device, sizes, params, samples, devices, budget_s, over, memory_over, shared
    )
    chosen = list(variants) if variants else list(cat.variants)
    result = Benched(ex, skipped=_not_here(cat, chosen, shared, dtype))
    runtimes = _runtimes(chosen, result.skipped, device)
    from .._backends._devices import using_devices

    # Too many devices: one line, before any work.
    selection = contextlib.nullcontext() if devices is None else using_devices(devices, device)
    watch = Watch(timeout_s=time_limit(timeout), say=say)
    how = dict(device=device, budget_s=budget_s, samples=samples, watch=watch, shared=shared)
    points = dict(sizes=sweep_sizes, params=point, dtype=dtype, over=over, memory_over=memory_over)
    try:
        with selection:
            _measure_all(result, chosen, runtimes, say, points, how)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: every point measured is kept, and said
        _keep(result, chosen, device, here, write=write, replace=replace, interrupted=say)
        raise
    _say_abandoned(watch, say)
    _keep(result, chosen, device, here, write=write, replace=replace)
    return result


def _shared_inputs(ex: Example, here) -> Inputs | None:
    """The example's shared inputs; None where they cannot be read and its `Sizes` give
    the inputs (only a dimension sweep needs them then)."""
    try:
        return _inputs.read_inputs(ex, here)
    except WeanjError:
        if ex.sizes is None:
            raise
        return None  # sizes come from the generator; only a dimension sweep needs them


def _runtimes(chosen: list[Variant], skipped: dict[str, str], device: str) -> dict:
    """`{variant: its runtime}` of the chosen variants not skipped; a device that is
    missing fails here, before any work."""
    runtimes = {v.name: runtime_of(v) for v in chosen if v.name not in skipped}
    for v in chosen:  # fails before any work when the device is missing
        if v.name in runtimes and runtimes[v.name].runs_on(device):
            runtimes[v.name].device(device)
    return runtimes


def _say_abandoned(watch: Watch, say: Callable[[str], None]) -> None:
    """The calls that timed out and still run in the background, named."""
    if watch.abandoned:
        say(
            f"note: {len(watch.abandoned)} call(s) that timed out still run in the background: "
            + ", ".join(watch.abandoned)
        )


def _measure_all(result: Benched, chosen, runtimes, say, points: dict, how: dict) -> None:
    """Each chosen variant's series (`points`: `bench_points`' options) measured into
    `result` in turn (`how`: `sweep_variant`'s options)."""
    ex, device = result.example, how["device"]
    shown = ", ".join(f"{k}={val}" for k, val in points["params"].items())
    for v in chosen:
        if v.name in result.skipped:
            say(f"{v.name}: skipped: {result.skipped[v.name]}")
            continue
        if not runtimes[v.name].runs_on(device):
            result.skipped[v.name] = f"not a JAX function (it runs on the CPU), not on {device}"
            say(f"{v.name}: skipped on {device} (not a JAX function; it runs on the CPU)")
            continue
        say(f"{ex.name} {v.name} on {device} ({points['dtype']}{', ' + shown if shown else ''}):")
        _sweep_into(result, v, bench_points(ex, v.name, **points), say, **how)


def _sweep_into(result: Benched, v: Variant, series, say, **how) -> None:
    """One variant's series measured into `result`: its records, or its fault (one line),
    or why the device cannot run it (a platform limit: skipped, not the port's fault)."""
    ex = result.example
    existed = v.backend in result.by_backend
    records = result.by_backend.setdefault(v.backend, [])
    before = len(records)  # the points measured go in as they are (an interrupt keeps them)
    try:
        sweep_variant(ex, v, series, say=say, records=records, **how)
        return
    except Breach as e:  # a variant at fault: its series is not measured
        result.errors[v.name] = f"{v.name} {e}"
        say(f"{v.name}: error: {v.name} {e} (reproduce: `weanj run {ex.name} {v.name}`)")
    except UnavailableError as e:
        result.skipped[v.name] = str(e)
        say(f"{v.name}: {e}")
    del records[before:]
    if not existed:  # none of its backend was measured: as if never begun
        del result.by_backend[v.backend]


def _not_here(cat: Catalog, chosen: list[Variant], shared: Inputs | None, dtype: str) -> dict:
    """`{variant: why}` of the chosen variants that do not run here (the case table says
    so where the shared inputs are read; else the catalog's unavailable ones)."""
    if shared is None:
        return dict(cat.unavailable())
    table = build_plan(cat, shared, live=True, dtypes=(dtype,), checks=False)
    return {
        s.variant.name: s.skip.what
        for s in table.subjects.values()
        if s.skip is not None and s.variant in chosen
    }


def _keep(
    result: Benched, chosen, device: str, here, *, write: bool, replace: bool, interrupted=None
) -> None:
    """Merge what was measured, if anything, into the example's files (`result.paths`),
    where the command `write`s; after an interrupt, said with `interrupted`."""
    if write and any(result.by_backend.values()):
        result.paths = _write(result.example, chosen, result, device, here, replace)
    kept = ", ".join(str(here.shown(path)) for path in result.paths)
    if interrupted is not None and kept:
        n = len(result.records)
        interrupted(f"kept the {n} point(s) measured before the interrupt: {kept}")


def _write(ex: Example, chosen, result: Benched, device: str, here, replace: bool) -> list:
    """Merge the records into `results/<example>/bench/`, one file per backend."""
    versions = {
        backend: next(v.backend_version() for v in chosen if v.backend == backend)
        for backend in result.by_backend
    }
    return _bench.merge(
        ex,
        device,
        result.by_backend,
        here,
        env=device_environment(environment(device), device),
        backend_versions=versions,
        replace=replace,
    )


def sweep_option(values: list[str] | None, option: str) -> tuple[str, list[str]] | None:
    """`--over T 10 20 40` -> ("T", ["10", "20", "40"]) (checked by `bench`); an empty
    list means none."""
    if not values:
        return None
    name, *rest = values
    if not rest:
        raise InputError(f"{option} {name} needs at least one value, e.g. {option} {name} 10 100")
    return name, rest
