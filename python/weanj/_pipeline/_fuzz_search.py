"""`weanj fuzz`'s search engine: every draw judged as `weanj check` judges it, Hypothesis's
search and shrinking, each pair's smallest failing draw, within a budget of draws and time.

Front ends (the command, `pytest --weanj-fuzz`) call `run_fuzz` and render its `Fuzzed`
(`_report._fuzz`); the draws themselves are `_fuzz_draws`'s.

**Judging a draw.** Every draw is judged by the one judge as check judges it
(`_cases.judge_pair_on`), with the pairs' declarations (`weanj.Expected`): a declared pair
fails a draw only where it differs beyond its declaration
(`_judge._expected.beyond_declaration`). A draw where it differs as declared passes and is
counted ("A~B: N draw(s) differed as declared (expected)"); so does one where the declared
difference does not show (a declaration is made on the shared inputs; `weanj check` holds
it there). A draw on which every variant's loss or gradient is NaN/Inf is counted too: when
most draws are, the parameters are drawn where the kernel cannot go, which the report says.

**The search.** The first draws (`_fuzz_draws.first_cases`) are judged in order; a pair
failing on the shared inputs is reported at once, one failing on a declared size or a
neighbour goes on into Hypothesis's search for a smaller case. A draw on which some pair
disagrees is a failure, which Hypothesis shrinks; the pairs whose failure it shrank leave
the search, which goes on with the others in the draws and time left. Each Hypothesis run
takes its own seed from the run's (`S + k·2^32` for the k-th), set with `@seed`;
`@settings` above it sets the database again for unseeded runs (`@seed` alone turns it
off).

**The case reported.** Every failing draw of the run (the first draws included) is noted
per pair, in draw order; each pair is reported on its smallest failing draw by
`Case.order` (fewer array elements, then parameters nearer their defaults, then the
generator's smaller seed; the earlier draw among equals), "shrunk from" its first failing
draw when that is another. Never Hypothesis's last failing example as such: shrinking can
end on a larger one than an earlier failure (n = 2047 after 101). The case is written by
`_minimal_case.Case` (bisect's too) to `results/EX/cases/`.

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

from .._io import _inputs
from .._judge._contract import Fault
from .._model import Catalog, Example, Inputs, Variant
from .._model._verdicts import Verdict
from .._places import Places
from ._cases import PairOutcome, judge_pair_on
from ._fuzz_draws import MAX_EXAMPLES, SEEDS, draw_case, first_cases, no_local_constants
from ._minimal_case import Case
from ._session import Session

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
    """A case, each pair's outcome on it, and its place in the run's order of draws."""

    case: Case
    outcomes: dict[Pair, PairOutcome]
    index: int = 0
    nonfinite: bool = False  # every variant's loss or gradient was NaN/Inf

    @property
    def failing(self) -> dict[Pair, PairOutcome]:
        """The pairs that differ here beyond their declarations (all of an undeclared
        pair's differences are)."""
        return {pair: o for pair, o in self.outcomes.items() if not o.agree}

    @property
    def as_declared(self) -> list[Pair]:
        """The pairs that differ here only as declared (`expected`)."""
        return [pair for pair, o in self.outcomes.items() if o.as_declared]

    def only(self, pairs) -> Draw:
        """The same draw, with the outcomes of `pairs` alone."""
        kept = {p: o for p, o in self.outcomes.items() if p in pairs}
        return Draw(self.case, kept, self.index, self.nonfinite)


def judge_draw(session: Session, cat: Catalog, pairs, case: Case, budget: Budget) -> Draw:
    """Every pair judged on the case. Each variant is evaluated once (the session keeps
    it), one after the other, the budget checked before each call (module docstring);
    a call past `--timeout` ends the search (`OutOfTime`)."""
    inputs = case.inputs
    variants = list({v.name: v for pair in pairs for v in pair}.values())  # once each
    for v in variants:
        budget.check()
        session.outcome(v, inputs, "float64")
    outcomes = {v.name: session.outcome(v, inputs, "float64") for v in variants}
    for a, b in pairs:  # a kink pair's mask is a call of the example's own
        faulty = any(isinstance(outcomes[v.name], Fault) for v in (a, b))
        if not faulty and cat.kink_difference(a, b) is not None:
            budget.check()
            session.masks(cat.example, inputs)
    draw = Draw(
        case, {(a.name, b.name): judge_pair_on(session, cat, a, b, inputs) for a, b in pairs}
    )
    draw.nonfinite = bool(outcomes) and all(
        isinstance(o, Fault) and o.verdict == Verdict.NONFINITE for o in outcomes.values()
    )
    if any(o.timed_out for o in draw.outcomes.values()):
        raise OutOfTime
    return draw


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
    names = sorted(f"{a.name}~{b.name}" for a, b in pairs)
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
) -> Search:
    """One Hypothesis run over `pairs` (module docstring), its draws from `seed`; with
    `database`, the failures kept in `results/.weanj-fuzz/` are replayed first (and new
    ones kept)."""
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


# --- the run -----------------------------------------------------------------------------------


@dataclass
class Finding:
    """A pair's smallest failing draw (`Case.order`; the first found among equals), with its
    case written, and the pair's first failing draw."""

    draw: Draw
    first: Draw | None
    case: Case  # as written: `case.path` is the case file
    how: str = "drawn"  # "shared inputs", "declared size", "neighbour", "drawn"

    @property
    def path(self):
        return self.case.path


@dataclass
class Fuzzed:
    """A fuzz run: its findings and what its draws came to (`lines`: what the command
    printed)."""

    example: Example
    pairs: list[tuple[Variant, Variant]]
    seed: int = 0
    seeded: bool = False  # the seed was given: no database, no clock in the report
    findings: list[Finding] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)
    seconds: float = 0.0
    out_of_time: bool = False
    cut_short: bool = False  # the time ran out while a failure was being shrunk
    left_out: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    @property
    def draws(self) -> int:
        return self.tally.draws

    @property
    def refused(self) -> dict[str, int]:
        return self.tally.refused

    @property
    def as_declared(self) -> dict[Pair, int]:
        """The pairs declared to differ (`weanj.Expected`): how many draws differed as
        declared."""
        return self.tally.as_declared

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def failed_pairs(self) -> set[Pair]:
        return {pair for f in self.findings for pair in f.draw.failing}

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


class Failures:
    """Each pair's first and smallest failing draw, over every draw of the run in order
    (`Case.order`; a later draw replaces the kept one only when strictly smaller, so the
    one reported is never larger than the first)."""

    def __init__(self) -> None:
        self.first: dict[Pair, tuple[Draw, str]] = {}
        self.smallest: dict[Pair, tuple[Draw, str]] = {}

    def note(self, draw: Draw, how: str) -> None:
        for pair in draw.failing:
            self.first.setdefault(pair, (draw, how))
            kept = self.smallest.get(pair)
            if kept is None or draw.case.order() < kept[0].case.order():
                self.smallest[pair] = (draw, how)

    def forget(self, pairs) -> None:
        for pair in pairs:
            del self.first[pair], self.smallest[pair]

    def findings(self) -> list[tuple[Draw, Draw, str]]:
        """(smallest, first, how) per group of pairs sharing both, in draw order."""
        groups: dict[tuple[int, int], tuple[Draw, Draw, str, list]] = {}
        for pair, (draw, how) in self.smallest.items():
            first = self.first[pair][0]
            groups.setdefault((draw.index, first.index), (draw, first, how, []))[3].append(pair)
        return [
            (draw.only(pairs), first, how)
            for _, (draw, first, how, pairs) in sorted(groups.items())
        ]


def _names(pairs) -> str:
    return ", ".join(f"{a}~{b}" for a, b in pairs)


def _first_draws(run: _Run) -> None:
    """The first draws, in order (module docstring): a pair failing on the shared inputs is
    reported at once and leaves the search; one failing on another goes on into it."""
    for how, case in first_cases(run.cat.example, run.shared):
        if not run.remaining or run.result.draws >= run.max_examples:
            return
        try:
            draw = judge_draw(run.session, run.cat, run.remaining, case, run.budget)
        except OutOfTime:
            run.result.out_of_time = True
            return
        draw.index = run.result.draws
        run.result.tally.count(draw)
        new = [pair for pair in draw.failing if pair not in run.failures.first]
        run.failures.note(draw, how)
        if not new:
            continue
        if how == "shared inputs":  # check's own case: reported as it is, at once
            run.say(f"  {how}: {_names(new)} disagree")
            run.report(draw.only(new), None, how)
            run.remaining = [p for p in run.remaining if (p[0].name, p[1].name) not in new]
            run.failures.forget(new)  # reported: out of the search's accounts
        else:
            # Hypothesis shrinks what it draws, never these first draws: the pair goes on
            # into the search for a smaller case, and is reported on the smallest found.
            run.say(f"  {case.source}: {_names(new)} disagree (searching for a smaller case)")


def _searches(run: _Run, database: bool) -> None:
    """Hypothesis runs, each on the pairs left, until the draws or the time run out."""
    rounds = 0
    result = run.result
    while run.remaining and not result.out_of_time:
        left_n = run.max_examples - result.draws
        if left_n <= 0 or run.budget.spent:
            result.out_of_time = run.budget.spent
            return
        s = search(
            run.session,
            run.cat,
            run.remaining,
            run.here,
            max_examples=left_n,
            budget=run.budget,
            seed=run.seed + rounds * SEEDS,  # each round its own draws, from the run's seed
            database=database,
            first_index=result.draws,
        )
        rounds += 1
        result.tally.add(s.tally)
        result.out_of_time = result.out_of_time or s.out_of_time
        result.cut_short = result.cut_short or (s.out_of_time and bool(s.failing))
        for draw in s.failing:
            run.failures.note(draw, "drawn")
        if s.shrunk is None:
            return
        # The pairs Hypothesis shrank leave the search; the others go on with the time left.
        run.remaining = [p for p in run.remaining if (p[0].name, p[1].name) not in s.shrunk.failing]


@dataclass
class _Run:
    """One run's state while it searches."""

    session: Session
    cat: Catalog
    here: Places
    shared: Inputs
    result: Fuzzed
    remaining: list
    budget: Budget
    seed: int
    max_examples: int
    say: Callable[[str], None]
    failures: Failures = field(default_factory=Failures)

    def report(self, draw: Draw, first: Draw | None, how: str) -> None:
        """A finding, its case written to `results/EX/cases/`."""
        stem = f"fuzz-{draw.case.inputs.key('float64')[:12]}"
        written = draw.case.write(self.here, stem)
        self.result.findings.append(Finding(draw, first, written, how))


def run_fuzz(
    session: Session,
    cat: Catalog,
    pairs: list[tuple[Variant, Variant]],
    here: Places,
    *,
    seed: int,
    database: bool = True,
    max_examples: int = MAX_EXAMPLES,
    seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    say: Callable[[str], None] = print,
) -> Fuzzed:
    """The search (module docstring), its draws from `seed`, within `max_examples` draws
    and `seconds` on `clock`; each failure is written as a case file. With `database`,
    Hypothesis's kept failures are replayed first."""
    result = Fuzzed(cat.example, list(pairs), seed=seed, seeded=not database)
    result.tally.as_declared = {(a.name, b.name): 0 for a, b in pairs if cat.declared_pair(a, b)}
    run = _Run(
        session,
        cat,
        here,
        _inputs.read_inputs(cat.example, here),
        result,
        list(pairs),
        Budget(seconds, clock),
        seed,
        max_examples,
        say,
    )
    _first_draws(run)
    _searches(run, database)
    for draw, first, how in run.failures.findings():
        run.report(draw, first, how)
    result.seconds = run.budget.elapsed()
    return result
