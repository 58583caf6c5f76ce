"""Families: same-family variants agree on the shared inputs, every variant passes the
finite-difference check, and every family converges to the discrete Poisson solution."""

from __future__ import annotations

import numpy as np
import pytest

import weanj

from . import reference
from .cases import (
    SMALL_K,
    algorithm_of,
    assert_within_policy,
    family_cases,
    on_shared,
    on_small,
    pair_cases,
    shared_inputs,
    small_inputs,
    variant_cases,
)


@pytest.mark.parametrize(("example", "a", "b"), pair_cases())
def test_same_family_pair_agrees(example, a, b):
    loss_a, g_a = on_shared(example, a)
    loss_b, g_b = on_shared(example, b)
    assert_within_policy(loss_a, g_a, loss_b, g_b, what=f"{example} {a} vs {b}")
    # `weanj diff` and `weanj check` judge by `compare`: it must reach the same verdict.
    assert weanj.compare(g_a, g_b, loss_a, loss_b).agree


@pytest.mark.parametrize(("example", "name"), variant_cases())
def test_fd_check(example, name):
    d = shared_inputs(example)
    v = weanj.variant(example, name)
    _, g = on_shared(example, name)
    err = weanj.fd_check(lambda t: v.loss(t, d["uobs"], d["K"]), d["theta"], g, n=10, h=1e-2)
    # Central differences of a quadratic loss are exact; rounding leaves ≈ 1e-9 here
    # (the seed notebook's figure), while a gradient of the wrong algorithm (lex vs
    # red-black differ by ~1e-2) or a missing term fails by orders of magnitude.
    assert err < 1e-6, f"{name}: fd_check relative error {err:.2e}"


# Sweeps at which the error is still well above rounding (K = 40) and at rounding level
# or close (K = 320): Jacobi contracts by cos(π/8) ≈ 0.92 per iteration at n = 7,
# Gauss–Seidel by its square. K = SMALL_K reuses the reference tests' compilation.
# Convergence is a property of the family's algorithm, so one variant per family runs
# it (each compilation at a new K costs seconds); the others are tied to that one by
# the pair tests and to the mathematics by the reference tests.
CONVERGENCE_KS = (SMALL_K, 40, 320)


@pytest.mark.parametrize(("example", "name"), family_cases())
def test_converges_to_dense_poisson_solution(example, name):
    algorithm_of(example, name)  # skips families without a reference
    v = weanj.variant(example, name)
    theta, _ = small_inputs()
    u_star = reference.fixed_point(theta)
    # With uobs = u*, the loss is exactly ‖u^K − u*‖²: the iteration's error.
    errors = [float(np.asarray(v.loss(theta, u_star, K))) for K in CONVERGENCE_KS]
    scale = float(np.sum(u_star**2))
    assert all(e1 > e2 for e1, e2 in zip(errors, errors[1:], strict=False)), (
        f"{name}: ‖u^K − u*‖² not decreasing over K = {CONVERGENCE_KS}: {errors}"
    )
    assert errors[-1] <= 1e-18 * scale, f"{name}: ‖u^K − u*‖²/‖u*‖² = {errors[-1] / scale:.2e}"


@pytest.mark.parametrize(("example", "name"), family_cases())
def test_gradient_converges_to_fixed_point_gradient(example, name):
    algorithm_of(example, name)
    v = weanj.variant(example, name)
    theta, uobs = small_inputs()
    g_star = reference.fixed_point_gradient(theta, uobs)
    loss_star = float(np.sum((reference.fixed_point(theta) - uobs) ** 2))
    scale = float(np.max(np.abs(g_star)))
    _, g_few = on_small(example, name)
    K = CONVERGENCE_KS[-1]
    g_many = np.asarray(v.grad(theta, uobs, K))
    loss_many = float(np.asarray(v.loss(theta, uobs, K)))
    err_few = float(np.max(np.abs(g_few - g_star))) / scale
    err_many = float(np.max(np.abs(g_many - g_star))) / scale
    assert err_many < err_few, f"{name}: gradient error {err_many:.2e} at K={K} vs {err_few:.2e}"
    assert err_many <= 1e-8, f"{name}: gradient at K={K} is {err_many:.2e} from the fixed point's"
    assert abs(loss_many - loss_star) <= 1e-10 * loss_star
