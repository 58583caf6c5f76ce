"""
    WeanJ

The Julia reference kernels of weanj: the in-place loops a Julia scientist writes, one
file per example mirroring `python/weanj/examples/<stem>.py`, gradients by Enzyme.jl in
reverse mode. `julia/README.md` states the index and layout conventions.

Loaded by `julia/run.jl` (the Julia side on its own) and by the juliacall bridge
`python/weanj/_julia.py`; it needs Enzyme only (HDF5 is `julia/io.jl`'s business).
"""
module WeanJ

using Enzyme: Enzyme, Active, Const, Duplicated, Reverse

export VARIANTS, backend_version, gradient, jacobi_loss, lex_loss, rb_loss

include("poisson.jl")
include("jacobi.jl")
include("gauss_seidel.jl")

"""
The Julia variants: example, name, family and loss. The Python side registers the same
names (python/weanj/examples/*.py, through python/weanj/_julia.py).
"""
const VARIANTS = (
    (example = "01-jacobi", name = "julia-jacobi", family = "jacobi", loss = jacobi_loss),
    (example = "02-gauss-seidel", name = "julia-lex", family = "lex", loss = lex_loss),
    (example = "02-gauss-seidel", name = "julia-rb", family = "rb", loss = rb_loss),
)

"""
    gradient(loss, θ, uobs, K)

`∂loss/∂θ` at `(θ, uobs, K)` by Enzyme in reverse mode. `θ` is `Duplicated`: its shadow
`dθ` starts at zero and accumulates the gradient; `uobs` and `K` are `Const`. The loss
allocates its own grids, which Enzyme differentiates through. (`loss::F` makes Julia
specialise on the loss, which it would not do for an argument it only passes on.)
"""
function gradient(loss::F, θ::Matrix{T}, uobs::Matrix{T}, K::Integer) where {F, T}
    dθ = Enzyme.make_zero(θ)
    Enzyme.autodiff(Reverse, loss, Active, Duplicated(θ, dθ), Const(uobs), Const(K))
    return dθ
end

"""
    backend_version()

The `backend_version` attribute of the gradient files: the Julia and Enzyme versions.
"""
backend_version() = "Julia $(VERSION), Enzyme $(pkgversion(Enzyme))"

end # module
