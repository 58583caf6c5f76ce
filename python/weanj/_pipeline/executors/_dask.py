"""Evaluations as Dask tasks (`weanj check --workers N`, `--scheduler ADDRESS`;
docs/distributed.md): the engine `_executors.ENGINES` names first.

Every evaluation not reused from its record is a task; each example's inputs go once to
every worker, not with each task (a worker plugin, `_dask_plugin`, which Dask also hands
to a worker that joins or restarts later); each worker loads the same project
(`$WEANJ_ROOT`, its `[tool.weanj]` modules and `pythonpath`) and keeps JAX's compilation
cache where the project keeps it. What comes back is data (loss, gradients, noise, check
numbers, seconds, or the fault), handed to `done` as it comes: the client writes its
record then (the client alone writes).

A worker that dies, at any moment: while the workers load the project, that worker is
left out (Dask's nanny starts it again, and the plugin loads the project in it); mid-task,
Dask runs the task again on another worker (an evaluation is pure, so this is safe) up to
its `distributed.scheduler.allowed-failures` (3 by default); past that the evaluation is
`error`, naming the last worker, and the others finish. Ctrl-C (or SIGTERM) cancels the
tasks; what had come back is recorded already. The workers of a local cluster ignore
SIGINT (a terminal sends Ctrl-C to the whole process group): the client alone answers it,
with one line, and stops them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..._errors import InputError, WeanjError
from ..._judge._contract import Fault, fault_of
from ..._model import Gradient, Inputs, Variant
from ..evaluation._evaluate import first_line, reproduce_command
from ..evaluation._on_device import label_of
from ._dask_start import did_not_start
from ._executors import Arrivals, Remote, RunRequest, add_to_clock
from ._processes import inputs_payload

EXTRA = "pip install 'weanj[distributed]'"

# A worker of a local cluster ignores SIGINT (Dask's preload: Python text run in each
# worker process as it starts, restarts included): the terminal's Ctrl-C reaches the whole
# process group, and each worker would print its own KeyboardInterrupt traceback.
_IGNORE_SIGINT = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"


def _distributed():
    """Dask's `distributed`, imported only when an executor needs it."""
    try:
        import distributed
    except ImportError:
        raise InputError(
            f"--workers and --scheduler run evaluations on Dask, which is not installed: {EXTRA}"
        ) from None
    return distributed


class DaskExecutor(Remote):
    """Evaluations as Dask tasks (module docstring)."""

    name = "dask"
    dashboard: str | None = None

    @classmethod
    def require(cls) -> None:
        _distributed()

    @contextlib.contextmanager
    def client(self, say: Callable[[str], None]) -> Iterator[Any]:
        """A client of the local cluster (started here, its dashboard named) or of the
        scheduler at `address`; closed on the way out."""
        distributed = _distributed()
        # Dask's own INFO lines (workers starting, closing) are not weanj's progress.
        for name in ("distributed", "distributed.scheduler", "distributed.nanny"):
            logging.getLogger(name).setLevel(logging.WARNING)
        # a result lost with its worker is fetched again here, and said in its line
        logging.getLogger("distributed.client").setLevel(logging.ERROR)
        with contextlib.ExitStack() as stack:
            if self.address is None:
                cluster = stack.enter_context(_local_cluster(distributed, self.workers))
                self.dashboard = cluster.dashboard_link
                say(
                    f"weanj: a local Dask cluster of {self.workers} worker process(es); "
                    f"dashboard {self.dashboard} (needs bokeh)"
                )
                client = stack.enter_context(distributed.Client(cluster))
            else:
                try:
                    client = stack.enter_context(distributed.Client(self.address, timeout="10s"))
                except TypeError:  # tls:// without certificates: Dask finds no SSLContext
                    if not str(self.address).startswith("tls://"):
                        raise
                    raise InputError(
                        f"the Dask scheduler {self.address} speaks TLS, which needs a security "
                        "configuration weanj does not make: set Dask's distributed.comm.tls "
                        "ca-file and client cert and key (e.g. $DASK_DISTRIBUTED__COMM__TLS__"
                        "CA_FILE), or use a tcp:// address"
                    ) from None
                except (OSError, TimeoutError, ValueError) as e:
                    raise InputError(
                        f"cannot reach the Dask scheduler at {self.address} ({first_line(e)})"
                    ) from None
                say(f"weanj: Dask scheduler {self.address}")
            yield client

    def evaluate(self, todo: list[tuple], asked: RunRequest, done: Arrivals) -> None:
        """Every evaluation of `todo` as a task, each handed to `done` as it comes back."""
        from ._dask_plugin import WeanjProject

        token = uuid.uuid4().hex[:8]
        setup = {**worker_setup(self.config), "run": token, "options": asked.options}
        payloads = {inputs.digest: inputs_payload(inputs) for _, inputs, _ in todo}
        plugin = f"weanj-{token}"
        with self.client(asked.say) as client:
            _ready_everywhere(client, setup)
            # the inputs travel once per worker, with the project (`_dask_plugin`)
            _register(client, WeanjProject(setup, payloads), plugin)
            try:
                _tasks(client, todo, setup, asked, done, token)
            finally:  # a long-lived cluster keeps no run's inputs
                with contextlib.suppress(Exception):
                    client.unregister_worker_plugin(plugin)


ENGINE = DaskExecutor


def _tasks(
    client, todo: list[tuple], setup: dict, asked: RunRequest, done: Arrivals, token
) -> None:
    """Submit one task per evaluation and hand each result to `done` as it comes."""
    from ._dask_plugin import run_task

    distributed = _distributed()
    futures: dict[Any, tuple] = {}
    for v, inputs, dtype in todo:
        args = (setup, inputs.digest, v.example.name, v.name, dtype, asked.timeout)
        key = f"weanj-{v.example.name}-{label_of(v, dtype)}-{token}"
        futures[client.submit(run_task, *args, key=key, pure=False)] = ((v, inputs, dtype), args, 1)
    try:
        flow = distributed.as_completed(list(futures))
        for future in flow:
            item, args, attempt = futures[future]
            try:
                found, checks, where, seconds = _result(future, *item, asked.shown_path)
            except _Lost as e:
                if attempt < _ATTEMPTS:  # pure: computing it again is safe
                    again = client.submit(
                        run_task, *args, key=f"{future.key}-{attempt + 1}", pure=False
                    )
                    futures[again] = (item, args, attempt + 1)
                    flow.add(again)
                    continue
                command = reproduce_command(*item, asked.shown_path)
                found, checks, where, seconds = fault_of(e, str(e), command), {}, "", 0.0
            running = _running(client, futures)
            done(item, found, checks, seconds, where, running, kept=not _worker_died(found))
    except BaseException:  # Ctrl-C, SIGTERM: what came back is recorded; the rest cancelled
        with contextlib.suppress(Exception):
            client.cancel(list(futures), force=True)
        raise


# A result lost after its task finished (its worker died before the client fetched it):
# the task is submitted again, this many times in all.
_ATTEMPTS = 3


class _Lost(Exception):
    """A finished task's result that could not be fetched."""


def _running(client, futures: dict) -> int:
    """The tasks of this run that workers hold now (Dask's own count)."""
    try:
        ours = {f.key for f in futures if not f.done()}
        held = client.processing()
        threads = sum(client.nthreads().values())
        return min(threads, sum(1 for keys in held.values() for k in keys if k in ours))
    except Exception:  # noqa: BLE001 - a progress figure, never a failure
        return sum(1 for f in futures if not f.done())


def _worker_died(found) -> bool:
    return isinstance(found, Fault) and found.what.startswith(_DIED)


_DIED = "the Dask worker"


def _result(future, v: Variant, inputs: Inputs, dtype: str, shown):
    """`(Gradient or Fault, checks, worker, seconds)` of a finished task; a task that failed
    (its worker died, or weanj's own error on the worker) is that evaluation's `error`."""
    distributed = _distributed()
    command = reproduce_command(v, inputs, dtype, shown)
    if future.status == "error":
        e = future.exception()
        if isinstance(e, distributed.KilledWorker):
            worker = getattr(e.last_worker, "address", str(e.last_worker))
            what = (
                f"{_DIED} {worker} running {v.name} died, on each of "
                f"{e.allowed_failures + 1} attempt(s) (an evaluation is retried on another "
                "worker; see that worker's log)"
            )
            return fault_of(e, what, command), {}, worker, 0.0
        what = f"{_DIED} could not evaluate {v.name}: {first_line(e)}"
        return fault_of(e, what, command), {}, "", 0.0
    try:
        out = future.result()
    except Exception as e:  # cancelled, or lost with its worker: not the variant's doing
        raise _Lost(
            f"{_DIED} holding the result of {v.name} lost it ({first_line(e)}), {_ATTEMPTS} times"
        ) from None
    add_to_clock(out.get("compile"))
    found = out["found"]
    if isinstance(found, Gradient):  # back to this process's example and variant
        found.example, found.of = v.example, v
    return found, out["checks"], out["worker"], out["seconds"]


@contextlib.contextmanager
def _local_cluster(distributed, workers: int) -> Iterator[Any]:
    """N single-threaded worker processes on 127.0.0.1 (a task is one evaluation, and
    JAX spreads one evaluation over the cores itself), ignoring SIGINT; the dashboard on
    a free port."""
    try:
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.CRITICAL,  # a task that fails is said in its line
            preload=[_IGNORE_SIGINT],
        )
    except Exception as e:  # Dask closed what it had started before raising
        raise WeanjError(did_not_start(workers, e)) from None
    with cluster:
        yield cluster


def worker_setup(config: Any) -> dict:
    """What a worker needs to load the client's project and keep its compilation cache."""
    from ..._io._jax_cache import VARIABLE

    return {"root": str(Path(config.root).resolve()), "cache": os.environ.get(VARIABLE)}


def _register(client, plugin, name: str) -> None:
    """The run's worker plugin, on every worker now and every one that (re)starts later.
    A worker lost while it is handed out (the scheduler holds it already, and hands it to
    that worker's restart) is asked again, twice; a task that still finds no inputs costs
    that evaluation only."""
    for _ in range(3):
        try:
            client.register_plugin(plugin, name=name)
            return
        except OSError:  # a connection to a worker closed: it died meanwhile
            with contextlib.suppress(TimeoutError):
                client.wait_for_workers(1, timeout=60)


def _ready_everywhere(client, setup: dict) -> None:
    """Every worker loads the project now (in parallel, and once), or one line says which
    cannot; a cluster with no worker is waited for, a while. A worker that dies meanwhile
    (its answer an error of the connection) is left out: its nanny starts it again, the
    plugin loads the project in it, and a task it cannot run costs that evaluation only."""
    try:
        client.wait_for_workers(1, timeout=60)
    except TimeoutError:
        raise WeanjError("the Dask cluster has no worker (waited 60 s)") from None
    from ._dask_plugin import ready

    try:
        answers = client.run(ready, setup, on_error="return")
    except OSError:  # the connection of a worker closed while asked: asked again, by tasks
        return
    for worker, error in sorted(answers.items()):
        if isinstance(error, str):
            raise WeanjError(f"Dask worker {worker} cannot load the project: {error}")
