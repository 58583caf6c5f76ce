"""Benchmark sweeps: time, compile time and memory of each variant against a size and
against any parameter.

The seed notebook's sweep, for any example and variant of the registry. For each
variant and problem size (inputs from the example's seeded `Sizes.generate`, e.g. the
grid size n), it records the wall time of the first gradient call (compilation plus one
evaluation), the median forward (loss) and gradient times, and XLA's scratch memory of
the compiled gradient; a variant's sweep stops once its gradient takes longer than the
budget. Optionally the same measurements against a parameter (`--over T 10 20 40`) at
the middle size. Then the gradient's scratch memory against a parameter (compiled only,
never run), by default over the values the example's `Param.sweep` lists (e.g. K).

Records go to `results/<example>/bench/<backend>-<device>.json`, one file per backend;
a rerun replaces the series it measured and keeps the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._atomic import locked
from ._errors import InputError, InputFileError, UnavailableError, WeanjError
from ._inputs import check_params
from ._registry import Example, Variant, example, variant, variants
from ._timing import (
    check_record,
    environment,
    record_fields,
    results_path,
    time_median,
    write_results,
)

DEFAULT_BUDGET_S = 5.0
SEED = 1
GPU_HINT = "on a machine with an NVIDIA GPU: pip install -U 'jax[cuda12]'"
_DEFAULT = object()  # "the example's own default" for `memory_over`


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def jax_device(device: str):
    """The first JAX device of kind `"cpu"` or `"gpu"`; no GPU raises `UnavailableError`."""
    import jax

    try:
        found = jax.devices(device)
    except RuntimeError:  # JAX raises when no backend of that kind is installed
        found = []
    if not found:
        raise UnavailableError(
            f"no GPU visible to JAX here (jax.devices({device!r}) is empty); {GPU_HINT}"
        )
    return found[0]


def _default_samples(size: int | None) -> int:
    # The notebook's choice: fewer samples where one call takes long (large n).
    return 3 if size is not None and size >= 512 else 10


def _samples_within_budget(grad: Callable, args: tuple, size: int | None, budget_s: float) -> int:
    """The default number of samples, fewer where they would take longer than the budget.

    One timed gradient call (compiled already) decides: a point costs at most about the
    budget per function, and a gradient slower than the budget, which ends the sweep
    anyway, is timed once rather than ten times.
    """
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(grad(*args))
    one_call = time.perf_counter() - t0
    return max(1, min(_default_samples(size), int(budget_s / max(one_call, 1e-9))))


def inputs_at(ex: Example, size: int | None) -> dict[str, np.ndarray]:
    """The example's inputs at `size` (its `Sizes.generate`), or its shared inputs."""
    if size is None:
        from ._inputs import load_inputs

        data = load_inputs(ex.name)
        return {name: data[name] for name in ex.arrays}
    return dict(ex.sizes.generate(SEED, size))


def _placement(device, multi_device: bool):
    """Where the inputs go: `device`, or, for a multi-device variant, replicated over the
    devices it spans (so that they are not committed to one of them)."""
    if device is None or not multi_device:
        return device
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from ._devices import chosen_devices

    return NamedSharding(Mesh(np.array(chosen_devices(), dtype=object), ("d",)), PartitionSpec())


def _args(ex: Example, size: int | None, params: dict[str, int], dtype: str, device) -> tuple:
    """The call arguments at a size, on `device` (a device or a sharding) for JAX
    functions (numpy arrays otherwise), and N, the number of gradient entries."""
    import jax

    arrays = {k: np.asarray(a, dtype=dtype) for k, a in inputs_at(ex, size).items()}
    N = int(sum(np.size(arrays[name]) for name in ex.wrt_names))
    if device is not None:
        # Placed once, before timing, so the clock sees no host-to-device copies; with
        # 64-bit types on, so float64 stays float64 (variants run that way too).
        with jax.enable_x64(True):
            arrays = {k: jax.device_put(a, device) for k, a in arrays.items()}
    return ex.args(arrays, params), N


def temp_bytes(grad: Callable, args: tuple) -> int | None:
    """XLA's scratch memory of the compiled gradient (inputs and outputs excluded), in bytes;
    None for functions that are not JAX-compiled (e.g. Julia through juliacall)."""
    if not hasattr(grad, "lower"):
        return None
    analysis = grad.lower(*args).compile().memory_analysis()
    return None if analysis is None else int(analysis.temp_size_in_bytes)


def _mib(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else f"{nbytes / 2**20:.2f} MiB"


def _point_label(ex: Example, size: int | None, params: dict[str, int]) -> str:
    size_part = [f"{ex.sizes.name}={size}"] if size is not None else ["shared inputs"]
    return " ".join(size_part + [f"{k}={v}" for k, v in params.items()])


def _measure(
    ex: Example,
    v: Variant,
    size: int | None,
    params: dict[str, int],
    *,
    dtype: str,
    where,
    budget_s: float,
    samples: int | None,
) -> dict[str, Any]:
    """Time one point: first call, median forward and gradient, scratch memory."""
    import jax

    loss, grad = v.loss, v.grad
    args, N = _args(ex, size, params, dtype, where)
    t0 = time.perf_counter()
    jax.block_until_ready(grad(*args))
    compile_s = time.perf_counter() - t0
    count = samples or _samples_within_budget(grad, args, size, budget_s)
    forward_s = time_median(
        functools.partial(loss, *args), sync=jax.block_until_ready, samples=count
    )
    grad_s = time_median(
        functools.partial(grad, *args), sync=jax.block_until_ready, samples=count, warmup=0
    )  # the first call above was the warm-up
    return {
        "N": N,
        "forward_s": forward_s,
        "grad_s": grad_s,
        "compile_s": compile_s,
        "peak_mem_bytes": temp_bytes(grad, args),
        "samples": count,
        "timed": True,
    }


def _record(ex: Example, base: dict, sweep: str, size: int | None, params: dict, values: dict):
    size_fields = {"size": size}
    if ex.sizes is not None:
        size_fields[ex.sizes.name] = size
        size_fields["size_name"] = ex.sizes.name
    return {**base, "sweep": sweep, **size_fields, **params, **values}


def sweep_variant(
    ex: Example,
    v: Variant,
    *,
    sizes: Sequence[int | None],
    params: dict[str, int],
    dtype: str,
    device: str,
    budget_s: float,
    samples: int | None,
    over: tuple[str, Sequence[int]] | None = None,
    memory_over: tuple[str, Sequence[int]] | None = None,
    say: Callable[[str], None] = _say,
) -> list[dict[str, Any]]:
    """The records of one variant: the sweep over `sizes` at `params`, then (at the middle
    size) the timed sweep `over` a parameter and the compiled-only `memory_over` one."""
    on_jax = hasattr(v.grad, "lower")
    where = _placement(jax_device(device), v.multi_device) if on_jax else None
    from ._devices import device_count

    base = {
        "example": ex.name,
        "variant": v.name,
        "family": v.family,
        "backend": v.backend,
        "device": device,
        "devices": device_count() if v.multi_device else 1,
        "dtype": dtype,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    size_name = ex.sizes.name if ex.sizes is not None else "size"
    measure = functools.partial(
        _measure, ex, v, dtype=dtype, where=where, budget_s=budget_s, samples=samples
    )

    def show(size, point, values):
        say(
            f"  {v.name:<20} {_point_label(ex, size, point):<18} first call "
            f"{values['compile_s']:8.3f} s  forward {1e3 * values['forward_s']:10.3f} ms  "
            f"gradient {1e3 * values['grad_s']:10.3f} ms  temp {_mib(values['peak_mem_bytes'])}"
        )

    records = []
    for size in sizes:
        values = measure(size, params)
        records.append(_record(ex, base, size_name, size, params, values))
        show(size, params, values)
        if values["grad_s"] > budget_s:
            rest = [m for m in sizes if m is not None and size is not None and m > size]
            if rest:
                say(
                    f"  {v.name}: gradient took {values['grad_s']:.2f} s > budget "
                    f"{budget_s:g} s; skipping {size_name} = {', '.join(map(str, rest))}"
                )
            break
    middle = sizes[len(sizes) // 2]
    if over is not None:
        name, values_over = over
        for value in values_over:
            point = {**params, name: value}
            values = measure(middle, point)
            records.append(_record(ex, base, name, middle, point, values))
            show(middle, point, values)
            if values["grad_s"] > budget_s:
                say(f"  {v.name}: gradient took {values['grad_s']:.2f} s > budget; stopping")
                break
    if on_jax and memory_over is not None:
        name, values_over = memory_over
        for value in values_over:
            point = {**params, name: value}
            args, N = _args(ex, middle, point, dtype, where)
            mem = temp_bytes(v.grad, args)
            untimed = {
                "N": N,
                "forward_s": None,
                "grad_s": None,
                "compile_s": None,
                "peak_mem_bytes": mem,
                "samples": None,
                "timed": False,
            }
            records.append(_record(ex, base, name, middle, point, untimed))
            say(f"  {v.name:<20} {_point_label(ex, middle, point):<18} temp {_mib(mem)}")
    return records


def _parameter_sweep(ex: Example, what: str, spec) -> tuple[str, tuple[int, ...]] | None:
    """`(name, values)` checked against the example, or None."""
    if spec is None:
        return None
    name, values = spec
    ex.param(name)  # unknown names: one line listing the example's parameters
    values = tuple(sorted({int(x) for x in values}))
    for value in values:
        check_params(ex, {name: value})
    if not values:
        raise InputError(f"{what} {name} needs at least one value")
    return name, values


def bench(
    example_name: str,
    variant_names: Sequence[str] | None = None,
    *,
    sizes: Sequence[int] | None = None,
    params: dict[str, int | None] | None = None,
    dtype: str = "float64",
    device: str = "cpu",
    budget_s: float = DEFAULT_BUDGET_S,
    samples: int | None = None,
    over: tuple[str, Sequence[int]] | None = None,
    memory_over: Any = _DEFAULT,
    devices: int | None = None,
    say: Callable[[str], None] = _say,
) -> dict[str, list[dict[str, Any]]]:
    """Benchmark the variants of an example; nothing is written (see `write`).

    **Arguments:**

    - `variant_names`: default all variants available here.
    - `sizes`: problem sizes (the example's `Sizes`, default its `values`), swept in
      increasing order until the gradient exceeds `budget_s`. An example without `Sizes`
      is measured at its shared inputs.
    - `params`: parameter values of the sweep over sizes (default each `Param.bench`).
    - `over`: `(parameter, values)`: time and memory against it, at the middle size.
    - `memory_over`: `(parameter, values)`: scratch memory against it at the middle size,
      compiled only; default the first parameter with a `Param.sweep`; None: none.
    - `device`: `"cpu"` or `"gpu"` (no GPU raises `UnavailableError`).
    - `samples`: timing samples per point (default 10, 3 from size 512, fewer where they
      would take longer than `budget_s`).
    - `devices`: how many devices the multi-device (sharded) variants span (default: all
      of `device`'s kind that JAX sees, or `weanj.set_devices`'s choice); the others run
      on one. Recorded as `devices` in every record.
    - `say`: receives one progress line per measured point.

    **Returns:** `{backend: [records]}`, each record with the fields of DESIGN.md (`dtype,
    variant, N, forward_s, grad_s, compile_s, peak_mem_bytes`, the size under its name,
    e.g. `n`, and every parameter, e.g. `K`) and `example, family, backend, device,
    sweep` (the size's name or the parameter swept), `size`, `timed`, `samples`, `date`.
    `compile_s` is the wall time of the first gradient call (compilation plus one
    evaluation); `peak_mem_bytes` is XLA's scratch memory of the compiled gradient (None
    where not JAX); `N` the number of gradient entries.
    """

    ex = example(example_name)
    if dtype not in ("float64", "float32"):
        raise InputError(f"dtype must be float64 or float32, got {dtype!r}")
    if device not in ("cpu", "gpu"):
        raise InputError(f"device must be cpu or gpu, got {device!r}")
    if ex.sizes is None:
        if sizes:
            raise InputError(f"example {ex.name} declares no sizes to sweep (weanj.Sizes)")
        sweep_sizes: list[int | None] = [None]
    else:
        sweep_sizes = sorted({int(s) for s in (sizes or ex.sizes.values)})
        if sweep_sizes[0] < 1:
            raise InputError(f"sizes ({ex.sizes.name}) must be at least 1, got {sweep_sizes}")
    if samples is not None and samples < 1:
        raise InputError(f"samples must be at least 1, got {samples}")
    if not budget_s > 0:
        raise InputError(f"the budget must be positive, got {budget_s}")
    given = {k: v for k, v in (params or {}).items() if v is not None}
    for name in given:
        ex.param(name)
    point = check_params(ex, {p.name: given.get(p.name, p.bench_value) for p in ex.params})
    over = _parameter_sweep(ex, "--over", over)
    if memory_over is _DEFAULT:
        swept = [p for p in ex.params if p.sweep]
        memory_over = (swept[0].name, swept[0].sweep) if swept else None
    memory_over = _parameter_sweep(ex, "--memory-over", memory_over)
    where = jax_device(device)  # fails before any work when the GPU is missing
    names = list(variant_names) if variant_names else variants(ex.name)
    chosen = [variant(ex.name, name) for name in names]
    if devices is not None and devices < 1:
        raise InputError(f"devices must be at least 1, got {devices}")
    from ._devices import using_devices

    # Too many devices: one line, before any work.
    selection = contextlib.nullcontext() if devices is None else using_devices(devices, device)
    with selection:
        return _bench_variants(
            ex,
            chosen,
            where,
            say,
            sizes=sweep_sizes,
            params=point,
            dtype=dtype,
            device=device,
            budget_s=budget_s,
            samples=samples,
            over=over,
            memory_over=memory_over,
        )


def _bench_variants(ex: Example, chosen: list[Variant], where, say, **options):
    """The records of each variant, by backend (see `bench`; `options` are
    `sweep_variant`'s)."""
    import jax

    device, dtype, point = options["device"], options["dtype"], options["params"]
    by_backend: dict[str, list[dict[str, Any]]] = {}
    for v in chosen:
        if device != "cpu" and not hasattr(v.grad, "lower"):
            say(f"{v.name}: skipped on {device} (not a JAX function; it runs on the CPU)")
            continue
        shown = ", ".join(f"{k}={val}" for k, val in point.items())
        say(f"{ex.name} {v.name} on {device} ({dtype}{', ' + shown if shown else ''}):")
        # Inputs are placed on `where` too; this also puts any computation that has no
        # array input of its own there.
        with jax.default_device(where):
            records = sweep_variant(ex, v, say=say, **options)
        by_backend.setdefault(v.backend, []).extend(records)
    return by_backend


def _series(record: dict[str, Any]) -> tuple:
    """What a rerun replaces: a variant's sweep (over the size, or over one parameter,
    timed or compiled only) at one dtype with everything else fixed."""
    fixed = tuple(
        sorted(
            (k, v)
            for k, v in record.items()
            if k not in _VARYING and k != record.get("sweep") and isinstance(v, (int, str))
        )
    )
    return record.get("variant"), record.get("dtype"), record.get("sweep"), fixed


# Fields that differ between the points of one series (or say nothing about the series).
_VARYING = {
    "N",
    "forward_s",
    "grad_s",
    "compile_s",
    "peak_mem_bytes",
    "samples",
    "date",
    "size",
    "example",
    "family",
    "backend",
    "device",
}


def _aside_path(path: Path) -> Path:
    """Where an unreadable benchmark file is kept: beside it, named so that no reader
    takes it for a benchmark file (not `*.json`)."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    aside = path.with_name(f"{path.name}.unreadable-{stamp}")
    k = 1
    while aside.exists():
        k += 1
        aside = path.with_name(f"{path.name}.unreadable-{stamp}-{k}")
    return aside


def _kept_records(example_name: str, path: Path) -> tuple[list[dict[str, Any]], Path | None]:
    """The records already in `path`, and where the file was moved when it could not be
    read whole (not JSON, no record list, or records of the wrong form): then the
    well-formed records are kept and the file itself goes aside, so nothing is lost."""
    if not path.is_file():
        return [], None
    required = record_fields(example_name)
    try:
        records = json.loads(path.read_text())["records"]
        if not isinstance(records, list):
            raise TypeError("records is not a list")
    except (OSError, ValueError, KeyError, TypeError):
        records, whole = [], False
    else:
        good = []
        for i, r in enumerate(records):
            try:
                check_record(r, required, f"record {i}")
                good.append(r)
            except InputError:
                pass
        whole = len(good) == len(records)
        records = good
    if whole:
        return records, None
    aside = _aside_path(path)
    os.replace(path, aside)
    return records, aside


def write(
    example_name: str, device: str, by_backend: dict[str, list[dict[str, Any]]]
) -> list[Path]:
    """Write each backend's records to `results/<example>/bench/<backend>-<device>.json`.

    Records of other series already in the file are kept, so that benchmarking one
    variant (or one parameter value) does not erase its siblings; the `environment`
    block describes this run, each record carries its `date`. The read-merge-write holds
    a lock (`_atomic.locked`), so concurrent runs keep each other's records. A file that
    cannot be read whole is moved aside (one line on stderr says where), never replaced.
    """
    from ._registry import find_variant

    paths = []
    for backend, records in by_backend.items():
        measured = {_series(r) for r in records}
        path = results_path(example_name, backend, device)
        env = environment(device)
        v = find_variant(example_name, records[0]["variant"])
        env["backend_version"] = v.backend_version() if v is not None else "unknown"
        try:
            with locked(path):
                kept, aside = _kept_records(example_name, path)
                if aside is not None:
                    _say(
                        f"benchmark file {path} could not be read whole; moved it to {aside} "
                        f"and kept its {len(kept)} readable record(s)"
                    )
                kept = [r for r in kept if _series(r) not in measured]
                paths.append(write_results(example_name, backend, device, kept + records, env=env))
        except OSError as e:
            if isinstance(e, WeanjError):
                raise
            raise InputFileError(
                f"cannot update benchmark file {path} ({e.strerror or e})"
            ) from None
    return paths


def _sweep_option(values: list[str] | None, option: str) -> tuple[str, list[int]] | None:
    """`--over T 10 20 40` -> ("T", [10, 20, 40]); an empty list means none."""
    if not values:
        return None
    name, *rest = values
    try:
        numbers = [int(x) for x in rest]
    except ValueError:
        raise InputError(f"{option} takes a parameter name, then integers: got {values}") from None
    if not numbers:
        raise InputError(f"{option} {name} needs at least one value, e.g. {option} {name} 10 100")
    return name, numbers


def command(args: argparse.Namespace) -> int:
    """`weanj bench EXAMPLE [--variants ...] [--sizes ...] [--PARAM V] [--over P V ...]
    [--memory-over P V ...] [--dtype D] [--device D] [--budget-s S] [--samples S]`."""
    from ._cli import param_options

    params = param_options(args, args.example)
    memory_over: Any = _DEFAULT
    if args.memory_Ks is not None:  # the Poisson examples' spelling of --memory-over K ...
        memory_over = ("K", args.memory_Ks) if args.memory_Ks else None
    if args.memory_over is not None:
        memory_over = _sweep_option(args.memory_over, "--memory-over")
    by_backend = bench(
        args.example,
        args.variants,
        sizes=args.sizes,
        params=params,
        dtype=args.dtype,
        device=args.device,
        budget_s=args.budget_s,
        samples=args.samples,
        over=_sweep_option(args.over, "--over"),
        memory_over=memory_over,
        devices=args.devices,
    )
    if not by_backend:
        raise UnavailableError(f"no variant of {args.example} to benchmark on {args.device}")
    paths = write(args.example, args.device, by_backend)
    print(markdown_table(example(args.example), [r for rs in by_backend.values() for r in rs]))
    for path in paths:
        print(f"wrote {path}")
    return 0


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
