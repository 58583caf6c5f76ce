"""The package's layout holds (docs/DESIGN.md, "Layout"): no import cycle, at most eight
levels, commands side by side, the files and the judge free of the registry.

The graph is read from the code (every `import`, at any depth of a module, function bodies
included), as a reader sees it, not from what happens to be imported at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "weanj"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The weanj modules `name` imports (a `from X import y` of a submodule y names it)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "weanj")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "weanj":
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & known
            out.update(subs if subs else {target})
    return {m for m in out if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _room(module: str) -> str:
    """A top-level module, or a subpackage as a whole (what a reader sees as one room)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _rooms(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        room = _room(module)
        rooms.setdefault(room, set()).update(_room(t) for t in targets if _room(t) != room)
    return rooms


def _levels(rooms: dict[str, set[str]]) -> dict[str, int]:
    levels: dict[str, int] = {}

    def level(room: str) -> int:
        if room not in levels:
            levels[room] = 1 + max((level(r) for r in rooms.get(room, ())), default=0)
        return levels[room]

    for room in rooms:
        level(room)
    return levels


def test_no_module_imports_itself_through_others():
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_rooms_form_no_cycle_and_stand_on_at_most_eight_levels():
    rooms = _rooms(_graph())
    cycle = _cycle(rooms)
    assert cycle is None, " -> ".join(cycle or [])
    levels = _levels(rooms)
    assert max(levels.values()) <= 8, sorted(levels.items(), key=lambda kv: kv[1])
    # the layers of docs/DESIGN.md, bottom up
    assert levels["_errors"] == 1 and levels["_interrupts"] == 1
    assert levels["_judge"] < levels["_pipeline"] < levels["_commands"] < levels["_cli"]
    assert levels["_io"] < levels["_pipeline"]


# `_pipeline`'s subpackages, bottom up: each imports only from those before it (docs/DESIGN.md §13)
PIPELINE = ("evaluation", "session", "checks", "records", "executors", "engine", "search", "bench")


def _pipeline_room(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "_pipeline" else None


def test_the_pipelines_subpackages_point_one_way():
    """Each subpackage of `_pipeline` is a room of its own: no import points back up the
    order of `PIPELINE` (the session below the checks, the records and the executors that
    hand it on; the engine above them all), so no two import each other."""
    graph = _graph()
    rooms = {_pipeline_room(m) for m in graph} - {None}
    assert rooms == set(PIPELINE), rooms
    up = sorted(
        (m, t)
        for m, targets in graph.items()
        for t in targets
        if _pipeline_room(m)
        and _pipeline_room(t)
        and PIPELINE.index(_pipeline_room(t)) > PIPELINE.index(_pipeline_room(m))
    )
    assert not up, up


def test_no_command_imports_another():
    graph = _graph()
    commands = {m for m in graph if m.startswith("weanj._commands.")}
    crossing = {(m, t) for m in commands for t in graph[m] if t in commands}
    assert not crossing, sorted(crossing)


# The worker side of an executor is a front end in another process: names (the example, the
# variant) are all that cross to it, and it looks them up in the project it loads there.
WORKER_SIDE = {"weanj._pipeline.executors._worker"}


@pytest.mark.parametrize("room", ["_io", "_judge", "_model", "_pipeline", "_report"])
def test_below_the_front_ends_nothing_looks_a_name_up(room):
    graph = _graph()
    looking = sorted(
        m
        for m in graph
        if _room(m) == room and "weanj._registry" in graph[m] and m not in WORKER_SIDE
    )
    assert not looking, f"{looking} import the registry"


# The commands that are also the Python API's front door (`weanj.check(["01-jacobi"])`,
# `weanj.diff`, `weanj.report`): they resolve the names on their first lines and hand
# objects on; every other command receives `Catalog`/`Variant` objects.
NAMES_LOOKED_UP_INSIDE = {"check", "diff", "report"}


def test_commands_receive_objects_not_names():
    graph = _graph()
    commands = {m for m in graph if m.startswith("weanj._commands.")}
    assert {f"weanj._commands.{c}" for c in NAMES_LOOKED_UP_INSIDE} <= commands
    looking = sorted(
        m
        for m in commands
        if m.rpartition(".")[2] not in NAMES_LOOKED_UP_INSIDE and "weanj._registry" in graph[m]
    )
    assert not looking, f"{looking} import the registry (the front ends look names up)"


def _names_from_registry(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("_registry"):
            out.update(a.name for a in node.names)
    return out


def test_backends_only_register():
    """A backend's variant constructor adds to the tables (`register_variant`, and
    `example_of` for the example it is given, by object or name, while a module
    imports); none loads the project's example modules or looks a name up."""
    modules = _modules()
    for name, path in modules.items():
        if _room(name) == "_backends":
            assert _names_from_registry(path) <= {"example_of", "register_variant"}, name
    assert _names_from_registry(modules["weanj._backends._julia"]) == {
        "example_of",
        "register_variant",
    }  # the reader itself finds them


def test_this_reading_sees_the_imports_it_must():
    """The reader itself: a known edge of each kind (absolute, relative, a submodule named
    in `from . import`, an import inside a function) is found."""
    graph = _graph()
    assert "weanj._judge._verdict" in graph["weanj._pipeline.engine._cases"]  # relative, module
    assert "weanj._model" in graph["weanj._judge._verdict"]  # a package's face
    assert "weanj._pipeline.search._fuzz_run" in graph["weanj._pytest_plugin"]  # inside a function
    assert (
        "weanj._pipeline.bench._bench_point" in graph["weanj._commands.bench"]
    )  # `from .. import x`


def _writes_gradients(path: Path) -> bool:
    """The module calls the store's writer (`_store.write_gradient`)."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "write_gradient"
        for node in ast.walk(ast.parse(path.read_text()))
    )


def test_one_writer_of_gradient_files():
    """docs/DESIGN.md §8.2: no front end writes the store itself; a gradient file is written
    by the run (`_pipeline/records/_store_writes.py`: a check's `save_to_store`,
    `save_gradient` for `weanj run` and `weanj.save_gradient`) and by `weanj record` (the
    recorded references)."""
    writers = {
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if _writes_gradients(path)
    }
    assert writers == {"_pipeline/records/_store_writes.py", "_commands/record.py"}


# Issue 48: modules a reader can hold. The built-in examples hold one example's variants
# side by side, so they get a little more room.
MODULE_LINES, EXAMPLE_LINES, FUNCTION_LINES = 400, 550, 70


def test_no_module_or_function_past_what_a_reader_holds():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        limit = EXAMPLE_LINES if rel.startswith("examples/") else MODULE_LINES
        if len(text.splitlines()) > limit:
            long.append(f"{rel}: {len(text.splitlines())} lines (limit {limit})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                if size > FUNCTION_LINES:
                    long.append(f"{rel}:{node.lineno} {node.name}: {size} lines")
    assert not long, long


@pytest.mark.parametrize("readme", ["julia/README.md", "benchmarks/README.md"])
def test_the_folders_readmes_are_short_the_rest_is_in_the_docs(readme):
    lines = (PACKAGE.parent.parent / readme).read_text().splitlines()
    assert len(lines) < 200, f"{readme}: {len(lines)} lines; move the rest to docs/"


def test_the_public_api_is_what_all_lists():
    """`weanj.__all__` names every public name of `import weanj`, each one there."""
    import inspect

    import weanj

    public = {
        n for n, v in vars(weanj).items() if not n.startswith("_") and not inspect.ismodule(v)
    }
    assert set(weanj.__all__) == public
    assert len(weanj.__all__) == len(set(weanj.__all__))


def test_each_word_of_the_vocabulary_is_declared_once():
    """Device kinds and dtypes are spelled as tuples in `_vocabulary.py` alone; a module
    that needs them imports them (docs/DESIGN.md §13.3)."""
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "_vocabulary.py" or rel.startswith("examples/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
            ):
                words = {e.value for e in node.elts}
                if len(words) > 1 and (
                    words <= {"cpu", "gpu", "tpu"} or words == {"float32", "float64"}
                ):
                    spelled.append(f"{rel}:{node.lineno} {sorted(words)}")
    assert not spelled, spelled


# --- one name, one home (issue 71, item 5) ---------------------------------------------------


def _target(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, as an absolute dotted name."""
    if not node.level:
        return node.module or ""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _defined(path: Path) -> set[str]:
    """The names a module defines at its top level (not those it imports)."""
    out = set()
    for node in ast.parse(path.read_text()).body:
        for n in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                out.update(x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name))
    return out


def _crossings(path: Path, name: str | None, modules: dict[str, Path]) -> list[str]:
    """What a module (`name`; None: a test, importing absolutely) takes from another against
    the rules: a private name (a private module named is fine), a name from a module that
    does not define it (a package's `__init__`, its face, may), and in the package a
    re-export kept for others (`import x as x`, `# noqa: F401`)."""
    text = path.read_text()
    tree, lines, found = ast.parse(text), text.splitlines(), []
    modules_of: dict[str, str] = {}  # the local names of imported weanj modules
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        target = _target(name, path, node) if name else node.module or ""
        for a in node.names:
            if f"{target}.{a.name}" in modules:
                modules_of[a.asname or a.name] = f"{target}.{a.name}"
                continue
            if target not in modules:
                continue
            where = f"{path.name}:{node.lineno} {a.name}"
            if name and a.name.startswith("_") and not a.name.startswith("__"):
                found.append(f"{where}: a private name of {target}")
            if modules[target].name != "__init__.py" and a.name not in _defined(modules[target]):
                found.append(f"{where}: not defined in {target}")
            kept = "noqa: F401" in "".join(lines[node.lineno - 1 : node.end_lineno])
            if name and path.name != "__init__.py" and (a.asname == a.name or kept):
                found.append(f"{where}: re-exported")
    for node in ast.walk(tree) if name else ():
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules_of
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and f"{modules_of[node.value.id]}.{node.attr}" not in modules
        ):
            found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}: private")
    return found


def test_no_private_name_crosses_a_module_and_no_module_re_exports_another():
    """Each name is imported from the module that defines it: no private name of one module
    is imported or read in another (a private module imported by name is fine), no module
    passes another's names on (its tests included), and only a package's `__init__`, its
    face, re-exports (docs/DESIGN.md §13.3)."""
    modules = _modules()
    found = []
    for name, path in modules.items():
        found += _crossings(path, name, modules)
    for path in sorted((PACKAGE.parent.parent / "tests").rglob("*.py")):
        found += _crossings(path, None, modules)
    assert not found, found


def test_the_reader_of_crossings_sees_what_it_must(tmp_path):
    modules = _modules()
    p = tmp_path / "m.py"
    p.write_text(
        "from weanj._arguments import refused\n"  # defined there: fine
        "from weanj._report import _lines\n"  # a private module: fine
        "from weanj._pipeline.records._record_form import FORMAT as FORMAT\n"
        "from weanj._model._expected import Verdict\n"
        "from weanj._io._gradient_files import _check_store_dtype\n"
        "from weanj._places import (  # noqa: F401 (for the tests)\n    Places,\n)\n"
        "_lines._wrap\n"
    )
    assert _crossings(p, "weanj._some", modules) == [
        "m.py:3 FORMAT: re-exported",
        "m.py:4 Verdict: not defined in weanj._model._expected",
        "m.py:5 _check_store_dtype: a private name of weanj._io._gradient_files",
        "m.py:6 Places: re-exported",
        "m.py:9 _lines._wrap: private",
    ]
    assert _crossings(p, None, modules) == ["m.py:4 Verdict: not defined in weanj._model._expected"]
