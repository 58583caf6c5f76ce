# Outputs and second derivatives of a kernel (docs/outputs.md): what weanj's worker calls
# for an example that declares outputs (`Example(outputs = ("r",))`) or is checked at the
# second order (`order = 2`, `--order 2`). Python counterpart: the worker's side
# python/weanj/_backends/_julia_beyond.py, what crosses python/weanj/_backends/
# _julia_evaluation.py.
#
# The convention, JAX's `has_aux` in Julia's words: the loss of an example that declares
# outputs returns them beside the loss, `(L, (; r = r))`: the scalar loss and a NamedTuple
# holding exactly the declared names (in any order), each a real array (or a real
# number) of the loss's element type. `LossAlone(loss)` is its loss alone, for every call
# that wants the loss only (the Taylor test's steps, `timings`, the Hessian).
#
# The derivatives are DifferentiationInterface's (DI), which differentiates a function of
# one array `x`, the other arguments `Constant` contexts (gradients.jl: the flagged arrays
# end to end in one real vector). The outputs are laid end to end after the loss,
# `y = [L; vec(o₁); vec(o₂); ...]` (`FlatOutputs`), so that one `value_and_pullback` of y
# with the seeds (e_L, w̃₁, ..., w̃ₖ) — e_L the loss's unit vector, w̃ᵢ output i's seeded
# weight in its place and zeros elsewhere — gives from one forward pass the loss, the
# outputs, the gradient and each output's `Jᵀ·w`: DI passes its tuple of seeds to the AD
# at once (Enzyme: one split reverse pass of width 1 + k, DI's `batch_seeded_autodiff_thunk`;
# an AD without a reverse mode: DI's pullback by pushforwards of the basis of x). Where
# the AD has a forward mode (`ADTypes.mode`), one `pushforward` of y along each wrt array's
# direction (zeros in the other arrays' places) gives each output's `J·v`. The
# Hessian-vector products are DI's `hvp` of the loss alone, along each wrt array's two
# directions with zeros elsewhere: the array's part of `H·[0 … v_a … 0]` is `H_aa·v_a`,
# its own block, the other arrays held as constants (what weanj's JAX side computes).

"""
    LossAlone(loss)

`loss` of a kernel that returns `(L, outputs)`, with the outputs dropped:
`LossAlone(loss)(args...) == first(loss(args...))`.
"""
struct LossAlone{F}
    loss::F
end
(f::LossAlone)(args...) = first(f.loss(args...))

"""
    OutputsConventionError(message)

A loss that does not return its outputs as the convention says (this file's header):
the variant's own fault, which weanj's worker reports in one line as such, not as an
input the kernel refused (an `ArgumentError` of its own checks).
"""
struct OutputsConventionError <: Exception
    message::String
end
function Base.showerror(io::IO, e::OutputsConventionError)
    return print(io, "OutputsConventionError: ", e.message)
end

"""
    OutputsLayout(dims, order)

The outputs a kernel returns beside its loss, as `outputs_layout` found them: each one's
size, in the order the kernel returns them (its NamedTuple's), and `order[k]`, the place
there of the example's k-th output. `FlatOutputs` lays them out in the kernel's own
order (`values` of its NamedTuple: nothing to pick by name inside the differentiated
code); everything the worker returns is in the example's order.
"""
struct OutputsLayout{D, O}
    dims::D
    order::O
end

# The parts of `found`, given in the kernel's order, in the example's.
in_declared(found::Tuple, layout::OutputsLayout) = map(k -> found[k], layout.order)

"""
    outputs_layout(loss, names, args...) -> (value = [L], outputs, layout)

One call of `loss(args...)`, held to the outputs' convention (this file's header): the
loss in a one-element vector (as `loss_value` gives it), the outputs in the order of
`names` (the example's; Strings or Symbols) and their `OutputsLayout`. Anything else is
an `OutputsConventionError` saying what came back.
"""
function outputs_layout(loss::F, names::Tuple, args::Vararg{Any, N}) where {F, N}
    wanted = map(Symbol, names)
    L, outputs = returned_outputs(loss(args...), wanted)
    returned = keys(outputs) # the kernel's order
    arrays = map(name -> output_array(getfield(outputs, name), name, typeof(L)), returned)
    order = map(name -> findfirst(==(name), returned), wanted)
    layout = OutputsLayout(map(size, arrays), order)
    return (value = [L], outputs = in_declared(arrays, layout), layout = layout)
end

function returned_outputs(found, wanted::Tuple{Vararg{Symbol}})
    declared = join(wanted, ", ")
    if !(found isa Tuple{Real, NamedTuple})
        shape = join(("$name = ..." for name in wanted), ", ")
        throw(OutputsConventionError(
            "the loss returned a $(typeof(found)), not (loss, (; $shape)): the example " *
                "declares the outputs $declared",
        ))
    end
    L, outputs = found
    if !(length(outputs) == length(wanted) && all(in(wanted), keys(outputs)))
        throw(OutputsConventionError(
            "the loss returned the outputs $(join(keys(outputs), ", ")); the example " *
                "declares $declared",
        ))
    end
    return L, outputs
end

# An output as an array (a number as a 0-dimensional one), real and of the loss's type.
function output_array(o, name::Symbol, ::Type{T}) where {T}
    a = o isa Real ? fill(o) : o
    if !(a isa AbstractArray{<:Real})
        throw(OutputsConventionError(
            "the output $name is a $(typeof(o)), not a real array",
        ))
    elseif eltype(a) != T
        throw(OutputsConventionError(
            "the output $name holds $(eltype(a)) and the loss is a $T: an output has the " *
                "loss's element type",
        ))
    end
    return a
end

"""
    FlatOutputs(loss, flags, segments)

`y = [L; vec(o₁); ...]` of a kernel returning `(L, outputs)`, its outputs in the order
it returns them, as a function of the flat vector of its flagged arrays and its other
arguments (as `FlatLoss`): what DI's `pullback` and `pushforward` differentiate.
"""
struct FlatOutputs{F, W, S}
    loss::F
    flags::W
    segments::S
end
function (f::FlatOutputs)(x, rest...)
    L, outputs = f.loss(rebuild(x, f.flags, f.segments, rest, 0)...)
    return vcat([L], map(flat_part, values(outputs))...)
end
flat_part(o::Real) = [o]
flat_part(o::AbstractArray) = vec(o)

# `y` cut into its parts again: the loss, then each output in its own size.
cut_outputs(::AbstractVector, ::Tuple{}, ::Int) = ()
function cut_outputs(y::AbstractVector, dims::Tuple, at::Int)
    n = prod(first(dims))
    part = reshape(y[(at + 1):(at + n)], first(dims))
    return (part, cut_outputs(y, Base.tail(dims), at + n)...)
end

"""
    enzyme_backends(activity, runtime_activity) -> (reverse, forward, second)

The ADTypes backends of Enzyme with a `julia_variant`'s Enzyme options, as DI takes them:
`activity` ("bare", "const", "duplicated") as the function's annotation (`Nothing`, which
DI passes to Enzyme as it is with `set_err_if_func_written`, as a bare loss is; `Const`;
`Duplicated`), `runtime_activity` on each mode. `second`, for `hvp`: `AutoEnzyme()` of
that annotation (DI's forward over reverse, Enzyme over Enzyme), or with runtime
activity `SecondOrder` of the two modes that carry it.
"""
function enzyme_backends(activity::AbstractString, runtime_activity::Bool)
    A = annotation_type(loss_activity(activity))
    on(mode) = runtime_activity ? Enzyme.set_runtime_activity(mode) : mode
    reverse = ADTypes.AutoEnzyme(; mode = on(Enzyme.Reverse), function_annotation = A)
    forward = ADTypes.AutoEnzyme(; mode = on(Enzyme.Forward), function_annotation = A)
    second = if runtime_activity
        DifferentiationInterface.SecondOrder(forward, reverse)
    else
        ADTypes.AutoEnzyme(; function_annotation = A)
    end
    return (reverse = reverse, forward = forward, second = second)
end

annotation_type(::Val{:bare}) = Nothing
annotation_type(::Val{:const}) = Enzyme.Const
annotation_type(::Val{:duplicated}) = Enzyme.Duplicated

"""
    outputs_backends(backend) -> (reverse, forward, second)

Another AD's backend (`ad_backend`) in each role: the pullback's, the pushforward's where
its mode has a forward pass (`ADTypes.mode`: `ForwardMode` or `ForwardOrReverseMode`;
else `nothing`, and the worker pushes nothing forward: DI would push each element of y's
basis back instead), and `hvp`'s (DI's own combination for it).
"""
function outputs_backends(backend::ADTypes.AbstractADType)
    forward_mode = ADTypes.mode(backend) isa
        Union{ADTypes.ForwardMode, ADTypes.ForwardOrReverseMode}
    return (reverse = backend, forward = forward_mode ? backend : nothing, second = backend)
end

# The function, point and contexts of `FlatOutputs`, as `flat_problem` makes `FlatLoss`'s.
function outputs_problem(loss::F, wrt::Tuple{Vararg{Bool}}, args::Tuple) where {F}
    flags, segments, x, contexts = flat_arguments(wrt, args)
    return FlatOutputs(loss, flags, segments), x, contexts
end

# The length of y: the loss, then every output's elements.
flat_length(layout::OutputsLayout) = 1 + sum(prod, layout.dims; init = 0)

# The loss's seed of y: its unit vector.
function loss_seed(::Type{T}, layout::OutputsLayout) where {T}
    seed = zeros(T, flat_length(layout))
    seed[1] = one(T)
    return seed
end

# The seeds of y: the loss's, then each output's weight in its place (zeros elsewhere),
# the weights in the example's order.
function output_seeds(::Type{T}, layout::OutputsLayout, weights::Tuple) where {T}
    length(weights) == length(layout.dims) ||
        throw(ArgumentError(
            "$(length(weights)) weights for $(length(layout.dims)) outputs",
        ))
    starts = cumsum([1, map(prod, layout.dims)...]) # output p's elements follow starts[p]
    seeds = [
        k == 0 ? loss_seed(T, layout) : zeros(T, flat_length(layout))
        for k in 0:length(weights)
    ]
    for (k, w) in enumerate(weights)
        p = layout.order[k]
        size(w) == layout.dims[p] ||
            throw(DimensionMismatch(
                "the weight of output $k has size $(size(w)), the output $(layout.dims[p])",
            ))
        seeds[k + 1][(starts[p] + 1):(starts[p] + length(w))] .= vec(w)
    end
    return Tuple(seeds)
end

# A wrt array's direction `v` in the flat vector x: its own place, zeros elsewhere.
function flat_direction(x::AbstractVector, segments::Tuple, k::Int, v::AbstractArray)
    d = zero(x)
    at = 0
    for (i, s) in enumerate(segments)
        s isa Segment{false} ||
            throw(ArgumentError("directions are taken along real arrays only"))
        n = prod(s.dims)
        if i == k
            size(v) == s.dims ||
                throw(DimensionMismatch(
                    "the direction of wrt array $k has size $(size(v)), the array $(s.dims)",
                ))
            d[(at + 1):(at + n)] .= vec(v)
        end
        at += n
    end
    return d
end

"""
    outputs_prepare(backends, loss, layout, wrt, args...; seeds, forward) -> prep

DI's preparations for `outputs_loss_and_gradient` (`seeds = 1`) or
`outputs_derivatives` (`seeds = 1 +` the outputs, `forward`: the pushforward's too,
where `backends.forward` is one): valid for later calls on arguments of the same types
and sizes (DI's "Reusing preparation"), as `ad_prepare`'s. DI's preparation of an
Enzyme pullback calls the kernel once (the example of y it keeps).
"""
function outputs_prepare(
    backends::NamedTuple,
    loss::F,
    layout::OutputsLayout,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N};
    seeds::Integer = 1,
    forward::Bool = false,
) where {F, N}
    flat, x, contexts = outputs_problem(loss, wrt, args)
    ty = ntuple(_ -> zeros(eltype(x), flat_length(layout)), Int(seeds))
    pullback = DifferentiationInterface.prepare_pullback(
        flat,
        backends.reverse,
        x,
        ty,
        contexts...,
    )
    pushforward = nothing
    if forward && backends.forward !== nothing
        tx = ntuple(_ -> zero(x), length(flat.segments))
        pushforward = DifferentiationInterface.prepare_pushforward(
            flat,
            backends.forward,
            x,
            tx,
            contexts...,
        )
    end
    return (pullback = pullback, pushforward = pushforward)
end

"""
    outputs_loss_and_gradient(backends, loss, layout, wrt, args...; prep)
        -> ([L], gradients, outputs)

The loss, its gradient with respect to the arrays flagged in `wrt` (in argument order,
as `loss_and_gradient` returns them) and the outputs (the layout's order), from one
`value_and_pullback` of `FlatOutputs` with the loss's seed alone.
"""
function outputs_loss_and_gradient(
    backends::NamedTuple,
    loss::F,
    layout::OutputsLayout,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N};
    prep,
) where {F, N}
    flat, x, contexts = outputs_problem(loss, wrt, args)
    y, pulled = DifferentiationInterface.value_and_pullback(
        flat,
        prep.pullback,
        backends.reverse,
        x,
        (loss_seed(eltype(x), layout),),
        contexts...,
    )
    gradients = split_gradient(only(pulled), flat.segments, 0)
    return [y[1]], gradients, in_declared(cut_outputs(y, layout.dims, 1), layout)
end

"""
    outputs_derivatives(backends, loss, layout, wrt, args, tangents, weights; prep)
        -> (value, gradients, outputs, pullbacks, pushforwards, forward_refused)

What a check's evaluation asks of a kernel with outputs, in one call (this file's
header): the loss `[L]`, its gradient (the flagged arrays, in argument order) and the
outputs (the layout's order), from one `value_and_pullback` whose further seeds are the
outputs' `weights`; `pullbacks`, each output's `Jᵀ·w` cut by flagged array, output by
output (o₁ by a₁, o₁ by a₂, …, o₂ by a₁, …); `pushforwards`, each output's `J·v` along
each flagged array's direction (`tangents`, argument order), direction by direction (o₁
along a₁, o₂ along a₁, …, o₁ along a₂, …), or `nothing` where the AD has no forward mode
or its pushforward failed (`forward_refused` says why in one line; else "").
"""
function outputs_derivatives(
    backends::NamedTuple,
    loss::F,
    layout::OutputsLayout,
    wrt::Tuple{Vararg{Bool}},
    args::Tuple,
    tangents::Tuple,
    weights::Tuple;
    prep,
) where {F}
    flat, x, contexts = outputs_problem(loss, wrt, args)
    y, pulled = DifferentiationInterface.value_and_pullback(
        flat,
        prep.pullback,
        backends.reverse,
        x,
        output_seeds(eltype(x), layout, weights),
        contexts...,
    )
    by_array = map(p -> split_gradient(p, flat.segments, 0), Base.tail(pulled))
    pushforwards, forward_refused = pushed_outputs(
        flat,
        layout,
        prep,
        backends,
        x,
        tangents,
        contexts,
    )
    return (
        value = [y[1]],
        gradients = split_gradient(first(pulled), flat.segments, 0),
        outputs = in_declared(cut_outputs(y, layout.dims, 1), layout),
        pullbacks = Tuple(Iterators.flatten(by_array)),
        pushforwards = pushforwards,
        forward_refused = forward_refused,
    )
end

# Each output's `J·v` along each flagged array's direction, by DI's `pushforward` (its
# tuple of directions at once), or `nothing` and why not.
function pushed_outputs(
    flat::FlatOutputs,
    layout::OutputsLayout,
    prep,
    backends,
    x,
    tangents::Tuple,
    contexts,
)
    (backends.forward === nothing || prep.pushforward === nothing) && return nothing, ""
    A = length(flat.segments)
    length(tangents) == A ||
        throw(ArgumentError("$(length(tangents)) directions for $A differentiated arrays"))
    tx = ntuple(k -> flat_direction(x, flat.segments, k, tangents[k]), A)
    ty = try
        DifferentiationInterface.pushforward(
            flat,
            prep.pushforward,
            backends.forward,
            x,
            tx,
            contexts...,
        )
    catch e
        e isa InterruptException && rethrow()
        return nothing, first_line(e)
    end
    along = map(t -> in_declared(cut_outputs(t, layout.dims, 1), layout), ty)
    return Tuple(Iterators.flatten(along)), ""
end

first_line(e) = first(split(sprint(showerror, e), '\n'))

"""
    handwritten_outputs(loss, gradient, names, wrt, args...) -> ([L], gradients, outputs)

A gradient written by hand (`handwritten_loss_and_gradient`) for a kernel with outputs:
the loss and the outputs from one call of `loss` (`outputs_layout`), the gradient from
`gradient`. Its outputs' derivatives and Hessian are not computed (no AD was named).
"""
function handwritten_outputs(
    loss::F,
    gradient::G,
    names::Tuple,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N},
) where {F, G, N}
    check_flags(wrt, args)
    found = outputs_layout(loss, names, args...)
    returned(args...) = only(found.value)
    _, gradients = handwritten_loss_and_gradient(returned, gradient, wrt, args...)
    return found.value, gradients, found.outputs
end
