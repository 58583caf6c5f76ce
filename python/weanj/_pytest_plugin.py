"""`pytest --weanj`: the cross-validation matrix of the current project, as test items.

Registered through the `pytest11` entry point, so installing weanj is enough: in a
project with `[tool.weanj]`, `pytest --weanj` collects one item per case of
`weanj._matrix` (same-family pairs per gradient array, finite differences, recorded
references), with ids such as `02-gauss-seidel::lex::jax-lex~jax-wavefront`, and needs no
test code of its own. `--weanj-record` (re)writes the recorded reference gradients
instead, as pytest-regressions' `--force-regen` rewrites its data files: each family's
first available variant on the shared inputs; those items then fail, saying what they
wrote, so that the new references are looked at before they are committed.

The plugin stays thin (collection and reporting); the checks are weanj's own. Without
`--weanj` it does nothing and imports nothing heavy.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("weanj", "weanj cross-validation")
    group.addoption(
        "--weanj",
        action="store_true",
        help="collect the cross-validation matrix of the current weanj project",
    )
    group.addoption(
        "--weanj-record",
        action="store_true",
        help="with --weanj: rewrite the recorded reference gradients (results/*/recorded/)",
    )
    group.addoption(
        "--weanj-example",
        action="append",
        metavar="EXAMPLE",
        help="with --weanj: only this example (repeatable)",
    )


class WeanjItem(pytest.Item):
    """One case of the matrix."""

    def __init__(self, *, case, **kwargs):
        super().__init__(**kwargs)
        self.case = case
        if case.skip is not None:
            self.add_marker(pytest.mark.skip(reason=case.skip))

    def runtest(self):
        from . import _matrix

        try:
            self.summary = _matrix.run_case(self.case)
        except _matrix.CaseSkipped as e:
            pytest.skip(str(e))

    def repr_failure(self, excinfo, style=None):
        from . import _errors, _matrix

        if isinstance(excinfo.value, (_matrix.CheckFailure, _errors.WeanjError)):
            return f"{self.case.id}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"weanj {self.case.kind}: {self.case.id}"


class WeanjRecordItem(pytest.Item):
    """`--weanj-record`: write the references of one example, then fail saying so."""

    def __init__(self, *, example, **kwargs):
        super().__init__(**kwargs)
        self.example = example

    def runtest(self):
        from . import _matrix

        written = _matrix.record_references([self.example])
        raise _RecordedFailure(
            "wrote "
            + ", ".join(str(p) for p in written)
            + "; look at them (weanj diff), commit them, and rerun without --weanj-record"
            if written
            else f"no variant of {self.example} is available here; nothing recorded"
        )

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, _RecordedFailure):
            return f"{self.name}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"weanj record: {self.example}"


class _RecordedFailure(Exception):
    pass


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection sees the items
def pytest_collection_modifyitems(session, config, items):
    if not config.getoption("weanj"):
        return
    from . import _matrix
    from ._errors import WeanjError
    from ._registry import example, example_names

    chosen = config.getoption("weanj_example")
    try:
        names = [example(n).name for n in chosen] if chosen else example_names()
        if config.getoption("weanj_record"):
            for name in names:
                items.append(
                    WeanjRecordItem.from_parent(
                        session,
                        name=f"{name}::record",
                        nodeid=f"weanj::{name}::record",
                        example=name,
                    )
                )
            return
        cases = _matrix.cases(names)
    except WeanjError as e:
        raise pytest.UsageError(f"weanj: {e}") from None
    for case in cases:
        items.append(
            WeanjItem.from_parent(session, name=case.id, nodeid=f"weanj::{case.id}", case=case)
        )


def pytest_report_collectionfinish(config, start_path, items):
    """The matrix's items are added after collection proper: say how many there are."""
    if not config.getoption("weanj"):
        return None
    ours = [i for i in items if isinstance(i, (WeanjItem, WeanjRecordItem))]
    examples = sorted({i.case.example if isinstance(i, WeanjItem) else i.example for i in ours})
    return f"weanj: {len(ours)} cross-validation item(s) of {', '.join(examples) or 'no example'}"
