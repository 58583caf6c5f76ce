"""Executors: where `weanj check`'s evaluations run (docs/distributed.md, "Past one machine").

An evaluation is one variant × dtype × inputs: its loss, gradient and rounding noise, and,
in float64, the numbers of its gradient checks (Taylor, jvp). It is pure: what it computes
depends on its inputs, code and versions only (the evaluation records' key), so it may run
anywhere, and run again.

- **In-process** (the default, no dependency): the session evaluates each one when the
  judge first asks for it, one after another, as weanj always did.
- **Dask** (`--workers N`: a local cluster of N worker processes; `--scheduler ADDRESS`,
  `$DASK_SCHEDULER_ADDRESS` or `[tool.weanj] scheduler`: an existing cluster; the extra
  `weanj[distributed]`): every evaluation not reused from its record is a task. The
  records are consulted *before* anything is sent (a reused evaluation costs no task);
  each example's inputs go once to every worker, not with each task (a worker plugin,
  `_dask_plugin`, which Dask also hands to a worker that joins or restarts later); each
  worker loads the same project (`$WEANJ_ROOT`, its `[tool.weanj]` modules and
  `pythonpath`) and keeps JAX's compilation cache where the project keeps it. What comes
  back is data (loss, gradients, noise, check numbers, seconds, or the fault); the client
  alone writes the store, the records and `check.json`, after every task is in, and the
  judge judges the numbers exactly as it judges in-process ones (a check's numbers are
  served to it as a reused evaluation's are), so the verdicts are the same whatever the
  executor.

A worker that dies mid-task: Dask runs the task again on another worker (an evaluation
is pure, so this is safe) up to its `distributed.scheduler.allowed-failures` (3 by
default); past that the evaluation is `error`, naming the last worker, and the others
finish. Ctrl-C cancels the tasks; nothing has been written by then.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .._errors import InputError, WeanjError
from .._judge._contract import Fault, fault_of
from .._model import Gradient, Inputs, Variant
from ._evaluate import first_line, label_of, reproduce_command
from ._processes import inputs_payload
from ._session import Session

EXTRA = "pip install 'weanj[distributed]'"
SCHEDULER_VARIABLE = "DASK_SCHEDULER_ADDRESS"


def _distributed():
    """Dask's `distributed`, imported only when an executor needs it."""
    try:
        import distributed
    except ImportError:
        raise InputError(
            f"--workers and --scheduler run evaluations on Dask, which is not installed: {EXTRA}"
        ) from None
    return distributed


def scheduler_of(config: Any) -> str | None:
    """The scheduler a project names: `$DASK_SCHEDULER_ADDRESS`, else `[tool.weanj]
    scheduler` (None: none)."""
    address = os.environ.get(SCHEDULER_VARIABLE, "").strip()
    if address:
        return address
    table = getattr(config, "table", None) or {}
    value = table.get("scheduler")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"{config.pyproject}: [tool.weanj] scheduler must be a scheduler address, e.g. "
            'scheduler = "tcp://10.0.0.5:8786"'
        )
    return value.strip()


def executor_for(
    workers: int | None = None,
    scheduler: str | None = None,
    config: Any = None,
    *,
    processes: int | None = None,
) -> InProcess | DaskExecutor:
    """The executor a command line asks for: `--workers N` (0: in-process, whatever the
    project names), `--scheduler ADDRESS`, else the project's scheduler, else in-process."""
    if workers is not None and scheduler is not None:
        raise InputError(
            "give --workers (a local cluster) or --scheduler (an existing one), not both"
        )
    if workers == 0:
        return InProcess(config, processes=processes)
    address = scheduler if workers is None else None
    if workers is None and address is None and config is not None:
        address = scheduler_of(config)
    if workers is None and address is None:
        return InProcess(config, processes=processes)
    _distributed()  # one line naming the extra, before anything is read or run
    return DaskExecutor(config, workers=workers, address=address, processes=processes)


def _across_processes(plans: dict, delivered: Delivered, processes, timeout, counter, shown, root):
    """`--processes P`: every sharded variant's evaluation under jax.distributed on P
    local processes, in this process's turn (one cluster at a time: they share the
    cores). Never reused from, nor written to, the evaluation records: a record holds the
    evaluation on one process's devices, and a later check without `--processes` reuses
    that. **Returns** the `(example, label)`s evaluated."""
    from ._processes import evaluate_across

    done = set()
    for plan in plans.values():
        if not hasattr(plan, "subjects"):
            continue
        for s in plan.subjects.values():
            if not s.live or s.skip is not None or s.device != "cpu":
                continue
            if not s.variant.multi_device:
                continue
            t0 = time.perf_counter()
            found = evaluate_across(
                s.variant,
                plan.inputs,
                s.dtype,
                processes,
                root=root,
                timeout=timeout,
                shown_path=shown,
            )
            delivered.deliver(s.variant, plan.inputs, s.dtype, found)
            seconds = f"{time.perf_counter() - t0:.1f} s"
            counter.line(s.variant, s.dtype, found, seconds, f"{processes} processes")
            done.add(_label_key(s.variant, s.dtype))
    return done


class _Unless:
    """check's progress, but silent for the evaluations already said."""

    def __init__(self, progress, said: set):
        self.progress, self.said = progress, said

    def __call__(self, label, found, seconds, reused) -> None:
        if (self.progress.example, label) not in self.said:
            self.progress(label, found, seconds, reused)


class InProcess:
    """Every evaluation in this process, when the judge asks for it (today's weanj);
    with `processes`, the sharded variants' first, under jax.distributed."""

    name = "in-process"

    def __init__(self, config: Any = None, *, processes: int | None = None):
        self.config = config
        self.processes = processes

    @contextlib.contextmanager
    def session(
        self,
        plans: dict,
        *,
        timeout: float | None,
        say: Callable[[str], None],
        progress: Callable | None,
        shown_path: Callable,
        records: Any,
    ) -> Iterator[Session]:
        if self.processes:
            delivered = Delivered(records)
            counter = _Counter(progress, say)
            said = _across_processes(
                plans, delivered, self.processes, timeout, counter, shown_path, self.config.root
            )
            records = delivered
            progress = _Unless(progress, said) if progress is not None else None
        with Session(
            timeout_s=timeout,
            say=say,
            on_evaluated=progress,
            shown_path=shown_path,
            records=records,
        ) as session:
            yield session


# --- the client's side ------------------------------------------------------------------------


def _label_key(variant: Variant, dtype: str) -> tuple[str, str]:
    return variant.example.name, label_of(variant, dtype)


class Delivered:
    """What the tasks brought back, answering the session as evaluation records do: its
    `recall` gives a delivered evaluation, its `recall_check` a delivered check's numbers
    (which go into the real records as a live check's do). Anything not delivered is the
    real records' business (and, where they have none, the session computes it here)."""

    def __init__(self, records: Any):
        self.records = records
        self.outcomes: dict[tuple, Gradient | Fault] = {}
        self.checks: dict[tuple, dict] = {}

    def deliver(self, variant: Variant, inputs: Inputs, dtype: str, found, checks=None) -> None:
        self.outcomes[(*_label_key(variant, dtype), inputs.key(dtype))] = found
        for (kind, array), numbers in (checks or {}).items():
            self.checks[(*_label_key(variant, dtype), kind, array)] = numbers

    def recall(self, variant: Variant, inputs: Inputs, dtype: str):
        found = self.outcomes.get((*_label_key(variant, dtype), inputs.key(dtype)))
        if found is not None or self.records is None:
            return found
        return self.records.recall(variant, inputs, dtype)

    def keep(self, *args) -> None:
        if self.records is not None:
            self.records.keep(*args)

    def recall_check(self, variant: Variant, dtype: str, kind: str, array: str) -> dict | None:
        numbers = self.checks.get((*_label_key(variant, dtype), kind, array), None)
        if numbers is None:
            return (
                None
                if self.records is None
                else self.records.recall_check(variant, dtype, kind, array)
            )
        if "timeout" in numbers:  # the judge's own TimeoutError path: verdict timeout
            raise TimeoutError(numbers["timeout"])
        self.keep_check(variant, dtype, kind, array, numbers)
        return numbers

    def keep_check(self, *args) -> None:
        if self.records is not None:
            self.records.keep_check(*args)


class DaskExecutor:
    """Evaluations as Dask tasks (module docstring)."""

    name = "dask"

    def __init__(
        self,
        config: Any = None,
        *,
        workers: int | None = None,
        address: str | None = None,
        processes: int | None = None,
    ):
        self.config = config
        self.workers = workers
        self.address = address
        self.processes = processes
        self.dashboard: str | None = None

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

    @contextlib.contextmanager
    def session(
        self,
        plans: dict,
        *,
        timeout: float | None,
        say: Callable[[str], None],
        progress: Any,
        shown_path: Callable,
        records: Any,
    ) -> Iterator[Session]:
        delivered = Delivered(records)
        across = set()
        if self.processes:
            counter = _Counter(progress, say)
            across = _across_processes(
                plans, delivered, self.processes, timeout, counter, shown_path, self.config.root
            )
        with self.client(say) as client:
            self.evaluate(client, plans, delivered, timeout, say, progress, shown_path, across)
        with Session(
            timeout_s=timeout, say=say, on_evaluated=None, shown_path=shown_path, records=delivered
        ) as session:
            yield session

    def evaluate(
        self, client, plans, delivered: Delivered, timeout, say, progress, shown, across=()
    ) -> None:
        """Every live evaluation of the plans: reused ones from their records, the others
        as tasks, each delivered as it comes back."""
        distributed = _distributed()
        records = delivered.records
        token = uuid.uuid4().hex[:8]
        setup = {**worker_setup(self.config), "run": token}
        _ready_everywhere(client, setup)
        payloads: dict[str, dict] = {}
        todo: list[tuple] = []
        futures: dict[Any, tuple] = {}
        counter = _Counter(progress, say)
        for plan in plans.values():
            if not hasattr(plan, "subjects"):  # an example whose inputs cannot be read
                continue
            inputs = plan.inputs
            for s in plan.subjects.values():
                if not s.live or s.skip is not None or s.device != "cpu":  # device runs: here
                    continue
                v = s.variant
                if _label_key(v, s.dtype) in across:  # evaluated under jax.distributed
                    continue
                found = records.recall(v, inputs, s.dtype) if records is not None else None
                if found is not None:  # reused: no task
                    delivered.deliver(v, inputs, s.dtype, found)
                    counter.line(v, s.dtype, found, "reused")
                    continue
                payloads.setdefault(inputs.digest, inputs_payload(inputs))
                todo.append((v, inputs, s.dtype))
        plugin = f"weanj-{token}"
        if todo:  # the inputs travel once per worker, with the project (`_dask_plugin`)
            from ._dask_plugin import WeanjProject

            client.register_plugin(WeanjProject(setup, payloads), name=plugin)
        from ._dask_plugin import run_task

        for v, inputs, dtype in todo:
            args = (setup, inputs.digest, v.example.name, v.name, dtype, timeout)
            key = f"weanj-{v.example.name}-{label_of(v, dtype)}-{token}"
            future = client.submit(run_task, *args, key=key, pure=False)
            futures[future] = (v, inputs, dtype, args, 1)
        try:
            flow = distributed.as_completed(list(futures))
            for future in flow:
                v, inputs, dtype, args, attempt = futures[future]
                try:
                    found, checks, where, seconds = _result(future, v, inputs, dtype, shown)
                except _Lost as e:
                    if attempt < _ATTEMPTS:  # pure: computing it again is safe
                        again = client.submit(
                            run_task, *args, key=f"{future.key}-{attempt + 1}", pure=False
                        )
                        futures[again] = (v, inputs, dtype, args, attempt + 1)
                        flow.add(again)
                        continue
                    command = reproduce_command(v, inputs, dtype, shown)
                    found, checks, where, seconds = fault_of(e, str(e), command), {}, "", 0.0
                delivered.deliver(v, inputs, dtype, found, checks)
                if records is not None and not _worker_died(found):
                    records.keep(v, inputs, dtype, found)
                counter.line(v, dtype, found, f"{seconds:.1f} s", where, _running(client, futures))
        except BaseException:  # Ctrl-C: nothing written yet; the tasks are cancelled
            client.cancel(list(futures), force=True)
            raise
        finally:
            if todo:  # a long-lived cluster keeps no run's inputs
                with contextlib.suppress(Exception):
                    client.unregister_worker_plugin(plugin)


# A result lost after its task finished (its worker died before the client fetched it):
# the task is submitted again, this many times in all.
_ATTEMPTS = 3


class _Lost(Exception):
    """A finished task's result that could not be fetched."""


class _Counter:
    """`[3/29] 01-jacobi jax-jacobi: 1.2 s, ok (on tcp://…; 2 running)`, as check's."""

    def __init__(self, progress: Any, say: Callable[[str], None]):
        self.progress, self.say = progress, say

    def line(self, v: Variant, dtype: str, found, how: str, where="", running=None) -> None:
        if self.progress is None:
            return
        extra = []
        if where:
            extra.append(f"on {where}")
        if running is not None:
            extra.append(f"{running} running")
        tail = f" ({'; '.join(extra)})" if extra else ""
        self.progress.line(v.example.name, label_of(v, dtype), found, how, tail)


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
    _add_to_clock(out.get("compile"))
    found = out["found"]
    if isinstance(found, Gradient):  # back to this process's example and variant
        found.example, found.of = v.example, v
    return found, out["checks"], out["worker"], out["seconds"]


@contextlib.contextmanager
def _local_cluster(distributed, workers: int) -> Iterator[Any]:
    """N single-threaded worker processes on 127.0.0.1 (a task is one evaluation, and
    JAX spreads one evaluation over the cores itself); the dashboard on a free port."""
    with distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.CRITICAL,  # a task that fails is said in its line
    ) as cluster:
        yield cluster


def worker_setup(config: Any) -> dict:
    """What a worker needs to load the client's project and keep its compilation cache."""
    from .._io._jax_cache import VARIABLE

    return {"root": str(Path(config.root).resolve()), "cache": os.environ.get(VARIABLE)}


def _ready_everywhere(client, setup: dict) -> None:
    """Every worker loads the project now (in parallel, and once), or one line says which
    cannot; a cluster with no worker is waited for, a while."""
    try:
        client.wait_for_workers(1, timeout=60)
    except TimeoutError:
        raise WeanjError("the Dask cluster has no worker (waited 60 s)") from None
    from ._dask_plugin import ready

    for worker, error in sorted(client.run(ready, setup).items()):
        if error:
            raise WeanjError(f"Dask worker {worker} cannot load the project: {error}")


_CLOCK_FIGURES = ("compiled_s", "retrieval_s", "hits", "requests")


def clock_figures(clock) -> list:
    return [getattr(clock, name) for name in _CLOCK_FIGURES]


def _add_to_clock(figures) -> None:
    """A task's compilation figures, added to this process's clock: `weanj check`'s
    summary line counts the workers' compilations as its own (the worker is single-threaded,
    so its clock's difference over a task is that task's)."""
    from .._io import _jax_cache

    clock = _jax_cache.clock()
    for name, value in zip(_CLOCK_FIGURES, figures or (), strict=False):
        setattr(clock, name, getattr(clock, name) + value)
