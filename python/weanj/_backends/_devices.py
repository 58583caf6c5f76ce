"""The devices that multi-device (sharded) variants span.

A sharded variant builds its device mesh when it is traced, from this module's selection:
by default every device of the evaluation's platform (`_placement.placed`: the CPU's for a
CPU run on a TPU machine, the stand-in alone for a stand-in run), else of JAX's default
backend (`jax.devices()`: the CPU, or every GPU of the host); `set_devices(N)` (or `weanj
bench --devices N`) restricts it to the first N, optionally of another platform. On a CPU,
more devices are simulated with `XLA_FLAGS=--xla_force_host_platform_device_count=N`, set
before JAX starts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from .._errors import InputError, UnavailableError
from . import _standin

# None: all devices of the default backend; else (count or devices, platform or None).
_selection: tuple | None = None


def _available(platform: str | None) -> list:
    import jax

    if platform is None:  # an evaluation's device (`placed`) decides, else JAX's default
        from jax._src import config

        current = config.default_device.value
        if current is not None and not isinstance(current, str):
            if _standin.is_standin(current):
                return [current]  # the stand-in is one device
            platform = current.platform
    try:
        return list(jax.devices(platform) if platform else jax.devices())
    except RuntimeError:
        raise UnavailableError(f"no {platform} device visible to JAX here") from None


def chosen_devices(selection: tuple | None = None) -> list:
    """The devices of a selection (default: the current one)."""
    choice, platform = (selection if selection is not None else _selection) or (None, None)
    available = _available(platform)
    if choice is None:
        return available
    if isinstance(choice, int):
        if not 1 <= choice <= len(available):
            kind = available[0].platform if available else platform
            raise InputError(
                f"asked for {choice} devices; JAX sees {len(available)} {kind} device(s)"
                " (simulate more CPU devices with"
                " XLA_FLAGS=--xla_force_host_platform_device_count=N before JAX starts)"
            )
        return available[:choice]
    return list(choice)


def set_devices(devices: int | Sequence | None = None, platform: str | None = None):
    """Run multi-device variants on `devices` from now on: None for all devices of
    `platform` (default: JAX's default backend), an int N for the first N, or a sequence
    of devices.

    The mesh is read when a function is traced, and `jax.jit` caches traces without
    knowing it, so a change clears JAX's compilation caches (all of them): the next call
    of any jitted function retraces.

    **Returns:** the previous selection, to restore it with `set_devices(*previous)`.
    """
    import jax

    from .._arguments import count

    global _selection
    if not isinstance(devices, Sequence) or isinstance(devices, str):
        count(devices, "devices", "set_devices", minimum=1)  # None, or how many
    if platform is not None and not isinstance(platform, str):
        raise InputError(f"set_devices: platform must be a platform's name (str), got {platform!r}")
    choice = tuple(devices) if isinstance(devices, Sequence) else devices
    selection = None if choice is None and platform is None else (choice, platform)
    chosen_devices(selection)  # fail now, not at the next trace
    previous, _selection = _selection, selection
    if selection != previous:
        jax.clear_caches()
    return previous or (None, None)


@contextlib.contextmanager
def using_devices(devices: int | Sequence | None, platform: str | None = None) -> Iterator[None]:
    """`set_devices(devices, platform)` for the duration of a `with` block."""
    previous = set_devices(devices, platform)
    try:
        yield
    finally:
        set_devices(*previous)


def device_count() -> int:
    """How many devices the multi-device variants span now."""
    return len(chosen_devices())
