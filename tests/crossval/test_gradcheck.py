"""The judge's gradient checks catch what they exist to catch, with their default policies.

- The Taylor remainder test passes a true gradient of a nonlinear kernel and FAILs the
  same gradient multiplied by (1 + 1e-4) on one array: once on the built-in
  04-tridiagonal (x = A⁻¹d is nonlinear in the diagonals), calling the check and its
  verdict directly; once end to end, through the case table, on a small example
  registered here whose second variant's `grad` is the scaled one (the jvp check and
  the same-family pair catch it too; the unscaled array passes everything).
- A float32-only overflow (a softmax without the max shift: correct in float64, Inf/NaN
  in float32) is the float32 run's verdict NaN/Inf, named "float32 overflow" (its pair is
  not compared).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import weanj
from weanj._judge._directions import random_direction
from weanj._judge._verdict import judge_check
from weanj._model import from_arrays
from weanj._model._verdicts import CaseKind, Verdict
from weanj._pipeline.checks._remainders import taylor
from weanj._pipeline.engine._cases import judge_case
from weanj._pipeline.engine._table import build_plan
from weanj._pipeline.session._session import Session
from weanj._registry import catalog, unregister_example
from weanj._report._lines import message

from ..toy_kernels import random_xy, xy_example
from .cases import subject

WRONG = 1 + 1e-4  # a wrong gradient: the true one, 1e-4 too large on one array


# --- the Taylor test on 04-tridiagonal, directly -----------------------------------------


def _loss_of_one_array(example: str, variant: str, array: str):
    """The variant's loss as a function of one array, the others at the shared inputs."""
    ex, v = weanj.example(example), weanj.variant(example, variant)
    inputs = weanj.read_inputs(ex)
    arrays = inputs.run_arrays("float64")

    def loss(x: np.ndarray) -> float:
        return float(np.asarray(v.loss(*ex.args({**arrays, array: x}, inputs.params))))

    return loss, arrays[array]


@pytest.mark.parametrize("array", ["a", "b", "c", "d"])
def test_taylor_passes_the_gradient_and_fails_it_scaled_on_tridiagonal(array):
    # 04-tridiagonal declares no Taylor policy: the default, tuned for no kernel.
    ex = weanj.example("04-tridiagonal")
    assert ex.taylor_for(array) == weanj.TaylorPolicy()
    loss, x = _loss_of_one_array(ex.name, "jax-thomas", array)
    g = subject(ex.name, "jax-thomas").gradients[array]
    policy = weanj.TaylorPolicy()

    right = judge_check("right", CaseKind.TAYLOR, taylor(loss, x, g, policy, array=array))
    assert right.verdict == Verdict.OK, message(right)
    rates = [r for rs in right.taylor.asymptotic for r in rs]
    assert rates and min(rates) >= 1.9, message(right)  # h²: the loss is smooth here

    wrong = judge_check("wrong", CaseKind.TAYLOR, taylor(loss, x, g * WRONG, policy, array=array))
    assert wrong.verdict == Verdict.FAIL, message(wrong)
    # h¹: at the smallest resolved steps the error h·1e-4·⟨g, dx⟩ is what is left (on b
    # and c it first cancels the h² term along one direction: rates above 2, then below).
    assert min(min(rs) for rs in wrong.taylor.asymptotic if rs) < 1.5, message(wrong)
    assert "is not the loss's derivative" in message(wrong)
    assert wrong.taylor.sensitivity < 1e-4  # the test resolves errors this small


def test_taylor_sees_past_a_wrong_gradient_cancelling_the_curvature():
    # L = x² at x = 1 along dx (±1), with g = ∇L + 2δ·dx: r(h) = |h² − 2δh| is exactly zero
    # at h* = 2δ = h0/2⁶. Up to there the rates are log2(r_k/r_{k+1}) = log2(4032/992), ...,
    # log2(12/2): 2.02 to 2.58, all above 1.8, so a test that stopped at the first
    # remainder at rounding level would call this gradient right. Past it r falls as h
    # (rates 0.42, 0.78, 0.90, ... towards 1): FAIL.
    delta = 1e-4
    policy = weanj.TaylorPolicy(h0=2 * delta * 2**6, directions=1)
    x = np.array([1.0])
    dx = random_direction(np.random.default_rng(policy.seed), x)
    result = taylor(lambda v: float(np.sum(v**2)), x, 2 * x + 2 * delta * dx, policy)
    rates = result.directions[0].rates
    assert [round(r, 2) for r in rates[:8]] == [2.02, 2.05, 2.1, 2.22, 2.58, 0.42, 0.78, 0.9]
    j = judge_check("cancelling", CaseKind.TAYLOR, result)
    assert j.verdict == Verdict.FAIL, message(j)
    assert max(result.asymptotic[0]) < 1.0, message(j)
    right = judge_check(
        "right", CaseKind.TAYLOR, taylor(lambda v: float(np.sum(v**2)), x, 2 * x, policy)
    )
    assert right.verdict == Verdict.OK, message(right)


# --- the same, end to end through the case table -----------------------------------------

SMOOTH = "91-taylor-scaled"


def _smooth_loss(x, y):
    import jax.numpy as jnp

    return jnp.sum(jnp.tanh(x * y) ** 2) + 0.5 * jnp.sum(jnp.exp(0.3 * x) * y)


def _scaled_grad(x, y):
    """jax.grad of the loss, with ∂L/∂x multiplied by (1 + 1e-4): a wrong gradient."""
    import jax

    gx, gy = jax.grad(_smooth_loss, argnums=(0, 1))(x, y)
    return gx * WRONG, gy


def _smooth_arrays(seed: int) -> dict[str, np.ndarray]:
    return random_xy(seed, 24)


@pytest.fixture
def smooth(project):
    ex = weanj.register_example(
        xy_example(
            SMOOTH,
            wrt=("x", "y"),
            generate=_smooth_arrays,
            seed=3,
            shapes={"x": ("n",), "y": ("n",)},
        )
    )
    try:
        weanj.jax_variant(ex, "jax-true", family="smooth", loss=_smooth_loss)
        weanj.jax_variant(ex, "jax-scaled-x", family="smooth", loss=_smooth_loss, grad=_scaled_grad)
        inputs = from_arrays(ex, _smooth_arrays(ex.seed))
        p = build_plan(catalog(ex), inputs, dtypes=("float64",))
        with Session() as session:
            yield p, {c.id: judge_case(p, c, session) for c in p.cases}
    finally:
        unregister_example(SMOOTH)


def test_scaled_gradient_fails_taylor_jvp_and_pair_on_that_array_only(smooth):
    p, judged = smooth
    head = f"{SMOOTH}::smooth"
    for kind in ("taylor", "jvp"):
        for array in ("x", "y"):
            j = judged[f"{head}::jax-true::{kind}::{array}"]
            assert j.verdict == Verdict.OK, message(j)
        j = judged[f"{head}::jax-scaled-x::{kind}::y"]
        assert j.verdict == Verdict.OK, message(j)
        j = judged[f"{head}::jax-scaled-x::{kind}::x"]
        assert j.verdict == Verdict.FAIL and j.failed, message(j)
    taylor_x = judged[f"{head}::jax-scaled-x::taylor::x"]
    assert "the gradient of x is not the loss's derivative" in message(taylor_x)
    assert p.example.taylor_for("x") == weanj.TaylorPolicy()  # the default policy
    jvp_x = judged[f"{head}::jax-scaled-x::jvp::x"].jvp
    assert jvp_x.by == "jax-scaled-x"  # its own forward mode, of its own (correct) loss
    # ⟨(1+ε)g, dx⟩ against jvp = ⟨g, dx⟩: off by ε of it, far above the 1e-12 allowed.
    assert jvp_x.reverse - jvp_x.forward == pytest.approx(1e-4 * jvp_x.forward, rel=1e-6)
    assert jvp_x.error > 1e6 * jvp_x.tolerance
    assert judged[f"{head}::jax-true~jax-scaled-x::y"].verdict == Verdict.OK
    pair_x = judged[f"{head}::jax-true~jax-scaled-x::x"]
    assert pair_x.verdict == Verdict.FAIL, message(pair_x)
    assert pair_x.comparison.max_rel == pytest.approx(1e-4, rel=1e-3)


# --- a float32-only overflow -----------------------------------------------------------

SOFTMAX = "92-softmax-overflow"


def _softmax_arrays(seed: int) -> dict[str, np.ndarray]:
    # exp(x) > 3.4e38 (float32's largest) for x > 88.72; float64 reaches 1.8e308. Values
    # exact in float32 (multiples of 1/8, positive weights): the shifted form's float32
    # run differs from float64 by its arithmetic only, far inside the float32 tolerance.
    rng = np.random.default_rng(seed)
    return {"x": 80.0 + rng.integers(0, 120, 32) / 8, "w": 0.5 + rng.integers(0, 8, 32) / 8}


def _shifted_loss(x, w):
    """Σ w·softmax(x), with the max shift: finite in float32 and float64."""
    import jax.numpy as jnp

    e = jnp.exp(x - jnp.max(x))
    return jnp.sum(w * e / jnp.sum(e))


def _naive_loss(x, w):
    """Σ w·softmax(x) without the max shift: exp overflows in float32 (Inf/Inf = NaN)."""
    import jax.numpy as jnp

    e = jnp.exp(x)
    return jnp.sum(w * e / jnp.sum(e))


@pytest.fixture
def softmax(project):
    ex = weanj.register_example(
        weanj.Example(name=SOFTMAX, arrays=("x", "w"), wrt="x", generate=_softmax_arrays, seed=4)
    )
    try:
        weanj.jax_variant(ex, "jax-softmax-shifted", family="softmax", loss=_shifted_loss)
        weanj.jax_variant(ex, "jax-softmax-naive", family="softmax", loss=_naive_loss)
        inputs = from_arrays(ex, _softmax_arrays(ex.seed))
        p = build_plan(catalog(ex), inputs)
        with Session() as session:
            yield p, {c.id: judge_case(p, c, session) for c in p.cases}
    finally:
        unregister_example(SOFTMAX)


def test_float32_overflow_is_nan_inf_named_float32_overflow(softmax):
    p, judged = softmax
    x = p.inputs.arrays["x"]
    with np.errstate(over="ignore"):  # the overflow, in numpy's own arithmetic
        assert np.isinf(np.exp(x.astype(np.float32))).any()
    assert np.isfinite(np.exp(x)).all()
    head = f"{SOFTMAX}::softmax"
    # Correct in float64: the pair agrees and both gradients pass the Taylor test.
    for case in (
        f"{head}::jax-softmax-shifted~jax-softmax-naive",
        f"{head}::jax-softmax-naive::taylor",
    ):
        assert judged[case].verdict == Verdict.OK, message(judged[case])
    # The shifted form is fine in float32 as well.
    ok32 = judged[f"{head}::jax-softmax-shifted~jax-softmax-shifted@float32"]
    assert ok32.verdict == Verdict.OK, message(ok32)
    # The naive one overflows in float32 only: its float32 run is NaN/Inf, a failure, named
    # so with the command that reproduces it (a variant's fault is its run case); its
    # float32 pair is not compared (it was the pair's NaN/Inf before).
    j = judged[f"{head}::jax-softmax-naive@float32::run"]
    assert j.verdict == Verdict.NONFINITE and j.failed, message(j)
    assert re.fullmatch(
        r"float32 overflow: jax-softmax-naive: (\d+ NaN/Inf value\(s\) in the gradient x, "
        r"first at .*|the loss is nan)",
        j.reason,
    ), j.reason
    assert j.command == f"weanj run {SOFTMAX} jax-softmax-naive --dtype float32"
    assert "float32 overflow" in message(j).splitlines()[0]
    assert judged[f"{head}::jax-softmax-naive::run"].verdict == Verdict.OK  # float64 is fine
    pair = judged[f"{head}::jax-softmax-naive~jax-softmax-naive@float32"]  # its own float64
    assert pair.verdict == Verdict.SKIPPED and pair.blocked_by == "jax-softmax-naive@float32"
