"""An evaluation on a device: the third dimension of the matrix, after the variant and the
dtype (docs/DESIGN.md §8, "Devices"; docs/devices.md).

An evaluation is (variant, dtype, device). Every call of it runs inside its functions'
`placed(kind, precision)` (a JAX program's: `_backends._placement`, handed over with the
functions, so that the pipeline imports no backend): on that device, under the matmul
precision in effect. A variant whose functions have no placement (a Julia or plain Python
variant) has no device run: it is the CPU reference the device runs are judged against,
said once (`CPU_ONLY`), never a failure. An error the device's platform cannot help (XLA's
`UNIMPLEMENTED`, `_judge._platform`) is `unavailable on <kind>`, not the port's `error`.

Labels: `jax-lex@tpu`, `jax-lex@float32@tpu`; the precision-or-bug re-run (`highest`)
`jax-lex@float32@tpu@highest`.
"""

from __future__ import annotations

from typing import Any

from ..._errors import UnavailableError
from ..._judge._platform import past_the_limit, platform_limit, unavailable_on
from ..._model import DeviceProvenance, Place, Variant, run_label

CPU = "cpu"
HIGHEST = "highest"
# what a non-JAX variant's device run is (one note per example, never a failure)
CPU_ONLY = "runs on the CPU only: it is the CPU reference the device runs are judged against"

# the unit roundoff of the precision a reduced matmul computes in (`Place.precision`): what
# the device's precision level is measured with (the perturbation of `_evaluate._noise`)
_PRECISION_EPS = {  # unit roundoffs (half an ulp): what one rounding moves a value by
    "BF16_BF16_F32_X3": 2.0**-17,
    "TF32_TF32_F32_X3": 2.0**-21,
    "bfloat16": 2.0**-8,
    "BF16_BF16_F32": 2.0**-8,
    "BF16_BF16_BF16": 2.0**-8,
    "tensorfloat32": 2.0**-11,
    "TF32_TF32_F32": 2.0**-11,
    "high": 2.0**-11,
    "default": 2.0**-8,  # a TPU's default, the coarsest any device has by default
}  # searched in order in the precision's name: the longer names first


def device_label(label: str, device: str = CPU, precision: str | None = None) -> str:
    """`jax-lex@float32` on `tpu` → `jax-lex@float32@tpu` (`@highest` for the re-run)."""
    out = label if device == CPU else f"{label}@{device}"
    return f"{out}@{precision}" if precision else out


def label_of(
    variant: Variant | str, dtype: str, device: str = CPU, precision: str | None = None
) -> str:
    """How every view names a run: `jax-lex`, `jax-lex@float32`, `jax-lex@float32@tpu`
    (`Configuration.label`; `@highest` for the precision-or-bug re-run)."""
    name = variant if isinstance(variant, str) else variant.name
    return device_label(run_label(name, dtype), device, precision)


def precision_eps(device: DeviceProvenance | None) -> float | None:
    """The rounding unit of the reduced matmul precision a device run computed under, or
    None where the run computes at its dtype's precision (a CPU run's `device` is None)."""
    if device is None or not device.precision_reduced:
        return None
    for key, value in _PRECISION_EPS.items():
        if key in device.precision:
            return value
    return _PRECISION_EPS["default"]


def on_device(fns: Any, device: str, precision: str | None = None) -> tuple[Any, Place | None]:
    """`(functions, place)`: `fns` with each call run on `device` under `precision` (the
    place entered around the call itself: the watch calls it on a thread of its own, and
    JAX's default device is a thread's setting), and the device's place (None for the
    CPU where the functions have no placement). A device run of functions that run on
    the CPU only raises `UnavailableError(CPU_ONLY)`; an absent device, its own."""
    placed = getattr(fns, "placed", None)
    if placed is None:
        if device != CPU:
            raise UnavailableError(CPU_ONLY)
        return fns, None
    with placed(device, precision) as place:  # resolves the device now: absent, it raises
        pass

    def at(fn):
        if fn is None:
            return None

        def run(*args, **kwargs):
            with placed(device, precision):
                return fn(*args, **kwargs)

        return run

    return fns._replace(**{k: at(getattr(fns, k)) for k in _CALLS}), place


_CALLS = ("loss", "grad", "jvp", "value_and_grad", "evaluation_loss", "evaluation")


def platform_fault_line(e: BaseException, device: str, place: Place | None) -> str | None:
    """`unavailable on tpu: pmax of f64 (...)` where `e` is a platform limit of the
    device (`_judge._platform`), else None: the port's own error."""
    if device == CPU:
        return None
    text = f"{type(e).__name__}: {e}"
    what = past_the_limit(device, text) if isinstance(e, TimeoutError) else None
    what = what or platform_limit(text, device)
    if what is None:
        return None
    return unavailable_on(device, what, standin=place is not None and place.standin)


def matmul_free(fns: Any, args: tuple, device: str, precision: str | None) -> bool:
    """Whether the gradient's program has no matrix product (the precision in effect
    then changes nothing: its rounding level is the dtype's)."""
    placed = getattr(fns, "placed", None)
    has_matmul = getattr(placed, "has_matmul", None)
    if has_matmul is None:
        return False
    with placed(device, precision):
        return not has_matmul(fns.grad, args)


def describe(g: Any, place: Place | None, config: Any, rerun: str | None) -> None:
    """A device run's provenance in its gradient: the kind (what its label carries; `@highest`
    for the precision-or-bug re-run `rerun`), the device kind string, its software, and the
    matmul precision in effect (the evaluation's `Configuration.precision`: the program's
    `jax_default_matmul_precision`, or the re-run's; None: the device's default)."""
    if place is None or config.device == CPU:
        return
    precision, reduced = place.precision(config.dtype, config.precision)
    g.device = DeviceProvenance(
        config.device if rerun is None else f"{config.device}@{rerun}",
        place.description,
        precision,
        bool(reduced),
        place.software,
        bool(place.standin),
    )


def identity(variant: Any, device: str, dtype: str) -> dict[str, Any] | None:
    """What an evaluation record of a run on `device` is keyed by beside its
    configuration (`_records`): the device's kind as JAX describes it, its software (the
    platform's version) and whether it is the stand-in; None where the variant cannot run
    there (its backend missing, no such device, functions that run on the CPU only)."""
    try:
        _, place = on_device(variant.built, device)
    except Exception:  # noqa: BLE001 - the evaluation itself says what the device lacks
        return None
    if place is None:
        return None
    return _identity(place.description, place.software, place.standin)


def identity_of(device: DeviceProvenance) -> dict[str, Any]:
    """The same identity, of a device run that has finished (its gradient's `device`, as
    `describe` wrote it)."""
    return _identity(device.description, device.software, device.standin)


def _identity(kind: Any, software: Any, standin: Any) -> dict[str, Any]:
    return {
        "device_kind": str(kind),
        "device_software": str(software or ""),
        "standin": bool(standin),
    }
