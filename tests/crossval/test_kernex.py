"""The kernex variants against their families and the plain-loop reference.

Inputs are drawn here, unseen by the variants' authors (n 5..12, K 3..8). kernex's
interface objects resolve their shape on the first array they see, so a size sweep in
one process checks that weanj builds them per shape.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import weanj

from ..helpers import needs_xla_cpu
from .cases import (
    assert_agrees_with_family_and_reference,
    assert_float32_within_float64_policy,
    optional_backend,
)

pytestmark = optional_backend(
    "kernex", "kernex", "needs the optional package kernex (pip install 'weanj[kernex]')"
)

# (example, kernex variant, the family's JAX variant, the reference algorithm)
KERNEX = [
    ("01-jacobi", "kernex-jacobi", "jax-jacobi", "jacobi"),
    ("02-gauss-seidel", "kernex-lex", "jax-lex", "lex"),
    ("02-gauss-seidel", "kernex-rb", "jax-rb", "rb"),
]
IDS = [case[1] for case in KERNEX]
# A size sweep: the same built variant meets several shapes in one process.
SIZES = [(5, 3), (9, 6)]


@functools.cache
def inputs(n: int, seed: int = 8_2026) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng((seed, n))
    return rng.standard_normal((n, n)), rng.standard_normal((n, n)) / (n + 1) ** 2


@functools.cache
def evaluate(example: str, name: str, n: int, K: int, dtype: str = "float64"):
    theta, uobs = (a.astype(dtype) for a in inputs(n))
    v = weanj.variant(example, name)
    return np.asarray(v.loss(theta, uobs, K)), np.asarray(v.grad(theta, uobs, K))


@pytest.mark.parametrize("n, K", SIZES, ids=[f"n{n}-K{K}" for n, K in SIZES])
@pytest.mark.parametrize("example, name, sibling, algorithm", KERNEX, ids=IDS)
def test_agrees_with_family_and_reference(example, name, sibling, algorithm, n, K):
    assert_agrees_with_family_and_reference(
        name,
        sibling,
        algorithm,
        lambda v: evaluate(example, v, n, K),
        *inputs(n),
        K,
        where=f", n={n}, K={K}",
    )


def test_lex_loss_bitwise_equal_to_jax_lex():
    needs_xla_cpu("which additions XLA contracts into fused multiply-adds")
    # kernex-lex's kernel performs docs/DESIGN.md's additions in its order and its kscan
    # visits the points in the Julia loop's order, as jax-lex's scans do: the same bits.
    # (kernex-jacobi and kernex-rb are not bitwise equal to jax-jacobi and jax-rb: XLA's
    # CPU code for kernex's gathered windows contracts h2*θ + u[i-1,j] into a fused
    # multiply-add, its code for jax-jacobi's slices does not; see docs/gallery/gauss_seidel.md.)
    for n, K in SIZES:
        loss, _ = evaluate("02-gauss-seidel", "kernex-lex", n, K)
        jax_loss, _ = evaluate("02-gauss-seidel", "jax-lex", n, K)
        assert loss.dtype == np.float64
        assert weanj.ulp_distance(float(loss), float(jax_loss)) == 0, (n, K)


@pytest.mark.parametrize("example, name, sibling, algorithm", KERNEX, ids=IDS)
def test_float32_within_policy(example, name, sibling, algorithm):
    # Against the float64 sibling: the float32 result must be within float32's policy of
    # the float64 answer.
    n, K = SIZES[0]
    assert_float32_within_float64_policy(
        name, sibling, evaluate(example, name, n, K, "float32"), evaluate(example, sibling, n, K)
    )
