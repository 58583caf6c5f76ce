# What the Poisson examples share: the grid, `h2` and the loss.
# Python counterpart: python/weanj/examples/_poisson.py.
#
# A 2-D Poisson problem on the unit square: n×n interior unknowns, zero Dirichlet
# boundary, stored padded as an (n+2)×(n+2) array `u`, `h2 = 1/(n+1)^2`, `u⁰ = 0`.
# Loss: `Σ (u^K − uobs)²` over the interior, summed in Float64; gradient with respect to
# `θ`.
#
# Index convention (julia/README.md): the loops run over the padded indices
# `i, j ∈ 2:n+1` of `u`, whose unknown has source `θ[i-1, j-1]` and observation
# `uobs[i-1, j-1]`. `θ[i, j]` is numpy's `theta[i-1, j-1]`: the first axis is `i` in both.
#
# The point update `(source + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4`, with
# `source = h2 * θ[i-1, j-1]`, is the spec's (docs/reference/examples.md)
# `(h2*θ[i,j] + u[i-1,j] + ...) / 4` in the
# same order: Julia's `a + b + c + d` adds from left to right, as numpy and XLA do.

"""
    grid_h2(T, n)

`h2 = 1/(n+1)^2` in the element type `T`. Computed in Float64 and rounded once, as the
Python side's float `1.0 / (n + 1) ** 2` is when it multiplies a float32 array (for an
AD's number type, such as ForwardDiff's dual numbers, a constant of that type: the value
rounded to the type it carries, no derivative).
"""
grid_h2(::Type{T}, n::Integer) where {T <: Real} = T(1 / (n + 1)^2)

"""
    zero_grid(θ)

`u⁰ = 0`, padded: (n+2)×(n+2) in the element type of `θ`.
"""
zero_grid(θ::AbstractMatrix{T}) where {T} = zeros(T, size(θ, 1) + 2, size(θ, 2) + 2)

"""
    poisson_update(u, θ, h2, i, j)

The new value of the padded point `(i, j)` from its neighbours in `u`, the spec's update
with its additions in its order: `(h2 * θ[i-1, j-1] + u[i-1, j] + u[i+1, j] + u[i, j-1] +
u[i, j+1]) / 4`. Every Poisson kernel's loop calls it.
"""
@inline function poisson_update(u, θ, h2, i, j)
    source = h2 * θ[i - 1, j - 1]
    return (source + u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) / 4
end

"""
    poisson_sweep!(unew, u, θ, h2)

One pass over the interior in column-major order (`j` outer, `i` inner, fastest), each
point's `poisson_update` from `u` written into `unew`. Into a second buffer it is a Jacobi
iteration; in place (`unew === u`) a lexicographic Gauss–Seidel sweep, each point reading
its already-updated neighbours `u[i-1, j]` and `u[i, j-1]`.
"""
function poisson_sweep!(unew, u, θ, h2)
    n = size(θ, 1)
    for j in 2:(n + 1), i in 2:(n + 1)
        unew[i, j] = poisson_update(u, θ, h2, i, j)
    end
    return unew
end

"""
    check_poisson(θ, uobs, K)

Refuse, with a one-line `DimensionMismatch` or `ArgumentError`, what the Poisson examples
do not define: `θ` must be n×n with n ≥ 1, `uobs` of the same size, and `K ≥ 1`. Without
it a non-square `θ` would make the loops use its leading n×n block, silently.
"""
function check_poisson(θ::AbstractMatrix, uobs::AbstractMatrix, K::Integer)
    return check_poisson_sizes(size(θ), size(uobs), K)
end

# Only sizes and K (integers, constants to Enzyme) cross into this function, and it is not
# inlined: the messages are built on the error path only.
@noinline function check_poisson_sizes(θsize::Dims{2}, uobssize::Dims{2}, K::Integer)
    if θsize[1] != θsize[2] || θsize[1] < 1
        throw(DimensionMismatch("θ must be a square n×n array with n ≥ 1, got size $θsize"))
    elseif uobssize != θsize
        throw(DimensionMismatch("uobs has size $uobssize and θ $θsize; they must be equal"))
    elseif K < 1
        throw(ArgumentError("K must be at least 1, got $K"))
    end
    return nothing
end

"""
    misfit(u, uobs)

`Σ (u[i, j] − uobs[i-1, j-1])²` over the interior of the padded grid `u`. Each residual is
computed in the element type `T` of the two (their promoted type: a differentiated `u`
may carry an AD's number type and `uobs` not), as the JAX side does; the squares are
summed in Float64 (`accumulator_type`) and the sum is rounded to `T` once
(julia/README.md: every loss sums in Float64). Summed term by term in Float32, the loss
would drift from JAX's `jnp.sum` by more than the float32 loss tolerance from n ≈ 256 on.
"""
function misfit(u::Matrix{<:Real}, uobs::Matrix{<:Real})
    T = promote_type(eltype(u), eltype(uobs))
    S = accumulator_type(T)
    n = size(uobs, 1)
    s = zero(S)
    for j in 2:(n + 1), i in 2:(n + 1)
        r = u[i, j] - uobs[i - 1, j - 1]
        s += S(r)^2
    end
    return T(s)
end

"""
    poisson_loss(solve, θ, uobs, K)

`Σ (u^K − uobs)²` over the interior, `u^K = solve(θ, K)` (padded), after `check_poisson`:
the loss every Poisson variant shares, so that a variant is its solver (as `loss_of` in
python/weanj/examples/_poisson.py).
"""
function poisson_loss(solve, θ::Matrix{<:Real}, uobs::Matrix{<:Real}, K::Integer)
    check_poisson(θ, uobs, K)
    return misfit(solve(θ, K), uobs)
end
