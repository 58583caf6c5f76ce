"""The Julia worker, from weanj's side: starting it, asking it, stopping it.

weanj runs its Julia variants in a separate process (`_julia_worker`, a Python process
that imports juliacall and no JAX), started on the first Julia evaluation of a command
and reused for all the others; this process never imports juliacall and writes every
file. Requests go one at a time (`request`), through pipes (`_julia_wire`).

What can go wrong, and what the caller sees (each one line, naming the log):

- the worker cannot start Julia (no Julia, a version weanj does not support, Julia
  packages that do not resolve, a kernel file that does not load): `UnavailableError`;
- the worker dies (a signal such as SIGSEGV, an abort, an exit) or exits before it
  answers: `JuliaError`, which judges that variant `error`; the next Julia evaluation
  starts a fresh worker (except after a failed start, which is not tried again in the
  same command);
- the worker is still busy at the time limit: the deadline of the watched call
  (`weanj._watch.deadline`, from `--timeout`), else `$WEANJ_JULIA_TIMEOUT_S` (default
  1800 s, `DEFAULT_TIMEOUT_S`) for the start and for each request: it is killed with
  everything it started and the call raises `TimeoutError` (the verdict `timeout`); the
  next Julia evaluation starts a fresh worker, except after a start that timed out;
- a kernel refuses its arguments (`InputError`), a variant is declared wrongly
  (`DefinitionError`), a kernel throws (`JuliaError`, Julia's stack trace in the log).

No worker outlives weanj. It runs in a process group of its own, which `close` (on
every exit: `_resources.on_exit`) and every failure above kill with SIGKILL and reap;
`close` never waits on a request in flight (a Ctrl-C arrives while one is). For the
exits that run no Python (SIGTERM, SIGKILL), the worker holds the read end of a pipe
whose write end only weanj holds (its lifeline, `_julia_wire.watch_lifeline`): when weanj
ends, however it ends, the pipe closes and a watchdog in the worker's group kills the
group.

The worker's log is `<project>/.weanj-cache/julia/worker.log`: its stderr and anything
Julia prints, one section per worker started (appended to; set aside as `worker.log.old`
once it passes 4 MiB).

`$WEANJ_JULIA_WORKER` names another command to run as the worker (split as a POSIX
shell splits it): a test double that speaks the same protocol (`_julia_wire.serve`).
With it set, Julia variants count as available (what runs them is configured), no
Julia is looked for, and every gradient it computes says so in its `backend_version`
("stand-in worker (...)"), never a Julia version.

The worker's log is never written through a symbolic link, nor outside the project
(`open_log`). What computes a Julia evaluation, and the environments (weanj's, and the
user's of `[tool.weanj.julia] project`), are `_julia_env`'s, read without starting Julia.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import _watch
from .._errors import DefinitionError, InputError, UnavailableError, WeanjError, say
from .._project import project_root
from .._resources import on_exit
from . import _julia_wire as wire
from ._julia_env import (  # noqa: F401 (re-exported: the tests, _julia)
    WORKER_VARIABLE,
    environment_folder,
    environment_identity,
    identity,
    requirements,
    stand_in,
    user_environment,
    weanj_requirement,
    weanj_sources_digest,
    write_requirements,
)
from ._julia_find import BELOW, FIX_VERSION, MINIMUM, SUPPORTED_TEXT, locate_julia, worker_settings

WORKER_SCRIPT = Path(__file__).with_name("_julia_worker.py")
_PACKAGE = Path(__file__).resolve().parent.parent
# After the quit message, how long a worker may take to end (Julia's atexit hooks)
# before it is killed.
QUIT_S = 2.0
MAX_LOG = 4 << 20
# The time limit of a Julia call (the worker's start, each request) where the command
# sets none (`--timeout`): generous, since a start may install and precompile Enzyme and
# a kernel's first gradient compiles it with Enzyme (minutes each), but finite, so that a
# worker that stops answering never hangs weanj.
TIMEOUT_VARIABLE = "WEANJ_JULIA_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 1800.0
# The fd number of the worker's end of its lifeline (`_julia_wire.watch_lifeline`).
LIFELINE_VARIABLE = wire.LIFELINE_VARIABLE


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


_STATE: dict = {"worker": None, "failed": None, "log started": False, "versions": None}
_LOCK = threading.RLock()


def close() -> None:
    """End the worker, if one runs (registered with `_resources.on_exit`): asked to quit
    when idle; killed at once when a request is in flight (another thread holds the lock:
    a Ctrl-C, or an exit, while Julia computes), which also ends that request."""
    worker = _STATE["worker"]
    if worker is None:
        return
    if _LOCK.acquire(blocking=False):
        try:
            if _STATE["worker"] is worker:
                _STATE["worker"] = None
            worker.stop()
        finally:
            _LOCK.release()
    else:
        worker.broken = True
        worker.end()


def forget() -> None:
    """Stop the worker and forget a failed start (tests; a new command)."""
    with _LOCK:
        close()
        _STATE.update(failed=None, versions=None)


def failed_reason() -> str | None:
    """Why the Julia variants are unavailable in this process, after a start that found
    Julia unusable; None otherwise."""
    failed = _STATE["failed"]
    return str(failed) if isinstance(failed, UnavailableError) else None


def versions() -> str | None:
    """What the worker said it runs (`Julia 1.11.5, Enzyme 0.13.x, juliacall 0.9.x`, or
    a stand-in's words), as its hello said; None before a worker started in this
    process. For the progress lines and the log: a record's key holds `identity`."""
    return _STATE["versions"]


def default_timeout_s() -> float:
    """`$WEANJ_JULIA_TIMEOUT_S`, else `DEFAULT_TIMEOUT_S` (an `InputError` for a value
    that is not a positive number of seconds)."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise InputError(f"{TIMEOUT_VARIABLE}={text} is not a positive number of seconds")
    return value


def _limit() -> tuple[float, str]:
    """The deadline of the next Julia call (`time.monotonic()`) and how a timeout names
    it: the watched call's (`--timeout`), else the default limit."""
    watched = _watch.deadline()
    if watched is not None:
        return watched, "at the time limit"
    seconds = default_timeout_s()
    return time.monotonic() + seconds, (
        f"after {seconds:g} s, the time limit of a Julia call (set {TIMEOUT_VARIABLE}, "
        "or --timeout)"
    )


def _exchange(worker: Worker, header: dict, arrays, limit: tuple[float, str], doing: str):
    """Send one message and read the answer (printing the worker's notes), within the
    deadline: past it the worker is killed and `TimeoutError` raised."""

    def expire():
        worker.expired = True
        worker.kill()

    deadline, when = limit
    # A little before the deadline, so that this call ends with its own TimeoutError
    # (naming the log) before the watch gives up on it.
    remaining = deadline - time.monotonic()
    timer = threading.Timer(max(0.0, remaining - min(0.5, 0.05 * remaining)), expire)
    timer.daemon = True
    timer.start()
    try:
        wire.write(worker.process.stdin, header, arrays)
        while True:
            reply, out = wire.read(worker.process.stdout)
            if reply.get("reply") == "note":
                say(f"  Julia worker: {reply.get('text')}")
                continue
            return reply, out
    except (wire.Closed, wire.Garbled, OSError) as e:
        if worker.expired:
            raise TimeoutError(
                f"the Julia worker was still {doing} {when}; stopped it (log: {worker.log})"
            ) from None
        if worker.broken:  # ended by `close` (an exit, a Ctrl-C) while this request ran
            raise JuliaError(f"the Julia worker was stopped while {doing}") from None
        cause = worker.cause_of_death(e)
        raise JuliaError(f"the Julia worker {cause} while {doing} (log: {worker.log})") from None
    except BaseException:  # an interrupt (Ctrl-C in a notebook): the pipes are out of step
        worker.broken = True
        raise
    finally:
        timer.cancel()
        timer.join()
        if worker.expired or worker.broken or worker.process.poll() is not None:
            _discard(worker)


def _discard(worker: Worker) -> None:
    if _STATE["worker"] is worker:
        _STATE["worker"] = None
    if worker.expired or worker.broken:
        worker.end()
    else:
        worker.stop()


def _start(limit: tuple[float, str], variant: str) -> Worker:
    """A new worker, started and greeted (the first start of a command may take minutes:
    juliapkg installs and precompiles packages). A start that fails, or times out, is
    not tried again in the same process: the next Julia evaluation gets the same error."""
    if _STATE["failed"] is not None:
        failed = _STATE["failed"]
        raise type(failed)(str(failed))
    try:
        return _start_worker(limit, variant)
    except (UnavailableError, JuliaError, TimeoutError) as e:
        _STATE["failed"] = e
        raise


def _setup(root: Path) -> dict:
    """The start message: what the worker checks Julia against, weanj's package, and the
    user's environment to stack above weanj's (`[tool.weanj.julia] project`)."""
    from ._julia_find import julia_sources

    sources = julia_sources()
    env = user_environment(root)
    return {
        "op": "start",
        "project": str(root),
        "supported": [list(MINIMUM), list(BELOW)],
        "supported_text": SUPPORTED_TEXT,
        "fix_version": FIX_VERSION,
        "julia": None,
        "julia_version": None,
        "sources": None if sources is None else str(sources),
        "requirements": None,
        "user_environment": None if env is None else str(env),
    }


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
    if not _STATE["log started"]:
        with contextlib.suppress(OSError):
            if not log.is_symlink() and log.stat().st_size > MAX_LOG:
                os.replace(log, log.with_name("worker.log.old"))
        _STATE["log started"] = True
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


def _command(root: Path, folder: Path, setup: dict, env: dict) -> list[str]:
    """The worker's command line, after finding Julia and writing the requirements (or a
    stand-in's command, `$WEANJ_JULIA_WORKER`)."""
    command = stand_in()
    if command is not None:
        return shlex.split(command)
    found = locate_julia()
    if found.path is None:
        raise UnavailableError(found.why)
    if setup["sources"] is None:
        raise UnavailableError("the Julia package julia/src/WeanJ.jl is missing")
    setup.update(
        julia=str(found.path),
        julia_version=found.version,
        requirements=str(write_requirements(root, folder, Path(setup["sources"]))),
    )
    env.update(worker_settings(found.path, env))
    return [sys.executable, str(WORKER_SCRIPT)]


def _spawn(argv: list[str], env: dict, root: Path, log_fd: int, log: Path) -> Worker:
    """The worker process, in a group of its own, its stderr the log, holding the read end
    of its lifeline (the write end stays here, not inheritable)."""
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
    on_exit(close)
    return Worker(process, log, lifeline)


def _start_worker(limit: tuple[float, str], variant: str) -> Worker:
    root = project_root()
    folder = work_folder(root)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a project folder weanj may not write into: the log goes elsewhere
        folder = Path(tempfile.mkdtemp(prefix="weanj-julia-"))
        root = folder.parent
    setup = _setup(project_root())
    env = dict(os.environ)
    argv = _command(project_root(), folder, setup, env)
    log = folder / "worker.log"
    log_fd = open_log(folder, root)
    say(f"  starting the Julia worker for {variant}; log: {log}")
    try:
        worker = _spawn(argv, env, project_root(), log_fd, log)
    finally:
        os.close(log_fd)
    _STATE["worker"] = worker
    reply, _ = _exchange(worker, setup, [], limit, "starting")
    if reply.get("reply") == "failed":
        _discard(worker)
        message = f"{reply.get('message')} (log: {log})"
        if reply.get("kind") == "unavailable":
            raise UnavailableError(message)
        raise JuliaError(f"the Julia worker could not start: {message}")
    if reply.get("reply") != "hello" or reply.get("protocol") != wire.PROTOCOL:
        _discard(worker)
        raise JuliaError(
            f"the Julia worker answered {reply.get('reply')!r} (protocol "
            f"{reply.get('protocol')!r}), not weanj's hello (protocol {wire.PROTOCOL}); "
            f"log: {log}"
        )
    said = str(reply.get("versions") or "versions not said")
    command = stand_in()
    worker.versions = said if command is None else f"stand-in worker ({command}): {said}"
    say(f"  Julia worker ready: {worker.versions}")
    return worker


_FAILURES = {
    "unavailable": UnavailableError,
    "input": InputError,
    "definition": DefinitionError,
    "error": JuliaError,
}


def request(header: dict, arrays: list, *, variant: str, what: str) -> tuple[dict, list]:
    """Ask the worker for `header["op"]` on `arrays` (starting a worker first if none
    runs) and return its reply's header and arrays; its failures as the exceptions of the
    module docstring. `what` ("loss", "gradient") names the computation in messages. The
    start and the request have a time limit each (`_limit`)."""
    with _LOCK:
        worker = _STATE["worker"]
        if worker is None:
            worker = _start(_limit(), variant)
        reply, out = _exchange(worker, header, arrays, _limit(), f"computing {variant}'s {what}")
        _STATE["versions"] = worker.versions
    if reply.get("reply") == "failed":
        kind = reply.get("kind")
        message = str(reply.get("message"))
        if kind == "error":
            message = f"{message} (Julia's stack trace: {worker.log})"
        elif kind == "unavailable":
            message = f"{message} (log: {worker.log})"
        raise _FAILURES.get(kind, JuliaError)(message)
    if reply.get("reply") != header["op"]:
        raise JuliaError(
            f"the Julia worker answered {reply.get('reply')!r} to a {header['op']!r} request "
            f"for {variant} (log: {worker.log})"
        )
    return reply, out
