"""Where an evaluation runs: the device of kind `cpu`, `gpu` or `tpu`, and the matmul
precision in effect there (docs/DESIGN.md §3.6 and docs/devices.md).

`placed(kind, precision)` is the context every JAX call of an evaluation runs in: JAX's
default device set to that device (`jax.default_device`, so inputs go there and programs
compile for it; the sharded variants' mesh follows it, `_devices`), and, where asked (the
precision-or-bug re-run: `"highest"`) or where the device's default is emulated (the
stand-in's), `jax.default_matmul_precision`. Both are in JAX's jit key: a CPU run is never
served a program compiled for another device or precision. The CPU is placed too: on a TPU
machine JAX's default device is the TPU, and weanj's default is the CPU whatever it is.

`place_of(kind)` says what the device is (its kind string, its software, whether it is
the stand-in, `_standin`); an absent device is an `UnavailableError` naming it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .._environment import device_software
from .._errors import UnavailableError
from .._vocabulary import ACCELERATORS, DEVICES
from . import _standin

# what the device computes a float32 matrix product with when the program sets no precision
_DEFAULTS = {
    "cpu": "default (full float32 on the CPU)",
    "gpu": "default (tensorfloat32 passes for float32 matmuls where the GPU has them)",
    "tpu": "default (one bfloat16 pass for float32 matmuls on a TPU)",
}
# precisions that compute float32 products in full float32
_FULL = ("highest", "float32", "F32_F32_F32", "F64_F64_F64")
_HINTS = {
    "gpu": "on a machine with an NVIDIA GPU: pip install -U 'jax[cuda12]'",
    "tpu": "on a TPU VM: pip install -U 'jax[tpu]'",
}


@dataclass(frozen=True)
class JaxPlace:
    """A device an evaluation runs on (module docstring): a `_model.Place`."""

    kind: str  # cpu, gpu, tpu
    device: Any  # the JAX device
    description: str  # "TPU v5 lite", "stand-in tpu (CPU device 1)", "cpu"
    software: str  # "libtpu 0.0.42.1", "CUDA ...", ""
    standin: bool = False

    @property
    def label(self) -> str:
        """`tpu`, or `tpu (stand-in)`: how every line names where a run ran."""
        return f"{self.kind} (stand-in)" if self.standin else self.kind

    def precision(self, dtype: str, precision: str | None = None) -> tuple[str, bool]:
        """The matmul precision in effect for a `dtype` run here (`precision`: the
        evaluation's, `Configuration.precision`: the program's or the re-run's; None: the
        device's default), and whether it is below full precision (what the
        precision-or-bug re-run asks)."""
        asked = precision
        if dtype != "float32":  # the setting applies to 32-bit matmuls only
            return f"{asked or 'default'} ({dtype} products in full)", False
        if asked is not None:
            return str(asked), self.kind != "cpu" and str(asked) not in _FULL
        if self.standin:
            return f"default of the stand-in {self.kind}: {_standin.DEFAULT_PRECISION}", True
        return _DEFAULTS[self.kind], self.kind != "cpu"


_PLACES: dict[str, JaxPlace] = {}


def place_of(kind: str) -> JaxPlace:
    """The device of `kind` an evaluation runs on: the stand-in where it plays that kind
    (`$WEANJ_STANDIN_DEVICE`), else JAX's first device of that platform; none is an
    `UnavailableError` saying so."""
    if kind not in DEVICES:
        raise UnavailableError(f"unknown device kind {kind!r} (one of {', '.join(DEVICES)})")
    if kind not in _PLACES:
        import jax

        if kind != "cpu" and _standin.standin_kind() == kind:
            dev = _standin.standin_device()
            _PLACES[kind] = JaxPlace(kind, dev, f"stand-in {kind} (CPU device 1)", "", True)
        else:
            try:  # this process's own: under jax.distributed, jax.devices() lists all
                found = jax.local_devices(backend=kind)
            except RuntimeError:  # JAX raises when no backend of that kind is installed
                found = []
            if not found:
                hint = _HINTS.get(kind, "")
                raise UnavailableError(
                    f"no {kind.upper()} visible to JAX here (jax.devices({kind!r}) is empty)"
                    + (f"; {hint}" if hint else "")
                )
            dev = found[0]
            _PLACES[kind] = JaxPlace(kind, dev, str(dev.device_kind), device_software(kind))
    return _PLACES[kind]


def present(kind: str, run: str | None = None) -> None:
    """Nothing where the device `kind` is here; else the command's one line (an
    `UnavailableError`, exit 2) naming the option (or the `run` whose name names it,
    `jax-a@tpu`), before any work: a device named on the command line (`--device`) or in
    a call (`device=`) is never quietly replaced by the CPU."""
    if kind != "cpu":
        try:
            place_of(kind)
        except UnavailableError as e:
            head = f"{run} cannot run here" if run else f"--device {kind}"
            raise UnavailableError(f"{head}: {e}") from None


@contextlib.contextmanager
def placed(kind: str, precision: str | None = None) -> Iterator[JaxPlace]:
    """Every JAX call of the block on the device of `kind`, with matmul precision
    `precision` (None: the program's, else the device's default); yields its `Place`."""
    import jax

    place = place_of(kind)
    with contextlib.ExitStack() as stack:
        stack.enter_context(jax.default_device(place.device))
        if precision is not None:
            stack.enter_context(jax.default_matmul_precision(precision))
        elif place.standin and jax.config.jax_default_matmul_precision is None:
            stack.enter_context(jax.default_matmul_precision(_standin.DEFAULT_PRECISION))
        yield place


def has_matmul(fn: Any, args: tuple) -> bool:
    """Whether the program of `fn` on `args` has a matrix product or a convolution (what
    the matmul precision applies to), read from its lowered text; True where it cannot be
    read (the precision is then assumed to matter)."""
    try:
        text = fn.lower(*args).as_text()
    except Exception:
        return True
    return "dot_general" in text or "convolution" in text


placed.has_matmul = has_matmul  # type: ignore[attr-defined]


def present_accelerators() -> list[tuple[str, bool]]:
    """`[(kind, stand-in)]`: the accelerators JAX sees here (`tpu`, `gpu`), and the
    stand-in's kind where it plays one: what `weanj check`'s device line names."""
    import jax

    out = []
    for kind in ACCELERATORS:
        if _standin.standin_kind() == kind:
            out.append((kind, True))
            continue
        try:
            if jax.devices(kind):
                out.append((kind, False))
        except RuntimeError:  # no backend of that kind installed
            pass
    return out


def device_line(devices: tuple[str, ...], absent: dict[str, str] | None = None) -> str:
    """`device: cpu (a TPU is present: --device tpu judges it)`: where the runs were
    placed, said once by every live run (`absent`: the devices asked for and not here)."""
    if absent:
        return device_line(devices) + "; not run: " + ", ".join(absent)
    if devices == ("cpu",):
        present = present_accelerators()
        if not present:
            return "device: cpu"
        kind, standin = present[0]
        what = f"a {'stand-in ' if standin else ''}{kind.upper()}"
        return f"device: cpu ({what} is present: --device {kind} judges it)"
    parts = []
    for kind in devices:
        try:
            place = place_of(kind)
            parts.append(f"{kind} ({place.description})" if kind != "cpu" else "cpu")
        except UnavailableError as e:
            parts.append(f"{kind} (unavailable: {e})")
    return "devices: " + ", ".join(parts)


def device_environment(env: dict, kind: str) -> dict:
    """An environment block (`_environment.environment`) of records measured on a device of
    `kind`, with the device kind string and its software as its place has them (a stand-in
    says so: `standin`)."""
    if kind != "cpu":
        place = place_of(kind)
        env["device_kind"] = place.description
        if place.software:
            env["device_software"] = place.software
        if place.standin:
            env["standin"] = True
    return env


def is_standin(kind: str) -> bool:
    """Whether runs on `kind` go to the stand-in (`_standin`), not to a real device."""
    return kind != "cpu" and _standin.standin_kind() == kind
