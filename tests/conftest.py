"""Shared fixtures: every test that writes runs in a temporary project root."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A temporary project root (`$WEANJ_ROOT`) holding a copy of the committed
    `shared_inputs/` and `results/*/recorded/`, so tests never write into the checkout."""
    shutil.copytree(REPO / "shared_inputs", tmp_path / "shared_inputs")
    for recorded in (REPO / "results").glob("*/recorded"):
        shutil.copytree(recorded, tmp_path / recorded.relative_to(REPO))
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    return tmp_path


def pytest_configure(config):
    """One compilation cache for the whole session (and the subprocesses it starts), in a
    folder of its own: commands run in-process turn the cache on for the process, and
    must not leave it pointing into one test's temporary project; the kernels compiled
    once are reused by every later command of the session. A user's own
    `$WEANJ_COMPILATION_CACHE` is left alone."""
    import os
    import tempfile

    if "WEANJ_COMPILATION_CACHE" not in os.environ:
        folder = Path(tempfile.gettempdir()) / f"weanj-test-cache-{os.getuid()}"
        os.environ["WEANJ_COMPILATION_CACHE"] = str(folder)
