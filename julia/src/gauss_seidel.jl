# 02-gauss-seidel: K Gauss–Seidel sweeps for the 2-D Poisson problem.
# Python counterpart: python/weanj/examples/gauss_seidel.py.
#
# The point update is Jacobi's (`poisson_update`, poisson.jl), applied in place:
#
# - `lex`: a sweep visits `j = 1..n` (outer), `i = 1..n` (inner, fastest) — the
#   column-major loop — so u[i-1,j] and u[i,j-1] are already new.
# - `rb`: a sweep updates all red points ((i+j) even, 1-based interior indices), then all
#   black points; a different algorithm from `lex` (they meet only at the fixed point).

"""
    in_place_solve(sweep!, θ, K)

`u^K` from `u⁰ = 0`, padded, after `K` calls of `sweep!(u, θ, h2)`, each of which updates
`u` in place: the iteration `lex` and `rb` share.
"""
function in_place_solve(sweep!, θ::Matrix{T}, K::Integer) where {T <: Real}
    h2 = grid_h2(T, size(θ, 1))
    u = zero_grid(θ)
    for _ in 1:K
        sweep!(u, θ, h2)
    end
    return u
end

# --- lex: the loop the JAX side reformulates as nested scans -------------------------

"""
    lex_sweep!(u, θ, h2)

One lexicographic sweep, in place (`j` outer, `i` inner, fastest): `poisson_sweep!`
writing into the grid it reads, so `u[i-1, j]` and `u[i, j-1]` are already new.
"""
lex_sweep!(u, θ, h2) = poisson_sweep!(u, u, θ, h2)

"""
    lex_solve(θ, K)

`u^K` from `u⁰ = 0` after `K` lexicographic sweeps, padded.
"""
lex_solve(θ::Matrix, K::Integer) = in_place_solve(lex_sweep!, θ, K)

"""
    lex_loss(θ, uobs, K)

`Σ (u^K − uobs)²` over the interior after `K` lexicographic sweeps.
"""
function lex_loss(θ::Matrix{<:Real}, uobs::Matrix{<:Real}, K::Integer)
    return poisson_loss(lex_solve, θ, uobs, K)
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
            u[i, j] = poisson_update(u, θ, h2, i, j)
        end
    end
    return u
end

"""
    rb_sweep!(u, θ, h2)

One red-black sweep, in place: the red points, then the black points.
"""
function rb_sweep!(u, θ, h2)
    half_sweep!(u, θ, h2, true)
    return half_sweep!(u, θ, h2, false)
end

"""
    rb_solve(θ, K)

`u^K` from `u⁰ = 0` after `K` red-black sweeps, padded.
"""
rb_solve(θ::Matrix, K::Integer) = in_place_solve(rb_sweep!, θ, K)

"""
    rb_loss(θ, uobs, K)

`Σ (u^K − uobs)²` over the interior after `K` red-black sweeps.
"""
function rb_loss(θ::Matrix{<:Real}, uobs::Matrix{<:Real}, K::Integer)
    return poisson_loss(rb_solve, θ, uobs, K)
end
