"""`weanj`: parse, run one command, and turn every user-caused error into one line.

Every mistake (unknown name, bad file, bad array, missing backend) is one line on
stderr (a list, where there is one, on the lines below it) and exit code 2, never a
traceback; a judgement that fails exits with 1; an interrupt with 130.
"""

from __future__ import annotations

import sys

from .._errors import WeanjError


def main(argv: list[str] | None = None) -> int:
    try:
        from ._parser import parse

        args, words = parse(argv)
        from ._commands import COMMANDS

        return int(COMMANDS[args.command](args, words) or 0)
    except WeanjError as e:
        print(f"weanj: error: {e}", file=sys.stderr)
        return e.exit_code
    except OSError as e:  # a file system refusal at the edge: one line, not a traceback
        where = f" ({e.filename})" if e.filename else ""
        print(f"weanj: error: {e.strerror or e}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("weanj: interrupted", file=sys.stderr)
        return 130
