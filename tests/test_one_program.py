"""A check's float64 CPU runs of a JAX variant call one program that holds the loss, its
gradient and each wrt array's forward-mode derivative along its own tangent
(`_backends/_checking.py`, issues 51, 69 and 73).

Its numbers are checked against the variant's own separate programs (`jax.value_and_grad`
and `jax.jvp`) and against closed forms; a loss that cannot be pushed forward falls back
to its `value_and_grad` program and says why its jvp cannot run; a loss that is no real
scalar gets JAX's own refusal, not a number.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._io import _jax_cache
from weanj._pipeline.engine._cases import judge_plan, read_plan
from weanj._pipeline.evaluation._calls import for_checks
from weanj._pipeline.session._session import Session
from weanj._places import places

NAME = "94-one-program"
N = 6


def _generate(seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(N), "w": rng.uniform(0.5, 1.5, N)}


@pytest.fixture(scope="module")
def example():
    ex = weanj.register_example(
        weanj.Example(
            name=NAME, arrays=("x", "w"), wrt=("x", "w"), shapes={"x": (N,), "w": (N,)},
            generate=_generate,
        )
    )  # fmt: skip

    # L = Σ w·sin(x)²: ∂L/∂x = w·sin(2x), ∂L/∂w = sin(x)²
    @weanj.jax_variant(ex, "jax-ad", family="f")
    def by_ad(x, w):
        return jnp.sum(w * jnp.sin(x) ** 2)

    def by_hand(x, w):
        return {"x": w * jnp.sin(2 * x), "w": jnp.sin(x) ** 2}

    weanj.jax_variant(ex, "jax-hand", family="f", loss=by_ad, grad=by_hand)

    @jax.custom_vjp
    def squares(x):
        return jnp.sin(x) ** 2

    squares.defvjp(lambda x: (squares(x), x), lambda x, g: (g * jnp.sin(2 * x),))

    @weanj.jax_variant(ex, "jax-custom", family="f")
    def by_custom(x, w):
        return jnp.sum(w * squares(x))

    @weanj.jax_variant(ex, "jax-vector", family="g")
    def not_scalar(x, w):
        return w * jnp.sin(x) ** 2

    yield ex
    _registry.unregister_example(NAME)


def _args(ex):
    data = _generate(3)
    return ex.args(data, {}), data


def _closed_form(data):
    x, w = data["x"], data["w"]
    return float(np.sum(w * np.sin(x) ** 2)), {"x": w * np.sin(2 * x), "w": np.sin(x) ** 2}


def test_the_one_program_computes_what_the_separate_programs_do(example):
    args, data = _args(example)
    loss, grads = _closed_form(data)
    dx = {"x": np.linspace(-1.0, 1.0, N), "w": np.linspace(0.5, -0.25, N)}
    along = float(sum(np.dot(grads[n], dx[n]) for n in dx))  # ⟨∇L, dx⟩ by the closed form
    for name in ("jax-ad", "jax-hand"):
        v = _registry.catalog(NAME).find(name)
        one = for_checks(v.built, True)
        assert one is not v.built and one.placed is v.built.placed
        value, g = one.value_and_grad(*args)
        plain_value, plain_g = v.built.value_and_grad(*args)
        assert float(value) == float(plain_value)  # the same loss, bit for bit
        for n in ("x", "w"):
            assert np.array_equal(np.asarray(g[n]), np.asarray(plain_g[n])), (name, n)
            np.testing.assert_allclose(np.asarray(g[n]), grads[n], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(float(value), loss, rtol=1e-14)
        again, g_again, each = one.evaluation(*args, dx)
        assert float(again) == float(value) and np.array_equal(g_again["x"], g["x"])
        for n in dx:  # each array's own derivative along its own tangent
            np.testing.assert_allclose(each[n], float(np.dot(grads[n], dx[n])), rtol=1e-13)
        np.testing.assert_allclose(sum(each.values()), along, rtol=1e-13)
        np.testing.assert_allclose(sum(each.values()), float(v.built.jvp(*args, dx)), rtol=1e-14)
        assert float(one.evaluation_loss(*args)) == float(value)


def test_without_checks_the_variant_keeps_its_own_programs(example):
    built = _registry.catalog(NAME).find("jax-ad").built
    assert for_checks(built, False) is built
    plain = weanj.Functions(*built[:3])  # a backend without the one program
    assert for_checks(plain, True) is plain


def test_a_loss_that_cannot_be_pushed_forward_falls_back_and_says_why(example):
    """A custom_vjp: the one program cannot be lowered (no forward mode); the reverse-mode
    program serves instead, the loss alone from it without the gradient, and the jvp
    says JAX's reason."""
    from weanj._backends._checking import DERIVATIVES, LOSS_ONLY

    args, data = _args(example)
    loss, grads = _closed_form(data)
    v = _registry.catalog(NAME).find("jax-custom")
    one = for_checks(v.built, True)
    runs = one.evaluation.__self__
    value, g = one.value_and_grad(*args)
    assert runs.serving == "reverse" and "custom_vjp" in str(runs.refused)
    np.testing.assert_allclose(np.asarray(g["x"]), grads["x"], rtol=1e-13)
    np.testing.assert_allclose(np.asarray(g["w"]), grads["w"], rtol=1e-13)
    np.testing.assert_allclose(float(value), loss, rtol=1e-14)
    assert float(one.evaluation_loss(*args)) == float(value)
    # asked for the loss alone, the reverse program leaves the gradient uncomputed (zeros)
    _, nothing, none = runs._own(args, None, LOSS_ONLY)
    assert none is None and all(not np.any(np.asarray(nothing[n])) for n in ("x", "w"))
    assert np.array_equal(
        np.asarray(runs._own(args, None, DERIVATIVES)[1]["x"]), np.asarray(g["x"])
    )
    # the evaluation's call: its loss and gradient, no forward-mode derivative
    value, g, directional = one.evaluation(*args, {"x": np.ones(N), "w": np.zeros(N)})
    assert directional is None
    np.testing.assert_allclose(np.asarray(g["w"]), grads["w"], rtol=1e-13)
    with pytest.raises(TypeError, match="custom_vjp"):
        one.jvp(*args, {"x": np.ones(N), "w": np.zeros(N)})
    assert runs.serving == "reverse"


def test_in_a_check_every_jvp_is_judged_by_a_forward_mode_of_the_one_program(example, project):
    """The check's numbers: jax-ad's own forward mode and jax-custom's borrowed one (its
    loss cannot be pushed forward), each array's against ⟨∇L_a, dx_a⟩ by the closed form
    along its own direction, computed in the evaluations' own calls (no jvp execution)."""
    from weanj._judge._jvp import jvp_direction

    weanj.write_inputs(NAME)
    cat = _registry.catalog(NAME)
    cat = type(cat)(cat.example, tuple(v for v in cat.variants if v.family == "f"))
    plan = read_plan(cat, places(), live=True, dtypes=("float64",))
    with Session(say=lambda line: None) as session:
        judged = judge_plan(plan, session)
    assert session.checking  # the plan has jvp checks
    inputs = weanj.read_inputs(NAME)
    data = inputs.run_arrays("float64")
    _, grads = _closed_form(data)
    seen = {}
    for j in judged.judgements:
        if j.jvp is None:
            continue
        d = j.jvp
        dx = jvp_direction(example, d.array, data[d.array], None)
        np.testing.assert_allclose(d.forward, float(np.dot(grads[d.array], dx)), rtol=1e-12)
        np.testing.assert_allclose(d.scale, float(np.sum(np.abs(grads[d.array] * dx))), rtol=1e-12)
        assert j.verdict.name == "OK", j
        seen[(j.subjects[-1] if j.subjects else j.case, d.array)] = d.by
    by = {(s.split("@")[0], a): b for (s, a), b in seen.items()}
    for array in ("x", "w"):
        assert by[("jax-ad", array)] == "jax-ad"
        assert by[("jax-hand", array)] == "jax-hand"
        assert by[("jax-custom", array)] == "jax-ad"  # the first member with a forward mode
    for g in judged.subjects.values():
        assert g.cost.of("jvp") == (0, 0), (g.label, g.cost.describe())


def test_a_loss_that_is_not_a_scalar_gets_jaxs_refusal(example):
    args, _ = _args(example)
    v = _registry.catalog(NAME).find("jax-vector")
    one = for_checks(v.built, True)
    with pytest.raises(TypeError, match="scalar"):
        one.value_and_grad(*args)


@contextlib.contextmanager
def _no_persistent_cache():
    """Every program compiled, none loaded from the session's compilation cache."""
    was = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", was)


def test_the_one_program_computes_only_what_a_call_asks(example):
    """The loss alone, or with its derivatives: a call of the one program that asks the
    loss alone gets zeros for them (uncomputed, in a `lax.cond`); one that asks them gets
    the closed form's; one compilation serves both kinds of call."""
    from weanj._backends._checking import DERIVATIVES, LOSS_ONLY

    args, data = _args(example)
    loss, grads = _closed_form(data)
    dx = {"x": np.linspace(-1.0, 1.0, N), "w": np.linspace(0.5, -0.25, N)}
    along = float(sum(np.dot(grads[n], dx[n]) for n in dx))
    for name in ("jax-ad", "jax-hand"):
        runs = for_checks(_registry.catalog(NAME).find(name).built, True).evaluation.__self__
        jax.clear_caches()  # cold: what the three calls compile is counted below
        with _no_persistent_cache(), _jax_cache.compilations() as compiled:
            for derivatives in (LOSS_ONLY, DERIVATIVES, LOSS_ONLY):
                value, g, directional = runs._own(args, dx, derivatives)
                np.testing.assert_allclose(float(value), loss, rtol=1e-14)
                for n in ("x", "w"):
                    expected = grads[n] if derivatives else np.zeros(N)
                    np.testing.assert_allclose(np.asarray(g[n]), expected, rtol=1e-13, atol=0)
                each = [float(np.dot(grads[n], dx[n])) if derivatives else 0.0 for n in dx]
                np.testing.assert_allclose(np.asarray(directional), each, rtol=1e-13)
        assert len(compiled) == 1, (name, compiled)  # one program for both kinds of call
    assert along != 0


def test_a_hand_written_gradient_runs_only_when_asked(project):
    """Counted from inside the program (`jax.debug.callback` in the gradient a user
    wrote): the loss-only calls of a check never run it; the evaluation runs it once. Its
    static parameter stays a Python value inside the one program (a Python loop)."""
    ran = []
    name = "95-hand-counted"
    ex = weanj.register_example(
        weanj.Example(
            name=name, arrays=("x",), wrt=("x",), shapes={"x": (N,)},
            params=(weanj.Param("n", 3),), generate=lambda seed: _generate(seed) | {},
        )
    )  # fmt: skip
    try:

        def loss(x, n):
            return sum(jnp.sum(jnp.sin(x) ** 2) for _ in range(n))

        def gradient(x, n):
            jax.debug.callback(lambda: ran.append(1))
            return sum(jnp.sin(2 * x) for _ in range(n))

        v = weanj.jax_variant(ex, "jax-hand-n", family="f", loss=loss, grad=gradient)
        x = _generate(4)["x"]
        runs = for_checks(v.built, True)
        value, g = runs.value_and_grad(x, 3)
        jax.effects_barrier()
        assert ran == [1]
        np.testing.assert_allclose(np.asarray(g), 3 * np.sin(2 * x), rtol=1e-13)
        losses = [float(runs.evaluation_loss(x, 3)) for _ in range(5)]
        jax.effects_barrier()
        assert ran == [1], "a loss-only call ran the gradient"
        np.testing.assert_allclose(losses, [3 * np.sum(np.sin(x) ** 2)] * 5, rtol=1e-14)
        dx = np.linspace(-1.0, 1.0, N)
        _, _, each = runs.evaluation(x, 3, {"x": dx})
        np.testing.assert_allclose(each["x"], np.dot(3 * np.sin(2 * x), dx), rtol=1e-13)
        jax.effects_barrier()
        assert ran == [1, 1]  # the evaluation's call asks the gradient, as it must
    finally:
        _registry.unregister_example(name)


def test_with_no_evaluation_in_this_process_the_loss_program_serves_at_once(example):
    """The evaluation's numbers came from a record: the loss-only calls compile the loss
    program, not the one that would also hold the gradient; after an evaluation here,
    they ask that one program for the loss alone."""
    from weanj._backends._checking import CheckRuns

    args, _ = _args(example)
    calls = []

    def reverse(*args):
        calls.append(("reverse", bool(args[-1])))
        return 1.0, {"x": 0.0, "w": 0.0}

    def loss(*args):
        calls.append(("loss",))
        return 2.0

    runs = CheckRuns(_registry.catalog(NAME).example, weanj.Functions(loss, None), reverse=reverse)
    assert runs.evaluation_loss(*args) == 2.0
    assert calls == [("loss",)]
    assert runs.value_and_grad(*args) == (1.0, {"x": 0.0, "w": 0.0})
    assert runs.evaluation_loss(*args) == 1.0
    assert calls[1:] == [("reverse", True), ("reverse", False)]


def test_an_enzyme_variants_check_runs_one_reverse_program(project):
    """Enzyme-JAX (where installed): the check's runs are one program, `jax.vjp` through
    Enzyme with its reverse pass asked only by the evaluation; the numbers are those of
    its `value_and_grad` program, bit for bit."""
    pytest.importorskip("enzyme_ad", reason="Enzyme-JAX is not installed (weanj[enzyme])")
    from weanj._backends._checking import LOSS_ONLY

    weanj.write_inputs("01-jacobi")
    v = _registry.catalog("01-jacobi").find("jax-jacobi-enzyme")
    args = weanj.read_inputs("01-jacobi").args("float64")
    runs = for_checks(v.built, True).value_and_grad.__self__
    assert runs.serving == "reverse" and runs.full is None
    value, g = runs.value_and_grad(*args)
    plain_value, plain_g = v.built.value_and_grad(*args)
    assert float(value) == float(plain_value)
    assert np.array_equal(np.asarray(g), np.asarray(plain_g))
    assert np.any(np.asarray(g))
    loss, nothing, none = runs._own(args, None, LOSS_ONLY)
    assert float(loss) == float(value) and not np.any(np.asarray(nothing)) and none is None
