"""`weanj plot EXAMPLE`: the benchmark figures as PNG files in `results/<example>/plots/`.

Records that are not of the benchmark file contract are left out with one line each
(`_io._bench.load_results`); a figure's file name is checked as one path component
(`_places.component`), so nothing read from a file ever names a place outside the
plots folder.
"""

from __future__ import annotations

from pathlib import Path

from .._errors import InputFileError, say, wrapped
from .._io._atomic import atomic_path
from .._io._bench import load_results
from .._io._marks import mark_of, png_metadata
from .._model import Catalog
from .._places import component, places
from .._report._bench_plots import figures


def plot(cat: Catalog) -> list[Path]:
    """Write the benchmark figures of an example (its catalog); **Returns:** the PNG paths
    written."""
    ex = cat.example
    here = places()
    records, problems = load_results(ex, here)
    for line in problems:
        say(wrapped(f"weanj: warning: {line}"))
    drawn = figures(cat, records)
    if not drawn:
        hint = f" --over {ex.params[0].name} V1 V2 ..." if ex.params else ""
        raise InputFileError(
            f"nothing to plot for {ex.name}: its records sweep no size (the example declares no "
            f"weanj.Sizes) and no parameter; run e.g. weanj bench {ex.name}{hint}"
        )
    out = here.plots(ex.name)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for f in drawn:  # each replaces its file in one step: a failure leaves the old figures
        path = out / f"{component(f.stem, 'figure')}.png"
        with atomic_path(path, foreign="aside") as tmp:
            f.figure.savefig(tmp, dpi=110, format="png", metadata=png_metadata(ex.name))
        written.append(path)
    for old in out.glob("*.png"):  # only now: figures of series no longer stored must not linger
        if old not in written and mark_of(old) is not None:  # only the pictures weanj drew
            old.unlink(missing_ok=True)
    return written
