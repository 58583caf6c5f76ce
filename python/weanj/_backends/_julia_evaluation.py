"""A Julia variant's evaluation beyond the gradient (docs/outputs.md): its outputs, their
Jacobian's numbers and pullbacks, and the Hessian-vector products, as they cross to the
Julia worker and back. The worker's side is `_julia_beyond`; the Julia functions are
`julia/src/outputs.jl` and `second_order.jl`.

The convention: the loss of a Julia variant whose example declares outputs returns them
beside its loss, `(L, (; r = r))` (JAX's `has_aux`, in Julia). Every request of such a
variant names the outputs (`outputs` in its header): `loss_and_grad` then answers the
outputs after the gradient arrays, `loss`, `grad` and `timings` take the loss alone.

A check's float64 CPU evaluation (`Functions.evaluation`) is one `evaluation` request
carrying, after the example's arrays, each flagged `wrt` array's direction v (the jvp
check's, argument order), each output's seeded weight w (`output_weights`: the same for
every variant, so `Jᵀ·w` compares across them) and, at the second order, each flagged
array's second direction u. The weights need the outputs' shapes, which only a run of
the kernel tells: the first time at argument shapes, one `outputs` request (the kernel
once, its loss and outputs; the worker keeps their layout). The reply: the loss, the
gradient arrays, the outputs, each output's `Jᵀ·w` by flagged array (output by output),
where the AD has a forward mode each output's `J·v` along each array's direction
(direction by direction), and at the second order `H_aa·v_a`, `H_aa·u_a` per array. The
jvp check is not served from it (`directional` None: it borrows as before); a
hand-written gradient (`gradient=`) gives the outputs alone; a complex `wrt` array, the
outputs alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._judge._directions import output_weights
from ._julia_process import JuliaError


def flagged(kernel: Any) -> list[str]:
    """The `wrt` arrays in argument order (`WeanJ.enzyme_gradient`'s order)."""
    return [a for a in kernel.arrays if a in kernel.wrt]


class JuliaEvaluation:
    """A Julia variant's `Functions.evaluation` (module docstring). `ask(op, what, args,
    more=(), **header) -> (reply, arrays, dtype)` is the variant's request;
    `value_and_grad` its plain evaluation; `read` how an answer's loss and gradient are
    read. `second_refused` says why it has no
    Hessian-vector products (read by the judge through the bound method, as a JAX
    variant's `CheckRuns`); `pushforward_refused` why its outputs were not pushed forward
    (the dot-product test then borrows `⟨w, J·v⟩`, saying from whom). `refused`, the loss's
    forward mode for the jvp check, stays None: "no forward mode", as before."""

    # its call computes no directional derivative of the loss: it lends no forward mode
    # (`_pipeline.session._runs.push`), as before it had an evaluation of its own
    forward_mode = False

    def __init__(self, example: Any, kernel: Any, ask, value_and_grad, read):
        self.example, self.kernel, self.ask = example, kernel, ask
        self.value_and_grad = value_and_grad
        # `(loss_of(out, dtype), gradient_of(out))`: the answer's loss and gradient, read
        # as `value_and_grad` reads them (`_julia_calls`)
        self.loss_of, self.gradient_of = read
        self.refused: str | None = None
        self.second_refused: str | None = None
        self.pushforward_refused: str | None = None
        self._shapes: dict[tuple, dict[str, tuple[int, ...]]] = {}
        self.asked = 0  # `outputs` requests not counted yet

    def _derivatives(self) -> str | None:
        """Why this variant's outputs are not differentiated, or None."""
        if self.kernel.gradient is not None:
            return f"{self.kernel.variant}'s gradient is written by hand (no AD differentiates it)"
        complex_wrt = [a for a in self.kernel.wrt if self.example.array(a).kind == "complex"]
        if complex_wrt:
            return f"{complex_wrt[0]} is complex"
        return None

    def shapes(self, args: tuple) -> dict[str, tuple[int, ...]]:
        """The outputs' shapes at these arguments' shapes and dtypes: one `outputs`
        request the first time (the kernel runs once)."""
        n = len(self.kernel.arrays)
        key = (tuple((np.shape(a), np.asarray(a).dtype.str) for a in args[:n]), args[n:])
        if key not in self._shapes:
            reply, out, _ = self.ask("outputs", "outputs", args)
            found = outputs_of(self.kernel, reply, out[1:])
            self._shapes[key] = {k: tuple(np.shape(v)) for k, v in found.items()}
            self.asked += 1  # the kernel ran once for them: counted with the evaluation
        return self._shapes[key]

    def evaluation(self, *call, second: dict | None = None):
        """`(loss, gradient, directional, beyond)`: `directional` None (module docstring),
        `beyond` `_beyond_runs`' keys (`outputs`, `jacobian`, `pullback`, `hvp` and
        `hvp_u` where computed, `more_forwards`); `(loss, gradient, None, None)` where
        nothing beyond the gradient is asked."""
        *args, tangents = call
        args = tuple(args)
        outputs = tuple(self.kernel.outputs)
        if not outputs and second is None:
            return (*self.value_and_grad(*args), None, None)
        not_here = self._derivatives()
        if not_here is not None:
            self.pushforward_refused = self.second_refused = not_here
            first, g = self.value_and_grad(*args)
            value, outs = first if outputs else (first, {})
            return value, g, None, {"outputs": outs, "jacobian": {}, "more_forwards": 0}
        weights = output_weights(self.example, self.shapes(args)) if outputs else {}
        names = flagged(self.kernel)
        more = [tangents[a] for a in names] + [weights[o] for o in outputs]
        if second is not None:
            more += [second[a] for a in names]
        reply, out, dtype = self.ask(
            "evaluation",
            "evaluation (outputs, their derivatives, Hessian products)",
            args,
            more=more,
            second=second is not None,
        )
        found = self._read(reply, out, dtype, tangents, weights, second is not None)
        found[3]["more_forwards"] += self.asked
        self.asked = 0
        return found

    def _read(self, reply: dict, out: list, dtype, tangents: dict, weights: dict, second: bool):
        names, outputs = flagged(self.kernel), tuple(self.kernel.outputs)
        k, n = len(names), len(outputs)
        if len(out) < 1 + k + n:
            raise JuliaError(f"{self.kernel.variant}: the Julia worker answered too few arrays")
        value = self.loss_of(out[:1], dtype)
        g = self.gradient_of(out[1 : 1 + k])
        outs = outputs_of(self.kernel, reply, out[1 + k : 1 + k + n])
        rest = out[1 + k + n :]
        beyond: dict[str, Any] = {"outputs": outs, "jacobian": {}, "more_forwards": 0}
        self.pushforward_refused = reply.get("forward_refused") or None
        self.second_refused = reply.get("second_refused") or None
        if reply.get("pulled"):
            pulled, rest = rest[: n * k], rest[n * k :]
            pushed = None
            if reply.get("pushed"):
                pushed, rest = rest[: n * k], rest[n * k :]
                for j, p in enumerate(pushed):  # each output's J·v, shaped as the output
                    if np.shape(p) != np.shape(weights[outputs[j % n]]):
                        raise JuliaError(
                            f"{self.kernel.variant}: the Julia worker answered a pushforward "
                            f"of {outputs[j % n]} of shape {np.shape(p)}"
                        )
                beyond["more_forwards"] = k  # each array's pushforward: one forward
            beyond["jacobian"], beyond["pullback"] = _jacobian(
                outputs, names, pulled, pushed, tangents, weights
            )
        if second and reply.get("second"):
            if len(rest) != 2 * k:
                raise JuliaError(
                    f"{self.kernel.variant}: the Julia worker answered {len(rest)} Hessian "
                    f"products for {k} arrays"
                )
            for key, at in (("hvp", 0), ("hvp_u", 1)):
                beyond[key] = {
                    a: np.asarray(rest[2 * i + at], np.float64) for i, a in enumerate(names)
                }
        self._shaped(beyond, tangents, weights)
        return value, g, None, beyond

    def _shaped(self, beyond: dict, tangents: dict, weights: dict) -> None:
        """Each product shaped as what it is of (a pullback and a Hessian product as its
        wrt array; a pushforward went into a number already), or a `JuliaError` naming it
        (a worker out of step, never a traceback in the judge)."""
        found = {
            f"pullback {k}": (v, tangents[k.split("::")[1]])
            for k, v in beyond.get("pullback", {}).items()
        }
        for key in ("hvp", "hvp_u"):
            found.update({f"{key} {a}": (v, tangents[a]) for a, v in beyond.get(key, {}).items()})
        for what, (value, like) in found.items():
            if np.shape(value) != np.shape(like):
                raise JuliaError(
                    f"{self.kernel.variant}: the Julia worker answered {what} of shape "
                    f"{np.shape(value)}, not its array's {np.shape(like)}"
                )


def outputs_of(kernel: Any, reply: dict, arrays: list) -> dict[str, np.ndarray]:
    """The outputs the worker answered, by name, checked against the declared ones (their
    dtype and shape are the contract's: `_judge._contract.checked_outputs`)."""
    names = list(kernel.outputs)
    if reply.get("outputs") != names or len(arrays) != len(names):
        raise JuliaError(
            f"{kernel.variant}: the Julia worker answered {len(arrays)} outputs "
            f"({reply.get('outputs')}) for {', '.join(names)}"
        )
    return dict(zip(names, arrays, strict=True))


def _jacobian(outputs, names, pulled, pushed, tangents, weights):
    """`(jacobian, pullback)` as `_beyond_runs._host` gives them: per `OUTPUT::ARRAY`,
    `(⟨w, J·v⟩ or None, ⟨Jᵀ·w, v⟩, the size of their terms)` and `Jᵀ·w`'s part of the
    array; `pulled` output by output, `pushed` direction by direction (module
    docstring)."""
    jacobian, pullback = {}, {}
    for i, o in enumerate(outputs):
        w = np.asarray(weights[o], np.float64)
        for j, a in enumerate(names):
            back = np.asarray(pulled[i * len(names) + j], np.float64)
            v = np.asarray(tangents[a], np.float64)
            terms = back * v
            ahead, scale = None, float(np.sum(np.abs(terms)))
            if pushed is not None:
                ahead_terms = w * np.asarray(pushed[j * len(outputs) + i], np.float64)
                ahead = float(np.sum(ahead_terms))
                scale = max(scale, float(np.sum(np.abs(ahead_terms))))
            jacobian[f"{o}::{a}"] = (ahead, float(np.sum(terms)), scale)
            pullback[f"{o}::{a}"] = back
    return jacobian, pullback
