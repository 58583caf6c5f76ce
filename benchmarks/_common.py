"""What the benchmark scripts share: weanj's one benchmark path
(`weanj._commands.bench.bench`, whose variants the case table chooses), the records picked
by variant, the acceptance lines, and the `--json` / `--save` outputs.

The scripts measure nothing themselves where `bench` can: inputs (the example's seeded
`Sizes.generate`), the first call, the median forward and gradient times and XLA's
scratch memory all come from the same code as `weanj bench`, so the numbers they print
are the numbers `weanj bench` would write.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import weanj
from weanj._commands import bench as _bench
from weanj._io import _bench as _bench_files
from weanj._places import places
from weanj._registry import catalog, find_variant
from weanj._report import _bench_table


def default_device() -> str:
    """JAX's default backend as `bench` names it: "gpu" where JAX runs on a GPU, else "cpu"."""
    import jax

    return "gpu" if jax.default_backend() == "gpu" else "cpu"


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options every script takes: the device, quiet progress, and the outputs."""
    parser.add_argument(
        "--device",
        choices=("cpu", "gpu"),
        default=None,
        help="where to run (default: JAX's default backend)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress lines on stderr (only the results)"
    )
    parser.add_argument(
        "--json", default=None, metavar="FILE", help="also write the records to this file"
    )
    parser.add_argument(
        "--save",
        action="store_true",
        help="also merge the records into results/<example>/bench/, as `weanj bench` does",
    )


class Session:
    """The records of one script run, by example and backend, as `bench` returns them."""

    def __init__(self, args: argparse.Namespace):
        self.device = args.device or default_device()
        self.say = (lambda message: None) if args.quiet else None
        self.by_example: dict[str, dict[str, list[dict[str, Any]]]] = {}

    def bench(self, example: str, variants: Sequence[str], **options) -> list[dict[str, Any]]:
        """`weanj._commands.bench.bench` on this run's device, writing nothing; the records,
        also kept for the outputs. `memory_over` defaults to none (the scripts ask for the
        memory points they print). An unknown or unavailable variant is an error of the
        user's; a variant at fault is a `VariantError` (its line from `bench`)."""
        options.setdefault("memory_over", None)
        if self.say is not None:
            options["say"] = self.say
        chosen = [weanj.variant(example, name) for name in variants]
        got = _bench.bench(catalog(example), chosen, device=self.device, write=False, **options)
        if got.errors:
            raise weanj.VariantError("; ".join(got.errors.values()))
        kept = self.by_example.setdefault(example, {})
        for backend, records in got.by_backend.items():
            kept.setdefault(backend, []).extend(records)
        return got.records

    @property
    def records(self) -> list[dict[str, Any]]:
        return [r for got in self.by_example.values() for rs in got.values() for r in rs]

    def finish(
        self, args: argparse.Namespace, json_records: Sequence[dict[str, Any]] | None = None
    ) -> None:
        """`--json FILE`: the environment and the records (default `bench`'s; a script
        adds what it measured beside `bench` there); `--save`: `bench`'s records merged
        into the store, as `weanj bench` writes them."""
        if args.json:
            payload = {
                "environment": weanj.environment(self.device),
                "records": list(self.records if json_records is None else json_records),
            }
            Path(args.json).write_text(json.dumps(payload, indent=2, default=float) + "\n")
            print(f"wrote {args.json}")
        if args.save:
            for example, by_backend in self.by_example.items():
                for path in _write(example, self.device, by_backend):
                    print(f"wrote {path}")


def _write(example: str, device: str, by_backend: dict[str, list[dict[str, Any]]]) -> list:
    """`by_backend` merged into `results/<example>/bench/`, as `weanj bench` writes it:
    this run's environment, each backend's version from its first record's variant."""
    versions = {}
    for backend, records in by_backend.items():
        v = find_variant(example, records[0]["variant"]) if records else None
        versions[backend] = v.backend_version() if v is not None else "unknown"
    return _bench_files.merge(
        weanj.example(example),
        device,
        by_backend,
        places(),
        env=weanj.environment(device),
        backend_versions=versions,
    )


def timed(records: Sequence[dict[str, Any]], **fields) -> dict[str, dict[str, Any]]:
    """{variant: record} of the timed records whose fields have these values."""
    return {
        r["variant"]: r
        for r in records
        if r.get("timed") and all(r.get(k) == v for k, v in fields.items())
    }


def needed(found: dict[str, Any], names: Sequence[str], what: str) -> dict[str, Any]:
    """`found` ({variant: ...}), or one line (exit 2) naming the variants of `names` it
    lacks: `bench` skipped them here (a dtype, a size or a parameter they do not take;
    without `--quiet` it says why)."""
    missing = [name for name in names if name not in found]
    if missing:
        raise weanj.InputError(
            f"no {what} of {', '.join(missing)}: weanj bench skipped it here (run without "
            "--quiet to see why)"
        )
    return found


def memory(records: Sequence[dict[str, Any]], over: str, **fields) -> dict[str, dict[Any, int]]:
    """{variant: {value of `over`: scratch bytes}} of the compiled-only records of a
    `memory_over=(over, ...)` sweep whose other fields have these values."""
    out: dict[str, dict[Any, int]] = {}
    for r in records:
        if r.get("timed") or r.get("sweep") != over:
            continue
        if all(r.get(k) == v for k, v in fields.items()):
            out.setdefault(r["variant"], {})[r[over]] = r["peak_mem_bytes"]
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def acceptance(label: str, value: float | None, target: float, *, at_least: bool = False) -> bool:
    """Print one acceptance point, `label: value (target <= t: ok)`; True when it is met."""
    if value is None:
        print(f"  {label}: not measured")
        return False
    met = value >= target if at_least else value <= target
    word = "ok" if met else ("BELOW TARGET" if at_least else "ABOVE TARGET")
    shown = f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    print(f"  {label}: {shown} (target {'>=' if at_least else '<='} {target:g}: {word})")
    return met


def table(example: str, records: Sequence[dict[str, Any]]) -> None:
    """The timed records as `weanj bench`'s Markdown table, after a blank line."""
    print(f"\n{example}:\n{_bench_table.markdown_table(weanj.example(example), records)}\n")


def jax_device(device: str):
    """The first JAX device of kind `device` ("cpu" or "gpu"), as `bench` finds it; no GPU
    is an `UnavailableError` (one line, exit 2, through `entry`)."""
    from weanj._backends._jax import JAX_RUNTIME

    return JAX_RUNTIME.device(device)


def header(title: str, device: str) -> None:
    """The first line: what is measured, on which device (no GPU: `UnavailableError`)."""
    import jax

    kind = jax_device(device).device_kind
    print(f"{title}; {device} ({kind}), jax {jax.__version__}", flush=True)


def entry(main: Callable[[], int | None]) -> int:
    """Run a script's `main`: an error of the user's (an unknown variant, a size out of
    range, no GPU) is one line on stderr and weanj's exit code (2), not a traceback."""
    try:
        return main() or 0
    except weanj.WeanjError as e:
        print(f"{Path(sys.argv[0]).name}: error: {e}", file=sys.stderr)
        return e.exit_code
