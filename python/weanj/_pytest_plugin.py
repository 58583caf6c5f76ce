"""`pytest --weanj`: the case table of the current project, as test items.

Registered through the `pytest11` entry point, so installing weanj is enough: in a
project with `[tool.weanj]`, `pytest --weanj` collects one item per case of `_cases`
(same-family pairs per gradient array, float32 against the family's float64 reference,
the Taylor and jvp checks, every recorded or other file of the store), with the case ids
(`02-gauss-seidel::lex::jax-lex~jax-wavefront`), and needs no test code of its own.
Each item asks the one judge (`_cases.judge_case`) and renders its verdict
(`_report._text`): failing verdicts fail, `stale` and `skipped` skip saying why, the
rest pass. `--weanj-record` (re)writes the recorded references instead, as
pytest-regressions' `--force-regen` rewrites its data files: each family's first
available variant on the shared inputs; those items then fail, saying what they wrote.

The plugin stays thin: collection and reporting. Without `--weanj` it does nothing and
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


def pytest_addoption(parser):
    group = parser.getgroup("weanj", "weanj cross-validation (pytest --weanj)")
    for flag, keywords in OPTIONS:
        group.addoption(flag, **keywords)


class WeanjItem(pytest.Item):
    """One case of the table."""

    def __init__(self, *, plan, case, **kwargs):
        super().__init__(**kwargs)
        self.plan, self.case = plan, case
        if case.skip is not None:
            self.add_marker(pytest.mark.skip(reason=case.skip))

    def runtest(self):
        from ._cases import Runner, judge_case
        from ._judge._verdict import Verdict
        from ._report._text import message

        j = judge_case(self.plan, self.case, Runner(self.plan))
        self.judgement = j
        if j.failed:
            raise _Failed(message(j))
        if j.verdict in (Verdict.SKIPPED, Verdict.STALE):
            pytest.skip(f"{j.verdict}: {j.reason}")

    def repr_failure(self, excinfo, style=None):
        from ._errors import WeanjError

        if isinstance(excinfo.value, _Failed):
            return str(excinfo.value)
        if isinstance(excinfo.value, WeanjError):
            return f"{self.case.id}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"weanj {self.case.kind}: {self.case.id}"


class WeanjFuzzItem(WeanjItem):
    """`--weanj-fuzz N`: `weanj fuzz`'s search on one same-family pair, N draws; it fails
    with the shrunk case, its regions and the commands that reproduce it."""

    def __init__(self, *, example, pair, draws, skip=None, **kwargs):
        pytest.Item.__init__(self, **kwargs)  # no case of the table behind it
        self.example, self.pair, self.draws = example, pair, draws
        if skip is not None:
            self.add_marker(pytest.mark.skip(reason=skip))

    def runtest(self):
        from ._fuzz import pytest_run

        failure = pytest_run(self.example, *self.pair, self.draws)
        if failure is not None:
            raise _Failed(failure)

    def repr_failure(self, excinfo, style=None):
        from ._errors import WeanjError

        if isinstance(excinfo.value, (_Failed, WeanjError)):
            return f"{self.name}: {excinfo.value}"
        return pytest.Item.repr_failure(self, excinfo, style)

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
        return f"{self.name}: {excinfo.value}"

    def reportinfo(self):
        return self.path, 0, f"weanj: {self.name}"


class WeanjRecordItem(pytest.Item):
    """`--weanj-record`: write the references of one example, then fail saying so."""

    def __init__(self, *, example, **kwargs):
        super().__init__(**kwargs)
        self.example = example

    def runtest(self):
        from ._check import record_references

        written = record_references([self.example])
        raise _Failed(
            "wrote "
            + ", ".join(str(p) for p in written)
            + "; look at them (weanj diff), commit them, and rerun without --weanj-record"
            if written
            else f"no variant of {self.example} is available here; nothing recorded"
        )

    def repr_failure(self, excinfo, style=None):
        return f"{self.name}: {excinfo.value}"

    def reportinfo(self):
        return self.path, 0, f"weanj record: {self.example}"


class _Failed(Exception):
    pass


def _project_or_none():
    """The project `pytest --weanj` works on, or None outside any (a bare folder: weanj's
    own checkout is never taken by accident)."""
    from ._project import find_root

    root, how = find_root(checkout=False)
    if how.startswith("the current folder"):
        return None
    return root


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection sees the items
def pytest_collection_modifyitems(session, config, items):
    if not config.getoption("weanj"):
        return
    from ._cli._main import _heavy_imports

    _heavy_imports()  # h5py and JAX with Ctrl-C held back: an interrupt there can abort
    from ._cases import plan
    from ._errors import WeanjError
    from ._registry import example, example_names

    if _project_or_none() is None:
        config._weanj_note = (
            "weanj: not in a weanj project (no $WEANJ_ROOT, no pyproject.toml with [tool.weanj] "
            "at or above the current folder): nothing collected"
        )
        return
    from . import _cache

    _cache.enable()  # compiled kernels are reused across runs (and xdist workers)
    chosen = config.getoption("weanj_example")
    try:
        names = [example(n).name for n in chosen] if chosen else example_names()
    except WeanjError as e:
        raise pytest.UsageError(f"weanj: {e}") from None
    if config.getoption("weanj_record"):
        for name in names:
            items.append(
                WeanjRecordItem.from_parent(
                    session, name=f"{name}::record", nodeid=f"weanj::{name}::record", example=name
                )
            )
        return
    for name in names:
        try:
            p = plan(name, live=True)
        except WeanjError as e:
            items.append(
                WeanjErrorItem.from_parent(
                    session, name=f"{name}::inputs", nodeid=f"weanj::{name}::inputs", error=str(e)
                )
            )
            continue
        for case in p.cases:
            if case.info:
                continue  # across families: information, not a test
            items.append(
                WeanjItem.from_parent(
                    session, name=case.id, nodeid=f"weanj::{case.id}", plan=p, case=case
                )
            )
    if config.getoption("weanj_fuzz"):
        from ._fuzz import pytest_cases

        for case_id, name, a, b, why in pytest_cases(names):
            items.append(
                WeanjFuzzItem.from_parent(
                    session,
                    name=case_id,
                    nodeid=f"weanj::{case_id}",
                    example=name,
                    pair=(a, b),
                    draws=config.getoption("weanj_fuzz"),
                    skip=why,
                )
            )


def pytest_report_collectionfinish(config, start_path, items):
    """The table's items are added after collection proper: say how many there are."""
    if not config.getoption("weanj"):
        return None
    note = getattr(config, "_weanj_note", None)
    if note:
        return note
    ours = [i for i in items if isinstance(i, (WeanjItem, WeanjRecordItem, WeanjErrorItem))]
    examples = sorted({i.nodeid.split("::")[1] for i in ours})
    return f"weanj: {len(ours)} cross-validation item(s) of {', '.join(examples) or 'no example'}"


def pytest_sessionstart(session):
    """With `--weanj`, a Ctrl-C is noted as well as raised: a KeyboardInterrupt raised
    inside a library's callback (XLA's garbage-collection hook) is swallowed, and the run
    would go on to exit 0 or 1; `pytest_sessionfinish` then makes it "interrupted"."""
    import signal
    import threading

    config = session.config
    if not config.getoption("weanj") or threading.current_thread() is not threading.main_thread():
        return

    def on_sigint(signum, frame):
        config._weanj_interrupted = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)


def pytest_sessionfinish(session, exitstatus):
    import signal
    import threading

    if getattr(session.config, "_weanj_interrupted", False):
        session.exitstatus = pytest.ExitCode.INTERRUPTED
    if session.config.getoption("weanj") and threading.current_thread() is threading.main_thread():
        # The judging is over and its outcome decided: a Ctrl-C now, while the summary is
        # printed and the interpreter ends, would only turn it into a death by SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
