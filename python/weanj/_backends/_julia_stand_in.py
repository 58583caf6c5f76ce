"""A stand-in for weanj's Julia worker: `$WEANJ_JULIA_WORKER`, a command (split as a POSIX
shell splits it) that weanj runs instead of its worker, speaking the same protocol
(`_julia_wire.serve`): the test doubles of `tests/stand_ins/`. With it set, Julia
variants count as available, no Julia is looked for, and every result says it came from
the stand-in (`stand_in_identity`, in the records' keys and `backend_version`), never
from Julia.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
from pathlib import Path

from .._errors import InputError

WORKER_VARIABLE = "WEANJ_JULIA_WORKER"
# A file the command names larger than this is not digested (a stand-in is a script).
MAX_STAND_IN_FILE = 4 << 20


def stand_in() -> str | None:
    """The command of `$WEANJ_JULIA_WORKER`, or None."""
    return os.environ.get(WORKER_VARIABLE, "").strip() or None


def stand_in_argv() -> list[str] | None:
    """`$WEANJ_JULIA_WORKER` split into the worker's command line, or None; an
    `InputError` (one line) for a value a shell could not split (an unbalanced quote)."""
    command = stand_in()
    if command is None:
        return None
    try:
        return shlex.split(command)
    except ValueError as e:
        raise InputError(
            f"{WORKER_VARIABLE}={command} is not a command a shell can split ({e}): quote it "
            f"as a POSIX shell does, or unset {WORKER_VARIABLE} to run Julia itself"
        ) from None


def stand_in_identity() -> str:
    """What computes when a stand-in is configured: its command and a digest of the files
    it names (its script), so that an edit of the stand-in recomputes its records."""
    command, argv = stand_in(), stand_in_argv()
    h = hashlib.sha256()
    for word in argv or ():
        path = Path(word)
        with contextlib.suppress(OSError):
            if path.is_file() and path.stat().st_size < MAX_STAND_IN_FILE:
                h.update(word.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"stand-in worker ({command}), not Julia: files sha256 {h.hexdigest()[:16]}"
