# What the Poisson examples share: the grid, `h2` and the loss.
# Python counterpart: python/weanj/examples/_poisson.py.
#
# A 2-D Poisson problem on the unit square: n×n interior unknowns, zero Dirichlet
# boundary, stored padded as an (n+2)×(n+2) array `u`, `h2 = 1/(n+1)^2`, `u⁰ = 0`.
# Loss: `Σ (u^K − uobs)²` over the interior; gradient with respect to `θ`.
#
# Index convention (README.md beside this file): the loops run over the padded indices
# `i, j ∈ 2:n+1` of `u`, whose unknown has source `θ[i-1, j-1]` and observation
# `uobs[i-1, j-1]`. `θ[i, j]` is numpy's `theta[i-1, j-1]`: the first axis is `i` in both.
#
# The point update `(source + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4`, with
# `source = h2 * θ[i-1, j-1]`, is DESIGN.md's `(h2*θ[i,j] + u[i-1,j] + ...) / 4` in the
# same order: Julia's `a + b + c + d` adds from left to right, as numpy and XLA do.

"""
    grid_h2(T, n)

`h2 = 1/(n+1)^2` in the element type `T`. Computed in Float64 and rounded once, as the
Python side's float `1.0 / (n + 1) ** 2` is when it multiplies a float32 array.
"""
grid_h2(::Type{T}, n::Integer) where {T <: AbstractFloat} = T(1 / (n + 1)^2)

"""
    zero_grid(θ)

`u⁰ = 0`, padded: (n+2)×(n+2) in the element type of `θ`.
"""
zero_grid(θ::AbstractMatrix{T}) where {T} = zeros(T, size(θ, 1) + 2, size(θ, 2) + 2)

"""
    misfit(u, uobs)

`Σ (u[i, j] − uobs[i-1, j-1])²` over the interior of the padded grid `u`.
"""
function misfit(u::Matrix{T}, uobs::Matrix{T}) where {T}
    n = size(uobs, 1)
    s = zero(T)
    for j in 2:(n + 1), i in 2:(n + 1)
        s += (u[i, j] - uobs[i - 1, j - 1])^2
    end
    return s
end
