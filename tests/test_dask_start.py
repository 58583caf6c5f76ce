"""A local Dask cluster that does not start (issue 64, item 2): a worker process killed
while `weanj check --workers 2` starts its cluster (the memory killer, a job scheduler), a
port taken, a worker process the system refuses to spawn. Each is one line naming the
executor and what to try, exit 2, no traceback, nothing left running, and the user's
files as they were.

Every process is on 127.0.0.1 and stopped by the test (or by weanj, which is the point).
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .helpers import PYTHON, assert_one_line_error
from .projects import tiny_project, user_env, weanj_here

pytest.importorskip("distributed")

# The first worker process of the cluster to start (Dask spawns each with
# multiprocessing) writes its pid to `$WEANJ_TEST_HOLD` and waits there: the test kills
# it as soon as the pid is there, and the wait makes sure that is while the cluster starts,
# however busy the machine (a worker that had started would be restarted by its nanny:
# another case, tests/test_distributed.py). The other worker starts as usual. Bounded: a
# worker nobody kills goes on after a while.
HOLD = """\
import os, sys, time
if "--multiprocessing-fork" in sys.argv and os.environ.get("WEANJ_TEST_HOLD"):
    try:
        mark = os.open(os.environ["WEANJ_TEST_HOLD"], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        pass
    else:
        os.write(mark, str(os.getpid()).encode())
        os.close(mark)
        time.sleep(120)
"""


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".weanj-cache" not in p.parts
    }


def _assert_as_they_were(root: Path, before: dict[str, str]) -> None:
    """Every file of `before` byte-identical; a new file only weanj's own, in `results/`
    (its note of the inputs it found fresh)."""
    after = _snapshot(root)
    assert {k: after.get(k) for k in before} == before
    assert all(k.startswith("results/") for k in set(after) - set(before)), after


def _processes() -> dict[int, tuple[int, str, str]]:
    """{pid: (parent pid, state, command line)} of every process."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        out[int(stat.parent.name)] = (int(fields[1]), fields[0], cmdline)
    return out


def _descendants(pid: int) -> dict[int, str]:
    """{pid: command line} of the processes below `pid`."""
    table, found, frontier = _processes(), {}, {pid}
    while frontier:
        frontier = {p for p, (parent, _, _) in table.items() if parent in frontier} - set(found)
        found.update({p: table[p][2] for p in frontier})
    return found


def _running(pids) -> list[int]:
    """The processes of `pids` that still run (a zombie has ended: it waits to be reaped)."""
    table = _processes()
    return [p for p in pids if p in table and table[p][1] != "Z"]


def _check_killing_a_worker(root: Path, hold: Path) -> tuple[subprocess.Popen, str, list]:
    """`weanj check --workers 2` in `root`, the first of its Dask worker processes to
    start killed (SIGKILL) as soon as it appears: the finished process, its stderr, every
    process it started."""
    mark = hold / "held-pid"
    mark.unlink(missing_ok=True)
    paths = [str(hold), os.environ.get("PYTHONPATH", "")]
    env = user_env(PYTHONPATH=os.pathsep.join(p for p in paths if p), WEANJ_TEST_HOLD=str(mark))
    proc = subprocess.Popen(
        [PYTHON, "-m", "weanj", "check", "--workers", "2"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: dict[int, str] = {}
    killed = []
    give_up = time.monotonic() + 600  # a guard against a hang, not a measure of speed
    try:
        while proc.poll() is None and time.monotonic() < give_up:
            held = mark.read_text() if mark.exists() else ""
            seen.update(_descendants(proc.pid))  # after the mark: a held worker is in it
            if held.isdigit() and int(held) in seen and not killed:
                os.kill(int(held), signal.SIGKILL)
                killed.append(int(held))
            time.sleep(0.01)
        out, err = proc.communicate(timeout=max(1.0, give_up - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert killed, f"no worker process appeared: {err}"
    assert out == "", out
    return proc, err, list(seen)


def _killed_at_start(tmp_path: Path, times: int) -> None:
    (tmp_path / "tiny").mkdir()
    root = tiny_project(tmp_path / "tiny")
    hold = tmp_path / "hold"
    hold.mkdir()
    (hold / "sitecustomize.py").write_text(HOLD)
    before = _snapshot(root)
    for _ in range(times):
        proc, err, started = _check_killing_a_worker(root, hold)
        assert proc.returncode == 2, err
        assert_one_line_error(
            err,
            "Dask's local cluster (--workers 2) did not start: a worker process died while "
            "starting",
            "try again, fewer --workers, or --workers 0 (in this process)",
        )
        left = []
        for _ in range(100):  # an orphan is reaped by the system a moment after it ends
            left = _running(started)
            if not left:
                break
            time.sleep(0.1)
        assert left == [], {p: _processes().get(p) for p in left}
        _assert_as_they_were(root, before)


def test_a_worker_killed_while_the_cluster_starts_is_one_line(tmp_path):
    _killed_at_start(tmp_path, times=2)


@pytest.mark.slow
def test_a_worker_killed_while_the_cluster_starts_ten_times(tmp_path):
    """The battery's case, ten times over: one line every time, nothing left."""
    _killed_at_start(tmp_path, times=10)


@pytest.mark.parametrize(
    ("where", "failure", "words"),
    [
        (
            "distributed.comm.tcp.BaseTCPListener.start",
            OSError(errno.EADDRINUSE, "Address already in use"),
            "a port it needs is taken (Address already in use)",
        ),
        (
            "distributed.process.AsyncProcess.start",
            BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"),
            "the system refused a worker process (Resource temporarily unavailable)",
        ),
    ],
    ids=["a port taken", "a spawn refused"],
)
def test_a_cluster_that_cannot_listen_or_spawn_is_one_line(
    tiny, monkeypatch, where, failure, words
):
    """The scheduler's listener finds its port taken, or the system refuses to spawn a
    worker process: Dask's own error where each happens (raised there by the test), in
    this process as a fresh `weanj check --workers 2` runs it."""
    import importlib

    module, cls, method = where.rsplit(".", 2)

    async def refused(self, *args, **kwargs):
        raise failure

    monkeypatch.setattr(getattr(importlib.import_module(module), cls), method, refused)
    before = _snapshot(tiny)
    done = weanj_here(tiny, "check", "--workers", "2")
    assert done.returncode == 2, done.stdout + done.stderr
    assert_one_line_error(
        done.stderr, "Dask's local cluster (--workers 2) did not start: " + words, "--workers 0"
    )
    assert done.stdout == ""
    _assert_as_they_were(tiny, before)
