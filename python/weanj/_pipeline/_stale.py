"""Results no longer of the project: store files a weanj evaluation wrote for variants
that are no longer registered, and the run outputs of examples no longer registered.
`weanj check` (and every command reading the store) names them once and never judges
them; `weanj clean` removes them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .._io._gradient_files import scan_store
from .._model import Catalog
from .._places import CHECK_FILE, PRODUCED, Places
from ._cases import unregistered

# What a run of an example leaves that is of no use once the example is gone.
_RUN_OUTPUTS = (PRODUCED, "evaluations", CHECK_FILE)


def unregistered_variant_files(cat: Catalog, here: Places) -> list[Path]:
    """The store files of `cat`'s example that a weanj evaluation wrote for variants no
    longer registered (`_cases.unregistered`), and their evaluation records
    (`evaluations/<variant>[@dtype].npz`: never reused, since the key names the variant),
    whatever `--variants` selects."""
    scan = scan_store(cat.example, here, recorded=False)
    found = []
    for g in scan.gradients:
        g.of = cat.find(g.variant)
        if g.of is None and g.variant not in cat.left_out and unregistered(g):
            found.append(g.path)
    folder = here.evaluations(cat.name)
    if folder.is_dir() and not folder.is_symlink():
        for record in sorted(folder.glob("*.npz")):
            name = record.stem.split("@")[0]
            if cat.find(name) is None and name not in cat.left_out and record.is_file():
                found.append(record)
    return found


def unregistered_examples(here: Places, registered: Sequence[str]) -> dict[str, list[Path]]:
    """`{folder name: [what a run of it left]}` for the folders of `results/` that hold an
    example's run outputs but name no registered example."""
    out: dict[str, list[Path]] = {}
    if not here.results.is_dir():
        return out
    for folder in sorted(here.results.iterdir()):
        if folder.name.startswith(".") or not folder.is_dir() or folder.is_symlink():
            continue
        if folder.name in registered:
            continue
        left = [folder / name for name in _RUN_OUTPUTS if (folder / name).exists()]
        if left:
            out[folder.name] = left
    return out


def orphans_note(here: Places, registered: Sequence[str]) -> str | None:
    """The line `weanj check` says once about examples no longer registered, or None."""
    found = unregistered_examples(here, registered)
    if not found:
        return None
    shown = ", ".join(here.shown(here.results / name) for name in found)
    return (
        f"ignored the results of {len(found)} example(s) no longer registered ({shown}); "
        "`weanj clean` removes their gradients, evaluations and check.json"
    )
