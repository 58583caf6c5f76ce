"""`pytest --weanj`: the case table of the current project, as test items.

Registered through the `pytest11` entry point, so installing weanj is enough: in a
project with `[tool.weanj]`, `pytest --weanj` collects one item per case of the case
table (`_pipeline._cases`: each variant's run, same-family pairs per gradient array,
float32 against the family's float64 reference, the Taylor and jvp checks, every
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
)
_SESSION = pytest.StashKey[object]()
_EXITING = pytest.StashKey[bool]()


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
        from ._judge._verdict import Verdict
        from ._pipeline._cases import judge_case
        from ._report._text import message

        j = judge_case(self.plan, self.case, self.config.stash[_SESSION])
        self.judgement = j
        if j.verdict == Verdict.UNEXPECTEDLY_OK:  # pytest's words for a strict XPASS
            raise _Failed(f"[XPASS(strict)] {message(j)}")
        if j.failed:
            raise _Failed(message(j))
        if j.verdict == Verdict.EXPECTED:  # a declared difference, as declared
            pytest.xfail(f"{j.verdict}: {j.reason}")
        if j.verdict in (Verdict.SKIPPED, Verdict.STALE, Verdict.UNAVAILABLE):
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
        from ._commands.fuzz import pytest_fuzz

        failure = pytest_fuzz(self.catalog, *self.pair, self.draws)
        if failure is not None:
            raise _Failed(failure)

    def repr_failure(self, excinfo, style=None):
        from ._errors import WeanjError

        if isinstance(excinfo.value, (_Failed, WeanjError)):
            return f"{self.name}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"weanj fuzz: {self.name}"


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
    from ._io import _jax_cache
    from ._pipeline._cases import read_plan
    from ._pipeline._records import Records
    from ._pipeline._session import Session
    from ._places import places
    from ._registry import catalogs, project

    try:
        here = places()  # the project is where you are: or one line saying what to add
        cats = catalogs(config.getoption("weanj_example"))
    except WeanjError as e:
        config.stash[_EXITING] = True
        pytest.exit(error_text(str(e)), returncode=2)
    _jax_cache.enable()  # compiled kernels are reused across runs (and xdist workers)
    config.stash[_SESSION] = Session(shown_path=here.shown, records=Records(here, project()))
    if config.getoption("weanj_record"):
        for cat in cats:
            items.append(_item(WeanjRecordItem, session, f"{cat.name}::record", catalog=cat))
        return
    draws = config.getoption("weanj_fuzz")
    for cat in cats:
        try:
            plan = read_plan(cat, here, live=True)
        except WeanjError as e:
            items.append(_item(WeanjErrorItem, session, f"{cat.name}::inputs", error=str(e)))
            continue
        for case in plan.cases:
            if not case.info:  # across families: information, not a test
                items.append(_item(WeanjItem, session, case.id, plan=plan, case=case))
        if draws:
            from ._commands.fuzz import fuzz_cases

            for case_id, a, b in fuzz_cases(cat, plan.inputs):
                items.append(
                    _item(WeanjFuzzItem, session, case_id, catalog=cat, pair=(a, b), draws=draws)
                )


def pytest_report_collectionfinish(config, start_path, items):
    """The table's items are added after collection proper: say how many there are."""
    if not config.getoption("weanj") or config.stash.get(_EXITING, False):
        return None
    ours = [i for i in items if i.nodeid.startswith("weanj::")]
    examples = sorted({i.nodeid.split("::")[1] for i in ours})
    return f"weanj: {len(ours)} cross-validation item(s) of {', '.join(examples) or 'no example'}"


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
    found = session.config.stash.get(_SESSION, None)
    if found is not None:
        if found.records is not None:
            found.records.flush()
        found.close()
    ignore_from_now()
