"""Evaluating a variant: its loss and gradient on some inputs, under the time limit,
held to the contract of what a variant returns (`_judge._contract`).

`evaluate` never raises for what the variant does: it returns the `Gradient` (with its
provenance, the seconds the first calls took and the rounding level of the computation)
or the variant's `Fault`, with one line saying what and the command that reproduces it.
Only weanj's own mistakes raise.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from ..._errors import ExcludedError, UnavailableError, WeanjError
from ..._judge._contract import (
    Breach,
    Fault,
    checked_gradients,
    checked_outputs,
    fault_of,
    numbers_fault,
)
from ..._model import Configuration, Gradient, Inputs, Variant
from ..._model._cost import Cost
from ..._watch import Watch
from ._beyond import beyond_into
from ._calls import compiling_into, counter, evaluation_call, functions_of
from ._levels import measure_levels
from ._on_device import describe as describe_device
from ._on_device import label_of, matmul_free, on_device, platform_fault_line
from ._x64_faults import x64_fault_line


def configuration_of(
    found: Any, variant: Variant | None, dtype: str, device: str = "cpu"
) -> Configuration | None:
    """The configuration a subject was computed in: its evaluation's (`evaluate`, a
    record's recall), else (a file, a skip decided before any run) its variant's now."""
    config = getattr(found, "configuration", None)
    if config is None and variant is not None:
        return variant.configuration(dtype, device)
    return config


def _word(value: Any) -> str:
    """A parameter value as the command line spells it."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def reproduce_command(
    variant: Variant, inputs: Inputs, dtype: str, shown_path=str, device: str = "cpu"
) -> str:
    """The `weanj run` that recomputes this evaluation (the shared inputs, or the inputs
    file it was read from, with the parameters that differ)."""
    words = ["weanj", "run", variant.example.name, variant.name]
    if dtype != "float64":
        words += ["--dtype", dtype]
    if device != "cpu":
        words += ["--device", device]
    if not inputs.shared:
        if inputs.path is not None:
            words += ["--inputs", shown_path(inputs.path)]
        stored = dict(inputs.attrs)
        for name, value in inputs.params.items():
            if stored.get(name) != value or inputs.path is None:
                words += [f"--{name}", _word(value)]
    return " ".join(words)


def first_line(e: BaseException) -> str:
    """An exception as one line: weanj's own message, else its type and first line."""
    text = (str(e).strip().splitlines() or [""])[0][:300]
    if isinstance(e, WeanjError):
        return text or type(e).__name__
    return f"raised {type(e).__name__}" + (f": {text}" if text else "")


def _library_folders() -> tuple[str, ...]:
    """Folders of code that is not the project's: the standard library, installed
    packages, weanj itself."""
    import sysconfig
    from pathlib import Path

    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(str(Path(__file__).resolve().parents[2]))  # weanj's package
    return tuple(str(Path(p).resolve()) + os.sep for p in paths if p)


def raised_at(e: BaseException) -> str:
    """` (at kernels/heat.py:17)`: the innermost frame of the exception's traceback in the
    project's own code (not the standard library, an installed package or weanj), its
    path relative to the current folder where it lies inside; "" where there is none."""
    from pathlib import Path

    skip = _library_folders()
    chain: list[BaseException] = []
    while e is not None and e not in chain:  # the cause first: `sys.exit` inside a kernel
        chain.insert(0, e)
        e = e.__cause__ or e.__context__
    found = None
    for exc in chain:
        tb = exc.__traceback__
        while tb is not None:
            name = tb.tb_frame.f_code.co_filename
            if not name.startswith("<"):
                path = str(Path(name).resolve())
                if not path.startswith(skip):
                    found = (path, tb.tb_lineno)
            tb = tb.tb_next
        if found is not None:
            break
    if found is None:
        return ""
    path, line = found
    try:
        path = str(Path(path).relative_to(Path.cwd().resolve()))
    except ValueError:
        pass
    return f" (at {path}:{line})"


def evaluate(
    variant: Variant,
    inputs: Inputs,
    dtype: str,
    watch: Watch,
    *,
    shown_path=str,
    device: str = "cpu",
    precision: str | None = None,
    checking: bool = False,
    levels: bool = True,
    tangents: dict | None = None,
    second: dict | None = None,
) -> Gradient | Fault:
    """The loss and gradient of `variant` on `inputs` in `dtype`, or its fault, with the
    `Configuration` it ran in: on `device`, with matmul `precision` (None: the one in
    effect). `checking`: gradient checks follow (the backend's `for_checks`). `levels`:
    measure the rounding level now, not when a comparison needs it (`measure_levels`).
    `tangents`: each wrt array's jvp direction (a check's float64 CPU run), whose
    forward-mode derivatives the evaluation's call computes where its backend can
    (`Gradient.forward`); `second`: each wrt array's second direction, asking for the
    Hessian-vector products (`Gradient.hvp`). The programs it compiles are counted in its
    `cost`."""
    ex = variant.example
    config = variant.configuration(dtype, device)
    if precision is not None:
        config = dataclasses.replace(config, precision=precision)
    command = reproduce_command(variant, inputs, dtype, shown_path, device)

    def fault(happened: BaseException, what: str = "") -> Fault:  # the judge's verdict of it
        return dataclasses.replace(fault_of(happened, what, command), configuration=config)

    refused = _refusal(variant, inputs, dtype)
    if refused is not None:
        return fault(refused)
    args = inputs.args(dtype)
    where = f"{ex.name} {label_of(variant, dtype, device, precision)}"
    returned: dict[str, Any] = {}
    place = None
    cost = Cost()
    try:
        with watch.phase(f"compiling or running {where}"):
            built = variant.built  # builds on first use: an optional backend may refuse here
            fns, place = on_device(
                functions_of(built, dtype, device, precision, checking), device, precision
            )
            t0, spent = time.perf_counter(), counter(cost, "evaluation")
            with compiling_into(cost):
                found = evaluation_call(
                    fns, args, watch, where, dtype, returned, spent, tangents, second, ex
                )
            (loss, raw_grad, directional, beyond), seconds = found, time.perf_counter() - t0
        gradients = checked_gradients(ex, raw_grad, dtype, inputs.wrt_shapes)
        outputs = checked_outputs(ex, returned.get("the outputs"), dtype)
    except Exception as e:  # the variant's own exception: its error, never the command's end
        x64 = x64_fault_line(variant, config, returned, inputs) if isinstance(e, Breach) else ""
        return _call_fault(e, fault, variant, x64, device, place)
    g = _gradient(variant, inputs, config, gradients, (loss, seconds, cost, directional))
    beyond_into(g, outputs, beyond)
    describe_device(g, place, config, precision)
    nonfinite = numbers_fault(g, command)  # the numbers, judged
    if nonfinite is not None:
        return dataclasses.replace(nonfinite, configuration=config)
    _no_matmul(g, built, args, device, precision)
    if levels:
        measure_levels(g, inputs, watch, device=device, precision=precision, checking=checking)
    return g


def _call_fault(e: Exception, fault, variant: Variant, x64: str, device: str, place) -> Fault:
    """The fault of an evaluation's call that raised `e`: a time-out (a platform limit on
    a device), a variant that cannot run or does not apply, a breach of the contract (the
    x64 configuration's line `x64` where it explains it), or the variant's own error (what
    the device cannot run, where it is that)."""
    if isinstance(e, TimeoutError):
        limit = platform_fault_line(e, device, place)  # on a device: a platform limit
        return fault(e) if limit is None else fault(UnavailableError(limit), limit)
    if isinstance(e, (ExcludedError, UnavailableError)):
        return fault(e, first_line(e))
    if isinstance(e, Breach):
        return fault(e, x64 or f"{variant.name} {e}")
    limit = platform_fault_line(e, device, place)  # or what the device cannot run
    if limit is not None:
        return fault(UnavailableError(limit), limit)
    return fault(e, f"{variant.name} {first_line(e)}{raised_at(e)}")


def _no_matmul(g: Gradient, built, args, device: str, precision: str | None) -> None:
    """A reduced matmul precision said of a program with no matrix product: nothing in it
    rounds coarser, and `g` says so."""
    if g.device is not None and g.device.precision_reduced:
        if matmul_free(built, args, device, precision):
            g.device = dataclasses.replace(
                g.device,
                precision_reduced=False,
                precision=f"{g.device.precision} (no matrix product in this program)",
            )


def _refusal(variant: Variant, inputs: Inputs, dtype: str) -> Exception | None:
    """Why `variant` is not run on `inputs` in `dtype` (unavailable, or excluded by its
    dtypes or its own rule), before anything is built; None where it runs."""
    why = variant.unavailable_reason()
    if why is not None:
        return UnavailableError(why)
    if dtype not in variant.dtypes:
        return ExcludedError(f"{variant.name} supports {', '.join(variant.dtypes)} only")
    excluded = variant.excluded(inputs.arrays, inputs.params)
    if excluded is not None:
        return ExcludedError(f"{variant.name} does not apply to these inputs: {excluded}")
    return None


def _gradient(variant: Variant, inputs: Inputs, config: Configuration, gradients, call) -> Gradient:
    """The evaluation's `Gradient` from its call's `(loss, seconds, cost, directional)`:
    its rounding levels not measured yet (gathered where a comparison needs them), its
    x64 configuration described, each array's forward-mode derivative where computed."""
    loss, seconds, cost, directional = call
    dtype = config.dtype
    g = Gradient(
        variant.example,
        variant.name,
        variant.family,
        dtype,
        gradients,
        loss,
        dict(inputs.params),
        inputs.digest,
        inputs.key(dtype),
        backend=variant.backend,
        backend_version=variant.backend_version(),
        source="run",
        seconds=seconds,
        of=variant,
        configuration=config,
        evaluated=True,
        levels_measured=False,
        cost=cost,
    )
    if directional is not None:
        g.forward = {name: float(np.asarray(value)) for name, value in directional.items()}
    if config.x64 is not None:
        g.x64 = config.x64.describe()  # stored with the gradient
    return g
