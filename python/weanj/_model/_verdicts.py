"""The verdicts and the kinds of case, defined once: each verdict with its label, its
colour, whether it fails, whether two ports agree, and its rank (docs/DESIGN.md, "The
judge"; docs/verdicts.md); each kind of case with its column header and whether it is a
gradient check.

They live in the typed model (layer 2) so that `weanj.Expected` (`_model._expected`) can
name them; the judge, the pipeline and the views import them from here.

Everything else is derived from this table: `Verdict.failing` (the command exits 1,
pytest fails the item), `Verdict.agreeing` (what bisect and fuzz search the end of), the
ranking (`RANKING`, the order of the definitions, worst first), the colour of every page
and notebook (`Verdict.colour`), the fault verdicts of `_contract`. No other list of
verdicts exists anywhere.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Verdict(str, enum.Enum):
    """A verdict, worst first. Each member: (label, colour class, what it is: some of
    `fails` (a failure), `agrees` (two ports agree), `fault` (a subject's own fault: its
    pairs and checks are not compared), `declarable` (a `weanj.Expected` may declare it),
    `unjudged` (it says nothing about a difference: a declaration leaves it as it is),
    `not-run` (the subject does not run here), `as-declared` (a difference that shows as
    declared: it passes, and is worth a look))."""

    # outside the tolerance policy, a gradient check that failed, a bad file; or a declared
    # difference that shows other than declared (the reason says how)
    FAIL = ("FAIL", "fail", "fails declarable")
    # declared with `weanj.Expected`, and not there: the pair agrees (strict, like
    # pytest's xfail(strict=True))
    UNEXPECTEDLY_OK = ("unexpectedly ok", "fail", "fails")
    # the variant itself is at fault (it raised; outputs of the wrong shape, kind, dtype)
    ERROR = ("error", "fail", "fails fault declarable")
    # a NaN or Inf in a loss or gradient
    NONFINITE = ("NaN/Inf", "fail", "fails fault declarable")
    TIMEOUT = ("timeout", "fail", "fails fault")  # a run that exceeded its time limit
    STALE = ("stale", "stale", "unjudged")  # a file computed on other inputs
    # a pair declared with `weanj.differ_at_kinks` that agrees away from the kinks
    KINKS = ("kinks", "kinks", "agrees as-declared")
    # a difference declared with `weanj.Expected` that shows as declared (with its reason)
    EXPECTED = ("expected", "expected", "as-declared")
    UNAVAILABLE = ("unavailable", "skip", "unjudged not-run")  # its backend is missing here
    SKIPPED = ("skipped", "skip", "unjudged not-run")  # not judged, with the reason
    INFO = ("info", "info", "unjudged")  # two families, compared for information
    OK = ("ok", "ok", "agrees")  # within the tolerance policy / the check passed

    def __new__(cls, label: str, colour: str, what: str):
        member = str.__new__(cls, label)
        member._value_ = label
        member.colour = colour  # the CSS class of pages and notebooks
        member._what = frozenset(what.split())
        return member

    def __str__(self) -> str:
        return self.value

    @property
    def failing(self) -> bool:
        """A failure: the command exits 1 and pytest fails the item."""
        return "fails" in self._what

    @property
    def agreeing(self) -> bool:
        """Two ports agree (what bisect and fuzz search the end of)."""
        return "agrees" in self._what

    @property
    def fault(self) -> bool:
        """A subject's own fault (`error`, `NaN/Inf`, `timeout`): its `run` case says it,
        its pairs and checks are not compared."""
        return "fault" in self._what

    @property
    def declarable(self) -> bool:
        """What a `weanj.Expected` may declare."""
        return "declarable" in self._what

    @property
    def judged(self) -> bool:
        """It says something about a difference (False for `stale`, `unavailable`,
        `skipped`, `info`: a declaration leaves such a case as it is)."""
        return "unjudged" not in self._what

    @property
    def as_declared(self) -> bool:
        """A difference that shows as declared (`kinks`, `expected`): it passes, and the
        views show it beside the failures (the compact pair table, the pictures)."""
        return "as-declared" in self._what

    @property
    def ran(self) -> bool:
        """The subject ran here (False for `unavailable` and `skipped`)."""
        return "not-run" not in self._what

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
    `_judge._checks.RESULTS`), and its evaluation with its record's policy in
    `_pipeline.checks._gradchecks.CHECKS` (one `GradientCheck` per member); the case table, the
    records, the workers, `weanj.Expected` and the views iterate over `GRADIENT_CHECKS`.
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
