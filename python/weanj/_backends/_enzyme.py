"""Enzyme-JAX variants: a JAX forward pass differentiated by Enzyme instead of JAX AD.

`enzyme_ad.jax.enzyme_jax_ir` hands the forward's StableHLO to Enzyme's MLIR pipeline;
`jax.grad` of the wrapped function then asks Enzyme (not JAX's transpose rules) for the
reverse pass, which Enzyme emits as StableHLO and injects back into the jitted program.
That gives a second, independent AD engine from the same family as the Julia
reference's Enzyme.jl. Enzyme-JAX (`pip install 'weanj[enzyme]'`, CPython 3.11 wheels)
is imported only when such a variant is built.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .._model import Example, Functions
from .._vocabulary import DTYPES
from ._checking import CheckRuns, one_program
from ._jax import InX64Setting, configuration_of, jax_variant, loss_of, stored_convention


def _through_enzyme(loss: Callable, static: frozenset, enzyme_jax_ir: Callable) -> Callable:
    """`through(args) -> (forward, arrays)`: the loss as Enzyme-JAX takes it, its static
    parameters baked in (so each (shapes, parameters) is one Enzyme module; the outer
    jax.jit caches it like any other trace), and the array arguments. One function per
    parameter values: Enzyme-JAX compiles it on its own (to find the arguments XLA keeps),
    and JAX's cache serves every later trace of the same function (the check's program
    traces it in two branches). Named so: a count of compilations
    (benchmarks/compile_cost.py) tells those apart from weanj's programs by this name."""
    made: dict[tuple, Callable] = {}

    def through(args):
        values = tuple(args[i] for i in sorted(static))
        if values not in made:
            fixed = dict(zip(sorted(static), values, strict=True))

            def forward_for_enzyme(*arrays):
                it = iter(arrays)
                return loss(*(fixed[i] if i in fixed else next(it) for i in range(len(args))))

            made[values] = enzyme_jax_ir()(forward_for_enzyme)
        return made[values], [a for i, a in enumerate(args) if i not in static]

    return through


def enzyme_functions(example: Example, loss: Callable) -> Functions:
    """`(loss, grad)` of a JAX loss, both run through Enzyme-JAX, as `InX64Setting` `jax.jit`s.

    **Arguments:**

    - `example`: the example whose arrays, `wrt` and parameters `loss` takes.
    - `loss`: `loss(*arrays, *params) -> scalar`, a plain JAX function.

    **Returns:** `Functions(loss, grad, value_and_grad=, evaluation_loss=)`: the forward
    compiled through Enzyme's pipeline, and Enzyme's reverse-mode gradient of that same
    forward with respect to the `wrt` arrays (`Example.gradient_value`'s form); weanj's
    own runs call both as one program (`value_and_grad`, as `_jax.jit_functions`). The
    static parameters are fixed before Enzyme sees the function, since `enzyme_jax_ir`
    takes arrays only. No `jvp`: the forward-vs-reverse check compares it with a family
    member's forward mode.
    """
    import jax
    from enzyme_ad.jax import enzyme_jax_ir

    static_argnums = example.static_argnums()
    static = frozenset(static_argnums)
    if example.outputs:  # a loss of several results: each through Enzyme on its own
        from ._enzyme_outputs import enzyme_output_functions

        return enzyme_output_functions(
            example, loss, lambda fn: _through_enzyme(fn, static, enzyme_jax_ir)
        )

    through_enzyme = _through_enzyme(loss, static, enzyme_jax_ir)

    def enzyme_loss(*args):
        forward, arrays = through_enzyme(args)
        return forward(*arrays)

    # The arrays come first in a variant's arguments, so a wrt array's position among the
    # arrays is its position among the arguments.
    positions = example.wrt_positions

    def in_convention(g):
        return example.gradient_value(stored_convention(example, example.gradients(g)))

    def enzyme_grad(*args):
        forward, arrays = through_enzyme(args)
        return in_convention(jax.grad(forward, argnums=positions)(*arrays))

    def enzyme_value_and_grad(*args):
        forward, arrays = through_enzyme(args)
        value, g = jax.value_and_grad(forward, argnums=positions)(*arrays)
        return value, in_convention(g)

    one = InX64Setting(jax.jit(enzyme_value_and_grad, static_argnums=static_argnums))
    plain = Functions(
        InX64Setting(jax.jit(enzyme_loss, static_argnums=static_argnums)),
        InX64Setting(jax.jit(enzyme_grad, static_argnums=static_argnums)),
        value_and_grad=one,
        evaluation_loss=loss_of(one),
    )
    # a check's float64 runs: one reverse-mode program, the gradient computed only when
    # asked (`_checking`: Enzyme's reverse pass sits in a `lax.cond`)
    _, reverse = one_program(example, enzyme_loss, in_convention)
    jitted = jax.jit(reverse, static_argnums=static_argnums)
    program = InX64Setting(jitted, lambda: configuration_of(one))
    return plain._replace(checking=CheckRuns(example, plain, None, program).functions())


def enzyme_variant(
    example: Example | str,
    name: str,
    *,
    family: str,
    loss: Callable | None = None,
    description: str = "",
    dtypes: tuple[str, ...] = DTYPES,
    excludes: Callable | None = None,
    expected: Any = None,
):
    """Register a variant whose gradient is Enzyme's (Enzyme-JAX) of the JAX `loss`; a
    decorator when `loss` is not given:

        weanj.enzyme_variant(ex, "jax-loop-enzyme", family="smooth", loss=smooth_loop)

    A second, independent AD engine of the same family as the Julia reference's
    Enzyme.jl, on the very forward of a JAX variant. Needs `pip install 'weanj[enzyme]'`
    (CPython 3.11); unavailable, saying so, without it. **Returns:** the registered
    `Variant` (as a decorator: the function unchanged).
    """

    from .._arguments import declared

    declared("enzyme_variant", name, loss=loss)

    def described(fn: Callable) -> str:
        return description or f"{getattr(fn, '__name__', 'the loss')} through enzyme_jax_ir; Enzyme"

    return jax_variant(
        example,
        name,
        family=family,
        loss=loss,
        backend="enzyme",
        requires=("enzyme_ad",),
        description=described,
        dtypes=dtypes,
        excludes=excludes,
        expected=expected,
        functions=lambda ex, fn, grad: enzyme_functions(ex, fn),
    )


def enzyme_passes(grad: Callable, *args) -> list[str]:
    """The Enzyme pass pipelines in the jaxpr of `grad(*args)` (one per Enzyme call).

    A gradient computed by Enzyme shows up as `enzyme_primal` equations whose pipeline
    contains `enzyme-wrap{... mode=ReverseModeCombined}`; a gradient JAX had computed
    itself would show JAX's own primitives instead. Used by the tests to prove the
    engine, and handy when reading what Enzyme was asked to do.

    **Arguments:**

    - `grad`: a `grad` returned by `enzyme_functions`.
    - `args`: its arguments (static parameters included).

    **Returns:** the pass-pipeline strings of the top-level Enzyme calls; an empty list
    means JAX, not Enzyme, computed the function.
    """

    jitted = getattr(grad, "jitted", grad)
    # traced in the variant's own x64 configuration, as its calls run (`_jax.InX64Setting`)
    context = getattr(grad, "_context", contextlib.nullcontext)
    with context():
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
