"""What a check's float64 CPU runs call: one program for the loss, its gradient and its
forward-mode derivative, each computed only when asked.

A check runs a JAX variant in float64 on the CPU for its evaluation, the loss floor's
perturbed runs, the Taylor test's steps and the forward-vs-reverse (jvp) check. Each of
these calls one program, `full(*args, tangents, derivatives) -> (loss, gradient,
directional)`: `jax.linearize` of the loss gives the loss and its linear map; the map
applied to `tangents` is the forward-mode derivative, and its transpose
(`jax.linear_transpose`, which is how `jax.grad` computes a gradient: the same numbers,
bit for bit, on every gallery variant) the gradient. The two derivatives sit in one
`lax.cond` that `derivatives`, a boolean passed as an array (a traced value: one
compilation serves both kinds of call), opens. The loss floor's perturbed runs, where a
comparison asks for them, ask the loss alone and cost the forward pass with its stored
residuals (`kernex-lex`: 13 ms, where its gradient takes 310 ms); the evaluation and the
jvp check (one call each) ask the derivatives, each computing the other's too (the
evaluation's directional derivative along zero tangents: one forward-mode pass spent,
where a second `lax.cond` would cost compilation in every variant). The Taylor test's
steps, most of a check's runs, call the variant's loss program instead: a plain forward
pass, where the stored residuals of a long stencil cost nine times as much. So
in float64 an evaluation with all its checks compiles two programs, where a loss, a
gradient and a `jvp` program compiled three (benchmarks/compile_cost.py). A variant with
a hand-written gradient keeps it: its `full` is the loss, the gradient it wrote and
`jax.jvp` of the loss.

A loss JAX cannot push forward (a `custom_vjp` inside, a primitive without a JVP rule)
cannot be lowered so; its runs then go to a reverse-mode program built the same way
(`reverse`: `jax.vjp`, the gradient in a `lax.cond`), and its `jvp` raises the first
error, which the jvp check names before it borrows a family member's forward mode
(`_pipeline.checks._gradchecks.jvp_judgement`). A backend with no forward mode of its own
(Enzyme-JAX's variants) has that reverse-mode program from the start: Enzyme's reverse
pass (one `ReverseModeCombined` call) sits in the `lax.cond`, so its loss-only calls cost
Enzyme's forward alone. Before any evaluation in this process (its numbers came from a
record) the variant's `loss` program serves the loss-only calls: a loss compiles in less
time than the program that would also hold the gradient.

Only weanj's checks call these functions (`Functions.checking`, chosen by
`_pipeline.evaluation._calls.for_checks`); `loss`, `grad` and `jvp` called directly stay the
variant's own programs, and a float32 run calls its `value_and_grad` program alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._model import Example, Functions


def loss_along(loss: Callable, args: list, positions: tuple[int, ...]) -> Callable:
    """`f(*values)`: `loss` of `args` with the arrays at `positions` (the wrt arrays)
    replaced by `values`: what `jax.jvp` and `jax.linearize` push forward."""

    def along(*values):
        moved = list(args)
        for i, value in zip(positions, values, strict=True):
            moved[i] = value
        return loss(*moved)

    return along


# what a call of the one program asks for: the loss alone, or its derivatives too
LOSS_ONLY, DERIVATIVES = False, True


def one_program(example: Example, loss: Callable, in_convention: Callable, gradient=None):
    """`(full, reverse)`, not yet jitted (module docstring). `full(*args, tangents,
    derivatives) -> (loss, gradient, directional)`: with `derivatives` false, the
    gradient and the directional derivative are zeros and are not computed (`lax.cond`:
    the loss alone costs the forward pass). `reverse(*args, derivatives) -> (loss,
    gradient)`, for a loss JAX cannot push forward: `jax.vjp`, the gradient computed only
    when asked. `in_convention(raw)` puts JAX's gradient in weanj's convention;
    `gradient(*args)`, a hand-written gradient in that convention, replaces it."""
    import jax
    import jax.numpy as jnp

    positions = example.wrt_positions

    def scalar(value):
        if jnp.shape(value) != () or not jnp.issubdtype(jnp.result_type(value), jnp.floating):
            # jax.grad's refusal, said by the value_and_grad program the run falls back to
            raise TypeError("the loss is not a real scalar")

    def asked(flag, compute, like):
        return jax.lax.cond(flag, compute, lambda: jax.tree.map(jnp.zeros_like, like))

    def parts(args):
        along = loss_along(loss, args, positions)
        return along, tuple(args[i] for i in positions)

    def hand_shapes(args):
        return jax.eval_shape(lambda: gradient(*args))  # the parameters stay static

    def full(*args):
        *args, tangents, derivatives = args
        along, primals = parts(args)
        directions = tuple(tangents[n] for n in example.wrt_names)
        if gradient is not None:
            value = loss(*args)
            g, directional = asked(
                derivatives,
                lambda: (gradient(*args), jax.jvp(along, primals, directions)[1]),
                (hand_shapes(args), value),
            )
            return value, g, directional
        value, linear = jax.linearize(along, *primals)
        scalar(value)
        raw, directional = asked(
            derivatives,
            lambda: (
                jax.linear_transpose(linear, *primals)(jnp.ones_like(value)),
                linear(*directions),
            ),
            (primals, value),
        )
        return value, in_convention(raw), directional

    def reverse(*args):
        *args, derivatives = args
        if gradient is not None:
            return loss(*args), asked(derivatives, lambda: gradient(*args), hand_shapes(args))
        along, primals = parts(args)
        value, pullback = jax.vjp(along, *primals)
        scalar(value)
        return value, in_convention(
            asked(derivatives, lambda: pullback(jnp.ones_like(value)), primals)
        )

    return full, reverse


class CheckRuns:
    """The float64 CPU runs of a check (module docstring), by the first of these that
    runs: `full` (`one_program`); `reverse` (a backend with no forward mode, like
    Enzyme-JAX's, from the start; a JAX loss once `full` has failed: the forward mode,
    `refused`, what the jvp raises then); `plain`'s functions once that has failed too
    (the kernel's own error, raised there)."""

    def __init__(
        self,
        example: Example,
        plain: Functions,
        full: Callable | None = None,
        reverse: Callable | None = None,
    ):
        self.example, self.plain, self.full, self.reverse = example, plain, full, reverse
        self.serving = "full" if full is not None else "reverse" if reverse else "plain"
        self.refused: BaseException | None = None
        self.evaluated = False  # an evaluation ran in this process (its program compiled)

    def _zeros(self, args: tuple) -> dict[str, Any]:
        import numpy as np

        return {
            n: np.zeros(np.shape(args[i]), getattr(args[i], "dtype", None) or np.float64)
            for n, i in zip(self.example.wrt_names, self.example.wrt_positions, strict=True)
        }

    def _own(self, args: tuple, tangents: dict | None, derivatives: bool):
        """`(loss, gradient, directional)` by `full`, or `(loss, gradient)` by `reverse`;
        None when neither runs (then `plain`'s functions serve)."""
        import numpy as np

        if self.serving == "full":
            tangents = self._zeros(args) if tangents is None else tangents
            try:
                return self.full(*args, tangents, np.array(derivatives))
            except Exception as e:  # noqa: BLE001 - the next program tells what failed
                self.refused = e
                self.serving = "reverse" if self.reverse is not None else "plain"
        if self.serving == "reverse":
            try:
                return self.reverse(*args, np.array(derivatives))
            except Exception:  # noqa: BLE001 - the kernel's own error: `plain` raises it
                self.serving = "plain"
        return None

    def value_and_grad(self, *args):
        both = self._own(args, None, DERIVATIVES)
        self.evaluated = True
        return self.plain.value_and_grad(*args) if both is None else both[:2]

    def evaluation_loss(self, *args):
        """The loss alone: from the program that computed the evaluation in this process,
        not asking it for the gradient; before any (its numbers came from a record), or
        where that program failed, from `plain.loss` (a loss compiles in less time)."""
        found = self._own(args, None, LOSS_ONLY) if self.evaluated else None
        return self.plain.loss(*args) if found is None else found[0]

    def jvp(self, *args):
        if self.full is None:
            return self.plain.jvp(*args)
        if self.serving == "full":
            *args, tangents = args
            found = self._own(tuple(args), tangents, DERIVATIVES)
            if self.serving == "full":
                return found[2]
        raise self.refused

    def functions(self) -> Functions:
        return Functions(
            self.plain.loss,
            self.plain.grad,
            self.jvp if self.full is not None or self.plain.jvp is not None else None,
            value_and_grad=self.value_and_grad,
            evaluation_loss=self.evaluation_loss,
            placed=self.plain.placed,
            jvp_backward=self.full is not None,
        )
