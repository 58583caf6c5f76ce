"""A Julia variant's kernel (`JuliaKernel`: what it calls) and its functions
(`julia_functions`): the arguments checked and converted before they cross to the Julia
worker, one request per call, and the worker's answers checked on their way back.

What crosses is docs/DESIGN.md's "The Julia side" (`_julia`'s docstring sums it up).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from .._model import Functions
from . import _julia_client
from ._julia_evaluation import JuliaEvaluation, flagged, outputs_of
from ._julia_process import JuliaError


@dataclass(frozen=True)
class JuliaKernel:
    """What a Julia variant calls: `loss` of WeanJ (`file` and `package` None), of a user's
    file or of a user's package, the example's arrays, `wrt` arrays and parameters, and
    how its gradient is taken: `ad` (an `AD` name, or "hand-written" with `gradient` the
    function's name) and Enzyme's options."""

    example: str
    variant: str
    loss: str
    file: Path | None
    arrays: tuple[str, ...]
    wrt: tuple[str, ...]
    params: tuple[str, ...]
    activity: str = "bare"
    runtime_activity: bool = False
    package: str | None = None
    ad: str = "enzyme"
    gradient: str | None = None
    # the example's outputs: the loss returns `(L, (; name = array, ...))` (docs/outputs.md)
    outputs: tuple[str, ...] = ()
    # the outer AD of the Hessian-vector products (`julia_variant(hvp=...)`), or None
    hvp: str | None = None

    @property
    def wrt_flags(self) -> tuple[bool, ...]:
        """`WeanJ.enzyme_gradient`'s flags: one per argument, true for the `wrt` arrays."""
        return tuple(a in self.wrt for a in self.arrays) + (False,) * len(self.params)


def _crossing(a: Any) -> np.ndarray:
    """`a` in C order and native byte order (PythonCall does not byte-swap), 0-d kept 0-d
    (`np.ascontiguousarray` would make it 1-d)."""
    a = np.asarray(a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return a if a.flags.c_contiguous else np.array(a, order="C")


def _one_based(name: str, a: np.ndarray, variant: str) -> np.ndarray:
    """An index array plus one, in its own dtype (an `InputError` if that wraps)."""
    if a.size and a.max() == np.iinfo(a.dtype).max:
        raise InputError(
            f"{variant}: {name} holds {a.max()}, the largest {a.dtype}: plus one (Julia's "
            "1-based index) would wrap around"
        )
    return a + a.dtype.type(1)


def _arguments(example: Any, kernel: JuliaKernel, args: tuple) -> tuple[dict, list, Any]:
    """The arrays (by name), the parameters and the dtype under test, checked before
    anything crosses (`Example.check_call`, then `validate` on the 0-based values); index
    arrays plus one; parameters as Python int/float/bool (Julia's Int/Float64/Bool)."""
    dtype = example.check_call(kernel.variant, args)
    n_arrays = len(kernel.arrays)
    arrays = {name: _crossing(a) for name, a in zip(kernel.arrays, args[:n_arrays], strict=True)}
    example.validate(arrays)
    for spec in example.specs:
        if spec.index:
            arrays[spec.name] = _one_based(spec.name, arrays[spec.name], kernel.variant)
    params = [p.check(v) for p, v in zip(example.params, args[n_arrays:], strict=True)]
    return arrays, params, np.dtype(dtype)


def _request(kernel: JuliaKernel, op: str, params: list, extra: dict) -> dict:
    """The header of one request to the worker: what to call and how."""
    return {
        "op": op,
        "variant": kernel.variant,
        "file": None if kernel.file is None else str(kernel.file),
        "package": kernel.package,
        "loss": kernel.loss,
        "ad": kernel.ad,
        "gradient": kernel.gradient,
        "names": list(kernel.arrays),
        "wrt": list(kernel.wrt_flags),
        "activity": kernel.activity,
        "runtime_activity": kernel.runtime_activity,
        "params": params,
        "outputs": list(kernel.outputs),
        "hvp": kernel.hvp,
        **extra,
    }


def _loss_of(kernel: JuliaKernel, out: list, dtype: np.dtype):
    """The scalar loss the worker answered, in the dtype under test."""
    if not out or out[0].shape != ():
        raise JuliaError(f"{kernel.variant}: the Julia worker answered no scalar loss")
    value = out[0][()]
    if value.dtype != dtype:
        raise JuliaError(
            f"{kernel.variant}: {kernel.loss} returned a {value.dtype} loss on {dtype} "
            "inputs; a Julia loss returns the element type of its float arrays "
            "(julia/README.md: Sums in Float64, rounded to T once)"
        )
    return value


def _gradient_of(kernel: JuliaKernel, out: list):
    """The gradient arrays the worker answered, as `grad` returns them (one array for one
    `wrt`, else `{name: array}`)."""
    flagged = [a for a in kernel.arrays if a in kernel.wrt]  # enzyme_gradient's order
    if len(out) != len(flagged):
        raise JuliaError(
            f"{kernel.variant}: the Julia worker answered {len(out)} gradient arrays "
            f"for {len(flagged)} ({', '.join(flagged)})"
        )
    by_name = dict(zip(flagged, out, strict=True))
    if len(kernel.wrt) == 1:
        return by_name[kernel.wrt[0]]
    return {a: by_name[a] for a in kernel.wrt}


def _timings(kernel: JuliaKernel, reply: dict) -> dict:
    """`{"forward_s": [...], "grad_s": [...], "clock": ...}` from the worker's answer to
    a "timings" request."""
    times = {}
    for key, field_name in (("forward_s", "forward_ns"), ("grad_s", "gradient_ns")):
        values = reply.get(field_name)
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(t, int) and t >= 0 for t in values)
        ):
            raise JuliaError(f"{kernel.variant}: the Julia worker answered no {field_name}")
        times[key] = [t * 1e-9 for t in values]
    # What measured them: Julia, as the worker says, unless a stand-in worker is
    # configured, whatever it says (its times are never labelled Julia's).
    clock = str(reply.get("clock") or "inside the Julia worker")
    if _julia_client.stand_in():
        clock = "inside the stand-in worker (not Julia)"
    return {**times, "clock": clock}


def julia_functions(example: Any, kernel: JuliaKernel) -> Functions:
    """`Functions(loss, grad, value_and_grad=..., checking=...)` on numpy arrays,
    computed by the Julia worker; `value_and_grad` is one request (what an evaluation
    asks), `((loss, {name: array}), gradient)` for an example that declares outputs;
    `checking`, what a check's float64 runs call, has an `evaluation` beyond the gradient
    where asked (`_julia_evaluation`); no `jvp`. The gradient function carries
    `timed_inside(*args, samples=...)`, the times measured inside the worker (`weanj
    bench`)."""

    def ask(op: str, what: str, args: tuple, more=(), **extra) -> tuple[dict, list, np.dtype]:
        arrays, params, dtype = _arguments(example, kernel, args)
        reply, out = _julia_client.request(
            _request(kernel, op, params, extra),
            [arrays[a] for a in kernel.arrays] + [_crossing(a) for a in more],
            variant=kernel.variant,
            what=what,
        )
        return reply, out, dtype

    def loss(*args):
        _, out, dtype = ask("loss", "loss", args)
        if len(out) != 1:
            raise JuliaError(f"{kernel.variant}: the Julia worker answered no scalar loss")
        return _loss_of(kernel, out, dtype)

    def grad(*args):
        _, out, _ = ask("grad", "gradient", args)
        return _gradient_of(kernel, out)

    def value_and_grad(*args):
        reply, out, dtype = ask("loss_and_grad", "loss and gradient", args)
        loss = _loss_of(kernel, out, dtype)
        if not kernel.outputs:
            return loss, _gradient_of(kernel, out[1:])
        k = len(flagged(kernel))
        outputs = outputs_of(kernel, reply, out[1 + k :])
        return (loss, outputs), _gradient_of(kernel, out[1 : 1 + k])

    def timed_inside(*args, samples: int) -> dict:
        """`{"forward_s": [...], "grad_s": [...], "clock": ...}`: `samples` times of the
        loss and of the gradient measured inside the worker, after a warm-up call."""
        reply, _, _ = ask("timings", "timings", args, samples=int(samples))
        return _timings(kernel, reply)

    grad.timed_inside = timed_inside
    plain = Functions(loss, grad, value_and_grad=value_and_grad)
    # a check's float64 runs: the same calls, and its evaluation beyond the gradient
    read = (lambda out, dtype: _loss_of(kernel, out, dtype), lambda out: _gradient_of(kernel, out))
    beyond = JuliaEvaluation(example, kernel, ask, value_and_grad, read)
    return plain._replace(checking=plain._replace(evaluation=beyond.evaluation))
