"""Properties every variant must have: inputs are not mutated, jit and non-jit agree,
float32 stays within its tolerance of float64."""

from __future__ import annotations

import numpy as np
import pytest

import weanj

from . import reference
from .cases import (
    SMALL_K,
    algorithm_of,
    assert_within_policy,
    on_small,
    reference_on_small,
    small_inputs,
    variant_cases,
)

# Op-by-op execution of the nested scans costs ~0.1 s per point update (and kernex's
# eager path more), so the non-jit comparison runs on a tiny problem.
EAGER_N, EAGER_K = 3, 2


@pytest.mark.parametrize(("example", "name"), variant_cases())
def test_inputs_not_mutated(example, name):
    # In-place kernels (Julia through juliacall, custom calls) could write into the
    # caller's arrays; the loss and gradient must leave them bit for bit unchanged.
    theta, uobs = (a.copy() for a in small_inputs())
    v = weanj.variant(example, name)
    v.loss(theta, uobs, SMALL_K)
    v.grad(theta, uobs, SMALL_K)
    original_theta, original_uobs = small_inputs()
    assert np.array_equal(theta, original_theta) and theta.dtype == np.float64
    assert np.array_equal(uobs, original_uobs) and uobs.dtype == np.float64


@pytest.mark.parametrize(("example", "name"), variant_cases())
def test_jit_and_nonjit_agree(example, name):
    import jax

    v = weanj.variant(example, name)
    if not hasattr(v.loss, "jitted"):
        pytest.skip(f"{name}: not a jax.jit function, so there is no non-jit mode to compare")
    if v.backend == "enzyme":
        pytest.skip(f"{name}: Enzyme-JAX primitives run only inside jit ('must be JIT'ed')")
    algorithm = algorithm_of(example, name)
    theta, uobs = small_inputs(n=EAGER_N, seed=7)
    jitted = (
        float(np.asarray(v.loss(theta, uobs, EAGER_K))),
        np.asarray(v.grad(theta, uobs, EAGER_K)),
    )
    with jax.disable_jit():
        eager = (
            float(np.asarray(v.loss(theta, uobs, EAGER_K))),
            np.asarray(v.grad(theta, uobs, EAGER_K)),
        )
    assert_within_policy(*jitted, *eager, what=f"{name} jit vs non-jit")
    # And both are the mathematics, not merely each other.
    assert_within_policy(
        reference.loss(algorithm, theta, uobs, EAGER_K),
        reference.adjoint_gradient(algorithm, theta, uobs, EAGER_K),
        *eager,
        what=f"{name} non-jit vs reference",
    )


@pytest.mark.parametrize(("example", "name"), variant_cases())
def test_float32_within_its_tolerance_of_float64(example, name):
    # At n = 7, K = 5 float32 rounding is ~1e-7 of max|g|, three orders inside the
    # float32 policy (1e-4), so the test is meaningful: a different
    # algorithm fails it, honest float32 rounding does not.
    loss_ref, g_ref = reference_on_small(algorithm_of(example, name))
    loss32, g32 = on_small(example, name, "float32")
    assert g32.dtype == np.float32, f"{name}: float32 inputs gave a {g32.dtype} gradient"
    assert_within_policy(
        loss_ref, g_ref, loss32, g32, dtype="float32", what=f"{name} float32 vs float64 reference"
    )
