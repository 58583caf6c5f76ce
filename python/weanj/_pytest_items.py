"""`pytest --weanj`'s items: one per case of the case table (`WeanjItem`, rendering the
judge's verdict as pytest's outcome), one failing item per example that cannot be judged
(`WeanjErrorItem`) and, with `--weanj-record`, one per example whose references it writes
(`WeanjRecordItem`). The plugin (`_pytest_plugin`) collects them; the judge decides.
"""

from __future__ import annotations

import pytest

# What the plugin keeps on pytest's config: the run its items judge through, and the
# cases judged so far (`_pytest_plugin.Judged`).
RUN = pytest.StashKey[object]()
JUDGED = pytest.StashKey[object]()


class Failed(Exception):
    """An item's failure, said in weanj's words (its message is the whole report)."""


class WeanjItem(pytest.Item):
    """One case of the table."""

    def __init__(self, *, plan, case, **kwargs):
        super().__init__(**kwargs)
        self.plan, self.case = plan, case
        skip = plan.skip_of(case)
        if skip is not None:
            self.add_marker(pytest.mark.skip(reason=f"{skip.verdict}: {skip.what}"))

    def runtest(self):
        from ._model._verdicts import Outcome
        from ._report._lines import message

        judged = self.config.stash[JUDGED]
        if self.case.id not in judged.cases:  # its whole example, as `weanj check` judges it
            self.config.stash[RUN].judge_example(self.plan.catalog)
        j = judged.cases[self.case.id]
        self.judgement = j
        if j.x64 is not None:  # a run: the x64 configuration it computed in (§2.2)
            line = j.x64.describe()
            self.user_properties.append(("x64", line))  # in --junitxml
            self.add_report_section("call", "weanj", line)  # with -rA, and on failure
        outcome = j.verdict.outcome  # the verdict's own (`_model._verdicts.Outcome`)
        if outcome.fails:  # a strict XPASS in pytest's words, as pytest says it
            said = "" if outcome == Outcome.FAILED else f"[{outcome.value}] "
            raise Failed(said + message(j))
        if outcome == Outcome.XFAILED:
            pytest.xfail(f"{j.verdict}: {j.reason}")
        if outcome == Outcome.SKIPPED:
            pytest.skip(f"{j.verdict}: {j.reason}")

    def repr_failure(self, excinfo, style=None):
        from ._errors import WeanjError

        if isinstance(excinfo.value, Failed):
            return str(excinfo.value)
        if isinstance(excinfo.value, WeanjError):
            return f"{self.name}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"weanj {self.case.kind}: {self.case.id}"


class WeanjErrorItem(pytest.Item):
    """An example that cannot be judged (its inputs cannot be read): one failing item,
    so that the other examples' items still run."""

    def __init__(self, *, error, **kwargs):
        super().__init__(**kwargs)
        self.error = error

    def runtest(self):
        raise Failed(self.error)

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
        raise Failed(
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
