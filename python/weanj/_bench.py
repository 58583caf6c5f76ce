"""Benchmark sweeps: time, compile time and memory of each variant against n and K.

The seed notebook's sweep, for any example and variant of the registry. For each
variant and grid size n (inputs from the example's seeded `sized` generator), it
records the wall time of the first gradient call (compilation plus one evaluation),
the median forward (loss) and gradient times, and XLA's scratch memory of the compiled
gradient; a variant's sweep stops once its gradient takes longer than the budget. Then
the gradient's scratch memory against K at one n (compiled only, never run).

Records go to `results/<example>/bench/<backend>-<device>.json`, one file per backend;
a rerun replaces the records of the variants (and dtype) it measured and keeps the rest.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import InputError, UnavailableError
from ._inputs import check_params
from ._registry import Example, Variant, example, variant, variants
from ._timing import environment, results_path, time_median, write_results

# The seed notebook's sweep: grid sizes, sweeps, budget per gradient call, input seed.
DEFAULT_NS = (32, 64, 128, 256, 512, 1024)
DEFAULT_K = 100
DEFAULT_BUDGET_S = 5.0
MEMORY_KS = (10, 100, 1000)
SEED = 1
GPU_HINT = "on a machine with an NVIDIA GPU: pip install -U 'jax[cuda12]'"


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


def _default_samples(n: int) -> int:
    # The notebook's choice: fewer samples where one call takes long.
    return 3 if n >= 512 else 10


def _samples_within_budget(grad: Callable, args: tuple, n: int, budget_s: float) -> int:
    """The default number of samples, fewer where they would take longer than the budget.

    One timed gradient call (compiled already) decides: a point costs at most about the
    budget per function, and a gradient slower than the budget, which ends the sweep
    anyway, is timed once rather than ten times.
    """
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(grad(*args))
    one_call = time.perf_counter() - t0
    return max(1, min(_default_samples(n), int(budget_s / max(one_call, 1e-9))))


def _args(ex: Example, n: int, params: dict[str, int], dtype: str, device) -> tuple:
    """The call arguments at size n; on `device` for JAX functions, numpy arrays otherwise."""
    import jax

    arrays = {k: np.asarray(a, dtype=dtype) for k, a in ex.sized(SEED, n).items()}
    if device is not None:
        # Placed once, before timing, so the clock sees no host-to-device copies; with
        # 64-bit types on, so float64 stays float64 (variants run that way too).
        with jax.enable_x64(True):
            arrays = {k: jax.device_put(a, device) for k, a in arrays.items()}
    return ex.args(arrays, params), int(np.size(arrays[ex.wrt]))


def temp_bytes(grad: Callable, args: tuple) -> int | None:
    """XLA's scratch memory of the compiled gradient (inputs and outputs excluded), in bytes;
    None for functions that are not JAX-compiled (e.g. Julia through juliacall)."""
    if not hasattr(grad, "lower"):
        return None
    analysis = grad.lower(*args).compile().memory_analysis()
    return None if analysis is None else int(analysis.temp_size_in_bytes)


def _mib(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else f"{nbytes / 2**20:.2f} MiB"


def sweep_variant(
    ex: Example,
    v: Variant,
    *,
    ns: Sequence[int],
    K: int,
    dtype: str,
    device: str,
    budget_s: float,
    samples: int | None,
    memory_n: int | None,
    memory_Ks: Sequence[int],
    say: Callable[[str], None] = _say,
) -> list[dict[str, Any]]:
    """The records of one variant: the sweep over `ns`, then memory against `memory_Ks`."""
    import jax

    loss, grad = v.loss, v.grad
    on_jax = hasattr(grad, "lower")
    where = jax_device(device) if on_jax else None
    base = {
        "example": ex.name,
        "variant": v.name,
        "family": v.family,
        "backend": v.backend,
        "device": device,
        "dtype": dtype,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    records = []
    for n in ns:
        params = check_params(ex, {**ex.default_params, "K": K})
        args, N = _args(ex, n, params, dtype, where)
        t0 = time.perf_counter()
        jax.block_until_ready(grad(*args))
        compile_s = time.perf_counter() - t0
        count = samples or _samples_within_budget(grad, args, n, budget_s)
        forward_s = time_median(
            functools.partial(loss, *args), sync=jax.block_until_ready, samples=count
        )
        grad_s = time_median(
            functools.partial(grad, *args), sync=jax.block_until_ready, samples=count, warmup=0
        )  # the first call above was the warm-up
        mem = temp_bytes(grad, args)
        records.append(
            {
                **base,
                "sweep": "n",
                "N": N,
                "n": n,
                "K": K,
                "forward_s": forward_s,
                "grad_s": grad_s,
                "compile_s": compile_s,
                "peak_mem_bytes": mem,
                "samples": count,
            }
        )
        say(
            f"  {v.name:<20} n={n:<5d} first call {compile_s:8.3f} s  forward "
            f"{1e3 * forward_s:10.3f} ms  gradient {1e3 * grad_s:10.3f} ms  temp {_mib(mem)}"
        )
        if grad_s > budget_s:
            rest = [m for m in ns if m > n]
            if rest:
                say(
                    f"  {v.name}: gradient took {grad_s:.2f} s > budget {budget_s:g} s; "
                    f"skipping n = {', '.join(map(str, rest))}"
                )
            break
    if on_jax and memory_n is not None:
        for Km in memory_Ks:
            params = check_params(ex, {**ex.default_params, "K": Km})
            args, N = _args(ex, memory_n, params, dtype, where)
            mem = temp_bytes(grad, args)
            records.append(
                {
                    **base,
                    "sweep": "K",
                    "N": N,
                    "n": memory_n,
                    "K": Km,
                    "forward_s": None,
                    "grad_s": None,
                    "compile_s": None,
                    "peak_mem_bytes": mem,
                    "samples": None,
                }
            )
            say(f"  {v.name:<20} n={memory_n:<5d} K={Km:<6d} temp {_mib(mem)}")
    return records


def bench(
    example_name: str,
    variant_names: Sequence[str] | None = None,
    *,
    ns: Sequence[int] = DEFAULT_NS,
    K: int = DEFAULT_K,
    dtype: str = "float64",
    device: str = "cpu",
    budget_s: float = DEFAULT_BUDGET_S,
    samples: int | None = None,
    memory_Ks: Sequence[int] = MEMORY_KS,
    say: Callable[[str], None] = _say,
) -> dict[str, list[dict[str, Any]]]:
    """Benchmark the variants of an example; nothing is written (see `write`).

    **Arguments:**

    - `variant_names`: default all variants available here.
    - `ns`: grid sizes, swept in increasing order until the gradient exceeds `budget_s`.
    - `K`: iterations for the sweep over n; `memory_Ks`: the Ks of the memory-against-K
      records, taken at the middle of `ns` (empty: none).
    - `device`: `"cpu"` or `"gpu"` (no GPU raises `UnavailableError`).
    - `samples`: timing samples per point (default 10, 3 from n = 512, fewer where they
      would take longer than `budget_s`).
    - `say`: receives one progress line per measured point.

    **Returns:** `{backend: [records]}`, each record with the fields of DESIGN.md (`dtype,
    variant, N, n, K, forward_s, grad_s, compile_s, peak_mem_bytes`) and `example, family,
    backend, device, sweep ("n" or "K"), samples, date`. `compile_s` is the wall time of the
    first gradient call (compilation plus one evaluation); `peak_mem_bytes` is XLA's
    scratch memory of the compiled gradient (None where not JAX).
    """
    import jax

    ex = example(example_name)
    if ex.sized is None:
        raise InputError(f"example {ex.name} has no sized input generator to sweep over n")
    if "K" not in ex.param_names:
        raise InputError(f"example {ex.name} has no parameter K to sweep over")
    if dtype not in ("float64", "float32"):
        raise InputError(f"dtype must be float64 or float32, got {dtype!r}")
    if device not in ("cpu", "gpu"):
        raise InputError(f"device must be cpu or gpu, got {device!r}")
    ns = sorted(set(int(n) for n in ns))
    if not ns or ns[0] < 1:
        raise InputError(f"grid sizes must be at least 1, got {ns}")
    if samples is not None and samples < 1:
        raise InputError(f"samples must be at least 1, got {samples}")
    if not budget_s > 0:
        raise InputError(f"the budget must be positive, got {budget_s}")
    check_params(ex, {"K": K})
    for Km in memory_Ks:
        check_params(ex, {"K": Km})
    where = jax_device(device)  # fails before any work when the GPU is missing
    names = list(variant_names) if variant_names else variants(ex.name)
    chosen = [variant(ex.name, name) for name in names]
    memory_n = ns[len(ns) // 2] if memory_Ks else None

    by_backend: dict[str, list[dict[str, Any]]] = {}
    for v in chosen:
        if device != "cpu" and not hasattr(v.grad, "lower"):
            say(f"{v.name}: skipped on {device} (not a JAX function; it runs on the CPU)")
            continue
        say(f"{ex.name} {v.name} on {device} ({dtype}, K={K}):")
        # Inputs are placed on `where` too; this also puts any computation that has no
        # array input of its own there.
        with jax.default_device(where):
            records = sweep_variant(
                ex,
                v,
                ns=ns,
                K=K,
                dtype=dtype,
                device=device,
                budget_s=budget_s,
                samples=samples,
                memory_n=memory_n,
                memory_Ks=memory_Ks,
                say=say,
            )
        by_backend.setdefault(v.backend, []).extend(records)
    return by_backend


def _series(record: dict[str, Any]) -> tuple:
    """What a rerun replaces: a variant's sweep over n at one K and dtype, or its
    memory-against-K records at one dtype."""
    sweep = record.get("sweep", "n")
    K = record.get("K") if sweep == "n" else None
    return record.get("variant"), record.get("dtype"), sweep, K


def write(
    example_name: str, device: str, by_backend: dict[str, list[dict[str, Any]]]
) -> list[Path]:
    """Write each backend's records to `results/<example>/bench/<backend>-<device>.json`.

    Records of other variants, dtypes or K already in the file are kept, so that
    benchmarking one variant (or one K) does not erase its siblings; the `environment`
    block describes this run, each record carries its `date`.
    """
    from ._registry import find_variant

    paths = []
    for backend, records in by_backend.items():
        measured = {_series(r) for r in records}
        path = results_path(example_name, backend, device)
        kept = []
        if path.is_file():
            try:
                kept = json.loads(path.read_text())["records"]
            except (OSError, ValueError, KeyError, TypeError):
                _say(f"replacing unreadable benchmark file {path}")
            kept = [r for r in kept if _series(r) not in measured]
        env = environment(device)
        v = find_variant(example_name, records[0]["variant"])
        env["backend_version"] = v.backend_version() if v is not None else "unknown"
        paths.append(write_results(example_name, backend, device, kept + records, env=env))
    return paths


def command(args: argparse.Namespace) -> int:
    """`weanj bench EXAMPLE [--variants ...] [--ns ...] [--K K] [--dtype D] [--device D]
    [--budget-s S] [--samples S] [--memory-Ks K ...]`."""
    memory_Ks = getattr(args, "memory_Ks", None)
    by_backend = bench(
        args.example,
        args.variants,
        ns=args.ns or DEFAULT_NS,
        K=args.K if args.K is not None else DEFAULT_K,
        dtype=args.dtype,
        device=args.device,
        budget_s=args.budget_s,
        samples=args.samples,
        memory_Ks=MEMORY_KS if memory_Ks is None else memory_Ks,
    )
    if not by_backend:
        raise UnavailableError(f"no variant of {args.example} to benchmark on {args.device}")
    paths = write(args.example, args.device, by_backend)
    print(markdown_table([r for records in by_backend.values() for r in records]))
    for path in paths:
        print(f"wrote {path}")
    return 0


def markdown_table(records: Sequence[dict[str, Any]]) -> str:
    """The sweep over n as a Markdown table (times in ms, scratch memory in MiB)."""

    def cell(value, scale, digits):
        return "–" if value is None else f"{value * scale:.{digits}f}"

    lines = [
        "| variant | device | dtype | n | K | forward [ms] | gradient [ms] | "
        "gradient/forward | first call [s] | scratch [MiB] |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in records:
        if r["sweep"] != "n":
            continue
        ratio = r["grad_s"] / r["forward_s"] if r["forward_s"] else None
        lines.append(
            f"| `{r['variant']}` | {r['device']} | {r['dtype']} | {r['n']} | {r['K']} | "
            f"{cell(r['forward_s'], 1e3, 3)} | {cell(r['grad_s'], 1e3, 3)} | "
            f"{cell(ratio, 1, 1)} | {cell(r['compile_s'], 1, 2)} | "
            f"{cell(r['peak_mem_bytes'], 2**-20, 2)} |"
        )
    return "\n".join(lines)
