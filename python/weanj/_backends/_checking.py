"""What a check's float64 CPU runs call: one program for the loss, its gradient and its
forward-mode derivative, and the loss alone from a loss program once that is cheaper
(issue 51).

A check runs a JAX variant in float64 on the CPU for its evaluation, the loss floor's
perturbed runs, the Taylor test's steps and the forward-vs-reverse (jvp) check. Each of
these calls one program, `full(*args, tangents) -> (loss, gradient, directional)`:
`jax.linearize` of the loss gives the loss and its linear map; the map applied to
`tangents` is the forward-mode derivative, and its transpose (`jax.linear_transpose`,
which is how `jax.grad` computes a gradient: the same numbers, bit for bit, on every
gallery variant) the gradient. A run that asks no derivative along anything passes zero
tangents. So in float64 an evaluation with all its checks compiles one program, where a
`value_and_grad` program and a `jvp` program compiled two (benchmarks/compile_cost.py).
A variant with a hand-written gradient keeps it: its `full` is `jax.jvp` of the loss and
the gradient it wrote.

A loss JAX cannot push forward (a `custom_vjp` inside, a primitive without a JVP rule)
fails to trace so; its runs then go to its `value_and_grad` program, and its `jvp` raises
that first error, which the jvp check names before it borrows a family member's forward
mode (`_pipeline._gradchecks.jvp_judgement`).

**The loss alone.** The loss floor's perturbed runs and the Taylor test's steps (tens of
them: the step halves up to 40 times per direction) want the loss only. The one program
computes it with no new compilation, which is what a cheap kernel wants: its calls cost
microseconds, a second program tenths of a second. A kernel whose reverse pass is dear (a
sequential sweep: `kernex-lex`'s gradient takes 20 times its loss) wants the opposite.
Which one a variant is, is learned as the calls go, renting before buying: the loss-only
calls go through the one program until the seconds they took there pass `LOSS_SHARE` of
the one program's first call (its tracing and compilation: a loss program compiles in
about that share of it, benchmarks/compile_cost.py), then through the variant's `loss`
program, compiled then. A cheap kernel never compiles a second program; a dear one pays
at most about twice what the better choice, known in advance, would have cost. So a
check compiles one program per (variant, float64), two where the steps are dear.

A backend with no forward mode of its own (Enzyme-JAX's variants: their jvp check borrows
a family member's) gets the second half alone: its `value_and_grad` program, and the loss
rented from it. Only weanj's checks call these functions (`Functions.checking`, chosen by
`_pipeline._evaluate.for_checks`); `loss`, `grad` and `jvp` called directly stay the
variant's own programs, and a float32 run calls its `value_and_grad` program alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .._model import Example, Functions

# A loss program's compilation, as a share of its one program's first call (tracing,
# compilation and a run): about 0.3 to 0.5 on the gallery (benchmarks/compile_cost.py).
LOSS_SHARE = 0.4


def loss_along(loss: Callable, args: list, positions: tuple[int, ...]) -> Callable:
    """`f(*values)`: `loss` of `args` with the arrays at `positions` (the wrt arrays)
    replaced by `values`: what `jax.jvp` and `jax.linearize` push forward."""

    def along(*values):
        moved = list(args)
        for i, value in zip(positions, values, strict=True):
            moved[i] = value
        return loss(*moved)

    return along


def full_program(example: Example, loss: Callable, gradient: Callable, hand_written: bool):
    """`full(*args, tangents) -> (loss, gradient, directional)` (module docstring), not yet
    jitted; `gradient(raw) -> stored gradient` puts JAX's transpose in weanj's convention,
    or, `hand_written`, `gradient(*args)` is the variant's own."""
    import jax
    import jax.numpy as jnp

    positions = example.wrt_positions

    def full(*args):
        *args, tangents = args
        along = loss_along(loss, args, positions)
        primals = tuple(args[i] for i in positions)
        directions = tuple(tangents[n] for n in example.wrt_names)
        if hand_written:
            value, directional = jax.jvp(along, primals, directions)
            return value, gradient(*args), directional
        value, linear = jax.linearize(along, *primals)
        if jnp.shape(value) != () or not jnp.issubdtype(jnp.result_type(value), jnp.floating):
            # jax.grad's refusal, said by the value_and_grad program the run falls back to
            raise TypeError("the loss is not a real scalar")
        raw = jax.linear_transpose(linear, *primals)(jnp.ones_like(value))
        return value, gradient(raw), linear(*directions)

    return full


class OneProgram:
    """The float64 CPU runs of a check, served by `full` (module docstring), else by
    `plain`'s functions (None: the backend has no forward mode; or once `full` has failed
    where `plain.value_and_grad` ran: `refused`, what the jvp raises then); the loss alone
    by the same program until that costs more than compiling `plain.loss` (`bought`)."""

    def __init__(
        self,
        example: Example,
        full: Callable | None,
        plain: Functions,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.example, self.full, self.plain, self.clock = example, full, plain, clock
        self.refused: BaseException | None = None
        self.first_call: float | None = None  # seconds: tracing and compilation included
        self.spent = 0.0  # seconds of loss-only calls through the one program
        self.bought = False  # the loss-only calls go to `plain.loss`

    def _zeros(self, args: tuple) -> dict[str, Any]:
        import numpy as np

        return {
            n: np.zeros(np.shape(args[i]), getattr(args[i], "dtype", None) or np.float64)
            for n, i in zip(self.example.wrt_names, self.example.wrt_positions, strict=True)
        }

    def value_and_grad(self, *args):
        start = self.clock()
        both = self._value_and_grad(args)
        if self.first_call is None:
            self.first_call = self.clock() - start
        return both

    def _value_and_grad(self, args: tuple):
        if self.full is not None and self.refused is None:
            try:
                value, gradient, _ = self.full(*args, self._zeros(args))
                return value, gradient
            except Exception as e:  # noqa: BLE001 - told apart by the plain program below
                both = self.plain.value_and_grad(*args)  # the kernel's own error, if any
                self.refused = e  # the plain program ran: the forward mode is what failed
                return both
        return self.plain.value_and_grad(*args)

    def evaluation_loss(self, *args):
        """The loss alone (module docstring, "The loss alone"): by the one program while
        that costs less than compiling the loss program would, then by that program. Before
        any evaluation in this process (its numbers came from a record) the one program is
        not compiled either: the loss program serves at once."""
        if self.bought or self.first_call is None:
            return self.plain.loss(*args)
        import jax

        start = self.clock()
        value = jax.block_until_ready(self._value_and_grad(args)[0])  # its seconds: the cost
        self.spent += self.clock() - start
        self.bought = self.spent > LOSS_SHARE * self.first_call
        return value

    def jvp(self, *args):
        if self.full is None:
            return self.plain.jvp(*args)
        if self.refused is not None:
            raise self.refused
        try:
            return self.full(*args)[2]
        except Exception as e:
            self.refused = e
            raise

    def functions(self) -> Functions:
        return Functions(
            self.plain.loss,
            self.plain.grad,
            self.jvp if self.full is not None or self.plain.jvp is not None else None,
            value_and_grad=self.value_and_grad,
            evaluation_loss=self.evaluation_loss,
            placed=self.plain.placed,
        )
