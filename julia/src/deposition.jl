# 05-deposition: cloud-in-cell charge deposition on a periodic n×n grid.
# Python counterpart: python/weanj/examples/deposition.py.
#
# Particles `pos` (P×2, in [0, 1)²), charges `q` (P), observations `rhoobs` (n×n). For
# each particle in order, its charge is shared among the four cells around it with
# bilinear weights, added in place into ρ from ρ = 0; loss `Σ (ρ − rhoobs)²`, gradients
# with respect to `pos` and `q` (Enzyme: `Duplicated` for both, `Const` for `rhoobs`).
#
# Index convention (julia/README.md): `pos[p, 1]` is numpy's `pos[p-1, 0]`
# (the x of particle p-1), `pos[p, 2]` its y; `ρ[i, j]` is numpy's `rho[i-1, j-1]`. The
# 0-based cell `i0 = floor(gx)` of the spec (docs/reference/examples.md), taken mod n, is
# the 1-based `mod(i0, n) + 1`.
#
# Why a loop: `ρ[i, j] += w` adds into each cell in (particle, corner) order, the order
# the spec fixes; a JAX scatter adds in whatever order its implementation chooses, so
# only the variants that keep this order (jax-segment-sum on a CPU, jax-sorted) agree
# with this loop to the last bit. Julia contracts no multiply-add unless asked, so
# `pos * n - 1/2` is rounded twice, as the spec writes it.

"""
    cic_deposit!(ρ, pos, q)

Add the cloud-in-cell charges of the particles `pos` (P×2) with charges `q` (P) to the
periodic grid `ρ` (n×n), particle by particle and corner by corner, in the spec's
order: (i0, j0), (i1, j0), (i0, j1), (i1, j1). `ρ` holds the promoted element type of
`pos` and `q` (either may carry an AD's number type).
"""
function cic_deposit!(ρ::Matrix{<:Real}, pos::Matrix{<:Real}, q::Vector{<:Real})
    n = size(ρ, 1)
    half = eltype(pos)(1 // 2) # in pos's type: `- 0.5` would promote Float32 to Float64
    for p in axes(pos, 1)
        gx = pos[p, 1] * n - half
        gy = pos[p, 2] * n - half
        # floor is an integer here, so Enzyme gives it no derivative: on a kink line (gx
        # integral) the derivative is the one of the assigned cells i0 = gx, i1 = gx + 1.
        ix = floor(Int, gx)
        jy = floor(Int, gy)
        fx = gx - ix
        fy = gy - jy
        # mod, not rem (%): a particle below the first cell centre has ix = -1, i.e. the
        # last cell n; one above the last centre has ix + 1 = n, i.e. the first cell.
        i0, i1 = mod(ix, n) + 1, mod(ix + 1, n) + 1
        j0, j1 = mod(jy, n) + 1, mod(jy + 1, n) + 1
        ρ[i0, j0] += q[p] * ((1 - fx) * (1 - fy))
        ρ[i1, j0] += q[p] * (fx * (1 - fy))
        ρ[i0, j1] += q[p] * ((1 - fx) * fy)
        ρ[i1, j1] += q[p] * (fx * fy)
    end
    return ρ
end

"""
    check_cic(pos, q, rhoobs)

Refuse, with a one-line `DimensionMismatch`, sizes the example does not define: `pos`
must be P×2 with P ≥ 1, `q` of length P, `rhoobs` n×n with n ≥ 1. Without it a wider
`pos` would be read by its first two columns, silently.
"""
function check_cic(pos::AbstractMatrix, q::AbstractVector, rhoobs::AbstractMatrix)
    return check_cic_sizes(size(pos), length(q), size(rhoobs))
end

# Only sizes (integers, constants to Enzyme) cross into this function, and it is not
# inlined: the messages are built on the error path only.
@noinline function check_cic_sizes(possize::Dims{2}, nq::Integer, rhosize::Dims{2})
    if possize[2] != 2 || possize[1] < 1
        throw(DimensionMismatch("pos must be P×2 with P ≥ 1, got size $possize"))
    elseif nq != possize[1]
        throw(DimensionMismatch("q has length $nq, pos has $(possize[1]) rows"))
    elseif rhosize[1] != rhosize[2] || rhosize[1] < 1
        throw(DimensionMismatch("rhoobs must be n×n with n ≥ 1, got size $rhosize"))
    end
    return nothing
end

"""
    cic_loss(pos, q, ρobs)

`Σ (ρ − ρobs)²` with ρ the cloud-in-cell deposition of the particles `pos` (P×2) with
charges `q` on the n×n grid of `ρobs` (numpy's `rhoobs`). Each residual is computed in
the promoted element type `T` of the arrays, as the JAX side does; the squares are summed
in Float64 (`accumulator_type`) and the sum is rounded to `T` once (julia/README.md:
every loss sums in Float64), so that a Float32 loss of a large grid does not drift from
JAX's `jnp.sum` by more than the float32 tolerance.
"""
function cic_loss(pos::Matrix{<:Real}, q::Vector{<:Real}, ρobs::Matrix{<:Real})
    check_cic(pos, q, ρobs)
    T = promote_type(eltype(pos), eltype(q), eltype(ρobs))
    S = accumulator_type(T)
    n = size(ρobs, 1)
    ρ = zeros(T, n, n)
    cic_deposit!(ρ, pos, q)
    s = zero(S)
    for j in 1:n, i in 1:n
        r = ρ[i, j] - ρobs[i, j]
        s += S(r)^2
    end
    return T(s)
end
