"""`weanj fuzz`'s run: the first draws, then Hypothesis's searches on the pairs left, and
each pair's smallest failing draw, within a budget of draws and time. Front ends (the
command, `pytest --weanj-fuzz`) call `run_fuzz` and render its `Fuzzed` (`_report._fuzz`).

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
`FuzzInput.order` (fewer array elements, then parameters nearer their defaults, then the
generator's smaller seed; the earlier draw among equals), "shrunk from" its first failing
draw when that is another. Never Hypothesis's last failing example as such: shrinking can
end on a larger one than an earlier failure (n = 2047 after 101). The case is written by
`_minimal_case.FuzzInput` (bisect's too) to `results/EX/cases/`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..._io import _inputs
from ..._model import Catalog, Example, Inputs, VariantRun
from ..._places import Places
from ..session._session import Session
from . import _fuzz_search as engine  # by its module: a test may watch `judge_draw`
from ._fuzz_draws import MAX_EXAMPLES, SEEDS, first_cases
from ._fuzz_search import Budget, Draw, OutOfTime, Pair, Tally
from ._minimal_case import FuzzInput

# --- the run -----------------------------------------------------------------------------------


@dataclass
class Finding:
    """A pair's smallest failing draw (`FuzzInput.order`; the first found among equals), with its
    case written, and the pair's first failing draw."""

    draw: Draw
    first: Draw | None
    case: FuzzInput  # as written: `case.path` is the case file
    how: str = "drawn"  # "shared inputs", "declared size", "neighbour", "drawn"

    @property
    def path(self):
        return self.case.path


@dataclass
class Fuzzed:
    """A fuzz run: its findings and what its draws came to (`lines`: what the command
    printed)."""

    example: Example
    pairs: list[tuple[VariantRun, VariantRun]]
    seed: int = 0
    seeded: bool = False  # the seed was given: no database, no clock in the report
    findings: list[Finding] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)
    seconds: float = 0.0  # on the run's clock (the command's: compilation not counted)
    compiling_s: float = 0.0  # beside them: tracing, lowering and compiling
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
    (`FuzzInput.order`; a later draw replaces the kept one only when strictly smaller, so the
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
            draw = engine.judge_draw(
                run.session,
                run.cat,
                run.remaining,
                case,
                run.budget,
                as_check=how == "shared inputs",
            )
        except OutOfTime:
            run.result.out_of_time = True
            return
        draw.index = run.result.draws
        run.result.tally.count(draw)
        new = [pair for pair in draw.failing if pair not in run.failures.first]
        run.failures.note(draw, how)
        if not new or how == "shared inputs":  # check's own case: reported as it is, at once
            run.told(draw)
        else:
            # Hypothesis shrinks what it draws, never these first draws: the pair goes on
            # into the search for a smaller case, and is reported on the smallest found.
            run.told(draw, f" ({_names(new)}: searching for a smaller case)")
        if new and how == "shared inputs":
            run.report(draw.only(new), None, how)
            run.remaining = [p for p in run.remaining if (p[0].label, p[1].label) not in new]
            run.failures.forget(new)  # reported: out of the search's accounts


def _searches(run: _Run, database: bool) -> None:
    """Hypothesis runs, each on the pairs left, until the draws or the time run out."""
    rounds = 0
    result = run.result
    while run.remaining and not result.out_of_time:
        left_n = run.max_examples - result.draws
        if left_n <= 0 or run.budget.spent:
            result.out_of_time = run.budget.spent
            return
        s = engine.search(
            run.session,
            run.cat,
            run.remaining,
            run.here,
            max_examples=left_n,
            budget=run.budget,
            seed=run.seed + rounds * SEEDS,  # each round its own draws, from the run's seed
            database=database,
            first_index=result.draws,
            told=run.told,
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
        run.remaining = [
            p for p in run.remaining if (p[0].label, p[1].label) not in s.shrunk.failing
        ]


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

    def told(self, draw: Draw, note: str = "") -> None:
        """One line per draw judged, with the values drawn (`draw 3: n = 17, T = 39, seed
        5: agree`), so that a run says what it tried; `note` after it."""
        failing = _names(draw.failing)
        said = f"{failing} disagree" if failing else "agree"
        if draw.alike:
            said += f" ({_names(draw.alike)}: NaN/Inf on both sides)"
        self.say(f"  draw {draw.index + 1}: {draw.case.describe()}: {said}{note}")

    def report(self, draw: Draw, first: Draw | None, how: str) -> None:
        """A finding, its case written to `results/EX/cases/`."""
        stem = f"fuzz-{draw.case.inputs.key('float64')[:12]}"
        written = draw.case.write(self.here, stem)
        self.result.findings.append(Finding(draw, first, written, how))


def run_fuzz(
    session: Session,
    cat: Catalog,
    pairs: list[tuple[VariantRun, VariantRun]],
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
    result.tally.as_declared = {
        (a.label, b.label): 0 for a, b in pairs if cat.declared_pair(a.variant, b.variant)
    }
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
