"""Where a project lives and what it declares (docs/DESIGN.md, "The project").

The project is where you are. Its root (where `shared_inputs/` and `results/` live) is:

1. `$WEANJ_ROOT` if set (an existing folder; without a `[tool.weanj]` table it holds
   weanj's built-in examples: a copy of their inputs, say);
2. else the nearest folder at or above the current one whose `pyproject.toml` has a
   `[tool.weanj]` table (weanj's own checkout is such a folder).

Nothing else: a command run elsewhere names no other folder to act on, but says in one
line what to add (`ProjectError`, exit 2), and names the `pyproject.toml` without the
table where one lies on the way up. The table:

    [tool.weanj]
    examples = ["kernels.smooth", "kernels.stencil"]   # importable from the project root
    pythonpath = ["src"]     # folders put on sys.path first (pytest's `pythonpath`)
    builtin = false          # true: weanj's own examples too
    entry-points = false     # true: every installed `weanj.examples` entry point;
                             # or a list of entry-point names: only those
    scheduler = "tcp://host:8786"   # weanj check's Dask scheduler (docs/distributed.md)
    timeout = 600            # seconds a variant's call may take (default 600; 0: no limit);
                             # --timeout S on the command line wins

    [tool.weanj.julia]
    project = "julia/env"    # a Julia environment of yours (Project.toml, Manifest.toml)
                             # whose packages Julia variants name (docs/julia.md)

This module knows nothing of the registry (which loads what the table lists) or of
where files go (`_places`).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import ProjectError
from ._vocabulary import DEVICES

ROOT_VARIABLE = "WEANJ_ROOT"
# Every evaluation has a time limit unless told otherwise: a call that never ends (a
# deadlock, a compile that does not finish) is a `timeout` verdict, not a hung command.
DEFAULT_TIMEOUT = 600.0
# weanj's own examples (`builtin = true`, a `$WEANJ_ROOT` without [tool.weanj]).
BUILTIN = (
    "weanj.examples.jacobi",
    "weanj.examples.gauss_seidel",
    "weanj.examples.advection",
    "weanj.examples.tridiagonal",
    "weanj.examples.deposition",
    "weanj.examples.signed_grid",
)
WHAT_TO_ADD = (
    'add a [tool.weanj] table with examples = ["your.module"] to it (or run `weanj new NAME` '
    "there), or set WEANJ_ROOT to a weanj project"
)
WHAT_TO_MAKE = (
    'make a pyproject.toml with [tool.weanj] examples = ["your.module"] (`weanj new NAME` '
    "writes one), or set WEANJ_ROOT to a weanj project"
)


def read_toml(path: Path) -> dict:
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
    table = read_toml(pyproject).get("tool", {}).get("weanj")
    return table if isinstance(table, dict) else None


def user_project(start: Path) -> Path | None:
    """The nearest folder at or above `start` with a `[tool.weanj]` table, or None."""
    for directory in (start, *start.parents):
        if _weanj_table(directory) is not None:
            return directory
    return None


def find_root() -> tuple[Path, str]:
    """`(root, how it was found)`, or a `ProjectError` saying what to add (module docstring)."""
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
    bare = next(
        (d / "pyproject.toml" for d in (cwd, *cwd.parents) if (d / "pyproject.toml").is_file()),
        None,
    )
    if bare is not None:
        raise ProjectError(
            f"not in a weanj project: {bare} has no [tool.weanj] table; {WHAT_TO_ADD}"
        )
    raise ProjectError(
        f"not in a weanj project: no pyproject.toml at or above {cwd}; {WHAT_TO_MAKE}"
    )


def in_a_project() -> bool:
    """Whether the current folder (or `$WEANJ_ROOT`) is in a project whose `[tool.weanj]`
    reads."""
    try:
        project_config()
    except ProjectError:
        return False
    return True


def project_root() -> Path:
    """The project root (see the module docstring for the order of discovery)."""
    return find_root()[0]


@dataclass(frozen=True)
class ProjectConfig:
    """What a project declares in its `[tool.weanj]` table."""

    root: Path
    examples: tuple[str, ...]  # modules that register the project's examples
    builtin: bool  # weanj's built-in examples too
    entry_points: bool | tuple[str, ...]  # installed `weanj.examples`: all, none or these
    pyproject: Path | None  # where it was declared; None: no [tool.weanj] (built-ins)
    how: str = ""  # how the root was found
    pythonpath: tuple[Path, ...] = ()  # folders put on sys.path before the modules import
    table: dict | None = None  # the table as read (part of what an evaluation depends on)
    x64: bool | None = None  # `x64 = true|false`: the program's JAX 64-bit types (None: undeclared)
    require: tuple[str, ...] = ()  # backends or variants that must run (else the check fails)
    devices: tuple[str, ...] = ()  # `devices = ["cpu", "tpu"]`: where checks run (docs/devices.md)
    timeout: float | None = DEFAULT_TIMEOUT  # `timeout = S` (seconds; 0 in the table: None)
    julia_project: Path | None = None  # [tool.weanj.julia] project: the user's Julia environment

    @property
    def where(self) -> str:
        return str(self.pyproject) if self.pyproject else str(self.root)

    @property
    def roots(self) -> tuple[Path, ...]:
        """Where the project's own code lives: its root, then its `pythonpath`, resolved."""
        return (Path(self.root).resolve(), *(Path(p).resolve() for p in self.pythonpath))

    def describe(self) -> str:
        """`project /path (found as ...)` for messages that name the project."""
        return f"project {self.root} ({self.how or 'given'})"


_KEYS = {
    "examples",
    "builtin",
    "entry-points",
    "pythonpath",
    "scheduler",
    "x64",
    "require",
    "devices",
    "timeout",
    "julia",
}


def _julia_project(pyproject: Path, root: Path, table) -> Path | None:
    """`[tool.weanj.julia] project`: a folder (relative to the root, or absolute) holding
    a Julia environment of the user's; whether it holds one is the Julia variants' concern
    (they are unavailable, saying why). A table of another shape is one line."""
    if table is None:
        return None
    if not isinstance(table, dict) or set(table) - {"project"}:
        raise ProjectError(
            f'{pyproject}: [tool.weanj.julia] takes one key, project = "path/to/environment"'
        )
    project = table.get("project")
    if project is None:
        return None
    if not isinstance(project, str) or not project:
        raise ProjectError(
            f"{pyproject}: [tool.weanj.julia] project must be the path of a Julia "
            'environment, e.g. project = "julia/env"'
        )
    return (root / Path(project).expanduser()).resolve()


def _strings(pyproject: Path, key: str, value, example: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(m, str) and m for m in value):
        raise ProjectError(f"{pyproject}: [tool.weanj] {key} must be a list of {example}")
    return tuple(value)


def _folder(root: Any) -> Path:
    """`project_config`'s `root`: a folder's path, or one line saying so."""
    if not isinstance(root, (str, os.PathLike)):
        raise ProjectError(f"project_config: root must be a folder (str or Path), got {root!r}")
    return Path(root)


def _pythonpath(root: Path, pyproject: Path, table: dict) -> tuple[Path, ...]:
    """`[tool.weanj] pythonpath`: the folders, resolved under `root`, each one that is."""
    folders = _strings(
        pyproject, "pythonpath", table.get("pythonpath", []), 'folders, e.g. pythonpath = ["src"]'
    )
    pythonpath = []
    for folder in folders:
        path = (root / folder).resolve()
        if not path.is_dir():
            raise ProjectError(
                f"{pyproject}: [tool.weanj] pythonpath names {folder}, which is not a folder "
                f"of {root}"
            )
        pythonpath.append(path)
    return tuple(pythonpath)


def project_config(root: Path | None = None) -> ProjectConfig:
    """The `[tool.weanj]` table of the project at `root` (default: `find_root()`)."""
    how = "given"
    if root is None:
        root, how = find_root()
    root = _folder(root)
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
    examples = _strings(
        pyproject,
        "examples",
        table.get("examples", []),
        'module names, e.g. examples = ["kernels.smooth"]',
    )
    pythonpath = _pythonpath(root, pyproject, table)
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
    x64 = table.get("x64")
    if x64 is not None and not isinstance(x64, bool):
        raise ProjectError(
            f"{pyproject}: [tool.weanj] x64 must be true or false (JAX's 64-bit types in the "
            "program that runs the examples)"
        )
    require = _strings(
        pyproject, "require", table.get("require", []), 'backends, e.g. require = ["julia"]'
    )
    devices = _strings(
        pyproject, "devices", table.get("devices", []), 'devices, e.g. devices = ["cpu", "tpu"]'
    )
    unknown = sorted(set(devices) - set(DEVICES))
    if unknown:
        raise ProjectError(
            f"{pyproject}: [tool.weanj] devices names {', '.join(unknown)} (devices are "
            f"{', '.join(DEVICES)})"
        )
    return ProjectConfig(
        root,
        examples,
        timeout=_timeout(pyproject, table.get("timeout", DEFAULT_TIMEOUT)),
        builtin=builtin,
        entry_points=entry,
        pyproject=pyproject,
        how=how,
        pythonpath=pythonpath,
        table=table,
        x64=x64,
        require=require,
        devices=devices,
        julia_project=_julia_project(pyproject, root, table.get("julia")),
    )


def _timeout(pyproject: Path, value) -> float | None:
    """`[tool.weanj] timeout`: seconds ≥ 0 (0: no limit)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ProjectError(
            f"{pyproject}: [tool.weanj] timeout must be a number of seconds >= 0 (the time "
            "limit of a variant's call; 0: none), e.g. timeout = 600"
        )
    if not math.isfinite(value):
        return None
    return float(value) or None


class TimeLimit(float):
    """Seconds a variant's call may take, with where that comes from (`source`, said in
    every timeout line: the command line's `--timeout`, the project's table, the
    default)."""

    source: str = ""

    def __new__(cls, seconds: float, source: str) -> TimeLimit:
        limit = super().__new__(cls, seconds)
        limit.source = source
        return limit

    def __reduce__(self) -> tuple:  # pickled with its source (a Dask worker's time limit)
        return (TimeLimit, (float(self), self.source))


def time_limit(given: float | None, config: ProjectConfig | None = None) -> float | None:
    """The time limit of a variant's call (a `TimeLimit`, or None: none): `given`
    (`--timeout S`, `timeout=` of the API; 0: none) where given, else the project's
    `[tool.weanj] timeout` (default 600 s; `config` None: the project found from here, or
    the default outside any)."""
    if isinstance(given, TimeLimit):
        return given
    if given is not None:
        source = f" (given: --timeout {float(given):g}, or timeout= of the API; 0: none)"
        return TimeLimit(given, source) if float(given) else None
    if config is None:
        try:
            config = project_config()
        except ProjectError:
            config = None
    seconds = DEFAULT_TIMEOUT if config is None else config.timeout
    source = (
        f" (the default, {DEFAULT_TIMEOUT:g} s: [tool.weanj] timeout or --timeout S changes "
        "it, 0: none)"
    )
    if config is not None and "timeout" in (config.table or {}):
        where = config.pyproject or config.root
        source = f" ([tool.weanj] timeout in {where}; --timeout S changes it, 0: none)"
    return TimeLimit(seconds, source) if seconds else None
