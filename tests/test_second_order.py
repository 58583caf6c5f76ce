"""Hessian-vector products and the outputs' Jacobian (issue 72; docs/outputs.md).

The kernel: `L(x, w) = Σ (w·sin x)²` over two `wrt` arrays and the output `y = A·(w·sin x)`
(A a fixed matrix, an input no one differentiates), whose loss never passes through y.
Each array's own Hessian block is diagonal and known in closed form: `H_xx·v =
2w²·cos(2x)·v`, `H_ww·v = 2·sin²(x)·v`, computed here in numpy, independently.

- `jax-plain` and `jax-custom` (a `custom_vjp` of sin, right) are correct;
- `jax-frozen` keeps the residual cos(x) its forward pass froze (`stop_gradient`): its
  gradient is right, its Hessian product along x is not (it misses −2w²·sin²x);
- `jax-transposed` applies A with a hand-written adjoint that forgets the transpose: its
  loss and gradient are right, its output's vjp is not.

Then the executions are counted by the kernel itself (as tests/test_check_cost.py counts
them): outputs add none, the dot-product test one backward per output, the second order
two forward-over-reverse executions per wrt array.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._model._verdicts import CaseKind, Verdict

NAME, COUNTED = "95-second", "92-counted-second"
N = 7


def _generate(seed):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal(N),
        "w": 0.5 + rng.random(N),
        "A": rng.standard_normal((N, N)),
    }


@jax.custom_vjp
def _sin(x):
    return jnp.sin(x)


def _sin_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def _sin_bwd(cos, g):
    return (cos * g,)


_sin.defvjp(_sin_fwd, _sin_bwd)


@jax.custom_vjp
def _frozen_sin(x):
    return jnp.sin(x)


def _frozen_fwd(x):  # planted: the residual frozen, its derivative lost
    return jnp.sin(x), jax.lax.stop_gradient(jnp.cos(x))


_frozen_sin.defvjp(_frozen_fwd, _sin_bwd)


def _applied(transposed: bool):
    """`s -> A·s` with a hand-written adjoint: `Aᵀ·g`, or (planted) `A·g`."""

    @jax.custom_vjp
    def apply(A, s):
        return A @ s

    def forward(A, s):
        return A @ s, A

    def backward(A, g):
        return jnp.zeros_like(A), (A if transposed else A.T) @ g

    apply.defvjp(forward, backward)
    return apply


def _loss(sin, apply):
    def loss(x, w, A):
        s = w * sin(x)
        return jnp.sum(s * s), {"y": apply(A, s)}

    return loss


def _example(name: str, order: int = 2) -> weanj.Example:
    return weanj.Example(
        name=name,
        arrays=("x", "w", "A"),
        wrt=("x", "w"),
        generate=_generate,
        outputs=("y",),
        order=order,
    )


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    root = tmp_path_factory.mktemp("second")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        ex = weanj.register_example(_example(NAME))
        plain = lambda A, s: A @ s  # noqa: E731
        weanj.jax_variant(ex, "jax-plain", family="f", loss=_loss(jnp.sin, plain))
        weanj.jax_variant(ex, "jax-custom", family="f", loss=_loss(_sin, _applied(False)))
        weanj.jax_variant(ex, "jax-frozen", family="f", loss=_loss(_frozen_sin, _applied(False)))
        weanj.jax_variant(ex, "jax-transposed", family="f", loss=_loss(jnp.sin, _applied(True)))
        weanj.write_inputs(NAME)
        judgement = weanj.check(NAME, fresh=True, say=lambda line: None)
        yield judgement
    _registry.unregister_example(NAME)


def _directions(ej, array):
    from weanj._judge._directions import second_direction
    from weanj._judge._jvp import jvp_direction

    x = np.asarray(ej.inputs.arrays[array])
    return jvp_direction(ej.example, array, x, None), second_direction(ej.example, array, x, None)


def test_the_hessian_products_are_the_hessians(checked):
    """A correct variant's `H_aa·v_a` and `H_aa·u_a` are the closed form's, per array."""
    ej = checked[NAME]
    x, w = (np.asarray(ej.inputs.arrays[k]) for k in ("x", "w"))
    blocks = {"x": 2 * w**2 * np.cos(2 * x), "w": 2 * np.sin(x) ** 2}
    for label in ("jax-plain", "jax-custom", "jax-transposed"):
        g = ej.subjects[label]
        for array, diagonal in blocks.items():
            v, u = _directions(ej, array)
            np.testing.assert_allclose(g.hvp[array], diagonal * v, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(g.hvp_u[array], diagonal * u, rtol=1e-12, atol=1e-14)
    frozen = ej.subjects["jax-frozen"]
    v, _ = _directions(ej, "x")
    np.testing.assert_allclose(frozen.hvp["x"], 2 * w**2 * np.cos(x) ** 2 * v, rtol=1e-12)


def test_a_frozen_residual_fails_the_pair_and_the_second_order_taylor_test_alone(checked):
    ej = checked[NAME]
    failing = {j.case for j in ej.failures}
    pairs = {f"{NAME}::hvp::x::{a}~jax-frozen" for a in ("jax-plain", "jax-custom")}
    pairs.add(f"{NAME}::hvp::x::jax-frozen~jax-transposed")
    taylor2 = f"{NAME}::f::jax-frozen::taylor2::x"
    dots = {f"{NAME}::f::jax-transposed::dot::{a}" for a in ("x", "w")}
    pullbacks = {
        f"{NAME}::pullback::y::{array}::{a}~jax-transposed"
        for a in ("jax-plain", "jax-custom", "jax-frozen")
        for array in ("x", "w")
    }
    assert failing == pairs | {taylor2} | dots | pullbacks, sorted(failing)
    j = ej.by_case()[taylor2]
    assert j.kind == CaseKind.TAYLOR2 and max(r for rs in j.result.asymptotic for r in rs) < 1.3
    assert "not its gradient's derivative" in j.reason
    # the gradients agree, and the first-order checks and symmetry pass everywhere
    assert ej.by_case()[f"{NAME}::f::jax-plain~jax-frozen::x"].verdict == Verdict.OK
    firsts = [j for j in ej.judgements if j.kind in (CaseKind.TAYLOR, CaseKind.JVP)]
    assert {j.verdict for j in firsts} == {Verdict.OK}
    assert {j.verdict for j in ej.of_kind(CaseKind.SYMMETRY)} == {Verdict.OK}
    # (jax-transposed, whose pullbacks part ways with its family's, is the other suspect)
    assert set(ej.suspects()) == {"jax-frozen", "jax-transposed"}


def test_a_transposed_output_vjp_fails_the_dot_product_test_and_the_pullbacks_alone(checked):
    """The dot-product test's two numbers, against numpy: ⟨w, J·v⟩ with J = A·diag(w cos x)
    along x, and what the transposed adjoint gives, ⟨(A·w_y)·w cos x, v⟩; the pullbacks
    `Jᵀ·w_y` themselves, `(Aᵀ·w_y)·w cos x` and `(Aᵀ·w_y)·sin x` (the transposed adjoint's
    with A for Aᵀ), compared across the family (the failing set: the test above)."""
    from weanj._judge._directions import output_weights

    ej = checked[NAME]
    x, w, A = (np.asarray(ej.inputs.arrays[k]) for k in ("x", "w", "A"))
    v, _ = _directions(ej, "x")
    (weight,) = output_weights(ej.example, {"y": (N,)}).values()
    j = ej.by_case()[f"{NAME}::f::jax-transposed::dot::x"]
    (o,) = j.result.outputs
    assert j.result.by == "jax-plain"  # its own forward mode refused: a lender's
    assert o.ahead == pytest.approx(float(weight @ (A @ (w * np.cos(x) * v))), rel=1e-12)
    assert o.back == pytest.approx(float(((A @ weight) * w * np.cos(x)) @ v), rel=1e-12)
    assert "the output's vjp is not the transpose of its jvp" in j.reason
    own = ej.by_case()[f"{NAME}::f::jax-plain::dot::x"]
    assert own.verdict == Verdict.OK and own.result.by == "jax-plain"
    for label, M in (("jax-plain", A.T), ("jax-custom", A.T), ("jax-transposed", A)):
        pulled = ej.subjects[label].pullback
        np.testing.assert_allclose(pulled["y::x"], (M @ weight) * w * np.cos(x), rtol=1e-12)
        np.testing.assert_allclose(pulled["y::w"], (M @ weight) * np.sin(x), rtol=1e-12)
    j = ej.by_case()[f"{NAME}::pullback::y::x::jax-plain~jax-transposed"]
    assert j.kind == CaseKind.PULLBACK and j.verdict == Verdict.FAIL and j.array == "y::x"
    assert ej.by_case()[f"{NAME}::pullback::y::w::jax-plain~jax-custom"].verdict == Verdict.OK


def test_the_second_order_needs_no_declaration_with_order_2(tmp_path, monkeypatch):
    """`weanj.check(order=2)` checks an example of order 1 at the second order too; its
    correct variants pass every check in float64 and float32; without it, no case of the
    second order exists."""
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    ex = weanj.register_example(_example("96-asked", order=1))
    try:
        weanj.jax_variant(ex, "jax-plain", family="f", loss=_loss(jnp.sin, lambda A, s: A @ s))
        weanj.jax_variant(ex, "jax-custom", family="f", loss=_loss(_sin, _applied(False)))
        weanj.write_inputs("96-asked")
        first = weanj.check("96-asked", say=lambda line: None)["96-asked"]
        assert not first.of_kind(CaseKind.HVP) and not first.of_kind(CaseKind.TAYLOR2)
        second = weanj.check("96-asked", order=2, say=lambda line: None)["96-asked"]
        assert second.ok, [j.case for j in second.failures]
        # the first check's records lack the second order: recomputed, saying why
        assert "second order" in second.reuse["jax-plain"]
        assert {j.verdict for j in second.of_kind(CaseKind.HVP)} == {Verdict.OK}
        kinds = {j.kind for j in second.judgements if j.verdict == Verdict.OK}
        assert {CaseKind.TAYLOR2, CaseKind.SYMMETRY, CaseKind.DOT, CaseKind.OUTPUT} <= kinds
        # then at the first order again (the order-2 program serves it, in this process):
        # no Hessian products are claimed, nor kept for a later run to reuse
        again = weanj.check("96-asked", fresh=True, say=lambda line: None)["96-asked"]
        assert again.ok and all(g.hvp is None for g in again.subjects.values())
    finally:
        _registry.unregister_example("96-asked")


# --- what it costs, counted by the kernel -----------------------------------------------------

HEARD: Counter = Counter()


def _heard(variant: str, kind: str) -> None:
    HEARD[(variant, kind)] += 1


@jax.custom_vjp
def _counted(x):
    return x


def _counted_fwd(x):
    return x, None


def _counted_bwd(_, g):
    jax.debug.callback(lambda v: _heard("jax-counted", "backward"), g[0])
    return (g,)


_counted.defvjp(_counted_fwd, _counted_bwd)


def test_the_second_order_and_the_outputs_cost_what_the_issue_bounds(tmp_path, monkeypatch):
    """Acceptance: outputs add no kernel execution (evaluation 1+1); the dot-product test
    one backward per output; order 2 at most 2 + 2·(wrt arrays) forward-over-reverse
    executions (here 2 per array, each a forward and a backward, in the evaluation's own
    call); and weanj's counts are what the kernel heard."""
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    ex = weanj.register_example(_example(COUNTED))

    def counted(x, w, A):
        jax.debug.callback(lambda v: _heard("jax-counted", "forward"), x[0])
        return _loss(jnp.sin, lambda A, s: A @ s)(_counted(x), w, A)

    def forward(x, w, A):
        jax.debug.callback(lambda v: _heard("jax-forward", "forward"), x[0])
        return _loss(jnp.sin, lambda A, s: A @ s)(x, w, A)

    try:
        weanj.jax_variant(ex, "jax-counted", family="f", loss=counted)
        weanj.jax_variant(ex, "jax-forward", family="f", loss=forward)
        weanj.write_inputs(COUNTED)
        HEARD.clear()
        judgement = weanj.check(COUNTED, dtype="float64", fresh=True, say=lambda line: None)
        ej = judgement[COUNTED]
        assert ej.ok, [j.case for j in ej.failures]
        arrays, outputs = len(ex.wrt_names), len(ex.outputs)
        for label in ("jax-counted", "jax-forward"):
            cost = ej.subjects[label].cost
            assert cost.of("evaluation") == (1, 1), cost.describe()
            assert cost.of("jacobian") == (0, outputs), cost.describe()
            hvp = cost.of("hvp")
            assert hvp == (2 * arrays, 2 * arrays) and hvp[0] <= 2 + 2 * arrays
            assert HEARD[(label, "forward")] == cost.forward, (label, HEARD, cost.describe())
        counted_cost = ej.subjects["jax-counted"].cost
        assert HEARD[("jax-counted", "backward")] == counted_cost.backward, HEARD
    finally:
        _registry.unregister_example(COUNTED)
