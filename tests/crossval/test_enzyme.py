"""The Enzyme-JAX variants: Enzyme's gradients of the JAX forwards against their families.

Inputs are drawn here (unseen). Enzyme compiles slowly, so each variant is evaluated
once per dtype and the results are shared by the tests.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import weanj
from weanj._backends._enzyme import enzyme_passes

from .cases import (
    assert_agrees_with_family_and_reference,
    assert_float32_within_float64_policy,
    optional_backend,
)

pytestmark = optional_backend(
    "enzyme",
    "enzyme_ad",
    "needs the optional package enzyme-ad (pip install 'weanj[enzyme]', CPython 3.11)",
)

# (example, Enzyme variant, the JAX variant whose forward it differentiates, algorithm)
ENZYME = [
    ("01-jacobi", "jax-jacobi-enzyme", "jax-jacobi", "jacobi"),
    ("02-gauss-seidel", "jax-lex-enzyme", "jax-lex", "lex"),
    ("02-gauss-seidel", "jax-rb-enzyme", "jax-rb", "rb"),
]
IDS = [case[1] for case in ENZYME]
N, K = 7, 5


@functools.cache
def inputs(dtype: str = "float64") -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(9_2026)
    theta, uobs = rng.standard_normal((N, N)), rng.standard_normal((N, N)) / (N + 1) ** 2
    return theta.astype(dtype), uobs.astype(dtype)


@functools.cache
def evaluate(example: str, name: str, dtype: str = "float64"):
    v = weanj.variant(example, name)
    theta, uobs = inputs(dtype)
    return np.asarray(v.loss(theta, uobs, K)), np.asarray(v.grad(theta, uobs, K))


@pytest.mark.parametrize("example, name, sibling, algorithm", ENZYME, ids=IDS)
def test_agrees_with_family_and_reference(example, name, sibling, algorithm):
    loss, grad = evaluate(example, name)
    assert loss.dtype == np.float64 and grad.dtype == np.float64
    assert_agrees_with_family_and_reference(
        name, sibling, algorithm, lambda v: evaluate(example, v), *inputs(), K
    )


@pytest.mark.parametrize("example, name, sibling, algorithm", ENZYME, ids=IDS)
def test_float32_within_policy(example, name, sibling, algorithm):
    assert_float32_within_float64_policy(
        name, sibling, evaluate(example, name, "float32"), evaluate(example, sibling)
    )


@pytest.mark.parametrize("example, name, sibling, algorithm", ENZYME, ids=IDS)
def test_gradient_is_computed_by_enzyme(example, name, sibling, algorithm):
    # jax.grad of an enzyme_jax_ir function must not fall back to JAX's own AD: the
    # gradient's program is one Enzyme call whose pipeline runs Enzyme's reverse mode,
    # and the forward is an Enzyme call without any differentiation pass.
    v = weanj.variant(example, name)
    theta, uobs = inputs()
    evaluate(example, name)  # reuse the compiled functions' traces
    grad_passes = enzyme_passes(v.grad, theta, uobs, K)
    assert any("enzyme-wrap" in p and "mode=ReverseMode" in p for p in grad_passes), grad_passes
    loss_passes = enzyme_passes(v.loss, theta, uobs, K)
    assert loss_passes and not any("enzyme-wrap" in p for p in loss_passes)
    plain = weanj.variant(example, sibling)
    assert enzyme_passes(plain.grad, theta, uobs, K) == []
    # K is static, as for every JAX variant: .lower works and names the shapes.
    assert f"{N}x{N}xf64" in v.grad.lower(theta, uobs, K).as_text()
