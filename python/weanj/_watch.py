"""Watching long work: a heartbeat on stderr and a time limit.

A variant's first call compiles it, which can take minutes (an unrolled Python loop
under `jax.grad`), and a gradient check calls a loss tens of times; without a sign of
life that looks like a hang. The work is cut into **phases** (`Watch.phase`: an
evaluation, its loss floor, one gradient check, one pair judged), each named by what it
does; one heartbeat thread reads the current phase and, while a phase lasts, says
`  02-gauss-seidel jax-lex: taylor test of theta, direction 1 of 2, step 3 … 20 s`
`quiet_s` after it started and then every `every_s`, counting from the phase's start (a
phase's calls never restart the count). `Watch.run` runs one call in a worker thread,
inside the current phase (or one of its own, `compiling or running LABEL`); past
`timeout_s` it gives up with `TimeoutError` (the verdict `timeout`) and the caller goes
on with the next variant.

Python cannot stop a thread: a call that timed out keeps running in the background
(a daemon thread, ended with the process), and the command says so at the end. Ctrl-C
reaches the main thread, which is only waiting, so an interrupt is never delayed by a
compile.

The silence is counted from the last line the user saw. Where the watch says through a
`Said` (a `say` that notes when it last spoke: `weanj check` hands every line of its
progress, notes and heartbeats to one), that is known: a progress line said by a
listener counts, and an evaluation that finished without a line (a check's progress is
one line per example) does not, so a string of short evaluations (18 of them in
02-gauss-seidel, 21 s) is heard from every `every_s`. Elsewhere the caller says so
(`heard`), and the watch's own start counts as a line.

The clock is injectable (`clock`), and the heartbeat's thread too (`beating=False`: the
caller calls `beat()`, e.g. a test moving a simulated clock), so the cadence is tested
by counting lines per simulated second, never by waiting.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._errors import say
from ._interrupts import CalledExit

T = TypeVar("T")


def _ready(value: T) -> T:
    """`value` computed: a JAX result is waited for (JAX dispatches asynchronously, a call
    returning before its program has run), so that the time limit and the phase cover
    the run itself, not its dispatch alone. Any other value is returned as it is."""
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.block_until_ready(value)
    return value


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


class Said:
    """A `say` (`fn`) that notes when it last said a line (`at`, on `clock`), so that a
    watch that says through it counts silence from what was said, whoever said it."""

    def __init__(self, fn: Callable[[str], None], clock: Callable[[], float] = time.monotonic):
        self.fn, self.clock = fn, clock
        self.at = clock()  # the start of the work counts as a line

    def __call__(self, line: str) -> None:
        self.at = self.clock()
        self.fn(line)


@dataclass
class _Phase:
    text: str
    start: float
    step: str = ""
    beats: int = 0


@dataclass
class Watch:
    """How long calls may take and how work shows progress (`timeout_s` None: no limit).

    `quiet_s`: a phase's first heartbeat comes this long after it started (under the 5 s
    that a user waits before wondering); `every_s`: then at this interval (under 15 s),
    and no longer after the previous heartbeat of any phase. `clock`: the seconds the
    heartbeat counts (default `time.monotonic`); `beating`: a heartbeat thread runs while
    a phase is open (False: `beat()` is the caller's)."""

    timeout_s: float | None = None
    quiet_s: float = 4.0
    every_s: float = 12.0
    say: Callable[[str], None] = say
    abandoned: list[str] = field(default_factory=list)  # calls left running after a timeout
    clock: Callable[[], float] | None = None
    beating: bool = True
    _phases: list[_Phase] = field(default_factory=list, init=False, repr=False)
    _last_line: float = field(default=float("-inf"), init=False, repr=False)
    _lock: Any = field(default_factory=threading.Lock, init=False, repr=False)
    _beating: tuple[threading.Event, threading.Thread] | None = field(
        default=None, init=False, repr=False
    )

    def __post_init__(self) -> None:
        self._last_line = self.now()  # the watch's start counts as a line

    def _said_through(self) -> Said | None:
        """The `Said` the watch speaks through, where it counts on the watch's clock."""
        said = self.say
        if isinstance(said, Said) and (self.clock is None or said.clock == self.clock):
            return said
        return None

    def now(self) -> float:
        # `time.monotonic` looked up at each call, so that a test may move the module's clock
        return self.clock() if self.clock is not None else time.monotonic()

    # --- phases and the heartbeat -------------------------------------------------------

    @contextlib.contextmanager
    def phase(self, text: str) -> Iterator[None]:
        """Within the block, the heartbeat names `text` (module docstring). Phases nest:
        an inner one (an evaluation a pair needs) speaks while it lasts, then the outer
        one again, its count going on from its own start."""
        with self._lock:
            self._phases.append(_Phase(text, self.now()))
            first = len(self._phases) == 1
        if first and self.beating and self.quiet_s != float("inf"):
            self._start_beating()
        try:
            yield
        finally:
            with self._lock:
                self._phases.pop()
                last = not self._phases
                ending, self._beating = (self._beating, None) if last else (None, self._beating)
            if ending is not None:  # the heartbeat ends with the outermost phase
                stop, thread = ending
                stop.set()
                thread.join(1.0)  # at once, unless it is saying a line (a slow stderr)

    def current(self) -> str | None:
        """The text of the innermost phase open now, or None."""
        with self._lock:
            return self._phases[-1].text if self._phases else None

    def step(self, text: str) -> None:
        """Where the current phase is (`direction 1 of 2, step 3`): said with its next
        heartbeat."""
        with self._lock:
            if self._phases:
                self._phases[-1].step = text

    def heard(self) -> None:
        """A progress line was said elsewhere (an evaluation's `[3/29] …`): it counts as
        a heartbeat, so the next one comes `every_s` after it (a phase's first still
        `quiet_s` after its start). Through a `Said`, what was said is known, and this
        is not needed (the caller may not know whether a line was said)."""
        if self._said_through() is not None:
            return
        with self._lock:
            self._last_line = self.now()

    def beat(self) -> str | None:
        """Say the current phase's heartbeat if it is due; **Returns** the line said, or
        None. The heartbeat thread calls it; so may a test, with a simulated clock."""
        with self._lock:
            due = self._next_locked()
            now = self.now()
            if due is None or now < due:
                return None
            p = self._phases[-1]
            p.beats += 1
            self._last_line = now
            line = f"  {p.text}{', ' + p.step if p.step else ''} … {now - p.start:.0f} s"
        self.say(line)
        return line

    def _next_locked(self) -> float | None:
        """When the current phase is next heard from (None: no phase): `quiet_s` after it
        started, and never later than `every_s` after the previous line (a heartbeat, or
        a progress line `heard`), so that short phases in a row are not silent either."""
        if not self._phases:
            return None
        p = self._phases[-1]
        said = self._said_through()
        last = self._last_line if said is None else max(self._last_line, said.at)
        again = last + self.every_s
        if p.beats:
            return again
        first = p.start + self.quiet_s
        return first if again == float("-inf") else min(first, again)

    def _start_beating(self) -> None:
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.is_set():
                with self._lock:
                    due = self._next_locked()
                wait = 1.0 if due is None else due - self.now()
                # wakes at the moment a beat is due (a phase that ended stops it)
                if stop.wait(min(max(wait, 0.01), 1.0)):
                    return
                try:
                    self.beat()
                except Exception:  # noqa: BLE001 - a progress line, never a failure
                    pass

        thread = threading.Thread(target=heartbeat, name="weanj heartbeat", daemon=True)
        with self._lock:
            self._beating = (stop, thread)
        thread.start()

    # --- one watched call -----------------------------------------------------------------

    def run(self, fn: Callable[[], T], label: str) -> T:
        """`fn()` under the time limit, inside the current phase, else a phase of its own
        (`compiling or running LABEL`) (module docstring)."""
        if self.timeout_s is None and self.quiet_s == float("inf"):
            return _ready(fn())
        with self._lock:
            inside = bool(self._phases)
        context = (
            contextlib.nullcontext() if inside else self.phase(f"compiling or running {label}")
        )
        with context:
            return self._in_thread(fn, label)

    def _in_thread(self, fn: Callable[[], T], label: str) -> T:
        box: dict[str, Any] = {}
        start = self.now()
        # the deadline a backend reads (`deadline()`) is in `time.monotonic()`'s seconds
        limit = None if self.timeout_s is None else time.monotonic() + self.timeout_s

        def target() -> None:
            _DEADLINE.set(limit)  # this thread's context: the call sees its own deadline
            try:
                box["value"] = _ready(fn())
            except BaseException as e:  # handed to the caller's thread below
                box["error"] = e

        worker = threading.Thread(target=target, name=f"weanj {label}", daemon=True)
        worker.start()
        while True:
            wait = 1.0
            if self.timeout_s is not None:
                wait = min(wait, self.timeout_s - (self.now() - start))
            worker.join(max(0.01, wait))
            if not worker.is_alive():
                break
            if self.timeout_s is not None and self.now() - start >= self.timeout_s:
                self.abandoned.append(label)
                raise TimeoutError(
                    f"{label} took longer than the time limit of {self.timeout_s:g} s"
                    f"{getattr(self.timeout_s, 'source', '') or LIMIT_SOURCE}"
                )
        if "error" in box:
            error = box["error"]
            if isinstance(error, SystemExit):
                raise CalledExit(f"{label} called sys.exit({error.code!r})") from error
            raise error
        return box["value"]
