"""Each module's x64, decided once per loaded project (docs/DESIGN.md §2.2, "x64 by
module"): the project's declaration, else what importing the module alone in a fresh
interpreter leaves, with the module whose own code set it.

What importing a module alone leaves is read from the registry's record of the imports
(its `tracer()`, `_x64_trace`); where the record cannot tell (the module was imported before
weanj loaded the project, as a notebook's first cell does; or a stretch of its code that
may or may not set the setting it found), a fresh interpreter is asked, once per version of
the module's code (`probe`: `python -c "import M"` with the same paths and environment,
tracing its imports; the answer kept in `.weanj-cache/x64/`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from . import _x64
from ._environment import core_versions
from ._project import BUILTIN, ProjectConfig
from ._sources import code_digest, inside, origin
from ._x64_trace import Tracer, Unknown


def tracer() -> Tracer:
    """A recorder of what each module's program does to x64, for a registry's imports."""
    return Tracer(read=_x64.reading)


# the probe: the module imported alone, its imports traced; one JSON line out
_PROBE = """\
import importlib, json, sys
sys.path[:0] = {paths!r}
from pathlib import Path
from weanj import _x64_modules as m
roots = tuple(Path(p).resolve() for p in {paths!r})
traced = m.tracer()
with traced.tracing():
    importlib.import_module({module!r})
value, setter = traced.alone({module!r}, {start!r}, m.known_to(roots))
print(json.dumps({{"value": value, "setter": setter}}))
"""


def declared_x64(module: str, config: ProjectConfig | None) -> _x64.X64 | None:
    """The x64 setting the project declares for `module`'s program, if any: weanj's own
    examples declare theirs (`_x64.BUILTIN_X64`) wherever they load."""
    own = config is not None and config.pyproject is not None and module in config.examples
    if module in BUILTIN and not own:
        return _x64.X64(_x64.BUILTIN_X64, _x64.BUILTIN_SOURCE)
    if config is not None and config.x64 is not None:
        where = config.pyproject or config.root
        return _x64.X64(config.x64, f"x64 = {str(config.x64).lower()} in [tool.weanj] of {where}")
    return None


def start_of(module: str, config: ProjectConfig | None) -> _x64.X64:
    """The setting a module's program starts from: the declared one, else the
    interpreter's (`$JAX_ENABLE_X64`, else JAX's default)."""
    return declared_x64(module, config) or _x64.at_start()


def known_to(roots: tuple[Path, ...]):
    """Whether a module is code outside the project (the standard library, JAX, an
    installed package, weanj itself): its import is taken to leave the setting alone."""

    def known(name: str) -> bool:
        if name == "weanj" or name.startswith("weanj."):
            return True
        path = origin(name)
        return path is None or not inside(path, roots)

    return known


def settle(project: Any, listed: set[str]) -> None:
    """Give a loaded project its resolver of a module's x64 (`Project.x64_of`), what it
    decided before forgotten: `listed` are its example modules."""
    traced = project.registry.tracer or tracer()
    project.resolve = functools.partial(
        module_x64, config=project.config, listed=frozenset(listed), traced=traced
    )
    project.x64_modules.clear()


def module_x64(
    module: str, *, config: ProjectConfig, listed: frozenset, traced: Tracer
) -> _x64.X64 | None:
    """The X64 a module's variants run with (rules 1 and 2 of `_x64`), or None (rule 3: a
    module that is not one of the project's, such as `__main__`)."""
    if module not in traced.programs and module not in listed:
        return None
    declared = declared_x64(module, config)
    start = declared or _x64.at_start()
    roots = config.roots
    try:
        value, setter = traced.alone(module, start.enabled, known_to(roots))
    except Unknown:
        found = None if module in BUILTIN else probe(module, start.enabled, config)
        if found is None:
            return declared
        value, setter = found
    return described(module, value, setter, start, declared)


def described(
    module: str, value: bool, setter: str, start: _x64.X64, declared: _x64.X64 | None
) -> _x64.X64:
    """The X64 with its source: the declaration (naming the module that turns it the
    other way, where one does), or the module that set it, or the start it leaves."""
    word = "on" if value else "off"
    by = f"{setter}, which turns it {word} at import" if setter else ""
    if setter and setter != module:
        by += f" ({module} imports it)"
    if declared is not None:
        if value == declared.enabled or not setter:
            return declared
        return _x64.X64(declared.enabled, f"{declared.source}; it holds over {by}")
    if not setter:
        return _x64.X64(value, f"{start.source}; {module} leaves it")
    if setter == module:
        return _x64.X64(value, f"{module} turns it {word} at import")
    return _x64.X64(value, f"{setter} turns it {word} at import; {module} imports it")


def probe(module: str, start: bool, config: ProjectConfig) -> tuple[bool, str] | None:
    """`(setting, setter)` from a fresh interpreter that imports `module` alone (module
    docstring), kept in `.weanj-cache/x64/` per version of the module's code; None where
    it could not tell (the module fails to import alone, the interpreter timed out)."""
    roots = config.roots
    paths = [str(p) for p in (*config.pythonpath, config.root)]
    key = _probe_key(module, start, roots, paths)
    cached = Path(config.root) / ".weanj-cache" / "x64" / f"{module}-{key[:16]}.json"
    try:
        data = json.loads(cached.read_text())
        return bool(data["value"]), str(data["setter"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    env = {**os.environ, "JAX_ENABLE_X64": "1" if start else "0"}
    script = _PROBE.format(paths=paths, module=module, start=start)
    limit = config.timeout or 600.0
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=config.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
        data = json.loads(done.stdout.strip().splitlines()[-1])
        found = (bool(data["value"]), str(data["setter"]))
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError, KeyError, TypeError):
        return None
    _keep(cached, {"value": found[0], "setter": found[1]})
    return found


def _probe_key(module: str, start: bool, roots: tuple[Path, ...], paths: list[str]) -> str:
    parts: list[Any] = [module, start, code_digest(module, roots), sys.executable, paths]
    parts.append(core_versions())
    parts.append(os.environ.get("JAX_ENABLE_X64"))
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _keep(path: Path, data: dict) -> None:
    """Write the answer beside the project's other caches (a temporary file renamed); a
    folder weanj cannot write leaves it unkept."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass
