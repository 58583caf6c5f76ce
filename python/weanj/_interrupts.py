"""Ctrl-C, in one place.

A Ctrl-C must end a weanj command with exit code 130 and every file whole, never a
traceback or a death by signal. Three dangers shape the rules here:

- **Compiled extensions importing** (numpy, h5py, JAX): a `KeyboardInterrupt` raised
  inside an extension's initialisation becomes an ImportError, or an abort. So while they
  import, an interrupt is only *noted* (`noting`, `deferred`) and handed on once they are
  done.
- **Callbacks that swallow it**: a `KeyboardInterrupt` raised inside a library callback
  (XLA's garbage-collection hook) is lost. So the front ends' handler (`note_and_raise`)
  notes the interrupt as well as raising it, and the command's exit status looks at the
  note (`INTERRUPTED`).
- **A user's module calling `os._exit` or raising `KeyboardInterrupt` on import**:
  `guarded_import` tells a real Ctrl-C apart from a module's own, and turns `os._exit`
  into an exception while example modules import.

SIGTERM (what SLURM and PBS send at a job's time limit, what `kill` sends) is handled as
Ctrl-C is: the same handler, so every evaluation that had finished is kept (its record is
written as it finishes) and one line is said; only the exit status differs (143, 128 +
SIGTERM, as a shell reports a job ended so). `ending()` gives the line and the status.

`weanj/__init__.py` holds interrupts while weanj itself imports (`hold`/`release`);
`_cli._main.entry` (the console script) and the pytest plugin install `note_and_raise`
for both signals (`install_for_command`, `install_for_session`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

# Every Ctrl-C noted in this process since it started (the front ends read it at the end).
INTERRUPTED: list[int] = []
_NOT_SET = object()


class CalledExit(RuntimeError):
    """`sys.exit` or `os._exit` called by a variant or an example module: its error, never
    the end of the command with that call's exit code."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def started_as_program() -> bool:
    """`python -m weanj ...` (while runpy locates `weanj.__main__`, `sys.argv[0]` is
    "-m") or the `weanj` console script, as opposed to `import weanj` in a program."""
    orig = getattr(sys, "orig_argv", [])
    if sys.argv[:1] == ["-m"] and "-m" in orig[:-1]:
        return orig[orig.index("-m") + 1] == "weanj"
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name in ("weanj", "weanj.exe") and main == sys.argv[0]


def hold() -> object:
    """While `weanj` itself imports: note Ctrl-C instead of raising it. **Returns** the
    handler that was in place (or a marker where none can be installed)."""
    if not _main_thread() or signal.getsignal(signal.SIGINT) is None:
        return _NOT_SET  # None: a handler installed outside Python, which cannot be put back
    if started_as_program():  # a SIGTERM too, until `entry` handles both (a script's: its own)
        signal.signal(signal.SIGTERM, lambda signum, frame: INTERRUPTED.append(signum))
    return signal.signal(signal.SIGINT, lambda signum, frame: INTERRUPTED.append(signum))


def release(before: object) -> None:
    """The end of `weanj`'s import: started as the program, the noting handler stays
    until `_cli._main.entry` installs its own (an interrupt while the CLI imports is noted
    too); imported by a script, the handler that was in place comes back, and an interrupt
    noted meanwhile is handed to it now."""
    if before is _NOT_SET or started_as_program():
        return
    signal.signal(signal.SIGINT, before)
    if INTERRUPTED:
        INTERRUPTED.clear()
        if callable(before):  # Python's default raises KeyboardInterrupt: here
            before(signal.SIGINT, None)
        elif before == signal.SIG_DFL:
            signal.raise_signal(signal.SIGINT)


INTERRUPTED_EXIT = 130  # 128 + SIGINT
TERMINATED_EXIT = 143  # 128 + SIGTERM
ENDED_BY = {INTERRUPTED_EXIT: "weanj: interrupted", TERMINATED_EXIT: "weanj: terminated (SIGTERM)"}


def ending() -> tuple[str, int]:
    """The one line and the exit status of a command that an interrupt ended: 143 where
    a SIGTERM was noted, else 130."""
    code = TERMINATED_EXIT if signal.SIGTERM in INTERRUPTED else INTERRUPTED_EXIT
    return ENDED_BY[code], code


def install_for_command() -> None:
    """`note_and_raise` for SIGINT and SIGTERM (the console script, main thread)."""
    if _main_thread():
        signal.signal(signal.SIGINT, note_and_raise)
        signal.signal(signal.SIGTERM, note_and_raise)


def note_and_raise(signum, frame) -> None:
    """The front ends' handler: noted (a callback may swallow the exception), then raised."""
    INTERRUPTED.append(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """SIGINT held back (not lost) while C extensions initialise, then handed to the
    handler that was in place. (Blocking the signal in this thread is not enough: a thread
    that numpy's BLAS started earlier receives it, and Python then runs its handler here
    all the same.)"""
    if not _main_thread():
        yield
        return
    noted: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if noted and callable(previous):
        previous(signal.SIGINT, None)
    elif noted and previous == signal.SIG_DFL:
        raise KeyboardInterrupt


def heavy_imports() -> None:
    """h5py and JAX, imported with Ctrl-C deferred (an interrupt there can abort)."""
    with deferred():
        import h5py  # noqa: F401
        import jax  # noqa: F401


@contextlib.contextmanager
def guarded_import() -> Iterator[threading.Event]:
    """While an example module imports: `os._exit` raises `CalledExit` instead of ending
    the process, and the event yielded is set by a real Ctrl-C, so that a module raising
    `KeyboardInterrupt` itself is told apart from the user's interrupt."""
    interrupted = threading.Event()
    real_exit = os._exit

    def refuse_exit(code=0):
        raise CalledExit(f"called os._exit({code!r})")

    def on_sigint(signum, frame):
        interrupted.set()
        raise KeyboardInterrupt

    main = _main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main else None
    os._exit = refuse_exit
    try:
        yield interrupted
    finally:
        os._exit = real_exit
        if main:
            signal.signal(signal.SIGINT, previous)


def refuse_exit_calls() -> Callable[[int], None]:
    """For the whole command: a variant calling `os._exit(0)` would end `weanj check`
    with 0, having judged nothing; it raises `CalledExit` (that variant's error) instead.
    A forked child ends as it asks. **Returns** the real `os._exit`."""
    real_exit, pid = os._exit, os.getpid()

    def refuse_exit(code=0):
        if os.getpid() != pid:
            real_exit(code)
        raise CalledExit(f"os._exit({code!r}) was called")

    os._exit = refuse_exit
    return real_exit


def swallowed_interrupts_are_noted() -> None:
    """A `KeyboardInterrupt` that a callback swallowed is a Ctrl-C already noted: it ends
    the command with 130, without "Exception ignored" and a traceback."""
    default = sys.unraisablehook

    def unraisable(u):
        if not isinstance(u.exc_value, KeyboardInterrupt):
            default(u)

    sys.unraisablehook = unraisable


def install_for_session() -> None:
    """`note_and_raise` as the SIGINT and SIGTERM handler (main thread only: the pytest
    plugin; a SIGTERM ends the session as pytest's "interrupted", as Ctrl-C does)."""
    if _main_thread():
        signal.signal(signal.SIGINT, note_and_raise)
        signal.signal(signal.SIGTERM, note_and_raise)


def ignore_from_now() -> None:
    """The judging is over and its outcome decided: a Ctrl-C while the summary prints and
    the interpreter ends would only turn it into a death by SIGINT."""
    if _main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the process's own again
