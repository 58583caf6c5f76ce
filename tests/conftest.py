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
