"""PNG figures of the stored benchmark results (`weanj plot EXAMPLE`).

Reads every `results/<example>/bench/<backend>-<device>.json` and draws, into
`results/<example>/plots/`: forward and gradient time against n, the gradient/forward
time ratio, the first-call (compile) time, and XLA scratch memory against n and against
K. One colour per variant, one line style per device, so that CPU and GPU runs of a
variant sit side by side. matplotlib is imported here only, through its object API (no
pyplot, so a notebook's plotting backend is never switched).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._errors import InputFileError, UnavailableError
from ._registry import example
from ._root import results_dir
from ._timing import RECORD_FIELDS

_STYLE = {"cpu": ("-", "o"), "gpu": ("--", "s")}


def load_results(example_name: str) -> list[dict[str, Any]]:
    """All benchmark records of an example, from every backend's and device's file.

    Records lacking `device` or `backend` take them from their file's name.
    """
    name = example(example_name).name
    files = sorted((results_dir(name) / "bench").glob("*.json"))
    if not files:
        raise InputFileError(
            f"no benchmark results under {results_dir(name) / 'bench'}; run: weanj bench {name}"
        )
    records = []
    for path in files:
        backend, _, device = path.stem.rpartition("-")
        try:
            stored = json.loads(path.read_text())["records"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputFileError(
                f"unreadable benchmark file {path} ({e}); rerun: weanj bench {name}"
            ) from None
        for r in stored:
            missing = [k for k in RECORD_FIELDS if not isinstance(r, dict) or k not in r]
            if missing:
                raise InputFileError(
                    f"benchmark file {path} has a record without {', '.join(missing)}; "
                    f"rerun: weanj bench {name}"
                )
            records.append({"backend": backend, "device": device, **r})
    return records


def _label(r: dict[str, Any], varying: set[str]) -> str:
    """The series name: variant and device, plus dtype, K and n where those vary."""
    parts = [r["variant"], r["device"]]
    if "dtype" in varying:
        parts.append(str(r["dtype"]))
    parts += [f"{k}={r[k]}" for k in ("K", "n") if k in varying]
    return " · ".join(parts)


def _series(records, x: str, y: Callable[[dict], float | None], keys: tuple[str, ...]):
    """`{series key: sorted [(x, y)]}` over records whose y is positive (log axes)."""
    out: dict[tuple, list[tuple[float, float]]] = {}
    for r in records:
        value = y(r)
        if value is not None and value > 0:
            out.setdefault(tuple(r[k] for k in keys), []).append((r[x], value))
    return {k: sorted(v) for k, v in sorted(out.items(), key=lambda kv: [str(p) for p in kv[0]])}


def _draw(ax, records, x, y, colours, varying, unit, keys=("variant", "device", "dtype", "K")):
    """One line per (variant, device, dtype, K) on log-log axes, y in SI prefixes of `unit`
    (µs, kB), x at the measured values; False when there was nothing to draw."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    drawn, xs_all = False, set()
    for key, points in _series(records, x, y, keys).items():
        r = dict(zip(keys, key, strict=True))
        line, marker = _STYLE.get(r["device"], (":", "^"))
        xs, ys = zip(*points, strict=True)
        xs_all.update(xs)
        # Hollow markers off the CPU, so coinciding CPU and GPU points both stay visible.
        ax.plot(
            xs,
            ys,
            line,
            marker=marker,
            color=colours[r["variant"]],
            markerfacecolor=colours[r["variant"]] if r["device"] == "cpu" else "none",
            label=_label(r, varying),
        )
        drawn = True
    if drawn:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(sorted(xs_all)))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(_si_log_formatter(unit))
        ax.yaxis.set_minor_formatter(_si_log_formatter(unit))
        ax.grid(True, which="both", alpha=0.3)
    return drawn


def _si_log_formatter(unit: str):
    """Log-axis tick labels in SI prefixes ("20 ms", "300 kB"; plain numbers without a
    unit), thinned as matplotlib's own log labels are (some minor ticks labelled when the
    axis spans two decades or less)."""
    from matplotlib.ticker import EngFormatter, LogFormatter

    eng = EngFormatter(unit=unit)

    class SILogFormatter(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return eng(x) if unit else f"{x:g}"

    return SILogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5))


def _figure(ncols: int = 1, sharey: bool = False):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2.4 + 6 * ncols, 4.8), layout="constrained")  # room for the legend
    return fig, list(fig.subplots(1, ncols, sharey=sharey, squeeze=False)[0])


def plot(example_name: str) -> list[Path]:
    """Write the benchmark figures of an example; **Returns:** the PNG paths written."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UnavailableError("weanj plot needs matplotlib: pip install 'weanj[plot]'") from None
    name = example(example_name).name
    records = load_results(name)
    by_n = [r for r in records if r.get("sweep", "n") == "n"]
    by_K = [r for r in records if r.get("sweep") == "K"]
    varying = {k for k in ("dtype", "K") if len({r[k] for r in by_n}) > 1}
    variants = sorted({r["variant"] for r in records})
    from matplotlib import colormaps

    palette = colormaps["tab10"].colors
    colours = {v: palette[i % len(palette)] for i, v in enumerate(variants)}
    Ks = sorted({r["K"] for r in by_n})
    at_K = f"K = {Ks[0]}" if len(Ks) == 1 else "K as labelled"
    n_axis = "grid size n (n×n unknowns)"
    out = results_dir(name) / "plots"
    out.mkdir(parents=True, exist_ok=True)
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

    fig, (fwd, grd) = _figure(2, sharey=True)
    drawn = False
    for ax, field, what in ((fwd, "forward_s", "forward (loss)"), (grd, "grad_s", "gradient")):
        if _draw(ax, by_n, "n", lambda r, f=field: r.get(f), colours, varying, "s"):
            ax.set(title=f"{what} time", xlabel=n_axis, ylabel="median wall time")
            drawn = True
    if drawn:
        save(fig, "time_vs_n", f"{name}: median time against grid size ({at_K})")

    fig, (ax,) = _figure()
    if _draw(ax, by_n, "n", _ratio, colours, varying, ""):
        ax.set(xlabel=n_axis, ylabel="gradient time / forward time")
        save(fig, "grad_forward_ratio", f"{name}: gradient cost in forward evaluations ({at_K})")

    fig, (ax,) = _figure()
    if _draw(ax, by_n, "n", lambda r: r.get("compile_s"), colours, varying, "s"):
        ax.set(xlabel=n_axis, ylabel="wall time of the first gradient call")
        save(fig, "compile_vs_n", f"{name}: compile time (first gradient call, {at_K})")

    memory_axis = "XLA scratch memory of the compiled gradient"
    fig, (ax,) = _figure()
    if _draw(ax, by_n, "n", lambda r: r.get("peak_mem_bytes"), colours, varying, "B"):
        ax.set(xlabel=n_axis, ylabel=memory_axis)
        save(fig, "memory_vs_n", f"{name}: gradient memory against grid size ({at_K})")

    fig, (ax,) = _figure()
    varying_K = {k for k in ("dtype", "n") if len({r[k] for r in by_K}) > 1}
    ns = sorted({r["n"] for r in by_K})
    at_n = f"n = {ns[0]}" if len(ns) == 1 else "n as labelled"
    if _draw(
        ax,
        by_K,
        "K",
        lambda r: r.get("peak_mem_bytes"),
        colours,
        varying_K,
        "B",
        keys=("variant", "device", "dtype", "n"),
    ):
        ax.set(xlabel="iterations K", ylabel=memory_axis)
        save(fig, "memory_vs_K", f"{name}: gradient memory against K ({at_n})")
    return written


def _ratio(r: dict[str, Any]) -> float | None:
    if r.get("grad_s") is None or not r.get("forward_s"):
        return None
    return r["grad_s"] / r["forward_s"]


def command(args: argparse.Namespace) -> int:
    """`weanj plot EXAMPLE`."""
    for path in plot(args.example):
        print(f"wrote {path}")
    return 0
