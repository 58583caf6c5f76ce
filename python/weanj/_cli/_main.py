"""`weanj`: parse, run one command, and turn every user-caused error into one line.

Every mistake (unknown name, bad file, bad array, missing backend) is one line on
stderr (a list, where there is one, on the lines below it) and exit code 2, never a
traceback; one that needs no JAX (an option, the project, a name the project's recorded
names do not hold: `_early`) comes before JAX is imported. A judgement that fails exits
with 1; an interrupt with 130, a SIGTERM with 143 (`_interrupts` says how both are
handled, in one place).

The console script leaves with `os._exit` once the output is flushed and the child
processes are closed (`_resources.close_all`), so that no interpreter teardown runs
while XLA's or a timed-out compile's threads still work (where a segfault happened after
"weanj: interrupted"). Every file weanj writes is written atomically, so nothing is left
half-written whatever the moment of the interrupt.
"""

from __future__ import annotations

import contextlib
import signal
import sys

from .._errors import WeanjError, error_text, say
from .._interrupts import (
    INTERRUPTED,
    ending,
    heavy_imports,
    install_for_command,
    refuse_exit_calls,
    swallowed_interrupts_are_noted,
)
from .._watch import Said

# Commands that never need JAX (they start at once and import none of it).
LIGHT = {"new"}


def main(argv: list[str] | None = None) -> int:
    """Run one command; **Returns** its exit code (0 ok, 1 a failing verdict, 2 a bad input,
    130 interrupted, 143 terminated)."""
    try:
        from ._parser import parse

        args, words = parse(argv)
        # where progress goes, noting when it last spoke: the heartbeat's count of silence
        # starts here, not once JAX and the project's modules have imported
        args.say = Said(say)
        if args.command not in LIGHT:
            from ._early import refuse_early

            refuse_early(args, words)  # what needs no JAX is refused before it imports
            try:
                heavy_imports()
            except ImportError as e:  # a checkout on PYTHONPATH without its dependencies
                raise WeanjError(
                    f"weanj needs {e.name or e}, which this Python cannot import ({e}); install "
                    "weanj with its dependencies: pip install -e . (or pip install weanj)"
                ) from None
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
        line, code = ending()
        print(line, file=sys.stderr)
        return code


def entry() -> None:
    """The console script: `main`, then a clean, signal-free exit (module docstring)."""
    real_exit = refuse_exit_calls()
    swallowed_interrupts_are_noted()
    try:
        install_for_command()
        if INTERRUPTED:  # a Ctrl-C while `weanj` itself imported (weanj/__init__.py)
            raise KeyboardInterrupt
        code = main()
    except KeyboardInterrupt:  # after main's own handler: at its very end
        line, code = ending()
        print(line, file=sys.stderr)
    except SystemExit as e:  # argparse's --help and --version
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    if INTERRUPTED and code != ending()[1]:  # an interrupt that some callback swallowed
        line, code = ending()
        print(line, file=sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the exit itself is not interruptible
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        from .._resources import close_all

        close_all()
    real_exit(code)
