"""Timing and benchmark records: `time_median` and `write_results`."""

from __future__ import annotations

import datetime as _dt
import json
import math
import numbers
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._errors import InputError, InputFileError
from ._io._atomic import atomic_path
from ._project import results_dir
from ._registry import example

# The seed notebook's record fields (docs/DESIGN.md makes them the benchmark file contract),
# less its `n` and `K`: every example's records carry its own size and parameters instead
# (`record_fields`), which for the Poisson examples are exactly `n` and `K`.
RECORD_FIELDS = (
    "dtype",
    "variant",
    "N",
    "forward_s",
    "grad_s",
    "compile_s",
    "peak_mem_bytes",
)


def record_fields(example_name: str) -> tuple[str, ...]:
    """The fields every benchmark record of an example has: `RECORD_FIELDS`, the size's
    name (e.g. `n`) and the parameters (e.g. `K`)."""
    ex = example(example_name)
    size = (ex.sizes.name,) if ex.sizes is not None else ()
    return RECORD_FIELDS + size + ex.param_names


# The type of each field of the contract: text, a count, or a measurement (None where
# not measured). Sizes and parameters (`record_fields` beyond these) are counts.
_TEXT_FIELDS = ("dtype", "variant")
_SECONDS_FIELDS = ("forward_s", "grad_s", "compile_s")
_OPTIONAL_COUNT_FIELDS = ("peak_mem_bytes",)


def _is_count(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _is_spread(value: Any) -> bool:
    """`{"forward_s": [fastest, slowest], ...}`, as `_bench_measure.measure` writes it."""
    return isinstance(value, dict) and all(
        isinstance(k, str)
        and isinstance(v, list)
        and len(v) == 2
        and all(_is_number(x) and x >= 0 for x in v)
        for k, v in value.items()
    )


# What each kind of field holds, and how a message names it.
_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    # one line of at most 200 characters: a name, a date (a megabyte of "variant" would
    # make the plots' legends take minutes, a newline would inject lines into reports)
    "text": (lambda v: isinstance(v, str) and 0 < len(v) <= 200 and "\n" not in v, "text"),
    "seconds": (
        lambda v: v is None or (_is_number(v) and v >= 0),
        "a finite number of seconds >= 0 or null",
    ),
    "count?": (lambda v: v is None or _is_count(v), "an integer >= 0 or null"),
    "count": (_is_count, "an integer >= 0"),
    "int": (lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool), "an integer"),
    "float": (_is_number, "a finite number"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "spread": (_is_spread, "an object of [fastest, slowest] seconds"),
}
# Fields weanj writes beyond the contract: checked when present, so that a reader can use them.
_EXTRA_FIELDS = {
    "sweep": "text",
    "size_name": "text",
    "family": "text",
    "backend": "text",
    "device": "text",
    "example": "text",
    "date": "text",
    "size": "count?",
    "samples": "count?",
    "devices": "count",
    "timed": "bool",
    "compile_cached": "bool",
    "spread": "spread",
}


def param_kinds(example_name: str) -> dict[str, str]:
    """The kind of each parameter's field in a record: int (a count where it cannot be
    negative), float or bool."""
    return {
        p.name: ("count" if p.kind == "int" and p.minimum >= 0 else p.kind)
        for p in example(example_name).params
    }


def check_record(
    record: Any, required: Sequence[str], label: str, kinds: dict[str, str] | None = None
) -> None:
    """An `InputError` (one line, starting with `label`) unless `record` is a dict with
    every field of `required`, each of its type: `dtype`, `variant` text; times finite
    non-negative numbers or None; `peak_mem_bytes` a count or None; `N` and the size
    counts; the parameters of their `kinds` (`param_kinds`; default: counts); and the
    other fields weanj writes (`sweep`, `spread`, ...) of theirs where present."""
    if not isinstance(record, dict):
        raise InputError(f"{label} is not a JSON object but {type(record).__name__}")
    missing = [k for k in required if k not in record]
    if missing:
        raise InputError(f"{label} lacks field(s) {', '.join(missing)}")
    fields = {key: (kinds or {}).get(key, "count") for key in required}
    fields.update({k: "text" for k in _TEXT_FIELDS})
    fields.update({k: "seconds" for k in _SECONDS_FIELDS})
    fields.update({k: "count?" for k in _OPTIONAL_COUNT_FIELDS})
    fields.update({k: v for k, v in _EXTRA_FIELDS.items() if k in record and k not in required})
    for key, kind_name in fields.items():
        if key not in record:
            continue
        value = record[key]
        ok, kind = _KINDS[kind_name]
        if not ok(value):
            shown = " ".join(repr(value).split())[:40]
            raise InputError(f"{label}: field {key} must be {kind}, got {shown}")


# A benchmark file holds a few hundred bytes per record: one far larger is not one.
MAX_RESULTS_BYTES = 64 * 2**20


def read_records(path: Path) -> list:
    """The `records` list of a benchmark file, or an `InputFileError` saying why not: not
    a regular file (a pipe or a device is never opened for a blocking read), larger than
    `MAX_RESULTS_BYTES`, not JSON (nested too deeply included), or no record list."""
    from ._io._safeh5 import read_bytes

    data = read_bytes(Path(path), "benchmark file", limit=MAX_RESULTS_BYTES)
    try:
        records = json.loads(data)["records"]
    except RecursionError:
        raise InputFileError(f"benchmark file {path} is nested too deeply to be records") from None
    except (ValueError, KeyError, TypeError) as e:  # UnicodeDecodeError is a ValueError
        first = (str(e).splitlines() or [type(e).__name__])[0][:60]
        raise InputFileError(f"benchmark file {path} is not weanj's JSON ({first})") from None
    if not isinstance(records, list):
        raise InputFileError(f"benchmark file {path}: records is not a list")
    return records


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
    if samples < 1 or warmup < 0:
        raise InputError(
            f"time_median needs samples >= 1 and warmup >= 0, got {samples} and {warmup}"
        )
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


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_revision() -> str:
    try:
        out = subprocess.run(
            # The revision of the code measured (this package's checkout), not of the
            # project root, which may be any folder; "-dirty" marks uncommitted changes.
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment(device: str | None = None) -> dict[str, Any]:
    """Facts that make a benchmark reproducible: versions, device, CPU, cores, date, revision."""
    import jax
    import jaxlib

    env: dict[str, Any] = {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_revision": _git_revision(),
    }
    if device is not None:
        try:
            devs = jax.devices(device)
            env["device"] = device
            env["device_kind"] = devs[0].device_kind
            env["device_count"] = len(devs)
        except RuntimeError:
            env["device"] = device
    return env


def results_path(example_name: str, backend: str, device: str) -> Path:
    """`results/<example>/bench/<backend>-<device>.json`."""
    return results_dir(example(example_name).name) / "bench" / f"{backend}-{device}.json"


def write_results(
    example_name: str,
    backend: str,
    device: str,
    records: Sequence[dict[str, Any]],
    *,
    env: dict[str, Any] | None = None,
) -> Path:
    """Write benchmark records to `results/<example>/bench/<backend>-<device>.json`.

    **Arguments:**

    - `records`: dicts with at least the fields `record_fields(example)` (for the Poisson
      examples the seed notebook's `dtype, variant, N, n, K, forward_s, grad_s, compile_s,
      peak_mem_bytes`; None where not measured, e.g. times in a memory-versus-K record);
      extra fields are kept.
    - `env`: the environment block (default: `environment(device)`).

    **Returns:** the path written (atomically; the previous file is replaced).
    """
    required, kinds = record_fields(example_name), param_kinds(example_name)
    for i, r in enumerate(records):
        check_record(r, required, f"benchmark record {i}", kinds)
    path = results_path(example_name, backend, device)
    payload = {
        "environment": env if env is not None else environment(device),
        "records": [dict(r) for r in records],
    }
    try:
        text = json.dumps(payload, indent=2, default=_json_scalar, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InputError(f"benchmark records cannot be written as JSON ({e})") from None
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(text + "\n")
    except OSError as e:
        raise InputFileError(f"cannot write benchmark file {path} ({e.strerror or e})") from None
    return path


def _json_scalar(value: Any) -> Any:
    """numpy/JAX scalars as the Python int or float they hold (so `N` stays an integer);
    anything else is not JSON (TypeError)."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")
