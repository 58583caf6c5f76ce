"""Inputs of fixture cases far from every kink of their kernel (03-advection,
05-deposition), for `julia/test/fixtures/` (tests/test_julia_fixtures.py): the cases on
which `Pkg.test()` compares FiniteDifferences' gradient with Enzyme's, and on which the
Taylor test and the other ADs see no kink (tests/test_julia_generic_kernels.py checks the
distance). Deterministic, as every fixture case's inputs are."""

from __future__ import annotations

import numpy as np


def advection_inputs() -> dict[str, np.ndarray]:
    """n = 5 (with T = 2): c0 = 0.4·i² + 0.25·j² (0-based), whose slopes differ by 0.2 or
    more and whose periodic wrap jumps down (slopes of opposite signs there), with the
    random velocities and observations of `random_case`: every piece of both limiters at
    both steps stays as it is when any entry of c0 moves by 0.1, far more than
    FiniteDifferences' steps reach."""
    from .crossval.reference_advection import random_case

    arrays = random_case(np.random.default_rng(1606), 5)
    i = np.arange(5.0)
    arrays["c0"] = 0.4 * i[:, None] ** 2 + 0.25 * i[None, :] ** 2
    return arrays


def deposition_inputs() -> dict[str, np.ndarray]:
    """P = 5 particles on a 3×3 grid, each coordinate 0.3 to 0.7 of a cell from the kink
    lines (k + 0.5)/n, one across the periodic wrap: the loss is a polynomial within 0.1 of
    every coordinate."""
    rng = np.random.default_rng(1605)
    n, P = 3, 5
    fraction = 0.3 + 0.4 * rng.random((P, 2))  # of a cell, past a kink line
    pos = (rng.integers(0, n, (P, 2)) + 0.5 + fraction) / n
    pos[0] = (2.5 + 0.55) / n - 1, (1.5 + 0.4) / n  # x past the last kink line: wrapped
    q = 1.0 + 0.25 * rng.standard_normal(P)
    rhoobs = (P / n**2) * (1.0 + 0.1 * rng.standard_normal((n, n)))
    return {"pos": pos, "q": q, "rhoobs": rhoobs}
