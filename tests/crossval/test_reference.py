"""Every variant against the independent numpy reference, at small n, loss and gradient.

First the reference checks itself by two independent means (its hand-derived adjoint
against central differences of its own loops; its iterates against a dense solve), so
that agreement of a variant with it means agreement with the mathematics of docs/DESIGN.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from . import reference, reference_poisson
from .cases import assert_within_policy, on_small, reference_of, reference_on_small, variant_cases


def small_inputs(n: int, seed: int):
    arrays, _ = reference_poisson._inputs(n, 1, seed)
    return arrays["theta"], arrays["uobs"]


@pytest.mark.parametrize("algorithm", reference.ALGORITHMS)
def test_reference_adjoint_matches_its_finite_differences(algorithm):
    # n = 5 is even-sized enough to have interior points with four unknown neighbours.
    theta, uobs = small_inputs(n=5, seed=3)
    g_adj = reference.adjoint_gradient(algorithm, theta, uobs, 4)
    g_fd = reference.fd_gradient(algorithm, theta, uobs, 4)
    # Central differences of a quadratic are exact; only rounding (≈ eps·L/h) remains.
    assert np.max(np.abs(g_adj - g_fd)) <= 1e-12 * np.max(np.abs(g_fd))


@pytest.mark.parametrize("algorithm", reference.ALGORITHMS)
def test_reference_iterates_reach_the_dense_poisson_solution(algorithm):
    theta, _ = small_inputs(n=4, seed=4)
    u_star = reference.fixed_point(theta)
    u = reference.solve(algorithm, theta, 400)
    # The padded boundary stays zero; the interior satisfies A u = h2 θ.
    assert np.all(u[0] == 0) and np.all(u[-1] == 0) and np.all(u[:, 0] == 0)
    assert np.all(u[:, -1] == 0)
    assert np.max(np.abs(u[1:-1, 1:-1] - u_star)) <= 1e-13 * np.max(np.abs(u_star))


def test_reference_algorithms_differ_after_one_sweep():
    # Guards against a reference that silently runs one algorithm for all three names:
    # after one sweep from zero, lex and rb see new neighbours that Jacobi does not.
    theta, uobs = small_inputs(n=4, seed=5)
    losses = {a: reference.loss(a, theta, uobs, 1) for a in reference.ALGORITHMS}
    assert len({round(v, 15) for v in losses.values()}) == 3, losses


@pytest.mark.parametrize(("example", "name"), variant_cases())
def test_loss_matches_reference(example, name):
    _, algorithm = reference_of(example, name)
    loss_ref, g_ref = reference_on_small(example, algorithm)
    loss, _ = on_small(example, name)
    assert_within_policy(loss_ref, g_ref, loss, g_ref, what=f"{name} loss, small inputs")


@pytest.mark.parametrize(("example", "name"), variant_cases())
def test_gradient_matches_reference(example, name):
    _, algorithm = reference_of(example, name)
    loss_ref, g_ref = reference_on_small(example, algorithm)
    _, g = on_small(example, name)
    assert all(a.dtype == np.float64 for a in g.values())
    assert_within_policy(loss_ref, g_ref, loss_ref, g, what=f"{name} gradient, small inputs")
