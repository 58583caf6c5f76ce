"""`pytest --weanj`: the case table of the current project, as test items.

Registered through the `pytest11` entry point, so installing weanj is enough: in a
project with `[tool.weanj]`, `pytest --weanj` collects one item per case of the case
table (`_pipeline.engine._cases`: each variant's run, same-family pairs per gradient array,
each float32 run against its own float64 run, the Taylor and jvp checks, every
recorded or other file of the store), with the case ids
(`02-gauss-seidel::lex::jax-lex~jax-wavefront`), and needs no test code of its own. Each
item asks the one judge, as `weanj check` does, and gives its verdict the pytest outcome
the verdict declares (`Verdict.outcome`): failing verdicts fail, `stale`, `skipped` and
`unavailable` skip saying why, `expected` (a difference declared with `weanj.Expected`)
is an xfail with its reason, `unexpectedly ok` a failure that says `[XPASS(strict)]` as
pytest does, the rest pass.
`--weanj-record` (re)writes the recorded references instead (pytest-regressions'
`--force-regen`); `--weanj-fuzz N` adds a fuzz search of each same-family pair.

The plugin is thin: collection and reporting. Without `--weanj` it does nothing and
imports nothing heavy.
"""

from __future__ import annotations

import pytest

from ._check_options import CheckOptions, add_pytest_options
from ._pytest_items import JUDGED as _JUDGED
from ._pytest_items import RUN as _RUN
from ._pytest_items import Failed as _Failed
from ._pytest_items import WeanjErrorItem, WeanjItem, WeanjRecordItem

# The plugin's own options: (flag, argparse keywords); all but --weanj only with --weanj.
# A check's options (`--weanj-fd`, `--weanj-device`, ...) are `weanj check`'s, declared
# once (`_check_options`) and added beside these.
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
)
_EXITING = pytest.StashKey[bool]()
_PROJECT = pytest.StashKey[object]()  # the project found (its `ProjectConfig`)
_ASIDE = pytest.StashKey[list]()  # folders of other projects, not collected


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
    add_pytest_options(group)  # a check's options, as `weanj check` declares them


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

    from ._pipeline.engine._table import fuzz_id
    from ._pipeline.search._fuzz_draws import pair_seed, replay_command
    from ._pipeline.search._fuzz_run import run_fuzz
    from ._pipeline.session._session import Session
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
        # each option checked, and a device named with --weanj-device must be here: one
        # line, as on the command line
        run = None if recording else weanj_run(cats, CheckOptions.from_pytest(config))
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


def weanj_run(cats, options: CheckOptions | None = None, *, keep: bool = True):
    """The `CheckRun` `pytest --weanj` judges its items through: `weanj check`'s live run
    on these catalogs with `options` (`CheckOptions.from_pytest`: nothing written to the
    store nor to `check.json`, no progress lines, pytest reports each item; every
    evaluation in this process), the evaluation records reused and kept (`keep`). The
    gallery's tests (`tests/crossval/cases.py`) judge through this same run."""
    from ._commands.check import check_run

    if options is None:
        options = CheckOptions(save=False, workers=0, progress=False)
    return check_run(cats, options.with_(records=keep))


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


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    """With `--weanj`, the project is found before any file is collected: outside one,
    one line and exit 2, before pytest reads another project's test files (a folder that
    holds a clone of weanj: its tests, collected there, failed with seven tracebacks)."""
    config = session.config
    if not config.getoption("weanj"):
        return None
    from ._errors import WeanjError, error_text
    from ._project import project_config

    try:
        config.stash[_PROJECT] = project_config()
    except WeanjError as e:
        config.stash[_EXITING] = True
        pytest.exit(error_text(str(e)), returncode=2)
    return None  # pytest's own collection goes on


# What makes a folder a project of its own: its tests run with their own configuration
# (rootdir, conftest, imports), never as files of the project `pytest --weanj` judges.
PROJECT_MARKS = ("pyproject.toml", "setup.py", ".git")


def pytest_ignore_collect(collection_path, config):
    """With `--weanj`, a folder below where pytest started that holds a project of its own
    (`PROJECT_MARKS`: a clone of weanj, a vendored package) is not collected, unless named
    on the command line; `pytest_report_collectionfinish` names the folders left aside."""
    if not config.getoption("weanj", default=False) or config.stash.get(_EXITING, False):
        return None
    start = config.invocation_params.dir
    if collection_path == start or start not in collection_path.parents:
        return None
    if not collection_path.is_dir():
        return None
    if not any((collection_path / mark).exists() for mark in PROJECT_MARKS):
        return None
    named = {(start / a.split("::")[0]).resolve() for a in config.invocation_params.args}
    if collection_path.resolve() in named:
        return None
    config.stash.setdefault(_ASIDE, []).append(collection_path.relative_to(start))
    return True


def pytest_report_header(config):
    """Which project `pytest --weanj` judges (found as `weanj check` finds it)."""
    if not config.getoption("weanj", default=False):
        return None
    from ._errors import WeanjError
    from ._project import project_config

    try:
        return f"weanj: {project_config().describe()}"
    except WeanjError:
        return None  # said in one line when collection starts (`pytest_collection`)


def pytest_report_collectionfinish(config, start_path, items):
    """The table's items are added after collection proper: say how many there are, and
    which folders of other projects were left aside."""
    if not config.getoption("weanj") or config.stash.get(_EXITING, False):
        return None
    ours = [i for i in items if i.nodeid.startswith("weanj::")]
    examples = sorted({i.nodeid.split("::")[1] for i in ours})
    said = f"weanj: {len(ours)} cross-validation item(s) of {', '.join(examples) or 'no example'}"
    aside = config.stash.get(_ASIDE, [])
    if aside:
        folders = ", ".join(f"{folder}/" for folder in aside)
        said += f"; not collected, other projects: {folders} (name one to collect it)"
    return said


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """What the run did not judge (`weanj check`'s headline clause): the devices
    `[tool.weanj] devices` names that are absent here, the Julia variants and family
    references that cannot run; then each family of the examples judged whose members
    that ran were compared with nothing (`_judge._alone`). Nothing when it judged all it
    covers and compared every variant."""
    run = config.stash.get(_RUN, None) if config.getoption("weanj", default=False) else None
    if run is None:
        return
    from ._pipeline.engine._coverage import run_coverage
    from ._report._lines import not_judged_text

    covered, missing = run_coverage(run)
    said = not_judged_text(covered, missing, "; ")
    if said:
        terminalreporter.write_line(f"weanj: not judged here: {said}")
    strict = " (--weanj-strict: the run fails)" if run.options.strict else ""
    for a in _alone(run):  # its items passed, alone
        terminalreporter.write_line(f"weanj: {a.example}: {a.line}{strict}", yellow=True)


def _alone(run) -> list:
    """Each family of the examples judged whose members that ran were compared with
    nothing (`_judge._alone`)."""
    from ._judge._alone import alone

    return [a for ej in run.judgement for a in alone(ej)]


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
        if run.options.strict and session.exitstatus == pytest.ExitCode.OK and _alone(run):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # `--weanj-strict`
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
