"""
    WeanJ

The Julia reference kernels of weanj: the in-place loops a Julia scientist writes, one
file per example in `julia/<stem>.jl` mirroring `python/weanj/examples/<stem>.py`, and one
generic Enzyme gradient for all of them (and for a user's own kernels). The conventions
(indices, layout, Float64 sums) are in `julia/README.md`.

Loaded as `using WeanJ` (`julia --project=julia`), by `julia/run.jl` (Julia alone, with
HDF5) and by the juliacall bridge `python/weanj/_backends/_julia.py`. Needs Enzyme only.
"""
module WeanJ

using Enzyme: Enzyme, Active, Const, Duplicated, Reverse

export EXAMPLES, VARIANTS
export backend_version, enzyme_gradient, include_kernels, kernel_function
export jacobi_loss, lex_loss, rb_loss
export muscl_loss, muscl_minmax_loss
export thomas_loss
export cic_loss
# New examples: export their loss functions here.

# --- the kernels, one file per example (dependencies first) ------------------------------

include("../poisson.jl")
include("../jacobi.jl")
include("../gauss_seidel.jl")
include("../advection.jl")
include("../tridiagonal.jl")
include("../deposition.jl")
# New examples: each further julia/<stem>.jl goes here, with its rows in EXAMPLES and
# VARIANTS below and its loss functions in the export list above.

# --- what the Python registry says, for julia/run.jl and test/runtests.jl ----------------

# The fields of a row of EXAMPLES that 01-jacobi and 02-gauss-seidel share: they pose the
# same Poisson problem (poisson.jl).
const POISSON = (
    arrays = ("theta", "uobs"),
    kinds = ("float", "float"),
    wrt = ("theta",),
    params = ("K",),
    param_kinds = ("int",),
)

"""
The examples that have Julia kernels, as `python/weanj/examples/<stem>.py` registers
them: their array inputs in call order with each one's kind (`"float"`, `"complex"`,
`"int"`, `"index"` for an int array of 0-based indices, `index=True`, which the kernels
receive plus one, and `"bool"`: what io.jl accepts in an inputs file), the arrays the gradient is
taken with respect to, and their static parameters (passed after the arrays) with each
one's kind (`"int"`, `"float"`, `"bool"`). A test on the Python side checks that the
two agree.
"""
const EXAMPLES = (
    (; name = "01-jacobi", POISSON...),
    (; name = "02-gauss-seidel", POISSON...),
    (
        name = "03-advection",
        arrays = ("c0", "u", "v", "cobs"),
        kinds = ("float", "float", "float", "float"),
        wrt = ("c0",),
        params = ("T",),
        param_kinds = ("int",),
    ),
    (
        name = "04-tridiagonal",
        arrays = ("a", "b", "c", "d", "xobs"),
        kinds = ("float", "float", "float", "float", "float"),
        wrt = ("a", "b", "c", "d"),
        params = (),
        param_kinds = (),
    ),
    (
        name = "05-deposition",
        arrays = ("pos", "q", "rhoobs"),
        kinds = ("float", "float", "float"),
        wrt = ("pos", "q"),
        params = (),
        param_kinds = (),
    ),
    # New examples: one row each, here.
)

"""
The Julia variants: example, name, family and loss function. The Python side registers
the same names (`weanj.julia_variant` in python/weanj/examples/<stem>.py).
"""
const VARIANTS = (
    (example = "01-jacobi", name = "julia-jacobi", family = "jacobi", loss = jacobi_loss),
    (example = "02-gauss-seidel", name = "julia-lex", family = "lex", loss = lex_loss),
    (example = "02-gauss-seidel", name = "julia-rb", family = "rb", loss = rb_loss),
    (example = "03-advection", name = "julia-muscl", family = "muscl", loss = muscl_loss),
    (
        example = "03-advection",
        name = "julia-muscl-minmax",
        family = "muscl-minmax",
        loss = muscl_minmax_loss,
    ),
    (
        example = "04-tridiagonal",
        name = "julia-thomas",
        family = "thomas",
        loss = thomas_loss,
    ),
    (example = "05-deposition", name = "julia-cic", family = "cic", loss = cic_loss),
    # New examples: one row per Julia variant, here.
)

# --- the gradient, for every kernel ----------------------------------------------------

"""
    enzyme_gradient(loss, wrt, args...; activity = "bare", runtime_activity = false) -> Tuple

The gradient of the scalar `loss(args...)` with respect to the arguments flagged in
`wrt` (one `Bool` per argument), by Enzyme in reverse mode: each flagged argument, a
float or complex array, is `Duplicated` with a zeroed shadow in which Enzyme accumulates
its gradient; every other argument (arrays of any element type and the parameters
alike) is `Const`. Returns the shadows of the flagged arguments, in argument order. A
complex array's shadow is `∂L/∂Re z + i·∂L/∂Im z` (Enzyme treats a complex number as a
pair of reals), the convention weanj stores: it is returned as it is.

- `activity`: how Enzyme treats `loss` itself. `"bare"` passes it as it is, which
  Enzyme takes as constant while checking that nothing writes to what it captured
  (an `EnzymeMutabilityException` otherwise); `"const"` passes `Const(loss)` (captured
  state without derivatives, unchecked); `"duplicated"` passes
  `Duplicated(loss, make_zero(loss))`, giving a captured buffer a shadow of its own.
- `runtime_activity`: `Enzyme.set_runtime_activity(Reverse)` instead of `Reverse`, for
  code whose activity Enzyme cannot settle statically (an `EnzymeRuntimeActivityError`,
  "Constant memory is stored (or returned) to a differentiable variable", otherwise).
"""
function enzyme_gradient(
    loss::F,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N};
    activity::AbstractString = "bare",
    runtime_activity::Bool = false,
) where {F, N}
    if length(wrt) != N
        throw(ArgumentError("wrt has $(length(wrt)) flags for $N arguments"))
    end
    for (flag, x) in zip(wrt, args)
        if flag && !(x isa AbstractArray{<:Union{AbstractFloat, Complex{<:AbstractFloat}}})
            throw(ArgumentError(
                "a gradient is taken only with respect to float or complex arrays, " *
                    "not $(typeof(x))",
            ))
        end
    end
    shadows = map((flag, x) -> flag ? Enzyme.make_zero(x) : nothing, wrt, args)
    annotated = map(
        (flag, x, dx) -> flag ? Duplicated(x, dx) : Const(x),
        wrt,
        args,
        shadows,
    )
    mode = runtime_activity ? Enzyme.set_runtime_activity(Reverse) : Reverse
    differentiate(mode, loss, activity, annotated)
    return Tuple(dx for (flag, dx) in zip(wrt, shadows) if flag)
end

# One `autodiff` call per activity of the loss, each with a concrete annotation, so that
# each compiles for the loss's own type (`loss::F` makes Julia specialise on it, which it
# does not do for an argument it only passes on).
function differentiate(mode, loss::F, activity::AbstractString, annotated::Tuple) where {F}
    if activity == "bare"
        Enzyme.autodiff(mode, loss, Active, annotated...)
    elseif activity == "const"
        Enzyme.autodiff(mode, Const(loss), Active, annotated...)
    elseif activity == "duplicated"
        Enzyme.autodiff(
            mode,
            Duplicated(loss, Enzyme.make_zero(loss)),
            Active,
            annotated...,
        )
    else
        throw(ArgumentError("activity must be \"bare\", \"const\" or \"duplicated\""))
    end
    return nothing
end

# --- a user's own kernels ----------------------------------------------------------------

"""
    include_kernels(path) -> Module

A user's Julia file (`weanj.julia_variant(..., file=...)`), evaluated in a new module of
its own, so that two files may define the same names. Its loss functions are then found
with `kernel_function` and differentiated with `enzyme_gradient`.
"""
function include_kernels(path::AbstractString)
    isfile(path) || throw(ArgumentError("Julia file $path does not exist"))
    mod = Module(Symbol(first(splitext(basename(path)))))
    Base.include(mod, abspath(path))
    return mod
end

"""
    kernel_function(mod, name)

The function (or callable object) called `name` in module `mod`: WeanJ itself, or a
module of `include_kernels`. A dotted name such as `"Smooth.smooth_loss"` looks into
submodules.
"""
function kernel_function(mod::Module, name::AbstractString)
    found = mod
    for part in split(name, '.')
        if !(found isa Module && isdefined(found, Symbol(part)))
            throw(ArgumentError("$name is not defined in module $(nameof(mod))"))
        end
        found = getfield(found, Symbol(part))
    end
    found isa Module && throw(ArgumentError("$name in module $(nameof(mod)) is a module"))
    return found
end

"""
    backend_version()

The `backend_version` attribute of the gradient files: the Julia and Enzyme versions.
"""
backend_version() = "Julia $(VERSION), Enzyme $(pkgversion(Enzyme))"

end # module
