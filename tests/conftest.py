"""Shared fixtures: every test that writes runs in a temporary project root."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# The test suite is a program that runs JAX with 64-bit types on, as weanj's own examples
# declare theirs (`[tool.weanj] x64 = true`): the variants its tests register in this
# process, and the user projects it runs in subprocesses, inherit the setting (weanj
# switches nothing, docs/DESIGN.md §2.2). The tests of that rule (test_x64.py) start their
# subprocesses without it.
os.environ.setdefault("JAX_ENABLE_X64", "1")
if "jax" in sys.modules:
    sys.modules["jax"].config.update("jax_enable_x64", os.environ["JAX_ENABLE_X64"] == "1")

# `weanj clean` removes without `--yes` where `CI=true` (as CI jobs want it): the tests run
# the same on a developer's machine and in CI, so the variable is not inherited; the tests
# of that rule (test_clean.py) set it themselves.
os.environ.pop("CI", None)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A temporary project root (`$WEANJ_ROOT`) holding a copy of the committed
    `shared_inputs/` and `results/*/recorded/`, so tests never write into the checkout."""
    shutil.copytree(REPO / "shared_inputs", tmp_path / "shared_inputs")
    for recorded in (REPO / "results").glob("*/recorded"):
        shutil.copytree(recorded, tmp_path / recorded.relative_to(REPO))
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """A user project outside this repository (`projects.tiny_project`): 10-tiny (two
    variants of one family) and 11-other, its inputs written; one per test module."""
    from .projects import tiny_project

    return tiny_project(tmp_path_factory.mktemp("tiny-project"))


def pytest_configure(config):
    """One compilation cache for the whole session, made fresh for it (so every run is
    timed cold, and nothing depends on an earlier run): the main process makes it, and
    xdist's workers and the subprocesses tests start inherit it through
    `$WEANJ_COMPILATION_CACHE`. Every test process turns it on, so that a program
    compiled by one test (or one worker) is loaded, not compiled again, by the next.
    A user's own `$WEANJ_COMPILATION_CACHE` is left alone."""
    import os
    import tempfile

    from weanj._io import _jax_cache as _cache

    if "WEANJ_COMPILATION_CACHE" not in os.environ:
        folder = tempfile.mkdtemp(prefix="weanj-test-cache-")
        os.environ["WEANJ_COMPILATION_CACHE"] = folder
        config.stash[_MADE] = folder
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and "PYTHONPYCACHEPREFIX" not in os.environ:
        # A machine whose Python writes no bytecode (this one's environment says so) makes
        # every fresh process a test starts compile weanj's modules again, and every
        # `pytest --weanj` rewrite its asserts again. The processes this session starts
        # (xdist's workers, the tests' subprocesses) write it to one folder of the
        # session's instead, never beside a project's files; removed at the end.
        prefix = tempfile.mkdtemp(prefix="weanj-test-pycache-")
        os.environ.pop("PYTHONDONTWRITEBYTECODE")
        os.environ["PYTHONPYCACHEPREFIX"] = prefix
        config.stash[_PYCACHE] = prefix
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # One XLA thread per xdist worker (set before JAX starts its CPU backend; the
        # subprocesses a test starts inherit it): `-n 2` on two cores then runs two
        # threads, not two pools contending for the cores (measured: the crossval matrix
        # ~12 % faster). On the built-in examples' shared inputs every variant's loss and
        # gradient are bit for bit those of the default thread pool.
        one = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {one}".strip()
    distributing = getattr(config.option, "numprocesses", None) and not hasattr(
        config, "workerinput"
    )
    if not distributing:  # xdist's main process runs no test
        _cache.enable()


def pytest_unconfigure(config):
    for key in (_MADE, _PYCACHE):
        folder = config.stash.get(key, None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


_MADE = pytest.StashKey[str]()
_PYCACHE = pytest.StashKey[str]()
