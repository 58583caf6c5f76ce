"""What runs a variant's functions: a backend's runtime (docs/DESIGN.md §3.6).

The pipeline and the commands measure a variant through its runtime, never through a
library of their own choosing: `block(x)` waits for a result (JAX dispatches
asynchronously), `device(kind)` and `placement(device, multi_device)` say where the
inputs go, `to_device(arrays, where, x64=)` puts them there before the clock starts,
`on_device(device)` makes a device the default of the calling thread, `scratch_bytes(fn,
args)` is the scratch memory of a compiled function, `compile_hits()` counts the programs
a compilation cache served, `interleaved(forward, gradient, samples)` times the two, and
`inside(fn, args, samples)` the times the backend measures itself (a Julia worker's).

`Runtime` itself is the host's: plain Python functions (numpy arrays), synchronous, on
the CPU only, with nothing compiled to inspect. A backend whose functions need more
subclasses it and registers an instance (`register`); `runtime_of(variant)` asks the
registered runtimes, newest first, which one runs the variant, and falls back to the
host's. A new backend (PyTorch, say) is its `_backends/` module and its registration:
nothing in the pipeline or the commands changes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from .._errors import UnavailableError


class Runtime:
    """The host's runtime: synchronous Python functions on the CPU (module docstring)."""

    name = "host"
    # whether its functions are compiled programs whose scratch memory can be asked
    # without running them (`weanj bench`'s compiled-only points)
    compiled = False

    def runs(self, variant: Any) -> bool:
        """Whether this runtime runs `variant`'s functions (the host's runs any)."""
        return True

    def runs_on(self, kind: str) -> bool:
        """Whether functions of this runtime can run on devices of `kind` (`cpu`, `gpu`)."""
        return kind == "cpu"

    def device(self, kind: str) -> Any:
        """The device of `kind` the inputs go to (None: they stay where they are), or an
        `UnavailableError` where there is none."""
        if not self.runs_on(kind):
            raise UnavailableError(f"{self.name} functions run on the CPU, not on {kind}")
        return None

    def placement(self, device: Any, multi_device: bool) -> Any:
        """Where a variant's inputs go: `device`, or for a variant spanning several
        devices, spread over them (None: left as they are)."""
        return device

    @contextlib.contextmanager
    def on_device(self, device: Any) -> Iterator[None]:
        """`device` the default of the calling thread for the duration of a block."""
        yield

    def to_device(self, arrays: dict[str, Any], where: Any, *, x64: bool = True) -> dict:
        """`arrays` placed at `where` (a device or a placement from `placement`), in the
        program's x64 configuration; unchanged where `where` is None."""
        return arrays

    def block(self, result: Any) -> Any:
        """`result` once computed (the host computes before it returns)."""
        return result

    def scratch_bytes(self, fn: Callable, args: tuple) -> int | None:
        """The scratch memory of `fn` compiled for `args`, in bytes (inputs and outputs
        excluded); None where nothing is compiled to ask."""
        return None

    def compile_hits(self) -> int:
        """Programs served by a compilation cache so far (a first call that grows it was
        loaded, not compiled)."""
        return 0

    def inside(self, fn: Callable, args: tuple, samples: int) -> dict | None:
        """`{"forward_s": [...], "grad_s": [...], "clock": ...}`: `samples` times the
        backend measured itself, beside the wall times; None where it measures none."""
        return None

    def interleaved(
        self, forward: Callable[[], Any], gradient: Callable[[], Any], samples: int
    ) -> tuple[list[float], list[float]]:
        """Wall times of `samples` forward and gradient calls, alternating (after one
        forward warm-up; the first gradient call was its own), so that the
        gradient/forward ratio of one point sees the same load on a shared machine; each
        result waited for (`block`) before the clock stops."""
        self.block(forward())
        times: tuple[list, list] = ([], [])
        for _ in range(samples):
            for fn, out in ((forward, times[0]), (gradient, times[1])):
                t0 = time.perf_counter()
                self.block(fn())
                out.append(time.perf_counter() - t0)
        return times

    def __repr__(self) -> str:
        return f"<{self.name} runtime>"


HOST = Runtime()
_REGISTERED: list[Runtime] = []


def register(runtime: Runtime) -> Runtime:
    """Make `runtime` known to `runtime_of` (asked before those registered earlier)."""
    if runtime not in _REGISTERED:
        _REGISTERED.insert(0, runtime)
    return runtime


def runtime_of(variant: Any) -> Runtime:
    """The runtime of `variant`'s functions: the newest registered runtime that runs it,
    else the host's."""
    return next((r for r in _REGISTERED if r.runs(variant)), HOST)
