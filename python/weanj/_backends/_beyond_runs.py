"""The runs of a check's program grown beyond the gradient (`_beyond`): which program
serves (the first order's, the second's once a run asks for it), the seeds each call
takes, what comes back to the host; and the outputs' convention held at trace time
(docs/outputs.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._judge._directions import output_weights
from .._model import Example
from .._model._beyond import split_evaluated
from ._beyond import DERIVATIVES, GRADIENT, LOSS_ONLY, SECOND
from ._checking import CheckRuns


class BeyondRuns(CheckRuns):
    """`CheckRuns` of a program that computes more than the gradient (module docstring):
    `programs(order) -> (full, reverse)`, jitted, made once per order (the order-2 one
    the first time a run asks for it); `shapes(*args) -> {output: shape}`, the outputs'
    shapes (traced, not run), for their seeded weights. The evaluation's call returns
    `(loss, gradient, directional, beyond)`, `beyond` on the host (`_host`)."""

    def __init__(
        self, example: Example, plain, programs: Callable, shapes: Callable, more_forwards=0
    ):
        self._programs, self._made, self._shapes, self._shaped = programs, {}, shapes, {}
        # the forwards each call runs beyond the loss's (an Enzyme-JAX variant's outputs)
        self.more_forwards = more_forwards
        full, reverse = self._of(1)
        super().__init__(example, plain, full, reverse)
        self.order = 1
        self.second_refused: BaseException | None = None
        self.reverse_refused: BaseException | None = None

    def _of(self, order: int):
        if order not in self._made:
            self._made[order] = self._programs(order)
        return self._made[order]

    def shapes(self, args: tuple) -> dict[str, tuple[int, ...]]:
        """The outputs' shapes at these arguments' shapes (traced once per shapes)."""
        n = len(self.example.arrays)
        key = (tuple((np.shape(a), str(getattr(a, "dtype", ""))) for a in args[:n]), args[n:])
        if key not in self._shaped:
            self._shaped[key] = self._shapes(*args)
        return self._shaped[key]

    def _seeds(self, args: tuple, tangents: dict | None, second: dict | None) -> dict:
        tangents = self._zeros(args) if tangents is None else tangents
        weights = output_weights(self.example, self.shapes(args)) if self.example.outputs else {}
        if self.order >= 2 and second is None:
            second = self._zeros(args)
        return {"tangents": tangents, "weights": weights, "second": second or {}}

    def _own(self, args: tuple, tangents: dict | None, derivatives: bool, second=None):
        """`(loss, gradient, directional or None, beyond)` by the program of the run's
        order (`full`, else `reverse`), or None where neither runs (`plain` then); with
        `derivatives`, every derivative of the evaluation where `tangents` are given (with
        `second`, the Hessian products too), else the gradient alone."""
        asked = LOSS_ONLY
        if derivatives:
            asked = GRADIENT if tangents is None else DERIVATIVES
            asked = SECOND if second is not None else asked
        seeds = self._seeds(args, tangents, second)
        if self.serving == "full":
            try:
                return self.full(*args, seeds, np.int32(asked))
            except Exception as e:  # noqa: BLE001 - the next program tells what failed
                self.refused = e
                self.serving = "reverse" if self.reverse is not None else "plain"
        if self.serving == "reverse":
            try:
                value, g, found = self.reverse(*args, seeds, np.int32(asked))
                return value, g, None, found
            except Exception as e:  # noqa: BLE001 - the kernel's own error: `plain` raises it
                self.reverse_refused = e
                self.serving = "plain"
        return None

    def value_and_grad(self, *args):
        """`(loss, gradient)`, or `((loss, outputs), gradient)` for an example that
        declares outputs (JAX's `has_aux` convention, as `jit_functions`' own program)."""
        found = self._own(tuple(args), None, True)
        self.evaluated = True
        if found is None:
            return self.plain.value_and_grad(*args)
        value, g, _, beyond = found
        return ((value, dict(beyond["outputs"])) if self.example.outputs else value), g

    def _second_order(self) -> bool:
        """Switch to the order-2 programs (the first time a run asks): whether they serve."""
        if self.order >= 2:
            return True
        if self.second_refused is not None:
            return False
        self.full, self.reverse = self._of(2)
        self.order, self.serving = 2, "full" if self.full is not None else "reverse"
        return True

    def evaluation(self, *args, second: dict | None = None):
        """`(loss, gradient, directional, beyond)`: the evaluation's one call; `second`
        `{wrt name: u}` asks for the Hessian-vector products (`beyond["hvp"]`, `["hvp_u"]`;
        None where the second order could not be traced, `second_refused` says why)."""
        *args, tangents = args
        args = tuple(args)
        found = None
        if second is not None and self._second_order():
            try:
                found = self._own(args, tangents, True, second)
            except Exception as e:  # noqa: BLE001 - the first order still serves
                found = None
                self.second_refused = e
            asked_second = found is not None
            if found is None:  # the order-2 programs do not trace: back to the first order
                self.second_refused = self.second_refused or self.reverse_refused
                self.full, self.reverse = self._of(1)
                self.order, self.serving = 1, "full" if self.full is not None else "reverse"
        if found is None:
            found, asked_second = self._own(args, tangents, True), False
        self.evaluated = True
        if found is None:
            first, g = self.plain.value_and_grad(*args)
            value, outputs = split_evaluated(self.example, first)
            return value, g, None, {"outputs": outputs, "jacobian": {}, "more_forwards": 0}
        value, g, directional, beyond = found
        each = None
        if directional is not None:
            each = dict(zip(self.example.wrt_names, np.asarray(directional).tolist(), strict=True))
        return (
            value,
            g,
            each,
            {
                **_host(beyond, directional is not None, asked_second),
                "more_forwards": self.more_forwards,
            },
        )


def _host(beyond: dict, forward: bool, second: bool) -> dict:
    """What the program computed beyond the gradient, on the host: the outputs, the
    Jacobian's dot-product numbers `{"uT::u0": (⟨w, J·v⟩ or None, ⟨Jᵀ·w, v⟩, the size of
    their terms)}` and its pullbacks `{"uT::u0": Jᵀ·w}` (each wrt array's part), the
    Hessian-vector products where asked for (`second`: an order-2 program asked for the
    first order returns zeros in their place, never kept)."""
    out: dict[str, Any] = {"outputs": {k: np.asarray(v) for k, v in beyond["outputs"].items()}}
    jacobian = {}
    for o, per in beyond.get("vjp", {}).items():
        for a, back in per.items():
            back, scale = (float(x) for x in np.asarray(back))
            ahead = None
            if forward:
                ahead, size = (float(x) for x in np.asarray(beyond["jvp"][o][a]))
                scale = max(scale, size)
            jacobian[f"{o}::{a}"] = (ahead, back, scale)
    out["jacobian"] = jacobian
    out["pullback"] = {
        f"{o}::{a}": np.asarray(back)
        for o, per in beyond.get("pullback", {}).items()
        for a, back in per.items()
    }
    for key in ("hvp", "hvp_u"):
        if second and key in beyond:
            out[key] = {a: np.asarray(v) for a, v in beyond[key].items()}
    return out


def with_outputs(example: Example, loss: Callable) -> Callable:
    """`loss`, held at trace time to the outputs' convention (`Example.outputs`): it must
    return `(loss, {name: array})` with exactly the declared names; anything else is the
    variant's fault, in one line (`_judge._contract.Breach`)."""
    from .._judge._contract import Breach

    names = tuple(example.outputs)

    def declared(*args):
        found = loss(*args)
        pair = isinstance(found, (tuple, list)) and len(found) == 2
        if not pair or not isinstance(found[1], dict):
            raise Breach(
                f"returned no outputs: {example.name} declares outputs {', '.join(names)}, so "
                "its loss returns (loss, {name: array}) (JAX's has_aux convention)"
            )
        if set(found[1]) != set(names):
            raise Breach(
                f"returned the outputs {', '.join(map(str, found[1])) or 'none'}; "
                f"{example.name} declares {', '.join(names)}"
            )
        return found[0], {n: found[1][n] for n in names}

    return declared


def loss_alone(declared: Callable) -> Callable:
    """The loss of a loss that returns `(loss, outputs)` (what `loss` and `grad` take)."""

    def alone(*args):
        return declared(*args)[0]

    return alone


def output_shapes(own: Callable, static: tuple[int, ...], args: tuple) -> dict:
    """`{output: shape}` of a loss that returns `(loss, outputs)`, traced, not run."""
    import jax

    fixed = {i: args[i] for i in static}
    dynamic = [a for i, a in enumerate(args) if i not in fixed]

    def outputs_of(*values):
        it = iter(values)
        return own(*(fixed[i] if i in fixed else next(it) for i in range(len(args))))[1]

    return {k: tuple(v.shape) for k, v in jax.eval_shape(outputs_of, *dynamic).items()}
