"""PNG figures of the stored benchmark results (`weanj plot EXAMPLE`, `weanj report`).

Reads every `results/<example>/bench/<backend>-<device>.json` and draws: forward and
gradient time against the example's size (e.g. `time_vs_n.png`), the gradient/forward
time ratio, the first-call (compile) time, XLA scratch memory against the size, and, for
each parameter a sweep went over, memory (and time, where timed) against it (e.g.
`memory_vs_K.png`).

How a reader tells series apart: one hue per variant family (blues for one, oranges for
the next, ...), within it one shade and one marker per variant, so that lex and rb
variants never look alike; one line style per device (solid, filled markers: CPU;
dashed, hollow: GPU). Series at other fixed parameters or dtypes get figures of their
own (`time_vs_n_K40.png`), never extra legend entries: the legend has one entry per
variant and one per device. Times are medians, with bars from the fastest to the slowest
sample where the records keep them (`spread`), and the sample counts in the title; the
units are those of `weanj bench`'s table (ms, s for the first call, MiB). matplotlib is
imported here only, through its object API (no pyplot, so a notebook's plotting backend
is never switched). Names from the records are drawn as plain text (`_figures.plain`),
never as mathtext: a variant called `$\\nosuchmacro{` is a label, not a failed drawing.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._errors import UnavailableError
from .._model import Catalog, Example
from ._figures import plain

_LINES = {"cpu": "-", "gpu": "--", "tpu": "-."}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">")
# One sequential colour map per family: its shades tell the family's variants apart.
_HUES = ("Blues", "Oranges", "Greens", "Purples", "Reds", "Greys", "YlOrBr", "PuRd", "BuGn")
MIB = 2**20


# --- styles --------------------------------------------------------------------------------


def family_of(cat: Catalog, r: dict[str, Any]) -> str:
    v = cat.find(r["variant"])
    return v.family if v is not None else str(r.get("family") or r["variant"])


def styles(cat: Catalog, records: list[dict[str, Any]]) -> dict[str, tuple[Any, str]]:
    """`{variant: (colour, marker)}`: a hue per family (in the registry's order), a shade
    and a marker per member."""
    from matplotlib import colormaps

    order = {v.name: i for i, v in enumerate(cat.variants)}
    members: dict[str, list[str]] = {}
    for variant in sorted({r["variant"] for r in records}, key=lambda v: (order.get(v, 1e9), v)):
        fam = family_of(cat, {"variant": variant, "family": _family_field(records, variant)})
        members.setdefault(fam, []).append(variant)
    out = {}
    for f, (_, names) in enumerate(members.items()):
        cmap = colormaps[_HUES[f % len(_HUES)]]
        for i, variant in enumerate(names):
            shade = 0.9 - 0.45 * i / max(len(names) - 1, 1)  # darkest first, never white
            out[variant] = (cmap(shade), _MARKERS[i % len(_MARKERS)])
    return out


def _family_field(records, variant) -> str | None:
    return next((r.get("family") for r in records if r["variant"] == variant), None)


def _timed(r: dict[str, Any]) -> bool:
    return bool(r.get("timed", r.get("forward_s") is not None))


def _spread(r: dict[str, Any], field: str) -> tuple[float, float] | None:
    """(fastest, slowest) sample of a timed field, when the record keeps them."""
    found = (r.get("spread") or {}).get(field)
    if isinstance(found, (list, tuple)) and len(found) == 2:
        lo, hi = found
        if isinstance(lo, numbers.Real) and isinstance(hi, numbers.Real) and 0 < lo <= hi:
            return float(lo), float(hi)
    return None


def _series_label(r: dict[str, Any]) -> str:
    devices = r.get("devices", 1)
    return plain(r["variant"]) + (
        f" ({devices} devices)" if isinstance(devices, int) and devices > 1 else ""
    )


# --- drawing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Quantity:
    """What a panel draws: a record field (or a function of the record), its scale to the
    table's unit, and the spread field, if any."""

    what: str
    unit: str
    value: Callable[[dict], float | None]
    spread: str | None = None
    scale: float = 1.0


def _draw(ax, records, x: str, q: Quantity, style) -> bool:
    """One line per variant and device on log-log axes at the measured x values, with
    the samples' spread as bars; False when there was nothing to draw."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    series: dict[tuple, list[tuple[float, float, tuple[float, float] | None]]] = {}
    for r in records:
        value = q.value(r)
        if value is not None and value > 0 and isinstance(r.get(x), numbers.Real):
            spread = _spread(r, q.spread) if q.spread else None
            key = (_series_label(r), r["variant"], r["device"])
            series.setdefault(key, []).append((r[x], value, spread))
    xs_all, ys_all = set(), []
    for (label, variant, device), points in sorted(series.items()):
        colour, marker = style[variant]
        points.sort(key=lambda p: p[0])
        xs = [p[0] for p in points]
        ys = [p[1] * q.scale for p in points]
        xs_all.update(xs)
        ys_all.extend(ys)
        spreads = [p[2] for p in points]
        kwargs = dict(
            linestyle=_LINES.get(device, ":"),
            marker=marker,
            color=colour,
            markerfacecolor=colour if device == "cpu" else "none",
            label=label,
        )
        if any(s is not None for s in spreads):
            low = [y - (s[0] * q.scale if s else y) for y, s in zip(ys, spreads, strict=True)]
            high = [(s[1] * q.scale if s else y) - y for y, s in zip(ys, spreads, strict=True)]
            ax.errorbar(xs, ys, yerr=[low, high], capsize=3, elinewidth=1, **kwargs)
            ys_all.extend(y - lo for y, lo in zip(ys, low, strict=True))
            ys_all.extend(y + hi for y, hi in zip(ys, high, strict=True))
        else:
            ax.plot(xs, ys, **kwargs)
    if not series:
        return False
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sorted(xs_all)))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    if len(xs_all) == 1:  # one size: a decade around it, not matplotlib's 0.96–1.04
        (only,) = xs_all
        ax.set_xlim(only / 3, only * 3)
    lo, hi = min(ys_all), max(ys_all)
    if hi / lo < 10:  # less than a decade: widen to one, so the ticks carry numbers
        middle = (lo * hi) ** 0.5
        ax.set_ylim(middle / 4, middle * 4)
    ax.yaxis.set_major_formatter(_plain())
    ax.yaxis.set_minor_formatter(_plain())
    ax.set_ylabel(f"{q.what} [{q.unit}]" if q.unit else q.what)
    ax.grid(True, which="both", alpha=0.3)
    return True


def _plain():
    """Log-axis tick labels as plain numbers ("0.2", "5", "40"; the unit is in the axis
    label, as in the tables), thinned as matplotlib's own log labels are."""
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return f"{x:.3g}"

    return PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5))


def _figure(ncols: int = 1, sharey: bool = False):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2.6 + 5.6 * ncols, 4.6), layout="constrained")  # room for the legend
    return fig, list(fig.subplots(1, ncols, sharey=sharey, squeeze=False)[0])


def _legend(fig, records, style) -> None:
    """One legend beside the axes: one entry per variant (its colour and marker), and
    one per device when there are several (its line style)."""
    from matplotlib.lines import Line2D

    drawn = set()
    for ax in fig.axes:
        drawn.update(ax.get_legend_handles_labels()[1])
    handles, labels = [], []
    order = list(style)  # families in the registry's order, each one's members together
    for r in sorted(records, key=lambda r: (order.index(r["variant"]), _series_label(r))):
        label = _series_label(r)
        if label in drawn and label not in labels:
            colour, marker = style[r["variant"]]
            handles.append(Line2D([], [], color=colour, marker=marker, linestyle="-"))
            labels.append(label)
    devices = sorted({r["device"] for r in records})
    if len(devices) > 1:
        for device in devices:
            handles.append(
                Line2D(
                    [],
                    [],
                    color="black",
                    linestyle=_LINES.get(device, ":"),
                    marker="o",
                    markerfacecolor="black" if device == "cpu" else "none",
                )
            )
            standin = any(r.get("standin") is True for r in records if r["device"] == device)
            labels.append(device.upper() + (" (stand-in)" if standin else ""))
    if handles:
        fig.legend(
            handles,
            labels,
            loc="outside right center",
            fontsize="small",
            ncols=1 if len(handles) <= 16 else 2,
        )


def _ratio(r: dict[str, Any]) -> float | None:
    if r.get("grad_s") is None or not r.get("forward_s"):
        return None
    return r["grad_s"] / r["forward_s"]


def _memory(r: dict[str, Any]) -> float | None:
    return None if r.get("peak_mem_bytes") is None else r["peak_mem_bytes"] / MIB


FORWARD = Quantity(
    "median forward (loss) time", "ms", lambda r: r.get("forward_s"), "forward_s", 1e3
)
GRADIENT = Quantity("median gradient time", "ms", lambda r: r.get("grad_s"), "grad_s", 1e3)
RATIO = Quantity("gradient time / forward time", "", _ratio)
COMPILE = Quantity("first gradient call (compile + run)", "s", lambda r: r.get("compile_s"))
MEMORY = Quantity("XLA scratch memory of the gradient", "MiB", _memory)


def _samples_note(records) -> str:
    counts = sorted({r["samples"] for r in records if isinstance(r.get("samples"), int)})
    if not counts:
        return "medians"
    shown = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    bars = (
        "; bars: fastest to slowest sample"
        if any(_spread(r, "grad_s") for r in records)
        else "; no spread recorded (rerun weanj bench to keep it)"
    )
    return f"medians of {shown} samples per point{bars}"


def _groups(records, fixed: tuple[str, ...]) -> list[tuple[str, str, list[dict]]]:
    """The records split by dtype and fixed parameters: `(stem suffix, title part,
    records)`; the suffix is empty when there is one group."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["dtype"], *(r.get(k) for k in fixed)), []).append(r)
    varying = [i for i in range(len(fixed) + 1) if len({key[i] for key in groups}) > 1]
    out = []
    for key, members in sorted(groups.items(), key=lambda kv: [str(p) for p in kv[0]]):
        names = ("dtype", *fixed)
        title = ", ".join(
            [f"{n} = {v}" for n, v in zip(names[1:], key[1:], strict=True)] + [key[0]]
        )
        suffix = "".join(f"_{names[i]}{key[i]}" if i else f"_{key[0]}" for i in varying)
        out.append((suffix, title, members))
    return out


@dataclass
class BenchFigure:
    """One figure: its file stem (which quantity against which variable, at which fixed
    parameters) and its title."""

    stem: str
    title: str
    figure: Any


def _sweep_figures(
    ex: Example, x: str, subset: list[dict], axis: str, fixed: tuple[str, ...], style
) -> list[BenchFigure]:
    out = []
    size = ex.sizes.name if ex.sizes is not None else "size"
    for suffix, at, members in _groups(subset, fixed):
        timed = [r for r in members if _timed(r)]

        def add(fig, stem, title, records, at=at, suffix=suffix):
            _legend(fig, records, style)
            fig.suptitle(plain(f"{ex.name}: {title} ({at})\n{_samples_note(records)}"), fontsize=10)
            out.append(BenchFigure(stem + suffix, f"{ex.name}: {title} ({at})", fig))

        if timed:
            fig, (fwd, grd) = _figure(2, sharey=True)
            drawn = [_draw(ax, timed, x, q, style) for ax, q in ((fwd, FORWARD), (grd, GRADIENT))]
            for ax, what in ((fwd, "forward (loss)"), (grd, "gradient")):
                ax.set(title=f"{what} time", xlabel=plain(axis))
            if any(drawn):
                add(fig, f"time_vs_{x}", f"forward and gradient time against {x}", timed)
            fig, (ax,) = _figure()
            if _draw(ax, timed, x, RATIO, style):
                ax.set(xlabel=plain(axis))
                stem = f"grad_forward_ratio{'' if x == size else '_vs_' + x}"
                add(fig, stem, f"gradient cost in forward evaluations against {x}", timed)
            fig, (ax,) = _figure()
            if _draw(ax, timed, x, COMPILE, style):
                ax.set(xlabel=plain(axis))
                add(
                    fig, f"compile_vs_{x}", f"compile time (first gradient call) against {x}", timed
                )
        fig, (ax,) = _figure()
        if _draw(ax, members, x, MEMORY, style):
            ax.set(xlabel=plain(axis))
            add(fig, f"memory_vs_{x}", f"gradient scratch memory against {x}", members)
    return out


def figures(cat: Catalog, records: list[dict[str, Any]]) -> list[BenchFigure]:
    """The benchmark figures of an example (matplotlib `Figure`s, not yet written)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UnavailableError("weanj plot needs matplotlib: pip install 'weanj[plot]'") from None
    ex = cat.example
    style = styles(cat, records)
    size = ex.sizes.name if ex.sizes is not None else "size"
    size_axis = f"{size}: {ex.sizes.help}" if ex.sizes is not None and ex.sizes.help else size
    out = []
    by_size = [r for r in records if r.get("sweep", size) == size]
    if by_size:
        out += _sweep_figures(ex, size, by_size, size_axis, tuple(ex.param_names), style)
    for p in ex.params:
        over = [r for r in records if r.get("sweep") == p.name]
        if over:
            others = tuple(k for k in ex.param_names if k != p.name)
            axis = f"{p.name}: {p.help}" if p.help else p.name
            out += _sweep_figures(ex, p.name, over, axis, (size, *others), style)
    return out
