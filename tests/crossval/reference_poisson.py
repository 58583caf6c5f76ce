"""The Poisson examples (01-jacobi, 02-gauss-seidel) in the interface every example's
reference module offers the registry-driven tests (see `cases.py`): the loops themselves
are `reference.py`'s."""

from __future__ import annotations

import numpy as np

from . import reference

ALGORITHMS = {"jacobi": "jacobi", "lex": "lex", "rb": "rb"}

# Odd n (so red and black counts differ) and enough sweeps that every point feels every
# other one; the op-by-op (non-jit) case is tiny, since nested scans run ~0.1 s per
# point update without jit.
SMALL_N, SMALL_K = 7, 5
EAGER_N, EAGER_K = 3, 2


def _inputs(n: int, K: int, seed: int):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((n, n))
    uobs = rng.standard_normal((n, n)) / (n + 1) ** 2  # the size of a solution (u ≈ h2·θ)
    return {"theta": theta, "uobs": uobs}, {"K": K}


def small_inputs(seed: int = 20261130):
    return _inputs(SMALL_N, SMALL_K, seed)


def eager_inputs(seed: int = 7):
    return _inputs(EAGER_N, EAGER_K, seed)


def random_inputs(rng: np.random.Generator):
    """Unseen inputs: n = 9, K = 13, scales drawn too."""
    n = 9
    theta = rng.standard_normal((n, n)) * rng.uniform(0.1, 10)
    uobs = rng.standard_normal((n, n)) * rng.uniform(1e-3, 1e-1)
    return {"theta": theta, "uobs": uobs}, {"K": 13}


def loss(algorithm: str, arrays, params) -> float:
    return reference.loss(algorithm, arrays["theta"], arrays["uobs"], params["K"])


def gradient(algorithm: str, arrays, params) -> dict[str, np.ndarray]:
    return {
        "theta": reference.adjoint_gradient(algorithm, arrays["theta"], arrays["uobs"], params["K"])
    }
