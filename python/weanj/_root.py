"""Where a project lives and what it declares.

The project root (where `shared_inputs/` and `results/` live) is, in this order:

1. `$WEANJ_ROOT` if set;
2. the nearest directory at or above the current one whose `pyproject.toml` has a
   `[tool.weanj]` table (a user project);
3. the checkout of an editable install of weanj (this repository);
4. the current directory.

A project's `[tool.weanj]` table lists the modules that register its examples:

    [tool.weanj]
    examples = ["kernels.smooth", "kernels.stencil"]   # importable from the project root
    builtin = false          # true: weanj's own examples too
    entry-points = true      # false: ignore installed packages' `weanj.examples` entry points

A root without `[tool.weanj]` (a bare folder, `$WEANJ_ROOT` pointing at a copy of the
inputs) gets weanj's built-in examples.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ._errors import ProjectError

_PACKAGE_DIR = Path(__file__).resolve().parent
ROOT_VARIABLE = "WEANJ_ROOT"


def _read_toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ProjectError(f"cannot read {path} ({e.strerror or e})") from None
    except tomllib.TOMLDecodeError as e:
        raise ProjectError(f"{path} is not valid TOML ({e})") from None


def _weanj_table(directory: Path) -> dict | None:
    """The `[tool.weanj]` table of `directory/pyproject.toml`, or None when it has none."""
    pyproject = directory / "pyproject.toml"
    if not pyproject.is_file():
        return None
    # Cheap test first: most pyproject.toml files on the way up are not weanj projects.
    try:
        if b"tool.weanj" not in pyproject.read_bytes():
            return None
    except OSError:
        return None
    table = _read_toml(pyproject).get("tool", {}).get("weanj")
    return table if isinstance(table, dict) else None


def _checkout_root() -> Path | None:
    # python/weanj/__init__.py -> the repository is two levels above the package.
    candidate = _PACKAGE_DIR.parent.parent
    if (candidate / "pyproject.toml").is_file() and (candidate / "shared_inputs").is_dir():
        return candidate
    return None


def _user_project(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if _weanj_table(directory) is not None:
            return directory
    return None


def project_root() -> Path:
    """The project root (see the module docstring for the order of discovery)."""
    env = os.environ.get(ROOT_VARIABLE)
    if env:
        return Path(env).expanduser().resolve()
    cwd = Path.cwd().resolve()
    return _user_project(cwd) or _checkout_root() or cwd


def results_dir(example: str) -> Path:
    """`results/<example>/` under the project root."""
    return project_root() / "results" / example


@dataclass(frozen=True)
class ProjectConfig:
    """What a project declares in its `[tool.weanj]` table."""

    root: Path
    examples: tuple[str, ...]  # modules that register the project's examples
    builtin: bool  # weanj's built-in examples too
    entry_points: bool  # installed packages' `weanj.examples` entry points too
    pyproject: Path | None  # where it was declared; None: no [tool.weanj] (built-ins)

    @property
    def where(self) -> str:
        return str(self.pyproject) if self.pyproject else str(self.root)


_KEYS = {"examples", "builtin", "entry-points"}


def project_config(root: Path | None = None) -> ProjectConfig:
    """The `[tool.weanj]` table of the project at `root` (default: `project_root()`)."""
    root = project_root() if root is None else Path(root)
    table = _weanj_table(root)
    if table is None:
        return ProjectConfig(root, (), builtin=True, entry_points=True, pyproject=None)
    pyproject = root / "pyproject.toml"
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ProjectError(
            f"{pyproject}: unknown key(s) {', '.join(unknown)} in [tool.weanj] "
            f"(known: {', '.join(sorted(_KEYS))})"
        )
    examples = table.get("examples", [])
    if not isinstance(examples, list) or not all(isinstance(m, str) and m for m in examples):
        raise ProjectError(
            f"{pyproject}: [tool.weanj] examples must be a list of module names, "
            f'e.g. examples = ["kernels.smooth"]'
        )
    flags = {}
    for key, default in (("builtin", False), ("entry-points", True)):
        value = table.get(key, default)
        if not isinstance(value, bool):
            raise ProjectError(f"{pyproject}: [tool.weanj] {key} must be true or false")
        flags[key] = value
    return ProjectConfig(
        root,
        tuple(examples),
        builtin=flags["builtin"],
        entry_points=flags["entry-points"],
        pyproject=pyproject,
    )
