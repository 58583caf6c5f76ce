"""A check judges the code on disk (docs/rechecking.md, "In a notebook").

A process imports a project's example modules once; a notebook that edits one and calls
`weanj.check()` again would be judged on the functions of before the edit (and the
evaluation records, keyed on the code as imported, would even be reused). So the front
door's lookups (`catalogs`, `catalog`) first compare each example module's code digest as
imported (`Registry.digests`, `_sources.code_digest`: the module and every file of the
project it reaches) with the code on disk, and reload the modules that differ:

1. the changed modules, and the modules that register on their examples (a variant
   attached by the example's name, which no import shows), are the ones reloaded;
2. what importing them registered is withdrawn from the registry (`_context.withdraw`),
   and the modules of the project they reach are forgotten (`sys.modules`, and the
   registry's own where another project's were in the way), so that an edited helper is
   executed anew too;
3. they import again, in the project's order, as the registry first imported them: into
   the project being loaded, their imports traced for x64 (`_x64_modules`), whose
   decisions are then made afresh.

A module that no longer imports is one line (`ProjectError`, its registrations withdrawn);
it, and those after it that had to be imported again, stay withdrawn and marked as
changed, so the next lookup tries them again. Weanj's built-in examples
and installed packages are not the project's code (their digest is weanj's, or none) and
are never reloaded.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from .._context import Project, attached_to, registered_by, sharing, withdraw
from .._errors import say as stderr
from .._sources import PACKAGE, code_digest, reachable_files
from .._x64_modules import settle as settle_x64
from ._loading import import_example_module, modules_to_load
from ._names import keep as keep_names


def changed(project: Project) -> dict[str, str]:
    """`{module: where it is listed}` of the project's example modules whose code on disk
    is not the code this process imported, with those that register on their examples."""
    registry, roots = project.registry, project.config.roots
    listed = dict(modules_to_load(project.config))
    found = {
        m for m in listed if m in registry.digests and code_digest(m, roots) != registry.digests[m]
    }
    while found:
        examples = {what[1].name for what in registered_by(found) if what[0] == "example"}
        more = (attached_to(examples) & set(listed)) - found
        if not more:
            break
        found |= more
    return {m: where for m, where in listed.items() if m in found}


def reload_changed(project: Project, say: Callable[[str], None] = stderr) -> list[str]:
    """Reload the project's example modules whose code changed on disk (module
    docstring), saying so in one line; **Returns** their names (none: nothing changed)."""
    registry = project.registry
    if not registry.loaded or registry.loading:
        return []
    stale = changed(project)
    if not stale:
        return []
    withdraw(registry, set(stale))
    _forget(project, set(stale))
    for module in stale:  # withdrawn: changed until its import is done (which says its code)
        registry.digests[module] = ""
    names = ", ".join(stale)
    say(
        f"weanj: note: reloading {names}: changed on disk since this process imported "
        f"{'it' if len(stale) == 1 else 'them'} (the check judges the code as it is now)"
    )
    try:
        with project.active(), registry.tracer.tracing():
            for module, where in stale.items():
                import_example_module(module, where)
        keep_names(project.config, registry, list(dict(modules_to_load(project.config))))
    finally:  # each module's x64 decided afresh, in every project of this registry
        for other in sharing(registry):
            other.x64_modules.clear()
        settle_x64(project, set(dict(modules_to_load(project.config))))
    return list(stale)


def _forget(project: Project, modules: set[str]) -> None:
    """Forget the modules the project's files hold that `modules` reach (themselves
    included): their next import executes them anew, from their source. The
    interpreter's cached bytecode of those files goes too: Python takes a cache as fresh
    when the source's size and the second of its last change match it, which an edit
    made within a second of the last one (a notebook's cell that writes the file) keeps."""
    roots = project.config.roots
    files = {p for m in modules for p in reachable_files(m, roots, PACKAGE)}
    for table in (sys.modules, project.registry.modules):
        for name in [n for n, m in table.items() if _file(m) in files or n in modules]:
            del table[name]
    for path in files:
        with contextlib.suppress(OSError, ValueError, NotImplementedError):
            Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)
    importlib.invalidate_caches()  # a file the edit added is found


def _file(module) -> Path | None:
    """Where a module's code is, or None (a namespace or built-in module, or one whose
    `__file__` is not a path)."""
    try:
        found = getattr(module, "__file__", None)
        return Path(found).resolve() if isinstance(found, str) and found else None
    except (OSError, ValueError, RuntimeError):
        return None
