"""One check run: what every front end runs (docs/DESIGN.md §8.2, "One run under every
front end").

`weanj check` and `weanj.check()`, `weanj diff` and `weanj.diff()`, `weanj run` and
`weanj.evaluate()`, `pytest --weanj` and the gallery's tests (`tests/crossval/cases.py`,
through the plugin's own `weanj_run`) all make a `CheckRun` and render what it yields;
none assembles the plan, the `Session`, the evaluation records or the store writes
itself. A front end resolves names into objects (catalogs, `Places`, the project's
configuration) and hands them over; the run does the rest:

- **live** (`CheckRun(...)`: check, pytest, the API): the case table of each example
  with its variants evaluated (`_cases.read_plan(live=True)`), under the executor's
  `Session` (in-process, Dask, jax.distributed), the evaluation records reused and kept,
  each live gradient saved to the store and `check.json` written (with `save`);
- **store** (`CheckRun.of_store(...)`: diff): the same table and judge on the store's
  files, nothing evaluated;
- **one variant** (`evaluation_run(...).evaluate`: `weanj run`, `weanj.evaluate()`): one
  evaluation under the run's time limit; and the one naming scheme of a gradient written
  outside the store (`outside_store_path`: `weanj run`, `weanj.save_gradient`).

A run emits one stream of events (`_judge._events`): each evaluation started and
finished, each case judged, each example judged, the run finished with its `Judgement`.
Every front end is a listener of that stream, handed over at the start: the progress on
stderr (`_progress`), the store writes (`_store_writes.StoreWrites`), `check.json`, the
terminal's text, `--format jsonl`, the notebook's `Judgement`, the pytest plugin's items.
`judge()` judges every example in order; `judge_example` one (what a `pytest --weanj`
item asks for); `finish()` adds what is said once per run (the evaluations reused, what
did not run, the suspects, the orphaned results, the compilation clock) and emits the
run's end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..._check_options import DEFAULTS, CheckOptions
from ..._errors import WeanjError, say
from ..._io import _jax_cache, _safeh5
from ..._io._inputs import PROBED_FILE
from ..._judge._contract import Fault
from ..._judge._events import ExampleJudged, Listener, RunFinished, Stream
from ..._judge._judgement import Judgement
from ..._judge._suspects import suspects as find_suspects
from ..._judge._verdict import CaseJudgement, ExampleJudgement
from ..._model import DTYPES, Catalog, Gradient, Inputs, Variant
from ..._places import Places
from ..._project import project_config, time_limit
from ..._watch import Said, Watch
from ..evaluation._evaluate import evaluate as evaluate_variant
from ..executors._executors import InProcess, RunRequest
from ..records._records import Records
from ..records._reuse import example_reuse, reuse_line
from ..session._session import Session
from ._cases import judge_case, judge_plan, not_judged, read_plan, subject_outcome
from ._coverage import absent_did_not_run, coverage, device_did_not_run, did_not_run
from ._progress import Progress
from ._table import Case, Plan


class CheckRun:
    """One run of the judge over some examples: the plans, the `Session`, the evaluation
    records, the store writes and `check.json` (module docstring). Named for what
    `weanj check` does, since every other front end runs a part of it: diff its store
    mode, pytest its cases one by one, `weanj run` one of its evaluations.

    **Arguments** (all resolved objects: the front end has looked every name up):

    - `catalogs`: the examples, each with the variants to run (`left_out` the others);
    - `places`: where the project's files are;
    - `options`: what the check is asked (`_check_options.CheckOptions`, each option
      declared once there and read here or where it is used: `dtype`, `timeout` (0: none;
      else the project's), `fresh`, `save` (the run's evaluations are the store's: the
      store writes and `check.json` are listeners), `records` (reuse and keep evaluation
      records; default: `save`), `require` (default: the project's), `device` (each
      variant's run on every other device is judged against its family's CPU float64
      reference, `_device_cases`; default `[tool.weanj] devices`, else the CPU), `fd`,
      `order`, `verbose`, `progress`);
    - `executor`: where evaluations run (default in this process);
    - `listeners`: the front end's listeners of the run's events (`_judge._events`);
    - `config`: the project's `ProjectConfig` (records, executors, `require`, `devices`);
      `say`: where progress and notes go;
    - `every_example`: the names of every registered example, when the run covers them
      all (then results of examples no longer registered are noted);
    - `cache`: turn on JAX's persistent compilation cache (as every command does);
    - `devices`: the devices under test, resolved from `options.device` (default the CPU
      alone); `absent`: `{kind: why}` of those `[tool.weanj] devices` names that are
      absent here, said once and in the headline (`Judgement.coverage`).

    The store run is `CheckRun.of_store`; one evaluation's run `evaluation_run`.
    """

    def __init__(
        self,
        catalogs: Sequence[Catalog],
        places: Places,
        options: CheckOptions = DEFAULTS,
        executor: Any = None,
        listeners: Sequence[Listener] = (),
        *,
        config: Any = None,
        say: Callable[[str], None] = say,
        every_example: Sequence[str] | None = None,
        cache: bool = True,
        devices: tuple[str, ...] = ("cpu",),
        absent: Mapping[str, str] | None = None,
    ):
        self._open(catalogs, places, options.dtypes, say, live=True)
        self.options = options
        self.config = config
        # the devices under test (docs/devices.md); those [tool.weanj] devices names that
        # are absent here, said once and in the headline
        self.devices, self.absent = tuple(devices), dict(absent or {})
        # the time limit of each call: `timeout` where given (0: none), else the project's
        self.timeout = time_limit(options.timeout, config or _config_at(places))
        self.save = options.save
        self.every_example = every_example
        self.require = set(
            (getattr(config, "require", ()) or ()) if options.require is None else options.require
        )
        self.executor = executor if executor is not None else InProcess(config)
        if cache:
            _jax_cache.enable()  # compiled kernels are reused across runs (and processes)
            if catalogs:  # a check, not one evaluation (`evaluation_run`)
                self._clock = _jax_cache.clock()
                # a check remembers which files it found safe to read (`_safeh5`)
                self._stack.enter_context(_safeh5.keep_probes(places.results / PROBED_FILE))
        keep = self.save if options.records is None else options.records
        self.records = Records(places, config, fresh=options.fresh) if keep else None
        self.plans = {cat.name: self._plan_of(cat) for cat in self.catalogs}
        if options.progress:
            self.stream.listen(self._progress_of(self.say, options.verbose))
        for listener in listeners:
            self.stream.listen(listener)

    def _open(self, catalogs, places: Places, dtypes, say, *, live: bool) -> None:
        """What the live run and the store run share: the examples, the places, the
        `Judgement` and its stream, the session to come."""
        self.catalogs = list(catalogs)
        self.places = places
        self.live = live
        self.judgement = Judgement("check" if live else "diff", dtypes=tuple(dtypes))
        self.stream = Stream()
        self.dtypes = tuple(dtypes)
        # every line of the run through one `Said`: the heartbeat counts silence from it
        self.say = say if isinstance(say, Said) else Said(say)
        self.options = CheckOptions(save=False, progress=False)
        self.devices, self.absent = ("cpu",), {}
        self.timeout, self.save, self.records = None, False, None
        self.every_example, self.require = None, set()
        self._stack = ExitStack()
        self._clock = None
        self._t0 = time.perf_counter()
        self._finished = False
        self._session: Session | None = None
        self._asked: RunRequest | None = None  # what a live run asked of its executor

    def _plan_of(self, cat: Catalog) -> Plan | WeanjError:
        """The example's plan (`read_plan`), or why it cannot be checked."""
        try:
            return read_plan(
                cat,
                self.places,
                live=True,
                dtypes=self.dtypes,
                devices=self.devices,
                order=self.options.order,
            )
        except WeanjError as e:
            return e

    def _progress_of(self, say: Callable[[str], None], verbose: bool) -> Progress:
        """The run's progress on stderr (`_progress`); the devices it leaves out (absent
        here), said once."""
        total = sum(
            1
            for p in self.plans.values()
            if isinstance(p, Plan)
            for s in p.subjects.values()
            if s.live and s.skip is None
        )
        for kind, why in self.absent.items():  # said once, not once per run
            say(f"{kind}: not run: {why} ([tool.weanj] devices names it)")
        return Progress(total, say, examples=len(self.catalogs), verbose=verbose)

    @classmethod
    def of_store(
        cls,
        catalogs: Sequence[Catalog],
        places: Places,
        *,
        listeners: Sequence[Listener] = (),
        faults: Callable[[Catalog, Inputs], dict[str, Fault]] | None = None,
        say: Callable[[str], None] = say,
    ) -> CheckRun:
        """The store run (`weanj diff`): every file of the store judged, nothing evaluated;
        `faults(catalog, inputs)`: what the last check found at fault (a fault saves no
        file)."""
        run = cls.__new__(cls)
        run._open(catalogs, places, DTYPES, say, live=False)
        run.plans = {}
        for cat in run.catalogs:
            found = (lambda inputs, cat=cat: faults(cat, inputs)) if faults else None
            try:
                run.plans[cat.name] = read_plan(cat, places, live=False, checks=False, faults=found)
            except WeanjError as e:
                run.plans[cat.name] = e
        for listener in listeners:
            run.stream.listen(listener)
        return run

    # --- the session ----------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The run's `Session`, opened on first use (a live run's through its executor:
        a Dask executor evaluates every plan's variants then)."""
        if self._session is None:
            if not self.live:
                self._session = self._stack.enter_context(Session(say=self.say))
            else:
                asked = RunRequest(
                    self.plans,
                    timeout=self.timeout,
                    say=self.say,
                    emit=self.stream.emit,
                    shown_path=self.places.shown,
                    records=self.records,
                    options=self.options,
                )
                self._asked = asked
                self._session = self._stack.enter_context(self.executor.session(asked))
        return self._session

    def close(self) -> None:
        """Keep the evaluation records and close the session (it says which timed-out
        calls still run)."""
        if self.records is not None:
            self.records.flush()
        self._stack.close()

    def __enter__(self) -> CheckRun:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- judging ----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[ExampleJudgement]:
        """Judge every example in order, yielding each `ExampleJudgement` (an example
        whose plan could not be read: not judged, saying why)."""
        for cat in self.catalogs:
            yield self.judge_example(cat)

    def judge_example(self, cat: Catalog) -> ExampleJudgement:
        """One example's every case, judged (each `CaseJudged` as it is), its records
        summed up, then `ExampleJudged`."""
        p = self.plans[cat.name]
        if not isinstance(p, Plan):
            ej = not_judged(cat, p, self.dtypes) if self.live else not_judged(cat, p)
        else:
            session = self.session
            started = time.perf_counter()
            ej = judge_plan(p, session, self.stream.emit)
            if self.live:  # an engine that evaluated beforehand: its evaluations' seconds
                elsewhere = self._asked.elsewhere_s if self._asked is not None else {}
                ej.seconds = time.perf_counter() - started + elsewhere.get(cat.name, 0.0)
            if self.records is not None:
                self.records.flush()
                if self.save:
                    ej.reuse, line = example_reuse(self.records, cat.name)
                    if line:
                        ej.notes.append(line)
        self.judgement.examples[cat.name] = ej
        self.stream.emit(ExampleJudged(ej))
        return ej

    def judge_case(self, plan: Plan, case: Case) -> CaseJudgement:
        """The judge's answer to one case of one of the run's plans (a pytest item)."""
        return judge_case(plan, case, self.session)

    def outcome(self, plan: Plan, label: str) -> Gradient | Fault:
        """What a subject of one of the run's plans is: its file, or its evaluation."""
        return subject_outcome(plan, label, self.session)

    def judge(self) -> Judgement:
        """Every example judged, then `finish()`: **Returns:** the `Judgement`."""
        for _ in self:
            pass
        return self.finish()

    def finish(self) -> Judgement:
        """Close the session, add what is said once per run to the `Judgement`, and emit
        the run's end (`RunFinished`); **Returns:** the `Judgement` (the data: a front
        end's listener keeps it with its views)."""
        if self._finished:
            return self.judgement
        self._finished = True
        self.close()
        judgement = self.judgement
        if not self.live:
            judgement.dtypes = tuple(
                sorted({g.dtype for ej in judgement for g in ej.subjects.values()}, reverse=True)
            ) or ("float64",)
        else:
            self._said_once(judgement)
        self.stream.emit(RunFinished(judgement))
        return judgement

    def _said_once(self, judgement: Judgement) -> None:
        """What a live run says once: its seconds, the records' notes and reuse, what did
        not run and what its scope left out, the suspects, the orphans, the clock."""
        judgement.seconds = time.perf_counter() - self._t0
        if self.records is not None and self.save:
            judgement.notes.extend(self.records.notes)
            line = reuse_line(self.records)
            if line:
                judgement.notes.append(line)
        judged = list(judgement)
        judgement.coverage = coverage(self.catalogs, self.absent)
        judgement.did_not_run = did_not_run(self.catalogs, judged, self.require)
        judgement.did_not_run += device_did_not_run(judged, self.devices, self.require)
        judgement.did_not_run += absent_did_not_run(self.absent, self.require)
        judgement.suspects = [
            (ej.name, s) for ej in judgement if ej.judged for s in find_suspects(ej)
        ]
        if self.every_example is not None:
            from ..records._stale import orphans_note

            orphans = orphans_note(self.places, list(self.every_example))
            if orphans:
                judgement.notes.append(orphans)
        if self._clock is not None:
            judgement.notes.append(self._clock.summary())

    # --- one variant (weanj run, weanj.evaluate) ----------------------------------------

    def evaluate(
        self,
        variant: Variant,
        inputs: Inputs,
        dtype: str = "float64",
        *,
        processes: int | None = None,
        device: str = "cpu",
    ) -> Gradient | Fault:
        """One variant on `inputs` (any inputs, any parameters) in `dtype`, under the run's
        time limit, never reused from or kept in the records; with `processes`, a sharded
        variant under jax.distributed on that many local processes; on `device`."""
        if processes is None:
            watch = Watch(timeout_s=self.timeout, say=self.say)
            return evaluate_variant(
                variant, inputs, dtype, watch, shown_path=self.places.shown, device=device
            )
        from ..executors._processes import check_sharded, evaluate_across

        check_sharded(variant)
        return evaluate_across(
            variant,
            inputs,
            dtype,
            processes,
            root=self.places.root,
            timeout=self.timeout,
            shown_path=self.places.shown,
        )


def evaluation_run(
    places: Places, *, timeout: float | None = None, cache: bool = True, say=say
) -> CheckRun:
    """The run of one evaluation (`weanj run`, `weanj.evaluate()`): no example judged,
    no record kept, nothing written (`weanj run` saves what `evaluate` returns where
    `outside_store_path` or `--out` says). `cache`: turn on the persistent compilation
    cache, as every command does (a notebook's `weanj.evaluate` leaves it as it is)."""
    options = CheckOptions(timeout=timeout, save=False, progress=False)
    return CheckRun((), places, options, say=say, cache=cache)


def _config_at(places: Places) -> Any:
    """The project's configuration at the run's root (None: it cannot be read here)."""
    try:
        return project_config(places.root)
    except WeanjError:
        return None
