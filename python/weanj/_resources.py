"""Child processes and other resources that must be closed when a command ends.

The HDF5 prober and the Julia worker are child processes of weanj. The console script
ends with `os._exit` (no interpreter teardown, see `_cli._main`), so `atexit` alone would
not close them: each registers its closer here with `on_exit`, and whoever ends the
process (the console script, the pytest plugin, `atexit` for a script or notebook) calls
`close_all` once.
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable

_CLOSERS: list[Callable[[], None]] = []


def on_exit(closer: Callable[[], None]) -> Callable[[], None]:
    """Call `closer()` when the process ends (once; the last registered first)."""
    if closer not in _CLOSERS:
        _CLOSERS.append(closer)
    return closer


def close_all() -> None:
    """Close everything registered (in reverse order); a closer that fails is ignored:
    the process is ending, and the others must still be closed."""
    while _CLOSERS:
        closer = _CLOSERS.pop()
        with contextlib.suppress(Exception):
            closer()


atexit.register(close_all)
