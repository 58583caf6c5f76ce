# The Hessian-vector products of a kernel's loss (docs/outputs.md, "The second order"):
# DifferentiationInterface's `hvp` of the loss as a function of the flat vector of its
# flagged arrays (`FlatLoss`, gradients.jl), along each flagged array's two seeded
# directions with zeros in the other arrays' places, so that the array's part of
# `H·[0 … v_a … 0]` is `H_aa·v_a`: each array's own block, the others held as constants,
# what weanj's JAX side computes with `jax.jvp` of the variant's gradient. Python
# counterpart: python/weanj/_backends/_julia_beyond.py (the worker's side).
#
# The backend is the variant's own (`enzyme_backends`, `outputs_backends`: `second`),
# combined by DI (`hvp_mode`: forward over reverse where the outer backend has a fast
# pushforward and the inner a fast pullback, as Enzyme in both roles). A kernel that
# returns outputs is differentiated through `LossAlone`.

"""
    hvp_prepare(backend, loss, wrt, args...; directions) -> prep

DI's preparation of `loss_hvps` for `directions` tangents (two per flagged array): valid
for later calls on arguments of the same types and sizes, as `ad_prepare`'s.
"""
function hvp_prepare(
    backend::B,
    loss::F,
    wrt::Tuple{Vararg{Bool}},
    args::Vararg{Any, N};
    directions::Integer,
) where {B, F, N}
    flat, x, contexts = flat_problem(loss, wrt, args)
    tx = ntuple(_ -> zero(x), Int(directions))
    return DifferentiationInterface.prepare_hvp(flat, backend, x, tx, contexts...)
end

"""
    loss_hvps(backend, loss, wrt, args, tangents, seconds; prep) -> products

Each flagged array's own Hessian block times its two directions, `tangents[k]` (its jvp
direction v) and `seconds[k]` (its second direction u), from one DI `hvp` call along all
of them (each direction in its array's place, zeros elsewhere): `(H₁₁·v₁, H₁₁·u₁, H₂₂·v₂,
H₂₂·u₂, …)`, each shaped as its array. The arrays are real (weanj's second order
differentiates real arrays only).
"""
function loss_hvps(
    backend::B,
    loss::F,
    wrt::Tuple{Vararg{Bool}},
    args::Tuple,
    tangents::Tuple,
    seconds::Tuple;
    prep,
) where {B, F}
    flat, x, contexts = flat_problem(loss, wrt, args)
    A = length(flat.segments)
    if !(length(tangents) == A && length(seconds) == A)
        throw(ArgumentError(
            "$(length(tangents)) and $(length(seconds)) directions for $A differentiated arrays",
        ))
    end
    # v₁, u₁, v₂, u₂, …: tangent i is array (i + 1) ÷ 2's
    tx = ntuple(2A) do i
        k = (i + 1) ÷ 2
        flat_direction(x, flat.segments, k, isodd(i) ? tangents[k] : seconds[k])
    end
    tg = DifferentiationInterface.hvp(flat, prep, backend, x, tx, contexts...)
    return ntuple(i -> split_gradient(tg[i], flat.segments, 0)[(i + 1) ÷ 2], 2A)
end

"""
    second_order(outer, inner) -> SecondOrder

DI's `SecondOrder(outer, inner)`, for `julia_variant(hvp = ...)`: `outer`'s forward mode
pushes forward the gradient `inner` (the variant's own reverse backend) computes.
`SecondOrder` backends serve second-order operators only (DI's docstring), so the
first-order roles keep their plain backends.
"""
second_order(outer, inner) = DifferentiationInterface.SecondOrder(outer, inner)
