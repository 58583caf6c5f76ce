"""Results no longer of the project: files a weanj run wrote for variants or examples that
are no longer registered. `weanj check` (and every command reading the store) names them
once and never judges them; `weanj clean` removes them.

What goes is decided from each file's contents, never from names alone (`_io._marks`): a
file is stale only if it carries weanj's mark, the mark names the example whose folder it
lies in (`results/<example>/...`), in the place weanj writes it, and that example, or the
variant the mark names, is no longer registered. So a user's own file is never taken (a
foreign HDF5, a JSON, an `.npz`, a notebook, a gradient saved with `weanj.save_gradient`),
nor a copy of an example's folder under another name (`results/11-smooth.bak/`: its files
name `11-smooth`, not the folder they are in; said in one line), nor a committed
reference, a benchmark record, a case or a picture. Nothing is followed through a link: a
`results/` that leads outside the project is refused, and links inside it are left alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..._errors import InputFileError
from ..._io._marks import Mark, mark_of
from ..._model import Catalog
from ..._places import CHECK_FILE, PRODUCED, Places

_EVALUATIONS = "evaluations"


@dataclass
class Stale:
    """What `weanj clean` would remove: `files` (path, why), the `folders` that removing
    them leaves empty (deepest first), and `kept`: lines about what looked like an
    example's results but is left alone, and why."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def real_results(here: Places) -> Path | None:
    """`results/`, if it is a folder inside the project (through links that stay inside);
    None if there is none; an `InputFileError` if it leads outside the project."""
    results = here.results
    if not results.is_dir():
        return None
    real, root = Path(os.path.realpath(results)), Path(os.path.realpath(here.root))
    if root not in real.parents:
        raise InputFileError(
            f"refusing to clean {results}: it leads to {real}, outside the project "
            f"{here.root}; weanj removes nothing outside it"
        )
    return results


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _candidates(folder: Path, with_check: bool) -> list[tuple[Path, str]]:
    """`(file, dtype of its store folder)` for the files a run of an example leaves in
    `folder` (its `results/<example>/`): store files, evaluation records, `check.json`."""
    out: list[tuple[Path, str]] = [(folder / CHECK_FILE, "")] if with_check else []
    store = folder / PRODUCED
    for sub, dtype in ((store, "float64"), (store / "float32", "float32")):
        if _real_dir(store) and _real_dir(sub):  # never through a link, at either level
            out += [(p, dtype) for p in sorted(sub.glob("*.h5"))]
    if _real_dir(folder / _EVALUATIONS):
        out += [(p, "") for p in sorted((folder / _EVALUATIONS).glob("*.npz"))]
    return [(p, d) for p, d in out if p.is_file() and not p.is_symlink()]


def _in_place(mark: Mark, path: Path, dtype: str) -> bool:
    """Whether a marked file lies where weanj writes a file of that mark: a gradient an
    evaluation wrote at `gradients/[float32/]<variant>.h5`, a record at
    `evaluations/<variant>[@float32].npz`, the example's `check.json`."""
    if mark.kind == "gradient":
        return mark.evaluation and path.stem == mark.variant and mark.dtype == dtype
    if mark.kind == "record":
        label = mark.variant if mark.dtype == "float64" else f"{mark.variant}@{mark.dtype}"
        return path.parent.name == _EVALUATIONS and path.stem == label
    return mark.kind == "check" and path.name == CHECK_FILE


def _gone(cat: Catalog, variant: str | None) -> bool:
    return variant is not None and cat.find(variant) is None and variant not in cat.left_out


def stale_results(
    here: Places,
    cats: Sequence[Catalog],
    *,
    whole_project: bool,
    registered: Sequence[str] = (),
    first_only: bool = False,
) -> Stale:
    """What `weanj clean` removes (module docstring) for the examples of `cats`;
    `whole_project`: the folders of examples no longer registered (neither in `cats` nor
    named in `registered`) are looked at too. `first_only`: stop each folder at its first
    stale file (enough to name the folder)."""
    found = Stale()
    results = real_results(here)
    if results is None:
        return found
    named = {cat.name: cat for cat in cats}
    for folder in sorted(results.iterdir()):
        if folder.name.startswith(".") or not _real_dir(folder):
            continue
        cat = named.get(folder.name)
        if cat is None and (not whole_project or folder.name in registered):
            continue
        ours = []
        foreign: set[str] = set()
        for path, dtype in _candidates(folder, with_check=cat is None):
            mark = mark_of(path)
            if mark is None or not _in_place(mark, path, dtype):
                continue  # not weanj's, or not where weanj writes it: never taken
            if mark.example != folder.name:
                foreign.add(str(mark.example))
            elif cat is None:
                ours.append((path, f"{folder.name}: an example no longer registered"))
            elif _gone(cat, mark.variant):
                ours.append((path, f"{cat.name}: {mark.variant}, a variant no longer registered"))
            if first_only and ours:
                break
        if foreign:
            found.kept.append(
                f"left alone {here.shown(folder)}: it holds results of "
                f"{', '.join(sorted(foreign))}, not in that example's own folder (a copy?); "
                "remove it yourself if you no longer want it"
            )
        found.files += ours
        if cat is None and ours:
            found.folders += _emptied(folder, {p for p, _ in ours})
    return found


def _emptied(folder: Path, doomed: set[Path]) -> list[Path]:
    """The folders under (and including) `folder` that hold nothing but `doomed` files and
    such folders, deepest first: what removing `doomed` leaves empty."""
    out: list[Path] = []

    def empty_after(d: Path) -> bool:
        try:
            entries = list(d.iterdir())
        except OSError:
            return False
        ok = True
        for e in entries:
            if _real_dir(e):
                ok = empty_after(e) and ok
            elif e not in doomed:
                ok = False
        if ok:
            out.append(d)
        return ok

    empty_after(folder)
    return out


def remove(stale: Stale) -> tuple[int, int]:
    """Remove the stale files, then the folders that leaves empty (`os.rmdir`: never one
    holding anything). **Returns** how many files and folders went."""
    files = folders = 0
    for path, _ in stale.files:
        try:
            os.unlink(path)  # a link is never listed: this removes the file itself
            files += 1
        except FileNotFoundError:
            pass
    for folder in stale.folders:
        try:
            os.rmdir(folder)
            folders += 1
        except OSError:  # something appeared in it since: it stays
            pass
    return files, folders


def orphans_note(here: Places, registered: Sequence[str]) -> str | None:
    """The line `weanj check` says once about examples no longer registered, or None."""
    try:
        stale = stale_results(here, [], whole_project=True, registered=registered, first_only=True)
    except InputFileError:
        return None
    folders = sorted({path.relative_to(here.results).parts[0] for path, _ in stale.files})
    if not folders:
        return None
    shown = ", ".join(here.shown(here.results / name) for name in folders)
    return (
        f"ignored the results of {len(folders)} example(s) no longer registered ({shown}); "
        "`weanj clean --yes` removes their gradients, evaluations and check.json"
    )
