"""What importing one module alone in a fresh interpreter leaves `jax_enable_x64` at, and
which module's own code set it, learnt while the registry imports a project's modules in
one process (docs/DESIGN.md §2.2, "x64 by module").

In one process a module is executed once: `examples.faults`, which imports `examples.heat`
(which turns x64 on), executes heat's code only if heat was not imported before. So what
the setting is after a module's import depends on what was imported first, and cannot
tell a module's own program. A fresh interpreter runs every module the import reaches,
in order. The `Tracer` records, while the registry imports, each module's execution as
its program order: the stretches of its own code (the setting before and after each), the
modules it executes there for the first time (traced in turn), and the modules it imports
that were executed before (a cache hit, which a fresh interpreter would execute there).
`Tracer.alone` replays that order from the interpreter's start, each module executed at
its first import, to give the setting `python -c "import M"` would leave and the module
whose own code set it last.

Three hooks, installed only while the registry imports (the loading thread's imports
only): a finder first on `sys.meta_path`, which wraps each Python module's loader to see
its execution begin and end (the real loader is put back on the module when it ends); a
wrapper of `builtins.__import__`, which sees every import statement, the cache hits too;
and, once JAX is imported, a wrapper of `jax.config.update` on its config object, which
sees each setting of `jax_enable_x64` (a stretch of code that sets the value it found is
thus told from one that leaves it; a change made otherwise is seen as a change).

What a trace cannot tell is left to the caller (`Unknown`): a project module executed
before tracing began (a notebook's `import kernels` before weanj loads the project). The
registry then asks a fresh interpreter (`_x64_modules.probe`).
"""

from __future__ import annotations

import builtins
import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

# an item of a module's program: ("own", before, after): a stretch of its own code;
# ("set", value): its code called `jax.config.update("jax_enable_x64", value)`; ("module",
# name): a module it imports there (executed there for the first time, or a cache hit)
Item = tuple


@dataclass
class _Frame:
    """A module being executed: its program so far, and the setting at its last step."""

    name: str
    last: bool
    items: list[Item] = field(default_factory=list)

    def own_until(self, now: bool) -> None:
        """The module's own code ran from its last step to here."""
        self.items.append(("own", self.last, now))
        self.last = now


class Unknown(Exception):
    """A replay that a trace cannot decide (module docstring); the message names why."""


class Tracer:
    """Records the programs of the modules executed while `tracing()` holds (module
    docstring). `read()`: the process's `jax_enable_x64` now."""

    def __init__(self, read: Callable[[], bool]):
        self.read = read
        self.programs: dict[str, list[Item]] = {}
        self._stack: list[_Frame] = []
        self._thread: int | None = None
        self._finding: set[str] = set()
        self._config: Any = None  # JAX's config object whose setter is watched

    # --- recording ---------------------------------------------------------------------

    @contextlib.contextmanager
    def tracing(self) -> Iterator[None]:
        """Trace the imports this thread makes while the block runs."""
        if self._thread is not None:  # already tracing (a nested load): one recording
            yield
            return
        finder, real_import = _Finder(self), builtins.__import__
        self._thread = threading.get_ident()
        sys.meta_path.insert(0, finder)
        builtins.__import__ = _statement(self, real_import)
        try:
            self.watch_setter()
            yield
        finally:
            builtins.__import__ = real_import
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(finder)
            self._unwatch_setter()
            self._thread = None
            self._stack.clear()

    def watch_setter(self) -> None:
        """Once JAX is imported, see each `jax.config.update("jax_enable_x64", value)`
        (an attribute of the config object, shadowing its method while tracing): a
        stretch of code that sets the value it found is then told from one that leaves
        it."""
        jax = sys.modules.get("jax")
        config = getattr(jax, "config", None) if jax is not None else None
        if config is None or not hasattr(config, "__dict__") or "update" in vars(config):
            return
        update = config.update

        def watched_update(name, value, *args, **kwargs):
            if name == "jax_enable_x64" and self._stack and self._mine():
                self._stack[-1].items.append(("set", bool(value)))
            return update(name, value, *args, **kwargs)

        watched_update.weanj_tracer = self  # type: ignore[attr-defined]
        config.update = watched_update
        self._config = config

    def _unwatch_setter(self) -> None:
        config = getattr(self, "_config", None)
        if config is not None and getattr(vars(config).get("update"), "weanj_tracer", None):
            del config.update
        self._config = None

    def _mine(self) -> bool:
        return self._thread == threading.get_ident()

    def begin(self, name: str) -> None:
        """A module's execution begins (its first import)."""
        if not self._mine():
            return
        now = self.read()
        if self._stack:
            top = self._stack[-1]
            top.own_until(now)
            top.items.append(("module", name))
        self._stack.append(_Frame(name, now))
        self.watch_setter()

    def end(self, name: str) -> None:
        """A module's execution ends (finished or raised)."""
        if not self._mine() or not self._stack or self._stack[-1].name != name:
            return
        frame = self._stack.pop()
        now = self.read()
        frame.own_until(now)
        self.programs[name] = frame.items
        if self._stack:
            self._stack[-1].last = now
        self.watch_setter()

    # --- replaying -----------------------------------------------------------------------

    def alone(self, module: str, start: bool, known: Callable[[str], bool]) -> tuple[bool, str]:
        """`(setting, setter)`: what importing `module` alone from the setting `start`
        leaves, and the module whose own code changed it last ("" where none did). A module
        that `known(name)` names (code outside the project: the standard library, JAX,
        weanj) is taken to leave the setting alone; a project module without a program
        raises `Unknown`."""
        seen: set[str] = set()
        return self._replay(module, start, "", seen, lambda name: name != module and known(name))

    def _replay(self, module: str, value: bool, setter: str, seen: set, known) -> tuple:
        seen.add(module)
        if known(module):  # code no project edits: its import leaves the setting alone
            return value, setter
        program = self.programs.get(module)
        if program is None:
            raise Unknown(f"{module} was imported before weanj traced its imports")
        for item in program:
            if item[0] == "set":  # credited where it changes the value it finds
                value, setter = item[1], (module if item[1] != value else setter)
            elif item[0] == "own":
                _, before, after = item
                if after != before:  # set otherwise than by jax.config.update
                    value, setter = after, module
            elif item[1] not in seen:
                value, setter = self._replay(item[1], value, setter, seen, known)
        return value, setter


# --- the two hooks -----------------------------------------------------------------------


class _Finder:
    """First on `sys.meta_path` while tracing: the spec the other finders give, its loader
    wrapped so that the tracer sees the module's execution."""

    def __init__(self, tracer: Tracer):
        self.tracer = tracer

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name in self.tracer._finding or not self.tracer._mine():
            return None
        self.tracer._finding.add(name)
        try:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    if _python_source(spec):  # built-in, frozen, C modules set no x64
                        spec.loader = _Watched(spec.loader, self.tracer)
                    return spec
            return None
        finally:
            self.tracer._finding.discard(name)


def _python_source(spec: Any) -> bool:
    origin = str(getattr(spec, "origin", "") or "")
    return origin.endswith((".py", ".pyc")) and hasattr(spec.loader, "exec_module")


class _Watched:
    """A module's loader, seen by the tracer as it executes the module; everything else is
    the loader's own, and the loader is put back on the module once it has executed."""

    def __init__(self, loader: Any, tracer: Tracer):
        self._loader = loader
        self._tracer = tracer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        name = module.__name__
        self._tracer.begin(name)
        try:
            self._loader.exec_module(module)
        finally:
            self._tracer.end(name)
            if getattr(module, "__loader__", None) is self:
                module.__loader__ = self._loader
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self._loader


def _statement(tracer: Tracer, real: Callable) -> Callable:
    """`builtins.__import__` while tracing: an import statement of the module executing
    now, its cache hits placed where the statement stands in that module's program."""

    def traced_import(name, globals=None, locals=None, fromlist=(), level=0):
        top = tracer._stack[-1] if tracer._stack and tracer._mine() else None
        if top is None:
            return real(name, globals, locals, fromlist, level)
        named = _names(name, globals, fromlist, level)
        present = [n for n in named if n in sys.modules]
        top.own_until(tracer.read())
        mark = len(top.items)
        try:
            return real(name, globals, locals, fromlist, level)
        finally:
            top.items[mark:mark] = [("module", n) for n in present]
            top.last = tracer.read()
            tracer.watch_setter()  # `import jax` done: its config's setter watched

    return traced_import


def _names(name: str, globals: Any, fromlist: Any, level: int) -> list[str]:
    """The modules an import statement names, in the order Python imports them: each
    package of the dotted name, then each name of `from … import` that is a submodule."""
    try:
        absolute = _absolute(name, globals or {}, level)
    except Exception:  # a statement Python itself will refuse: nothing to place
        return []
    parts = absolute.split(".") if absolute else []
    out = [".".join(parts[: i + 1]) for i in range(len(parts))]
    for item in fromlist or ():
        if isinstance(item, str) and item != "*":
            out.append(f"{absolute}.{item}")
    return out


def _absolute(name: str, globals: dict, level: int) -> str:
    if level == 0:
        return name
    package = globals.get("__package__")
    if package is None:
        spec = globals.get("__spec__")
        package = spec.parent if spec is not None else ""
    base = package.rsplit(".", level - 1)[0] if package else ""
    return f"{base}.{name}" if name and base else (base or name)
