"""`weanj`: parse, run one command, and turn every user-caused error into one line.

Every mistake (unknown name, bad file, bad array, missing backend) is one line on
stderr (a list, where there is one, on the lines below it) and exit code 2, never a
traceback; a judgement that fails exits with 1; an interrupt with 130.

Interrupts. Ctrl-C must end the process with 130, never by a signal: `entry` (the
console script and `python -m weanj`) therefore holds SIGINT back while the compiled
extensions are imported (an interrupt inside `import jax` can abort the process; it is
noted, and raised just after as a KeyboardInterrupt), and leaves with
`os._exit` once the output is flushed, so that no interpreter teardown runs while
XLA's or a timed-out compile's threads still work (where a segfault happened after
"weanj: interrupted"). Every file weanj writes is written atomically, so nothing is
left half-written whatever the moment of the interrupt. An interrupt while `weanj` itself
imports (numpy, h5py) is noted by `weanj/__init__.py` and ends here with 130, and one
whose KeyboardInterrupt a library callback swallowed still ends with 130. Only a Ctrl-C
in the interpreter's own first milliseconds (site, runpy), before any line of weanj runs,
gets Python's default: the process ends by SIGINT, which a shell shows as 130 too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from .._errors import WeanjError, error_text

# Commands that never need JAX (they start at once and import none of it).
LIGHT = {"new"}


@contextlib.contextmanager
def _sigint_deferred():
    """SIGINT held back (not lost) while C extensions initialise: a KeyboardInterrupt
    raised inside an extension's initialisation is an ImportError, or an abort. So the
    interrupt is only noted meanwhile, and handed to the usual handler once they are done.
    (Blocking the signal in this thread is not enough: a thread that numpy's BLAS started
    earlier receives it, and Python then runs its handler here all the same.)"""
    if threading.current_thread() is not threading.main_thread():
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


def _heavy_imports() -> None:
    with _sigint_deferred():
        import h5py  # noqa: F401
        import jax  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    try:
        from ._parser import parse

        args, words = parse(argv)
        if args.command not in LIGHT:
            _heavy_imports()
        from ._commands import COMMANDS

        return int(COMMANDS[args.command](args, words) or 0)
    except WeanjError as e:
        print(error_text(str(e)), file=sys.stderr)
        return e.exit_code
    except OSError as e:  # a file system refusal at the edge: one line, not a traceback
        where = f" ({e.filename})" if e.filename else ""
        print(error_text(f"{e.strerror or e}{where}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("weanj: interrupted", file=sys.stderr)
        return 130


def entry() -> None:
    """The console script: `main`, then a clean, signal-free exit (module docstring)."""
    from .. import _INTERRUPTED
    from .._watch import CalledExit

    def on_sigint(signum, frame):
        # Noted as well as raised: a KeyboardInterrupt raised inside a library's callback
        # (XLA's garbage-collection hook) is swallowed, and the exit code must still say 130.
        _INTERRUPTED.append(signum)
        raise KeyboardInterrupt

    real_exit, pid = os._exit, os.getpid()

    def refuse_exit(code=0):
        # A variant calling os._exit(0) would end `weanj check` with 0, having judged
        # nothing: it is that variant's error instead. A forked child ends as it asks.
        if os.getpid() != pid:
            real_exit(code)
        raise CalledExit(f"os._exit({code!r}) was called")

    os._exit = refuse_exit
    default_unraisable = sys.unraisablehook

    def unraisable(u):
        # A KeyboardInterrupt that a callback swallowed is this Ctrl-C, already noted: it
        # ends the command with 130, without "Exception ignored" and a traceback.
        if not isinstance(u.exc_value, KeyboardInterrupt):
            default_unraisable(u)

    sys.unraisablehook = unraisable
    try:
        signal.signal(signal.SIGINT, on_sigint)
        if _INTERRUPTED:  # a Ctrl-C while `weanj` itself imported (weanj/__init__.py)
            raise KeyboardInterrupt
        code = main()
    except KeyboardInterrupt:  # after main's own handler: at its very end
        print("weanj: interrupted", file=sys.stderr)
        code = 130
    except SystemExit as e:  # argparse's --help, --version and usage errors
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    if _INTERRUPTED and code != 130:  # an interrupt that some callback swallowed
        print("weanj: interrupted", file=sys.stderr)
        code = 130
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the exit itself is not interruptible
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        from .._resources import close_all

        close_all()
    real_exit(code)
