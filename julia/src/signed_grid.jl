# 06-signed-grid: a least-squares fit of a polynomial to sign(t) on a uniform grid.
# Python counterpart: python/weanj/examples/signed_grid.py.
#
# Coefficients `x` (m ≥ 1), weights `w` (n ≥ 2, which fixes the grid). Grid point i of
# this file (1-based) is the spec's (docs/reference/examples.md) 0-based i - 1, so
#
#     t = -1 + 2(i-1)/(n-1);  r = sign(t) - Σ_j x[j]*t^(j-1);  L = Σ_i w[i]*r²
#
# with the polynomial subtracted term by term from j = 1, t^(j-1) carried in `p`.
# Enzyme differentiates it with respect to `x` and `w` (both `Duplicated`); `t` is made of
# integers only, so nothing flows through `sign`.
#
# Why this loop is the reference: Julia evaluates `T(2(i - 1)) / T(n - 1)`, rounds it,
# then adds `-1` and rounds again, as written. It does not replace a division by a
# multiplication with the reciprocal, and it contracts no `a*b + c` into a fused
# multiply-add unless asked (`muladd`, `@fastmath`). So at the midpoint of an odd n,
# where 2(i-1) == n-1, the quotient is exactly 1 and t exactly 0, sign(t) == 0; XLA
# computes fma(i-1, RN(2/(n-1)), -1) there, which is not 0 unless (n-1)/2 is a power of
# two (n = 7: -5.6e-17 in Float64), and its sign(t) is ±1.

"""
    check_signfit(x, w)

Refuse, with a one-line `DimensionMismatch`, arguments the loop does not define: at
least one coefficient, and n ≥ 2 grid points (t divides by n - 1).
"""
function check_signfit(x::AbstractVector, w::AbstractVector)
    return check_signfit_sizes(length(x), length(w))
end

# Only sizes (integers, constants to Enzyme) cross into this function, and it is not
# inlined: the messages are built on the error path only.
@noinline function check_signfit_sizes(m::Integer, n::Integer)
    if m < 1
        throw(DimensionMismatch("x must hold m ≥ 1 coefficients, got $m"))
    elseif n < 2
        throw(DimensionMismatch("w must hold n ≥ 2 weights (t divides by n - 1), got $n"))
    end
    return nothing
end

"""
    signfit_loss(x, w)

`Σ w[i] * (sign(t_i) - Σ_j x[j] * t_i^(j-1))²` on the grid `t_i = -1 + 2(i-1)/(n-1)`,
i = 1..n, n = `length(w)`. `t` and the residual are computed in the promoted element type
`T` of `x` and `w`, as the JAX side does (2(i-1) and n-1 are exact in `T` for n ≤ 2^23;
for an AD's number type `t` is a constant of it); each term is summed in Float64
(`accumulator_type`) and the sum rounded to `T` once (julia/README.md: every loss sums in
Float64).
"""
function signfit_loss(x::Vector{<:Real}, w::Vector{<:Real})
    check_signfit(x, w)
    T = promote_type(eltype(x), eltype(w))
    S = accumulator_type(T)
    n = length(w)
    s = zero(S)
    for i in 1:n
        r = signfit_residual(x, T, i, n)
        s += S(w[i]) * S(r)^2
    end
    return T(s)
end

"""
    signfit_loss_and_residuals(x, w) -> (L, (; r))

The loss of `signfit_loss` and its residuals `r[i] = sign(t_i) - Σ_j x[j] * t_i^(j-1)`,
the output 06-signed-grid declares (`julia-signfit`; docs/outputs.md: a kernel returns
its outputs beside its loss). The same residuals, summed in the same order: the same
loss to the bit. The residuals are gathered by a comprehension, not written into an
array, so that Zygote (`ad = "zygote"`), which refuses code that mutates arrays,
differentiates it too.
"""
function signfit_loss_and_residuals(x::Vector{<:Real}, w::Vector{<:Real})
    check_signfit(x, w)
    T = promote_type(eltype(x), eltype(w))
    S = accumulator_type(T)
    n = length(w)
    r = [signfit_residual(x, T, i, n) for i in 1:n]
    s = zero(S)
    for i in 1:n
        s += S(w[i]) * S(r[i])^2
    end
    return T(s), (; r = r)
end

# The residual at grid point i of n, in `T`: `sign(t)` minus the polynomial, subtracted
# term by term from j = 1 with t^(j-1) carried in `p` (the file's header).
function signfit_residual(x::Vector{<:Real}, ::Type{T}, i::Int, n::Int) where {T}
    t = -one(T) + T(2 * (i - 1)) / T(n - 1)
    r = sign(t)
    p = one(T)
    for j in eachindex(x)
        r = r - x[j] * p
        p = p * t
    end
    return r
end
