"""`weanj clean [EXAMPLE...] [--yes]`: remove the results weanj wrote for variants and
examples the project no longer registers (docs/verdicts.md, "Stale results").

No command judges those files (`_cases.unregistered`); each says once how many it ignored
and where. `weanj clean` lists what it would remove and, like `git clean -f`, removes it
only when told to (`--yes`, `yes=True`, or `CI=true` in the environment): the gradient
files a weanj evaluation wrote for a variant no longer registered and its evaluation
records, and, for an example no longer registered, those and its `check.json`, then the
folders that leaves empty. A file goes only if it carries weanj's mark naming that
example (and variant), where weanj writes it (`_pipeline.records._stale`): committed references
(`recorded/`), benchmark records, cases, pictures, a user's own files (a gradient saved
with `weanj.save_gradient`, any file weanj did not write) and copies of an example's
folder are never removed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from .._errors import say
from .._model import Catalog
from .._pipeline.records._stale import remove, stale_results
from .._places import places


def told_to_remove(yes: bool) -> bool:
    """`--yes`, or a CI job (`CI=true`, which GitHub Actions, GitLab and most others set),
    where nobody is there to answer."""
    return yes or os.environ.get("CI", "").strip().lower() == "true"


def clean(
    cats: Sequence[Catalog],
    *,
    whole_project: bool,
    yes: bool = False,
    dry_run: bool = False,
    say: Callable[[str], None] = say,
) -> list[Path]:
    """List the stale results (module docstring) of the examples of `cats`, and remove
    them with `yes` (or `CI=true`); `dry_run` (the old flag) only lists them, whatever
    else says. `whole_project`: `cats` are every registered example (no example named),
    and the folders of examples no longer registered are looked at too.
    **Returns:** the files removed (or that would be)."""
    here = places()
    stale = stale_results(here, cats, whole_project=whole_project)
    for line in stale.kept:
        say(f"weanj clean: {line}")
    if not stale.files:
        say("weanj clean: nothing to remove (every result weanj wrote is of a registered variant)")
        return []
    removing = told_to_remove(yes) and not dry_run
    n = len(stale.files)
    if removing:
        say(f"weanj clean: removing {n} file(s):")
    else:
        say(f"weanj clean: would remove {n} file(s) (run `weanj clean --yes` to remove them):")
    for path, why in sorted(stale.files):
        say(f"  {here.shown(path)}  ({why})")
    for folder in stale.folders:
        say(f"  {here.shown(folder)}/  (left empty)")
    if removing:
        files, folders = remove(stale)
        say(
            f"weanj clean: removed {files} file(s) and {folders} emptied folder(s); "
            "recorded/ references and files weanj did not write are kept"
        )
    return [path for path, _ in stale.files]
