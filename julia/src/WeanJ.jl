"""
    WeanJ

The Julia reference kernels of weanj: the in-place loops a Julia scientist writes, one
file per example in `julia/src/<stem>.jl` mirroring `python/weanj/examples/<stem>.py`, and
one generic Enzyme gradient for all of them (and for a user's own kernels). Every kernel
takes arrays of any `Real` element type, the differentiated ones possibly of another type
than the constant ones (an AD's number type, such as ForwardDiff's dual numbers), and
allocates in their promoted type, so that every AD `julia_variant(ad = ...)` offers can
differentiate it. The conventions (indices, layout, Float64 sums) are in
`julia/README.md`.

A package, precompiled by Pkg (`src/workload.jl` runs every loss on tiny inputs while it
precompiles): loaded by weanj's Julia worker (`python/weanj/_backends/_julia_worker.py`,
through juliacall) and by its own tests (`using WeanJ`, `julia --project=julia`). Needs
Enzyme, DifferentiationInterface and ADTypes (the other AD packages: `src/gradients.jl`),
and PrecompileTools. A kernel of an example that declares outputs returns them beside
its loss, `(L, (; r = r))`; their derivatives and the Hessian-vector products are
DifferentiationInterface's (`src/outputs.jl`, `src/second_order.jl`).
"""
module WeanJ

using ADTypes: ADTypes
using DifferentiationInterface: DifferentiationInterface, Constant
using Enzyme: Enzyme, Active, Const, Duplicated, ReverseWithPrimal

export backend_version, include_kernels, kernel_function
export loss_and_gradient, loss_value, enzyme_gradient, timings
export ad_backend, ad_prepare, ad_loss_and_gradient, handwritten_loss_and_gradient
export LossAlone, OutputsConventionError, outputs_layout, enzyme_backends, outputs_backends
export outputs_prepare
export outputs_loss_and_gradient, outputs_derivatives, handwritten_outputs
export hvp_prepare, loss_hvps, second_order
export jacobi_loss, lex_loss, rb_loss
export muscl_loss, muscl_minmax_loss
export thomas_loss
export cic_loss
export signfit_loss, signfit_loss_and_residuals
# New examples: export their loss functions here.

# --- the kernels, one file per example (dependencies first) ------------------------------

include("sums.jl")
include("poisson.jl")
include("jacobi.jl")
include("gauss_seidel.jl")
include("advection.jl")
include("tridiagonal.jl")
include("deposition.jl")
include("signed_grid.jl")
# New examples: each further julia/src/<stem>.jl goes here, and its loss functions in the
# export list above.

# --- the loss and its gradient, in one pass, for every kernel ----------------------------

"""
    loss_and_gradient(loss, wrt, args...; activity = "bare", runtime_activity = false)
        -> ([L], shadows)

The loss `L = loss(args...)` and its gradient with respect to the arguments flagged in
`wrt` (one `Bool` per argument), from one reverse pass of Enzyme
(`Enzyme.autodiff(ReverseWithPrimal, ...)`, which returns the derivatives and the primal
together). `L` comes in a one-element vector, as `loss_value` gives it; `shadows` holds
the gradients of the flagged arguments, in argument order.

Each flagged argument, a float or complex array, is `Duplicated` with a zeroed shadow in
which Enzyme accumulates its gradient; every other argument (arrays of any element type
and the parameters alike) is `Const`. A complex array's shadow is `∂L/∂Re z + i·∂L/∂Im z`
(Enzyme treats a complex number as a pair of reals), the convention weanj stores: it is
returned as it is.

- `activity`: how Enzyme treats `loss` itself. `"bare"` passes it as it is, which
  Enzyme takes as constant; if the loss's type can hold derivatives (it captured a
  `Vector{Float64}`, say), Enzyme also checks that nothing writes to what it captured
  (an `EnzymeMutabilityException` otherwise), and if it cannot (a call counter in a
  `Ref{Int}`), nothing is checked and nothing needs saying. `"const"` passes
  `Const(loss)` (captured state without derivatives, unchecked); `"duplicated"` passes
  `Duplicated(loss, make_zero(loss))`, giving a captured buffer a shadow of its own.
- `runtime_activity`: `Enzyme.set_runtime_activity(ReverseWithPrimal)` instead of
  `ReverseWithPrimal`, for code whose activity Enzyme cannot settle statically (an
  `EnzymeRuntimeActivityError`, "Constant memory is stored (or returned) to a
  differentiable variable", otherwise).

The flags, `activity` and `runtime_activity` are values here; they become types once
(`Val`s), and `differentiate`, the method that calls Enzyme, is compiled for them: its
annotations, its mode and its result are inferred (a function barrier).
"""
function loss_and_gradient(
    loss::F,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N};
    activity::AbstractString = "bare",
    runtime_activity::Bool = false,
) where {F, N}
    check_flags(wrt, args)
    return differentiate(
        loss_activity(activity),
        Val(runtime_activity),
        map(Val, wrt),
        loss,
        args,
    )
end

"""
    enzyme_gradient(loss, wrt, args...; activity = "bare", runtime_activity = false) -> Tuple

The gradients of `loss_and_gradient` alone: the shadows of the flagged arguments, in
argument order (the same single pass; the loss is dropped).
"""
function enzyme_gradient(
    loss::F,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N};
    activity::AbstractString = "bare",
    runtime_activity::Bool = false,
) where {F, N}
    _, shadows = loss_and_gradient(loss, wrt, args...; activity, runtime_activity)
    return shadows
end

"""
    timings(loss, wrt, args...; samples = 7, activity = "bare", runtime_activity = false,
            backend = nothing, gradient = nothing)
        -> (forward_ns = Vector{Int}, gradient_ns = Vector{Int})

The time of `samples` calls of `loss(args...)` and of `samples` gradients, each measured
inside Julia with `time_ns()` in nanoseconds, after one call of each that is not
measured (it compiles them). The gradient is Enzyme's one pass (`loss_and_gradient`), or,
with `backend`, DifferentiationInterface's (prepared once, as its docs advise for repeated
calls: `prepare_gradient`), or, with `gradient`, the hand-written one. For `weanj bench`,
which reports them beside the round trip through the worker.
"""
function timings(
    loss::F,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N};
    samples::Integer = 7,
    activity::AbstractString = "bare",
    runtime_activity::Bool = false,
    backend = nothing,
    gradient = nothing,
) where {F, N}
    check_flags(wrt, args)
    samples >= 1 || throw(ArgumentError("samples must be at least 1, got $samples"))
    if gradient !== nothing
        step = () -> handwritten_loss_and_gradient(loss, gradient, wrt, args...)
    elseif backend !== nothing
        flat, x, contexts = flat_problem(loss, wrt, args)
        prep = DifferentiationInterface.prepare_gradient(flat, backend, x, contexts...)
        step = () -> DifferentiationInterface.value_and_gradient(
            flat,
            prep,
            backend,
            x,
            contexts...,
        )
    else
        modes = (loss_activity(activity), Val(runtime_activity), map(Val, wrt))
        step = () -> differentiate(modes..., loss, args)
    end
    return time_calls(loss, step, args, Int(samples))
end

# Behind a function barrier: the calls timed are compiled for the loss, the arguments and
# the gradient's closure, so no dynamic dispatch is timed.
function time_calls(loss::F, step::S, args::Tuple, samples::Int) where {F, S}
    forward_ns = Vector{Int}(undef, samples)
    gradient_ns = Vector{Int}(undef, samples)
    Base.donotdelete(loss(args...))
    for k in 1:samples
        start = time_ns()
        value = loss(args...)
        forward_ns[k] = Int(time_ns() - start)
        Base.donotdelete(value)
    end
    Base.donotdelete(step())
    for k in 1:samples
        start = time_ns()
        result = step()
        gradient_ns[k] = Int(time_ns() - start)
        Base.donotdelete(result)
    end
    return (forward_ns = forward_ns, gradient_ns = gradient_ns)
end

# A gradient is taken with respect to float or complex arrays only; one flag per argument.
function check_flags(wrt::Tuple{Vararg{Bool}}, args::Tuple)
    if length(wrt) != length(args)
        throw(ArgumentError("wrt has $(length(wrt)) flags for $(length(args)) arguments"))
    end
    for (flag, x) in zip(wrt, args)
        if flag && !(x isa AbstractArray{<:Union{AbstractFloat, Complex{<:AbstractFloat}}})
            throw(ArgumentError(
                "a gradient is taken only with respect to float or complex arrays, " *
                    "not $(typeof(x))",
            ))
        end
    end
    return nothing
end

"""
    differentiate(activity, runtime_activity, flags, loss, args) -> ([L], shadows)

The type-stable core of `loss_and_gradient`: `activity` is `Val(:bare)`, `Val(:const)` or
`Val(:duplicated)`, `runtime_activity` `Val(true)` or `Val(false)`, and `flags` one
`Val(true)` or `Val(false)` per argument, so that every annotation, the mode and the
result are known from the types. `Enzyme.autodiff(ReverseWithPrimal, f, Active,
annotated...)` returns `((derivatives...), L)`: the derivatives of `Active` arguments
(`nothing` for `Duplicated` and `Const` ones, whose gradients are in the shadows) and the
loss.
"""
function differentiate(
    activity::Val,
    runtime_activity::Val,
    flags::Tuple,
    loss::F,
    args::Tuple,
) where {F}
    annotated = map(annotate_argument, flags, args)
    _, L = Enzyme.autodiff(
        reverse_mode(runtime_activity),
        annotate_loss(activity, loss),
        Active,
        annotated...,
    )
    return [L], flagged_shadows(flags, annotated)
end

# The string of `julia_variant(function=...)` as a type, checked here, at the barrier.
function loss_activity(activity::AbstractString)
    activity == "bare" && return Val(:bare)
    activity == "const" && return Val(:const)
    activity == "duplicated" && return Val(:duplicated)
    throw(ArgumentError("activity must be \"bare\", \"const\" or \"duplicated\""))
end

annotate_loss(::Val{:bare}, loss) = loss
annotate_loss(::Val{:const}, loss) = Const(loss)
annotate_loss(::Val{:duplicated}, loss) = Duplicated(loss, Enzyme.make_zero(loss))

reverse_mode(::Val{false}) = ReverseWithPrimal
reverse_mode(::Val{true}) = Enzyme.set_runtime_activity(ReverseWithPrimal)

annotate_argument(::Val{true}, x) = Duplicated(x, Enzyme.make_zero(x))
annotate_argument(::Val{false}, x) = Const(x)

# The shadows of the `Duplicated` arguments, in argument order: by dispatch on each flag's
# type, one argument at a time, so that the tuple's type is inferred.
flagged_shadows(::Tuple{}, ::Tuple{}) = ()
function flagged_shadows(flags::Tuple{Val{true}, Vararg{Any}}, annotated::Tuple)
    return (
        first(annotated).dval,
        flagged_shadows(Base.tail(flags), Base.tail(annotated))...,
    )
end
function flagged_shadows(flags::Tuple{Val{false}, Vararg{Any}}, annotated::Tuple)
    return flagged_shadows(Base.tail(flags), Base.tail(annotated))
end

"""
    loss_value(loss, args...) -> Vector

`[loss(args...)]`: the loss in a one-element vector, so that weanj's worker sees its
type (juliacall hands a bare `Float32` to Python as a Python `float`, which would hide a
kernel that returns `Float64` on `Float32` arrays).
"""
loss_value(loss::F, args::Vararg{Any, N}) where {F, N} = [loss(args...)]

# --- gradients by other AD packages (DifferentiationInterface), and by hand ------------

include("gradients.jl")

# --- outputs beside the loss, their derivatives, the Hessian-vector products -------------

include("outputs.jl")
include("second_order.jl")

# --- a user's own kernels ----------------------------------------------------------------

"""
    include_kernels(path) -> Module

A user's Julia file (`weanj.julia_variant(..., file=...)`), evaluated in a new module of
its own, so that two files may define the same names. The module is made by evaluating
a `module` expression (`Module(name)` would make one without `include` and `eval` of its
own), so the file may `include("helpers.jl")`, found beside it. It sits inside a module
of a fresh name in `Main`, which nothing else uses. Its loss functions are then found
with `kernel_function` and differentiated with `loss_and_gradient`.
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

The `backend_version` attribute of the gradient files: the Julia, Enzyme and
DifferentiationInterface versions (the worker adds each variant's AD package).
"""
function backend_version()
    return "Julia $(VERSION), Enzyme $(pkgversion(Enzyme)), " *
        "DifferentiationInterface $(pkgversion(DifferentiationInterface))"
end

# --- precompilation ------------------------------------------------------------------------

include("workload.jl")

end # module
