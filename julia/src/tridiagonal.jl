# 04-tridiagonal: m tridiagonal systems of size n, solved by the Thomas algorithm.
# Python counterpart: python/weanj/examples/tridiagonal.py.
#
# Arrays (m×n): `a`, `b`, `c` (sub-, main and super-diagonal), `d` (right-hand side),
# `xobs`. Row r is one system; with the 1-based indices of this file
#
#     a[r,k]*x[k-1] + b[r,k]*x[k] + c[r,k]*x[k+1] = d[r,k]
#
# (numpy's `a[r-1, k-1]` is `a[r, k]` here: same axes, only the base differs). `a[r,1]` and
# `c[r,n]` are not part of the system. The order per row of the spec
# (docs/reference/examples.md), 1-based:
#
#     cp[1] = c[1]/b[1];  dp[1] = d[1]/b[1]
#     for k = 2..n:  w = b[k] - a[k]*cp[k-1];  cp[k] = c[k]/w (k <= n-1);
#                    dp[k] = (d[k] - a[k]*dp[k-1])/w
#     x[n] = dp[n];  for k = n-1 down to 1:  x[k] = dp[k] - cp[k]*x[k+1]
#
# Loss `Σ (x - xobs)²`; Enzyme differentiates it with respect to a, b, c and d. The loops
# run `k` outer and the row `r` inner: column-major order, so the inner loop walks
# contiguous memory. The rows are independent, so every row still sees exactly the
# operations above in that order, and the bits are those of a row-by-row loop.

"""
    check_tridiagonal(a, b, c, d, xobs)

Refuse, with a one-line `DimensionMismatch`, arrays the loops do not define: all five must
be m×n with m, n ≥ 1. (Strict diagonal dominance, which keeps every pivot `w` away from
zero, is checked by the Python side's validator before any variant runs.)
"""
function check_tridiagonal(a, b, c, d, xobs)
    return check_tridiagonal_sizes(size(a), size(b), size(c), size(d), size(xobs))
end

# Only sizes (integers, constants to Enzyme) cross into this function, and it is not
# inlined: the messages are built on the error path only.
@noinline function check_tridiagonal_sizes(asize, bsize, csize, dsize, xobssize)
    if minimum(bsize) < 1
        throw(DimensionMismatch("b must be an m×n array with m, n ≥ 1, got size $bsize"))
    end
    for (name, s) in (("a", asize), ("c", csize), ("d", dsize), ("xobs", xobssize))
        if s != bsize
            throw(DimensionMismatch("$name has size $s, b $bsize; they must be equal"))
        end
    end
    return nothing
end

"""
    thomas_solve!(x, cp, dp, a, b, c, d)

Solve the m systems (the rows) into `x`, using `cp` and `dp` as work arrays; all m×n.
`a[:, 1]` and `c[:, n]` are never read (`cp[1] = c[1]/b[1]` reads `c[:, n]` when n = 1,
as the spec writes it, but then nothing uses `cp`). `cp[:, n]` is left as it was.
"""
function thomas_solve!(x, cp, dp, a, b, c, d)
    m, n = size(b)
    for r in 1:m
        cp[r, 1] = c[r, 1] / b[r, 1]
        dp[r, 1] = d[r, 1] / b[r, 1]
    end
    for k in 2:n, r in 1:m
        w = b[r, k] - a[r, k] * cp[r, k - 1]
        if k <= n - 1
            cp[r, k] = c[r, k] / w
        end
        dp[r, k] = (d[r, k] - a[r, k] * dp[r, k - 1]) / w
    end
    for r in 1:m
        x[r, n] = dp[r, n]
    end
    for k in (n - 1):-1:1, r in 1:m
        x[r, k] = dp[r, k] - cp[r, k] * x[r, k + 1]
    end
    return x
end

"""
    thomas_loss(a, b, c, d, xobs)

`Σ (x - xobs)²` over all m×n entries, `x` the Thomas solution of every row. Each residual
is computed in the promoted element type `T` of the arrays, as the JAX side does; the
squares are summed in Float64 (`accumulator_type`) and the sum is rounded to `T` once
(julia/README.md: every loss sums in Float64), so a Float32 loss is the Float32 rounding
of an accurate sum. The work arrays are allocated here, in `T`, so the arguments are left
unmodified.
"""
function thomas_loss(
    a::Matrix{<:Real},
    b::Matrix{<:Real},
    c::Matrix{<:Real},
    d::Matrix{<:Real},
    xobs::Matrix{<:Real},
)
    check_tridiagonal(a, b, c, d, xobs)
    T = promote_type(eltype(a), eltype(b), eltype(c), eltype(d), eltype(xobs))
    S = accumulator_type(T)
    m, n = size(b)
    x, cp, dp = zeros(T, m, n), zeros(T, m, n), zeros(T, m, n)
    thomas_solve!(x, cp, dp, a, b, c, d)
    s = zero(S)
    for k in 1:n, r in 1:m
        s += S(x[r, k] - xobs[r, k])^2
    end
    return T(s)
end
