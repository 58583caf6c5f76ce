"""
    WeanJ

The Julia reference kernels of weanj: the in-place loops a Julia scientist writes, one
file per example in `julia/<stem>.jl` mirroring `python/weanj/examples/<stem>.py`, and one
generic Enzyme gradient for all of them (and for a user's own kernels). The conventions
(indices, layout, Float64 sums) are in `julia/README.md`.

Loaded by weanj's Julia worker (`python/weanj/_backends/_julia_worker.py`, through
juliacall) and by its own tests (`using WeanJ`, `julia --project=julia`). Needs Enzyme
only.
"""
module WeanJ

using Enzyme: Enzyme, Active, Const, Duplicated, Reverse

export backend_version, enzyme_gradient, include_kernels, kernel_function, loss_value
export jacobi_loss, lex_loss, rb_loss
export muscl_loss, muscl_minmax_loss
export thomas_loss
export cic_loss
export signfit_loss
# New examples: export their loss functions here.

# --- the kernels, one file per example (dependencies first) ------------------------------

include("poisson.jl")
include("jacobi.jl")
include("gauss_seidel.jl")
include("advection.jl")
include("tridiagonal.jl")
include("deposition.jl")
include("signed_grid.jl")
# New examples: each further julia/<stem>.jl goes here, and its loss functions in the
# export list above.

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
  Enzyme takes as constant; if the loss's type can hold derivatives (it captured a
  `Vector{Float64}`, say), Enzyme also checks that nothing writes to what it captured
  (an `EnzymeMutabilityException` otherwise), and if it cannot (a call counter in a
  `Ref{Int}`), nothing is checked and nothing needs saying. `"const"` passes
  `Const(loss)` (captured state without derivatives, unchecked); `"duplicated"` passes
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

"""
    loss_value(loss, args...) -> Vector

`[loss(args...)]`: the loss in a one-element vector, so that weanj's worker sees its
type (juliacall hands a bare `Float32` to Python as a Python `float`, which would hide a
kernel that returns `Float64` on `Float32` arrays).
"""
loss_value(loss::F, args::Vararg{Any, N}) where {F, N} = [loss(args...)]

# --- a user's own kernels ----------------------------------------------------------------

"""
    include_kernels(path) -> Module

A user's Julia file (`weanj.julia_variant(..., file=...)`), evaluated in a new module of
its own, so that two files may define the same names. The module is made by evaluating
a `module` expression (`Module(name)` would make one without `include` and `eval` of its
own), so the file may `include("helpers.jl")`, found beside it. It sits inside a module
of a fresh name in `Main`, which nothing else uses. Its loss functions are then found
with `kernel_function` and differentiated with `enzyme_gradient`.
"""
function include_kernels(path::AbstractString)
    isfile(path) || throw(ArgumentError("Julia file $path does not exist"))
    name = Symbol(first(splitext(basename(path))))
    holder = gensym(name)
    # As juliacall's own `newmodule`: `module $holder; module $name; end; end` evaluated
    # in Main as parsed code (line numbers included), then `$holder.$name` looked up by
    # another evaluation (in the latest world, where the new modules exist).
    Core.eval(
        Main,
        :(
            module $holder
                module $name end
            end
        ),
    )
    mod = Core.eval(Main, :($holder.$name))
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
