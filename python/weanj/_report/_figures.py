"""Pictures of where two gradients differ (`weanj diff --plot`, the report).

For any rank: 1-D, |Δ| against the index; 2-D, a heat map; 3-D and up, one heat map
per pair of axes sliced through the worst element, above the max projection onto the
same axes (so that regions away from the worst element show too). |Δ| is drawn relative to
max|g_ref| on a log colour scale with the bound of agreement marked on the colour bar (the
tolerance, or the noise floor where it is larger); against a reference of zeros, |Δ| itself
with the noise floor, as the judge judges it. Equal elements are left white and NaN/Inf
drawn in their own colour; the failing regions' bounding boxes are outlined. matplotlib is
imported here only, through its object API. Text from names is drawn as plain text
(`plain`), never as matplotlib's mathtext.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._errors import UnavailableError
from .._io._atomic import atomic_path
from .._io._marks import mark_of, png_metadata
from .._judge._beyond import compared_view
from .._judge._compare import ArrayComparison
from .._judge._policy import tolerance
from .._judge._verdict import CaseJudgement, ExampleJudgement
from .._model import Gradient
from .._model._verdicts import CaseKind, Verdict
from ._lines import compared_name, index, julia, relative_text


def plain(text: str) -> str:
    """Text matplotlib draws as it is: a `$` would start mathtext (and a name holding
    `$\\nosuchmacro{` would make drawing fail)."""
    return str(text).replace("$", r"\$")


def bound(c: ArrayComparison) -> tuple[float, str]:
    """What a picture draws and the largest value that agrees: `|Δ| / max|g_ref|` against
    the tolerance (or the noise floor, relative, where it is larger); against a reference
    of zeros, `|Δ|` itself against the noise floor (`_compare.compare`'s bound)."""
    if c.reference_max > 0:
        return max(tolerance(c.dtype).grad, c.grad_floor / c.reference_max), "|Δ| / max|g_ref|"
    return c.grad_floor, "|Δ| (the reference is all zeros)"


NAN_COLOUR = "magenta"


def _need_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UnavailableError("pictures need matplotlib: pip install 'weanj[plot]'") from None


def relative_delta(a: Gradient, b: Gradient, array: str) -> tuple[np.ndarray, np.ndarray]:
    """`(|Δ| / max|g_ref|, non-finite mask)` of one array."""
    ga, gb = np.asarray(a.gradients[array]), np.asarray(b.gradients[array])
    bad = ~(np.isfinite(ga) & np.isfinite(gb))
    wide = np.complex128 if np.iscomplexobj(ga) or np.iscomplexobj(gb) else np.float64
    with np.errstate(invalid="ignore", over="ignore"):
        delta = np.abs(np.where(bad, 0, gb.astype(wide) - ga.astype(wide))).astype(np.float64)
    scale = float(np.max(np.abs(ga[~bad]))) if (~bad).any() else 0.0
    return (delta / scale if scale > 0 else delta), bad


def _heat(
    ax,
    fig,
    values: np.ndarray,
    bad: np.ndarray,
    j: CaseJudgement,
    title: str,
    axes=(0, 1),
    boxes=(),
):
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    shown = np.ma.masked_where(~(values > 0) | bad, values)
    n_i, n_j = values.shape
    tol, quantity = bound(j.comparison)
    if shown.count():
        lo, hi = float(shown.min()), float(shown.max())
        if tol > 0:
            lo, hi = min(lo, tol / 10), max(hi, tol * 10)
        image = ax.imshow(
            shown,
            norm=LogNorm(vmin=lo, vmax=hi),
            cmap="viridis",
            interpolation="nearest",
            extent=(0.5, n_j + 0.5, n_i + 0.5, 0.5),
            aspect="auto" if max(n_i, n_j) > 8 * min(n_i, n_j) else "equal",
        )
        bar = fig.colorbar(image, ax=ax, label=quantity)
        if tol > 0:
            bar.ax.axhline(tol, color="red", linewidth=2)
            bar.ax.text(
                1.6,
                tol,
                "tolerance",
                color="red",
                va="center",
                fontsize=7,
                transform=bar.ax.get_yaxis_transform(),
            )
    if bad.any():
        ii, jj = np.nonzero(bad)
        ax.plot(
            jj + 1,
            ii + 1,
            "s",
            color=NAN_COLOUR,
            markersize=3,
            linestyle="none",
            label=str(Verdict.NONFINITE),
        )
        ax.legend(loc="upper right", fontsize=7)
    for lo_i, lo_j, hi_i, hi_j in boxes:
        ax.add_patch(
            Rectangle(
                (lo_j + 0.5, lo_i + 0.5),
                hi_j - lo_j + 1,
                hi_i - lo_i + 1,
                fill=False,
                edgecolor="red",
                linewidth=1,
            )
        )
    ax.set_xlabel(f"axis {axes[1]} (Julia index)")
    ax.set_ylabel(f"axis {axes[0]} (Julia index)")
    ax.set_xlim(0.5, n_j + 0.5)
    ax.set_ylim(n_i + 0.5, 0.5)
    ax.set_title(title, fontsize=8)  # plain text already (draw_pair)


def _wrapped(text: str, width: int) -> str:
    """A title broken into lines that fit above the panel (each given line wrapped)."""
    import textwrap

    return "\n".join(part for line in text.splitlines() for part in textwrap.wrap(line, width))


def draw_pair(j: CaseJudgement, a: Gradient, b: Gradient):
    """A matplotlib `Figure` of one pair and array (an output, a Hessian-vector product:
    `compared_view`), or None when nothing differs."""
    from matplotlib.figure import Figure

    a, b = compared_view(a, j.kind), compared_view(b, j.kind)
    values, bad = relative_delta(a, b, j.array)
    if not (values > 0).any() and not bad.any():
        return None
    c = j.comparison
    head = (
        f"{compared_name(j)}: {b.label} vs {a.label} ({j.verdict}); {relative_text(c)} at numpy "
        f"{index(c.worst)} / Julia {julia(c.worst)}; {c.differing} "
        f"beyond tolerance in {c.region_count} region(s)"
    )
    if j.verdict.at_kinks and j.away is not None:
        head += (
            f"\nonly at the kinks, as declared ({j.kinks}); away from them {relative_text(j.away)}"
        )
    if j.verdict.declared and j.expected is not None:
        head += f"\nas declared: {j.declared or j.expected.where()}"
    head = plain(_wrapped(head, 80 if values.ndim == 2 else 110))
    tol, quantity = bound(c)
    if values.ndim <= 1:
        fig = Figure(figsize=(7, 4))
        ax = fig.add_subplot()
        flat, flat_bad = np.atleast_1d(values), np.atleast_1d(bad)
        x = np.arange(1, flat.size + 1)
        ax.semilogy(x[flat > 0], flat[flat > 0], "-", linewidth=0.8)
        if flat_bad.any():
            top = float(flat.max()) if (flat > 0).any() else 1.0
            ax.semilogy(
                x[flat_bad],
                np.full(flat_bad.sum(), top),
                "s",
                color=NAN_COLOUR,
                label=str(Verdict.NONFINITE),
            )
            ax.legend(fontsize=7)
        if tol > 0:
            ax.axhline(tol, color="red", linestyle="--", linewidth=1, label="tolerance")
        for r in c.regions:  # a 0-d array's one region has no index: element 1
            lo, hi = (r.lo[0], r.hi[0]) if r.lo else (0, 0)
            ax.axvspan(lo + 0.5, hi + 1.5, color="red", alpha=0.12)
        ax.set_xlabel("index (Julia, 1-based)")
        ax.set_ylabel(quantity)
        ax.set_title(head, fontsize=8)
        return fig
    if values.ndim == 2:
        fig = Figure(figsize=(6.6, 5.4))
        boxes = [(r.lo[0], r.lo[1], r.hi[0], r.hi[1]) for r in c.regions]
        _heat(fig.add_subplot(), fig, values, bad, j, head, boxes=boxes)
        return fig
    return _slices_and_projections(values, bad, j, head)


def planes_of(ndim: int) -> list[tuple[int, int]]:
    """The pairs of axes drawn for an array of rank >= 3: every pair for 3-D; for higher
    ranks consecutive pairs, so that each axis appears in some panel."""
    if ndim == 3:
        return [(0, 1), (0, 2), (1, 2)]
    return [(d, d + 1) for d in range(ndim - 1)]


def _slices_and_projections(values: np.ndarray, bad: np.ndarray, j: CaseJudgement, head: str):
    """Rank >= 3: a row of slices through the worst element (the regions that cross the
    slice outlined), and a row of max projections over the other axes (every region
    outlined), so that a region away from the worst element is seen too."""
    from matplotlib.figure import Figure

    c = j.comparison
    worst = c.worst if c.worst else tuple(s // 2 for s in values.shape)
    planes = planes_of(values.ndim)
    fig = Figure(figsize=(5.2 * len(planes), 9.6), layout="constrained")  # bars beside panels
    for k, (p, q) in enumerate(planes):
        others = [d for d in range(values.ndim) if d not in (p, q)]
        where = tuple(slice(None) if d in (p, q) else worst[d] for d in range(values.ndim))
        fixed = ", ".join(f"axis {d} = {worst[d] + 1}" for d in others)
        boxes = [
            (r.lo[p], r.lo[q], r.hi[p], r.hi[q])
            for r in c.regions
            if all(r.lo[d] <= worst[d] <= r.hi[d] for d in others)
        ]
        _heat(
            fig.add_subplot(2, len(planes), k + 1),
            fig,
            values[where],
            bad[where],
            j,
            f"slice through the worst element ({fixed}, Julia)",
            axes=(p, q),
            boxes=boxes,
        )
        _heat(
            fig.add_subplot(2, len(planes), len(planes) + k + 1),
            fig,
            np.max(values, axis=tuple(others)),
            np.any(bad, axis=tuple(others)),
            j,
            f"max over axes {', '.join(str(d) for d in others)} (all regions)",
            axes=(p, q),
            boxes=[(r.lo[p], r.lo[q], r.hi[p], r.hi[q]) for r in c.regions],
        )
    fig.suptitle(head, fontsize=9)  # plain text already (draw_pair)
    return fig


def chosen_pairs(ej: ExampleJudgement, *, recorded: bool = False) -> list[CaseJudgement]:
    """The pairs worth a picture: the failing ones and those differing at kinks or as
    declared; when none, every same-family pair (without recorded references, unless asked)."""
    pairs = [
        j
        for j in ej.judgements
        if CaseKind(j.kind).compares
        and (j.comparison is not None or j.verdict == Verdict.NONFINITE)
    ]
    notable = [j for j in pairs if j.failed or j.verdict.as_declared]
    if notable:
        return notable
    same = [j for j in pairs if j.verdict == Verdict.OK]
    if not recorded:
        same = [j for j in same if not any(s.startswith("recorded/") for s in j.subjects)]
    return same


def plot_pairs(
    ej: ExampleJudgement, folder: Path, *, recorded: bool = False
) -> list[tuple[CaseJudgement, Path | None]]:
    """PNGs of the chosen pairs in `folder` (earlier ones removed first, so a picture of
    an earlier store never passes for this one's: only those weanj drew, which carry its
    mark, `_io._marks`); None where nothing differs."""
    _need_matplotlib()
    for old in folder.glob("*.png") if folder.is_dir() and not folder.is_symlink() else ():
        if mark_of(old) is not None:
            old.unlink(missing_ok=True)
    out = []
    for j in chosen_pairs(ej, recorded=recorded):
        a, b = (ej.subjects[label] for label in j.subjects)
        fig = draw_pair(j, a, b)
        if fig is None:
            out.append((j, None))
            continue
        folder.mkdir(parents=True, exist_ok=True)
        # `x`, `output-uT`, `Hv-x`, `JTw-uT-by-x`: ASCII, as every file weanj names
        what = compared_name(j).replace(" ", "-").replace("ᵀ", "T")
        name = f"{j.subjects[0]}-vs-{j.subjects[1]}-{what}.png".replace("/", "_").replace("@", "_")
        path = folder / name
        with atomic_path(path, foreign="aside") as tmp:  # never through a link at `path`
            fig.savefig(tmp, dpi=100, format="png", metadata=png_metadata(ej.name))
        out.append((j, path))
    return out
