"""Watching a long call: a heartbeat on stderr and a time limit.

A variant's first call compiles it, which can take minutes (an unrolled Python loop
under `jax.grad`); without a sign of life that looks like a hang. `Watch.run` runs the
call in a worker thread and, while it lasts longer than `quiet_s`, prints
`  compiling or running EX V … 30 s` every `every_s`; past `timeout_s` it gives up with
`TimeoutError` (the verdict `timeout`) and the caller goes on with the next variant.

Python cannot stop a thread: a call that timed out keeps running in the background
(a daemon thread, ended with the process), and the command says so at the end. Ctrl-C
reaches the main thread, which is only waiting, so an interrupt is never delayed by a
compile.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._errors import say
from ._interrupts import CalledExit

T = TypeVar("T")

# Said with every timeout: where the limit comes from, and how to change it.
LIMIT_SOURCE = " ([tool.weanj] timeout, default 600 s; --timeout S changes it, 0: none)"

# The `time.monotonic()` by which the watched call must end (None: no limit), as seen
# from inside the call: a backend that waits on a child process (the Julia worker) waits
# no longer than this, then stops the child itself, since Python cannot stop a thread.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "weanj_deadline", default=None
)


def deadline() -> float | None:
    """The `time.monotonic()` by which the current watched call must end, or None."""
    return _DEADLINE.get()


@dataclass
class Watch:
    """How long calls may take and how they show progress (`timeout_s` None: no limit)."""

    timeout_s: float | None = None
    quiet_s: float = 5.0
    every_s: float = 15.0
    say: Callable[[str], None] = say
    abandoned: list[str] = field(default_factory=list)  # calls left running after a timeout
    why: str = LIMIT_SOURCE  # where the limit comes from, said in the timeout

    def run(self, fn: Callable[[], T], label: str) -> T:
        """`fn()`, with a heartbeat and the time limit (module docstring)."""
        if self.timeout_s is None and self.quiet_s == float("inf"):
            return fn()
        box: dict[str, Any] = {}
        start = time.monotonic()
        limit = None if self.timeout_s is None else start + self.timeout_s

        def target() -> None:
            _DEADLINE.set(limit)  # this thread's context: the call sees its own deadline
            try:
                box["value"] = fn()
            except BaseException as e:  # handed to the caller's thread below
                box["error"] = e

        worker = threading.Thread(target=target, name=f"weanj {label}", daemon=True)
        worker.start()
        beat = self.quiet_s
        while True:
            elapsed = time.monotonic() - start
            wait = beat - elapsed
            if self.timeout_s is not None:
                wait = min(wait, self.timeout_s - elapsed)
            worker.join(max(0.01, min(wait, 1.0)))
            if not worker.is_alive():
                break
            elapsed = time.monotonic() - start
            if self.timeout_s is not None and elapsed >= self.timeout_s:
                self.abandoned.append(label)
                raise TimeoutError(
                    f"{label} took longer than the time limit of {self.timeout_s:g} s{self.why}"
                )
            if elapsed >= beat:
                self.say(f"  compiling or running {label} … {elapsed:.0f} s")
                beat += self.every_s
        if "error" in box:
            error = box["error"]
            if isinstance(error, SystemExit):
                raise CalledExit(f"{label} called sys.exit({error.code!r})") from error
            raise error
        return box["value"]
