"""The tables of examples and variants, filled by the project's example modules, and the
front door's lookups.

Examples and variants are data: adding a variant is one decorated function beside its
siblings. Which examples exist depends on the project (`_project.project_config`): the
modules listed in its `[tool.weanj]` table (after its `pythonpath`), weanj's built-ins
where asked for, and the installed packages' `weanj.examples` entry points it names. They
are imported on the first lookup, so `import weanj` stays light.

The front ends (command line, pytest plugin, Python API) turn names into objects here,
once: `catalogs(names)` gives each example with its variants, kink declarations and fuzz
strategies (`Catalog`), and nothing below them looks a name up again.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import _x64
from ._context import Registry, current, loose, own_modules, record, replay
from ._errors import (
    DefinitionError,
    InputError,
    ProjectError,
    UnavailableError,
    UnknownNameError,
    with_list,
    wrapped,
)
from ._interrupts import guarded_import
from ._model import Catalog, Example, Expected, Variant
from ._project import BUILTIN, ProjectConfig, import_error, in_a_project, project_config
from ._sources import code_digest
from ._x64_modules import settle as settle_x64
from ._x64_modules import start_of, tracer


def _table() -> Registry:
    """The registry of the current project (`_context.current`), as it stands."""
    return current().registry


def _loaded() -> Registry:
    """The registry of the current project, its modules imported (`_load`)."""
    _load()
    return current().registry


def example_of(example: Example | str) -> Example:
    """The registered `Example` an argument names (an `Example` or its name), for the
    variant constructors while an example module imports."""
    if isinstance(example, Example):
        return example
    if isinstance(example, str) and example in _table().examples:
        return _table().examples[example]
    raise DefinitionError(
        f"a variant names example {getattr(example, 'name', example)!r}, which is not "
        "registered; register the example first (weanj.register_example)"
    )


def register_example(example: Example) -> Example:
    """Add an example to the registry; a second example of the same name is an error."""
    if not isinstance(example, Example):
        raise DefinitionError(f"register_example takes a weanj.Example, got {type(example)}")
    table = _table() if in_a_project() else loose()
    if not table.loaded and not table.loading and not _at_import() and in_a_project():
        _load()  # a notebook's call: a name the project's modules take is refused here
    if (previous := table.examples.get(example.name)) is not None:
        by = f" (first by module {previous.module})" if previous.module else ""
        raise DefinitionError(f"register_example: example {example.name!r} is registered twice{by}")
    if not example.module:
        object.__setattr__(example, "module", table.loading or _caller_module())
    table.examples[example.name] = example
    table.variants[example.name] = {}
    if table.loading:
        record(table, ("example", example))
    return example


def register_variant(variant: Variant) -> Variant:
    """Add a variant to the registry; its example must be registered, its name new."""
    if not isinstance(variant, Variant):
        raise DefinitionError(f"register_variant takes a weanj.Variant, got {type(variant)}")
    name = variant.example.name
    registry = _table() if in_a_project() else loose()
    if registry.examples.get(name) is not variant.example:
        raise DefinitionError(
            f"variant {variant.name!r} names example {name!r}, which is not registered; "
            "register the example first (weanj.register_example)"
        )
    table = registry.variants[name]
    if variant.name in table:
        raise DefinitionError(f"variant {variant.name!r} of {name} is registered twice")
    table[variant.name] = variant
    # the module whose code registers it, whoever imported that module: its x64 is what
    # importing it alone leaves, or the project's declaration (`_x64`, rules 1 and 2)
    module = _x64.executing_module()
    registry.variant_module[(name, variant.name)] = module
    if registry.loading:
        record(registry, ("variant", variant, module))
    return variant


def unregister_example(name: str) -> None:
    """Remove an example and its variants (for tests and notebooks that redefine one)."""
    _table().forget_example(name)


def differ_at_kinks(example: Example | str, a: str, b: str, *, why: str) -> None:
    """Declare that variants `a` and `b` (one family) may differ at the example's kinks.

    A pair of ports that differentiates a kink by different conventions (Julia's `min`
    and JAX's `jnp.minimum` at a tie) computes the same function but not the same
    gradient there. Declared, the pair must still agree under the tolerance policy on
    every entry its example's kink mask (`FDPolicy.mask`) keeps; where it differs only
    at the kinks, the judge's verdict is `kinks` with the count and places, not FAIL.
    """
    ex = example_of(example)
    if ex.fd.mask is None:
        raise DefinitionError(f"{ex.name}: differ_at_kinks needs an FDPolicy mask (the kinks)")
    table = _table().variants[ex.name]
    for name in (a, b):
        if not isinstance(name, str) or name not in table:
            raise DefinitionError(f"differ_at_kinks: {name!r} is not a variant of {ex.name}")
    if table[a].family != table[b].family:
        raise DefinitionError(f"differ_at_kinks: {a} and {b} are not of one family")
    if not isinstance(why, str) or "\n" in why:
        raise DefinitionError(f"differ_at_kinks: why must be one line saying why, got {why!r}")
    registry = _table()
    registry.at_kinks[(ex.name, frozenset((a, b)))] = why
    if registry.loading:
        record(registry, ("kinks", ex.name, frozenset((a, b)), why))


def fuzz_strategy(example: Any, fn: Callable | None = None):
    """Register `fn(draw) -> {name: value}`, a source of edge-case inputs for `weanj fuzz`.

    `draw` is Hypothesis's (`draw(strategy) -> value`); `fn` returns every array of the
    example, and may add parameter values (the others are drawn as usual). Inputs the
    example's `validate` refuses are discarded. Usable as a decorator,
    `@weanj.fuzz_strategy(ex)`; `example` is an `Example` or its name.
    """
    name = example if isinstance(example, str) else getattr(example, "name", None)
    if not isinstance(name, str):
        raise DefinitionError(f"fuzz_strategy needs an Example or its name, got {example!r}")

    def register(f: Callable) -> Callable:
        if not callable(f):
            raise DefinitionError(f"fuzz_strategy({name!r}, fn): fn must be callable, got {f!r}")
        registry = _table()
        registered = registry.strategies.setdefault(name, [])
        if f not in registered:
            registered.append(f)
            if registry.loading:
                record(registry, ("strategy", name, f))
        return f

    return register if fn is None else register(fn)


def _at_import() -> bool:
    """Whether the registering code runs as its module imports (a project's module that a
    notebook imports before weanj loads the project: the project loads after it)."""
    spec = getattr(sys.modules.get(_caller_module()), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def _caller_module() -> str:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("weanj._"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""


# --- loading a project's example modules ------------------------------------------------


def _import_example_module(module: str, where: str) -> None:
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
    roots = (Path(config.root).resolve(), *config.pythonpath)
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
    for name in set(registry.examples) - set(before):  # as imported: the records' key
        object.__setattr__(registry.examples[name], "code", code_digest(module, roots))


def _modules_to_load(config: ProjectConfig) -> list[tuple[str, str]]:
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


def _load() -> None:
    """Import the current project's example modules, once per registry (module
    docstring), each into it (the project active while they import)."""
    project = current()
    registry = project.registry
    if registry.loaded or registry.loading:
        if project.resolve is None and registry.loaded:  # another root's, same modules
            settle_x64(project, {m for m, _ in _modules_to_load(project.config)})
        return
    seen = set()
    if registry.tracer is None:
        registry.tracer = tracer()
    with project.active(), registry.tracer.tracing():  # what each module does to x64
        for module, where in _modules_to_load(project.config):
            if module not in seen:
                seen.add(module)
                _import_example_module(module, where)
    registry.loaded = True
    settle_x64(project, seen)


def project() -> ProjectConfig:
    """The `ProjectConfig` of the current project, its registry loaded."""
    _load()
    return current().config


# --- the front door: names to objects ----------------------------------------------------


def _suggest(name: Any, known) -> str:
    if not isinstance(name, str):
        return ""
    close = [k for k in known if k.lower() == name.lower()]
    close = close or difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def example_names() -> list[str]:
    """The names of all examples of the current project."""
    _load()
    return sorted(_loaded().examples)


def example(name: str | Example) -> Example:
    """The `Example` called `name`; unknown names raise an error naming the project
    (its root and how it was found) and listing the known examples."""
    if isinstance(name, Example):
        return name
    registry = _loaded()
    try:
        return registry.examples[name]
    except (KeyError, TypeError):
        config = project_config()  # as it is now: the folder a user would look in
        tables = registry.variants.items()
        owners = [ex for ex, table in tables if isinstance(name, str) and name in table]
        hint = (
            f"; {name} is a variant of {owners[0]}: weanj check {owners[0]} --variants {name}"
            if owners
            else _suggest(name, registry.examples)
        )
        head = f"unknown example {name!r} in {config.describe()}{hint}"
        known = sorted(registry.examples)
        raise UnknownNameError(with_list(head, "known examples", known)) from None


def catalog(name: str | Example) -> Catalog:
    """An example with its variants, kink declarations and fuzz strategies."""
    ex = example(name)
    registry = _table()
    kinks = {pair: why for (owner, pair), why in registry.at_kinks.items() if owner == ex.name}
    variants = tuple(registry.variants[ex.name].values())
    return Catalog(
        ex,
        variants,
        kinks,
        tuple(registry.strategies.get(ex.name, ())),
        _declarations(ex, variants),
    )


def _declarations(ex: Example, variants: tuple[Variant, ...]) -> tuple[Expected, ...]:
    """The example's and its variants' `expected=`, each checked against the registry: the
    variants it names exist, a pair is of one family, the array is one of `wrt`."""
    table = {v.name: v for v in variants}
    found = (*ex.expected, *(e for v in variants for e in v.expected))
    for e in found:
        for name in (e.variant, e.against):
            if name is not None and name not in table:
                raise DefinitionError(
                    f"{ex.name}: weanj.Expected names {name!r}, which is not a variant of "
                    f"{ex.name}{_suggest(name, table)}"
                )
        if e.against is not None and table[e.against].family != table[e.variant].family:
            raise DefinitionError(
                f"{ex.name}: weanj.Expected pairs {e.variant} with {e.against}, which are not "
                "of one family (pairs across families are for information only)"
            )
        if e.array is not None and e.array not in ex.wrt_names:
            raise DefinitionError(
                f"{ex.name}: weanj.Expected names array {e.array!r}; the gradient arrays are "
                f"{', '.join(ex.wrt_names)}"
            )
    return found


def catalogs(names: list[str] | tuple[str, ...] | str | None = None) -> list[Catalog]:
    """The catalogs of the examples named (default: every example of the project), in the
    order given; an unknown name is one error listing the known ones, before any work."""
    if isinstance(names, str):
        names = [names]
    chosen = list(names) if names else example_names()
    return [catalog(n) for n in dict.fromkeys(chosen)]


def registered_variant(example_name: str | Example, name: str) -> Variant:
    """The registered variant (available or not); unknown names list the known ones."""
    ex = example(example_name)
    table = _table().variants[ex.name]
    try:
        return table[name]
    except (KeyError, TypeError):
        head = f"unknown variant {name!r} of {ex.name}{_suggest(name, table)}"
        raise UnknownNameError(with_list(head, "known variants", table)) from None


def variant(example_name: str | Example, name: str) -> Variant:
    """The `Variant` `name` of an example, with `.loss`, `.grad` and `.jvp`.

    Unknown names raise an error listing the known ones; a registered variant whose
    backend is missing here raises `UnavailableError` saying what to install.
    """
    from ._arguments import example_name as an_example
    from ._arguments import variant_name

    v = registered_variant(an_example(example_name, "variant"), variant_name(name, "variant"))
    reason = v.unavailable_reason()
    if reason is not None:
        raise UnavailableError(wrapped(f"variant {name!r} is unavailable here: {reason}"))
    return v


def find_variant(example_name: str | Example, name: str) -> Variant | None:
    """The registered variant or None, whether or not it is available here."""
    return _table().variants[example(example_name).name].get(name)


def variants(example_name: str | Example, *, available_only: bool = True) -> list[str]:
    """Names of the variants of an example that can run here (all with `available_only=False`)."""
    table, every = _table().variants[example(example_name).name], not available_only
    if not isinstance(available_only, bool):
        raise InputError(f"variants: available_only must be True or False, got {available_only!r}")
    return [n for n, v in table.items() if every or v.unavailable_reason() is None]


def unavailable_variants(example_name: str | Example) -> dict[str, str]:
    """`{variant name: reason}` for the variants of an example that cannot run here."""
    return catalog(example_name).unavailable()


def families(example_name: str | Example) -> dict[str, list[str]]:
    """`{family: [variant names]}` over all registered variants of an example."""
    return {f: [v.name for v in vs] for f, vs in catalog(example_name).families().items()}


def chosen_variants(cat: Catalog, names: list[str] | None) -> list[Variant]:
    """The registered variants named (default: all), each name checked (with a
    suggestion for a typo)."""
    if not names:
        return list(cat.variants)
    return [registered_variant(cat.example, n) for n in dict.fromkeys(names)]
