"""The verdicts and the kinds of case, defined once: each verdict with its label, its
colour, what it is (its `VerdictFlag`s) and what `pytest --weanj` makes of it (its
`Outcome`), ranked by the order of the definitions (docs/DESIGN.md, "The judge";
docs/verdicts.md); each kind of case with its column header and whether it is a gradient
check.

They live in the typed model (layer 2) so that `weanj.Expected` (`_model._expected`) can
name them; the judge, the pipeline and the views import them from here.

Everything else is derived from this table: `Verdict.failing` (the command exits 1,
pytest fails the item), `Verdict.agreeing` (what bisect and fuzz search the end of), the
ranking (`RANKING`, worst first), the colour of every page and notebook, the fault
verdicts of `_contract`. No view and no front end names a verdict to decide what to do
with it: each asks its flags. No other list of verdicts exists anywhere.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Outcome(enum.Enum):
    """What `pytest --weanj` makes of a verdict, in pytest's words."""

    PASSED = "passed"
    XFAILED = "xfailed"  # a difference declared, as declared (pytest's xfail)
    XPASS_STRICT = "XPASS(strict)"  # declared, and not there: a failure, as pytest's strict xfail
    FAILED = "failed"
    SKIPPED = "skipped"

    @property
    def fails(self) -> bool:
        """The item fails (and so does the command: `Verdict.failing`)."""
        return self in (Outcome.FAILED, Outcome.XPASS_STRICT)


class VerdictFlag(enum.Flag):
    """What a verdict is; a flag misspelt in the table is an `AttributeError` at import."""

    AGREES = enum.auto()  # two ports agree (what bisect and fuzz search the end of)
    FAULT = enum.auto()  # a subject's own fault: its pairs and checks are not compared
    DECLARABLE = enum.auto()  # a `weanj.Expected` may declare it
    UNJUDGED = enum.auto()  # it says nothing about a difference: a declaration leaves it be
    NOT_RUN = enum.auto()  # the subject does not run here
    OUTDATED = enum.auto()  # a file computed on other inputs (its reason says how to renew it)
    AT_KINKS = enum.auto()  # differs only at the kinks declared (`weanj.differ_at_kinks`)
    DECLARED = enum.auto()  # differs as a `weanj.Expected` declares: it passes
    NOT_THERE = enum.auto()  # declared with `weanj.Expected`, and not there: it fails


F = VerdictFlag


def _has(flag: VerdictFlag, present: bool = True) -> property:
    """A verdict's property: whether its flags hold `flag` (`present=False`: lack it)."""
    return property(lambda verdict: (flag in verdict.flags) == present)


class Verdict(str, enum.Enum):
    """A verdict, worst first. Each member: (label, colour class, its flags, its pytest
    outcome)."""

    # outside the tolerance policy, a gradient check that failed, a bad file; or a declared
    # difference that shows other than declared (the reason says how)
    FAIL = ("FAIL", "fail", F.DECLARABLE, Outcome.FAILED)
    # declared with `weanj.Expected`, and not there: the pair agrees
    UNEXPECTEDLY_OK = ("unexpectedly ok", "fail", F.NOT_THERE, Outcome.XPASS_STRICT)
    # the variant itself is at fault (it raised; outputs of the wrong shape, kind, dtype)
    ERROR = ("error", "fail", F.FAULT | F.DECLARABLE, Outcome.FAILED)
    # a NaN or Inf in a loss or gradient
    NONFINITE = ("NaN/Inf", "fail", F.FAULT | F.DECLARABLE, Outcome.FAILED)
    TIMEOUT = ("timeout", "fail", F.FAULT, Outcome.FAILED)  # it exceeded its time limit
    STALE = ("stale", "stale", F.UNJUDGED | F.OUTDATED, Outcome.SKIPPED)
    # a pair declared with `weanj.differ_at_kinks` that agrees away from the kinks
    KINKS = ("kinks", "kinks", F.AGREES | F.AT_KINKS, Outcome.PASSED)
    # a difference declared with `weanj.Expected` that shows as declared (with its reason)
    EXPECTED = ("expected", "expected", F.DECLARED, Outcome.XFAILED)
    # its backend is missing here
    UNAVAILABLE = ("unavailable", "skip", F.UNJUDGED | F.NOT_RUN, Outcome.SKIPPED)
    SKIPPED = ("skipped", "skip", F.UNJUDGED | F.NOT_RUN, Outcome.SKIPPED)  # with the reason
    INFO = ("info", "info", F.UNJUDGED, Outcome.PASSED)  # two families, for information
    OK = ("ok", "ok", F.AGREES, Outcome.PASSED)  # within the tolerance policy / check passed

    def __new__(cls, label: str, colour: str, flags: VerdictFlag, outcome: Outcome):
        member = str.__new__(cls, label)
        member._value_ = label
        member.colour = colour  # the CSS class of pages and notebooks
        member.flags = flags
        member.outcome = outcome
        return member

    def __str__(self) -> str:
        return self.value

    @property
    def failing(self) -> bool:
        """A failure: the command exits 1 and pytest fails the item (its `outcome`)."""
        return self.outcome.fails

    agreeing = _has(F.AGREES)
    """Two ports agree (what bisect and fuzz search the end of)."""
    fault = _has(F.FAULT)
    """A subject's own fault (`error`, `NaN/Inf`, `timeout`): its `run` case says it, its
    pairs and checks are not compared."""
    declarable = _has(F.DECLARABLE)
    """What a `weanj.Expected` may declare."""
    judged = _has(F.UNJUDGED, False)
    """It says something about a difference (not `stale`, `unavailable`, `skipped`, `info`:
    a declaration leaves such a case as it is)."""
    ran = _has(F.NOT_RUN, False)
    """The subject ran here (not `unavailable`, `skipped`)."""
    outdated = _has(F.OUTDATED)
    """A file computed on other inputs (`stale`): its reason says how to renew it."""
    at_kinks = _has(F.AT_KINKS)
    """It differs only at declared kinks (`kinks`): the views show `kinks` and `away`."""
    declared = _has(F.DECLARED)
    """A `weanj.Expected` difference, as declared (`expected`): listed with its reason."""
    not_there = _has(F.NOT_THERE)
    """Declared, and not there (`unexpectedly ok`): the numbers agree, the declaration is
    what is wrong."""

    @property
    def as_declared(self) -> bool:
        """A difference that shows as declared (`kinks`, `expected`): it passes, and the
        views show it beside the failures (the compact pair table, the pictures)."""
        return self.at_kinks or self.declared

    @property
    def rank(self) -> int:
        """0 for the worst (`RANKING`)."""
        return RANKING.index(self)

    @classmethod
    def parse(cls, text: str) -> Verdict:
        """The verdict a file or a report row spells (a `ValueError` for anything else)."""
        return cls(text)

    @staticmethod
    def worst(verdicts: Iterable[Verdict]) -> Verdict | None:
        """The worst of some verdicts (what a cell of several judgements shows)."""
        return min(verdicts, key=lambda v: v.rank, default=None)


RANKING = tuple(Verdict)
COLOURS = tuple(dict.fromkeys(v.colour for v in Verdict))
# The sets every module names by these words, derived from the table above.
FAULTS = tuple(v for v in Verdict if v.fault)
NOT_RUN = tuple(v for v in Verdict if not v.ran)
UNJUDGED = tuple(v for v in Verdict if not v.judged)
DECLARABLE = tuple(v for v in Verdict if v.declarable)


class CaseKind(str, enum.Enum):
    """A kind of case of the case table (`_pipeline.engine._cases`), defined once. Each member:
    (name, the column header views give it, whether it is a variant's own gradient check,
    what a check's cell shows: the report's column is `header (measure)`).

    The gradient checks (`GRADIENT_CHECKS`, in the order views show them) are the members
    with `check` set: a new gradient check is a member here, its result type with its rule
    and views in a module of `_judge` (as `_taylor`, `_jvp`; registered in
    `_judge._checks.RESULTS`), and its evaluation, its record's policy and its evidence in
    a module of `_pipeline.checks` (as `_check_taylor`), its entry of `_gradchecks.CHECKS`
    (one `GradientCheck` per member); the case table, the records, the workers,
    `weanj.Expected` and the views iterate over `GRADIENT_CHECKS`.
    """

    RUN = ("run", "run", False)  # a live subject: evaluated, or its fault
    PAIR = ("pair", "pair", False)  # two subjects compared elementwise
    TAYLOR = ("taylor", "Taylor", True, "min rate")  # the Taylor remainder test (DESIGN §9.1)
    JVP = ("jvp", "jvp", True, "rel. error")  # forward against reverse (DESIGN §9.2)
    FILE = ("file", "file", False)  # a file the plan read
    # Beyond the gradient (docs/outputs.md): an output of two subjects compared elementwise
    # as a pair's gradient is; their Hessian-vector products compared so; and the checks
    # of one variant's outputs and second order, where its example asks for them
    # (`optional`: a column only where the example has such cases)
    OUTPUT = ("output", "output", False)
    HVP = ("hvp", "Hv", False)
    PULLBACK = ("pullback", "Jᵀw", False)  # an output's Jᵀ·w per wrt array (DI's `pullback`)
    TAYLOR2 = ("taylor2", "Taylor²", True, "min rate", True)  # the gradient's, by Hv
    SYMMETRY = ("symmetry", "symmetry", True, "rel. error", True)  # ⟨u, Hv⟩ = ⟨v, Hu⟩
    DOT = ("dot", "dot", True, "rel. error", True)  # ⟨w, Jv⟩ = ⟨Jᵀw, v⟩, each output

    def __new__(
        cls, name: str, header: str, check: bool, measure: str = "", optional: bool = False
    ):
        member = str.__new__(cls, name)
        member._value_ = name
        member.header = header  # the column header of the variants' tables
        member.measure = measure  # what a check's cell shows (its result's `measure`)
        member._check = check
        member.optional = optional  # a check of some examples only: shown where it has cases
        return member

    @property
    def column(self) -> str:
        """A check's column in the report's tables: `Taylor (min rate)`."""
        return f"{self.header} ({self.measure})" if self.measure else self.header

    def __str__(self) -> str:
        return self.value

    @property
    def is_check(self) -> bool:
        """A variant's own gradient check (one case per live float64 variant and array)."""
        return self._check

    @property
    def compares(self) -> bool:
        """Two subjects compared elementwise under the tolerance policy: a pair's gradient,
        an output, a Hessian-vector product, an output's pullback (the pair tables and
        pictures show them)."""
        return self in (CaseKind.PAIR, CaseKind.OUTPUT, CaseKind.HVP, CaseKind.PULLBACK)


# The kinds of case the table holds, and the gradient checks among them, in view order.
CASE_KINDS = tuple(CaseKind)
GRADIENT_CHECKS = tuple(k for k in CaseKind if k.is_check)
