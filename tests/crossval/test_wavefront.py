"""`jax-wavefront` performs `jax-lex`'s arithmetic: its loss and grid are bitwise jax-lex's.

The hyperplane schedule only reorders *independent* point updates (see
`weanj/examples/_wavefront.py`), so every point sees the same operands in the same
order; any difference in the last bit means a point read a value of the wrong sweep.
Sizes cover the edge cases of the schedule: n = 1, K < n, K = n, K > n (the block of
diagonals is then the whole grid), odd and even n.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import weanj
from weanj.examples import gauss_seidel

EXAMPLE = "02-gauss-seidel"
SEED = 6_2026_11_30  # unseen inputs: not the shared inputs' seed


def _inputs(n, K, dtype=np.float64):
    rng = np.random.default_rng([SEED, n, K])
    theta = rng.standard_normal((n, n)).astype(dtype)
    uobs = (0.01 * rng.standard_normal((n, n))).astype(dtype)
    return theta, uobs


def _solve(fn, theta, K):
    with jax.enable_x64(True):
        return np.asarray(jax.jit(fn, static_argnums=1)(theta, K))


@pytest.mark.parametrize("n,K", [(1, 1), (2, 5), (3, 2), (7, 12), (16, 5)])
def test_loss_bitwise_equal_to_jax_lex(n, K):
    theta, uobs = _inputs(n, K)
    lex, wave = weanj.variant(EXAMPLE, "jax-lex"), weanj.variant(EXAMPLE, "jax-wavefront")
    assert float(wave.loss(theta, uobs, K)) == float(lex.loss(theta, uobs, K))


def test_grid_bitwise_equal_to_jax_lex():
    # The loss could agree by luck of cancellation; the grid u^K cannot.
    theta, _ = _inputs(8, 3)
    u_lex = _solve(gauss_seidel.lex_solve, theta, 3)
    u_wave = _solve(gauss_seidel.wavefront_solve, theta, 3)
    assert u_wave.tobytes() == u_lex.tobytes(), np.abs(u_wave - u_lex).max()


def test_float32_bitwise_equal_to_jax_lex():
    theta, uobs = _inputs(9, 4, np.float32)
    lex, wave = weanj.variant(EXAMPLE, "jax-lex"), weanj.variant(EXAMPLE, "jax-wavefront")
    l_lex, l_wave = lex.loss(theta, uobs, 4), wave.loss(theta, uobs, 4)
    assert l_wave.dtype == np.float32
    assert float(l_wave) == float(l_lex)


def test_shared_inputs_loss_bitwise_and_gradient_within_policy():
    d = weanj.load_inputs(EXAMPLE)
    args = (d["theta"], d["uobs"], d["K"])
    lex, wave = weanj.variant(EXAMPLE, "jax-lex"), weanj.variant(EXAMPLE, "jax-wavefront")
    loss_lex, loss_wave = float(lex.loss(*args)), float(wave.loss(*args))
    assert loss_wave == loss_lex
    c = weanj.compare(
        np.asarray(lex.grad(*args)), np.asarray(wave.grad(*args)), loss_lex, loss_wave
    )
    assert c.agree, c


@pytest.mark.slow
def test_bitwise_at_the_largest_acceptance_size():
    # A few seconds (jax-lex's forward is fast enough; its gradient would not be).
    # benchmarks/wavefront_bitwise.py checks a grid of sizes up to here.
    n, K = 257, 300
    theta, uobs = _inputs(n, K)
    lex, wave = weanj.variant(EXAMPLE, "jax-lex"), weanj.variant(EXAMPLE, "jax-wavefront")
    assert float(wave.loss(theta, uobs, K)) == float(lex.loss(theta, uobs, K))
