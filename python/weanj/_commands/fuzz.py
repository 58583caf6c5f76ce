"""`weanj fuzz EX [--pairs A B]... [--max-examples N] [--seconds S] [--seed S]`: differential
testing of same-family pairs on drawn inputs, with shrinking (Hypothesis).

fuzz starts where `weanj check` stands: the pairs are the case table's (`Plan.
same_family_pairs`, the float64 pairs check judges, with check's ids), and every draw is
judged by the one judge as check judges it (`_pipeline._cases.judge_pair_on`). The first
draws are not random:

1. the shared inputs with the default parameters (a pair `weanj check` fails is reported
   at once, as FAIL, with check's case id);
2. each declared size (`Sizes.values`, smallest first) at the default parameters;
3. the default's neighbours: each int parameter at default ± 1, each bool flipped.

A pair failing at 2 or 3 goes on into the search below, for a smaller case.

Then Hypothesis draws, from the run's seed: a seed of the generator, a size
(`Sizes.candidates`, the sizes bisect tries: 1 … 8, each power of two from 16 with its odd
neighbours up to the largest declared size, every declared size; or the shared size
through the example's own `generate`) and every parameter over its declared range,
shrinking towards the default (an int whose range is left open, up to int32's maximum, is
drawn up to 4× its default, or default + 8); or the arrays of one of the example's own
strategies (`weanj.fuzz_strategy`: ties, zeros, particles on cell boundaries). A draw on
which some pair disagrees is a failure, which Hypothesis shrinks. The pairs whose failure
it shrank leave the search, which goes on with the others in the draws and time left.

**Declared pairs.** Each draw is judged with the pairs' declarations (`weanj.Expected`),
by the judge: a declared pair is said to be so (`_minimal_case.declared_line`), and fails a
draw only where it differs beyond its declaration (`_judge._expected.beyond_declaration`:
another array or elements, above the bound, another verdict). A draw where it differs as
declared passes and is counted ("A~B: N draw(s) differed as declared (expected)"); so does
one where the declared difference does not show (a declaration is made on the shared
inputs; `weanj check` holds it there).

**The case reported.** Every failing draw of the run (the first draws included) is noted
per pair, in draw order; each pair is reported on its smallest failing draw by
`Case.order` (fewer array elements, then parameters nearer their defaults, then the
generator's smaller seed; the earlier draw among equals), "shrunk from" its first failing
draw when that is another. Never Hypothesis's last failing example as such: shrinking can
end on a larger one than an earlier failure (n = 2047 after 101). The case is written by
`_pipeline._minimal_case.Case` (bisect's too) to `results/EX/cases/`, with the commands
that reproduce it.

**The seed.** A run given no `--seed` draws one and shows it, with the command that
replays its draws; Hypothesis's database of failing draws, under `results/.weanj-fuzz/`
(nothing is written in the project root), is replayed first and added to. A run given
`--seed S` neither reads nor writes the database, has no time limit unless `--seconds` is
given, and prints no wall-clock figure: its report depends on the seed (and the project)
alone. Each Hypothesis run of the search takes its own seed from the run's (`S + k·2^32`
for the k-th), set with `@seed`; `@settings` above it sets the database again for
unseeded runs (`@seed` alone turns it off); the constants Hypothesis would now and then
draw from the "local" modules loaded are off (`_no_local_constants`: which modules are
loaded differs between front ends). `pytest --weanj-fuzz N` seeds each pair from its case
id (`pair_seed`): the same draws on every run, shown on failure.

`--seconds` bounds the whole run, shrinking included: past it, the next draw that would
evaluate anything raises `_OutOfTime`, a `BaseException` that Hypothesis lets through (an
`assume(False)` there would make the data generation depend on the clock, which
Hypothesis rejects as flaky).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InputError, UnavailableError, WeanjError
from .._io import _inputs, _jax_cache
from .._judge._expected import beyond_declaration
from .._model import INT32_MAX, Catalog, Example, Inputs, Param, Variant, from_arrays
from .._model._verdicts import Verdict
from .._pipeline._cases import PairOutcome, build_plan, fuzz_id, judge_pair_on
from .._pipeline._minimal_case import Case, declared_line, sized_case
from .._pipeline._session import Session
from .._places import Places, places
from .._report._lines import ranges_text
from .._report._text import message

MAX_EXAMPLES = 100
SECONDS = 60.0
GENERATOR = "generator"  # a draw from the example's generator (not one of its strategies)
SEEDS = 2**32  # a run's seed is one of 0 … SEEDS - 1
OPEN_REACH = 4  # an open int range is drawn up to this many times its default (or +8)

# --- the pairs ---------------------------------------------------------------------------------


def fuzz_pairs(
    cat: Catalog, inputs: Inputs
) -> tuple[list[tuple[Variant, Variant]], dict[str, str]]:
    """The pairs fuzz searches: the case table's same-family pairs of float64 variants
    that run here, and `{variant: why it takes no part}`."""
    plan = build_plan(cat, inputs, live=True, dtypes=("float64",), checks=False)
    left_out = {s.variant.name: s.skip.what for s in plan.subjects.values() if s.skip is not None}
    return plan.same_family_pairs(), left_out


# --- what is drawn ----------------------------------------------------------------------------


def int_bounds(p: Param) -> tuple[int, int]:
    """The range an int parameter is drawn from: its declared range, an open top (int32's
    maximum) cut to `OPEN_REACH` × the default (or default + 8)."""
    lo, hi = int(p.minimum), int(p.maximum)
    if hi == INT32_MAX:
        hi = max(lo, min(hi, max(OPEN_REACH * int(p.default), int(p.default) + 8)))
    return lo, hi


def float_bounds(p: Param) -> tuple[float, float]:
    """The range a float parameter is drawn from: its declared range, an open side cut to
    the default ± 4·(|default| + 1)."""
    reach = OPEN_REACH * (abs(float(p.default)) + 1.0)
    lo = float(p.minimum) if math.isfinite(p.minimum) else float(p.default) - reach
    hi = float(p.maximum) if math.isfinite(p.maximum) else float(p.default) + reach
    return lo, hi


def drawn_text(ex: Example, strategies: Sequence[Callable]) -> str:
    """What the drawn inputs are drawn from, as the header says it: `n ∈ {1, …, 8, 16,
    shared}; S ∈ 1…10 (shrinking towards 2); seeds; strategies ties`."""
    parts = ["the shared size"]
    if ex.sizes is not None:
        parts = [f"{ex.sizes.name} ∈ {{{ranges_text(ex.sizes.candidates())}, shared}}"]
    for p in ex.params:
        if p.kind == "int":
            lo, hi = int_bounds(p)
            parts.append(f"{p.name} ∈ {lo}…{hi} (shrinking towards {p.default})")
        elif p.kind == "float":
            lo, hi = float_bounds(p)
            parts.append(f"{p.name} ∈ [{lo:g}, {hi:g}] (shrinking towards {p.default:g})")
        else:
            parts.append(f"{p.name} ∈ {{{p.default}, {not p.default}}}")
    parts.append("seeds")
    if strategies:
        names = (getattr(s, "__name__", "strategy") for s in strategies)
        parts.append("strategies " + ", ".join(names))
    return "; ".join(parts)


def neighbours(ex: Example) -> list[dict[str, Any]]:
    """The default's neighbours: each int parameter at default ± 1, each bool flipped."""
    out = []
    for p in ex.params:
        if p.kind == "int":
            lo, hi = int_bounds(p)
            out += [{p.name: v} for v in (p.default - 1, p.default + 1) if lo <= v <= hi]
        elif p.kind == "bool":
            out.append({p.name: not p.default})
    return out


def _sizes(ex: Example) -> tuple[int | None, ...]:
    """The sizes drawn (bisect's candidates: `Sizes.candidates`), and None: the shared
    inputs' own size, through the example's `generate`."""
    if ex.sizes is None:
        return (None,)
    return (*ex.sizes.candidates(), None)


def draw_case(data: Any, ex: Example, strategies: tuple, refused: dict[str, int]) -> Case:
    """One input drawn by Hypothesis; refused ones (`validate`, the generator) are rejected
    and counted in `refused`."""
    from hypothesis import reject
    from hypothesis import strategies as st
    from hypothesis.errors import HypothesisException

    # Earlier draws weigh more in Hypothesis's order of simplicity: the size first, then
    # the parameters, the seed last, so that shrinking prefers a smaller problem.
    source = data.draw(st.sampled_from((GENERATOR, *strategies)), label="source")
    seed, size = 0, None
    if source == GENERATOR:
        size = data.draw(st.sampled_from(_sizes(ex)), label=ex.sizes.name if ex.sizes else "size")
    params = {}
    for p in ex.params:
        if p.kind == "int":
            lo, hi = int_bounds(p)
            params[p.name] = p.default + data.draw(
                st.integers(lo - p.default, hi - p.default), label=p.name
            )
        elif p.kind == "float":
            lo, hi = float_bounds(p)
            offset = st.floats(
                lo - p.default, hi - p.default, allow_nan=False, allow_infinity=False
            )
            params[p.name] = float(np.clip(p.default + data.draw(offset, label=p.name), lo, hi))
        else:
            params[p.name] = data.draw(st.sampled_from((p.default, not p.default)), label=p.name)
    try:
        if source == GENERATOR:
            seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
            arrays = dict(ex.generate(seed) if size is None else ex.sizes.generate(seed, size))
            label = None  # said as its seed
        else:
            arrays = dict(source(data.draw))
            label = f"strategy {getattr(source, '__name__', 'strategy')}"
            params.update({k: arrays.pop(k) for k in list(arrays) if k in ex.param_names})
        inputs = from_arrays(ex, arrays, params, what="a drawn input")
    except HypothesisException:
        raise
    except InputError as e:
        why = str(e).split(":", 1)[-1].strip()[:120]
        refused[why] = refused.get(why, 0) + 1
        reject()
    except Exception as e:  # a generator that does not make this size
        why = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:100]}"
        refused[why] = refused.get(why, 0) + 1
        reject()
    return Case(inputs, seed, size, label)


# --- the seed ----------------------------------------------------------------------------------


def drawn_seed() -> int:
    """A seed for a run given none (shown, so that the run can be replayed)."""
    return secrets.randbelow(SEEDS)


def pair_seed(case_id: str) -> int:
    """`pytest --weanj-fuzz`'s seed of a pair: from its case id, the same on every run."""
    return int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:4], "big") % SEEDS


def replay_command(ex: Example, seed: int, pairs=None, max_examples: int | None = None) -> str:
    """`weanj fuzz EX [--pairs A B]... [--max-examples N] --seed S`."""
    words = ["weanj", "fuzz", ex.name]
    for a, b in pairs or ():
        words += ["--pairs", a.name, b.name]
    if max_examples is not None and max_examples != MAX_EXAMPLES:
        words += ["--max-examples", str(max_examples)]
    return " ".join([*words, "--seed", str(seed)])


# --- judging a case ----------------------------------------------------------------------------


@dataclass
class Draw:
    """A case, each pair's outcome on it, and its place in the run's order of draws."""

    case: Case
    outcomes: dict[tuple[str, str], PairOutcome]
    index: int = 0

    @property
    def failing(self) -> dict[tuple[str, str], PairOutcome]:
        """The pairs that differ here beyond their declarations (all of an undeclared
        pair's differences are)."""
        return {pair: o for pair, o in self.outcomes.items() if not o.agree}

    @property
    def as_declared(self) -> list[tuple[str, str]]:
        """The pairs that differ here only as declared (`expected`)."""
        return [pair for pair, o in self.outcomes.items() if o.as_declared]

    def only(self, pairs) -> Draw:
        """The same draw, with the outcomes of `pairs` alone."""
        return Draw(self.case, {p: o for p, o in self.outcomes.items() if p in pairs}, self.index)


class _OutOfTime(BaseException):
    """Past `--seconds`: ends the Hypothesis run at once (see the module docstring)."""


def judge_draw(session: Session, cat: Catalog, pairs, case: Case, stop_at: float | None) -> Draw:
    """Every pair judged on the case (each variant evaluated once: the session keeps it),
    each call limited to the time left (a draw that runs out of it ends the search: a slow
    variant is no wrong one)."""
    if stop_at is not None:
        left = stop_at - time.monotonic()
        if left <= 0:
            raise _OutOfTime
        session.watch.timeout_s = (
            left if session.timeout_s is None else min(left, session.timeout_s)
        )
    draw = Draw(
        case, {(a.name, b.name): judge_pair_on(session, cat, a, b, case.inputs) for a, b in pairs}
    )
    if any(o.timed_out for o in draw.outcomes.values()):
        raise _OutOfTime
    return draw


# --- the search ----------------------------------------------------------------------------------


class Disagreement(Exception):
    """Some pair disagrees on a draw: the failure Hypothesis shrinks."""

    def __init__(self, draw: Draw):
        super().__init__(", ".join(f"{a}~{b}" for a, b in draw.failing))
        self.draw = draw


@dataclass
class Search:
    """What one Hypothesis run found."""

    failing: list[Draw] = field(default_factory=list)  # every failing draw, in draw order
    as_declared: dict[tuple[str, str], int] = field(default_factory=dict)  # draws per pair
    shrunk: Draw | None = None  # Hypothesis's last failing example: whose pairs it shrank
    draws: int = 0
    out_of_time: bool = False
    refused: dict[str, int] = field(default_factory=dict)


def database_dir(cat: Catalog, pairs, here: Places):
    """`results/.weanj-fuzz/EX/<digest of the pairs>/`: one database per set of pairs."""
    names = sorted(f"{a.name}~{b.name}" for a, b in pairs)
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]
    return here.fuzz_database(cat.name, digest)


def search(
    session,
    cat: Catalog,
    pairs,
    here: Places,
    *,
    max_examples: int,
    stop_at,
    seed: int,
    database: bool,
    first_index: int = 0,
) -> Search:
    """One Hypothesis run over `pairs` (module docstring), its draws from `seed`; with
    `database`, the failures kept in `results/.weanj-fuzz/` are replayed first (and new
    ones kept)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Unsatisfiable
    from hypothesis.reporting import with_reporter

    ex = cat.example
    found = Search()
    judged: dict[str, Draw] = {}  # by provenance key: a replayed draw is not recomputed

    # `@seed` alone turns the database off; `@settings` applied after it (above it) sets
    # the database again, for a run given no seed: its draws from `seed`, its kept
    # failures replayed first.
    @settings(
        max_examples=max_examples,
        deadline=None,
        database=DirectoryBasedExampleDatabase(database_dir(cat, pairs, here))
        if database
        else None,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    )
    @hypothesis_seed(seed)
    @given(st.data())
    def probe(data):
        case = draw_case(data, ex, cat.strategies, found.refused)
        key = case.inputs.key("float64")
        if key not in judged:
            if stop_at is not None and time.monotonic() > stop_at:
                raise _OutOfTime
            judged[key] = judge_draw(session, cat, pairs, case, stop_at)
            judged[key].index = first_index + found.draws
            found.draws += 1
            _count_declared(found.as_declared, judged[key])
            if judged[key].failing:
                found.failing.append(judged[key])
        draw = judged[key]
        if draw.failing:
            raise Disagreement(draw)

    try:
        with with_reporter(lambda text: None), _no_local_constants():
            probe()
    except Disagreement as e:
        found.shrunk = e.draw  # Hypothesis's shrunk example, replayed last
    except _OutOfTime:
        found.out_of_time = True
    except Unsatisfiable:
        pass  # no draw was accepted: reported by the caller from `refused`
    return found


def _count_declared(counts: dict[tuple[str, str], int], draw: Draw) -> None:
    for pair in draw.as_declared:
        counts[pair] = counts.get(pair, 0) + 1


@contextlib.contextmanager
def _no_local_constants():
    """Hypothesis (6.131 on) now and then draws a constant found in the source of the
    "local" modules loaded (not the standard library, not site-packages): which those are
    differs between `weanj fuzz` and pytest, and grows as a run imports, so a seed would
    not replay its draws. Off while fuzz draws (a private hook: where it is missing, there
    is nothing to turn off)."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - another Hypothesis
        providers = None
    hook = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if hook is None or cache is None or not hasattr(providers, "Constants"):
        yield
        return
    cache.clear()  # it holds the local constants of each kind drawn so far
    providers._get_local_constants = providers.Constants
    try:
        yield
    finally:
        providers._get_local_constants = hook
        cache.clear()


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
    example: Example
    pairs: list[tuple[Variant, Variant]]
    seed: int = 0
    seeded: bool = False  # the seed was given: no database, no clock in the report
    findings: list[Finding] = field(default_factory=list)
    draws: int = 0
    seconds: float = 0.0
    out_of_time: bool = False
    cut_short: bool = False  # the time ran out while a failure was being shrunk
    refused: dict[str, int] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    # the pairs declared to differ (`weanj.Expected`): how many draws differed as declared
    as_declared: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def failed_pairs(self) -> set[tuple[str, str]]:
        return {pair for f in self.findings for pair in f.draw.failing}

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def _first_cases(ex: Example, shared: Inputs) -> list[tuple[str, Case]]:
    """The first draws (module docstring): the shared inputs, the declared sizes, the
    default's neighbours."""
    out = [("shared inputs", Case(shared, ex.seed, None, "the shared inputs"))]
    defaults = dict(shared.params)
    if ex.sizes is not None:
        for size in ex.sizes.values:
            case = sized_case(ex, size, defaults, ex.seed, f"declared size {size}")
            if not isinstance(case, str):  # a declared size the generator refuses is no case
                out.append(("declared size", case))
    for change in neighbours(ex):
        try:
            inputs = shared.with_params(change)
        except InputError:
            continue
        what = ", ".join(f"{k} = {v}" for k, v in change.items())
        out.append(("neighbour", Case(inputs, ex.seed, None, f"the shared inputs at {what}")))
    return out


class _Failures:
    """Each pair's first and smallest failing draw, over every draw of the run in order
    (`Case.order`; a later draw replaces the kept one only when strictly smaller, so the
    one reported is never larger than the first)."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str], tuple[Draw, str]] = {}
        self.smallest: dict[tuple[str, str], tuple[Draw, str]] = {}

    def note(self, draw: Draw, how: str) -> None:
        for pair in draw.failing:
            self.first.setdefault(pair, (draw, how))
            kept = self.smallest.get(pair)
            if kept is None or draw.case.order() < kept[0].case.order():
                self.smallest[pair] = (draw, how)

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


def run_fuzz(
    session: Session,
    cat: Catalog,
    pairs: list[tuple[Variant, Variant]],
    here: Places,
    *,
    seed: int,
    database: bool = True,
    max_examples: int = MAX_EXAMPLES,
    seconds: float | None = SECONDS,
    say: Callable[[str], None] = print,
) -> Fuzzed:
    """The search (module docstring), its draws from `seed`; each failure is written as a
    case file. With `database`, Hypothesis's kept failures are replayed first."""
    ex = cat.example
    t0 = time.monotonic()
    stop_at = None if seconds is None else t0 + seconds
    result = Fuzzed(ex, list(pairs), seed=seed, seeded=not database)
    result.as_declared = {(a.name, b.name): 0 for a, b in pairs if cat.declared_pair(a, b)}
    remaining = list(pairs)
    failures = _Failures()
    shared = _inputs.read_inputs(ex, here)
    for how, case in _first_cases(ex, shared):
        if not remaining or result.draws >= max_examples:
            break
        try:
            draw = judge_draw(session, cat, remaining, case, stop_at)
        except _OutOfTime:
            result.out_of_time = True
            break
        draw.index = result.draws
        result.draws += 1
        _count_declared(result.as_declared, draw)
        new = [pair for pair in draw.failing if pair not in failures.first]
        failures.note(draw, how)
        if not new:
            continue
        if how == "shared inputs":  # check's own case: reported as it is, at once
            say(f"  {how}: {', '.join(f'{a}~{b}' for a, b in new)} disagree")
            _report(result, cat, here, draw.only(new), None, how)
            remaining = [p for p in remaining if (p[0].name, p[1].name) not in new]
            for pair in new:  # reported: out of the search's accounts
                del failures.first[pair], failures.smallest[pair]
        else:
            # Hypothesis shrinks what it draws, never these first draws: the pair goes on
            # into the search for a smaller case, and is reported on the smallest found.
            say(
                f"  {case.source}: {', '.join(f'{a}~{b}' for a, b in new)} disagree "
                "(searching for a smaller case)"
            )
    rounds = 0
    while remaining and not result.out_of_time:
        left_n = max_examples - result.draws
        if left_n <= 0 or (stop_at is not None and time.monotonic() > stop_at):
            result.out_of_time = stop_at is not None and time.monotonic() > stop_at
            break
        s = search(
            session,
            cat,
            remaining,
            here,
            max_examples=left_n,
            stop_at=stop_at,
            seed=seed + rounds * SEEDS,  # each round its own draws, from the run's seed
            database=database,
            first_index=result.draws,
        )
        rounds += 1
        result.draws += s.draws
        result.out_of_time = result.out_of_time or s.out_of_time
        result.cut_short = result.cut_short or (s.out_of_time and bool(s.failing))
        for why, count in s.refused.items():
            result.refused[why] = result.refused.get(why, 0) + count
        for pair, count in s.as_declared.items():
            result.as_declared[pair] = result.as_declared.get(pair, 0) + count
        for draw in s.failing:
            failures.note(draw, "drawn")
        if s.shrunk is None:
            break
        # The pairs Hypothesis shrank leave the search; the others go on with the time left.
        remaining = [p for p in remaining if (p[0].name, p[1].name) not in s.shrunk.failing]
    for draw, first, how in failures.findings():
        _report(result, cat, here, draw, first, how)
    result.seconds = time.monotonic() - t0
    return result


def _report(result: Fuzzed, cat: Catalog, here: Places, draw: Draw, first, how: str) -> None:
    stem = f"fuzz-{draw.case.inputs.key('float64')[:12]}"
    written = draw.case.write(here, stem)
    result.findings.append(Finding(draw, first, written, how))


def finding_lines(cat: Catalog, f: Finding, here: Places) -> list[str]:
    case = f.draw.case
    out = [f"FAIL on {case.describe()}"]
    if f.first is not None and f.first.index != f.draw.index:
        out[-1] += f" (shrunk from {f.first.case.describe()})"
    out.extend(case.values_lines("  "))
    out.append(f"  case written to {here.shown(f.path)}")
    for (a, b), outcome in f.draw.failing.items():
        declared = bool(cat.declared_pair(cat.find(a), cat.find(b)))
        out.append(f"  {a} vs {b}" + (" (beyond its declaration):" if declared else ":"))
        for j in outcome.judgements:
            # what differs beyond the declaration, and what differs as declared beside it
            if beyond_declaration(j) or j.verdict == Verdict.EXPECTED:
                out.extend(f"    {line}" for line in message(j).splitlines())
        out.append("    reproduce it (from the project root):")
        out.extend(f"      {line}" for line in f.case.reproduce(cat.find(a), cat.find(b), here))
    return out


def report_lines(cat: Catalog, result: Fuzzed, here: Places) -> list[str]:
    out = [line for f in result.findings for line in finding_lines(cat, f, here)]
    if result.refused:
        refusals = "; ".join(f"{why} ({n}×)" for why, n in list(result.refused.items())[:3])
        out.append(f"  drawn inputs refused by the example: {refusals}")
    for (a, b), count in result.as_declared.items():
        out.append(f"  {a}~{b}: {count} draw(s) differed as declared (expected)")
    failed = sorted(result.failed_pairs)
    verdict = Verdict.FAIL if result.findings else Verdict.OK
    budget = " (stopped at the time limit)" if result.out_of_time else ""
    if result.cut_short:
        budget = " (stopped at the time limit, maybe before shrinking was done" + (
            ")" if result.seeded else ": the next run starts from the case kept in the database)"
        )
    # A seeded run's report is a function of its seed: no wall-clock figure in it.
    took = "" if result.seeded else f" in {result.seconds:.0f} s"
    out.append(
        f"fuzz {cat.name}: {verdict} — {result.draws} draw(s){took}{budget}; "
        f"{len(failed)} of {len(result.pairs)} pair(s) disagree"
        + (f": {', '.join(f'{a}~{b}' for a, b in failed)}" if failed else "")
    )
    return out


def fuzz(
    cat: Catalog,
    *,
    pairs: Sequence[tuple[Variant, Variant]] | None = None,
    max_examples: int | None = None,
    seconds: float | None = None,
    timeout: float | None = None,
    seed: int | None = None,
    say: Callable[[str], None] = print,
    device: str = "cpu",
) -> Fuzzed:
    """`weanj fuzz` (module docstring) of an example's catalog. `pairs`: the pairs to
    search, each two available variants of one family (as the front end resolves
    `--pairs`; default: every pair of the case table). `seed`: the run's draws (default:
    one drawn and shown); given, no database and no default time limit, so the report depends on the
    seed alone. **Returns** a `Fuzzed` (`exit_code` 1 when some pair disagrees); its
    `lines` are what the command printed."""
    try:
        import hypothesis  # noqa: F401
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        raise UnavailableError("weanj fuzz needs Hypothesis: pip install 'weanj[fuzz]'") from None
    if seed is not None and not 0 <= seed < SEEDS:
        raise InputError(f"fuzz --seed {seed}: a seed is an integer from 0 to {SEEDS - 1}")
    ex = cat.example
    here = places()
    set_hypothesis_home_dir(here.results / ".weanj-fuzz")  # nothing in the project root
    _jax_cache.enable()
    shared = _inputs.read_inputs(ex, here)
    every, left_out = fuzz_pairs(cat, shared)
    chosen = list(pairs) if pairs else every
    max_examples = MAX_EXAMPLES if max_examples is None else max_examples
    seeded = seed is not None
    if not seeded:
        seconds = SECONDS if seconds is None else seconds
        seed = drawn_seed()
    lines: list[str] = []

    def tell(line: str) -> None:
        lines.append(line)
        say(line)

    tell(f"fuzz {ex.name}: {', '.join(f'{a.name}~{b.name}' for a, b in chosen) or 'no pair'}")
    if pairs:  # only the variants of the pairs asked for
        asked = {v.name for pair in chosen for v in pair}
        left_out = {n: why for n, why in left_out.items() if n in asked}
    by_reason: dict[str, list[str]] = {}
    for name, why in left_out.items():  # one line per reason, however many variants
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():
        tell(f"  skipped {', '.join(names)}: {why}")
    for line in filter(None, (declared_line(cat, a, b) for a, b in chosen)):
        tell(f"  {line}")
    if not chosen:
        tell(f"fuzz {ex.name}: no same-family pair of float64 variants can run here")
        return Fuzzed(ex, [], seed=seed, seeded=seeded, lines=lines)
    replay = replay_command(ex, seed, chosen if pairs else None, max_examples)
    kept = here.shown(here.results / ".weanj-fuzz")
    if seeded:
        tell(
            f"  seed {seed} (given: the draws depend on it alone; {kept}/ is neither read nor kept)"
        )
    else:
        tell(
            f"  seed {seed}: `{replay}` draws the same inputs again (this run first tries the "
            f"failures kept in {kept}/, which a seeded run neither reads nor keeps)"
        )
    budget = f"{max_examples} draws" + ("" if seconds is None else f" or {seconds:g} s")
    tell(
        f"  first the shared inputs, the declared sizes and the defaults' neighbours; then "
        f"drawn inputs ({drawn_text(ex, cat.strategies)}); up to {budget}"
    )
    with Session(timeout_s=timeout, shown_path=here.shown, device=device) as session:
        result = run_fuzz(
            session,
            cat,
            chosen,
            here,
            seed=seed,
            database=not seeded,
            max_examples=max_examples,
            seconds=seconds,
            say=tell,
        )
    result.left_out = left_out
    for line in report_lines(cat, result, here):
        tell(line)
    result.lines = lines
    if not result.draws and not result.findings:
        raise WeanjError(
            f"no drawn input of {ex.name} could be checked"
            + (f" (refused: {next(iter(result.refused))})" if result.refused else "")
        )
    return result


def pytest_fuzz(cat: Catalog, a: Variant, b: Variant, draws: int) -> str | None:
    """`pytest --weanj-fuzz N`: one pair's search with `draws` draws, from the pair's own
    seed (`pair_seed`: the same on every run, no database): None when it agrees
    throughout, else the failure's report (case file, regions, reproducing commands) with
    the `weanj fuzz` command that replays it."""
    from hypothesis.configuration import set_hypothesis_home_dir

    here = places()
    set_hypothesis_home_dir(here.results / ".weanj-fuzz")
    seed = pair_seed(fuzz_id(cat.example, a.family, a.name, b.name))
    with Session(shown_path=here.shown) as session:
        result = run_fuzz(
            session,
            cat,
            [(a, b)],
            here,
            seed=seed,
            database=False,
            max_examples=draws,
            seconds=None,
            say=lambda s: None,
        )
    if result.ok:
        return None
    replay = replay_command(cat.example, seed, [(a, b)], draws)
    return "\n".join([f"seed {seed}: `{replay}` replays it", *report_lines(cat, result, here)])


def fuzz_cases(cat: Catalog, inputs: Inputs) -> list[tuple[str, Variant, Variant]]:
    """`(case id, A, B)` of every pair fuzz searches (the pytest items)."""
    pairs, _ = fuzz_pairs(cat, inputs)
    return [(fuzz_id(cat.example, a.family, a.name, b.name), a, b) for a, b in pairs]
