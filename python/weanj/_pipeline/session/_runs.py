"""What a session runs of a variant beyond its evaluation, as functions of the session
(its watch, its checking, its caches): the loss alone for the Taylor test's steps and the
central differences (`loss_of`, `loss_along`), the forward-mode derivatives a lender
computes apart from its evaluation (`push`, `Session.forward`'s), and float64's rounding
from float32's emulated on the program (`program_rounding`), the Taylor floor's escalation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._model import Gradient, Inputs, Variant
from ..._model._cost import Cost
from ..evaluation._calls import compiling_into, counter, for_checks, forward_refusal, run_loss
from ..evaluation._emulation import float64_level
from ..evaluation._on_device import on_device


def program_rounding(session: Any, g: Gradient, inputs: Inputs) -> float:
    """A float64 CPU run's loss rounding level from its program (`_emulation.
    float64_level`: float32's rounding emulated, scaled to float64's), once per run,
    counted in its cost under `rounding` (the kernel twice, forward and backward); 0
    where the program cannot be looked into. The Taylor test's floor where the
    estimate is not borne out (`_gradchecks`): a long recurrence rounds far above
    what a one-ulp move of its inputs shows."""

    def compute() -> float:
        if g.of is None or g.dtype != "float64" or g.of.unavailable_reason() is not None:
            return 0.0
        where = f"{g.example.name} {g.variant}"
        session.watch.step("float64's rounding, from float32's emulated on its program")
        try:
            level = session.watch.run(
                lambda: float64_level(
                    g.of.built.value_and_grad,
                    g.example.static_argnums(),
                    inputs.args("float64"),
                ),
                where,
            )
        except TimeoutError:
            raise
        except Exception:  # noqa: BLE001 - not looked into: the measured floor stands
            return 0.0
        counter(g.cost, "rounding")(2, 2)
        return level if np.isfinite(level) else 0.0

    return session.once(("program rounding", id(g)), compute)


def loss_of(
    session: Any,
    variant: Variant,
    inputs: Inputs,
    arrays: tuple[str, ...],
    cost: Cost | None = None,
    phase: str = "taylor",
) -> Callable[[dict[str, np.ndarray]], float]:
    """`{array: x} -> L(...)` in float64 with those `arrays` replaced, each call under
    the watch, counted into `cost` under `phase` (one forward each; the programs it
    compiles too): the loss-only branch of the program that computed the evaluation
    (`_backends._checking`: a plain forward pass, nothing compiled again)."""
    ex = variant.example
    run_arrays = inputs.run_arrays("float64")
    run = run_loss(on_device(for_checks(variant.built, True), "cpu")[0])
    where = f"{ex.name} {variant.name} (Taylor test of {', '.join(arrays)})"
    cost = cost if cost is not None else Cost()
    spent = counter(cost, phase)

    def loss(xs: dict[str, np.ndarray]) -> float:
        args = ex.args({**run_arrays, **xs}, inputs.params)
        with compiling_into(cost):
            value = float(np.asarray(session.watch.run(lambda: run(*args), where)))
        spent(1, 0)
        return value

    return loss


def loss_along(
    session: Any, variant: Variant, inputs: Inputs, array: str, cost: Cost | None = None, phase="fd"
) -> Callable[[np.ndarray], float]:
    """`x -> L(..., array=x, ...)` in float64, each call under the watch (`loss_of`)."""
    loss = loss_of(session, variant, inputs, (array,), cost, phase)
    return lambda x: loss({array: x})


def push(session: Any, variant, inputs, tangents, cost: Cost) -> dict[str, float]:
    """The forward-mode derivatives of `forward`, computed now."""
    available = variant.unavailable_reason() is None
    built = for_checks(variant.built, session.checking) if available else None
    evaluation = getattr(built, "evaluation", None)
    if getattr(getattr(evaluation, "__self__", None), "forward_mode", True) is False:
        evaluation = None  # its call pushes nothing forward (a Julia variant's)
    if built is None or (evaluation is None and built.jvp is None):
        raise TypeError("no forward mode")
    fns = on_device(built, "cpu")[0]
    args = inputs.args("float64")
    where = f"{variant.example.name} {variant.name} (jvp of {', '.join(tangents)})"
    with compiling_into(cost):
        if evaluation is not None:
            found = session.watch.run(lambda: fns.evaluation(*args, tangents), where)[2]
            counter(cost, "jvp")(1, 1)  # its call computes the gradient too
            if found is None:
                raise TypeError(forward_refusal(built))
            return {a: float(np.asarray(v)) for a, v in found.items()}
        out = {}
        for a, dx in tangents.items():
            full = {n: dx if n == a else np.zeros_like(t) for n, t in tangents.items()}
            value = session.watch.run(lambda full=full: fns.jvp(*args, full), where)
            counter(cost, "jvp")(1, 0)
            out[a] = float(np.asarray(value))
        return out
