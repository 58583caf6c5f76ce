# 01-jacobi: K Jacobi iterations for the 2-D Poisson problem.
# Python counterpart: python/weanj/examples/jacobi.py.
#
# Every interior point is updated from the previous iterate at once,
#
#     u[i,j] ← (h2*θ[i,j] + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4
#
# with the additions in exactly this order, so that implementations performing the same
# arithmetic agree to the last bit. The new iterate goes into a second buffer, and the
# two buffers swap roles after each iteration.

"""
    jacobi_solve(θ, K)

`u^K` from `u⁰ = 0`, padded.
"""
function jacobi_solve(θ::Matrix{T}, K::Integer) where {T <: Real}
    h2 = grid_h2(T, size(θ, 1))
    u, unew = zero_grid(θ), zero_grid(θ)
    for _ in 1:K
        poisson_sweep!(unew, u, θ, h2)
        u, unew = unew, u
    end
    return u
end

"""
    jacobi_loss(θ, uobs, K)

`Σ (u^K − uobs)²` over the interior after `K` Jacobi iterations.
"""
function jacobi_loss(θ::Matrix{<:Real}, uobs::Matrix{<:Real}, K::Integer)
    return poisson_loss(jacobi_solve, θ, uobs, K)
end
