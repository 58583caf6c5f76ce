"""Executors: where `weanj check`'s evaluations run (docs/distributed.md, "Past one machine").

An evaluation is one variant × dtype × inputs: its loss, gradient and rounding noise, and,
in float64, the numbers of its gradient checks (Taylor, jvp). It is pure: what it computes
depends on its inputs, code and versions only (the evaluation records' key), so it may run
anywhere, and run again.

Every executor has one method, `session(asked)` (the `Executor` protocol): given what
the run asks (`RunRequest`: its plans, time limit, records, where its events go), the
`Session` the judge asks its evaluations of.

- **In-process** (`InProcess`, the default, no dependency): the session evaluates each
  one when the judge first asks for it, one after another.
- **Elsewhere** (`Remote`, the base of every engine that evaluates in other processes):
  the records are consulted *before* anything is sent (a reused evaluation costs
  nothing), the sharded variants run first under jax.distributed with `--processes P`,
  and the rest go to the engine's `evaluate(todo, asked, done)`, which calls `done` as
  each comes back. `done` is the one place a result lands: the client writes its record
  at once (the client alone writes: the store, the records, `check.json`), says its
  progress line, and hands the numbers to the session, which serves them to the judge as a
  reused evaluation's are, so the verdicts are the same whatever the executor. An
  interrupted run therefore keeps every evaluation that had come back.
- **Dask** (`_dask.py`; `--workers N`: a local cluster of N worker processes;
  `--scheduler ADDRESS`, `$DASK_SCHEDULER_ADDRESS` or `[tool.weanj] scheduler`: an
  existing cluster; the extra `weanj[distributed]`).

Another engine (Ray, say) is one module holding a `Remote` subclass named `ENGINE`, and
one line in `ENGINES` naming it and the address schemes it takes (`ray://…`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..._check_options import DEFAULTS, CheckOptions
from ..._errors import InputError
from ..._judge._contract import Fault
from ..._judge._events import EvaluationFinished
from ..._model import Gradient, Inputs, Variant
from ..evaluation._on_device import label_of
from ..session._session import Session

SCHEDULER_VARIABLE = "DASK_SCHEDULER_ADDRESS"

# The engines that evaluate elsewhere: {name: (module in this package, address schemes it
# takes)}. The first also takes `--workers N` (a local cluster) and any address that no
# other engine's scheme names (Dask's own `tcp://`, `tls://`, a bare `host:port`).
ENGINES: dict[str, tuple[str, tuple[str, ...]]] = {
    "dask": ("._dask", ()),
}


@dataclass
class RunRequest:
    """What a run asks of its executor: its `plans` ({example: Plan or its error}), each
    call's time limit (`timeout`), where lines and events go (`say`, `emit`), how paths
    are shown, its evaluation `records` (or None), the check's `options` (its sessions read
    `fd` and `order` there); an engine that evaluates before the judge asks
    adds each example's evaluation seconds to `elsewhere_s` (its progress line's)."""

    plans: dict
    timeout: float | None
    say: Callable[[str], None]
    emit: Callable[[Any], None] | None
    shown_path: Callable
    records: Any
    options: CheckOptions = DEFAULTS
    elsewhere_s: dict[str, float] = field(default_factory=dict)

    def open_session(self, records: Any, said: set | frozenset = frozenset()) -> Session:
        """The `Session` an engine opens for this run: its limit, lines and paths, with
        the records it reads (`records`); its events go to the run, but for the
        evaluations already told (`said`: `(example, label)`s an engine evaluated)."""
        emit = self.emit
        if emit is not None and said:
            emit_all = self.emit

            def emit(event: Any) -> None:
                if (getattr(event, "example", None), getattr(event, "label", None)) not in said:
                    emit_all(event)

        return Session(
            timeout_s=self.timeout,
            say=self.say,
            emit=emit,
            shown_path=self.shown_path,
            records=records,
            options=self.options,
        )


class Executor(Protocol):
    """Where evaluations run: `session(asked)` opens the `Session` the judge asks."""

    name: str

    def session(self, asked: RunRequest) -> AbstractContextManager[Session]: ...


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


def engine_for(address: str | None) -> type:
    """The engine's executor class for an address (None: a local cluster): the engine
    whose scheme it names, else the first engine."""
    scheme = address.split("://", 1)[0] if address and "://" in address else ""
    name = next((n for n, (_, schemes) in ENGINES.items() if scheme in schemes), None)
    module, _ = ENGINES[name or next(iter(ENGINES))]
    return importlib.import_module(module, __package__).ENGINE


def executor_for(
    workers: int | None = None,
    scheduler: str | None = None,
    config: Any = None,
    *,
    processes: int | None = None,
) -> Executor:
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
    engine = engine_for(address)
    engine.require()  # one line naming what to install, before anything is read or run
    return engine(config, workers=workers, address=address, processes=processes)


def _across_processes(
    asked: RunRequest, delivered: DeliveredRecords, processes, counter, root
) -> set:
    """`--processes P`: every sharded variant's evaluation under jax.distributed on P
    local processes, in this process's turn (one cluster at a time: they share the
    cores). Never reused from, nor written to, the evaluation records: a record holds the
    evaluation on one process's devices, and a later check without `--processes` reuses
    that. **Returns** the `(example, label)`s evaluated."""
    from ._processes import evaluate_across

    done = set()
    for plan in asked.plans.values():
        if not hasattr(plan, "subjects"):
            continue
        for s in plan.subjects.values():
            if not s.live or s.skip is not None or s.device != "cpu":  # device runs: here
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
                timeout=asked.timeout,
                shown_path=asked.shown_path,
            )
            seconds = time.perf_counter() - t0
            delivered.deliver(s.variant, plan.inputs, s.dtype, found, seconds=seconds)
            counter.line(s.variant, s.dtype, found, f"{seconds:.1f} s", f"{processes} processes")
            done.add(_label_key(s.variant, s.dtype))
    return done


class InProcess:
    """Every evaluation in this process, when the judge asks for it (today's weanj);
    with `processes`, the sharded variants' first, under jax.distributed."""

    name = "in-process"

    def __init__(self, config: Any = None, *, processes: int | None = None):
        self.config = config
        self.processes = processes

    @contextlib.contextmanager
    def session(self, asked: RunRequest) -> Iterator[Session]:
        records, said = asked.records, set()
        if self.processes:
            delivered = DeliveredRecords(records, asked.elsewhere_s)
            counter = _Counter(asked.emit)
            said = _across_processes(asked, delivered, self.processes, counter, self.config.root)
            records = delivered
        with asked.open_session(records, said) as session:
            yield session


# --- evaluating elsewhere: what every engine shares ------------------------------------------


def _label_key(variant: Variant, dtype: str) -> tuple[str, str]:
    return variant.example.name, label_of(variant, dtype)


class DeliveredRecords:
    """What the engine brought back, answering the session as evaluation records do: its
    `recall` gives a delivered evaluation, its `recall_check` a delivered check's numbers
    (which go into the real records as a live check's do). Anything not delivered is the
    real records' business (and, where they have none, the session computes it here).
    `seconds`: each example's evaluation seconds, added to as they are delivered."""

    def __init__(self, records: Any, seconds: dict[str, float] | None = None):
        self.records = records
        self.outcomes: dict[tuple, Gradient | Fault] = {}
        self.checks: dict[tuple, dict] = {}
        self.seconds = {} if seconds is None else seconds

    def deliver(
        self, variant: Variant, inputs: Inputs, dtype: str, found, checks=None, seconds=0.0
    ) -> None:
        name = variant.example.name
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.outcomes[(*_label_key(variant, dtype), inputs.key(dtype))] = found
        for (kind, array), numbers in (checks or {}).items():
            self.checks[(*_label_key(variant, dtype), kind, array)] = numbers

    def recall(self, variant: Variant, inputs: Inputs, dtype: str, device: str = "cpu"):
        found = None  # engines deliver CPU runs only: a device run is evaluated here
        if device == "cpu":
            found = self.outcomes.get((*_label_key(variant, dtype), inputs.key(dtype)))
        if found is not None or self.records is None:
            return found
        return self.records.recall(variant, inputs, dtype, device=device)

    def keep(self, *args, **kwargs) -> None:
        if self.records is not None:
            self.records.keep(*args, **kwargs)

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


class Arrivals:
    """Where an engine hands each evaluation as it comes back (`done(item, found, ...)`):
    its record written at once (unless `kept=False`: a fault of the engine's, not the
    variant's, such as a worker that died), its progress line, its numbers delivered."""

    def __init__(self, delivered: DeliveredRecords, counter: _Counter):
        self.delivered, self.counter = delivered, counter

    def __call__(
        self, item: tuple, found, checks=None, seconds=0.0, where="", running=None, kept=True
    ) -> None:
        v, inputs, dtype = item
        self.delivered.deliver(v, inputs, dtype, found, checks, seconds)
        if kept and self.delivered.records is not None:
            self.delivered.records.keep(v, inputs, dtype, found, checks)
        self.counter.line(v, dtype, found, f"{seconds:.1f} s", where, running)


class Remote:
    """An engine that evaluates in other processes (the module docstring): a subclass
    gives `require()` (a classmethod: one line naming what to install, where its library
    is missing) and `evaluate(todo, asked, done)`, which evaluates every `(variant,
    inputs, dtype)` of `todo` and calls `done` with each as it comes back."""

    name = "remote"

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

    @classmethod
    def require(cls) -> None:
        """Nothing to install (an engine whose library may be missing says so here)."""

    def evaluate(self, todo: list[tuple], asked: RunRequest, done: Arrivals) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def session(self, asked: RunRequest) -> Iterator[Session]:
        delivered = DeliveredRecords(asked.records, asked.elsewhere_s)
        counter = _Counter(asked.emit)
        across = set()
        if self.processes:
            across = _across_processes(asked, delivered, self.processes, counter, self.config.root)
        todo = _reuse_first(asked, delivered, counter, across)
        if todo:
            self.evaluate(todo, asked, Arrivals(delivered, counter))
        with asked.open_session(delivered, counter.announced) as session:
            yield session


def _reuse_first(
    asked: RunRequest, delivered: DeliveredRecords, counter: _Counter, across
) -> list[tuple]:
    """Every live evaluation of the plans not evaluated yet: a reused one is delivered
    from its record (no task); **Returns** the others, `[(variant, inputs, dtype)]`."""
    records = asked.records
    todo = []
    for plan in asked.plans.values():
        if not hasattr(plan, "subjects"):  # an example whose inputs cannot be read
            continue
        for s in plan.subjects.values():
            if not s.live or s.skip is not None or s.device != "cpu":  # device runs: here
                continue
            if _label_key(s.variant, s.dtype) in across:  # evaluated under jax.distributed
                continue
            found = records.recall(s.variant, plan.inputs, s.dtype) if records else None
            if found is not None:
                delivered.deliver(s.variant, plan.inputs, s.dtype, found)
                counter.line(s.variant, s.dtype, found, "reused")
                continue
            todo.append((s.variant, plan.inputs, s.dtype))
    return todo


class _Counter:
    """The events of the evaluations an engine made (`[3/29] 01-jacobi jax-jacobi: 1.2 s,
    ok (on tcp://…; 2 running)` in check's progress), and which it announced (`announced`)."""

    def __init__(self, emit: Callable[[Any], None] | None):
        self.emit = emit
        self.announced: set[tuple[str, str]] = set()

    def line(self, v: Variant, dtype: str, found, how: str, where="", running=None) -> None:
        self.announced.add(_label_key(v, dtype))
        if self.emit is None:
            return
        extra = []
        if where:
            extra.append(f"on {where}")
        if running is not None:
            extra.append(f"{running} running")
        tail = f" ({'; '.join(extra)})" if extra else ""
        label = label_of(v, dtype)
        self.emit(EvaluationFinished(v.example.name, label, found, how, tail))


# --- the compilation clock of evaluations made elsewhere ------------------------------------

_CLOCK_FIGURES = ("compiled_s", "retrieval_s", "hits", "requests")


def clock_figures(clock) -> list:
    return [getattr(clock, name) for name in _CLOCK_FIGURES]


def add_to_clock(figures) -> None:
    """A task's compilation figures, added to this process's clock: `weanj check`'s
    summary line counts the workers' compilations as its own (the worker is single-threaded,
    so its clock's difference over a task is that task's)."""
    from ..._io import _jax_cache

    clock = _jax_cache.clock()
    for name, value in zip(_CLOCK_FIGURES, figures or (), strict=False):
        setattr(clock, name, getattr(clock, name) + value)
