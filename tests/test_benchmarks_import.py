"""The benchmark scripts (`benchmarks/*.py`, run by hand, never by the suite) import
against today's package: each loads as a module (its `main` not called), and every weanj
name it imports or reads off an imported weanj name, at module level or inside a
function, exists. A rename in `python/weanj/` fails here instead of silently breaking
the scripts. Nothing is compiled or run."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))
# The modules the scripts share (`_common.py`, `_detection*.py`): imported, never run.
HELPERS = {p.stem for p in SCRIPTS if p.name.startswith("_")}
# What a script may need at module level that weanj does not depend on: skipped, saying so.
OPTIONAL = {"numba"}


def test_the_scripts_are_found():
    names = {p.name for p in SCRIPTS}
    assert {"_common.py", "adjoint.py", "deposition.py", "sharded.py", "tridiagonal.py"} <= names


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_script_loads_as_a_module(path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts' `import _common` (`HELPERS`)
    spec = importlib.util.spec_from_file_location(f"_benchmark_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import has it while it runs (a dataclass needs it)
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as e:
        if e.name in OPTIONAL:
            pytest.skip(f"{path.name} needs {e.name} at module level, not installed here")
        raise
    finally:
        sys.modules.pop(spec.name, None)
        for helper in HELPERS:  # the scripts' `import _common`, `import _detection`, ...
            sys.modules.pop(helper, None)
    if path.stem not in HELPERS:
        assert callable(module.main)


def _resolve(module_name: str, name: str):
    """`from module_name import name`: the attribute, else the submodule."""
    module = importlib.import_module(module_name)
    if hasattr(module, name):
        return getattr(module, name)
    try:
        return importlib.import_module(f"{module_name}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{module_name}.{name}":
            raise
        raise AttributeError(f"module {module_name} has no {name}") from None


def _is_weanj(module_name: str | None) -> bool:
    return module_name is not None and (module_name == "weanj" or module_name.startswith("weanj."))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_every_weanj_name_a_script_uses_exists(path):
    """Imports inside functions too (`sharded.py` imports weanj only in its child), and
    `name.attribute` reads of what they bind (`measure.call_args`, `weanj.variant`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    bound: dict[str, list] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_weanj(node.module):
            for alias in node.names:
                try:
                    found = _resolve(node.module, alias.name)
                except (ImportError, AttributeError) as e:
                    pytest.fail(
                        f"{path.name}:{node.lineno}: from {node.module} import {alias.name}: {e}"
                    )
                bound.setdefault(alias.asname or alias.name, []).append(found)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_weanj(alias.name):
                    found = importlib.import_module(alias.name)
                    if alias.asname:
                        bound.setdefault(alias.asname, []).append(found)
                    else:
                        bound.setdefault("weanj", []).append(importlib.import_module("weanj"))
    checked = 0
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
        ):
            continue
        objects = {id(o): o for o in bound[node.value.id]}
        if len(objects) != 1:  # one name bound to two things in two scopes: not judged
            continue
        (obj,) = objects.values()
        assert hasattr(obj, node.attr), (
            f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}: "
            f"{getattr(obj, '__name__', obj)!r} has no {node.attr}"
        )
        checked += 1
    if bound and path.name in {"_common.py", "deposition.py", "sharded.py"}:
        assert checked > 0  # the scripts that read weanj's modules were read
