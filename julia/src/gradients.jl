# Gradients besides Enzyme's one-pass `loss_and_gradient`: any AD package through
# DifferentiationInterface (`julia_variant(ad = "forwarddiff" | "mooncake" | "zygote" |
# "finitedifferences")`), and a gradient function a scientist wrote by hand
# (`julia_variant(gradient = "MyPorts.misfit_adjoint")`).
#
# DifferentiationInterface differentiates a function of one active argument `x` (its
# docs, "Limitations: Multiple active arguments"; "Arguments: Contexts"), the other
# arguments passed as `Constant` contexts. weanj's `wrt` may name several arrays, some
# complex, so they are laid end to end in one real vector: a real array as it is, a
# complex one as its real parts then its imaginary parts (what DI's docs ask for a
# non-holomorphic function: "manually separate real and imaginary parts"). The gradient
# of that vector, cut the same way, is each array's gradient; a complex one's two halves
# become `∂L/∂Re z + i·∂L/∂Im z`, the convention weanj stores. One call gives the loss
# and the gradient (`value_and_gradient`).

"""
    ad_backend(name, package) -> ADTypes.AbstractADType

The ADTypes backend of `julia_variant(ad = name)`, `package` the AD package's module
(loaded by the worker: DifferentiationInterface's extension for it loads with it).
FiniteDifferences uses its fifth-order central method, `central_fdm(5, 1)`.
"""
function ad_backend(name::AbstractString, package::Module)
    name == "forwarddiff" && return ADTypes.AutoForwardDiff()
    name == "mooncake" && return ADTypes.AutoMooncake(; config = nothing)
    name == "zygote" && return ADTypes.AutoZygote()
    if name == "finitedifferences"
        return ADTypes.AutoFiniteDifferences(; fdm = package.central_fdm(5, 1))
    end
    throw(ArgumentError("no AD backend called $name"))
end

# Where one flagged array lies in the flat vector: its size, and whether it is complex
# (then it takes twice its length: real parts, then imaginary parts).
struct Segment{C, N}
    dims::NTuple{N, Int}
end
segment_of(x::AbstractArray{<:Real}) = Segment{false, ndims(x)}(size(x))
segment_of(x::AbstractArray{<:Complex}) = Segment{true, ndims(x)}(size(x))

# The array a segment holds, starting after `offset`, and the offset after it. Indexing
# copies, so the loss receives plain `Array`s of the vector's element type (a dual number
# of ForwardDiff, say), and never shares memory with the vector being differentiated.
function piece(x::AbstractVector, s::Segment{false}, offset::Int)
    n = prod(s.dims)
    return reshape(x[(offset + 1):(offset + n)], s.dims), offset + n
end
function piece(x::AbstractVector, s::Segment{true}, offset::Int)
    n = prod(s.dims)
    re = x[(offset + 1):(offset + n)]
    im = x[(offset + n + 1):(offset + 2n)]
    return reshape(complex.(re, im), s.dims), offset + 2n
end

# The arguments whose flag is `want`, in order, chosen by dispatch (a type-stable tuple).
pick(::Val, ::Tuple{}, ::Tuple{}) = ()
function pick(want::Val{W}, flags::Tuple{Val{F}, Vararg{Any}}, args::Tuple) where {W, F}
    later = pick(want, Base.tail(flags), Base.tail(args))
    return W === F ? (first(args), later...) : later
end

# The arguments again, flagged ones cut from the vector `x`, the others from `rest`.
rebuild(x, ::Tuple{}, ::Tuple{}, ::Tuple{}, ::Int) = ()
function rebuild(
    x,
    flags::Tuple{Val{true}, Vararg{Any}},
    segments::Tuple,
    rest::Tuple,
    at::Int,
)
    a, next = piece(x, first(segments), at)
    return (a, rebuild(x, Base.tail(flags), Base.tail(segments), rest, next)...)
end
function rebuild(
    x,
    flags::Tuple{Val{false}, Vararg{Any}},
    segments::Tuple,
    rest::Tuple,
    at::Int,
)
    return (first(rest), rebuild(x, Base.tail(flags), segments, Base.tail(rest), at)...)
end

# The gradient of the flat vector, cut into one array per flagged argument.
split_gradient(::AbstractVector, ::Tuple{}, ::Int) = ()
function split_gradient(g::AbstractVector, segments::Tuple, at::Int)
    a, next = piece(g, first(segments), at)
    return (a, split_gradient(g, Base.tail(segments), next)...)
end

# The flat vector of the flagged arrays: one element type, their common real type.
function flatten(active::Tuple)
    isempty(active) && throw(ArgumentError("no argument is flagged for the gradient"))
    T = real(eltype(first(active)))
    x = T[]
    for a in active
        real(eltype(a)) == T ||
            throw(ArgumentError(
                "the differentiated arrays must share one element type, not $T and $(eltype(a))",
            ))
        if eltype(a) <: Complex
            append!(x, real.(vec(a)))
            append!(x, imag.(vec(a)))
        else
            append!(x, vec(a))
        end
    end
    return x
end

"""
    FlatLoss(loss, flags, segments)

`loss` as a function of one vector (the flagged arrays end to end) and the other
arguments, in order: what DifferentiationInterface differentiates, those other
arguments passed as `Constant` contexts.
"""
struct FlatLoss{F, W, S}
    loss::F
    flags::W
    segments::S
end
(f::FlatLoss)(x, rest...) = f.loss(rebuild(x, f.flags, f.segments, rest, 0)...)

# The function, point and contexts DifferentiationInterface is called with.
function flat_problem(loss::F, wrt::Tuple{Vararg{Bool}}, args::Tuple) where {F}
    flags, segments, x, contexts = flat_arguments(wrt, args)
    return FlatLoss(loss, flags, segments), x, contexts
end

# The arguments as DifferentiationInterface takes them: the flags as types, where each
# flagged array lies in the flat vector, the vector, and the other arguments as
# `Constant` contexts (for `FlatLoss`, and `FlatOutputs` of outputs.jl).
function flat_arguments(wrt::Tuple{Vararg{Bool}}, args::Tuple)
    check_flags(wrt, args)
    flags = map(Val, wrt)
    active = pick(Val(true), flags, args)
    segments = map(segment_of, active)
    contexts = map(Constant, pick(Val(false), flags, args))
    return flags, segments, flatten(active), contexts
end

"""
    ad_prepare(backend, loss, wrt, args...) -> prep

DifferentiationInterface's preparation of the gradient `ad_loss_and_gradient` takes
(`prepare_gradient(f, backend, x, contexts...)`): Mooncake compiles its rule here,
ForwardDiff sizes its dual numbers' buffer. Valid for later calls whose arguments have
the same types and sizes (DI's docs, "Reusing preparation"; DI checks the types); the
values may differ. weanj's worker prepares once per variant and argument shapes, as
Enzyme compiles once per argument types.
"""
function ad_prepare(
    backend::B,
    loss::F,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N},
) where {B, F, N}
    flat, x, contexts = flat_problem(loss, wrt, args)
    return DifferentiationInterface.prepare_gradient(flat, backend, x, contexts...)
end

"""
    ad_loss_and_gradient(backend, loss, wrt, args...; prep = nothing) -> ([L], gradients)

The loss and its gradient with respect to the arguments flagged in `wrt`, from one
`DifferentiationInterface.value_and_gradient(f, [prep,] backend, x, contexts...)` call:
`x` the flagged arrays end to end (this file's header), every other argument a
`Constant`; with `prep` from `ad_prepare` on arguments of the same types and sizes, DI
prepares nothing again. Returns what `loss_and_gradient` returns: the loss in a
one-element vector and the gradients in argument order (complex ones in weanj's
convention). The loss is the one the AD returns: ForwardDiff's is converted to the
element type of `x` (its `GradientResult(x)`), whatever type the kernel returned it in.
"""
function ad_loss_and_gradient(
    backend::B,
    loss::F,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N};
    prep = nothing,
) where {B, F, N}
    flat, x, contexts = flat_problem(loss, wrt, args)
    L, g = prepared_value_and_gradient(flat, prep, backend, x, contexts)
    return [L], split_gradient(g, flat.segments, 0)
end

# DifferentiationInterface's `value_and_gradient`, unprepared (it prepares on every call)
# or with the preparation given.
function prepared_value_and_gradient(flat, ::Nothing, backend, x, contexts::Tuple)
    return DifferentiationInterface.value_and_gradient(flat, backend, x, contexts...)
end
function prepared_value_and_gradient(flat, prep, backend, x, contexts::Tuple)
    return DifferentiationInterface.value_and_gradient(flat, prep, backend, x, contexts...)
end

"""
    handwritten_loss_and_gradient(loss, gradient, wrt, args...) -> ([L], gradients)

`loss(args...)`, and `gradient(args...)`: a gradient function written by hand, which
returns the gradient of each flagged argument, in argument order (a tuple; one array
alone for one flagged argument).
"""
function handwritten_loss_and_gradient(
    loss::F,
    gradient::G,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N},
) where {F, G, N}
    check_flags(wrt, args)
    L = loss(args...)
    found = gradient(args...)
    arrays = found isa Tuple ? found : (found,)
    if length(arrays) != count(wrt)
        throw(ArgumentError(
            "the gradient function returned $(length(arrays)) arrays for " *
                "$(count(wrt)) differentiated arguments",
        ))
    end
    return [L], arrays
end
