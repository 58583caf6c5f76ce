# 03-advection: limited upwind advection (MUSCL, minmod limiter) on a periodic n×n grid.
# Python counterpart: python/weanj/examples/advection.py.
#
# Arrays (n×n): `c0` (the initial field; the gradient is taken with respect to it), `u`
# (velocity through the face between cells (i,j) and (i+1,j)), `v` (through the face
# between (i,j) and (i,j+1)), `cobs`; |u|, |v| ≤ 1, λ = dt/dx = 1/4; `T` time steps. One
# step, in the order and parenthesisation of the spec (docs/reference/examples.md):
#
#     minmod(a, b) = 0 if a*b <= 0;  else a if |a| <= |b|;  else b
#     sx[i,j] = minmod(c[i+1,j] − c[i,j], c[i,j] − c[i−1,j]);  sy likewise along j
#     F[i,j]  = u[i,j] * (c[i,j]   + 0.5*(1 − λ*u[i,j])*sx[i,j])     if u[i,j] >= 0
#               u[i,j] * (c[i+1,j] − 0.5*(1 + λ*u[i,j])*sx[i+1,j])   otherwise;  G likewise
#     c'[i,j] = c[i,j] − λ*(F[i,j] − F[i−1,j]) − λ*(G[i,j] − G[i,j−1])
#
# Index convention (julia/README.md): `c[i, j]` is numpy's `c[i-1, j-1]`, and
# the spec's periodic 0-based `i ± 1 (mod n)` is the 1-based `mod1(i ± 1, n)`. The loops
# run `j` outer, `i` inner (column-major); each of sx, sy, F, G and c' is computed in a
# pass of its own from the previous pass's arrays, so the order of the cells within a pass
# does not matter. The element type is `R` (`T` is the spec's number of steps): the
# promoted type of the arrays, so that a differentiated `c0` may carry an AD's number type
# (ForwardDiff's dual numbers) while the velocities stay floats.
#
# Why the two limiters: `minmod` branches as the spec does, so Enzyme differentiates the
# branch taken (at a tie a == b that of a; where a*b <= 0, zero). `minmod_minmax` is the
# usual vectorised form: the same value, but at a tie Julia's `min` hands the derivative
# to its second argument, and `abs`/`sign` have their own derivatives at 0 (see
# python/weanj/examples/advection.py, the table in its docstring).

"""
    minmod(a, b)

The spec's limiter, with its branches: zero where `a*b <= 0`, else `a` where
`|a| <= |b|`, else `b`. Enzyme differentiates the branch taken.
"""
function minmod(a::R, b::R) where {R <: Real}
    if a * b <= 0
        return zero(R)
    elseif abs(a) <= abs(b)
        return a
    else
        return b
    end
end

"""
    minmod_minmax(a, b)

`0.5*(sign(a)+sign(b))*min(abs(a),abs(b))`: bit for bit `minmod`'s value (±0 aside, which
no later operation can tell apart), but Enzyme differentiates Julia's `min`, `abs` and
`sign`: at `a == b` the derivative goes to `b` (`min(x, y)` returns `y` when `x == y`),
at `a == 0 != b` it is `(sign(b)/2, 0)`.
"""
function minmod_minmax(a::R, b::R) where {R <: Real}
    return R(1 // 2) * (sign(a) + sign(b)) * min(abs(a), abs(b))
end

"""
    face_flux(w, chere, cnext, shere, snext)

The flux through the face between a cell and the next along one axis, upwind by the sign
of the face velocity `w`: `w * (chere + 0.5*(1 − λw)*shere)` for `w >= 0`, else
`w * (cnext − 0.5*(1 + λw)*snext)`, with the limited slopes `s` of the two cells. `λ` and
`0.5` are in the type `R` of the field (the velocity `w` may have another: a constant
float where the field carries an AD's number type).
"""
function face_flux(w::Real, chere::R, cnext::R, shere::R, snext::R) where {R <: Real}
    λ = R(1 // 4)
    half = R(1 // 2) # R literals: `0.5` would promote Float32 to Float64
    if w >= 0
        return w * (chere + half * (1 - λ * w) * shere)
    else
        return w * (cnext - half * (1 + λ * w) * snext)
    end
end

"""
    muscl_step!(cnew, c, u, v, sx, sy, F, G, limiter)

One time step: `cnew` from `c`, with `sx`, `sy`, `F`, `G` as work arrays (all n×n).
"""
function muscl_step!(cnew, c, u, v, sx, sy, F, G, limiter::L) where {L}
    n = size(c, 1)
    λ = eltype(c)(1 // 4)
    for j in 1:n, i in 1:n
        ip, im = mod1(i + 1, n), mod1(i - 1, n)
        jp, jm = mod1(j + 1, n), mod1(j - 1, n)
        sx[i, j] = limiter(c[ip, j] - c[i, j], c[i, j] - c[im, j])
        sy[i, j] = limiter(c[i, jp] - c[i, j], c[i, j] - c[i, jm])
    end
    for j in 1:n, i in 1:n
        ip, jp = mod1(i + 1, n), mod1(j + 1, n)
        F[i, j] = face_flux(u[i, j], c[i, j], c[ip, j], sx[i, j], sx[ip, j])
        G[i, j] = face_flux(v[i, j], c[i, j], c[i, jp], sy[i, j], sy[i, jp])
    end
    for j in 1:n, i in 1:n
        im, jm = mod1(i - 1, n), mod1(j - 1, n)
        cnew[i, j] = c[i, j] - λ * (F[i, j] - F[im, j]) - λ * (G[i, j] - G[i, jm])
    end
    return cnew
end

"""
    advect(c0, u, v, T, limiter)

`c^T`: `T` steps from `c0` (which is left unmodified, copied into the first buffer), in
two buffers that swap roles after each step. Every buffer holds the promoted element type
of `c0`, `u` and `v`.
"""
function advect(c0::Matrix{<:Real}, u, v, T::Integer, limiter::L) where {L}
    R = promote_type(eltype(c0), eltype(u), eltype(v))
    c, cnew = copyto!(similar(c0, R), c0), similar(c0, R)
    sx, sy, F, G = similar(c0, R), similar(c0, R), similar(c0, R), similar(c0, R)
    for _ in 1:T
        muscl_step!(cnew, c, u, v, sx, sy, F, G, limiter)
        c, cnew = cnew, c
    end
    return c
end

"""
    check_advection(c0, u, v, cobs, T)

Refuse, with a one-line `DimensionMismatch` or `ArgumentError`, what the example does not
define: `c0` must be n×n with n ≥ 1, `u`, `v`, `cobs` of the same size, `T ≥ 1`, and
|u|, |v| ≤ 1 (the CFL bound with λ = 1/4). `u` and `v` are constants to Enzyme.
"""
function check_advection(c0::AbstractMatrix, u, v, cobs, T::Integer)
    check_advection_sizes(size(c0), size(u), size(v), size(cobs), T)
    return check_cfl(maximum(abs, u), maximum(abs, v))
end

# Only sizes, T and the velocities' maxima (constants to Enzyme) cross into these
# functions, and they are not inlined: the messages are built on the error path only.
@noinline function check_advection_sizes(
    c0size::Dims{2},
    usize::Dims{2},
    vsize::Dims{2},
    cobssize::Dims{2},
    T::Integer,
)
    if c0size[1] != c0size[2] || c0size[1] < 1
        throw(DimensionMismatch("c0 must be n×n with n ≥ 1, got size $c0size"))
    end
    for (name, s) in (("u", usize), ("v", vsize), ("cobs", cobssize))
        if s != c0size
            throw(DimensionMismatch("$name has size $s and c0 $c0size; all must be n×n"))
        end
    end
    if T < 1
        throw(ArgumentError("T must be at least 1, got $T"))
    end
    return nothing
end

@noinline function check_cfl(umax::Real, vmax::Real)
    if umax > 1 || vmax > 1
        throw(ArgumentError("|u| and |v| must be ≤ 1 (CFL, λ = 1/4), got $umax and $vmax"))
    end
    return nothing
end

"""
    advection_misfit(c, cobs)

`Σ (c[i, j] − cobs[i, j])²`: each residual in the promoted element type `R` of the two, as
the JAX side computes it, the squares summed in Float64 (`accumulator_type`) and rounded
to `R` once (README.md: every loss sums in Float64).
"""
function advection_misfit(c::Matrix{<:Real}, cobs::Matrix{<:Real})
    R = promote_type(eltype(c), eltype(cobs))
    S = accumulator_type(R)
    s = zero(S)
    for j in axes(c, 2), i in axes(c, 1)
        r = c[i, j] - cobs[i, j]
        s += S(r)^2
    end
    return R(s)
end

"""
    advection_loss(limiter, c0, u, v, cobs, T)

`Σ (c^T − cobs)²` after `T` MUSCL steps from `c0` with the slope limiter `limiter`, the
arguments checked first: the loss of both Julia variants, which differ in their limiter
only. `limiter::L` makes Julia compile this method for each limiter: an argument a method
only passes on (to `advect`) would otherwise not be specialised on, and the limiter would
be called by dynamic dispatch inside the loops Enzyme differentiates.
"""
function advection_loss(
    limiter::L,
    c0::Matrix{<:Real},
    u::Matrix{<:Real},
    v::Matrix{<:Real},
    cobs::Matrix{<:Real},
    T::Integer,
) where {L}
    check_advection(c0, u, v, cobs, T)
    return advection_misfit(advect(c0, u, v, T, limiter), cobs)
end

"""
    muscl_loss(c0, u, v, cobs, T)

`Σ (c^T − cobs)²` after `T` MUSCL steps from `c0`, minmod by its branches (`julia-muscl`).
"""
function muscl_loss(c0, u, v, cobs, T)
    return advection_loss(minmod, c0, u, v, cobs, T)
end

"""
    muscl_minmax_loss(c0, u, v, cobs, T)

`muscl_loss` with the limiter written `0.5*(sign(a)+sign(b))*min(abs(a),abs(b))`
(`julia-muscl-minmax`): the same loss, Julia's derivatives at the kinks.
"""
function muscl_minmax_loss(c0, u, v, cobs, T)
    return advection_loss(minmod_minmax, c0, u, v, cobs, T)
end
