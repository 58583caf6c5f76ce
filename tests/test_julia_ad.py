"""The AD packages of `julia_variant(ad=...)` on a user's kernel, where no Julia runs
(issue 63): weanj's own worker program on the stand-in juliacall (`tests/stand_ins/
juliacall`), whose DifferentiationInterface answers as each AD would (ForwardDiff's loss
in its inputs' type) and whose refusals are the text Julia prints. Shown here:

- a kernel typed `Vector{T} where {T <: AbstractFloat}` refusing ForwardDiff's dual
  numbers (Julia 1.10's and 1.11's `MethodError`), or converting one to Float64, is one
  line naming the signature or the conversion and the fix;
- Zygote on a kernel that writes an array is one line suggesting Enzyme or Mooncake;
- a Float64 loss on Float32 inputs under ad="forwarddiff" is caught, from one primal
  call before ForwardDiff runs (ForwardDiff would hand the loss back as Float32);
- an AD is prepared once per variant and argument shapes (`WeanJ.ad_prepare`), and the
  preparation serves every later evaluation of those shapes.

Nothing here is Julia, and nothing here computes or claims a Julia result.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import weanj
from weanj._backends import _julia_process
from weanj._backends._julia_faults import ad_refusal

from . import julia_helpers
from .julia_helpers import one_line
from .test_julia_worker import fake, no_worker  # noqa: F401 (fixtures)

new_example = julia_helpers.new_example

# Julia's text for a kernel typed `Vector{T}` with `T <: AbstractFloat` called with
# ForwardDiff's dual numbers in its first array (base/errorshow.jl, `showerror` of a
# MethodError and `show_method_candidates`: an argument a candidate does not match is
# `!Matched::` without colour; Julia 1.11 added the line on the function existing).
DUAL = (
    'ForwardDiff.Dual{ForwardDiff.Tag{WeanJ.FlatLoss{typeof(Main.var"##smooth#231"'
    ".smooth.smooth_loss), Tuple{Val{true}, Val{false}}, Tuple{WeanJ.Segment{false, 1}}}, "
    "Float64}, Float64, 3}"
)
CALLED = f"smooth_loss(::Vector{{{DUAL}}}, ::Vector{{Float64}})"
CANDIDATES = (
    "\n\nClosest candidates are:\n"
    "  smooth_loss(!Matched::Vector{T}, ::Vector{T}) where T<:AbstractFloat\n"
    '   @ Main.var"##smooth#231".smooth /project/julia/smooth.jl:3\n'
)
METHOD_ERROR = {
    "1.10": f"MethodError: no method matching {CALLED}{CANDIDATES}",
    "1.11": (
        f"MethodError: no method matching {CALLED}\nThe function `smooth_loss` exists, but no "
        f"method is defined for this combination of argument types.{CANDIDATES}"
    ),
}
CONVERSION = (
    f"MethodError: no method matching Float64(::{DUAL})\nThe type `Float64` exists, but no "
    "method is defined for this combination of argument types when trying to construct it."
    "\n\nClosest candidates are:\n  (::Type{T})(::Real, !Matched::RoundingMode) where "
    "T<:AbstractFloat\n   @ Base rounding.jl:265\n"
)
# Zygote's, as Zygote.jl's src/lib/array.jl (`_throw_mutation_error`) words it
ZYGOTE = (
    "Mutating arrays is not supported -- called setindex!(Vector{Float64}, ...)\n"
    "This error occurs when you ask Zygote to differentiate operations that change\n"
    "the elements of arrays in place (e.g. setting values with x .= ...)\n\n"
    "Possible fixes:\n- avoid mutating operations (preferred)\n"
    "- or read the documentation and solutions for this error\n"
    "  https://fluxml.ai/Zygote.jl/latest/limitations\n"
)

# The stand-in kernels of `smooth.jl`: Σ (S·x − y)² with its gradient, refused as each
# AD would refuse a kernel written that way (the third item: {ad: Julia's text}).
KERNELS = f"""
import numpy as np

def loss(x, y):
    return x.dtype.type(np.sum((3 * x - y) ** 2))

def in_float64(x, y):
    return np.float64(np.sum((3 * x - y) ** 2))

def gradients(x, y):
    return [(6 * (3 * x - y)).astype(x.dtype), None]

METHOD_ERROR = {json.dumps(METHOD_ERROR)}
KERNELS = {{"smooth.jl": {{
    "typed_10": (loss, gradients, {{"forwarddiff": METHOD_ERROR["1.10"]}}),
    "typed_11": (loss, gradients, {{"forwarddiff": METHOD_ERROR["1.11"]}}),
    "converts": (loss, gradients, {{"forwarddiff": {CONVERSION!r}}}),
    "writes": (loss, gradients, {{"zygote": {ZYGOTE!r}}}),
    "smooth": (loss, gradients),
    "wide": (in_float64, gradients),
}}}}
"""


@pytest.fixture
def smooth(fake, new_example):  # noqa: F811 (the fixture imported above)
    """`variant(name, loss, ad)`: a Julia variant of `smooth.jl` (stand-in kernels above)
    of an example of two float arrays, x differentiated."""
    fake.kernels(KERNELS)
    (fake.root / "smooth.jl").write_text("# a stand-in reads no Julia\n")
    ex = new_example("91-smooth", arrays=("x", "y"), wrt="x")

    def variant(name, loss, ad):
        return weanj.julia_variant(ex, name, family="s", loss=loss, file="smooth.jl", ad=ad)

    return variant


X, Y = np.array([1.0, -2.0, 0.5]), np.array([0.25, 0.5, -1.0])


@pytest.mark.parametrize("julia", ["1.10", "1.11"])
def test_a_kernel_typed_abstractfloat_under_forwarddiff_names_its_signature(smooth, julia):
    v = smooth("julia-typed", f"typed_{julia.replace('1.', '')}", "forwarddiff")
    with pytest.raises(weanj.DefinitionError) as caught:
        v.functions().value_and_grad(X, Y)
    message = one_line(str(caught.value))
    assert message.startswith(
        "julia-typed: ForwardDiff (ad='forwarddiff') passes its dual numbers through typed_"
    )
    # the signature that refused, as Julia shows its candidate, and the call, shortened
    assert "smooth_loss(::Vector{T}, ::Vector{T}) where T<:AbstractFloat refuses them" in message
    assert "called as smooth_loss(::Vector{ForwardDiff.Dual{…}}, ::Vector{Float64})" in message
    assert "T <: Real, not AbstractFloat" in message and "type parameters of their own" in message
    assert "Tag{" not in message and caught.value.exit_code == 2


def test_a_kernel_that_converts_a_dual_to_float64_is_told_where_to_allocate(smooth):
    v = smooth("julia-converts", "converts", "forwarddiff")
    with pytest.raises(weanj.DefinitionError) as caught:
        v.functions().value_and_grad(X, Y)
    message = one_line(str(caught.value))
    assert "passes its dual numbers through converts, which converts one to a float type" in (
        message
    )
    assert "(MethodError: no method matching Float64(::ForwardDiff.Dual{…}))" in message
    assert "zeros(eltype(x), n)" in message and "promote_type(Float64, eltype(x))" in message


def test_zygote_on_a_kernel_that_writes_an_array_suggests_enzyme_or_mooncake(smooth):
    v = smooth("julia-zygote", "writes", "zygote")
    with pytest.raises(weanj.DefinitionError) as caught:
        v.functions().value_and_grad(X, Y)
    assert one_line(str(caught.value)) == (
        "julia-zygote: Zygote (ad='zygote') cannot differentiate writes, which writes into an "
        "array (Zygote: Mutating arrays is not supported -- called setindex!(Vector{Float64}, "
        "...)); ad='enzyme' (the default) and ad='mooncake' differentiate in-place loops "
        "(docs/julia.md: Julia's AD besides Enzyme)"
    )


def test_other_errors_are_left_to_the_general_line():
    """Only a MethodError that carries an AD's number type is read as one: another
    MethodError, or another exception, gives None (the caller's general line)."""
    request = {"variant": "v", "loss": "f", "ad": "forwarddiff"}
    plain = "MethodError: no method matching f(::String)\n\nClosest candidates are:\n  f(::Int)"
    assert ad_refusal(request, plain, plain.splitlines()[0]) is None
    assert ad_refusal(request, "BoundsError: ...", "BoundsError: ...") is None


def test_a_float64_loss_on_float32_inputs_under_forwarddiff_is_caught_before_it_runs(
    fake,  # noqa: F811 (the fixture imported above)
    smooth,
):
    """ForwardDiff returns its loss converted to its inputs' type (DI's `GradientResult(x)`,
    as the stand-in does): the worker takes the loss from one primal call first, whose own
    type gives it away, and never runs ForwardDiff. Mooncake keeps the loss's type, and the
    check after the evaluation catches it as for Enzyme."""
    x32, y32 = X.astype(np.float32), Y.astype(np.float32)
    v = smooth("julia-wide", "wide", "forwarddiff")
    assert v.functions().value_and_grad(X, Y)[0].dtype == np.float64  # float64: fine
    with pytest.raises(_julia_process.JuliaError) as caught:
        v.functions().value_and_grad(x32, y32)
    message = one_line(str(caught.value))
    assert "julia-wide: wide returned a float64 loss on float32 inputs (seen before " in message
    assert "ForwardDiff ran" in message
    float32_calls = [
        c for c in fake.calls("ad_loss_and_gradient") if c["arrays"][0]["dtype"] == "<f4"
    ]
    assert float32_calls == []  # refused before ForwardDiff ran
    mooncake = smooth("julia-wide-mooncake", "wide", "mooncake")
    with pytest.raises(_julia_process.JuliaError, match="returned a float64 loss on float32"):
        mooncake.functions().value_and_grad(x32, y32)


def test_an_ad_is_prepared_once_per_variant_and_shapes(fake, smooth):  # noqa: F811
    """Mooncake compiles its rule when DifferentiationInterface prepares it: the worker
    prepares once per variant and argument types and shapes, and every call after uses
    that preparation; float32 arrays, other shapes or another variant prepare again."""
    v = smooth("julia-mooncake", "smooth", "mooncake")
    fns = v.functions()
    for _ in range(3):
        loss, g = fns.value_and_grad(X, Y)
        np.testing.assert_allclose(g, 6 * (3 * X - Y))
    assert loss == np.sum((3 * X - Y) ** 2)
    assert len(fake.calls("ad_prepare")) == 1
    fns.value_and_grad(X.astype(np.float32), Y.astype(np.float32))
    fns.value_and_grad(np.ones(5), np.zeros(5))
    fns.value_and_grad(np.ones(5), np.zeros(5))
    other = smooth("julia-mooncake-2", "smooth", "mooncake")
    other.functions().value_and_grad(X, Y)
    prepared = fake.calls("ad_prepare")
    assert [(p["ad"], p["signature"]) for p in prepared] == [
        ("mooncake", [["<f8", [3]], ["<f8", [3]]]),
        ("mooncake", [["<f4", [3]], ["<f4", [3]]]),
        ("mooncake", [["<f8", [5]], ["<f8", [5]]]),
        ("mooncake", [["<f8", [3]], ["<f8", [3]]]),
    ]
    calls = fake.calls("ad_loss_and_gradient")
    assert len(calls) == 7 and all(c["prepared"] for c in calls)
