"""The bookkeeping of `julia/src/outputs.jl` and `second_order.jl`, where no Julia runs:
their flat vectors (Julia's column-major `vec`), the seeds of each output's weight in its
place, each wrt array's direction in its place, the outputs cut back into their sizes and
put in the example's order, the pullbacks and pushforwards in the order the worker
reads them (`python/weanj/_backends/_julia_evaluation.py`), each array's own Hessian
block. Transliterated in tests/julia_outputs.py, with DifferentiationInterface's
operators stood in by what they compute (`Jᵀ·dy`, `J·dx`, `H·dx`) on Jacobians of
central differences; checked against numpy's own derivatives of the same kernel in C
order, so that a column-major slip or an output or array out of its place shows.

The kernel, of a (2×3), b (3) and a constant s: `L = Σ W·a² + s·bᵀK·b` (W and K fixed,
K not diagonal), the outputs returned in the order `(; t, m)` while the example declares
`("m", "t")`: `m = a .* b'` (2×3) and `t = sum(a)·b` (3).
"""

from __future__ import annotations

import numpy as np
import pytest

from . import julia_outputs as jl

W = np.array([[1.0, 2.0, 3.0], [0.5, -1.5, 4.0]])
K = np.array([[2.0, 0.3, -0.7], [0.3, 1.0, 0.2], [-0.7, 0.2, 3.0]])
NAMES = ("m", "t")


def kernel(a, b, s):
    """As a Julia kernel returns it: `(L, (; t, m))`, the outputs in its own order."""
    L = float(np.sum(W * a * a) + s * (b @ K @ b))
    return L, {"t": np.sum(a) * b, "m": a * b[None, :]}


def c_order_jacobian(f, x: np.ndarray, h: float = 1e-2) -> np.ndarray:
    """numpy's Jacobian of `f` at x: rows f's elements, columns x's, both in C order."""
    columns = []
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += h
        minus[idx] -= h
        columns.append((np.ravel(f(plus)) - np.ravel(f(minus))) / (2 * h))
    return np.stack(columns, axis=1)


@pytest.fixture
def case():
    rng = np.random.default_rng(72)
    a, b, s = rng.standard_normal((2, 3)), rng.standard_normal(3), 1.5
    tangents = (rng.standard_normal((2, 3)), rng.standard_normal(3))
    seconds = (rng.standard_normal((2, 3)), rng.standard_normal(3))
    weights = (rng.standard_normal((2, 3)), rng.standard_normal(3))  # m's, then t's
    return a, b, s, tangents, seconds, weights


def test_the_layout_keeps_the_kernels_order_and_answers_in_the_examples(case):
    a, b, s, *_ = case
    found = jl.outputs_layout(kernel, NAMES, a, b, s)
    assert found["layout"] == {"dims": ((3,), (2, 3)), "order": (2, 1)}
    np.testing.assert_array_equal(found["outputs"][0], a * b[None, :])
    np.testing.assert_array_equal(found["outputs"][1], np.sum(a) * b)


def _output(name: str, array: str, a, b, s):
    """`x -> output name` with array `array` moved to x, numpy's."""

    def of(x):
        moved = {"a": a, "b": b, array: x}
        return kernel(moved["a"], moved["b"], s)[1][name]

    return of


def expected_pullbacks(a, b, s, weights) -> list[np.ndarray]:
    """Each output's `Jᵀ·w` by a then b (output by output), by numpy's C-order Jacobians."""
    arrays = {"a": a, "b": b}
    found = []
    for i, name in enumerate(NAMES):
        for array in ("a", "b"):
            J = c_order_jacobian(_output(name, array, a, b, s), arrays[array])
            found.append((J.T @ weights[i].ravel()).reshape(arrays[array].shape))
    return found


def _derivatives(case, layout=None):
    a, b, s, tangents, _, weights = case
    layout = layout or jl.outputs_layout(kernel, NAMES, a, b, s)["layout"]
    di, flags = jl.CentralDifferences(), (True, True, False)
    return jl.outputs_derivatives(di, kernel, layout, flags, (a, b, s), tangents, weights)


def test_the_pullbacks_and_pushforwards_are_the_c_order_jacobians(case):
    """Each output's `Jᵀ·w` by each array (output by output) and `J·v` along each array
    (direction by direction), as the worker reads them, against numpy's Jacobians."""
    a, b, s, tangents, _, weights = case
    found = _derivatives(case)
    assert found["value"][0] == pytest.approx(kernel(a, b, s)[0], rel=1e-14)
    np.testing.assert_allclose(found["outputs"][0], a * b[None, :], rtol=1e-14)
    np.testing.assert_allclose(found["gradients"][0], 2 * W * a, rtol=1e-9)
    np.testing.assert_allclose(found["gradients"][1], 2 * s * K @ b, rtol=1e-9)
    expected = expected_pullbacks(a, b, s, weights)
    assert len(found["pullbacks"]) == len(expected) == 4
    for got, want in zip(found["pullbacks"], expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    arrays, k = {"a": a, "b": b}, 0
    for j, array in enumerate(("a", "b")):
        for name in NAMES:
            J = c_order_jacobian(_output(name, array, a, b, s), arrays[array])
            shape = np.shape(kernel(a, b, s)[1][name])
            want = (J @ tangents[j].ravel()).reshape(shape)
            np.testing.assert_allclose(found["pushforwards"][k], want, rtol=1e-9, atol=1e-12)
            k += 1


def test_each_arrays_own_hessian_block_along_its_two_directions(case):
    """`(H_aa·v_a, H_aa·u_a, H_bb·v_b, H_bb·u_b)`: `2W·v` elementwise for a (a column-major
    slip would pair W's entries with others), `2s·K·v` for b, the cross terms left out."""
    a, b, s, tangents, seconds, _ = case

    def loss(a, b, s):
        return kernel(a, b, s)[0]  # `LossAlone`

    found = jl.loss_hvps(
        jl.CentralDifferences(), loss, (True, True, False), (a, b, s), tangents, seconds
    )
    expected = (
        2 * W * tangents[0],
        2 * W * seconds[0],
        2 * s * K @ tangents[1],
        2 * s * K @ seconds[1],
    )
    for got, want in zip(found, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_a_weight_out_of_its_place_would_show(case):
    """The comparison above can fail: a layout whose permutation is dropped (the weights
    seeded in the kernel's order, not the example's) gives other pullbacks."""
    a, b, s, _, _, weights = case
    dropped = {"dims": ((2, 3), (3,)), "order": (1, 2)}
    found = _derivatives(case, dropped)
    expected = expected_pullbacks(a, b, s, weights)
    assert not all(
        np.shape(g) == np.shape(w) and np.allclose(g, w)
        for g, w in zip(found["pullbacks"], expected, strict=True)
    )
