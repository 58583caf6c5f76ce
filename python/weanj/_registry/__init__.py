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

import sys
from collections.abc import Callable
from typing import Any

from .. import _x64
from .._context import Registry, current, loose, record
from .._errors import DefinitionError, InputError, UnavailableError, wrapped
from .._model import Catalog, Example, Expected, Variant
from .._project import ProjectConfig, in_a_project, project_config
from ._loading import load
from ._names import suggest, unknown_example, unknown_variant
from ._reloading import reload_changed


def _table() -> Registry:
    """The registry of the current project (`_context.current`), as it stands."""
    return current().registry


def _loaded() -> Registry:
    """The registry of the current project, its modules imported (`_load`)."""
    load()
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
        load()  # a notebook's call: a name the project's modules take is refused here
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


def project() -> ProjectConfig:
    """The `ProjectConfig` of the current project, its registry loaded."""
    load()
    return current().config


# --- the front door: names to objects ----------------------------------------------------


def example_names() -> list[str]:
    """The names of all examples of the current project."""
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
        tables = {ex: registry.variants.get(ex, {}) for ex in registry.examples}
        # the project as it is now: the folder a user would look in
        raise unknown_example(name, project_config(), tables) from None


def refresh(say: Callable[[str], None] | None = None) -> list[str]:
    """The current project loaded, and its example modules whose code changed on disk
    since this process imported them reloaded (`_reloading`), saying so (`say`: default
    stderr): a check judges the code as it is now. **Returns** the modules reloaded."""
    load()
    return reload_changed(current(), *(() if say is None else (say,)))


def catalog(name: str | Example, *, fresh: bool = True) -> Catalog:
    """An example with its variants, kink declarations and fuzz strategies; with `fresh`,
    its project's changed modules reloaded first (`refresh`)."""
    if fresh:
        refresh()
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
                    f"{ex.name}{suggest(name, table)}"
                )
        if e.against is not None and table[e.against].family != table[e.variant].family:
            raise DefinitionError(
                f"{ex.name}: weanj.Expected pairs {e.variant} with {e.against}, which are not "
                "of one family (pairs across families are for information only)"
            )
        if e.array is not None and e.array not in (*ex.wrt_names, *ex.outputs):
            outputs = f"; its outputs {', '.join(ex.outputs)}" if ex.outputs else ""
            raise DefinitionError(
                f"{ex.name}: weanj.Expected names array {e.array!r}; the gradient arrays are "
                f"{', '.join(ex.wrt_names)}{outputs}"
            )
    return found


def catalogs(names: list[str] | tuple[str, ...] | str | None = None) -> list[Catalog]:
    """The catalogs of the examples named (default: every example of the project), in the
    order given; an unknown name is one error listing the known ones, before any work."""
    if isinstance(names, str):
        names = [names]
    refresh()
    chosen = list(names) if names else example_names()
    return [catalog(n, fresh=False) for n in dict.fromkeys(chosen)]


def registered_variant(example_name: str | Example, name: str) -> Variant:
    """The registered variant (available or not); unknown names list the known ones."""
    ex = example(example_name)
    table = _table().variants[ex.name]
    try:
        return table[name]
    except (KeyError, TypeError):
        raise unknown_variant(name, ex.name, table) from None


def variant(example_name: str | Example, name: str) -> Variant:
    """The `Variant` `name` of an example, with `.loss`, `.grad` and `.jvp`.

    Unknown names raise an error listing the known ones; a registered variant whose
    backend is missing here raises `UnavailableError` saying what to install.
    """
    from .._arguments import example_name as an_example
    from .._arguments import variant_name

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
