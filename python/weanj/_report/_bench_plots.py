"""PNG figures of the stored benchmark results (`weanj plot EXAMPLE`).

Reads every `results/<example>/bench/<backend>-<device>.json` and draws, into
`results/<example>/plots/`: forward and gradient time against the example's size (e.g.
`time_vs_n.png`), the gradient/forward time ratio, the first-call (compile) time, XLA
scratch memory against the size, and, for each parameter a sweep went over, memory (and
time, where timed) against it (e.g. `memory_vs_K.png`). One colour per variant, one line
style per device (solid, filled markers: CPU; dashed, hollow: GPU), one marker per
parameter value, so that series at different K differ at a glance; times in SI prefixes
of seconds, memory in MiB as in the tables. matplotlib is imported here only, through
its object API (no pyplot, so a notebook's plotting backend is never switched).
"""

from __future__ import annotations

import json
import numbers
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._errors import InputFileError, UnavailableError
from .._model import Example
from .._project import results_dir
from .._registry import example
from .._timing import record_fields

_LINES = {"cpu": "-", "gpu": "--"}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
MIB = 2**20
_NUMBERS = ("N", "forward_s", "grad_s", "compile_s", "peak_mem_bytes")


def _bad_field(r: Any, required: tuple[str, ...]) -> str | None:
    """Why a record cannot be drawn, or None."""
    if not isinstance(r, dict):
        return "a record is not an object"
    missing = [k for k in required if k not in r]
    if missing:
        return f"a record lacks {', '.join(missing)}"
    for key in _NUMBERS:
        value = r[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            return f"a record's {key} is {value!r}, not a number"
    for key in ("variant", "dtype"):
        if not isinstance(r[key], str):
            return f"a record's {key} is {r[key]!r}, not a string"
    return None


def load_results(example_name: str) -> list[dict[str, Any]]:
    """All benchmark records of an example, from every backend's and device's file.

    Records lacking `device` or `backend` take them from their file's name. A record that
    lacks a field or has one of the wrong type is skipped with a warning on stderr; an
    unreadable file, or none usable, is one error line.
    """
    ex = example(example_name)
    folder = results_dir(ex.name) / "bench"
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InputFileError(f"no benchmark results under {folder}; run: weanj bench {ex.name}")
    required = record_fields(ex.name)
    records, problems = [], []
    for path in files:
        backend, _, device = path.stem.rpartition("-")
        try:
            stored = json.loads(path.read_text())["records"]
            if not isinstance(stored, list):
                raise TypeError("records is not a list")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputFileError(
                f"unreadable benchmark file {path} ({e}); rerun: weanj bench {ex.name}"
            ) from None
        skipped, why = 0, None
        for r in stored:
            reason = _bad_field(r, required)
            if reason is not None:
                skipped, why = skipped + 1, why or reason
                continue
            records.append({"backend": backend, "device": device, **r})
        if skipped:
            problems.append(f"{path}: skipped {skipped} record(s) ({why})")
    if not records:
        raise InputFileError(
            f"no usable benchmark records of {ex.name}: {'; '.join(problems)}; "
            f"rerun: weanj bench {ex.name}"
        )
    for line in problems:
        print(f"weanj: warning: {line}", file=sys.stderr)
    return records


def _label(r: dict[str, Any], varying: tuple[str, ...]) -> str:
    """The series name: variant and device, plus whatever else varies between series."""
    return " · ".join([r["variant"], r["device"]] + [f"{k}={r.get(k)}" for k in varying])


def _timed(r: dict[str, Any]) -> bool:
    return bool(r.get("timed", r.get("forward_s") is not None))


def _draw(ax, records, x: str, y: Callable[[dict], float | None], colours, keys, unit: str):
    """One line per series (`keys`) on log-log axes at the measured x values; False when
    there was nothing to draw. Series that differ in anything but variant and device get
    different markers."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    series: dict[tuple, list[tuple[float, float]]] = {}
    for r in records:
        value = y(r)
        if value is not None and value > 0 and isinstance(r.get(x), numbers.Real):
            series.setdefault(tuple(r.get(k) for k in keys), []).append((r[x], value))
    varying = tuple(
        k for i, k in enumerate(keys[2:], start=2) if len({key[i] for key in series}) > 1
    )
    markers: dict[tuple, str] = {}
    drawn, xs_all = False, set()
    for key, points in sorted(series.items(), key=lambda kv: [str(p) for p in kv[0]]):
        r = dict(zip(keys, key, strict=True))
        rest = tuple(r[k] for k in varying)
        marker = markers.setdefault(rest, _MARKERS[len(markers) % len(_MARKERS)])
        colour = colours[r["variant"]]
        xs, ys = zip(*sorted(points), strict=True)
        xs_all.update(xs)
        # Hollow markers off the CPU, so coinciding CPU and GPU points both stay visible.
        ax.plot(
            xs,
            ys,
            _LINES.get(r["device"], ":"),
            marker=marker,
            color=colour,
            markerfacecolor=colour if r["device"] == "cpu" else "none",
            label=_label(r, varying),
        )
        drawn = True
    if drawn:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(sorted(xs_all)))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(_log_formatter(unit))
        ax.yaxis.set_minor_formatter(_log_formatter(unit))
        ax.grid(True, which="both", alpha=0.3)
    return drawn


def _log_formatter(unit: str):
    """Log-axis tick labels: SI prefixes of seconds ("20 ms"), MiB as such ("1.5 MiB"),
    plain numbers without a unit; thinned as matplotlib's own log labels are."""
    from matplotlib.ticker import EngFormatter, LogFormatter

    eng = EngFormatter(unit=unit)

    class UnitLogFormatter(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            if unit == "MiB":
                return f"{x:.3g} MiB"
            return eng(x) if unit else f"{x:g}"

    return UnitLogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5))


def _figure(ncols: int = 1, sharey: bool = False):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2.4 + 6 * ncols, 4.8), layout="constrained")  # room for the legend
    return fig, list(fig.subplots(1, ncols, sharey=sharey, squeeze=False)[0])


def _ratio(r: dict[str, Any]) -> float | None:
    if r.get("grad_s") is None or not r.get("forward_s"):
        return None
    return r["grad_s"] / r["forward_s"]


def _memory(r: dict[str, Any]) -> float | None:
    return None if r.get("peak_mem_bytes") is None else r["peak_mem_bytes"] / MIB


def _at(ex: Example, records, names) -> str:
    """`K = 100` when one value, else `K as labelled`, for each name."""
    parts = []
    for name in names:
        values = sorted({str(r.get(name)) for r in records})
        parts.append(f"{name} = {values[0]}" if len(values) == 1 else f"{name} as labelled")
    return ", ".join(parts)


def plot(example_name: str) -> list[Path]:
    """Write the benchmark figures of an example; **Returns:** the PNG paths written."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UnavailableError("weanj plot needs matplotlib: pip install 'weanj[plot]'") from None
    ex = example(example_name)
    name = ex.name
    records = load_results(name)
    size = ex.sizes.name if ex.sizes is not None else "size"
    size_axis = f"{size}: {ex.sizes.help}" if ex.sizes is not None and ex.sizes.help else size
    variants = sorted({r["variant"] for r in records})
    from matplotlib import colormaps

    palette = colormaps["tab10"].colors
    colours = {v: palette[i % len(palette)] for i, v in enumerate(variants)}
    out = results_dir(name) / "plots"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink(missing_ok=True)  # figures of series no longer stored must not linger
    written = []

    def save(fig, stem, title):
        fig.suptitle(title)
        # One legend beside the axes, never over the data, for the series of all panels.
        series = {}
        for ax in fig.axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                series.setdefault(label, handle)
        fig.legend(series.values(), series.keys(), loc="outside right center", fontsize="small")
        path = out / f"{stem}.png"
        fig.savefig(path, dpi=110)
        written.append(path)

    def sweep_figures(x: str, subset: list[dict], axis: str, fixed: tuple[str, ...]):
        keys = ("variant", "device", "dtype", *fixed)
        at = _at(ex, subset, fixed)
        timed = [r for r in subset if _timed(r)]
        if timed:
            fig, (fwd, grd) = _figure(2, sharey=True)
            drawn = False
            for ax, field, what in (
                (fwd, "forward_s", "forward (loss)"),
                (grd, "grad_s", "gradient"),
            ):
                if _draw(ax, timed, x, lambda r, f=field: r.get(f), colours, keys, "s"):
                    ax.set(title=f"{what} time", xlabel=axis, ylabel="median wall time")
                    drawn = True
            if drawn:
                save(fig, f"time_vs_{x}", f"{name}: median time against {x} ({at})")
            fig, (ax,) = _figure()
            if _draw(ax, timed, x, _ratio, colours, keys, ""):
                ax.set(xlabel=axis, ylabel="gradient time / forward time")
                save(
                    fig,
                    f"grad_forward_ratio{'' if x == size else '_vs_' + x}",
                    f"{name}: gradient cost in forward evaluations ({at})",
                )
            fig, (ax,) = _figure()
            if _draw(ax, timed, x, lambda r: r.get("compile_s"), colours, keys, "s"):
                ax.set(xlabel=axis, ylabel="wall time of the first gradient call")
                save(fig, f"compile_vs_{x}", f"{name}: compile time (first gradient call, {at})")
        fig, (ax,) = _figure()
        if _draw(ax, subset, x, _memory, colours, keys, "MiB"):
            ax.set(xlabel=axis, ylabel="XLA scratch memory of the compiled gradient")
            save(fig, f"memory_vs_{x}", f"{name}: gradient memory against {x} ({at})")

    by_size = [r for r in records if r.get("sweep", size) == size]
    if by_size:
        sweep_figures(size, by_size, size_axis, tuple(ex.param_names))
    for p in ex.params:
        over = [r for r in records if r.get("sweep") == p.name]
        if over:
            others = tuple(k for k in ex.param_names if k != p.name)
            sweep_figures(
                p.name, over, f"{p.name}: {p.help}" if p.help else p.name, (size, *others)
            )
    if not written:
        hint = f" --over {ex.params[0].name} V1 V2 ..." if ex.params else ""
        raise InputFileError(
            f"nothing to plot for {name}: its records sweep no size (the example declares no "
            f"weanj.Sizes) and no parameter; run e.g. weanj bench {name}{hint}"
        )
    return written
