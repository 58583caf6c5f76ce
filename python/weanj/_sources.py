"""The Python files a module's code lives in, read from its imports (nothing is run), and
their digest: what an evaluation record's key holds as "the code" (docs/DESIGN.md,
"Evaluation records"). The registry takes a snapshot when it imports an example module, so
that a process keeps recording the code it actually runs even if the files change later.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
from pathlib import Path


def text_digest(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


_ENVIRONMENTS = tuple(
    Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p
)


def inside(path: Path, roots: tuple[Path, ...]) -> bool:
    """Inside the project (its roots), and not in an installed environment (a virtual
    environment kept in the project folder holds packages, not the project's code)."""
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return False
    if any(env == path or env in path.parents for env in _ENVIRONMENTS):
        return False
    return any(root == path or root in path.parents for root in roots)


def origin(name: str) -> Path | None:
    """The source file of a module, found without importing anything: the top-level
    package by its finder, submodules by looking in its folders (resolving `a.b` with
    `importlib` would import `a`, and an installed package's import can do anything)."""
    module = sys.modules.get(name)
    found = getattr(module, "__file__", None) if module is not None else None
    if found is not None:
        return Path(found).resolve() if str(found).endswith(".py") else None
    top, *rest = name.split(".")
    try:
        spec = sys.modules[top].__spec__ if top in sys.modules else importlib.util.find_spec(top)
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    path = Path(spec.origin)
    folders = list(spec.submodule_search_locations or ())
    for part in rest:
        path = None
        for folder in folders:
            package, plain = Path(folder) / part / "__init__.py", Path(folder) / f"{part}.py"
            if package.is_file():
                path, folders = package, [package.parent]
                break
            if plain.is_file():
                path, folders = plain, []
                break
        if path is None:
            return None
    return path.resolve() if path.suffix == ".py" else None


def imported_names(path: Path, module: str) -> set[str]:
    """The modules a source file imports (absolute names; `from X import Y` gives X and
    X.Y, since Y may be a submodule)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            if base:
                out.add(base)
                out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def reachable_files(
    module: str, roots: tuple[Path, ...], outside: Path | None = None
) -> list[Path]:
    """Every source file inside `roots` (and not inside `outside`) that `module` reaches by
    its imports, itself included, directly or not (read from the code, nothing run)."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen or not name:
            continue
        path = origin(name)
        if path is None or not inside(path, roots) or (outside and inside(path, (outside,))):
            seen[name] = Path()
            continue
        seen[name] = path
        parts = name.split(".")  # a submodule's import runs its packages' __init__ first
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(imported_names(path, name))
    return sorted({p for p in seen.values() if p != Path()})


def relative_name(path: Path, roots: tuple[Path, ...]) -> str:
    """How a digest names a file: by its path relative to the first of `roots` that holds it
    (`1:kernels/one.py`, the root's place in the list first), else relative to the first
    root; never absolute, so that a project moved, copied or cloned elsewhere keeps its
    digests (docs/DESIGN.md, "Evaluation records")."""
    path = Path(path)
    for i, root in enumerate(roots):
        if root == path or root in path.parents:
            return f"{i}:{path.relative_to(root).as_posix()}"
    if roots:
        return "0:" + Path(os.path.relpath(path, roots[0])).as_posix()
    return path.name


def files_digest(files: list[Path], roots: tuple[Path, ...] = ()) -> str:
    """The sha256 of the files' names (relative to `roots`: `relative_name`) and bytes."""
    h = hashlib.sha256()
    for path in files:
        h.update(relative_name(path, roots).encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
        h.update(b"\0")
    return h.hexdigest()


PACKAGE = Path(__file__).resolve().parent  # weanj's own package (its digest is separate)


def weanj_sources() -> str:
    """A digest of weanj's own sources: a checkout being edited changes it (named relative
    to the package, so that another checkout of the same sources has the same digest)."""
    return files_digest(sorted(PACKAGE.rglob("*.py")), (PACKAGE,))


def code_digest(module: str, roots: tuple[Path, ...]) -> str:
    """The digest of the files `module` reaches inside `roots` (weanj's own package left to
    the digest of weanj's sources), named relative to the roots; a module of no file gets
    a digest of its name."""
    roots = tuple(Path(r).resolve() for r in roots)
    files = reachable_files(module, roots, PACKAGE) if module else []
    return files_digest(files, roots) if files else text_digest(f"unknown:{module}")
