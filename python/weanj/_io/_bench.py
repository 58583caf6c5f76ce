"""Benchmark files, `results/<example>/bench/<backend>-<device>.json`: their records'
contract, reading them without trusting them, and merging a run's records into them.

Each record has the seed notebook's fields (`dtype, variant, N, forward_s, grad_s,
compile_s, peak_mem_bytes`), the example's size (e.g. `n`) and its parameters (e.g. `K`),
each of its type (`check_record`). A rerun keeps the earlier records and replaces only the
points it measured again (a point: a variant's series, at one dtype with everything else
fixed, and the value it varies); `replace=True` replaces every earlier record of a series
it measured. The read-merge-write holds a lock, and a file that cannot be read whole goes
aside. Reading is bounded (`MAX_RESULTS_BYTES`, `MAX_RECORDS`): a file too large to be
weanj's is refused in one line, never read for minutes.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._errors import InputError, InputFileError, WeanjError, say, wrapped
from .._model import DTYPES, Example
from .._places import Places
from ._atomic import aside_path, atomic_path, locked, not_written
from ._file_bytes import read_bytes

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


def record_fields(ex: Example) -> tuple[str, ...]:
    """The fields every benchmark record of an example has: `RECORD_FIELDS`, the size's
    name (e.g. `n`) and the parameters (e.g. `K`)."""
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
    # the dtype under test: it names figures and series, so nothing else (a path, markup);
    # Julia's spelling too (the seed notebook's records say "Float64")
    "dtype": (lambda v: isinstance(v, str) and v.lower() in DTYPES, "float64 or float32"),
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


def param_kinds(ex: Example) -> dict[str, str]:
    """The kind of each parameter's field in a record: int (a count where it cannot be
    negative), float or bool."""
    return {p.name: ("count" if p.kind == "int" and p.minimum >= 0 else p.kind) for p in ex.params}


def check_record(
    record: Any, required: Sequence[str], label: str, kinds: dict[str, str] | None = None
) -> None:
    """An `InputError` (one line, starting with `label`) unless `record` is a dict with
    every field of `required`, each of its type: `dtype` float64 or float32 (it names
    figures), `variant` text; times finite non-negative numbers or None; `peak_mem_bytes`
    a count or None; `N` and the size counts; the parameters of their `kinds`
    (`param_kinds`; default: counts); and the other fields weanj writes (`sweep`,
    `spread`, ...) of theirs where present."""
    if not isinstance(record, dict):
        raise InputError(f"{label} is not a JSON object but {type(record).__name__}")
    missing = [k for k in required if k not in record]
    if missing:
        raise InputError(f"{label} lacks field(s) {', '.join(missing)}")
    fields = {key: (kinds or {}).get(key, "count") for key in required}
    fields.update({k: "text" for k in _TEXT_FIELDS})
    fields["dtype"] = "dtype"
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
# More records than any sweep writes: a file holding more is refused, never drawn for minutes.
MAX_RECORDS = 20_000


def read_records(path: Path) -> list:
    """The `records` list of a benchmark file, or an `InputFileError` saying why not: not
    a regular file (a pipe or a device is never opened for a blocking read), larger than
    `MAX_RESULTS_BYTES`, not JSON (nested too deeply included), or no record list."""
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
    if len(records) > MAX_RECORDS:
        raise InputFileError(
            f"benchmark file {path} holds {len(records)} records, more than the {MAX_RECORDS} "
            "any sweep writes; not read (move it aside, or rerun weanj bench --replace)"
        )
    return records


def write_results(
    ex: Example,
    backend: str,
    device: str,
    records: Sequence[dict[str, Any]],
    places: Places,
    *,
    env: dict[str, Any] | None = None,
) -> Path:
    """Write benchmark records to `results/<example>/bench/<backend>-<device>.json`.

    **Arguments:**

    - `records`: dicts with at least the fields `record_fields(example)` (for the Poisson
      examples the seed notebook's `dtype, variant, N, n, K, forward_s, grad_s, compile_s,
      peak_mem_bytes`; None where not measured, e.g. times in a memory-versus-K record);
      extra fields are kept.
    - `env`: the environment block (default: `_environment.environment(device)`).

    **Returns:** the path written (atomically; the previous file is replaced).
    """
    from .._environment import environment

    required, kinds = record_fields(ex), param_kinds(ex)
    for i, r in enumerate(records):
        check_record(r, required, f"benchmark record {i}", kinds)
    path = places.bench_file(ex.name, backend, device)
    payload = {
        "environment": env if env is not None else environment(device),
        "records": [dict(r) for r in records],
    }
    try:
        text = json.dumps(payload, indent=2, default=_json_scalar, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InputError(f"benchmark records cannot be written as JSON ({e})") from None
    try:
        # weanj's own place: a file there it cannot tell for its own is kept aside, not lost
        with atomic_path(path, foreign="aside") as tmp:
            tmp.write_text(text + "\n")
    except OSError as e:
        raise not_written("benchmark file ", path, e) from None
    return path


def _json_scalar(value: Any) -> Any:
    """numpy/JAX scalars as the Python int or float they hold (so `N` stays an integer);
    anything else is not JSON (TypeError)."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _series(record: dict[str, Any]) -> tuple:
    """What a rerun replaces: a variant's sweep (over the size, or over one parameter,
    timed or compiled only) at one dtype with everything else fixed."""
    fixed = tuple(
        sorted(
            (k, v)
            for k, v in record.items()
            if k not in _VARYING and k != record.get("sweep") and isinstance(v, (int, float, str))
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
    "compile_cached",
    "date",
    "size",
    "example",
    "family",
    "backend",
    "device",
}


def _kept_records(ex: Example, path: Path) -> tuple[list[dict[str, Any]], Path | None]:
    """The records already in `path`, and where the file was moved when it could not be
    read whole (not JSON, no record list, or records of the wrong form): then the
    well-formed records are kept and the file itself goes aside, so nothing is lost."""
    if not path.is_file():
        return [], None
    required, kinds = record_fields(ex), param_kinds(ex)
    try:
        records = read_records(path)
    except InputFileError:
        records, whole = [], False
    else:
        good = []
        for i, r in enumerate(records):
            try:
                check_record(r, required, f"record {i}", kinds)
                good.append(r)
            except InputError:
                pass
        whole = len(good) == len(records)
        records = good
    if whole:
        return records, None
    aside = aside_path(path, "unreadable")
    os.replace(path, aside)
    return records, aside


def _point_key(record: dict[str, Any]) -> tuple:
    """A record's point: its series and the value it varies (the size or the parameter)."""
    sweep = record.get("sweep")
    value = record.get(sweep) if sweep in record else record.get("size")
    return (*_series(record), repr(value))


def merge(
    ex: Example,
    device: str,
    by_backend: dict[str, list[dict[str, Any]]],
    places: Places,
    *,
    env: dict[str, Any],
    backend_versions: dict[str, str],
    replace: bool = False,
) -> list[Path]:
    """Write each backend's records to `results/<example>/bench/<backend>-<device>.json`.

    Earlier records are kept, so that benchmarking one variant, one size or one
    parameter value erases nothing else: a new record replaces only an earlier one of
    the very same point (`replace=True`: every earlier record of a series it measured,
    as `weanj bench --replace` asks). The `environment`
    block describes this run, each record carries its `date`. The read-merge-write holds
    a lock (`_atomic.locked`), so concurrent runs keep each other's records. A file that
    cannot be read whole is moved aside (one line on stderr says where), never replaced.
    """
    paths = []
    for backend, records in by_backend.items():
        if not records:  # every point of its variants timed out: nothing to add or replace
            continue
        measured = {_series(r) for r in records}
        points = {_point_key(r) for r in records}
        path = places.bench_file(ex.name, backend, device)
        env = {**env, "backend_version": backend_versions.get(backend, "unknown")}
        try:
            with locked(path):
                kept, aside = _kept_records(ex, path)
                if aside is not None:
                    say(
                        wrapped(
                            f"benchmark file {path} could not be read whole; moved it to {aside} "
                            f"and kept its {len(kept)} readable record(s)"
                        )
                    )
                if replace:
                    kept = [r for r in kept if _series(r) not in measured]
                else:
                    kept = [r for r in kept if _point_key(r) not in points]
                paths.append(write_results(ex, backend, device, kept + records, places, env=env))
        except OSError as e:
            if isinstance(e, WeanjError):
                raise
            raise not_written("the updated benchmark file ", path, e) from None
    return paths


def _bad_field(r: Any, required: tuple[str, ...], kinds: dict[str, str]) -> str | None:
    """Why a record cannot be drawn, or None: the writer's own check (`check_record`)."""
    try:
        check_record(r, required, "a record", kinds)
    except InputError as e:
        return str(e)
    return None


def load_results(ex: Example, places: Places) -> tuple[list[dict[str, Any]], list[str]]:
    """All benchmark records of an example, from every backend's and device's file.

    Records lacking `device` or `backend` take them from their file's name. A record that
    lacks a field or has one of the wrong type, and a file that is no records file (not
    JSON, nested too deeply, too large, a pipe or a device), are skipped with a warning on
    stderr; none usable is one error line. **Returns** the records and the problems.
    """
    folder = places.bench(ex.name)
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InputFileError(f"no benchmark results under {folder}; run: weanj bench {ex.name}")
    required, kinds = record_fields(ex), param_kinds(ex)
    records, problems = [], []
    for path in files:
        backend, _, device = path.stem.rpartition("-")
        if path.is_symlink() or not path.is_file():
            problems.append(f"benchmark file {path} is not a regular file (skipped)")
            continue
        try:  # only regular files, of a bounded size, of bounded nesting
            stored = read_records(path)
        except InputFileError as e:  # skipped with a warning: the other files still plot
            problems.append(f"{e} (skipped)")
            continue
        skipped, why = 0, None
        for r in stored:
            reason = _bad_field(r, required, kinds)
            if reason is not None:
                skipped, why = skipped + 1, why or reason
                continue
            records.append({"backend": backend, "device": device, **r})
        if skipped:
            problems.append(f"{path}: skipped {skipped} record(s) ({why})")
    if not records:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        first = problems[0].removesuffix(" (skipped)") if problems else "none"
        raise InputFileError(
            f"no usable benchmark records of {ex.name}: {first}{more}; rerun: weanj bench {ex.name}"
        )
    return records, problems
