"""Stand-ins for weanj's Julia worker (`$WEANJ_JULIA_WORKER`) that fail the ways a Julia
worker can, for `tests/test_julia_worker.py`: no Julia runs, and nothing here computes
a result.

    python tests/stand_ins/julia_worker.py MODE

- `exit-at-start`: exits with status 3 before it answers (a worker that cannot start);
- `hang-at-start`: never answers the start (a Julia that hangs loading packages);
- `segfault`: answers the start, then kills itself with SIGSEGV on the first request
  (as an Enzyme crash would);
- `exit-mid-request`: answers the start, then exits with status 7 in the middle of the
  first request (after reading it, before answering);
- `hang`: answers the start, then never answers the first request.

With `$WEANJ_TEST_PIDS` set, each worker appends to that file one JSON line per process
it runs: itself (`{"worker": pid}`) and a child it starts, as Julia starts processes of
its own (`{"child": pid}`, a `sleep`); and `{"handling": pid}` when a request arrives.
So a test counts the workers started and sees whether any of them outlived weanj.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

MODE = sys.argv[1]


def note_pid(**entry) -> None:
    path = os.environ.get("WEANJ_TEST_PIDS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


note_pid(worker=os.getpid(), mode=MODE)
if MODE == "exit-at-start":
    print("stand-in: exiting at start-up", file=sys.stderr)
    sys.exit(3)

from weanj._backends import _julia_wire as wire  # noqa: E402


def hang() -> None:
    while True:
        time.sleep(60)


def start(setup: dict, note) -> dict:
    if os.environ.get("WEANJ_TEST_PIDS"):
        child = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
        note_pid(child=child.pid)
    if MODE == "hang-at-start":
        hang()
    note(f"stand-in worker ({MODE}), not Julia")
    return {"versions": f"tests/stand_ins/julia_worker.py {MODE}"}


def handle(request: dict, arrays: list) -> tuple[dict, list]:
    note_pid(handling=os.getpid())
    if MODE == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if MODE == "exit-mid-request":
        os._exit(7)
    if MODE == "hang":
        hang()
    raise wire.Refusal("error", f"stand-in {MODE}: nothing to compute")


wire.serve(start, handle)
