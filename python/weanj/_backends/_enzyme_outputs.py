"""Enzyme-JAX variants of an example that declares outputs (docs/outputs.md).

Enzyme-JAX differentiates a function of one result: a loss that returns `(loss,
{name: array})` is not one (its reverse pass refuses the pair). So the loss goes through
Enzyme alone, for its value and gradient, and each output through Enzyme on its own, a
function of one array whose vector-Jacobian product Enzyme gives (the dot-product test's
`Jᵀ·w`): the outputs are Enzyme's compiled forward, as the loss is. Each call that
returns the outputs runs the forward once more per output, counted as such
(`BeyondRuns.more_forwards`). Enzyme-JAX has no forward mode: the dot-product test borrows
`⟨w, J·v⟩` from a family member, and the second order (forward over Enzyme's reverse) is
refused where Enzyme cannot be pushed forward, saying so.
"""

from __future__ import annotations

from collections.abc import Callable

from .._model import Example, Functions
from ._beyond import beyond_program
from ._beyond_runs import BeyondRuns, loss_alone, output_shapes, with_outputs
from ._jax import InX64Setting, configuration_of, loss_of, stored_convention


def enzyme_output_functions(example: Example, loss: Callable, through: Callable) -> Functions:
    """The `Functions` of an Enzyme-JAX variant whose loss returns outputs; `through(fn)`
    makes `fn` Enzyme's (`_enzyme._through_enzyme`, its static parameters fixed)."""
    import jax

    static = example.static_argnums()
    declared = with_outputs(example, loss)
    by_enzyme = through(loss_alone(declared))
    each = {o: through(lambda *a, o=o: declared(*a)[1][o]) for o in example.outputs}
    positions = example.wrt_positions

    def enzyme_loss(*args):
        forward, arrays = by_enzyme(args)
        return forward(*arrays)

    def outputs_of(*args):
        found = {}
        for o, made in each.items():
            forward, arrays = made(args)
            found[o] = forward(*arrays)
        return found

    def in_convention(g):
        return example.gradient_value(stored_convention(example, example.gradients(g)))

    def enzyme_grad(*args):
        forward, arrays = by_enzyme(args)
        return in_convention(jax.grad(forward, argnums=positions)(*arrays))

    def enzyme_value_and_grad(*args):
        forward, arrays = by_enzyme(args)
        value, g = jax.value_and_grad(forward, argnums=positions)(*arrays)
        return (value, outputs_of(*args)), in_convention(g)

    one = InX64Setting(jax.jit(enzyme_value_and_grad, static_argnums=static))
    plain = Functions(
        InX64Setting(jax.jit(enzyme_loss, static_argnums=static)),
        InX64Setting(jax.jit(enzyme_grad, static_argnums=static)),
        value_and_grad=one,
        evaluation_loss=loss_of(one, True),
    )

    def combined(*args):
        return enzyme_loss(*args), outputs_of(*args)

    def programs(order: int):
        _, reverse = beyond_program(example, combined, in_convention, None, order)
        jitted = jax.jit(reverse, static_argnums=static)
        return None, InX64Setting(jitted, lambda: configuration_of(one))

    runs = BeyondRuns(
        example,
        plain,
        programs,
        lambda *args: output_shapes(declared, static, args),
        more_forwards=len(example.outputs),
    )
    return plain._replace(checking=runs.functions())
