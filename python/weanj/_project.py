"""Where a project lives and what it declares.

The project root (where `shared_inputs/` and `results/` live) is, in this order:

1. `$WEANJ_ROOT` if set (it must be an existing folder);
2. the nearest directory at or above the current one whose `pyproject.toml` has a
   `[tool.weanj]` table (a user project);
3. the checkout of an editable install of weanj (this repository);
4. the current directory.

A project's `[tool.weanj]` table lists the modules that register its examples:

    [tool.weanj]
    examples = ["kernels.smooth", "kernels.stencil"]   # importable from the project root
    builtin = false          # true: weanj's own examples too
    entry-points = false     # true: every installed `weanj.examples` entry point;
                             # or a list of entry-point names: only those

Installed packages' examples join a project only when it asks for them, so an unrelated
project never stops on a foreign example's missing inputs. A root without `[tool.weanj]`
(a bare folder, `$WEANJ_ROOT` pointing at a copy of the inputs) gets weanj's built-in
examples. This module knows nothing of the registry: `_registry` reads the config.
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
    except UnicodeDecodeError:
        raise ProjectError(f"{path} is not valid TOML (not UTF-8 text)") from None


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
    # python/weanj/_project.py -> the repository is two levels above the package.
    candidate = _PACKAGE_DIR.parent.parent
    if (candidate / "pyproject.toml").is_file() and (candidate / "shared_inputs").is_dir():
        return candidate
    return None


def user_project(start: Path) -> Path | None:
    """The nearest folder at or above `start` with a `[tool.weanj]` table, or None."""
    for directory in (start, *start.parents):
        if _weanj_table(directory) is not None:
            return directory
    return None


def find_root(*, checkout: bool = True) -> tuple[Path, str]:
    """`(root, how it was found)`; `checkout=False` leaves out the editable checkout
    (`pytest --weanj` runs a project's matrix, never weanj's own by accident)."""
    env = os.environ.get(ROOT_VARIABLE)
    if env:
        root = Path(env).expanduser().resolve()
        if not root.is_dir():
            raise ProjectError(
                f"{ROOT_VARIABLE}={env} is not an existing folder; point it at a project "
                f"root or unset it"
            )
        return root, f"${ROOT_VARIABLE}"
    cwd = Path.cwd().resolve()
    project = user_project(cwd)
    if project is not None:
        return project, "the nearest pyproject.toml with [tool.weanj]"
    if checkout and _checkout_root() is not None:
        return _checkout_root(), "the checkout of weanj's editable install"
    return cwd, "the current folder (no [tool.weanj] found at or above it)"


def project_root() -> Path:
    """The project root (see the module docstring for the order of discovery)."""
    return find_root()[0]


def results_dir(example: str) -> Path:
    """`results/<example>/` under the project root."""
    return project_root() / "results" / example


@dataclass(frozen=True)
class ProjectConfig:
    """What a project declares in its `[tool.weanj]` table."""

    root: Path
    examples: tuple[str, ...]  # modules that register the project's examples
    builtin: bool  # weanj's built-in examples too
    entry_points: bool | tuple[str, ...]  # installed `weanj.examples`: all, none or these
    pyproject: Path | None  # where it was declared; None: no [tool.weanj] (built-ins)
    how: str = ""  # how the root was found

    @property
    def where(self) -> str:
        return str(self.pyproject) if self.pyproject else str(self.root)

    def describe(self) -> str:
        """`project /path (found as ...)` for messages that name the project."""
        return f"project {self.root} ({self.how or 'given'})"


_KEYS = {"examples", "builtin", "entry-points"}


def project_config(root: Path | None = None) -> ProjectConfig:
    """The `[tool.weanj]` table of the project at `root` (default: `project_root()`)."""
    how = "given"
    if root is None:
        root, how = find_root()
    root = Path(root)
    table = _weanj_table(root)
    if table is None:
        return ProjectConfig(root, (), builtin=True, entry_points=False, pyproject=None, how=how)
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
    builtin = table.get("builtin", False)
    if not isinstance(builtin, bool):
        raise ProjectError(f"{pyproject}: [tool.weanj] builtin must be true or false")
    entry = table.get("entry-points", False)
    if isinstance(entry, list) and all(isinstance(e, str) and e for e in entry):
        entry = tuple(entry)
    elif not isinstance(entry, bool):
        raise ProjectError(
            f"{pyproject}: [tool.weanj] entry-points must be true, false or a list of "
            'entry-point names, e.g. entry-points = ["heat"]'
        )
    return ProjectConfig(
        root, tuple(examples), builtin=builtin, entry_points=entry, pyproject=pyproject, how=how
    )
