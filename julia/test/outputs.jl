# Outputs beside the loss, their pullbacks and pushforwards, and the Hessian-vector
# products (src/outputs.jl, src/second_order.jl), called as weanj's worker calls them
# (python/weanj/_backends/_julia_beyond.py), against what the Python reference wrote in
# the fixtures of the examples that declare outputs (test/fixtures/<variant>.json: each
# case's outputs, each output's Jacobian by wrt array and each array's own Hessian block,
# derived by hand in tests/crossval/ and checked there against central differences).
# Included by runtests.jl, whose `decode`, `arguments`, `wrt_flags`, `direction` and
# TOLERANCE it uses, as every_ad.jl's AD_PACKAGES, AD_TOLERANCE and FD_TOLERANCE.

# numpy's C order of an array's elements (the order of the rows and columns of the
# fixtures' Jacobians and Hessians), and back.
c_vec(a::AbstractArray) = vec(permutedims(a, Tuple(ndims(a):-1:1)))
function from_c(v::AbstractVector, dims::Tuple)
    return permutedims(reshape(v, reverse(dims)), Tuple(length(dims):-1:1))
end

# `found` within `tolerance` of `expected`, relative to its largest entry, at least 1: a
# block that is zero (06's ∂r/∂w, its Hessian in w) is held to the tolerance absolutely.
function near(found, expected, tolerance)
    size(found) == size(expected) || return false
    return maximum(abs, found .- expected) <= tolerance * max(maximum(abs, expected), 1)
end

"""
    derivative_backends() -> Vector

The backends whose pullbacks and pushforwards are checked against the reference, as
the worker makes them (`enzyme_backends`; `outputs_backends` of `ad_backend`), with their
tolerance (every_ad.jl's: FiniteDifferences estimates) and whether their Hessian-vector
products are checked too: Enzyme's (forward over reverse) and ForwardDiff's (forward over
forward), DI's combinations that its own tests run on functions with `Constant` contexts.
"""
function derivative_backends()
    found = Any[(
        name = "enzyme",
        backends = enzyme_backends("bare", false),
        tolerance = TOLERANCE[Float64].gradient,
        second = true,
    )]
    push!(
        found,
        (
            name = "enzyme, runtime activity",
            backends = enzyme_backends("bare", true),
            tolerance = TOLERANCE[Float64].gradient,
            second = false,
        ),
    )
    for ad in keys(AD_PACKAGES)
        fd = ad === :finitedifferences
        push!(
            found,
            (
                name = string(ad),
                backends = outputs_backends(ad_backend(string(ad), AD_PACKAGES[ad])),
                tolerance = fd ? FD_TOLERANCE : AD_TOLERANCE[Float64],
                second = ad === :forwarddiff,
            ),
        )
    end
    return found
end

"""
    outputs_against_the_reference(fixtures)

For each fixture whose example declares outputs: the outputs of `outputs_layout`, the
loss, gradient and outputs of `outputs_loss_and_gradient` (Float64 and Float32), and in
Float64 the pullbacks `Jᵀ·w` and pushforwards `J·v` of `outputs_derivatives` and the
Hessian-vector products of `loss_hvps`, along fixed directions (`direction`), against
the reference's outputs, gradient, Jacobians and Hessian blocks.
"""
function outputs_against_the_reference(fixtures)
    for fixture in fixtures, case in fixture["cases"]
        isempty(fixture["outputs"]) && continue
        for T in (Float64, Float32)
            @testset "$(fixture["variant"]) $(case["name"]) $T: outputs beside the loss" begin
                outputs_beside_the_loss(fixture, case, T)
            end
        end
        for found in derivative_backends()
            fd = found.name == "finitedifferences"
            fd && !case["finite_differences"] && continue
            @testset "$(fixture["variant"]) $(case["name"]): $(found.name)'s derivatives" begin
                outputs_derivatives_against(fixture, case, found)
            end
        end
    end
    return nothing
end

function outputs_beside_the_loss(fixture, case, T)
    kernel = kernel_function(WeanJ, fixture["loss"])
    names, flags = Tuple(fixture["outputs"]), wrt_flags(fixture)
    flagged = [name for name in fixture["arrays"] if name in fixture["wrt"]]
    args = arguments(fixture, case, T)
    before = deepcopy(args)
    tolerance = TOLERANCE[T]
    expected = Float64(case["loss"])
    found = outputs_layout(kernel, names, args...)
    @test found.value isa Vector{T}
    @test abs(only(found.value) - expected) <= tolerance.loss * abs(expected)
    for (k, name) in enumerate(names)
        @test eltype(found.outputs[k]) == T
        @test near(found.outputs[k], decode(case["outputs"][name]), tolerance.gradient)
    end
    backends = enzyme_backends("bare", false)
    prep = outputs_prepare(backends, kernel, found.layout, flags, args...)
    value, shadows, outputs = outputs_loss_and_gradient(
        backends,
        kernel,
        found.layout,
        flags,
        args...;
        prep,
    )
    @test value isa Vector{T}
    @test abs(only(value) - expected) <= tolerance.loss * abs(expected)
    for (name, g) in zip(flagged, shadows)
        @test eltype(g) == T && near(g, decode(case["gradient"][name]), tolerance.gradient)
    end
    @test all(near(o, f, tolerance.gradient) for (o, f) in zip(outputs, found.outputs))
    @test args == before # the inputs as they came
    return nothing
end

function outputs_derivatives_against(fixture, case, found)
    kernel = kernel_function(WeanJ, fixture["loss"])
    names, flags = Tuple(fixture["outputs"]), wrt_flags(fixture)
    flagged = [name for name in fixture["arrays"] if name in fixture["wrt"]]
    args = arguments(fixture, case, Float64)
    layout = outputs_layout(kernel, names, args...).layout
    at(a) = args[findfirst(==(a), fixture["arrays"])]
    tangents = Tuple(direction(at(a), k) for (k, a) in enumerate(flagged))
    seconds = Tuple(direction(at(a), 10 + k) for (k, a) in enumerate(flagged))
    weights = Tuple(
        direction(decode(case["outputs"][o]), 20 + k)
        for (k, o) in enumerate(names)
    )
    jacobian(o, a) = decode(case["jacobian"]["$o::$a"])
    backends = found.backends
    prep = outputs_prepare(
        backends,
        kernel,
        layout,
        flags,
        args...;
        seeds = 1 + length(names),
        forward = true,
    )
    got = outputs_derivatives(
        backends,
        kernel,
        layout,
        flags,
        args,
        tangents,
        weights;
        prep,
    )
    A = length(flagged)
    for (i, o) in enumerate(names), (j, a) in enumerate(flagged)
        pulled = got.pullbacks[(i - 1) * A + j]
        expected = from_c(jacobian(o, a)' * c_vec(weights[i]), size(at(a)))
        @test near(pulled, expected, found.tolerance)
    end
    @test (backends.forward === nothing) == (got.pushforwards === nothing)
    @test got.forward_refused == ""
    if got.pushforwards !== nothing
        for (j, a) in enumerate(flagged), (i, o) in enumerate(names)
            pushed = got.pushforwards[(j - 1) * length(names) + i]
            shape = size(decode(case["outputs"][o]))
            @test near(
                pushed,
                from_c(jacobian(o, a) * c_vec(tangents[j]), shape),
                found.tolerance,
            )
        end
    end
    found.second || return nothing
    loss = LossAlone(kernel)
    hessian = hvp_prepare(backends.second, loss, flags, args...; directions = 2A)
    products = loss_hvps(
        backends.second,
        loss,
        flags,
        args,
        tangents,
        seconds;
        prep = hessian,
    )
    for (j, a) in enumerate(flagged), (k, along) in enumerate((tangents[j], seconds[j]))
        H = decode(case["hessian"][a])
        expected = from_c(H * c_vec(along), size(at(a)))
        @test near(products[2(j - 1) + k], expected, found.tolerance)
    end
    return nothing
end

"""
    outputs_convention()

What a loss with outputs must return (`outputs_layout`, an `OutputsConventionError`
otherwise), `LossAlone`, `handwritten_outputs`, and the bookkeeping of the flat vectors
on a kernel of two arrays with a matrix output and a number: each pullback and
pushforward of `outputs_derivatives` against ForwardDiff's Jacobian of the output
(column-major, as Julia lays arrays out), and the dot-product identity.
"""
function outputs_convention()
    @testset "a loss with outputs returns them beside it, as the convention says" begin
        x = [1.0, 2.0]
        good(x) = (sum(abs2, x), (; u = 2 .* x, s = sum(x)))
        found = outputs_layout(good, ("s", "u"), x)
        @test found.value == [5.0] && found.outputs[1] == fill(3.0)
        @test found.outputs[2] == [2.0, 4.0]
        @test found.layout.dims == ((2,), ()) && found.layout.order == (2, 1) # u, s
        @test LossAlone(good)(x) == 5.0
        @test_throws OutputsConventionError outputs_layout(sum, ("u",), x)
        @test_throws OutputsConventionError outputs_layout(good, ("u",), x)
        @test_throws OutputsConventionError outputs_layout(good, ("u", "s", "t"), x)
        wider(x) = (Float32(sum(x)), (; u = x))
        @test_throws OutputsConventionError outputs_layout(wider, ("u",), x)
        @test_throws OutputsConventionError outputs_layout(
            x -> (1.0, (; u = "u")),
            ("u",),
            x,
        )
        value, (g,), outputs = handwritten_outputs(
            good,
            x -> 2 .* x,
            ("u", "s"),
            (true,),
            x,
        )
        @test value == [5.0] && g == [2.0, 4.0] && outputs == ([2.0, 4.0], fill(3.0))
        @test x == [1.0, 2.0]
    end
    @testset "outputs' pullbacks and pushforwards: a matrix output, two arrays" begin
        # m = a .* b' (3×2) and t = Σ a³ + s·Σ b, of a (3) and b (2), s a constant
        kernel(a, b, s) = (
            sum(abs2, a) + s * sum(b),
            (; m = a .* b', t = sum(a.^3) + s * sum(b)),
        )
        a, b, s = [1.0, -2.0, 0.5], [0.25, 3.0], 2.0
        flags = (true, true, false)
        layout = outputs_layout(kernel, ("m", "t"), a, b, s).layout
        tangents = (direction(a, 1), direction(b, 2))
        weights = (direction(zeros(3, 2), 3), fill(0.75))
        # each output's Jacobian by each array, column-major (ForwardDiff's)
        outputs(a, b) = kernel(a, b, s)[2]
        J = Dict(
            ("m", "a") => ForwardDiff.jacobian(a -> vec(outputs(a, b).m), a),
            ("m", "b") => ForwardDiff.jacobian(b -> vec(outputs(a, b).m), b),
            ("t", "a") => ForwardDiff.jacobian(a -> [outputs(a, b).t], a),
            ("t", "b") => ForwardDiff.jacobian(b -> [outputs(a, b).t], b),
        )
        backends = enzyme_backends("bare", false)
        prep = outputs_prepare(
            backends,
            kernel,
            layout,
            flags,
            a,
            b,
            s;
            seeds = 3,
            forward = true,
        )
        got = outputs_derivatives(
            backends,
            kernel,
            layout,
            flags,
            (a, b, s),
            tangents,
            weights;
            prep,
        )
        @test got.value ≈ [sum(abs2, a) + s * sum(b)] && got.outputs[1] ≈ a .* b'
        for (i, o) in enumerate(("m", "t")), (j, v) in enumerate(("a", "b"))
            pulled = got.pullbacks[(i - 1) * 2 + j]
            @test pulled ≈ J[(o, v)]' * vec(weights[i])
            pushed = got.pushforwards[(j - 1) * 2 + i]
            @test size(pushed) == size(weights[i]) && vec(pushed) ≈ J[(o, v)] * tangents[j]
            @test sum(weights[i] .* pushed) ≈
                sum(pulled .* tangents[j]) # ⟨w, Jv⟩ = ⟨Jᵀw, v⟩
        end
    end
    return nothing
end
