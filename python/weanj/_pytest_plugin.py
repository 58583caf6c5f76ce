"""`pytest --weanj`: the case table of the current project, as test items.

Registered through the `pytest11` entry point, so installing weanj is enough: in a
project with `[tool.weanj]`, `pytest --weanj` collects one item per case of the case
table (`_pipeline.engine._cases`: each variant's run, same-family pairs per gradient array,
each float32 run against its own float64 run, the Taylor and jvp checks, every
recorded or other file of the store), with the case ids
(`02-gauss-seidel::lex::jax-lex~jax-wavefront`), and needs no test code of its own. Each
item asks the one judge, as `weanj check` does, and renders its verdict: failing
verdicts fail, `stale`, `skipped` and `unavailable` skip saying why, `expected` (a
difference declared with `weanj.Expected`) is an xfail with its reason, `unexpectedly ok`
a failure that says `[XPASS(strict)]` as pytest does, the rest pass.
`--weanj-record` (re)writes the recorded references instead (pytest-regressions'
`--force-regen`); `--weanj-fuzz N` adds a fuzz search of each same-family pair.

The plugin is thin: collection and reporting. Without `--weanj` it does nothing and
imports nothing heavy.
"""

from __future__ import annotations

import pytest

from ._vocabulary import DEVICES

# The plugin's options: (flag, argparse keywords); all but --weanj only with --weanj.
OPTIONS = (
    (
        "--weanj",
        dict(action="store_true", help="collect the case table of the current weanj project"),
    ),
    ("--weanj-record", dict(action="store_true", help="rewrite the recorded reference gradients")),
    (
        "--weanj-fuzz",
        dict(type=int, default=0, metavar="N", help="also fuzz every pair on N draws"),
    ),
    (
        "--weanj-example",
        dict(action="append", metavar="EXAMPLE", help="only this example (repeatable)"),
    ),
    (
        "--weanj-device",
        dict(
            action="append",
            choices=DEVICES,
            metavar="DEVICE",
            help="also run on this device (cpu, gpu, tpu; repeatable), each run judged "
            "against its family's CPU float64 reference (default: [tool.weanj] devices)",
        ),
    ),
)
_RUN = pytest.StashKey[object]()
_JUDGED = pytest.StashKey[object]()
_EXITING = pytest.StashKey[bool]()


class Judged:
    """`pytest --weanj`'s listener of the run's events (`_judge._events`): each case
    judged, kept for its item."""

    def __init__(self) -> None:
        self.cases: dict[str, object] = {}

    def __call__(self, event) -> None:
        from ._judge._events import CaseJudged

        if isinstance(event, CaseJudged):
            self.cases[event.judgement.case] = event.judgement


def pytest_addoption(parser):
    group = parser.getgroup("weanj", "weanj cross-validation (pytest --weanj)")
    for flag, keywords in OPTIONS:
        group.addoption(flag, **keywords)


class _Failed(Exception):
    pass


class WeanjItem(pytest.Item):
    """One case of the table."""

    def __init__(self, *, plan, case, **kwargs):
        super().__init__(**kwargs)
        self.plan, self.case = plan, case
        skip = plan.skip_of(case)
        if skip is not None:
            self.add_marker(pytest.mark.skip(reason=f"{skip.verdict}: {skip.what}"))

    def runtest(self):
        from ._model._verdicts import Verdict
        from ._report._text import message

        judged = self.config.stash[_JUDGED]
        if self.case.id not in judged.cases:  # its whole example, as `weanj check` judges it
            self.config.stash[_RUN].judge_example(self.plan.catalog)
        j = judged.cases[self.case.id]
        self.judgement = j
        if j.x64 is not None:  # a run: the x64 configuration it computed in (§2.2)
            line = j.x64.describe()
            self.user_properties.append(("x64", line))  # in --junitxml
            self.add_report_section("call", "weanj", line)  # with -rA, and on failure
        if j.verdict == Verdict.UNEXPECTEDLY_OK:  # pytest's words for a strict XPASS
            raise _Failed(f"[XPASS(strict)] {message(j)}")
        if j.failed:
            raise _Failed(message(j))
        if j.verdict == Verdict.EXPECTED:  # a declared difference, as declared
            pytest.xfail(f"{j.verdict}: {j.reason}")
        if not j.verdict.ran or j.verdict == Verdict.STALE:  # not judged here
            pytest.skip(f"{j.verdict}: {j.reason}")

    def repr_failure(self, excinfo, style=None):
        from ._errors import WeanjError

        if isinstance(excinfo.value, _Failed):
            return str(excinfo.value)
        if isinstance(excinfo.value, WeanjError):
            return f"{self.name}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"weanj {self.case.kind}: {self.case.id}"


class WeanjFuzzItem(pytest.Item):
    """`--weanj-fuzz N`: `weanj fuzz`'s search on one same-family pair, N draws; it fails
    with the shrunk case, its regions and the commands that reproduce it."""

    def __init__(self, *, catalog, pair, draws, **kwargs):
        super().__init__(**kwargs)
        self.catalog, self.pair, self.draws = catalog, pair, draws

    def runtest(self):
        failure = _fuzz_pair(self.catalog, *self.pair, self.draws)
        if failure is not None:
            raise _Failed(failure)

    def repr_failure(self, excinfo, style=None):
        from ._errors import WeanjError

        if isinstance(excinfo.value, (_Failed, WeanjError)):
            return f"{self.name}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"weanj fuzz: {self.name}"


def _fuzz_pair(catalog, a, b, draws: int) -> str | None:
    """`weanj fuzz`'s search engine on one pair, `draws` draws from the pair's own seed
    (`pair_seed`: the same on every run, no database): None when it agrees throughout,
    else the failure's report (case file, regions, reproducing commands) with the
    `weanj fuzz` command that replays it."""
    from hypothesis.configuration import set_hypothesis_home_dir

    from ._pipeline.engine._cases import fuzz_id
    from ._pipeline.engine._session import Session
    from ._pipeline.search._fuzz_draws import pair_seed, replay_command
    from ._pipeline.search._fuzz_run import run_fuzz
    from ._places import places
    from ._report._fuzz import report_lines

    here = places()
    set_hypothesis_home_dir(here.results / ".weanj-fuzz")
    seed = pair_seed(fuzz_id(catalog.example, a.family, a.label, b.label))
    with Session(shown_path=here.shown) as session:
        quiet = dict(database=False, max_examples=draws, seconds=None, say=lambda s: None)
        result = run_fuzz(session, catalog, [(a, b)], here, seed=seed, **quiet)
    if result.ok:
        return None
    replay = replay_command(catalog.example, seed, [(a, b)], draws)
    return "\n".join([f"seed {seed}: `{replay}` replays it", *report_lines(catalog, result, here)])


class WeanjErrorItem(pytest.Item):
    """An example that cannot be judged (its inputs cannot be read): one failing item,
    so that the other examples' items still run."""

    def __init__(self, *, error, **kwargs):
        super().__init__(**kwargs)
        self.error = error

    def runtest(self):
        raise _Failed(self.error)

    def repr_failure(self, excinfo, style=None):
        return f"{self.name}: not judged: {excinfo.value}"

    def reportinfo(self):
        return self.path, 0, f"weanj: {self.name}"


class WeanjRecordItem(pytest.Item):
    """`--weanj-record`: write the references of one example, then fail saying so."""

    def __init__(self, *, catalog, **kwargs):
        super().__init__(**kwargs)
        self.catalog = catalog

    def runtest(self):
        from ._commands.record import record_references

        written = record_references(self.catalog)
        raise _Failed(
            "wrote "
            + ", ".join(str(p) for p in written)
            + "; look at them (weanj diff), commit them, and rerun without --weanj-record"
            if written
            else f"no variant of {self.catalog.name} is available here; nothing recorded"
        )

    def repr_failure(self, excinfo, style=None):
        return f"{self.name}: {excinfo.value}"

    def reportinfo(self):
        return self.path, 0, f"weanj record: {self.catalog.name}"


def _item(cls, session, name: str, **kwargs):
    return cls.from_parent(session, name=name, nodeid=f"weanj::{name}", **kwargs)


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection sees the items
def pytest_collection_modifyitems(session, config, items):
    if not config.getoption("weanj"):
        return
    from ._errors import WeanjError, error_text
    from ._interrupts import heavy_imports

    heavy_imports()  # h5py and JAX with Ctrl-C held back: an interrupt there can abort
    from ._places import places
    from ._registry import catalogs

    try:
        places()  # the project is where you are: or one line saying what to add
        cats = catalogs(config.getoption("weanj_example"))
        recording = config.getoption("weanj_record")
        # a device named with --weanj-device must be here: one line, as on the command line
        run = None if recording else weanj_run(cats, device=config.getoption("weanj_device"))
    except WeanjError as e:
        config.stash[_EXITING] = True
        pytest.exit(error_text(str(e)), returncode=2)
    if recording:
        from ._io import _jax_cache

        _jax_cache.enable()  # compiled kernels are reused across runs (and xdist workers)
        for cat in cats:
            items.append(_item(WeanjRecordItem, session, f"{cat.name}::record", catalog=cat))
        return
    config.stash[_RUN] = run
    config.stash[_JUDGED] = judged = Judged()
    run.stream.listen(judged)
    items.extend(weanj_items(run, session, draws=config.getoption("weanj_fuzz")))


def weanj_run(cats, *, keep: bool = True, device=None):
    """The `CheckRun` `pytest --weanj` judges its items through: `weanj check`'s live run
    on these catalogs, nothing written to the store nor to `check.json`, no progress
    lines (pytest reports each item), the evaluation records reused and kept (`keep`),
    on the CPU and `device` (`--weanj-device`, else `[tool.weanj] devices`). The gallery's
    tests (`tests/crossval/cases.py`) judge through this same run."""
    from ._commands.check import check_run, resolved_devices
    from ._registry import project

    devices, absent = resolved_devices(device, project())
    return check_run(cats, save=False, keep=keep, progress=False, devices=devices, absent=absent)


def weanj_items(run, session, *, draws: int = 0) -> list:
    """The items of a run's plans: one per case of each table (but the pairs across
    families: information, not a test), one failing item per example that cannot be
    judged, and with `draws` a fuzz item per same-family pair."""
    from ._errors import WeanjError

    items = []
    for name, plan in run.plans.items():
        if isinstance(plan, WeanjError):
            items.append(_item(WeanjErrorItem, session, f"{name}::inputs", error=str(plan)))
            continue
        for case in plan.cases:
            if not case.across_families:  # across families: information, not a test
                items.append(_item(WeanjItem, session, case.id, plan=plan, case=case))
        if draws:
            from ._pipeline.search._fuzz_draws import fuzz_cases

            for case_id, a, b in fuzz_cases(plan.catalog, plan.inputs):
                items.append(
                    _item(
                        WeanjFuzzItem,
                        session,
                        case_id,
                        catalog=plan.catalog,
                        pair=(a, b),
                        draws=draws,
                    )
                )
    return items


def pytest_report_collectionfinish(config, start_path, items):
    """The table's items are added after collection proper: say how many there are."""
    if not config.getoption("weanj") or config.stash.get(_EXITING, False):
        return None
    ours = [i for i in items if i.nodeid.startswith("weanj::")]
    examples = sorted({i.nodeid.split("::")[1] for i in ours})
    return f"weanj: {len(ours)} cross-validation item(s) of {', '.join(examples) or 'no example'}"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """What the run did not judge (`weanj check`'s headline clause): the devices
    `[tool.weanj] devices` names that are absent here, the Julia variants and family
    references that cannot run; then each family of the examples judged whose members
    that ran were compared with nothing (`_judge._alone`). Nothing when it judged all it
    covers and compared every variant."""
    run = config.stash.get(_RUN, None) if config.getoption("weanj", default=False) else None
    if run is None:
        return
    from ._judge._alone import alone
    from ._pipeline.engine._coverage import run_coverage
    from ._report._lines import not_judged_text

    covered, missing = run_coverage(run)
    said = not_judged_text(covered, missing, "; ")
    if said:
        terminalreporter.write_line(f"weanj: not judged here: {said}")
    for a in (a for ej in run.judgement for a in alone(ej)):  # its items passed, alone
        terminalreporter.write_line(f"weanj: {a.example}: {a.line}", yellow=True)


def pytest_sessionstart(session):
    """With `--weanj`, a Ctrl-C is noted as well as raised (`_interrupts`):
    `pytest_sessionfinish` then makes the run "interrupted" even where a callback
    swallowed the exception."""
    if session.config.getoption("weanj"):
        from ._interrupts import install_for_session

        install_for_session()


def pytest_sessionfinish(session, exitstatus):
    if not session.config.getoption("weanj"):
        return
    from ._interrupts import INTERRUPTED, ignore_from_now

    if INTERRUPTED:
        session.exitstatus = pytest.ExitCode.INTERRUPTED
    run = session.config.stash.get(_RUN, None)
    if run is not None:
        run.close()  # the evaluation records kept, the session closed
    ignore_from_now()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """After an interrupt (Ctrl-C or SIGTERM) under `--weanj`, leave as the console script
    does (`_cli._main.entry`): output flushed, child processes closed, then `os._exit` with
    pytest's "interrupted" status, so that no interpreter teardown runs while a call that
    was still computing (its thread inside JAX) works, where a segfault happened instead of
    the status."""
    if not config.getoption("weanj", default=False):
        return
    from ._interrupts import INTERRUPTED

    if not INTERRUPTED:
        return
    import contextlib
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        from ._resources import close_all

        close_all()
    os._exit(int(pytest.ExitCode.INTERRUPTED))
