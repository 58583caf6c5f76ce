"""Measuring: `time_median` (the seed notebook's timer) and one benchmark point of
`weanj bench`: the inputs at a size (or a dimension), the first call, the median forward
and gradient times, the compiled gradient's scratch memory.

Everything that depends on what runs the variant (waiting for a result, placing the
inputs on a device, scratch memory, a compilation cache, times measured inside a
worker) is asked of the variant's runtime (`_backends._runtime.Runtime`), which the
caller passes in: this module imports no array library's runtime.

What a point's first call returns is held to the variant contract (`_judge._contract`):
a variant at fault is that variant's `error`, in `weanj bench` as everywhere.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..._errors import InputError
from ..._judge._contract import checked_gradients, checked_loss
from ..._model import Example, Inputs, Variant, from_arrays

SEED = 1
# A point whose inputs alone would need more than this share of the machine's memory is
# refused before anything is allocated.
MEMORY_SHARE = 0.5


def default_samples(size: int | None) -> int:
    # The notebook's choice: fewer samples where one call takes long (large n).
    return 3 if size is not None and size >= 512 else 10


def samples_within_budget(
    grad: Callable, args: tuple, size: int | None, budget_s: float, sync: Callable | None = None
) -> int:
    """The default number of samples, fewer where they would take longer than the budget
    (one timed gradient call, compiled already, decides)."""
    sync = sync or _unchanged
    t0 = time.perf_counter()
    sync(grad(*args))
    one_call = time.perf_counter() - t0
    return max(1, min(default_samples(size), int(budget_s / max(one_call, 1e-9))))


def _accepts(fn: Callable, name: str) -> bool:
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(p.kind == p.VAR_KEYWORD for p in parameters.values())


def generator_for(
    ex: Example, dims: Mapping[str, int], shared: Inputs | None = None
) -> Callable[[int | None], Mapping[str, Any]]:
    """`size -> arrays`: the example's inputs at a size and at the given values of its
    symbolic dimensions (a generator taking them as keywords), or an `InputError`
    saying how to make a dimension sweepable."""
    for name in dims:
        if ex.sizes is not None and ex.sizes.name == name:
            continue
        target = ex.sizes.generate if ex.sizes is not None else ex.generate
        if not _accepts(target, name):
            which = "Sizes.generate" if ex.sizes is not None else "generate"
            raise InputError(
                f"{ex.name}: {name} is a dimension of its arrays' shapes, but its {which} takes no "
                f"keyword {name}; give it one (e.g. def "
                f"generate(seed, ..., {name}=...)) to sweep {name}"
            )

    def at(size: int | None) -> Mapping[str, Any]:
        extra = dict(dims)
        if ex.sizes is not None and ex.sizes.name in extra:
            size = extra.pop(ex.sizes.name)
        if size is not None:
            return ex.sizes.generate(SEED, size, **extra)
        if extra:
            return ex.generate(ex.seed, **extra)
        if shared is None:
            raise InputError(f"{ex.name} declares no Sizes and its shared inputs cannot be read")
        return dict(shared.arrays)

    return at


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 16 * 2**30


def check_reachable(
    ex: Example,
    what: str,
    values: list[int],
    at: Callable[[int], Mapping[str, Any]],
    shared: Inputs | None = None,
) -> None:
    """Refuse, before allocating anything, values whose inputs would not fit in memory:
    the inputs' bytes at the smallest value and its double give the growth exponent. The
    example's own default sizes count as values here, so that one huge size alone
    (`--sizes 99999999`) is measured at a small size first, never allocated."""
    given = [v for v in values if v is not None]
    if ex.sizes is not None and what == ex.sizes.name:
        given += list(ex.sizes.values)
    elif what in ex.symbols and shared is not None:  # a dimension: its shared value
        with contextlib.suppress(KeyError):
            given.append(int(shared.dims[what]))
    if not given or max(given) <= 4 * min(given):
        return
    s0 = min(given)
    b0 = sum(np.asarray(a).nbytes for a in at(s0).values())
    b1 = sum(np.asarray(a).nbytes for a in at(2 * s0).values())
    exponent = max(1.0, np.log2(max(b1, 1) / max(b0, 1)))
    limit = MEMORY_SHARE * _total_memory()
    for v in values:
        estimate = b0 * (v / s0) ** exponent
        if estimate > limit:
            raise InputError(
                f"{ex.name}: {what} = {v} would need about "
                f"{estimate / 2**30:.3g} GiB for its inputs "
                f"alone (this machine has {_total_memory() / 2**30:.0f} "
                f"GiB); choose a smaller {what}"
            )


def call_args(
    ex: Example,
    arrays: Mapping[str, Any],
    params: dict,
    dtype: str,
    where,
    runtime,
    x64: bool = True,
) -> tuple[tuple, int]:
    """The call arguments placed at `where` by the variant's `runtime` (a device or a
    placement; None leaves the arrays as they are), and N, the number of gradient
    entries."""
    inputs = from_arrays(ex, arrays, params, what=f"{ex.name}'s benchmark inputs")
    run = inputs.run_arrays(dtype)
    n_entries = int(sum(np.size(run[name]) for name in ex.wrt_names))
    # Placed once, before timing, so the clock sees no host-to-device copies; in the
    # variant's x64 configuration (`x64`), as its calls run (`_x64`).
    run = runtime.to_device(run, where, x64=x64)
    return ex.args(run, inputs.params), n_entries


def _unchanged(result: Any) -> Any:
    return result


def measure(
    v: Variant,
    args: tuple,
    n_entries: int,
    size: int | None,
    *,
    runtime,
    budget_s: float,
    samples: int | None,
) -> dict[str, Any]:
    """Time one point through the variant's `runtime`: first call (compilation plus one
    evaluation), median forward and gradient, scratch memory. What the first calls return
    is held to the variant contract (a `Breach` is that variant's error).

    Each result is waited for by the runtime (`Runtime.block`: JAX's
    `block_until_ready`; nothing for functions that return computed numpy arrays, a
    Julia variant's, whose times are round trips: the request, the copies, the
    computation). Where the runtime measures times itself (`Runtime.inside`: a Julia
    variant's worker, `time_ns` after a warm-up call), those are recorded beside them as
    `timed_inside` (`_timed_inside`)."""
    loss, grad = v.built.loss, v.built.grad
    sync = runtime.block
    hits = runtime.compile_hits()
    t0 = time.perf_counter()
    first = sync(grad(*args))
    compile_s = time.perf_counter() - t0
    # Honest compile times: a first call served by the persistent cache says so.
    cached = runtime.compile_hits() > hits
    _hold_to_contract(v, args, first, loss(*args))
    count = samples or samples_within_budget(grad, args, size, budget_s, sync)
    forward, gradient = runtime.interleaved(
        functools.partial(loss, *args), functools.partial(grad, *args), count
    )
    forward_s, grad_s = statistics.median(forward), statistics.median(gradient)
    inside = runtime.inside(grad, args, count)
    extra = {} if inside is None else {"timed_inside": _timed_inside(inside)}
    return {
        "N": n_entries,
        "forward_s": forward_s,
        "grad_s": grad_s,
        "compile_s": compile_s,
        "peak_mem_bytes": runtime.scratch_bytes(grad, args),
        "samples": count,
        # fastest and slowest sample: the spread the plots show (a noisy machine's medians
        # alone look as certain as a quiet one's)
        "spread": {
            "forward_s": [min(forward), max(forward)],
            "grad_s": [min(gradient), max(gradient)],
        },
        "timed": True,
        "compile_cached": cached,
        **extra,
    }


def _timed_inside(measured: dict) -> dict[str, Any]:
    """A point's times measured inside the worker, summarised: median and fastest of the
    forward and gradient samples, and `clock`, what measured them (Julia's `time_ns`, or
    a stand-in's own clock, as the worker said)."""
    out: dict[str, Any] = {"clock": measured["clock"], "samples": len(measured["grad_s"])}
    for key in ("forward_s", "grad_s"):
        out[key] = statistics.median(measured[key])
        out[key.replace("_s", "_min_s")] = min(measured[key])
    return out


def _hold_to_contract(v: Variant, args: tuple, gradient: Any, loss: Any) -> None:
    """The variant contract on a point's first results (a `Breach` when broken)."""
    ex = v.example
    dtype = _dtype_of(ex, args)
    checked_loss(loss, dtype)
    shapes = {name: tuple(np.shape(args[ex.arrays.index(name)])) for name in ex.wrt_names}
    checked_gradients(ex, gradient, dtype, shapes)


def _dtype_of(ex: Example, args: tuple) -> str:
    for spec, a in zip(ex.specs, args, strict=False):
        if spec.kind == "float":
            return np.dtype(a.dtype).name
        if spec.kind == "complex":
            return "float64" if np.dtype(a.dtype).name == "complex128" else "float32"
    return "float64"


def memory_only(v: Variant, args: tuple, n_entries: int, *, runtime) -> dict[str, Any]:
    """A compiled-only point: scratch memory (the variant's `runtime`'s), no times."""
    return {
        "N": n_entries,
        "forward_s": None,
        "grad_s": None,
        "compile_s": None,
        "peak_mem_bytes": runtime.scratch_bytes(v.built.grad, args),
        "samples": None,
        "timed": False,
    }


# --- the seed notebook's timer -----------------------------------------------------------


def time_median(
    fn: Callable[[], Any],
    sync: Callable[[Any], Any] | None = None,
    samples: int = 10,
    warmup: int = 1,
) -> float:
    """Median wall time of `fn()` in seconds over `samples` calls after `warmup` calls.

    `sync` is applied to each result before the clock stops (e.g. `jax.block_until_ready`),
    since JAX dispatches asynchronously. Medians, because shared machines are noisy.
    """
    from ... import _arguments as arg

    fn = arg.a_function(fn, "fn", "time_median", "a function of no argument")
    sync = arg.function_or_none(sync, "sync", "time_median", "a function of fn's result")
    samples = arg.count(samples, "samples", "time_median", minimum=1)
    warmup = arg.count(warmup, "warmup", "time_median", minimum=0)
    return statistics.median(time_samples(fn, sync, samples, warmup))


def time_samples(
    fn: Callable[[], Any],
    sync: Callable[[Any], Any] | None = None,
    samples: int = 10,
    warmup: int = 1,
) -> list[float]:
    """The wall times of `samples` calls of `fn()` after `warmup` calls (`time_median`'s
    samples, kept so that benchmark records can show their spread)."""
    if samples < 1 or warmup < 0:
        raise InputError(
            f"time_samples needs samples >= 1 and warmup >= 0, got {samples} and {warmup}"
        )
    sync = sync or (lambda r: r)
    for _ in range(warmup):
        sync(fn())
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        sync(fn())
        times.append(time.perf_counter() - t0)
    return times
