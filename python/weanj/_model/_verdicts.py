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
    """A verdict, worst first. Each member: (label, colour class, fails, agrees)."""

    # outside the tolerance policy, a gradient check that failed, a bad file; or a declared
    # difference that shows other than declared (the reason says how)
    FAIL = ("FAIL", "fail", True, False)
    # declared with `weanj.Expected`, and not there: the pair agrees (strict, like
    # pytest's xfail(strict=True))
    UNEXPECTEDLY_OK = ("unexpectedly ok", "fail", True, False)
    # the variant itself is at fault (it raised; outputs of the wrong shape, kind, dtype)
    ERROR = ("error", "fail", True, False)
    NONFINITE = ("NaN/Inf", "fail", True, False)  # a NaN or Inf in a loss or gradient
    TIMEOUT = ("timeout", "fail", True, False)  # a run that exceeded its time limit
    STALE = ("stale", "stale", False, False)  # a file computed on other inputs
    # a pair declared with `weanj.differ_at_kinks` that agrees away from the kinks
    KINKS = ("kinks", "kinks", False, True)
    # a difference declared with `weanj.Expected` that shows as declared (with its reason)
    EXPECTED = ("expected", "expected", False, False)
    UNAVAILABLE = ("unavailable", "skip", False, False)  # its backend is missing here
    SKIPPED = ("skipped", "skip", False, False)  # not judged, with the reason
    INFO = ("info", "info", False, False)  # two families, compared for information
    OK = ("ok", "ok", False, True)  # within the tolerance policy / the check passed

    def __new__(cls, label: str, colour: str, fails: bool, agrees: bool):
        member = str.__new__(cls, label)
        member._value_ = label
        member.colour = colour  # the CSS class of pages and notebooks
        member._fails, member._agrees = fails, agrees
        return member

    def __str__(self) -> str:
        return self.value

    @property
    def failing(self) -> bool:
        """A failure: the command exits 1 and pytest fails the item."""
        return self._fails

    @property
    def agreeing(self) -> bool:
        """Two ports agree (what bisect and fuzz search the end of)."""
        return self._agrees

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


class CaseKind(str, enum.Enum):
    """A kind of case of the case table (`_pipeline._cases`), defined once. Each member:
    (name, the column header views give it, whether it is a variant's own gradient check).

    The gradient checks (`GRADIENT_CHECKS`, in the order views show them) are the members
    with `check` set: a new gradient check is a member here, its judgement in
    `_judge._verdict`, and its evaluation with its record's policy and reader in
    `_pipeline._gradchecks.CHECKS` (one `GradientCheck` per member); the case table, the
    records, the workers, `weanj.Expected` and the views iterate over `GRADIENT_CHECKS`.
    """

    RUN = ("run", "run", False)  # a live subject: evaluated, or its fault
    PAIR = ("pair", "pair", False)  # two subjects compared elementwise
    TAYLOR = ("taylor", "Taylor", True)  # the Taylor remainder test (DESIGN §9.1)
    JVP = ("jvp", "jvp", True)  # forward against reverse (DESIGN §9.2)
    FILE = ("file", "file", False)  # a file the plan read

    def __new__(cls, name: str, header: str, check: bool):
        member = str.__new__(cls, name)
        member._value_ = name
        member.header = header  # the column header of the variants' tables
        member._check = check
        return member

    def __str__(self) -> str:
        return self.value

    @property
    def is_check(self) -> bool:
        """A variant's own gradient check (one case per live float64 variant and array)."""
        return self._check


# The kinds of case the table holds, and the gradient checks among them, in view order.
KINDS = tuple(CaseKind)
GRADIENT_CHECKS = tuple(k for k in CaseKind if k.is_check)
