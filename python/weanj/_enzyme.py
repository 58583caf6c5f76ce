"""Enzyme-JAX variants: a JAX forward pass differentiated by Enzyme instead of JAX AD.

`enzyme_ad.jax.enzyme_jax_ir` hands the forward's StableHLO to Enzyme's MLIR pipeline;
`jax.grad` of the wrapped function then asks Enzyme (not JAX's transpose rules) for the
reverse pass, which Enzyme emits as StableHLO and injects back into the jitted program.
That gives a second, independent AD engine from the same family as the Julia
reference's Enzyme.jl. Enzyme-JAX (`pip install 'weanj[enzyme]'`, CPython 3.11 wheels)
is imported only when such a variant is built.
"""

from __future__ import annotations

from collections.abc import Callable

from ._registry import Precise


def enzyme_variant(loss: Callable, *, static_argnums: tuple[int, ...], argnums: int = 0) -> tuple:
    """`(loss, grad)` of a JAX loss, both run through Enzyme-JAX, as `Precise` `jax.jit`s.

    **Arguments:**

    - `loss`: `loss(*arrays, *params) -> scalar`, a plain JAX function.
    - `static_argnums`: positions of the static integer parameters (e.g. K); they are
      fixed before Enzyme sees the function, since `enzyme_jax_ir` takes arrays only.
    - `argnums`: the position of the array the gradient is taken with respect to.

    **Returns:** `(loss, grad)`: the forward compiled through Enzyme's pipeline, and
    Enzyme's reverse-mode gradient of that same forward with respect to `argnums`.
    """
    import jax
    from enzyme_ad.jax import enzyme_jax_ir

    static = frozenset(static_argnums)

    def through_enzyme(args):
        # The static parameters are baked in here, so each (shapes, K) is one Enzyme
        # module; the outer jax.jit caches it like any other trace.
        def forward(*arrays):
            it = iter(arrays)
            return loss(*(args[i] if i in static else next(it) for i in range(len(args))))

        arrays = [a for i, a in enumerate(args) if i not in static]
        return enzyme_jax_ir()(forward), arrays

    def enzyme_loss(*args):
        forward, arrays = through_enzyme(args)
        return forward(*arrays)

    def enzyme_grad(*args):
        forward, arrays = through_enzyme(args)
        position = sum(1 for i in range(argnums) if i not in static)
        return jax.grad(forward, argnums=position)(*arrays)

    return (
        Precise(jax.jit(enzyme_loss, static_argnums=static_argnums)),
        Precise(jax.jit(enzyme_grad, static_argnums=static_argnums)),
    )


def enzyme_passes(grad: Callable, *args) -> list[str]:
    """The Enzyme pass pipelines in the jaxpr of `grad(*args)` (one per Enzyme call).

    A gradient computed by Enzyme shows up as `enzyme_primal` equations whose pipeline
    contains `enzyme-wrap{... mode=ReverseModeCombined}`; a gradient JAX had computed
    itself would show JAX's own primitives instead. Used by the tests to prove the
    engine, and handy when reading what Enzyme was asked to do.

    **Arguments:**

    - `grad`: a `grad` returned by `enzyme_variant`.
    - `args`: its arguments (static parameters included).

    **Returns:** the pass-pipeline strings of the top-level Enzyme calls; an empty list
    means JAX, not Enzyme, computed the function.
    """
    import jax

    jitted = getattr(grad, "jitted", grad)
    with jax.enable_x64(True):
        jaxpr = jitted.trace(*args).jaxpr
    return [
        eqn.params["pipeline_options"].pass_pipeline()
        for eqn in _equations(jaxpr.jaxpr)
        if eqn.primitive.name.startswith("enzyme")
    ]


def _equations(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            inner = getattr(value, "jaxpr", None)
            if inner is not None:
                yield from _equations(getattr(inner, "jaxpr", inner))
