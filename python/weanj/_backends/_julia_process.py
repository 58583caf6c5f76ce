"""The Julia worker as a process: starting it in a process group of its own with its log
and its lifeline, and ending it (asked to quit, or killed with everything it started).
What it is asked, and when it is given up, is `_julia_client`'s.

The worker's log is `<project>/.weanj-cache/julia/worker.log`: its stderr and anything
Julia prints, one section per worker started (appended to; set aside as `worker.log.old`
once it passes 4 MiB). It is never written through a symbolic link, nor outside the
project (`open_log`). The worker holds the read end of a pipe whose write end only weanj
holds (its lifeline, `_julia_wire.watch_lifeline`): when weanj ends, however it ends,
the pipe closes and a watchdog in the worker's group kills the group.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import UnavailableError, WeanjError
from .._project import project_root
from . import _julia_wire as wire
from ._julia_stand_in import WORKER_VARIABLE, stand_in

# After the quit message, how long a worker may take to end (Julia's atexit hooks)
# before it is killed.
QUIT_S = 2.0
MAX_LOG = 4 << 20
# The fd number of the worker's end of its lifeline (`_julia_wire.watch_lifeline`).
LIFELINE_VARIABLE = wire.LIFELINE_VARIABLE
# Whether this process has opened the log yet (it is set aside, if large, only then).
_LOG = {"started": False}


class JuliaError(WeanjError):
    """A Julia variant that failed in the worker: its kernel threw, or the worker died.
    The variant's verdict is `error`; the message is one line naming the log."""

    exit_code = 1


def work_folder(root: Path | None = None) -> Path:
    """`<project>/.weanj-cache/julia`: the worker's log and the project's Julia
    requirements (beside JAX's compilation cache, `_cache`)."""
    return (root or project_root()) / ".weanj-cache" / "julia"


# --- the worker ------------------------------------------------------------------------------


@dataclass
class Worker:
    """A running worker: its process, its pipes, its log, what it said it runs, and the
    write end of its lifeline (module docstring)."""

    process: subprocess.Popen
    log: Path
    lifeline: int | None = None
    versions: str = ""
    expired: bool = field(default=False, repr=False)  # killed at the deadline
    broken: bool = field(default=False, repr=False)  # an exchange was interrupted

    def kill(self) -> None:
        """Kill the worker and every process it started (its own process group)."""
        with contextlib.suppress(OSError):
            if os.name == "posix":
                os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.kill()

    def release(self) -> None:
        """Close weanj's end of the lifeline: the watchdog then kills whatever is left of
        the worker's group (a child Julia started that outlived it) and ends."""
        fd, self.lifeline = self.lifeline, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def end(self) -> None:
        """Kill the group, reap the worker, release the lifeline, close the pipes: never
        waits on the worker's answer (what a busy exchange or an exit calls)."""
        self.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(QUIT_S)
        self.release()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError, ValueError):
                stream.close()

    def stop(self) -> None:
        """Ask the worker to quit, wait a little (Julia's atexit hooks), then `end`."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                wire.write(self.process.stdin, {"op": "quit"})
            with contextlib.suppress(OSError, ValueError):
                self.process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(QUIT_S)
        self.end()

    def cause_of_death(self, error: Exception) -> str:
        """What became of a worker whose pipe closed (or that sent garbage)."""
        if isinstance(error, wire.Garbled):
            self.kill()
            return f"sent something that is not a message ({error})"
        try:
            code = self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.kill()
            return "closed its pipe but did not exit (killed)"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"died ({name})"
        return f"exited with status {code}" if code else "exited"


def open_log(folder: Path, root: Path) -> int:
    """The worker's log, opened to append: never through a symbolic link (a log linked to
    a file elsewhere would be written there: `O_NOFOLLOW`), nor in a folder that lies
    outside the project (`.weanj-cache` linked elsewhere); each refused in one line.
    Set aside as `worker.log.old` once it passes `MAX_LOG` (the link itself, never its
    target, would be moved)."""
    log = folder / "worker.log"
    if not folder.resolve().is_relative_to(root.resolve()):
        raise UnavailableError(
            f"{folder} lies outside the project (a link to {folder.resolve()}): weanj writes "
            "its Julia worker's log only inside the project; remove the link"
        )
    if not _LOG["started"]:
        with contextlib.suppress(OSError):
            if not log.is_symlink() and log.stat().st_size > MAX_LOG:
                os.replace(log, log.with_name("worker.log.old"))
        _LOG["started"] = True
    try:
        return os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        if log.is_symlink():
            raise UnavailableError(
                f"{log} is a symbolic link: weanj appends its Julia worker's log only to a "
                "file of its own; remove the link"
            ) from None
        raise UnavailableError(
            f"cannot write the Julia worker's log {log} ({e.strerror})"
        ) from None


def spawn(argv: list[str], env: dict, root: Path, log_fd: int, log: Path) -> Worker:
    """The worker process, in a group of its own, its stderr the log, holding the read end
    of its lifeline (the write end stays here, not inheritable); a `JuliaError` naming the
    command where it cannot be started."""
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    watched, lifeline = os.pipe() if os.name == "posix" else (None, None)
    if watched is not None:
        env[LIFELINE_VARIABLE] = str(watched)
    heading = f"--- weanj's Julia worker, {started}, for process {os.getpid()}: "
    os.write(log_fd, f"{heading}{shlex.join(argv)}\n".encode())
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            env=env,
            cwd=root,
            start_new_session=True,
            pass_fds=() if watched is None else (watched,),
        )
    except OSError as e:
        for fd in (watched, lifeline):
            if fd is not None:
                os.close(fd)
        command = stand_in()
        where = f"{WORKER_VARIABLE}={command}" if command else argv[0]
        raise JuliaError(f"cannot start the Julia worker ({where}: {e.strerror or e})") from None
    finally:
        if watched is not None:
            with contextlib.suppress(OSError):
                os.close(watched)
    return Worker(process, log, lifeline)
