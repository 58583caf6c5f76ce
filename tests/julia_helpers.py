"""What the Julia tests share: a clean slate for the Julia variants of this process, no
Julia anywhere, fake `julia` executables (tests/test_julia_discovery.py finds Julia among
them; tests/test_julia_variants.py runs weanj with them), examples registered for one test,
and the inputs of a graph kernel (tests/test_julia_variants.py refuses them before they
cross; tests/test_julia_worker.py sends them across)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._backends import _julia, _julia_client, _julia_find, _julia_stand_in
from weanj._registry import find_variant

# What points weanj, juliacall and juliapkg at a Julia: none of them set in a test of no Julia.
SETTINGS = (
    _julia_find.ENV_VAR,
    _julia_stand_in.WORKER_VARIABLE,
    "PYTHON_JULIACALL_EXE",
    "PYTHON_JULIACALL_PROJECT",
    "PYTHON_JULIAPKG_EXE",
    "JULIAUP_DEPOT_PATH",
)
SLEEP = shutil.which("sleep") or "/bin/sleep"  # by its path: the tests empty PATH


def forget_julia() -> None:
    """No worker running, no failed start remembered, and no Julia variant's functions
    built: a variant builds its functions once, after checking that it is available, so
    one built while a stand-in worker was configured would skip the check later."""
    _julia_client.forget()
    for example, name in _julia.julia_kernels(_registry.catalogs()):
        v = find_variant(example, name)
        if v is not None:
            v._built.clear()


def one_line(text: str) -> str:
    """`text`, asserted to be one line."""
    assert "\n" not in text.strip(), text
    return text


def fake_julia(path: Path, version: str | None = "1.11.5", *, delay: float = 0) -> Path:
    """An executable that is not Julia: it answers `--version` as Julia `version` would
    (None: it fails), fails on anything else, and appends every call to `<path>.calls`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    answer = f'echo "julia version {version}"; exit 0' if version else "exit 1"
    path.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{path}.calls"\n'
        + (f"{SLEEP} {delay}\n" if delay else "")
        + f'if [ "$1" = "--version" ]; then {answer}; fi\n'
        "exit 1\n"
    )
    path.chmod(0o755)
    return path


def calls(path: Path) -> list[str]:
    """The calls a `fake_julia` received, in order."""
    log = Path(f"{path}.calls")
    return log.read_text().splitlines() if log.exists() else []


def juliaup_install(depot: Path, folder: str) -> Path:
    """A version juliaup installed: `<depot>/juliaup/<folder>/bin/julia`."""
    version = re.match(r"julia-([^+]+)", folder).group(1)
    return fake_julia(depot / "juliaup" / folder / "bin" / "julia", version)


@pytest.fixture
def no_julia(tmp_path, monkeypatch) -> Path:
    """No Julia anywhere: no settings, an empty PATH folder (returned), a bare HOME, no
    worker and no failed start remembered."""
    for var in SETTINGS:
        monkeypatch.delenv(var, raising=False)
    path_dir = tmp_path / "bin"
    path_dir.mkdir()
    monkeypatch.setenv("PATH", str(path_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _julia_find._probe_version.cache_clear()
    forget_julia()
    yield path_dir
    forget_julia()


@pytest.fixture
def new_example():
    """`make(name, **fields)`: register a user example for one test (its variants, Julia
    kernels included, with it); taken back afterwards."""
    made = []

    def make(name, **fields):
        made.append(name)
        fields.setdefault("generate", lambda seed: {})
        return weanj.register_example(weanj.Example(name=name, **fields))

    yield make
    for name in made:
        _registry.unregister_example(name)


def graph_inputs(dtype):
    """x, z (complex), edges (int32, 0-based), mask (bool), w: the arrays of
    `helpers.graph_fields`'s example."""
    rng = np.random.default_rng(11)
    complex_dtype = np.complex128 if dtype == np.float64 else np.complex64
    x = rng.standard_normal(4).astype(dtype)
    z = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(complex_dtype)
    edges = np.array([[0, 1], [1, 3], [3, 0], [2, 3]], dtype=np.int32)  # 0-based; 3 the last
    mask = np.array([True, False, True, True])
    w = rng.standard_normal(4).astype(dtype)
    return x, z, edges, mask, w


@contextlib.contextmanager
def commands_here(env: dict[str, str]):
    """This process's environment as `env` (the environment of the project's commands)
    sets it, while the block runs, for `weanj_here`: the command runs as a fresh process
    would, and a worker it starts is a process of its own, with the same settings; no
    worker runs before or after the block."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            if os.environ.get(key) != value:
                mp.setenv(key, value)
        forget_julia()
        try:
            yield
        finally:
            forget_julia()
