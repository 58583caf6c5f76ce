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

What computed a Julia evaluation (`identity`, its `backend_version`, part of every
evaluation record's key) is known without starting Julia, so that a record is reused
by a later command that starts no worker: the Julia executable's version and path
(`julia --version`, cached), a digest of the worker environment's Manifest (and the
Enzyme version it resolved), a digest of WeanJ's sources and juliacall's version; a
stand-in's, a digest of its files.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import importlib.metadata
import json
import os
import re
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
from .._sources import text_digest
from . import _julia_wire as wire
from ._julia_find import BELOW, FIX_VERSION, MINIMUM, SUPPORTED_TEXT, locate_julia, worker_settings

WORKER_VARIABLE = "WEANJ_JULIA_WORKER"
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


def weanj_requirement(sources: Path) -> dict:
    """WeanJ as juliapkg declares a package `dev`ed by path: `{"uuid", "path", "dev"}`,
    its uuid from `julia/Project.toml`. Pkg then precompiles it once into the worker's
    environment (and again only when its sources change), and the worker loads it with
    `using WeanJ`."""
    from .._project import _read_toml

    uuid = _read_toml(sources / "Project.toml").get("uuid")
    if not isinstance(uuid, str):
        raise UnavailableError(f"{sources / 'Project.toml'} declares no uuid for WeanJ")
    return {"uuid": uuid, "path": str(sources), "dev": True}


def write_requirements(root: Path, folder: Path, sources: Path) -> Path:
    """The folder holding the `juliapkg.json` weanj adds to juliapkg's requirements
    (rewritten only when it changes: juliapkg resolves again when it does): WeanJ, `dev`ed
    from `sources` (`weanj_requirement`), and the project's own Julia packages
    (`requirements`)."""
    wanted = requirements(root) or {}
    wanted.setdefault("packages", {})["WeanJ"] = weanj_requirement(sources)
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


# --- what computes: known without starting Julia --------------------------------------------


def environment_folder(environ=None) -> Path:
    """The Julia environment the worker runs in, as juliacall and juliapkg choose it
    (pyjuliapkg's `state.py`, read): `$PYTHON_JULIACALL_PROJECT` (used as it is), else
    `$PYTHON_JULIAPKG_PROJECT`, else `<virtual environment>/julia_env` (the worker runs
    this Python, so `sys.prefix` is its), else `$CONDA_PREFIX/julia_env`, else
    `<depot>/environments/pyjuliapkg`."""
    env = os.environ if environ is None else environ
    for var in ("PYTHON_JULIACALL_PROJECT", "PYTHON_JULIAPKG_PROJECT"):
        if env.get(var):
            return Path(env[var])
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix).resolve() / "julia_env"
    if env.get("CONDA_PREFIX"):
        return Path(env["CONDA_PREFIX"]).resolve() / "julia_env"
    depot = env.get("JULIA_DEPOT_PATH", "").split(os.pathsep)[0]
    return Path(depot or Path.home() / ".julia").resolve() / "environments" / "pyjuliapkg"


def _manifests(folder: Path) -> list[Path]:
    """The environment's manifests (`Manifest.toml`, `JuliaManifest.toml` and their
    versioned forms `Manifest-v1.11.toml`): whichever Julia reads, all are digested."""
    try:
        return sorted(p for p in folder.glob("*Manifest*.toml") if p.is_file())
    except OSError:
        return []


# Enzyme's entry of a Manifest (`[[deps.Enzyme]]`, its keys up to the next table) and
# its version.
_ENZYME = re.compile(r'^\[\[deps\.Enzyme\]\]\n(?:[^\[\n].*\n|\n)*?version\s*=\s*"([^"]+)"', re.M)


def environment_identity(folder: Path) -> str:
    """The worker environment as resolved: the Enzyme version its Manifest holds and a
    digest of the Manifest's content; before any worker resolved it, "no manifest yet"
    (then the first command that starts a worker writes it, and the key of every Julia
    record changes once)."""
    found = _manifests(folder)
    if not found:
        return f"environment {folder}: no manifest yet"
    texts = []
    for path in found:
        with contextlib.suppress(OSError):
            texts.append(path.name + "\n" + path.read_text(encoding="utf-8", errors="replace"))
    joined = "\n\0\n".join(texts)
    enzyme = _ENZYME.search(joined)
    said = f"Enzyme {enzyme.group(1)}" if enzyme else "no Enzyme in the manifest"
    return f"{said} (environment {folder}, manifest sha256 {text_digest(joined)[:16]})"


def weanj_sources_digest(sources: Path) -> str:
    """A digest of WeanJ's package: `src/` and `Project.toml`, by paths relative to it
    (a dev'ed package's Manifest entry holds no digest of its files)."""
    files = sorted(p for p in (sources / "src").rglob("*.jl") if p.is_file())
    files.append(sources / "Project.toml")
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(sources).as_posix().encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _stand_in_identity(command: str) -> str:
    """A stand-in worker: its command and a digest of the files it names (its script)."""
    h = hashlib.sha256()
    for word in shlex.split(command):
        path = Path(word)
        with contextlib.suppress(OSError):
            if path.is_file() and path.stat().st_size < MAX_STAND_IN_FILE:
                h.update(word.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"stand-in worker ({command}), not Julia: files sha256 {h.hexdigest()[:16]}"


MAX_STAND_IN_FILE = 4 << 20


def identity() -> str:
    """What computes the Julia variants here, known without starting Julia (module
    docstring): the same text when a record is written and when a later command looks it
    up, so that Julia records are reused; any part that changes makes them recomputed."""
    command = stand_in()
    if command is not None:
        return _stand_in_identity(command)
    found = locate_julia()
    if found.path is None:
        return "Julia (none found here)"
    from ._julia_find import julia_sources

    sources = julia_sources()
    weanj = "WeanJ missing" if sources is None else f"WeanJ sha256 {weanj_sources_digest(sources)}"
    try:
        juliacall = f"juliacall {importlib.metadata.version('juliacall')}"
    except importlib.metadata.PackageNotFoundError:
        juliacall = "juliacall (not installed)"
    environment = environment_identity(environment_folder())
    return f"Julia {found.version} ({found.path}), {environment}, {weanj}, {juliacall}"


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


def _start_worker(limit: tuple[float, str], variant: str) -> Worker:
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
        setup.update(
            julia=str(found.path),
            julia_version=found.version,
            requirements=str(write_requirements(root, folder, sources)),
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
    # The lifeline: the worker inherits the read end; the write end stays here (not
    # inheritable: no other child of weanj holds it open).
    watched, lifeline = os.pipe() if os.name == "posix" else (None, None)
    if watched is not None:
        env[LIFELINE_VARIABLE] = str(watched)
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
                pass_fds=() if watched is None else (watched,),
            )
        except OSError as e:
            for fd in (watched, lifeline):
                if fd is not None:
                    os.close(fd)
            where = f"{WORKER_VARIABLE}={command}" if command else argv[0]
            raise JuliaError(
                f"cannot start the Julia worker ({where}: {e.strerror or e})"
            ) from None
        finally:
            if watched is not None:
                with contextlib.suppress(OSError):
                    os.close(watched)
    on_exit(close)
    worker = Worker(process, log, lifeline)
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
