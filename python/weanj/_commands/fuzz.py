"""`weanj fuzz EX [--pairs A B]... [--max-examples N] [--seconds S]`: differential testing
of same-family pairs on drawn inputs, with shrinking (Hypothesis).

fuzz starts where `weanj check` stands: the pairs are the case table's (`Plan.
same_family_pairs`, the float64 pairs check judges, with check's ids), and every draw is
judged by the one judge as check judges it (`_pipeline._cases.judge_pair_on`). The first
draws are not random:

1. the shared inputs with the default parameters (a pair `weanj check` fails is reported
   at once, as FAIL, with check's case id);
2. each declared size (`Sizes.values`, smallest first) at the default parameters;
3. the default's neighbours: each int parameter at default ± 1, each bool flipped.

A pair failing at 2 or 3 goes on into the search below, for a smaller case: it is reported
on the smallest failure the search shrinks to ("shrunk from" its first failing draw), or on
that first draw when the search finds none in the time left.

Then Hypothesis draws: a seed, a size (`Sizes.candidates`, the sizes bisect tries: 1 … 8,
each power of two from 16 with its odd neighbours up to the largest declared size, every
declared size; or the shared size through the example's own `generate`) and every
parameter over its declared range, shrinking towards the default (an int whose range is
left open, up to int32's maximum, is drawn up to 4× its default, or default + 8); or the
arrays of one of the example's own strategies (`weanj.fuzz_strategy`: ties, zeros,
particles on cell boundaries). A draw on which some pair disagrees is a failure;
Hypothesis shrinks it, and the smallest failing draw is written to `results/EX/cases/`
with the commands that reproduce it. The pairs that failed leave the search, which goes
on with the others in the time left.

Hypothesis keeps its database of failing draws under `results/.weanj-fuzz/` (replayed
first by the next run): nothing is written in the project root. `--seconds` bounds the
whole run, shrinking included: past it, the next draw that would evaluate anything raises
`_OutOfTime`, a `BaseException` that Hypothesis lets through (an `assume(False)` there
would make the data generation depend on the clock, which Hypothesis rejects as flaky).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InputError, UnavailableError, WeanjError
from .._io import _inputs, _jax_cache
from .._model import INT32_MAX, Catalog, Example, Inputs, Param, Variant, from_arrays
from .._pipeline._cases import PairOutcome, build_plan, fuzz_id, judge_pair_on
from .._pipeline._evaluate import reproduce_command
from .._pipeline._session import Session
from .._places import Places, places
from .._registry import catalog, same_family_pair
from .._report._lines import ranges_text
from .._report._text import message

MAX_EXAMPLES = 100
SECONDS = 60.0
SHOWN_ELEMENTS = 24  # a case this small is printed in full
GENERATOR = "generator"
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


def chosen_pairs(cat: Catalog, pairs: Sequence[tuple[str, str]]) -> list[tuple[Variant, Variant]]:
    """`--pairs` checked: available variants of one family (errors are one line)."""
    out: dict[tuple[str, str], tuple[Variant, Variant]] = {}
    for a, b in pairs:
        out.setdefault((a, b), same_family_pair(cat, a, b, "--pairs"))
    return list(out.values())


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


@dataclass
class Case:
    """One input judged: the inputs, and how it was made (for the report and shrinking)."""

    inputs: Inputs
    seed: int
    size: int | None
    source: str

    def order(self) -> tuple:
        """Smaller is simpler: fewer elements, parameters nearer their defaults, smaller seed."""
        ex = self.inputs.example
        elements = sum(int(a.size) for a in self.inputs.arrays.values())
        params = sum(
            abs(float(v) - float(ex.param(k).default)) for k, v in self.inputs.params.items()
        )
        return (elements, params, self.seed)

    def describe(self) -> str:
        where = f"seed {self.seed}" if self.source == GENERATOR else self.source
        return f"{self.inputs.sizes_text()}, {where}"

    def values_lines(self, indent: str) -> list[str]:
        """The arrays themselves, when the case is small enough to read."""
        arrays = self.inputs.arrays
        if sum(int(a.size) for a in arrays.values()) > SHOWN_ELEMENTS:
            return []
        lines = []
        for k, a in arrays.items():
            head = f"{indent}{k} = "  # continuation rows line up under the first
            lines.extend((head + np.array2string(a, separator=", ", prefix=head)).splitlines())
        return lines


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
            label = GENERATOR
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


# --- judging a case ----------------------------------------------------------------------------


@dataclass
class Draw:
    """A case and each pair's outcome on it."""

    case: Case
    outcomes: dict[tuple[str, str], PairOutcome]

    @property
    def failing(self) -> dict[tuple[str, str], PairOutcome]:
        return {pair: o for pair, o in self.outcomes.items() if not o.agree}


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

    failure: Draw | None = None  # the smallest failing draw
    first: Draw | None = None  # the first failing draw, before shrinking
    draws: int = 0
    out_of_time: bool = False
    refused: dict[str, int] = field(default_factory=dict)


def database_dir(cat: Catalog, pairs, here: Places):
    """`results/.weanj-fuzz/EX/<digest of the pairs>/`: one database per set of pairs."""
    names = sorted(f"{a.name}~{b.name}" for a, b in pairs)
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]
    return here.fuzz_database(cat.name, digest)


def search(session, cat: Catalog, pairs, here: Places, *, max_examples: int, stop_at) -> Search:
    """One Hypothesis run over `pairs` (module docstring)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Unsatisfiable
    from hypothesis.reporting import with_reporter

    ex = cat.example
    found = Search()
    judged: dict[str, Draw] = {}  # by provenance key: a replayed draw is not recomputed

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=DirectoryBasedExampleDatabase(database_dir(cat, pairs, here)),
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    )
    @given(st.data())
    def probe(data):
        case = draw_case(data, ex, cat.strategies, found.refused)
        key = case.inputs.key("float64")
        if key not in judged:
            if stop_at is not None and time.monotonic() > stop_at:
                raise _OutOfTime
            judged[key] = judge_draw(session, cat, pairs, case, stop_at)
            found.draws += 1
        draw = judged[key]
        if draw.failing:
            found.first = found.first or draw
            if found.failure is None or draw.case.order() < found.failure.case.order():
                found.failure = draw
            raise Disagreement(draw)

    try:
        with with_reporter(lambda text: None):
            probe()
    except Disagreement as e:
        found.failure = e.draw  # Hypothesis's shrunk example, replayed last
    except _OutOfTime:
        found.out_of_time = True
    except Unsatisfiable:
        pass  # no draw was accepted: reported by the caller from `refused`
    return found


@dataclass
class Finding:
    """A failure, shrunk, with its case file."""

    draw: Draw
    first: Draw | None
    path: Any  # the case file
    how: str = "drawn"  # "shared inputs", "declared size", "neighbour", "drawn"


@dataclass
class Fuzzed:
    example: Example
    pairs: list[tuple[Variant, Variant]]
    findings: list[Finding] = field(default_factory=list)
    draws: int = 0
    seconds: float = 0.0
    out_of_time: bool = False
    cut_short: bool = False  # the time ran out while a failure was being shrunk
    refused: dict[str, int] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def failed_pairs(self) -> set[tuple[str, str]]:
        return {pair for f in self.findings for pair in f.draw.failing}

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def _seed_cases(ex: Example, shared: Inputs) -> list[tuple[str, Case]]:
    """The first draws (module docstring): the shared inputs, the declared sizes, the
    default's neighbours."""
    out = [("shared inputs", Case(shared, ex.seed, None, "the shared inputs"))]
    defaults = dict(shared.params)
    if ex.sizes is not None:
        for size in ex.sizes.values:
            try:
                inputs = from_arrays(ex, ex.sizes.generate(ex.seed, size), defaults, what="a size")
            except Exception:  # a declared size the generator refuses is not a case
                continue
            out.append(("declared size", Case(inputs, ex.seed, size, f"declared size {size}")))
    for change in neighbours(ex):
        try:
            inputs = shared.with_params(change)
        except InputError:
            continue
        what = ", ".join(f"{k} = {v}" for k, v in change.items())
        out.append(("neighbour", Case(inputs, ex.seed, None, f"the shared inputs at {what}")))
    return out


def run_fuzz(
    session: Session,
    cat: Catalog,
    pairs: list[tuple[Variant, Variant]],
    here: Places,
    *,
    max_examples: int = MAX_EXAMPLES,
    seconds: float | None = SECONDS,
    say: Callable[[str], None] = print,
) -> Fuzzed:
    """The search (module docstring); each failure is written as a case file."""
    ex = cat.example
    t0 = time.monotonic()
    stop_at = None if seconds is None else t0 + seconds
    result = Fuzzed(ex, list(pairs))
    remaining = list(pairs)
    # A pair failing at a declared size or a neighbour is searched on for a smaller case
    # (Hypothesis shrinks what it draws, never these first draws); its first failing draw
    # is what it is reported on if the search finds nothing smaller in the time left.
    pending: dict[tuple[str, str], tuple[Draw, str]] = {}
    shared = _inputs.read_inputs(ex, here)
    for how, case in _seed_cases(ex, shared):
        if not remaining or result.draws >= max_examples:
            break
        try:
            draw = judge_draw(session, cat, remaining, case, stop_at)
        except _OutOfTime:
            result.out_of_time = True
            break
        result.draws += 1
        new = {pair: o for pair, o in draw.failing.items() if pair not in pending}
        if not new:
            continue
        if how == "shared inputs":  # check's own case: reported as it is, at once
            say(f"  {how}: {', '.join(f'{a}~{b}' for a, b in new)} disagree")
            _found(result, cat, here, draw, None, how)
            remaining = [p for p in remaining if (p[0].name, p[1].name) not in new]
        else:
            say(
                f"  {case.source}: {', '.join(f'{a}~{b}' for a, b in new)} disagree "
                "(searching for a smaller case)"
            )
            pending.update({pair: (draw, how) for pair in new})
    while remaining and not result.out_of_time:
        left_n = max_examples - result.draws
        if left_n <= 0 or (stop_at is not None and time.monotonic() > stop_at):
            result.out_of_time = stop_at is not None and time.monotonic() > stop_at
            break
        s = search(session, cat, remaining, here, max_examples=left_n, stop_at=stop_at)
        result.draws += s.draws
        result.out_of_time = result.out_of_time or s.out_of_time
        result.cut_short = result.cut_short or (s.out_of_time and s.failure is not None)
        for why, count in s.refused.items():
            result.refused[why] = result.refused.get(why, 0) + count
        if s.failure is None:
            break
        seeded = [pending.pop(pair)[0] for pair in s.failure.failing if pair in pending]
        _found(result, cat, here, s.failure, seeded[0] if seeded else s.first, "drawn")
        remaining = [p for p in remaining if (p[0].name, p[1].name) not in s.failure.failing]
    # The pairs whose first failing draw the search did not better: reported on it.
    by_draw: dict[int, tuple[Draw, str, list[tuple[str, str]]]] = {}
    for pair, (draw, how) in pending.items():
        by_draw.setdefault(id(draw), (draw, how, []))[2].append(pair)
    for draw, how, failing in by_draw.values():
        only = Draw(draw.case, {p: o for p, o in draw.outcomes.items() if p in failing})
        _found(result, cat, here, only, None, how)
    result.seconds = time.monotonic() - t0
    return result


def _found(result: Fuzzed, cat: Catalog, here: Places, draw: Draw, first, how: str) -> None:
    inputs = draw.case.inputs
    stem = f"fuzz-{inputs.key('float64')[:12]}"
    path = _inputs.write_inputs_file(inputs, here.case_file(cat.name, stem), seed=draw.case.seed)
    result.findings.append(Finding(draw, first, path, how))


def finding_lines(cat: Catalog, f: Finding, here: Places) -> list[str]:
    case = f.draw.case
    out = [f"FAIL on {case.describe()}"]
    if f.first is not None and f.first.case.order() != case.order():
        out[-1] += f" (shrunk from {f.first.case.describe()})"
    out.extend(case.values_lines("  "))
    out.append(f"  case written to {here.shown(f.path)}")
    for (a, b), outcome in f.draw.failing.items():
        out.append(f"  {a} vs {b}:")
        for j in outcome.judgements:
            if not j.verdict.agreeing:
                out.extend(f"    {line}" for line in message(j).splitlines())
        va, vb = cat.find(a), cat.find(b)
        on = _inputs.read_inputs(cat.example, here, f.path)
        out.append("    reproduce it (from the project root):")
        out.extend(f"      {reproduce_command(v, on, 'float64', here.shown)}" for v in (va, vb))
        out.append(f"      weanj bisect {cat.name} {a} {b} --inputs {here.shown(f.path)}")
    return out


def report_lines(cat: Catalog, result: Fuzzed, here: Places) -> list[str]:
    out = [line for f in result.findings for line in finding_lines(cat, f, here)]
    if result.refused:
        refusals = "; ".join(f"{why} ({n}×)" for why, n in list(result.refused.items())[:3])
        out.append(f"  drawn inputs refused by the example: {refusals}")
    failed = sorted(result.failed_pairs)
    verdict = "FAIL" if result.findings else "ok"
    budget = " (stopped at the time limit)" if result.out_of_time else ""
    if result.cut_short:
        budget = (
            " (stopped at the time limit, maybe before shrinking was done: the next run "
            "starts from the case kept in the database)"
        )
    out.append(
        f"fuzz {cat.name}: {verdict} — {result.draws} draw(s) in {result.seconds:.0f} s{budget}; "
        f"{len(failed)} of {len(result.pairs)} pair(s) disagree"
        + (f": {', '.join(f'{a}~{b}' for a, b in failed)}" if failed else "")
    )
    return out


def fuzz(
    example: str,
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
    max_examples: int | None = None,
    seconds: float | None = None,
    timeout: float | None = None,
    say: Callable[[str], None] = print,
) -> Fuzzed:
    """`weanj fuzz` (module docstring). **Returns** a `Fuzzed` (`exit_code` 1 when some
    pair disagrees); its `lines` are what the command printed."""
    try:
        import hypothesis  # noqa: F401
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        raise UnavailableError("weanj fuzz needs Hypothesis: pip install 'weanj[fuzz]'") from None
    cat = catalog(example)
    ex = cat.example
    here = places()
    set_hypothesis_home_dir(here.results / ".weanj-fuzz")  # nothing in the project root
    _jax_cache.enable()
    shared = _inputs.read_inputs(ex, here)
    every, left_out = fuzz_pairs(cat, shared)
    chosen = chosen_pairs(cat, pairs) if pairs else every
    max_examples = MAX_EXAMPLES if max_examples is None else max_examples
    seconds = SECONDS if seconds is None else seconds
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
    if not chosen:
        tell(f"fuzz {ex.name}: no same-family pair of float64 variants can run here")
        return Fuzzed(ex, [], lines=lines)
    tell(
        f"  first the shared inputs, the declared sizes and the defaults' neighbours; then "
        f"drawn inputs ({drawn_text(ex, cat.strategies)}); up to {max_examples} draws or "
        f"{seconds:g} s"
    )
    with Session(timeout_s=timeout, shown_path=here.shown) as session:
        result = run_fuzz(
            session, cat, chosen, here, max_examples=max_examples, seconds=seconds, say=tell
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
    """`pytest --weanj-fuzz N`: one pair's search with `draws` draws: None when it agrees
    throughout, else the failure's report (case file, regions, reproducing commands)."""
    from hypothesis.configuration import set_hypothesis_home_dir

    here = places()
    set_hypothesis_home_dir(here.results / ".weanj-fuzz")
    with Session(shown_path=here.shown) as session:
        result = run_fuzz(
            session, cat, [(a, b)], here, max_examples=draws, seconds=None, say=lambda s: None
        )
    if result.ok:
        return None
    return "\n".join(report_lines(cat, result, here))


def fuzz_cases(cat: Catalog, inputs: Inputs) -> list[tuple[str, Variant, Variant]]:
    """`(case id, A, B)` of every pair fuzz searches (the pytest items)."""
    pairs, _ = fuzz_pairs(cat, inputs)
    return [(fuzz_id(cat.example, a.family, a.name, b.name), a, b) for a, b in pairs]
