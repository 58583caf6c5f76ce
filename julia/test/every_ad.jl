# Every AD `julia_variant(ad = ...)` offers besides Enzyme, on every kernel of WeanJ,
# through DifferentiationInterface as weanj's worker calls it (`ad_backend`, `ad_prepare`,
# `ad_loss_and_gradient`), against Enzyme's gradient: included by runtests.jl, whose
# fixtures, `arguments`, `wrt_flags`, `scalar_loss`, `gradients` and TOLERANCE it uses.

using Mooncake: Mooncake
using Zygote: Zygote

# The AD packages `julia_variant(ad = ...)` offers besides Enzyme, by weanj's name for
# each; `ad_backend` makes their backends as weanj's worker does.
const AD_PACKAGES = (
    forwarddiff = ForwardDiff,
    mooncake = Mooncake,
    zygote = Zygote,
    finitedifferences = FiniteDifferences,
)

# Zygote differentiates no code that writes into an array: its adjoints of `setindex!` and
# `copyto!` throw "Mutating arrays is not supported" (Zygote.jl src/lib/array.jl). Every
# kernel but 06's writes a grid or work arrays in place (the loops weanj exists for), so
# Zygote refuses each of these, with the error weanj's worker words for a user; it
# differentiates `signfit_loss`, whose loop writes no array, and `signfit_loss_and_residuals`
# (julia-signfit's), which gathers its residuals by a comprehension.
const ZYGOTE_REFUSES = Dict(
    "jacobi_loss" => "writes each iterate into a grid (poisson_sweep!)",
    "lex_loss" => "updates its grid in place (lex_sweep!)",
    "rb_loss" => "updates its grid in place (half_sweep!)",
    "muscl_loss" => "writes slopes, fluxes and fields into work arrays (muscl_step!)",
    "muscl_minmax_loss" =>
        "writes slopes, fluxes and fields into work arrays (muscl_step!)",
    "thomas_loss" => "writes its sweeps into work arrays (thomas_solve!)",
    "cic_loss" => "adds each charge into its grid in place (cic_deposit!)",
)

# How far another AD's gradient may lie from Enzyme's, relative to Enzyme's largest
# entry. ForwardDiff, Mooncake and Zygote differentiate exactly, in another order of
# operations than Enzyme's reverse pass: weanj's tolerance for two implementations of one
# computation (TOLERANCE's gradient, 1e-11 and 1e-4), ten times wider in Float64 for the
# order of the derivatives' sums. FiniteDifferences estimates: its fifth-order central
# method is exact for the polynomials most kernels are along one coordinate, and within
# about 1e-11 elsewhere here; 1e-6 keeps five orders of margin. It runs in Float64 only
# (in Float32 its steps, about 0.1, cross kinks), on the cases the fixtures mark
# `finite_differences` (far enough from every kink: tests/test_julia_generic_kernels.py).
const AD_TOLERANCE = Dict(Float64 => 1.0e-10, Float32 => 1.0e-4)
const FD_TOLERANCE = 1.0e-6

"""
    ad_results(ad, fixture, args, names) -> Vector{([L], Dict)}

`ad_loss_and_gradient`'s loss and gradient arrays by name, with respect to the fixture's
arrays `names` (the others constant), as weanj's worker calls it: unprepared, then twice
with one preparation (`ad_prepare`), as the worker reuses it for every evaluation of a
variant on arguments of the same shapes.
"""
function ad_results(ad::Symbol, fixture, args, names)
    loss = scalar_loss(fixture)
    backend = ad_backend(string(ad), AD_PACKAGES[ad])
    flags = wrt_flags(fixture, names)
    prep = ad_prepare(backend, loss, flags, args...)
    calls = (
        ad_loss_and_gradient(backend, loss, flags, args...),
        ad_loss_and_gradient(backend, loss, flags, args...; prep),
        ad_loss_and_gradient(backend, loss, flags, args...; prep),
    )
    flagged = [name for name in fixture["arrays"] if name in names]
    return [(value, Dict(zip(flagged, found))) for (value, found) in calls]
end

"""
    every_ad_against_enzyme(fixtures)

Every AD `julia_variant(ad = ...)` offers, on every kernel, against Enzyme's
gradient (issue 63): ForwardDiff's dual numbers reach the differentiated arrays only
(each of several alone too), the constant ones stay floats, and the kernels take
both; a preparation serves later calls (the two prepared calls agree to the bit);
Zygote refuses the kernels that write arrays, with the error the worker words.
"""
function every_ad_against_enzyme(fixtures)
    for fixture in fixtures, case in fixture["cases"], T in (Float64, Float32)
        case["on_kinks"] && continue
        @testset "$(fixture["variant"]) $(case["name"]) $T: every AD against Enzyme" begin
            loss = scalar_loss(fixture)
            args = arguments(fixture, case, T)
            value, enzyme = gradients(fixture, args)
            largest = maximum(g -> maximum(abs, g), values(enzyme))
            for ad in keys(AD_PACKAGES)
                if ad === :zygote && haskey(ZYGOTE_REFUSES, fixture["loss"])
                    backend = ad_backend("zygote", Zygote)
                    @test_throws "Mutating arrays is not supported" ad_loss_and_gradient(
                        backend,
                        loss,
                        wrt_flags(fixture),
                        args...,
                    )
                    continue
                end
                fd = ad === :finitedifferences
                fd && !(T === Float64 && case["finite_differences"]) && continue
                bound = (fd ? FD_TOLERANCE : AD_TOLERANCE[T]) * largest
                alone = ad === :forwarddiff ? [[name] for name in fixture["wrt"]] : []
                for names in unique([fixture["wrt"], alone...])
                    results = ad_results(ad, fixture, args, names)
                    @test results[2] == results[3]
                    for (L, found) in results, name in names
                        @test L isa Vector{T} && length(L) == 1
                        @test abs(only(L) - only(value)) <=
                            TOLERANCE[T].loss * abs(only(value))
                        @test eltype(found[name]) == T &&
                            size(found[name]) == size(enzyme[name])
                        @test maximum(abs.(found[name] .- enzyme[name])) <= bound
                    end
                end
            end
        end
    end
    return nothing
end

"""
    di_on_several_arrays()

`ad_loss_and_gradient` on a loss of several arrays, real and complex, some differentiated
and some constant: DifferentiationInterface's one flat vector, cut back into each array's
gradient (complex ones in weanj's convention), by ForwardDiff and FiniteDifferences.
"""
function di_on_several_arrays()
    @testset "ad_loss_and_gradient: DifferentiationInterface on several arrays" begin
        # x real and z complex differentiated, y and s constant: the flat vector holds x,
        # then Re z, then Im z. The gradient of |z|² in weanj's convention is 2z.
        mixed(x, z, y, s) = s * sum(abs2, x .- y) + sum(abs2, z)
        x, y = [1.0, -2.0, 0.5], [0.25, 0.5, -1.0]
        z = ComplexF64[1.0 + 2.0im, -0.5 + 0.25im]
        flags = (true, true, false, false)
        forward = ad_backend("forwarddiff", ForwardDiff)
        value, (gx, gz) = ad_loss_and_gradient(forward, mixed, flags, x, z, y, 3.0)
        @test value isa Vector{Float64} && only(value) ≈ mixed(x, z, y, 3.0)
        @test gx ≈ 2 .* 3 .* (x .- y) && gz ≈ 2 .* z && eltype(gz) == ComplexF64
        @test x == [1.0, -2.0, 0.5] && y == [0.25, 0.5, -1.0]
        # A matrix keeps its shape; Float32 in, Float32 out.
        m = Float32[1 2; 3 4]
        value32, (gm,) = ad_loss_and_gradient(forward, a -> sum(abs2, a), (true,), m)
        @test value32 isa Vector{Float32} && gm isa Matrix{Float32} && gm == 2 .* m
        # FiniteDifferences' fifth-order central method: the loss is quadratic, so its
        # estimate is exact up to rounding (≈ defaults to a relative 1.5e-8).
        fdm = ad_backend("finitedifferences", FiniteDifferences)
        _, (fx, fz) = ad_loss_and_gradient(fdm, mixed, flags, x, z, y, 3.0)
        @test fx ≈ gx && fz ≈ gz
        @test_throws ArgumentError ad_backend("tapenade", ForwardDiff)
        @test_throws ArgumentError ad_loss_and_gradient(
            forward,
            mixed,
            (true, true),
            x,
            z,
            y,
            1.0,
        )
        @test_throws ArgumentError ad_loss_and_gradient(
            forward,
            (a, b) -> sum(a) + sum(b),
            (true, true),
            [1.0],
            Float32[1.0],
        )
    end
    return nothing
end
