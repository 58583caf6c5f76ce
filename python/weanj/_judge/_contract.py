"""What a variant must return, and what it means when it does not (docs/DESIGN.md, "A
variant's fault").

A variant's `loss` returns one real number of the dtype under test; its `grad` returns one
array per `wrt` array (the array itself for one, a dict or a tuple in `wrt` order for
several), each shaped like its input and of the dtype under test (complex arrays: its
complex counterpart). Anything else is the variant's fault, verdict `error`, named in one
line: never a gradient failure, a precision failure or a traceback. A NaN or Inf in what it
returns is the fault `NaN/Inf`. This module states the rules and gives the verdicts; the
execution layer (`_pipeline`) applies the rules to what a run returned and reports what
happened (an exception, a time-out, the numbers) to `fault_of` and `numbers_fault`, which
turn it into the run's `Fault`: no verdict is decided outside `_judge`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import ExcludedError, InputError, UnavailableError, VariantError, WeanjError
from .._model import COMPLEX_OF, Example, Gradient
from .._model._verdicts import Verdict


@dataclass(frozen=True)
class Fault:
    """Why a subject has no gradient to compare: its verdict, one line saying what, and
    the command that reproduces it."""

    verdict: Verdict  # a file's text read back with `Verdict.parse`
    what: str
    command: str = ""
    # the `Configuration` its evaluation ran in (None: not known, a record read back)
    configuration: Any = field(default=None, compare=False)

    @property
    def line(self) -> str:
        again = f" (reproduce: `{self.command}`)" if self.command else ""
        return f"{self.what}{again}"

    def error(self, after: str = "") -> WeanjError:
        """The exception the Python API and `weanj run` raise for it: `UnavailableError`,
        `ExcludedError` (skipped) or `VariantError` (its line, then `after`)."""
        if self.verdict == Verdict.UNAVAILABLE:
            return UnavailableError(self.what)
        if self.verdict == Verdict.SKIPPED:
            return ExcludedError(self.what)
        what = self.line if self.verdict == Verdict.ERROR else f"{self.verdict}: {self.line}"
        return VariantError(f"{what}{after}")


class NotFinite(Exception):
    """What a run returned holds NaN or Inf (the message says where)."""


def fault_of(happened: BaseException, what: str = "", command: str = "") -> Fault:
    """A run's fault from what happened to it: a time-out (`TimeoutError`) is `timeout`;
    a variant that cannot run here (`UnavailableError`) `unavailable`; one declared not to
    apply, or to these dtypes (`ExcludedError`), `skipped`; NaN/Inf in what it returned
    (`NotFinite`) `NaN/Inf`; anything else it raised or returned against the contract
    (`Breach`, any exception, a worker or process that died) `error`. `what`: the line
    saying what (the exception's text by default); `command`, the command that reproduces
    it, is kept for the variant's own faults only."""
    if isinstance(happened, TimeoutError):
        verdict = Verdict.TIMEOUT
    elif isinstance(happened, ExcludedError):  # (an `UnavailableError` of its own kind)
        verdict = Verdict.SKIPPED
    elif isinstance(happened, UnavailableError):
        verdict = Verdict.UNAVAILABLE
    elif isinstance(happened, NotFinite):
        verdict = Verdict.NONFINITE
    else:
        verdict = Verdict.ERROR
    return Fault(verdict, what or str(happened), command if verdict.fault else "")


def numbers_fault(g: Gradient, command: str = "") -> Fault | None:
    """The fault of a run whose numbers are in, or None: a NaN or Inf in its loss or
    gradient is the run's fault (`NaN/Inf`), saying where."""
    if g.finite:
        return None
    what = f"{g.variant}: {g.nonfinite_text()}"
    return fault_of(NotFinite(what), what, command)


class Breach(Exception):
    """What a run returned breaks the contract; the message is the one line."""


def _dtype_breach(found: np.dtype, expected: str, dtype: str, what: str) -> Breach:
    wider = np.dtype(found).itemsize > np.dtype(expected).itemsize
    why = (
        "something turned on float64 or promoted" if wider else "something casts to float32 inside"
    )
    return Breach(f"returned {found} for {dtype} inputs ({what}): {why}")


def checked_loss(loss: Any, dtype: str) -> float:
    """The loss as a float, or a `Breach`: a scalar real number of the dtype under test."""
    try:
        value = np.asarray(loss)
    except Exception as e:  # an object numpy cannot convert
        raise Breach(f"returned a loss of type {type(loss).__name__}, not a number ({e})") from None
    if value.dtype.kind not in "fiuc" or value.dtype == object:
        raise Breach(f"returned a loss of type {type(loss).__name__}, not a number")
    if value.ndim != 0:
        raise Breach(f"returned a loss of shape {value.shape}, not a scalar")
    if value.dtype.kind == "c":
        raise Breach(f"returned a complex loss ({value.dtype}); a loss is a real number")
    if value.dtype.kind in "iu":
        raise Breach(f"returned an integer loss ({value.dtype}); expected {dtype}")
    if value.dtype.name != dtype:
        raise _dtype_breach(value.dtype, dtype, dtype, "the loss")
    return float(value)


def checked_gradients(
    ex: Example, gradient: Any, dtype: str, shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, np.ndarray]:
    """`{wrt name: array}` from what a `grad` returned, or a `Breach`: the arrays of the
    `wrt` names, each of its input's shape and of the dtype its kind implies."""
    try:
        named = ex.gradients(gradient)
    except InputError as e:
        raise Breach(
            f"returned a gradient of the wrong form: {str(e).split(': ', 1)[-1]}"
        ) from None
    out = {}
    for name, g in named.items():
        try:
            a = np.asarray(g)
        except Exception:
            raise Breach(
                f"returned a gradient of {name} of type {type(g).__name__}, not an array"
            ) from None
        kind = ex.array(name).kind
        expected = COMPLEX_OF[dtype] if kind == "complex" else dtype
        if a.dtype.kind not in "fc":
            raise Breach(f"returned a gradient of {name} of dtype {a.dtype}; expected {expected}")
        if tuple(a.shape) != tuple(shapes[name]):
            raise Breach(
                f"returned a gradient of {name} of shape {tuple(a.shape)}; its input has shape "
                f"{tuple(shapes[name])}"
            )
        if kind == "float" and a.dtype.kind == "c":
            raise Breach(f"returned a complex gradient of {name}, a real array ({a.dtype})")
        if a.dtype.name != expected:
            if kind == "complex" and a.dtype.kind == "f":
                raise Breach(
                    f"returned a real gradient of {name} ({a.dtype}), a complex array: expected "
                    f"{expected}"
                )
            raise _dtype_breach(a.dtype, expected, dtype, f"the gradient of {name}")
        out[name] = a
    return out


def checked_outputs(ex: Example, outputs: Any, dtype: str) -> dict[str, np.ndarray]:
    """`{name: array}` of the outputs the example declares (`Example.outputs`), from what
    a run returned beside its loss, or a `Breach`: exactly the declared names, each a
    non-empty real array of the dtype under test (docs/outputs.md). None: the backend
    computes no outputs (`functions=` of its own): none, and its output cases say so."""
    names = tuple(getattr(ex, "outputs", ()))
    if not names or outputs is None:
        return {}
    found = dict(outputs or {})
    if set(found) != set(names):
        given = ", ".join(map(str, found)) or "none"
        raise Breach(
            f"returned the outputs {given}; {ex.name} declares {', '.join(names)} (its loss "
            "returns (loss, {name: array}), JAX's has_aux convention)"
        )
    out = {}
    for name in names:
        try:
            a = np.asarray(found[name])
        except Exception:
            raise Breach(
                f"returned an output {name} of type {type(found[name]).__name__}"
            ) from None
        if a.dtype.kind != "f" or a.size == 0:
            raise Breach(
                f"returned an output {name} of dtype {a.dtype}, shape {a.shape}; "
                f"an output is a non-empty real array ({dtype})"
            )
        if a.dtype.name != dtype:
            raise _dtype_breach(a.dtype, dtype, dtype, f"the output {name}")
        out[name] = a
    return out


def first_clause(why: str) -> str:
    """The first clause of why something did not run (`no Julia found`), for a headline
    that says it once per cause."""
    for mark in (" (", "; ", ": "):
        why = why.split(mark)[0]
    return why.strip()
