"""
    MyPorts

A scientist's own package, the reference of weanj's example project `julia/example`:
a periodic smoothing applied `S` times and the misfit of its result, with the gradient
written by hand.
"""
module MyPorts

export misfit, misfit_adjoint

"""
    smoothed(v, S)

`(v[i-1] + 2v[i] + v[i+1]) / 4`, periodic, applied `S` times (a new vector each time:
the argument is left as it came).
"""
function smoothed(v::AbstractVector, S::Integer)
    for _ in 1:S
        v = (circshift(v, 1) .+ 2 .* v .+ circshift(v, -1)) ./ 4
    end
    return v
end

"""
    misfit(x, y, S)

`Σ (Mˢx − y)²`, M the smoothing of `smoothed`.
"""
misfit(x::AbstractVector, y::AbstractVector, S::Integer) = sum(abs2, smoothed(x, S) .- y)

"""
    misfit_adjoint(x, y, S)

The gradient of `misfit` with respect to `x`, by hand: M is symmetric, so it is
`2 Mˢ (Mˢx − y)`.
"""
function misfit_adjoint(x::AbstractVector, y::AbstractVector, S::Integer)
    return 2 .* smoothed(smoothed(x, S) .- y, S)
end

end # module
