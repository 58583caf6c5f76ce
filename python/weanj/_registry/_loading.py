"""Loading a project's example modules into its registry (`_context`): the modules its
`[tool.weanj]` table lists (after its `pythonpath`), weanj's built-ins where asked for, and
the installed packages' `weanj.examples` entry points it names, each imported as its own
program (its x64 learnt as it imports: `_x64_modules`), once per registry.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys

from .. import _x64
from .._context import current, own_modules, replay
from .._errors import ProjectError, WeanjError, with_list
from .._interrupts import CalledExit, guarded_import
from .._project import BUILTIN, ProjectConfig
from .._sources import code_digest
from .._x64_modules import settle as settle_x64
from .._x64_modules import start_of, tracer
from ._names import keep as keep_names


def import_example_module(module: str, where: str) -> None:
    """Import one module that registers examples, into the current project (the one being
    loaded); any failure (an exception, `sys.exit`, `os._exit`) is one line naming it,
    and whatever it registered is taken back. A module imports from its program's start
    (`_x64.importing`: the declared setting, else the interpreter's), and the process's
    setting is put back; what its program leaves is learnt from the imports its
    registry's tracer records (`_x64_modules`). A module of the same name another project
    imported from elsewhere is set aside meanwhile (`_context.own_modules`)."""
    project = current()
    registry, config = project.registry, project.config
    before = {name: dict(table) for name, table in registry.variants.items()}
    kinks_before = dict(registry.at_kinks)
    roots = config.roots
    registry.loading = module
    try:
        start = start_of(module, config)
        with _x64.importing(start), guarded_import() as interrupted:
            with own_modules(registry, roots, module):
                try:
                    if module not in sys.modules or not replay(registry, module):
                        importlib.import_module(module)
                except KeyboardInterrupt:
                    if interrupted.is_set():
                        raise
                    raise ProjectError(
                        f"example module {module!r} ({where}) raised KeyboardInterrupt on import"
                    ) from None
    except BaseException as e:
        for name in set(registry.examples) - set(before):
            registry.forget_example(name)
        for name, table in before.items():
            registry.variants[name] = table
        registry.at_kinks.clear()
        registry.at_kinks.update(kinks_before)
        sys.modules.pop(module, None)
        raise import_error(module, where, e) from None
    finally:
        registry.loading = None
    digest = code_digest(module, roots)  # as imported: the records' key, and a reload's
    registry.digests[module] = digest
    for name in set(registry.examples) - set(before):
        object.__setattr__(registry.examples[name], "code", digest)


def modules_to_load(config: ProjectConfig) -> list[tuple[str, str]]:
    modules: list[tuple[str, str]] = []
    if config.builtin:
        modules += [(m, "weanj's built-in examples") for m in BUILTIN]
    if config.pyproject is not None:
        # the project's modules import from its root, after its pythonpath folders
        for folder in (*config.pythonpath[::-1], config.root):
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        modules += [(m, f"[tool.weanj] of {config.pyproject}") for m in config.examples]
    if config.entry_points:
        wanted = None if config.entry_points is True else set(config.entry_points)
        found = {ep.name: ep for ep in importlib.metadata.entry_points(group="weanj.examples")}
        missing = sorted((wanted or set()) - set(found))
        if missing:
            raise ProjectError(
                with_list(
                    f"{config.pyproject}: [tool.weanj] entry-points names {', '.join(missing)}, "
                    "which no installed package provides",
                    "installed",
                    sorted(found),
                )
            )
        for name, ep in sorted(found.items()):
            if wanted is None or name in wanted:
                where = f"entry point {name!r} of group weanj.examples"
                modules.append((ep.value.partition(":")[0], where))
    return modules


def load() -> None:
    """Import the current project's example modules, once per registry (module
    docstring), each into it (the project active while they import)."""
    project = current()
    registry = project.registry
    if registry.loaded or registry.loading:
        if project.resolve is None and registry.loaded:  # another root's, same modules
            settle_x64(project, {m for m, _ in modules_to_load(project.config)})
        return
    seen = set()
    if registry.tracer is None:
        registry.tracer = tracer()
    with project.active(), registry.tracer.tracing():  # what each module does to x64
        for module, where in modules_to_load(project.config):
            if module not in seen:
                seen.add(module)
                import_example_module(module, where)
    registry.loaded = True
    settle_x64(project, seen)
    listed = [m for m, _ in modules_to_load(project.config)]
    keep_names(project.config, registry, listed)  # the command line's refusals before JAX


def import_error(module: str, where: str, e: BaseException) -> BaseException:
    """The one-line error for an example module that failed to import (`_registry` loads
    them), or the interrupt itself."""
    if isinstance(e, (KeyboardInterrupt, ProjectError)):
        return e
    if isinstance(e, (SystemExit, CalledExit)):
        how = str(e) if isinstance(e, CalledExit) else f"called sys.exit({e.code!r})"
        return ProjectError(
            f"example module {module!r} ({where}) {how} on import; an example module must "
            "only register examples"
        )
    if not isinstance(e, Exception):
        return e
    if isinstance(e, ModuleNotFoundError) and e.name and module.startswith(e.name):
        return ProjectError(
            f"cannot import example module {module!r} listed in {where}: no module "
            f"named {e.name!r} (is it importable from the project root, or from a folder of "
            "[tool.weanj] pythonpath?)"
        )
    first = (str(e).strip().splitlines() or [""])[0][:160]
    what = first if isinstance(e, WeanjError) else f"{type(e).__name__}: {first}"
    return ProjectError(f"example module {module!r} ({where}): {what}")
