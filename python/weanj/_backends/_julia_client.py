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
- the worker is still busy at the deadline of the watched call (`weanj._watch.deadline`,
  from `--timeout`): it is killed and the call raises `TimeoutError`; the next Julia
  evaluation starts a fresh worker;
- a kernel refuses its arguments (`InputError`), a variant is declared wrongly
  (`DefinitionError`), a kernel throws (`JuliaError`, Julia's stack trace in the log).

The worker's log is `<project>/.weanj-cache/julia/worker.log`: its stderr and anything
Julia prints, one section per worker started (appended to; set aside as `worker.log.old`
once it passes 4 MiB).

`$WEANJ_JULIA_WORKER` names another command to run as the worker (split as a POSIX
shell splits it): a test double that speaks the same protocol (`_julia_wire.serve`).
With it set, Julia variants count as available (what runs them is configured), no
Julia is looked for, and every gradient it computes says so in its `backend_version`
("stand-in worker (...)"), never a Julia version.
"""

from __future__ import annotations

import contextlib
import datetime
import json
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
from ._julia_find import BELOW, FIX_VERSION, MINIMUM, SUPPORTED_TEXT, locate_julia, worker_settings

WORKER_VARIABLE = "WEANJ_JULIA_WORKER"
WORKER_SCRIPT = Path(__file__).with_name("_julia_worker.py")
_PACKAGE = Path(__file__).resolve().parent.parent
# After the quit message, how long a worker may take to end (Julia's atexit hooks)
# before it is killed.
QUIT_S = 2.0
MAX_LOG = 4 << 20


class JuliaError(WeanjError):
    """A Julia variant that failed in the worker: its kernel threw, or the worker died.
    The variant's verdict is `error`; the message is one line naming the log."""

    exit_code = 1


def stand_in() -> str | None:
    """The command of `$WEANJ_JULIA_WORKER`, or None."""
    return os.environ.get(WORKER_VARIABLE, "").strip() or None


def work_folder(root: Path | None = None) -> Path:
    """`<project>/.weanj-cache/julia`: the worker's log and the project's Julia
    requirements (beside JAX's compilation cache, `_cache`)."""
    return (root or project_root()) / ".weanj-cache" / "julia"


# --- the project's Julia packages --------------------------------------------------------


def _weanj_packages() -> dict:
    """What weanj's own `juliapkg.json` declares: `{name: {"uuid", "version"}}`, and
    `"julia"`."""
    path = _PACKAGE / "juliapkg.json"
    declared = json.loads(path.read_text(encoding="utf-8"))
    return {**declared.get("packages", {}), "julia": declared.get("julia")}


def requirements(root: Path) -> dict | None:
    """The Julia packages the project's top-level `Project.toml` declares (`[deps]`, with
    their `[compat]` bounds, and `[compat] julia`) that weanj does not declare itself
    with the same bounds, in juliapkg's format (`{"julia": ..., "packages": {name:
    {"uuid", "version"}}}`); None when there are none (or no Project.toml).

    The Julia convention: `julia --project=. -e 'using Pkg; Pkg.add("SpecialFunctions")'`
    adds a package there (julia/README.md, "Julia packages").
    """
    path = root / "Project.toml"
    if not path.is_file():
        return None
    from .._project import _read_toml

    try:
        project = _read_toml(path)
    except WeanjError as e:
        raise UnavailableError(f"the project's Julia packages cannot be read: {e}") from None
    deps, compat = project.get("deps", {}), project.get("compat", {})
    if not isinstance(deps, dict) or not isinstance(compat, dict):
        raise UnavailableError(f"{path}: [deps] and [compat] must be tables")
    own = _weanj_packages()
    packages = {}
    for name, uuid in deps.items():
        if not isinstance(uuid, str):
            raise UnavailableError(f"{path}: [deps] {name} must be a UUID string")
        entry = {"uuid": uuid}
        if name in compat:
            entry["version"] = str(compat[name])
        if own.get(name) != entry:
            packages[name] = entry
    out: dict = {}
    if "julia" in compat and str(compat["julia"]) != own["julia"]:
        out["julia"] = str(compat["julia"])
    if packages:
        out["packages"] = packages
    return out or None


def write_requirements(root: Path, folder: Path) -> Path | None:
    """The folder holding the project's `juliapkg.json` (rewritten only when it changes:
    juliapkg resolves again when it does), or None when the project declares nothing
    beyond weanj's own packages."""
    wanted = requirements(root)
    if wanted is None:
        return None
    target = folder / "requirements"
    path = target / "juliapkg.json"
    text = json.dumps(wanted, indent=4, sort_keys=True) + "\n"
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8") == text:
            return target
    target.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".juliapkg.json.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return target


# --- the worker ------------------------------------------------------------------------------


@dataclass
class Worker:
    """A running worker: its process, its pipes, its log, what it said it runs."""

    process: subprocess.Popen
    log: Path
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

    def stop(self) -> None:
        """Ask the worker to quit, wait a little, then kill it; close the pipes."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                wire.write(self.process.stdin, {"op": "quit"})
            with contextlib.suppress(OSError, ValueError):
                self.process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(QUIT_S)
        self.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(QUIT_S)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError, ValueError):
                stream.close()

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
    """Stop the worker, if one runs (registered with `_resources.on_exit`)."""
    with _LOCK:
        worker, _STATE["worker"] = _STATE["worker"], None
        if worker is not None:
            worker.stop()


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
    """What the worker runs (`Julia 1.11.5, Enzyme 0.13.x, juliacall 0.9.x`), as its
    hello said; None before a worker started in this process."""
    return _STATE["versions"]


def _exchange(worker: Worker, header: dict, arrays, deadline: float | None, doing: str):
    """Send one message and read the answer (printing the worker's notes), within the
    deadline: past it the worker is killed and `TimeoutError` raised."""

    def expire():
        worker.expired = True
        worker.kill()

    timer = None
    if deadline is not None:
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
                f"the Julia worker was still {doing} at the time limit; stopped it "
                f"(log: {worker.log})"
            ) from None
        cause = worker.cause_of_death(e)
        raise JuliaError(f"the Julia worker {cause} while {doing} (log: {worker.log})") from None
    except BaseException:  # an interrupt (Ctrl-C in a notebook): the pipes are out of step
        worker.broken = True
        raise
    finally:
        if timer is not None:
            timer.cancel()
            timer.join()
        if worker.expired or worker.broken or worker.process.poll() is not None:
            _discard(worker)


def _discard(worker: Worker) -> None:
    if _STATE["worker"] is worker:
        _STATE["worker"] = None
    worker.stop()


def _start(deadline: float | None, variant: str) -> Worker:
    """A new worker, started and greeted (the first start of a command may take minutes:
    juliapkg installs and precompiles packages)."""
    if _STATE["failed"] is not None:
        failed = _STATE["failed"]
        raise type(failed)(str(failed))
    try:
        return _start_worker(deadline, variant)
    except (UnavailableError, JuliaError) as e:
        _STATE["failed"] = e
        raise


def _start_worker(deadline: float | None, variant: str) -> Worker:
    root = project_root()
    folder = work_folder(root)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a project folder weanj may not write into: the log goes elsewhere
        folder = Path(tempfile.mkdtemp(prefix="weanj-julia-"))
    command = stand_in()
    setup = {
        "op": "start",
        "project": str(root),
        "supported": [list(MINIMUM), list(BELOW)],
        "supported_text": SUPPORTED_TEXT,
        "fix_version": FIX_VERSION,
        "julia": None,
        "julia_version": None,
        "sources": None,
        "requirements": None,
    }
    from ._julia_find import julia_sources

    sources = julia_sources()
    setup["sources"] = None if sources is None else str(sources)
    env = dict(os.environ)
    if command is None:
        found = locate_julia()
        if found.path is None:
            raise UnavailableError(found.why)
        if sources is None:
            raise UnavailableError("the Julia package julia/src/WeanJ.jl is missing")
        requirements_folder = write_requirements(root, folder)
        setup.update(
            julia=str(found.path),
            julia_version=found.version,
            requirements=None if requirements_folder is None else str(requirements_folder),
        )
        env.update(worker_settings(found.path, env))
        argv = [sys.executable, str(WORKER_SCRIPT)]
    else:
        argv = shlex.split(command)
    log = folder / "worker.log"
    if not _STATE["log started"]:
        # Appended to (two commands of one project may run at once), and set aside once
        # it grows large.
        with contextlib.suppress(OSError):
            if log.stat().st_size > MAX_LOG:
                os.replace(log, log.with_name("worker.log.old"))
        _STATE["log started"] = True
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    with open(log, "ab") as log_file:
        heading = f"--- weanj's Julia worker, {started}, for process {os.getpid()}: "
        log_file.write(f"{heading}{shlex.join(argv)}\n".encode())
        log_file.flush()
        say(f"  starting the Julia worker for {variant}; log: {log}")
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                env=env,
                cwd=root,
                start_new_session=True,
            )
        except OSError as e:
            where = f"{WORKER_VARIABLE}={command}" if command else argv[0]
            raise JuliaError(
                f"cannot start the Julia worker ({where}: {e.strerror or e})"
            ) from None
    on_exit(close)
    worker = Worker(process, log)
    _STATE["worker"] = worker
    reply, _ = _exchange(worker, setup, [], deadline, "starting")
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
    worker.versions = said if command is None else f"stand-in worker ({command}): {said}"
    return worker


_FAILURES = {
    "unavailable": UnavailableError,
    "input": InputError,
    "definition": DefinitionError,
    "error": JuliaError,
}


def request(header: dict, arrays: list, *, variant: str, what: str) -> list:
    """Ask the worker for `header["op"]` on `arrays` (starting a worker first if none
    runs) and return the arrays it answers; its failures as the exceptions of the module
    docstring. `what` ("loss", "gradient") names the computation in messages."""
    with _LOCK:
        deadline = _watch.deadline()
        worker = _STATE["worker"]
        if worker is None:
            worker = _start(deadline, variant)
        reply, out = _exchange(worker, header, arrays, deadline, f"computing {variant}'s {what}")
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
    return out
