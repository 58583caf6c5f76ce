"""The project context: what a process knows of each project it opens (docs/DESIGN.md,
"One project context").

A `Project` holds one project's configuration (`[tool.weanj]`), the `Registry` of what its
example modules register (examples, variants, kink declarations, fuzz strategies, which
module registered which variant), each module's x64 as that configuration decides it, and
the project's caches. Every front end (the command line, `weanj.check()` in a notebook,
`pytest --weanj`, a Dask worker) works in the project of its root (`current()`: the folder
it stands in, or `$WEANJ_ROOT`), so that a notebook that changes from one project to
another judges the other's examples. Registration writes into the project being loaded,
or, from a notebook's cell, into the current one.

A registry is what a set of modules registers, and is shared by the projects that load
the same modules from the same places (`Registry.key`): the roots that hold weanj's
built-in gallery share one, whatever folder they are; two user projects whose modules are
both called `kernels.heat` do not (each imports its own, the other's hidden meanwhile).

What lives for the whole process, and why, is only this module's table of the projects
and registries opened, with what each module registered as it was imported (a process
imports a module once: a second registry that loads it is given what it registered,
`replay`), and the project active in this thread of work (a context variable: the one
being loaded, or the one a front end works in).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ._model import Example, Variant
from ._project import BUILTIN, ProjectConfig, find_root, project_config
from ._x64 import X64


@dataclass
class Registry:
    """What one set of example modules registers (module docstring)."""

    key: tuple
    examples: dict[str, Example] = field(default_factory=dict)
    variants: dict[str, dict[str, Variant]] = field(default_factory=dict)
    # {(example, frozenset({a, b})): why}: same-family pairs documented to differ at kinks
    at_kinks: dict[tuple[str, frozenset], str] = field(default_factory=dict)
    # {example name: [fn(draw) -> arrays]}: edge-case sources of `weanj fuzz`
    strategies: dict[str, list] = field(default_factory=dict)
    # {(example, variant): the module whose code registered it} (`_x64`, its x64)
    variant_module: dict[tuple[str, str], str] = field(default_factory=dict)
    modules: dict[str, ModuleType] = field(default_factory=dict)  # its own, where hidden
    # {example module: the digest of its code as imported} (`_sources.code_digest`): a
    # check reloads the modules whose code on disk is no longer that (`_registry._reloading`)
    digests: dict[str, str] = field(default_factory=dict)
    tracer: Any = None  # what each module's program did to x64 as it imported (`_x64_trace`)
    loaded: bool = False
    loading: str | None = None  # the module importing now

    def forget_example(self, name: str) -> None:
        """Remove an example and all it registered (a test or a notebook redefining it)."""
        self.examples.pop(name, None)
        self.variants.pop(name, None)
        self.strategies.pop(name, None)
        for key in [k for k in self.at_kinks if k[0] == name]:
            del self.at_kinks[key]
        for key in [k for k in self.variant_module if k[0] == name]:
            del self.variant_module[key]


@dataclass
class Project:
    """One project (module docstring): its configuration, its registry, its modules' x64
    and its caches."""

    config: ProjectConfig
    registry: Registry
    # {module: its X64, or None (the session's)}, decided once (`resolve`, `_x64_modules`)
    x64_modules: dict[str, X64 | None] = field(default_factory=dict)
    resolve: Callable[[str], X64 | None] | None = None
    # inputs files found to be what their generator writes: (example, sha256, code)
    fresh_inputs: set[tuple[str, str, str]] = field(default_factory=set)

    @property
    def root(self) -> Path:
        return Path(self.config.root)

    def x64_of(self, example: str, variant: str) -> X64 | None:
        """The x64 a variant's program has here (`_x64`, rules 1 and 2), or None (rule 3:
        the session's at each call)."""
        module = self.registry.variant_module.get((example, variant))
        if not module:
            return None
        if module not in self.x64_modules:
            resolve = self.resolve
            self.x64_modules[module] = resolve(module) if resolve is not None else None
        return self.x64_modules[module]

    @contextlib.contextmanager
    def active(self) -> Iterator[Project]:
        """While the block runs, this is the current project (`current`)."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


# --- the projects and registries of this process ----------------------------------------

_OPENED: dict[str, dict[Any, Any]] = {"projects": {}, "registries": {}, "modules": {}}
_ACTIVE: contextvars.ContextVar[Project | None] = contextvars.ContextVar(
    "weanj_project", default=None
)


def registry_key(config: ProjectConfig) -> tuple:
    """What makes two projects' registries one: the modules they load and where from (a
    module of weanj's own package from anywhere; a project's from its root and
    `pythonpath`), their entry points."""
    modules = tuple(BUILTIN) if config.builtin else ()
    own = tuple(m for m in config.examples if m not in BUILTIN) if config.pyproject else ()
    mine = tuple(m for m in config.examples if m in BUILTIN) if config.pyproject else ()
    where = (str(Path(config.root).resolve()), *map(str, config.pythonpath)) if own else ()
    return (modules + mine, own, where, config.entry_points)


def opened(config: ProjectConfig) -> Project:
    """The project of `config`'s root, opened once per process, with the registry its
    modules share with any project that loads the same ones (`registry_key`)."""
    root = str(Path(config.root).resolve())
    found = _OPENED["projects"].get(root)
    if found is None or found.config != config:
        key = registry_key(config)
        registry = _OPENED["registries"].get(key)
        if registry is None:
            registry = _OPENED["registries"][key] = Registry(key)
        found = _OPENED["projects"][root] = Project(config, registry)
    return found


def current() -> Project:
    """The project this work is in: the one active (being loaded, or the one a front end
    works in), else that of the current folder or `$WEANJ_ROOT` (`_project.find_root`);
    a `ProjectError` where there is none."""
    active = _ACTIVE.get()
    if active is not None:
        return active
    root, _ = find_root()
    found = _OPENED["projects"].get(str(root))
    if found is not None:
        return found
    return opened(project_config())


def program_x64(example: str, variant: str) -> X64 | None:
    """The setting a variant's program pins in the current project: what importing its
    module alone leaves, or the project's declaration (`_x64`, rules 1 and 2); None: the
    session's at each call (rule 3, and outside any project). Read by the JAX backend's
    configuration only."""
    from ._errors import ProjectError

    try:
        return current().x64_of(example, variant)
    except ProjectError:
        return None


def loose() -> Registry:
    """The registry of what is registered outside any project (a script in a folder with
    no `[tool.weanj]`): `weanj.taylor_test` and the variants' functions work there, no
    check does."""
    key = ("outside any project",)
    found = _OPENED["registries"].get(key)
    if found is None:
        found = _OPENED["registries"][key] = Registry(key, loaded=True)
    return found


def forget(project: Project) -> None:
    """Close a project as if this process had never opened it: it and its registry go
    (for tests that stand for a fresh process: `tests/projects.py`)."""
    _OPENED["projects"].pop(str(project.root.resolve()), None)
    if not any(p.registry is project.registry for p in _OPENED["projects"].values()):
        _OPENED["registries"].pop(project.registry.key, None)


@contextlib.contextmanager
def own_modules(registry: Registry, roots: tuple[Path, ...], module: str) -> Iterator[None]:
    """While a project imports `module`: the modules of its top package that another
    project imported from elsewhere are set aside, so that its own are imported; after,
    its own are kept in its registry and the others put back."""
    top = module.split(".")[0]
    theirs = {
        name: m
        for name, m in sys.modules.items()
        if (name == top or name.startswith(top + "."))
        and not _inside(getattr(m, "__file__", None), roots)
        and name not in registry.modules
    }
    if not theirs or top in ("weanj",):
        yield
        return
    for name in theirs:
        del sys.modules[name]
    try:
        yield
    finally:
        mine = {n: m for n, m in sys.modules.items() if n == top or n.startswith(top + ".")}
        registry.modules.update(mine)
        for name in mine:
            del sys.modules[name]
        sys.modules.update(theirs)


def _inside(path: str | None, roots: tuple[Path, ...]) -> bool:
    if not path:
        return True  # a namespace package: nobody's file
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(r) for r in roots)


# --- what importing each module registered ------------------------------------------------


def record(registry: Registry, what: tuple) -> None:
    """Note a registration made while `registry` loads a module (`what`: `("example",
    ex)`, `("variant", v, module)`, `("kinks", example, pair, why)` or `("strategy",
    example, fn)`), under that module and the module whose code made it."""
    from ._x64 import executing_module

    for module in {registry.loading, executing_module()} - {None, ""}:
        _OPENED["modules"].setdefault(_module_key(module), []).append(what)


def replay(registry: Registry, module: str) -> bool:
    """Give `registry` what importing `module` registered in another registry, where this
    process imported it already (from the same file): **Returns** whether there was a
    record to give."""
    found = _OPENED["modules"].get(_module_key(module))
    if found is None:
        return False
    for what in found:
        kind = what[0]
        if kind == "example" and what[1].name not in registry.examples:
            registry.examples[what[1].name] = what[1]
            registry.variants.setdefault(what[1].name, {})
        elif kind == "variant":
            table = registry.variants.setdefault(what[1].example.name, {})
            table.setdefault(what[1].name, what[1])
            registry.variant_module.setdefault((what[1].example.name, what[1].name), what[2])
        elif kind == "kinks":
            registry.at_kinks.setdefault((what[1], what[2]), what[3])
        elif kind == "strategy":
            fns = registry.strategies.setdefault(what[1], [])
            if what[2] not in fns:
                fns.append(what[2])
    return True


def registered_by(modules: set[str]) -> list[tuple]:
    """What importing `modules` registered, by whichever registry (`record`)."""
    return [
        what for (name, _), found in _OPENED["modules"].items() if name in modules for what in found
    ]


def attached_to(examples: set[str]) -> set[str]:
    """The modules that registered something on `examples` (a variant, a kink declaration,
    a strategy), by their names: a module that names an example by its name rather than
    importing it is among them."""
    out = set()
    for (name, _), found in _OPENED["modules"].items():
        for what in found:
            on = what[1].example.name if what[0] == "variant" else getattr(what[1], "name", what[1])
            if on in examples:
                out.add(name)
    return out


def withdraw(registry: Registry, modules: set[str]) -> set[str]:
    """Take back from `registry` whatever importing `modules` registered, and forget the
    records of it (they import anew, or are replayed from the records their next import
    makes): **Returns** the examples withdrawn."""
    found = registered_by(modules)
    examples = {what[1].name for what in found if what[0] == "example"}
    for name in examples:
        registry.forget_example(name)
    for what in found:
        if what[0] == "variant":
            example, name = what[1].example.name, what[1].name
            registry.variants.get(example, {}).pop(name, None)
            registry.variant_module.pop((example, name), None)
        elif what[0] == "kinks":
            registry.at_kinks.pop((what[1], what[2]), None)
        elif what[0] == "strategy" and what[2] in registry.strategies.get(what[1], ()):
            registry.strategies[what[1]].remove(what[2])
    for key in [k for k in _OPENED["modules"] if k[0] in modules]:
        del _OPENED["modules"][key]
    return examples


def sharing(registry: Registry) -> list[Project]:
    """The projects opened in this process whose registry is `registry`."""
    return [p for p in _OPENED["projects"].values() if p.registry is registry]


def _module_key(module: str) -> tuple[str, str]:
    """A module by its name and its file (two projects' `kernels.heat` are two)."""
    found = sys.modules.get(module)
    return module, str(getattr(found, "__file__", "") or "")
