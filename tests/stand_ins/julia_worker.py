"""Stand-ins for weanj's Julia worker (`$WEANJ_JULIA_WORKER`) that fail the ways a Julia
worker can, for `tests/test_julia_worker.py`: no Julia runs, and nothing here computes
a result.

    python tests/stand_ins/julia_worker.py MODE

- `exit-at-start`: exits with status 3 before it answers (a worker that cannot start);
- `segfault`: answers the start, then kills itself with SIGSEGV on the first request
  (as an Enzyme crash would);
- `hang`: answers the start, then never answers the first request.
"""

from __future__ import annotations

import os
import signal
import sys
import time

MODE = sys.argv[1]
if MODE == "exit-at-start":
    print("stand-in: exiting at start-up", file=sys.stderr)
    sys.exit(3)

from weanj._backends import _julia_wire as wire  # noqa: E402


def start(setup: dict, note) -> dict:
    note(f"stand-in worker ({MODE}), not Julia")
    return {"versions": f"tests/stand_ins/julia_worker.py {MODE}"}


def handle(request: dict, arrays: list) -> tuple[dict, list]:
    if MODE == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if MODE == "hang":
        while True:
            time.sleep(60)
    raise wire.Refusal("error", f"stand-in {MODE}: nothing to compute")


wire.serve(start, handle)
