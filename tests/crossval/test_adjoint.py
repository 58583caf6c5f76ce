"""The hand-derived discrete adjoints (`-adjoint` variants and `jax-wavefront`'s gradient).

Proved two ways, not assumed (the derivation is in `weanj/examples/_adjoint.py`):

- each transposed solve is the transpose of its forward solve: the dot-product test
  `<solve(θ), r> = h2·<θ, transpose_solve(r)>` on random vectors;
- each gradient agrees with JAX AD of the plain variant of its family (`jax-lex`,
  `jax-rb`, `jax-jacobi`) on unseen random inputs, under the float64 tolerance policy.

And the point of an adjoint without stored states: XLA's temporary memory for the
gradient does not grow with K (deterministic for a given XLA, so asserted here).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import weanj
from weanj.examples import _poisson, gauss_seidel, jacobi

# (example, plain variant differentiated by JAX AD, variant with a hand-derived adjoint)
PAIRS = [
    ("01-jacobi", "jax-jacobi", "jax-jacobi-adjoint"),
    ("02-gauss-seidel", "jax-lex", "jax-wavefront"),
    ("02-gauss-seidel", "jax-rb", "jax-rb-adjoint"),
]
PAIR_IDS = [f"{plain}-vs-{adjoint}" for _, plain, adjoint in PAIRS]

# (forward solve, transposed solve) as `_adjoint.with_adjoint` receives them.
SOLVES = {
    "jacobi": (jacobi.jacobi_solve, jacobi.jacobi_transpose_solve),
    "lex": (gauss_seidel.wavefront_solve, gauss_seidel.lex_transpose_solve),
    "rb": (gauss_seidel.rb_solve, gauss_seidel.rb_transpose_solve),
}

SEED = 6_0_2026_11_30  # unseen inputs: not the shared inputs' seed
# Odd and even n (red and black counts differ for odd n), K below and above n.
SIZES = [(3, 2), (10, 13)]


def _inputs(n, K, dtype=np.float64):
    rng = np.random.default_rng([SEED, n, K])
    theta = rng.standard_normal((n, n)).astype(dtype)
    uobs = (0.01 * rng.standard_normal((n, n))).astype(dtype)
    return theta, uobs


@pytest.mark.parametrize("algorithm", list(SOLVES))
@pytest.mark.parametrize("n,K", [(7, 9)])
def test_transpose_solve_is_the_transpose(algorithm, n, K):
    solve, transpose_solve = SOLVES[algorithm]
    rng = np.random.default_rng([SEED, n, K, 1])
    theta, r = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    with jax.enable_x64(True):
        u = np.asarray(jax.jit(solve, static_argnums=1)(theta, K))[1:-1, 1:-1]
        z = np.asarray(jax.jit(transpose_solve, static_argnums=1)(r, K))[1:-1, 1:-1]
    lhs, rhs = np.vdot(u, r), _poisson.h2(n) * np.vdot(theta, z)
    # Both sides are sums of n² products of O(1) terms: rounding is far below 1e-12.
    assert abs(lhs - rhs) <= 1e-12 * max(np.abs(u * r).sum(), 1e-300), (lhs, rhs)


@pytest.mark.parametrize("example,plain,adjoint", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("n,K", SIZES, ids=[f"n{n}-K{K}" for n, K in SIZES])
def test_adjoint_gradient_matches_jax_ad(example, plain, adjoint, n, K):
    theta, uobs = _inputs(n, K)
    ref, v = weanj.variant(example, plain), weanj.variant(example, adjoint)
    g_ref, g = np.asarray(ref.grad(theta, uobs, K)), np.asarray(v.grad(theta, uobs, K))
    assert g.shape == (n, n) and g.dtype == np.float64
    # (Losses: bitwise for jax-wavefront, test_wavefront.py; the -adjoint variants run
    # their plain variant's own forward code.)
    c = weanj.compare(g_ref, g)
    assert c.agree, c
    # A gradient that is zero (or wrong in sign) would not be caught by a loose check on
    # tiny values: the reference gradient is far from zero here.
    assert np.abs(g_ref).max() > 1e-6


@pytest.mark.parametrize("example,plain,adjoint", PAIRS, ids=PAIR_IDS)
def test_adjoint_gradient_float32(example, plain, adjoint):
    theta, uobs = _inputs(5, 4, np.float32)
    ref, v = weanj.variant(example, plain), weanj.variant(example, adjoint)
    g_ref, g = np.asarray(ref.grad(theta, uobs, 4)), np.asarray(v.grad(theta, uobs, 4))
    assert g.dtype == np.float32
    c = weanj.compare(g_ref, g)
    assert c.agree, c


@pytest.mark.parametrize("example,plain,adjoint", PAIRS, ids=PAIR_IDS)
def test_gradient_memory_does_not_grow_with_K(example, plain, adjoint):
    # Acceptance: temp memory at K = 1000 is at most 1.1× that at K = 10 (n = 128).
    # (JAX AD of the plain variants does not store them either: their sweeps are linear
    # in u and θ, so its linearisation keeps no residuals. This guards the adjoints.)
    theta = np.zeros((128, 128))

    def temp_bytes(name, K):
        compiled = weanj.variant(example, name).grad.lower(theta, theta, K).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    small, large = temp_bytes(adjoint, 10), temp_bytes(adjoint, 1000)
    assert large <= 1.1 * small, (small, large)
