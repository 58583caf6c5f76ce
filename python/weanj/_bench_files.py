"""Benchmark files: how `weanj bench` merges its records into
`results/<example>/bench/<backend>-<device>.json`.

A rerun keeps the earlier records and replaces only the points it measured again (a
point: a variant's series, at one dtype with everything else fixed, and the value it
varies); `--replace` replaces every earlier record of a series it measured. The
read-merge-write holds a lock, and a file that cannot be read whole goes aside.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._errors import InputError, InputFileError, WeanjError, say, wrapped
from ._io._atomic import aside_path, locked
from ._timing import (
    check_record,
    environment,
    param_kinds,
    read_records,
    record_fields,
    results_path,
    write_results,
)


def _say(message: str) -> None:
    """`weanj bench`'s notes: `say`, wrapped as an error's first line is."""
    say(wrapped(message))


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


def _kept_records(example_name: str, path: Path) -> tuple[list[dict[str, Any]], Path | None]:
    """The records already in `path`, and where the file was moved when it could not be
    read whole (not JSON, no record list, or records of the wrong form): then the
    well-formed records are kept and the file itself goes aside, so nothing is lost."""
    if not path.is_file():
        return [], None
    required, kinds = record_fields(example_name), param_kinds(example_name)
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


def write(
    example_name: str,
    device: str,
    by_backend: dict[str, list[dict[str, Any]]],
    *,
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
    from ._registry import find_variant

    paths = []
    for backend, records in by_backend.items():
        if not records:  # every point of its variants timed out: nothing to add or replace
            continue
        measured = {_series(r) for r in records}
        points = {_point_key(r) for r in records}
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
                if replace:
                    kept = [r for r in kept if _series(r) not in measured]
                else:
                    kept = [r for r in kept if _point_key(r) not in points]
                paths.append(write_results(example_name, backend, device, kept + records, env=env))
        except OSError as e:
            if isinstance(e, WeanjError):
                raise
            raise InputFileError(
                f"cannot update benchmark file {path} ({e.strerror or e})"
            ) from None
    return paths
