"""`weanj clean [EXAMPLE...] [--dry-run]`: remove what the store holds for variants and
examples the project no longer registers (docs/verdicts.md, "Stale results").

No command judges those files (`_cases.unregistered`); each says once how many it ignored
and where. `weanj clean` says what it will remove, then removes it: the gradient files a
weanj evaluation wrote for a variant no longer registered, and, for an example no longer
registered, its `gradients/`, `evaluations/` and `check.json`. Committed references
(`recorded/`), benchmark records, cases and a user's own gradient files
(`weanj.save_gradient`) are never removed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from .._errors import say
from .._io._gradient_files import scan_store
from .._model import Catalog
from .._places import CHECK_FILE, PRODUCED, Places, places
from .._registry import catalogs, example_names

# What a run of an example leaves that is of no use once the example is gone.
_RUN_OUTPUTS = (PRODUCED, "evaluations", CHECK_FILE)


def unregistered_variant_files(cat: Catalog, here: Places) -> list[Path]:
    """The store files of `cat`'s example that a weanj evaluation wrote for variants no
    longer registered (`_cases.unregistered`), whatever `--variants` selects."""
    from .._pipeline._cases import unregistered

    scan = scan_store(cat.example, here, recorded=False)
    found = []
    for g in scan.gradients:
        g.of = cat.find(g.variant)
        if g.of is None and g.variant not in cat.left_out and unregistered(g):
            found.append(g.path)
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


def clean(
    examples: Sequence[str] | None = None,
    *,
    dry_run: bool = False,
    say: Callable[[str], None] = say,
) -> list[Path]:
    """Remove the stale results (module docstring), saying first what goes; with
    `dry_run`, only say it. `examples`: only theirs (default: every registered example,
    and the folders of examples no longer registered). **Returns:** the paths removed (or
    that would be)."""
    here = places()
    cats = catalogs(examples)
    doomed: list[tuple[Path, str]] = []
    for cat in cats:
        for path in unregistered_variant_files(cat, here):
            doomed.append((path, f"{cat.name}: {path.stem}, a variant no longer registered"))
    if not examples:
        for name, paths in unregistered_examples(here, example_names()).items():
            doomed += [(path, f"{name}: an example no longer registered") for path in paths]
    if not doomed:
        say("weanj clean: nothing to remove (every stored result is of a registered variant)")
        return []
    verb = "would remove" if dry_run else "removing"
    say(f"weanj clean: {verb} {len(doomed)} path(s):")
    for path, why in doomed:
        say(f"  {here.shown(path)}  ({why})")
    if dry_run:
        return [path for path, _ in doomed]
    for path, _ in doomed:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    say(f"weanj clean: removed {len(doomed)} path(s); recorded/ references are kept")
    return [path for path, _ in doomed]
