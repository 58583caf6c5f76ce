"""Shared test helpers: running the CLI in a subprocess, writing HDF5 files by hand, and
a plain-numpy Jacobi reference that the store and CLI tests check numbers against."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

PYTHON = sys.executable


def subprocess_env(root: Path | None = None, **extra: str) -> dict[str, str]:
    """The current environment with `$WEANJ_ROOT` set to `root` (when given)."""
    env = dict(os.environ)
    if root is not None:
        env["WEANJ_ROOT"] = str(root)
    env.update(extra)
    return env


def run_weanj(*args: str, root: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m weanj ARGS` in a fresh process whose project root is `root`."""
    return subprocess.run(
        [PYTHON, "-m", "weanj", *args],
        env=subprocess_env(root),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_one_line_error(stderr: str, *fragments: str) -> str:
    """`stderr` is exactly one line, no traceback, containing every fragment."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{stderr}"
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    return lines[0]


def write_h5(path: Path, attrs: dict | None = None, **datasets) -> Path:
    """An HDF5 file with the given datasets and attributes (a user's own inputs file)."""
    with h5py.File(path, "w") as f:
        for name, data in datasets.items():
            f.create_dataset(name, data=data)
        for key, value in (attrs or {}).items():
            f.attrs[key] = value
    return path


def raw_datasets(path: Path) -> dict[str, np.ndarray]:
    """Every dataset of an HDF5 file, read with h5py directly (not through weanj)."""
    with h5py.File(path, "r") as f:
        return {name: f[name][()] for name in f}


def sha256_of(*arrays: np.ndarray) -> str:
    """The inputs digest as README.md defines it: little-endian float64 bytes, in order."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype="<f8").tobytes())
    return h.hexdigest()


def jacobi_reference(theta: np.ndarray, K: int) -> np.ndarray:
    """u^K of the Jacobi iteration from u⁰ = 0, interior only, in plain numpy."""
    n = theta.shape[0]
    h2 = 1.0 / (n + 1) ** 2
    u = np.zeros((n + 2, n + 2))
    for _ in range(K):
        interior = (h2 * theta + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) / 4
        u = u.copy()
        u[1:-1, 1:-1] = interior
    return u[1:-1, 1:-1]


def jacobi_loss_and_gradient(theta: np.ndarray, uobs: np.ndarray, K: int):
    """Loss and gradient of the Jacobi example without any AD.

    u^K = A θ with A = (h2/4) Σ_{k<K} Sᵏ, and the 5-point averaging S with a zero boundary
    is symmetric, so A is too: ∇L = 2 Aᵀ (Aθ − uobs) = A (2 (u^K − uobs)), i.e. one more
    Jacobi solve with the residual as the source.
    """
    residual = jacobi_reference(theta, K) - uobs
    return float(np.sum(residual**2)), jacobi_reference(2 * residual, K)
