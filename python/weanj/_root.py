"""Where `shared_inputs/` and `results/` live.

`$WEANJ_ROOT` if set, else the repository of an editable install (the checkout this
package was imported from), else the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _checkout_root() -> Path | None:
    # python/weanj/__init__.py -> the repository is two levels above the package.
    candidate = _PACKAGE_DIR.parent.parent
    if (candidate / "pyproject.toml").is_file() and (candidate / "shared_inputs").is_dir():
        return candidate
    return None


def project_root() -> Path:
    """The project root: `$WEANJ_ROOT`, else the editable checkout, else the cwd."""
    env = os.environ.get("WEANJ_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    return _checkout_root() or Path.cwd().resolve()


def results_dir(example: str) -> Path:
    """`results/<example>/` under the project root."""
    return project_root() / "results" / example
