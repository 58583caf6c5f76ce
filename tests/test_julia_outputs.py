"""A Julia variant's outputs, their derivatives and its Hessian-vector products, judged
with the JAX variants of its family (issue 72; docs/outputs.md, docs/julia.md), where no
Julia runs: weanj's own worker on the stand-in juliacall (tests/stand_ins/juliacall),
whose WeanJ answers `outputs_layout`, `outputs_loss_and_gradient`,
`outputs_derivatives` and `loss_hvps` by linear algebra on a kernel's Jacobians and
Hessian blocks written in numpy here (or, for julia-signfit, by the Python reference in
its fixture). Nothing here is Julia, or a Julia result: what is checked is what weanj
sends, reads and judges.

The kernel: `s = w·sin(x)` on 3×4 arrays x and w, the loss `Σ s²`, the output
`y = cumsum(s, axis=1)` (numpy's axes: C order is what crosses). Its Jacobians are
`∂y/∂x = K·diag(w·cos x)`, `∂y/∂w = K·diag(sin x)` (K the row-wise cumulative sum of
C-ordered elements) and its Hessian blocks `diag(2w²·cos 2x)`, `diag(2·sin² x)`.
`julia-fields` is right; `julia-frozen`'s Hessian product along x misses `−2w²·sin² x`
(caught by the pair and the second-order Taylor test); `julia-stiff`'s Jacobian along x
misses the `cos x`, in both modes alike (caught by the pullbacks' pair alone).
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj._model._verdicts import Verdict

from . import julia_helpers
from .test_julia_worker import FIXTURES, decode, fake, no_worker  # noqa: F401 (fixtures)

new_example = julia_helpers.new_example
SHAPE = (3, 4)

KERNELS = """
import numpy as np

def loss(x, w):
    s = w * np.sin(x)
    return x.dtype.type(np.sum(s * s)), {"y": np.cumsum(s, axis=1)}

def gradients(x, w):
    s = w * np.sin(x)
    return [2 * s * w * np.cos(x), 2 * s * np.sin(x)]

def rows(x):  # the row-wise cumulative sum of x's C-ordered elements, as a matrix
    return np.kron(np.eye(x.shape[0]), np.tril(np.ones((x.shape[1], x.shape[1]))))

def jacobian(x, w, stiff=False):
    along_x = w if stiff else w * np.cos(x)
    return {"y::x": rows(x) * along_x.ravel(), "y::w": rows(x) * np.sin(x).ravel()}

def hessian(x, w, frozen=False):
    xx = 2 * w**2 * (np.cos(x) ** 2 if frozen else np.cos(2 * x))
    return {"x": np.diag(xx.ravel()), "w": np.diag(2 * np.sin(x).ravel() ** 2)}

RIGHT = {"jacobian": jacobian, "hessian": hessian, "arrays": ["x", "w"]}
FROZEN = {**RIGHT, "hessian": lambda x, w: hessian(x, w, frozen=True)}
STIFF = {**RIGHT, "jacobian": lambda x, w: jacobian(x, w, stiff=True)}

KERNELS = {
    "fields.jl": {
        "fields": (loss, gradients, {}, RIGHT),
        "frozen": (loss, gradients, {}, FROZEN),
        "stiff": (loss, gradients, {}, STIFF),
        "plain": (lambda x, w: x.dtype.type(np.sum(x)), gradients),
        "alone": (lambda x, w: loss(x, w)[0], gradients, {}, RIGHT),
    }
}
"""


def _generate(seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(SHAPE), "w": 0.5 + rng.random(SHAPE)}


def _jax_fields(x, w):
    s = w * jnp.sin(x)
    return jnp.sum(s * s), {"y": jnp.cumsum(s, axis=1)}


@pytest.fixture
def fields(fake, new_example):  # noqa: F811
    """The example (outputs y, order 2) with its Julia variants on the stand-in's kernels
    and `jax-fields`; `(example, fake)`."""
    fake.kernels(KERNELS)
    (fake.root / "fields.jl").write_text("# a stand-in reads no Julia\n")
    ex = new_example(
        "88-fields", arrays=("x", "w"), wrt=("x", "w"), generate=_generate, outputs=("y",), order=2
    )
    for name, loss in (("julia-fields", "fields"), ("julia-frozen", "frozen")):
        weanj.julia_variant(ex, name, family="f", loss=loss, file="fields.jl")
    weanj.julia_variant(ex, "julia-stiff", family="f", loss="stiff", file="fields.jl")
    weanj.jax_variant(ex, "jax-fields", family="f", loss=_jax_fields)
    weanj.write_inputs(ex.name)
    return ex, fake


def test_the_julia_variants_are_judged_with_the_jax_ones_and_the_planted_are_caught(fields):
    ex, stand_in = fields
    ej = weanj.check(ex.name, say=lambda line: None)[ex.name]
    failing = {j.case for j in ej.failures}
    members = ("julia-fields", "julia-frozen", "julia-stiff", "jax-fields")

    def pairs(kind, name, planted):
        return {
            f"{ex.name}::{kind}::{name}::{a}~{b}"
            for i, a in enumerate(members)
            for b in members[i + 1 :]
            if planted in (a, b)
        }

    expected = pairs("hvp", "x", "julia-frozen") | pairs("pullback", "y::x", "julia-stiff")
    expected.add(f"{ex.name}::f::julia-frozen::taylor2::x")
    assert failing == expected, sorted(failing ^ expected)
    assert set(ej.suspects()) == {"julia-frozen", "julia-stiff"}
    by_case = ej.by_case()
    # the right one agrees with JAX on every new case, its own forward side serving its
    # dot-product test (DI's pushforward, here the stand-in's)
    for kind, name in (("output", "y"), ("pullback", "y::x"), ("pullback", "y::w")):
        j = by_case[f"{ex.name}::{kind}::{name}::julia-fields~jax-fields"]
        assert j.verdict == Verdict.OK and j.comparison.max_rel < 1e-12, j.case
    for kind in ("hvp", "taylor2", "symmetry", "dot"):
        for array in ("x", "w"):
            found = {j.case: j for j in ej.judgements if j.kind == kind and j.array == array}
            mine = [j for c, j in found.items() if "julia-fields" in c and "frozen" not in c]
            assert mine and all(j.verdict == Verdict.OK for j in mine), (kind, array)
    dot = by_case[f"{ex.name}::f::julia-fields::dot::x"]
    assert dot.result.by == "julia-fields"
    # the float32 run's outputs, against its own float64 run's
    j = by_case[f"{ex.name}::output::y::julia-fields~julia-fields@float32"]
    assert j.verdict == Verdict.OK and ej.subjects["julia-fields@float32"].outputs["y"].dtype == (
        np.float32
    )


def test_what_crosses_for_an_evaluation_and_what_it_costs(fields):
    """One `outputs` request for the shapes (the kernel once), then one `evaluation`:
    the directions cross as the check drew them; the products come back by name; the
    cost is the evaluation's (the shapes' forward, a forward and a backward, one forward
    per array's pushforward), one backward per output, two Hessian products per array."""
    ex, stand_in = fields
    ej = weanj.check(ex.name, dtype="float64", say=lambda line: None)[ex.name]
    g = ej.subjects["julia-fields"]
    # the outputs' shapes (the kernel once), then the evaluation (one forward and one
    # backward) and one pushforward per array
    assert g.cost.of("evaluation") == (1 + 1 + 2, 1), g.cost.describe()
    assert g.cost.of("jacobian") == (0, 1) and g.cost.of("hvp") == (4, 4)
    x, w = (np.asarray(ej.inputs.arrays[a]) for a in ("x", "w"))
    s = w * np.sin(x)
    np.testing.assert_allclose(g.outputs["y"], np.cumsum(s, axis=1), rtol=1e-15)
    # the directions as they crossed (the family's, the same for every variant)
    calls = stand_in.calls("outputs_derivatives")
    assert len(calls) == 3 and all(c["tangents"] == calls[0]["tangents"] for c in calls)
    crossed = calls[0]["tangents"] + calls[0]["weights"]
    sent_x, sent_w, weight = (np.array(d["data"]).reshape(d["shape"]) for d in crossed)
    # Jᵀ·w by the kernel's own Jacobian, as numpy computes it here
    rows = np.kron(np.eye(3), np.tril(np.ones((4, 4))))
    pulled = ((rows * (w * np.cos(x)).ravel()).T @ weight.ravel()).reshape(SHAPE)
    np.testing.assert_allclose(g.pullback["y::x"], pulled, rtol=1e-13)
    ahead, back, _ = g.jacobian["y::x"]
    assert ahead == pytest.approx(back, rel=1e-12)
    assert back == pytest.approx(float(np.sum(pulled * sent_x)), rel=1e-12)
    np.testing.assert_allclose(g.hvp["w"], 2 * np.sin(x) ** 2 * sent_w, rtol=1e-13)
    # per variant: the shapes asked once (the kernel once: its layout kept for every
    # later call), one preparation per kind of call
    assert len(stand_in.calls("outputs_layout")) == 3
    assert sorted(c["seeds"] for c in stand_in.calls("outputs_prepare")) == [1, 1, 1, 2, 2, 2]


def test_a_loss_without_its_declared_outputs_is_the_variants_error(fields):
    ex, _ = fields
    v = weanj.julia_variant(ex, "julia-plain", family="g", loss="plain", file="fields.jl")
    x, w = _generate(1)["x"], _generate(1)["w"]
    with pytest.raises(weanj.WeanjError) as caught:
        v.functions().value_and_grad(x, w)
    said = str(caught.value).splitlines()[0]
    assert "julia-plain: plain: the loss returned a float64, not (loss, (; ...))" in said
    assert "declares the outputs y" in said and "docs/julia.md: Outputs" in said


def test_julia_signfit_returns_the_references_residuals_and_products(fake):  # noqa: F811
    """The built-in Julia variant of 06-signed-grid on its fixture's first case (the
    stand-in answers from it): its residuals and, by the fixture's Jacobian and Hessian
    blocks (the Python reference's, by hand), its pullbacks and Hessian products, come
    back to weanj as the example's names say."""
    from weanj._judge._directions import output_weights

    content = json.loads((FIXTURES / "julia-signfit.json").read_text())
    case = content["cases"][0]
    v = weanj.variant("06-signed-grid", "julia-signfit")
    x, w = (decode(case["inputs"][a]) for a in ("x", "w"))
    rng = np.random.default_rng(5)
    tangents = {"x": rng.standard_normal(x.shape), "w": rng.standard_normal(w.shape)}
    seconds = {"x": rng.standard_normal(x.shape), "w": rng.standard_normal(w.shape)}
    evaluation = v.built.checking.evaluation  # what a check's float64 run calls
    value, g, directional, beyond = evaluation(x, w, tangents, second=seconds)
    assert directional is None and float(value) == case["loss"]
    np.testing.assert_array_equal(beyond["outputs"]["r"], decode(case["outputs"]["r"]))
    (weight,) = output_weights(v.example, {"r": w.shape}).values()
    J = {k: decode(m) for k, m in case["jacobian"].items()}
    H = {k: decode(m) for k, m in case["hessian"].items()}
    np.testing.assert_allclose(beyond["pullback"]["r::x"], J["r::x"].T @ weight, rtol=1e-14)
    assert np.all(beyond["pullback"]["r::w"] == 0)
    ahead, back, scale = beyond["jacobian"]["r::x"]
    assert ahead == pytest.approx(float(weight @ (J["r::x"] @ tangents["x"])), rel=1e-13)
    assert back == pytest.approx(float((J["r::x"].T @ weight) @ tangents["x"]), rel=1e-13)
    for a in ("x", "w"):
        np.testing.assert_allclose(beyond["hvp"][a], H[a] @ tangents[a], rtol=1e-14)
        np.testing.assert_allclose(beyond["hvp_u"][a], H[a] @ seconds[a], rtol=1e-14)
    assert [c["names"] for c in fake.calls("outputs_layout")] == [["r"]]


def test_hvp_names_the_ad_that_pushes_the_gradient_forward(fields):
    """`julia_variant(hvp=...)`: the Hessian products by `SecondOrder(outer, the variant's
    own AD)` (here ForwardDiff over Zygote, a combination DI's own tests run), said in
    what computes it (its records' key); an AD with no forward mode, or a hand-written
    gradient, refused in one line."""
    ex, stand_in = fields
    v = weanj.julia_variant(
        ex,
        "julia-pushed",
        family="f",
        loss="fields",
        file="fields.jl",
        ad="zygote",
        hvp="forwarddiff",
    )
    x, w = (_generate(3)[a] for a in ("x", "w"))
    directions = {"x": np.ones(SHAPE), "w": np.full(SHAPE, 0.5)}
    _, _, _, beyond = v.built.checking.evaluation(x, w, directions, second=directions)
    np.testing.assert_allclose(beyond["hvp"]["w"], 2 * np.sin(x) ** 2 * 0.5, rtol=1e-13)
    assert [c["ad"] for c in stand_in.calls("hvp_prepare")] == ["forwarddiff over zygote"]
    assert beyond["jacobian"]["y::x"][0] is None  # Zygote pushes nothing forward
    assert "pushed forward by ForwardDiff" in v.backend_version()
    with pytest.raises(weanj.DefinitionError, match="hvp must be one of 'forwarddiff'"):
        weanj.julia_variant(
            ex, "julia-x", family="f", loss="fields", file="fields.jl", hvp="zygote"
        )
    with pytest.raises(weanj.DefinitionError, match="a hand-written gradient has none"):
        weanj.julia_variant(
            ex, "julia-y", family="f", loss="fields", file="fields.jl", gradient="g", hvp="enzyme"
        )


def test_an_example_of_order_2_without_outputs_gets_its_julia_hessian_products(
    fake,  # noqa: F811
    new_example,
):
    """No outputs, the second order asked: the gradient as ever (Enzyme's one pass), then
    the Hessian products, in the same request; nothing of outputs crosses."""
    fake.kernels(KERNELS)
    (fake.root / "fields.jl").write_text("# a stand-in reads no Julia\n")
    ex = new_example("87-alone", arrays=("x", "w"), wrt=("x", "w"), generate=_generate, order=2)
    v = weanj.julia_variant(ex, "julia-alone", family="f", loss="alone", file="fields.jl")
    x, w = (_generate(4)[a] for a in ("x", "w"))
    v_dirs = {"x": np.full(SHAPE, 2.0), "w": np.ones(SHAPE)}
    u_dirs = {"x": np.ones(SHAPE), "w": np.full(SHAPE, 3.0)}
    value, g, directional, beyond = v.built.checking.evaluation(x, w, v_dirs, second=u_dirs)
    assert directional is None and beyond["outputs"] == {} and "pullback" not in beyond
    np.testing.assert_allclose(g["x"], 2 * (w * np.sin(x)) * w * np.cos(x), rtol=1e-14)
    np.testing.assert_allclose(beyond["hvp"]["x"], 2 * w**2 * np.cos(2 * x) * 2.0, rtol=1e-13)
    np.testing.assert_allclose(beyond["hvp_u"]["w"], 2 * np.sin(x) ** 2 * 3.0, rtol=1e-13)
    assert len(fake.calls("loss_and_gradient")) == 1 and not fake.calls("outputs_layout")
    # and without the second order, the plain request alone, as before
    assert v.built.checking.evaluation(x, w, v_dirs)[3] is None
    assert len(fake.calls("loss_and_gradient")) == 2 and len(fake.calls("loss_hvps")) == 1
