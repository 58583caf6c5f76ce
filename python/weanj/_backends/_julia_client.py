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
  (the evaluation's limit, `[tool.weanj] timeout` or `--timeout`), or
  `$WEANJ_JULIA_TIMEOUT_S` where set and earlier (default 1800 s where no call is
  watched), for the start and each request: it is killed with everything it started and
  the call raises `TimeoutError` (the verdict `timeout`). A start that timed out is not
  tried again in the process; a variant whose request timed out is not asked again
  (its remaining evaluations are `timeout` at once, so a check waits one limit per
  variant, not one per dtype), while the next Julia variant starts a fresh worker;
- a kernel refuses its arguments (`InputError`), a variant is declared wrongly
  (`DefinitionError`), a kernel throws (`JuliaError`, Julia's stack trace in the log).

No worker outlives weanj. It runs in a process group of its own (`_julia_process`),
which `close` (on every exit: `_resources.on_exit`) and every failure above kill with
SIGKILL and reap; `close` never waits on a request in flight (a Ctrl-C arrives while one
is); for the exits that run no Python, its lifeline.

`$WEANJ_JULIA_WORKER` names another command to run as the worker (`_julia_stand_in`).
What computes a Julia evaluation, and the environments (weanj's, and the user's of
`[tool.weanj.julia] project`), are `_julia_env`'s, read without starting Julia; the
packages weanj's environment needs and their bounds, which the worker checks in the
stacked environments, `_julia_bounds`'.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from .. import _watch
from .._errors import DefinitionError, InputError, UnavailableError, say
from .._project import project_root
from .._resources import on_exit
from . import _julia_wire as wire
from ._julia_bounds import weanj_bounds
from ._julia_env import (
    ad_requirements,
    user_environment,
    write_requirements,
)
from ._julia_find import BELOW, FIX_VERSION, MINIMUM, SUPPORTED_TEXT, locate_julia, worker_settings
from ._julia_process import (
    JuliaError,
    Worker,
    open_log,
    spawn,
    work_folder,
)
from ._julia_stand_in import stand_in, stand_in_argv

WORKER_SCRIPT = Path(__file__).with_name("_julia_worker.py")
_PACKAGE = Path(__file__).resolve().parent.parent
# The time limit of a Julia call (the worker's start, each request) where the command
# sets none (`--timeout`): generous, since a start may install and precompile Enzyme and
# a kernel's first gradient compiles it with Enzyme (minutes each), but finite, so that a
# worker that stops answering never hangs weanj.
TIMEOUT_VARIABLE = "WEANJ_JULIA_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 1800.0
# Where the limits of a Julia call are set, said with every timeout.
LIMITS = f"[tool.weanj] timeout or --timeout; ${TIMEOUT_VARIABLE} for the Julia calls alone"

# The worker running, a start that failed (its error, raised again), the variants whose
# request timed out (`_variant_key`: the error's text, said again), what the worker said
# it runs.
_STATE: dict = {"worker": None, "failed": None, "timed_out": {}, "versions": None}
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
        _STATE.update(failed=None, versions=None, timed_out={})


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
    """The deadline of the next Julia call and how a timeout names it (module docstring)."""
    watched = _watch.deadline()
    own = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if watched is not None and not own:
        return watched, f"at the time limit ({LIMITS})"
    seconds = default_timeout_s()
    mine = time.monotonic() + seconds
    if watched is not None and watched <= mine:
        return watched, f"at the time limit ({LIMITS})"
    return mine, f"after {seconds:g} s, the time limit of a Julia call ({LIMITS})"


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
    not tried again in the same process: the next Julia evaluation gets the same error
    at once (a timeout saying so)."""
    if _STATE["failed"] is not None:
        failed = _STATE["failed"]
        if isinstance(failed, TimeoutError):
            raise TimeoutError(f"{failed}; not started again in this process") from None
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
    ad = ad_requirements()
    bounds = [] if sources is None else weanj_bounds(_PACKAGE / "juliapkg.json", sources, ad)
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
        # what the worker checks the stacked environments against (`_julia_bounds`)
        "bounds": bounds,
    }


def _command(root: Path, folder: Path, setup: dict, env: dict) -> list[str]:
    """The worker's command line, after finding Julia and writing the requirements (or a
    stand-in's command, `$WEANJ_JULIA_WORKER`)."""
    argv = stand_in_argv()
    if argv is not None:
        return argv
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
        worker = spawn(argv, env, project_root(), log_fd, log)
    finally:
        os.close(log_fd)
    on_exit(close)
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


def _variant_key(header: dict) -> tuple:
    """What tells a variant's requests apart from another's: its name, its kernel (file or
    package, and loss) and its example's arrays."""
    return tuple(str(header.get(k)) for k in ("variant", "file", "package", "loss", "names"))


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
    start and the request have a time limit each (`_limit`); a variant whose request timed
    out is not asked again (`TimeoutError` at once)."""
    key = _variant_key(header)
    with _LOCK:
        earlier = _STATE["timed_out"].get(key)
        if earlier is not None:
            raise TimeoutError(
                f"{variant} is not asked again: {earlier}; its other evaluations would wait as long"
            )
        worker = _STATE["worker"]
        if worker is None:
            worker = _start(_limit(), variant)
        try:
            reply, out = _exchange(
                worker, header, arrays, _limit(), f"computing {variant}'s {what}"
            )
        except TimeoutError as e:
            _STATE["timed_out"][key] = str(e)
            raise
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
