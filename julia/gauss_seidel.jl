# 02-gauss-seidel: K Gauss–Seidel sweeps for the 2-D Poisson problem.
# Python counterpart: python/weanj/examples/gauss_seidel.py.
#
# The point update is Jacobi's (jacobi.jl), applied in place:
#
# - `lex`: a sweep visits `j = 1..n` (outer), `i = 1..n` (inner, fastest) — the
#   column-major loop — so u[i-1,j] and u[i,j-1] are already new.
# - `rb`: a sweep updates all red points ((i+j) even, 1-based interior indices), then all
#   black points; a different algorithm from `lex` (they meet only at the fixed point).

# --- lex: the loop the JAX side reformulates as nested scans -------------------------

"""
    lex_sweep!(u, θ, h2)

One lexicographic sweep, in place: `j` outer, `i` inner (fastest).
"""
function lex_sweep!(u, θ, h2)
    n = size(θ, 1)
    for j in 2:(n + 1), i in 2:(n + 1)
        source = h2 * θ[i - 1, j - 1]
        u[i, j] = (source + u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) / 4
    end
    return u
end

"""
    lex_solve(θ, K)

`u^K` from `u⁰ = 0` after `K` lexicographic sweeps, padded.
"""
function lex_solve(θ::Matrix{T}, K::Integer) where {T <: AbstractFloat}
    h2 = grid_h2(T, size(θ, 1))
    u = zero_grid(θ)
    for _ in 1:K
        lex_sweep!(u, θ, h2)
    end
    return u
end

"""
    lex_loss(θ, uobs, K)

`Σ (u^K − uobs)²` over the interior after `K` lexicographic sweeps.
"""
function lex_loss(θ::Matrix{T}, uobs::Matrix{T}, K::Integer) where {T <: AbstractFloat}
    check_poisson(θ, uobs, K)
    return misfit(lex_solve(θ, K), uobs)
end

# --- rb: red points, then black points ------------------------------------------------
# A red point's four neighbours are black, so updating the red points one after another
# in place reads the same values as the JAX side's vectorised half-sweep does.

"""
    half_sweep!(u, θ, h2, red)

Update, in place, the red points (`red = true`) or the black points (`red = false`).
Red is `(i+j)` even on 1-based interior indices; the padded indices used here are each
one larger, so `i + j` has the same parity.
"""
function half_sweep!(u, θ, h2, red::Bool)
    n = size(θ, 1)
    for j in 2:(n + 1), i in 2:(n + 1)
        if iseven(i + j) == red
            source = h2 * θ[i - 1, j - 1]
            u[i, j] = (source + u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) / 4
        end
    end
    return u
end

"""
    rb_solve(θ, K)

`u^K` from `u⁰ = 0` after `K` red-black sweeps, padded.
"""
function rb_solve(θ::Matrix{T}, K::Integer) where {T <: AbstractFloat}
    h2 = grid_h2(T, size(θ, 1))
    u = zero_grid(θ)
    for _ in 1:K
        half_sweep!(u, θ, h2, true)
        half_sweep!(u, θ, h2, false)
    end
    return u
end

"""
    rb_loss(θ, uobs, K)

`Σ (u^K − uobs)²` over the interior after `K` red-black sweeps.
"""
function rb_loss(θ::Matrix{T}, uobs::Matrix{T}, K::Integer) where {T <: AbstractFloat}
    check_poisson(θ, uobs, K)
    return misfit(rb_solve(θ, K), uobs)
end
