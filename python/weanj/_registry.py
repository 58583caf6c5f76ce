"""The tables of examples and variants, filled by the project's example modules.

Examples and variants are data: the tests, the command line, `weanj check`, the
benchmarks and the pytest plugin all iterate these tables, so adding a variant is one
decorated function beside its siblings. Which examples exist depends on the project
(`_project.project_config`): the modules listed in its `[tool.weanj]` table, weanj's
built-ins where asked for, and the installed packages' `weanj.examples` entry points it
names. They are imported on the first lookup, so `import weanj` stays light.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from ._errors import (
    DefinitionError,
    ProjectError,
    UnavailableError,
    UnknownNameError,
    WeanjError,
    with_list,
    wrapped,
)
from ._model import Example, Variant

_EXAMPLES: dict[str, Example] = {}
_VARIANTS: dict[str, dict[str, Variant]] = {}
# {(example, frozenset({a, b})): why}: same-family pairs documented to differ at kinks.
_AT_KINKS: dict[tuple[str, frozenset], str] = {}
# {example name: [fn(draw) -> arrays]}: edge-case sources of `weanj fuzz` (`fuzz_strategy`).
_STRATEGIES: dict[str, list] = {}
_state = {"loaded": False, "loading": None, "config": None}


def example_of(example: Example | str) -> Example:
    """The registered `Example` an argument names (an `Example` or its name)."""
    if isinstance(example, Example):
        return example
    if isinstance(example, str) and example in _EXAMPLES:
        return _EXAMPLES[example]
    raise DefinitionError(
        f"a variant names example {getattr(example, 'name', example)!r}, which is not "
        "registered; register the example first (weanj.register_example)"
    )


def register_example(example: Example) -> Example:
    """Add an example to the registry; a second example of the same name is an error."""
    if not isinstance(example, Example):
        raise DefinitionError(f"register_example takes a weanj.Example, got {type(example)}")
    previous = _EXAMPLES.get(example.name)
    if previous is not None:
        by = f" (first by module {previous.module})" if previous.module else ""
        raise DefinitionError(f"example {example.name!r} is registered twice{by}")
    if not example.module:
        object.__setattr__(example, "module", _state["loading"] or _caller_module())
    _EXAMPLES[example.name] = example
    _VARIANTS[example.name] = {}
    return example


def register_variant(variant: Variant) -> Variant:
    """Add a variant to the registry; its example must be registered, its name new."""
    if not isinstance(variant, Variant):
        raise DefinitionError(f"register_variant takes a weanj.Variant, got {type(variant)}")
    name = variant.example.name
    if _EXAMPLES.get(name) is not variant.example:
        raise DefinitionError(
            f"variant {variant.name!r} names example {name!r}, which is not registered; "
            "register the example first (weanj.register_example)"
        )
    table = _VARIANTS[name]
    if variant.name in table:
        raise DefinitionError(f"variant {variant.name!r} of {name} is registered twice")
    table[variant.name] = variant
    return variant


def unregister_example(name: str) -> None:
    """Remove an example and its variants (for tests and notebooks that redefine one)."""
    _EXAMPLES.pop(name, None)
    _VARIANTS.pop(name, None)
    _STRATEGIES.pop(name, None)
    for key in [k for k in _AT_KINKS if k[0] == name]:
        del _AT_KINKS[key]


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
    table = _VARIANTS[ex.name]
    for name in (a, b):
        if name not in table:
            raise DefinitionError(f"differ_at_kinks: {name!r} is not a variant of {ex.name}")
    if table[a].family != table[b].family:
        raise DefinitionError(f"differ_at_kinks: {a} and {b} are not of one family")
    _AT_KINKS[(ex.name, frozenset((a, b)))] = why


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
        registered = _STRATEGIES.setdefault(name, [])
        if f not in registered:
            registered.append(f)
        return f

    return register if fn is None else register(fn)


def strategies_of(example_name: str) -> list[Callable]:
    return list(_STRATEGIES.get(example_name, ()))


def kink_difference(example_name: str, a: str, b: str) -> str | None:
    """Why `a` and `b` may differ at the kinks of the example, or None (not declared)."""
    return _AT_KINKS.get((example_name, frozenset((a, b))))


def _caller_module() -> str:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("weanj._"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""


# --- loading a project's example modules ------------------------------------------------


class _Exit(BaseException):
    """`os._exit` called by a module while it is imported."""


@contextlib.contextmanager
def _guarded_import():
    """While an example module imports: `os._exit` raises instead of ending the process,
    and a real Ctrl-C is told apart from a module raising `KeyboardInterrupt` itself."""
    interrupted = threading.Event()
    real_exit = os._exit

    def refuse_exit(code=0):
        raise _Exit(code)

    def on_sigint(signum, frame):
        interrupted.set()
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main else None
    os._exit = refuse_exit
    try:
        yield interrupted
    finally:
        os._exit = real_exit
        if main:
            signal.signal(signal.SIGINT, previous)


def _import_example_module(module: str, where: str) -> None:
    """Import one module that registers examples; any failure (an exception, `sys.exit`,
    `os._exit`) is one line naming it, and whatever it registered is taken back."""
    before = {name: dict(table) for name, table in _VARIANTS.items()}
    kinks_before = dict(_AT_KINKS)
    _state["loading"] = module
    try:
        with _guarded_import() as interrupted:
            try:
                importlib.import_module(module)
            except KeyboardInterrupt:
                if interrupted.is_set():
                    raise
                raise ProjectError(
                    f"example module {module!r} ({where}) raised KeyboardInterrupt on import"
                ) from None
    except BaseException as e:
        for name in set(_EXAMPLES) - set(before):
            unregister_example(name)
        for name, table in before.items():
            _VARIANTS[name] = table
        _AT_KINKS.clear()
        _AT_KINKS.update(kinks_before)
        sys.modules.pop(module, None)
        raise _load_error(module, where, e) from None
    finally:
        _state["loading"] = None


def _load_error(module: str, where: str, e: BaseException) -> BaseException:
    """The one-line error for a module that failed to import (or the interrupt itself)."""
    if isinstance(e, (KeyboardInterrupt, ProjectError)):
        return e
    if isinstance(e, (SystemExit, _Exit)):
        how = "called os._exit" if isinstance(e, _Exit) else "called sys.exit"
        code = e.args[0] if e.args else 0
        return ProjectError(
            f"example module {module!r} ({where}) {how}({code!r}) on import; an example "
            "module must only register examples"
        )
    if not isinstance(e, Exception):
        return e
    if isinstance(e, ModuleNotFoundError) and e.name and module.startswith(e.name):
        return ProjectError(
            f"cannot import example module {module!r} listed in {where}: no module "
            f"named {e.name!r} (is it importable from the project root?)"
        )
    first = (str(e).strip().splitlines() or [""])[0][:160]
    what = first if isinstance(e, WeanjError) else f"{type(e).__name__}: {first}"
    return ProjectError(f"example module {module!r} ({where}): {what}")


def _modules_to_load(config) -> list[tuple[str, str]]:
    modules: list[tuple[str, str]] = []
    if config.builtin:
        from .examples import BUILTIN

        modules += [(m, "weanj's built-in examples") for m in BUILTIN]
    if config.pyproject is not None:
        root = str(config.root)
        if root not in sys.path:
            sys.path.insert(0, root)  # the project's modules import from its root
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
    """Import the project's example modules once per process (module docstring)."""
    if _state["loaded"]:
        return
    from ._project import project_config

    config = project_config()
    _state["config"] = config
    seen = set()
    for module, where in _modules_to_load(config):
        if module not in seen:
            seen.add(module)
            _import_example_module(module, where)
    _state["loaded"] = True


def project() -> object:
    """The `ProjectConfig` the registry was loaded from."""
    _load()
    return _state["config"]


def example_names() -> list[str]:
    """The names of all examples of the current project."""
    _load()
    return sorted(_EXAMPLES)


def example(name: str | Example) -> Example:
    """The `Example` called `name`; unknown names raise an error naming the project
    (its root and how it was found) and listing the known examples."""
    if isinstance(name, Example):
        return name
    _load()
    try:
        return _EXAMPLES[name]
    except (KeyError, TypeError):
        from ._project import project_config

        config = project_config()  # as it is now: the folder a user would look in
        head = f"unknown example {name!r} in {config.describe()}"
        raise UnknownNameError(with_list(head, "known examples", sorted(_EXAMPLES))) from None


def _table(example_name: str | Example) -> dict[str, Variant]:
    return _VARIANTS[example(example_name).name]


def variants(example_name: str | Example, *, available_only: bool = True) -> list[str]:
    """Names of the variants of an example that can run here (all with `available_only=False`)."""
    table = _table(example_name)
    return [n for n, v in table.items() if not available_only or v.unavailable_reason() is None]


def unavailable_variants(example_name: str | Example) -> dict[str, str]:
    """`{variant name: reason}` for the variants of an example that cannot run here."""
    reasons = {n: v.unavailable_reason() for n, v in _table(example_name).items()}
    return {n: reason for n, reason in reasons.items() if reason is not None}


def find_variant(example_name: str | Example, name: str) -> Variant | None:
    """The registered variant or None, whether or not it is available here."""
    return _table(example_name).get(name)


def registered_variant(example_name: str | Example, name: str) -> Variant:
    """The registered variant (available or not); unknown names list the known ones."""
    table = _table(example_name)
    try:
        return table[name]
    except (KeyError, TypeError):
        head = f"unknown variant {name!r} of {example(example_name).name}"
        raise UnknownNameError(with_list(head, "known variants", table)) from None


def variant(example_name: str | Example, name: str) -> Variant:
    """The `Variant` `name` of an example, with `.loss`, `.grad` and `.jvp`.

    Unknown names raise an error listing the known ones; a registered variant whose
    backend is missing here raises `UnavailableError` saying what to install.
    """
    v = registered_variant(example_name, name)
    reason = v.unavailable_reason()
    if reason is not None:
        raise UnavailableError(wrapped(f"variant {name!r} is unavailable here: {reason}"))
    return v


def families(example_name: str | Example) -> dict[str, list[str]]:
    """`{family: [variant names]}` over all registered variants of an example."""
    out: dict[str, list[str]] = {}
    for name, v in _table(example_name).items():
        out.setdefault(v.family, []).append(name)
    return out


def same_family_pair(
    example_name: str | Example, a: str, b: str, what: str
) -> tuple[Variant, Variant]:
    """Two available variants of one family (what `bisect` and `fuzz --pairs` compare), or
    an `InputError` naming `what` asked: the same variant twice, or two families (other
    algorithms, expected to differ)."""
    from ._errors import InputError

    if a == b:
        raise InputError(
            f"{what} needs two different variants, got {a} twice (a variant is not compared "
            "with itself)"
        )
    va, vb = variant(example_name, a), variant(example_name, b)
    if va.family != vb.family:
        raise InputError(
            f"{what} {a} {b}: {a} ({va.family}) and {b} ({vb.family}) are of different families "
            f"(other algorithms, expected to differ); {what} compares members of one family"
        )
    return va, vb
