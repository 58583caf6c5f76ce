"""The calls a check makes of a variant's functions, counted (`_model._cost`): which
functions a run calls (`functions_of`, `for_checks`), the loss as weanj's own runs call it
(`run_loss`) and the loss with its gradient (`loss_and_grad`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ..._judge._contract import checked_loss
from ..._model._beyond import split_evaluated
from ..._model._cost import Cost
from ..._watch import Watch


def for_checks(built: Any, checking: bool) -> Any:
    """The functions a float64 CPU run calls: in a check (`checking`), where the backend
    has its own for a check's runs, those (`Functions.checking`: one program for the
    evaluation, its loss floor, the Taylor steps and the jvp, each call computing only
    what it asks), else `built` itself."""
    own = getattr(built, "checking", None)
    return own if checking and own is not None else built


def run_loss(fns) -> Any:
    """The loss as weanj's own runs call it beyond the evaluation's first call (the
    rounding level, the Taylor test's steps): from the program that computed the
    evaluation where the backend has one (`Functions.evaluation_loss`: nothing compiles
    again), else the variant's `loss`."""
    return fns.evaluation_loss if fns.evaluation_loss is not None else fns.loss


def loss_and_grad(
    fns,
    args: tuple,
    watch: Watch,
    label: str,
    dtype: str,
    returned: dict | None = None,
    spent: Callable[[int, int], None] | None = None,
    of: Any = None,
) -> tuple[Any, Any]:
    """The loss (held to the contract) and the raw gradient: one watched call where the
    backend computes both at once (`Functions.value_and_grad`: a Julia variant's one
    request, a JAX variant's one compiled program), else the loss, checked before the
    gradient is asked for. `returned` keeps what came back, for the fault line of a run
    at odds with its x64 configuration; `spent(forward, backward)` counts the kernel's
    executions (`_model._cost`). `of`: the example, where it declares outputs (the
    program then returns `((loss, outputs), gradient)`, JAX's `has_aux` convention: the
    outputs go into `returned["the outputs"]`)."""
    returned = {} if returned is None else returned
    spent = spent or (lambda forward, backward: None)
    if fns.value_and_grad is not None:
        try:
            both = watch.run(lambda: fns.value_and_grad(*args), label)
        except TypeError:
            # JAX refuses to differentiate a loss that is not a real scalar: the loss
            # alone says which contract it breaks (`checked_loss`), as it would first
            returned["the loss"] = watch.run(lambda: fns.loss(*args), label)
            spent(1, 0)
            checked_loss(returned["the loss"], dtype)
            raise
        spent(1, 1)  # counted once it ran: a refused trace runs nothing
        first, returned["the gradient"] = both  # all a fault line names
        returned["the loss"], returned["the outputs"] = split_evaluated(of, first)
        loss = checked_loss(returned["the loss"], dtype)  # the loss's breach first
        return loss, both[1]
    returned["the loss"] = watch.run(lambda: fns.loss(*args), label)
    spent(1, 0)
    loss = checked_loss(returned["the loss"], dtype)
    returned["the gradient"] = raw_grad = watch.run(lambda: fns.grad(*args), label)
    spent(1, 1)
    return loss, raw_grad


def evaluation_call(
    fns,
    args: tuple,
    watch: Watch,
    label: str,
    dtype: str,
    returned: dict,
    spent: Callable[[int, int], None],
    tangents: dict | None,
    second: dict | None = None,
    of: Any = None,
) -> tuple[Any, Any, dict | None, dict | None]:
    """`(loss, raw gradient, directional, beyond)`: an evaluation's call. With `tangents`
    (each wrt array's jvp direction, a check's float64 CPU run) and a backend that
    computes them in the same call (`Functions.evaluation`), each array's forward-mode
    derivative along its own tangent comes with the loss and gradient (`directional`,
    `{array: value}`; None where the loss cannot be pushed forward): the jvp check's
    numbers, no further execution. Otherwise `loss_and_grad` and no directional
    derivatives. `beyond`: what a program grown beyond the gradient computed in the same
    call (`_backends._beyond`: the outputs' Jacobian numbers; with `second`, each wrt
    array's second direction, the Hessian-vector products), else None. The outputs of an
    example that declares them go into `returned["the outputs"]`, whichever call ran."""
    if tangents is None or getattr(fns, "evaluation", None) is None:
        return (*loss_and_grad(fns, args, watch, label, dtype, returned, spent, of), None, None)
    more = {} if second is None else {"second": second}
    try:
        found = watch.run(lambda: fns.evaluation(*args, tangents, **more), label)
    except TypeError:
        # a loss JAX refuses to differentiate: the plain calls say which contract it breaks
        return (*loss_and_grad(fns, args, watch, label, dtype, returned, spent, of), None, None)
    value, raw, directional, *grown = found
    beyond = grown[0] if grown else None
    spent(1 + (beyond or {}).get("more_forwards", 0), 1)
    returned["the loss"], returned["the gradient"] = value, raw
    returned["the outputs"] = (beyond or {}).get("outputs", {})
    return checked_loss(value, dtype), raw, directional, beyond


def forward_refusal(built: Any) -> str:
    """Why a check's program could not push a loss forward (the error JAX raised while
    tracing it, `_backends._checking.CheckRuns.refused`), in one line."""
    runs = getattr(getattr(built, "evaluation", None), "__self__", None)
    refused = getattr(runs, "refused", None)
    text = (str(refused).strip().splitlines() or [""])[0] if refused is not None else ""
    return text or "no forward mode"


def functions_of(built, dtype: str, device: str, precision: str | None, checking: bool):
    """What an evaluation in `dtype` on `device` under `precision` calls (`for_checks`)."""
    checked = dtype == "float64" and device == "cpu" and precision is None
    return for_checks(built, checking and checked)


def counter(cost: Cost, phase: str) -> Callable[[int, int], None]:
    """`spent(forward, backward)`: counts into `cost` under `phase`."""
    return lambda forward, backward: cost.add(phase, forward, backward)


@contextlib.contextmanager
def compiling_into(cost: Cost) -> Iterator[None]:
    """JAX's compilations while the block runs (its own monitoring events, whatever thread
    compiles), counted into `cost` (`Cost.compiling`); nothing where JAX is not loaded
    (a Julia variant's evaluation compiles no JAX program)."""
    if "jax" not in sys.modules:
        yield
        return
    from ..._io._jax_cache import compilations

    with compilations() as found:
        yield
    for _, program, seconds in found:
        cost.compiling(program, seconds)
