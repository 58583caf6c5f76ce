"""`weanj clean [EXAMPLE...] [--dry-run]`: remove what the store holds for variants and
examples the project no longer registers (docs/verdicts.md, "Stale results").

No command judges those files (`_cases.unregistered`); each says once how many it ignored
and where. `weanj clean` says what it will remove, then removes it: the gradient files a
weanj evaluation wrote for a variant no longer registered and its evaluation records
(never reused: their key names the variant), and, for an example no longer
registered, its `gradients/`, `evaluations/` and `check.json`. Committed references
(`recorded/`), benchmark records, cases and a user's own gradient files
(`weanj.save_gradient`) are never removed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from .._errors import say
from .._model import Catalog
from .._pipeline._stale import unregistered_examples, unregistered_variant_files
from .._places import places


def clean(
    cats: Sequence[Catalog],
    *,
    whole_project: bool,
    dry_run: bool = False,
    say: Callable[[str], None] = say,
) -> list[Path]:
    """Remove the stale results (module docstring) of the examples of `cats`, saying first
    what goes; with `dry_run`, only say it. `whole_project`: `cats` are every registered
    example (no example named), and the folders of examples no longer registered go too.
    **Returns:** the paths removed (or that would be)."""
    here = places()
    doomed: list[tuple[Path, str]] = []
    for cat in cats:
        for path in unregistered_variant_files(cat, here):
            doomed.append((path, f"{cat.name}: {path.stem}, a variant no longer registered"))
    if whole_project:
        registered = sorted(cat.name for cat in cats)
        for name, paths in unregistered_examples(here, registered).items():
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
