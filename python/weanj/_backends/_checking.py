"""What a check's float64 CPU runs call: one program for the loss, its gradient and the
forward-mode derivative of each `wrt` array, each computed only when asked.

A check runs a JAX variant in float64 on the CPU for its evaluation, the Taylor test's
steps, the loss floor's perturbed runs and the forward-vs-reverse (jvp) check. Each of
these calls one compiled program, `full(*args, tangents, derivatives) -> (loss,
gradient, directional)`, whose two branches a `lax.cond` opens (`derivatives`, a boolean
passed as an array: a traced value, so one compilation serves both kinds of call):

- **the loss alone** (`LOSS_ONLY`): the variant's own forward pass, nothing stored for a
  derivative: what the Taylor test's steps and the rounding level's perturbed runs ask,
  most of a check's calls;
- **the derivatives** (`DERIVATIVES`): `jax.linearize` of the loss gives the loss and its
  linear map; the map's transpose (`jax.linear_transpose`, which is how `jax.grad`
  computes a gradient: the same numbers, bit for bit, on every gallery variant) gives the
  gradient, and the map applied to each `wrt` array's own tangent (the others zero) gives
  that array's directional derivative: the evaluation computes the jvp check's numbers in
  its own call, one forward-mode pass per array, each array's apart from the others'.

So in float64 an evaluation with all its checks compiles one program, where a loss, a
gradient and a `jvp` program compiled three (benchmarks/compile_cost.py). A variant with
a hand-written gradient keeps it: its derivatives are the loss's linearisation, the
gradient it wrote and the linear map along each tangent.

A loss JAX cannot push forward (a `custom_vjp` inside, a primitive without a JVP rule) is
found while the program is traced (`forward_mode_found`), before anything compiles; its runs
then go to a reverse-mode program built the same way (`reverse`: `jax.vjp` in the
derivatives' branch, the plain loss in the other), and its jvp check borrows a family
member's numbers (`_pipeline.session._donors`). A backend with no forward mode of its own
(Enzyme-JAX's variants) has that reverse-mode program from the start. Before any
evaluation in this process (its numbers came from a record) the variant's `loss` program
serves the loss-only calls: a loss compiles in less time than the program that would
also hold the gradient.

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


def _sub_jaxprs(params: dict):
    """The jaxprs inside an equation's parameters (a scan's body, a cond's branches)."""
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns"):
                yield inner


def _primitives(jaxpr) -> set[str]:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for sub in _sub_jaxprs(eqn.params):
            names |= _primitives(sub)
    return names


def forward_mode_found(linear: Callable, primals: tuple) -> None:
    """Raise JAX's own TypeError, at trace time, where the linear map of a loss cannot be
    applied forward (a `custom_vjp` leaves a `custom_lin` in it, which only transposes):
    found here, the program is never compiled, and the reverse-mode one serves."""
    import jax

    if "custom_lin" in _primitives(jax.make_jaxpr(linear)(*primals).jaxpr):
        raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


def scalar_loss(value):
    """`value`, or JAX's refusal where it is no real scalar (said by the value_and_grad
    program the run falls back to)."""
    import jax.numpy as jnp

    if jnp.shape(value) != () or not jnp.issubdtype(jnp.result_type(value), jnp.floating):
        raise TypeError("the loss is not a real scalar")
    return value


def _each_array(linear: Callable, primals: tuple, tangents: dict, names: tuple) -> Any:
    """The linear map of the loss applied to each wrt array's own tangent, the other
    arrays' zero: each array's directional derivative, apart from the others'."""
    import jax.numpy as jnp

    zeros = [jnp.zeros_like(p) for p in primals]
    out = []
    for i, name in enumerate(names):
        alone = list(zeros)
        alone[i] = tangents[name]
        out.append(linear(*alone))
    return jnp.stack(out)


def one_program(example: Example, loss: Callable, in_convention: Callable, gradient=None):
    """`(full, reverse)`, not yet jitted (module docstring). `full(*args, tangents,
    derivatives) -> (loss, gradient, directional)`: `tangents` `{wrt name: array}`, each
    array's own direction; `directional[i]` the derivative along the i-th wrt array's
    tangent alone; with `derivatives` false, the loss alone (the gradient and the
    directional derivatives zeros, not computed). `reverse(*args, derivatives) -> (loss,
    gradient)`, for a loss JAX cannot push forward: `jax.vjp`, the gradient computed only
    when asked. `in_convention(raw)` puts JAX's gradient in weanj's convention;
    `gradient(*args)`, a hand-written gradient in that convention, replaces it."""
    import jax
    import jax.numpy as jnp

    positions, names = example.wrt_positions, example.wrt_names

    def parts(args):
        along = loss_along(loss, args, positions)
        return along, tuple(args[i] for i in positions)

    def zero_gradient(args, primals):
        if gradient is not None:  # its own form (the parameters stay static)
            shapes = jax.eval_shape(lambda: gradient(*args))
            return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
        return in_convention(tuple(jnp.zeros_like(p) for p in primals))

    def full(*args):
        *args, tangents, derivatives = args
        along, primals = parts(args)

        def derivatives_of():
            value, linear = jax.linearize(along, *primals)
            scalar_loss(value)
            forward_mode_found(linear, primals)
            if gradient is not None:
                g = gradient(*args)
            else:
                g = in_convention(jax.linear_transpose(linear, *primals)(jnp.ones_like(value)))
            return value, g, _each_array(linear, primals, tangents, names)

        def loss_alone():
            value = scalar_loss(loss(*args))
            return value, zero_gradient(args, primals), jnp.zeros(len(names), value.dtype)

        return jax.lax.cond(derivatives, derivatives_of, loss_alone)

    def reverse(*args):
        *args, derivatives = args
        along, primals = parts(args)

        def derivatives_of():
            if gradient is not None:
                return scalar_loss(loss(*args)), gradient(*args)
            value, pullback = jax.vjp(along, *primals)
            scalar_loss(value)
            return value, in_convention(pullback(jnp.ones_like(value)))

        def loss_alone():
            return scalar_loss(loss(*args)), zero_gradient(args, primals)

        return jax.lax.cond(derivatives, derivatives_of, loss_alone)

    return full, reverse


class CheckRuns:
    """The float64 CPU runs of a check (module docstring), by the first of these that
    runs: `full` (`one_program`); `reverse` (a backend with no forward mode, like
    Enzyme-JAX's, from the start; a JAX loss once `full` has failed: the forward mode,
    `refused`, what the jvp raises then); `plain`'s functions once that has failed too
    (the kernel's own error, raised there). `second_order() -> CheckRuns`: the runs of
    the program grown to the second order (`_beyond_runs.BeyondRuns`), made the first time
    a run asks for it (`evaluation(..., second=)`), which serve every call from then on."""

    def __init__(
        self,
        example: Example,
        plain: Functions,
        full: Callable | None = None,
        reverse: Callable | None = None,
        second_order: Callable[[], CheckRuns] | None = None,
    ):
        self.example, self.plain, self.full, self.reverse = example, plain, full, reverse
        self.serving = "full" if full is not None else "reverse" if reverse else "plain"
        self.refused: BaseException | None = None
        self.evaluated = False  # an evaluation ran in this process (its program compiled)
        self.second_order, self.grown = second_order, None

    def _zeros(self, args: tuple) -> dict[str, Any]:
        import numpy as np

        return {
            n: np.zeros(np.shape(args[i]), getattr(args[i], "dtype", None) or np.float64)
            for n, i in zip(self.example.wrt_names, self.example.wrt_positions, strict=True)
        }

    def _own(self, args: tuple, tangents: dict | None, derivatives: bool):
        """`(loss, gradient, directional)` by `full`, or `(loss, gradient, None)` by
        `reverse`; None when neither runs (then `plain`'s functions serve)."""
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
                return (*self.reverse(*args, np.array(derivatives)), None)
            except Exception:  # noqa: BLE001 - the kernel's own error: `plain` raises it
                self.serving = "plain"
        return None

    def evaluation(self, *args, second: dict | None = None):
        """`(loss, gradient, directional)`: the evaluation's one call, the last argument
        each wrt array's tangent (`{name: array}`); `directional` `{name: derivative along
        that array's tangent}`, None where the loss cannot be pushed forward. `second`
        (each wrt array's second direction) asks for the second order: the grown runs'
        `(loss, gradient, directional, beyond)` (`_beyond_runs`)."""
        import numpy as np

        if second is not None and self.second_order is not None and self.grown is None:
            self.grown = self.second_order()
        if self.grown is not None:
            return self.grown.evaluation(*args, second=second)

        *args, tangents = args
        found = self._own(tuple(args), tangents, DERIVATIVES)
        self.evaluated = True
        if found is None:
            return (*self.plain.value_and_grad(*args), None)
        value, g, directional = found
        if directional is None:
            return value, g, None
        each = np.asarray(directional).tolist()  # on the host: no program to split it
        return value, g, dict(zip(self.example.wrt_names, each, strict=True))

    def value_and_grad(self, *args):
        if self.grown is not None:
            return self.grown.value_and_grad(*args)
        both = self._own(args, None, DERIVATIVES)
        self.evaluated = True
        return self.plain.value_and_grad(*args) if both is None else both[:2]

    def evaluation_loss(self, *args):
        """The loss alone: from the program that computed the evaluation in this process,
        not asking it for the gradient; before any (its numbers came from a record), or
        where that program failed, from `plain.loss` (a loss compiles in less time)."""
        if self.grown is not None:
            return self.grown.evaluation_loss(*args)
        found = self._own(args, None, LOSS_ONLY) if self.evaluated else None
        return self.plain.loss(*args) if found is None else found[0]

    def functions(self) -> Functions:
        return Functions(
            self.plain.loss,
            self.plain.grad,
            self.plain.jvp,
            value_and_grad=self.value_and_grad,
            evaluation_loss=self.evaluation_loss,
            placed=self.plain.placed,
            evaluation=self.evaluation,
        )
