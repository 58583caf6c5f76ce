"""Where gradient files live in a project (docs/DESIGN.md, "The store"):

results/<example>/gradients/<variant>.h5          float64 runs on the shared inputs
results/<example>/gradients/float32/<variant>.h5  float32 runs on the shared inputs
results/<example>/recorded/<name>.h5              committed references (any dtype)
results/<example>/runs/<variant>-<...>.h5         anything else; never compared
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .._model import Example, Gradient, check_dtype, check_name
from .._project import project_root, results_dir
from .._registry import example as example_named

PRODUCED, RECORDED, RUNS = "gradients", "recorded", "runs"


def gradient_path(
    example: Example | str, variant: str, *, recorded: bool = False, dtype: str = "float64"
) -> Path:
    """Where the store keeps a variant's gradient (`recorded=True`: committed references)."""
    ex = example_named(example)
    check_name("variant", variant)
    if recorded:
        return results_dir(ex.name) / RECORDED / f"{variant}.h5"
    folder = results_dir(ex.name) / PRODUCED
    if check_dtype(dtype) != "float64":
        folder = folder / dtype
    return folder / f"{variant}.h5"


@dataclass(frozen=True)
class Place:
    """Where a path lies in a project's results: `kind` is "gradients", "recorded",
    "runs" or "other" (anything else under results/)."""

    example: str
    kind: str
    dtype: str = "float64"


def place_of(path: Path) -> Place | None:
    """The store place of `path`, or None outside `results/`."""
    results = (project_root() / "results").resolve()
    try:
        # realpath, not Path.resolve: a symbolic link loop is no RuntimeError here
        parts = Path(os.path.realpath(path)).relative_to(results).parts
    except ValueError:
        return None
    if len(parts) == 3 and parts[1] in (PRODUCED, RECORDED, RUNS):
        return Place(parts[0], parts[1])
    if len(parts) == 4 and parts[1] == PRODUCED and parts[2] == "float32":
        return Place(parts[0], PRODUCED, "float32")
    return Place(parts[0] if len(parts) > 1 else "", "other")


def runs_path(g: Gradient, differences: list[str] | None = None) -> Path:
    """`results/<example>/runs/<variant>-<what differs>.h5` for a run off the store."""
    parts = differences if differences else [f"key-{g.key[:12]}"]
    return results_dir(g.example.name) / RUNS / ("-".join([g.variant, *parts]) + ".h5")


def fix_hint(path: Path) -> str:
    """What recomputes a gradient file, from where it lies in the store."""
    place = place_of(path)
    if place is not None and place.kind == PRODUCED:
        flag = "" if place.dtype == "float64" else f" --dtype {place.dtype}"
        return f"; recompute it with `weanj run {place.example} {path.stem}{flag}` or delete it"
    if place is not None and place.kind == RECORDED:
        return "; re-record it (docs: Recording a reference gradient) or delete it"
    return "; write it again or delete it"
