"""`weanj fuzz`'s search engine, its parts: the run's time (`Budget`), every draw judged as
`weanj check` judges it (`judge_draw`), and one Hypothesis run over the pairs left
(`search`). The whole run (first draws, searches, the case reported) is `_fuzz_run`'s;
what is drawn, `_fuzz_draws`'s.

**Judging a draw.** Every draw is judged by the one judge as check judges it
(`_cases.judge_pair_on`), with the pairs' declarations (`weanj.Expected`): a declared pair
fails a draw only where it differs beyond its declaration
(`_judge._expected.beyond_declaration`). A draw where it differs as declared passes and is
counted ("A~B: N draw(s) differed as declared (expected)"); so does one where the declared
difference does not show (a declaration is made on the shared inputs; `weanj check` holds
it there). A pair both of whose sides give NaN/Inf on a drawn input agree that the input
lies where the kernel cannot go (an explicit step past its stability limit): no failure of
the pair (fuzz looks for ports that part ways), but the draws on which every variant does
are counted and said, and when they are a quarter of the run's or more, the report names
the parameters drawn and points at `weanj.Param(minimum=, maximum=)`. On the shared inputs
(check's own case) such a pair fails, as in `weanj check`.

**The time.** `--seconds` bounds the whole run, shrinking included, on the run's clock
(`Budget`, a seam a test replaces). It is checked before each call: no evaluation starts
once the time is spent, and the one in flight is waited for, so the run ends within the
seconds and one evaluation, and no call is left running (a Python thread cannot be stopped,
so none is abandoned). Past it, the draw raises `OutOfTime`, a `BaseException` that
Hypothesis lets through (an `assume(False)` there would make the data generation depend on
the clock, which Hypothesis rejects as flaky). A call past the `--timeout` of one call
also ends the search: a slow variant is no wrong one.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..._judge._contract import Fault
from ..._model import Catalog
from ..._model._verdicts import Verdict
from ..._places import Places
from ..engine._cases import PairOutcome, judge_pair_on
from ..session._session import Session
from ._fuzz_draws import draw_case, no_local_constants
from ._minimal_case import FuzzInput

Pair = tuple[str, str]


# --- the budget --------------------------------------------------------------------------------


class OutOfTime(BaseException):
    """Past `--seconds`: ends the Hypothesis run at once (see the module docstring)."""


@dataclass
class Budget:
    """The run's time: `seconds` from its start on `clock` (None: no limit)."""

    seconds: float | None = None
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.start = self.clock()
        self.stop_at = None if self.seconds is None else self.start + self.seconds

    @property
    def spent(self) -> bool:
        return self.stop_at is not None and self.clock() >= self.stop_at

    def check(self) -> None:
        """Before a call: none starts once the time is spent."""
        if self.spent:
            raise OutOfTime

    def elapsed(self) -> float:
        return self.clock() - self.start


# --- judging a draw ----------------------------------------------------------------------------


@dataclass
class Draw:
    """A case, each pair's outcome on it (by the labels of its runs), and its place in the
    run's order of draws."""

    case: FuzzInput
    outcomes: dict[Pair, PairOutcome]
    index: int = 0
    nonfinite: bool = False  # every run's loss or gradient was NaN/Inf
    # the pairs both of whose sides gave NaN/Inf on a drawn input (module docstring)
    alike: frozenset[Pair] = frozenset()

    @property
    def failing(self) -> dict[Pair, PairOutcome]:
        """The pairs that differ here beyond their declarations (all of an undeclared
        pair's differences are), but for those alike at NaN/Inf."""
        return {
            pair: o for pair, o in self.outcomes.items() if not o.agree and pair not in self.alike
        }

    @property
    def as_declared(self) -> list[Pair]:
        """The pairs that differ here only as declared (`expected`)."""
        return [pair for pair, o in self.outcomes.items() if o.as_declared]

    def only(self, pairs) -> Draw:
        """The same draw, with the outcomes of `pairs` alone."""
        kept = {p: o for p, o in self.outcomes.items() if p in pairs}
        return Draw(self.case, kept, self.index, self.nonfinite, self.alike)


def judge_draw(
    session: Session,
    cat: Catalog,
    pairs,
    case: FuzzInput,
    budget: Budget,
    *,
    as_check: bool = False,
) -> Draw:
    """Every pair of runs judged on the case. Each run is evaluated once (the session keeps
    it), one after the other, the budget checked before each call (module docstring);
    a call past `--timeout` ends the search (`OutOfTime`). `as_check`: check's own case
    (the shared inputs), on which a pair both of whose sides give NaN/Inf fails as in
    `weanj check`."""
    inputs = case.inputs
    runs = list({r.label: r for pair in pairs for r in pair}.values())  # once each
    for r in runs:
        budget.check()
        session.outcome(r.variant, inputs, r.dtype, r.device)
    outcomes = {r.label: session.outcome(r.variant, inputs, r.dtype, r.device) for r in runs}
    for a, b in pairs:  # a kink pair's mask is a call of the example's own
        faulty = any(isinstance(outcomes[r.label], Fault) for r in (a, b))
        if not faulty and cat.kink_difference(a.variant, b.variant) is not None:
            budget.check()
            session.masks(cat.example, inputs)
    draw = Draw(
        case, {(a.label, b.label): judge_pair_on(session, cat, a, b, inputs) for a, b in pairs}
    )
    blown = {label for label, o in outcomes.items() if _nonfinite(o)}
    draw.nonfinite = bool(outcomes) and blown == set(outcomes)
    if not as_check:
        draw.alike = frozenset(p for p in draw.outcomes if set(p) <= blown)
    if any(o.timed_out for o in draw.outcomes.values()):
        raise OutOfTime
    return draw


def _nonfinite(outcome) -> bool:
    return isinstance(outcome, Fault) and outcome.verdict == Verdict.NONFINITE


@dataclass
class Tally:
    """What a run's draws came to, beside its failures."""

    draws: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # by the example, per reason
    as_declared: dict[Pair, int] = field(default_factory=dict)  # draws per declared pair
    nonfinite: int = 0  # draws on which every variant gave NaN/Inf

    def count(self, draw: Draw) -> None:
        self.draws += 1
        self.nonfinite += draw.nonfinite
        for pair in draw.as_declared:
            self.as_declared[pair] = self.as_declared.get(pair, 0) + 1

    def add(self, other: Tally) -> None:
        self.draws += other.draws
        self.nonfinite += other.nonfinite
        for mine, theirs in ((self.refused, other.refused), (self.as_declared, other.as_declared)):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n


# --- one Hypothesis run ------------------------------------------------------------------------


class Disagreement(Exception):
    """Some pair disagrees on a draw: the failure Hypothesis shrinks."""

    def __init__(self, draw: Draw):
        super().__init__(", ".join(f"{a}~{b}" for a, b in draw.failing))
        self.draw = draw


@dataclass
class Search:
    """What one Hypothesis run found."""

    tally: Tally = field(default_factory=Tally)
    failing: list[Draw] = field(default_factory=list)  # every failing draw, in draw order
    shrunk: Draw | None = None  # Hypothesis's last failing example: whose pairs it shrank
    out_of_time: bool = False


def database_dir(cat: Catalog, pairs, here: Places):
    """`results/.weanj-fuzz/EX/<digest of the pairs>/`: one database per set of pairs."""
    names = sorted(f"{a.label}~{b.label}" for a, b in pairs)
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]
    return here.fuzz_database(cat.name, digest)


def _settings(cat: Catalog, pairs, here: Places, max_examples: int, database: bool):
    from hypothesis import HealthCheck, Phase, Verbosity, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    kept = DirectoryBasedExampleDatabase(database_dir(cat, pairs, here)) if database else None
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=kept,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    )


def search(
    session: Session,
    cat: Catalog,
    pairs,
    here: Places,
    *,
    max_examples: int,
    budget: Budget,
    seed: int,
    database: bool,
    first_index: int = 0,
    told: Callable[[Draw], None] = lambda draw: None,
) -> Search:
    """One Hypothesis run over `pairs`, its draws from `seed` (each run of a fuzz run takes
    its own: `S + k·2^32` for the k-th), shrinking the failures it finds; with
    `database`, the failures kept in `results/.weanj-fuzz/` are replayed first (and new
    ones kept). Each draw judged is `told` (a replayed one, judged before, is not)."""
    from hypothesis import given
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable
    from hypothesis.reporting import with_reporter

    ex = cat.example
    found = Search()
    judged: dict[str, Draw] = {}  # by provenance key: a replayed draw is not recomputed

    # `@seed` alone turns the database off; `@settings` applied after it (above it) sets
    # the database again, for a run given no seed.
    @_settings(cat, pairs, here, max_examples, database)
    @hypothesis_seed(seed)
    @given(st.data())
    def probe(data):
        case = draw_case(data, ex, cat.strategies, found.tally.refused)
        key = case.inputs.key("float64")
        if key not in judged:
            draw = judge_draw(session, cat, pairs, case, budget)
            draw.index = first_index + found.tally.draws
            found.tally.count(draw)
            told(draw)
            if draw.failing:
                found.failing.append(draw)
            judged[key] = draw
        if judged[key].failing:
            raise Disagreement(judged[key])

    try:
        with with_reporter(lambda text: None), no_local_constants():
            probe()
    except Disagreement as e:
        found.shrunk = e.draw  # Hypothesis's shrunk example, replayed last
    except OutOfTime:
        found.out_of_time = True
    except Unsatisfiable:
        pass  # no draw was accepted: reported by the caller from `refused`
    return found
