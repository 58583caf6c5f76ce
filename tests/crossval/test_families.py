"""Families: same-family variants agree on the shared inputs, every variant passes the
finite-difference check, and every family converges to the discrete Poisson solution."""

from __future__ import annotations

import numpy as np
import pytest

import weanj
from weanj import _matrix

from . import reference
from .cases import family_cases, matrix_cases, on_small


@pytest.mark.parametrize("case", matrix_cases("pair"))
def test_same_family_pair_agrees(case):
    # `pytest --weanj`'s own check: per gradient array, under the tolerance policy.
    _matrix.run_case(case)


@pytest.mark.parametrize("case", matrix_cases("fd"))
def test_fd_check(case):
    # The example's FDPolicy. For the quadratic Poisson losses central differences are
    # exact and rounding leaves ≈ 1e-9 (the seed notebook's figure), while a gradient of
    # the wrong algorithm (lex vs red-black differ by ~1e-2) fails by orders of magnitude.
    _matrix.run_case(case)


POISSON = ("01-jacobi", "02-gauss-seidel")


def small_inputs():
    from .reference_poisson import small_inputs

    arrays, params = small_inputs()
    return arrays["theta"], arrays["uobs"]


# Sweeps at which the error is still well above rounding (K = 40) and at rounding level
# or close (K = 320): Jacobi contracts by cos(π/8) ≈ 0.92 per iteration at n = 7,
# Gauss–Seidel by its square. K = 5 (the small inputs') reuses the reference tests'
# compilation.
# Convergence is a property of the family's algorithm, so one variant per family runs
# it (each compilation at a new K costs seconds); the others are tied to that one by
# the pair tests and to the mathematics by the reference tests.
CONVERGENCE_KS = (5, 40, 320)


@pytest.mark.parametrize(("example", "name"), family_cases(POISSON))
def test_converges_to_dense_poisson_solution(example, name):
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


@pytest.mark.parametrize(("example", "name"), family_cases(POISSON))
def test_gradient_converges_to_fixed_point_gradient(example, name):
    v = weanj.variant(example, name)
    theta, uobs = small_inputs()
    g_star = reference.fixed_point_gradient(theta, uobs)
    loss_star = float(np.sum((reference.fixed_point(theta) - uobs) ** 2))
    scale = float(np.max(np.abs(g_star)))
    g_few = on_small(example, name)[1]["theta"]
    K = CONVERGENCE_KS[-1]
    g_many = np.asarray(v.grad(theta, uobs, K))
    loss_many = float(np.asarray(v.loss(theta, uobs, K)))
    err_few = float(np.max(np.abs(g_few - g_star))) / scale
    err_many = float(np.max(np.abs(g_many - g_star))) / scale
    assert err_many < err_few, f"{name}: gradient error {err_many:.2e} at K={K} vs {err_few:.2e}"
    assert err_many <= 1e-8, f"{name}: gradient at K={K} is {err_many:.2e} from the fixed point's"
    assert abs(loss_many - loss_star) <= 1e-10 * loss_star
