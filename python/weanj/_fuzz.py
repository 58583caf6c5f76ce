"""`weanj fuzz EX [--pairs A B]... [--max-examples N] [--seconds S]`: differential testing
of same-family pairs on drawn inputs, with shrinking (Hypothesis).

Each draw is one input: a seed, a problem size and a value of every parameter, or the
arrays of one of the example's own strategies (`weanj.fuzz_strategy`, for edge values the
generator never makes: ties, zeros, particles on cell boundaries). Every same-family pair
of float64 variants available here (Julia ones where Julia runs) is judged on it by the
one judge (`_bisect.judge_inputs`): a pair agrees exactly when the verdict is `ok` or
`kinks`. A draw on which some pair disagrees is a failure; Hypothesis shrinks it (sizes
towards 1, parameters towards their minimum, seeds towards 0), and the smallest failing
draw is written to `results/EX/cases/` with the commands that reproduce it. The pairs
that failed leave the search and it goes on with the others in the time left.

- **Sizes**: 1 … 8 and the smallest benchmark size of the example's `Sizes`, plus the
  size of the shared inputs (the example's `generate` with the drawn seed). Few sizes on
  purpose: a variant compiles once per shape and parameter value. A size the generator
  or the example's `validate` refuses is `assume`d away.
- **Parameters**: int ones from their minimum up (min, +1, +2, +3, +5, +8) and the
  default; floats and bools at their default and the usual edges.
- **Database**: failing draws are kept in `results/.weanj-fuzz/EX/<pairs>/`, Hypothesis's
  `DirectoryBasedExampleDatabase`, so the next run tries them first.
- **Time**: `--seconds` bounds the whole run, shrinking included. Hypothesis has no time
  setting; the test function itself stops the run: past the limit, the next draw that
  would evaluate anything raises `_OutOfTime`, a `BaseException` that Hypothesis lets
  through as it does `KeyboardInterrupt` (an `assume(False)` there would instead make
  the data generation depend on the clock, which Hypothesis rejects as flaky). The
  failure found by then, shrunk as far as it got, is kept here and in the database.

Importing this module imports neither Hypothesis nor JAX (`weanj.fuzz_strategy` is
public); the search imports them when it starts.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from ._errors import UnavailableError, WeanjError
from ._fuzz_draws import Draw, draw_case, judge_draw, param_candidates, space_of

__all__ = ["fuzz_strategy", "param_candidates", "command"]

MAX_EXAMPLES = 100
SECONDS = 60.0
DATABASE = ".weanj-fuzz"

# {example name: [fn(draw) -> {array or parameter name: value}]}
# The examples' own strategies live with the other declarations, in the registry.
from ._registry import _STRATEGIES, fuzz_strategy, strategies_of  # noqa: E402,F401


def _forget() -> None:  # for tests
    _STRATEGIES.clear()


# --- the search ----------------------------------------------------------------------------------


class _OutOfTime(BaseException):
    """Past `--seconds`: ends the Hypothesis run at once (see the module docstring)."""


class Disagreement(Exception):
    """Some pair disagrees on a draw: the failure Hypothesis shrinks."""

    def __init__(self, draw: Draw):
        super().__init__(", ".join(f"{r.a}~{r.b}" for r in draw.failing))
        self.draw = draw


@dataclass
class Search:
    """What one Hypothesis run found."""

    failure: Draw | None = None  # the smallest failing draw
    first: Draw | None = None  # the first failing draw, before shrinking
    draws: int = 0  # draws evaluated
    out_of_time: bool = False
    refused: dict[str, int] = field(default_factory=dict)


def database_dir(ex: Any, pairs: list[tuple[str, str]]) -> Any:
    """`results/.weanj-fuzz/EX/<digest of the pairs>/`: one database per set of pairs (a
    draw kept for one set is replayed for that set only, never dropped by another)."""
    from ._project import project_root

    digest = hashlib.sha256("\n".join(f"{a}~{b}" for a, b in sorted(pairs)).encode()).hexdigest()
    return project_root() / "results" / DATABASE / ex.name / digest[:12]


def search(
    ex: Any, pairs: list[tuple[str, str]], *, max_examples: int, seconds: float | None
) -> Search:
    """One Hypothesis run over `pairs` (module docstring)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Unsatisfiable
    from hypothesis.reporting import with_reporter

    space = space_of(ex, strategies_of(ex.name))
    found = Search()
    judged: dict[str, Draw] = {}  # by provenance key: a replayed draw is not recomputed
    stop_at = None if seconds is None else time.monotonic() + seconds

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=DirectoryBasedExampleDatabase(database_dir(ex, pairs)),
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    )
    @given(st.data())
    def probe(data):
        case = draw_case(data, ex, space, found.refused)
        key = case.inputs.key("float64")
        if key not in judged:
            if stop_at is not None and time.monotonic() > stop_at:
                raise _OutOfTime
            judged[key] = judge_draw(ex, pairs, case)
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


# --- pairs, the report and the command ---------------------------------------------------------


def same_family_pairs(ex: Any) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Every same-family pair of float64 variants available here, in registration order,
    and `{variant: why it takes no part}`."""
    from ._registry import families, find_variant, unavailable_variants

    missing = unavailable_variants(ex)
    left_out = dict(missing)
    pairs = []
    for members in families(ex).values():
        usable = []
        for name in members:
            if name in missing:
                continue
            if "float64" not in find_variant(ex, name).dtypes:
                left_out[name] = "does not run in float64"
                continue
            usable.append(name)
        pairs.extend(itertools.combinations(usable, 2))
    return pairs, left_out


def chosen_pairs(ex: Any, pairs: list[tuple[str, str]] | None) -> list[tuple[str, str]]:
    """`--pairs` checked: available variants of one family (errors are one line)."""
    from ._registry import same_family_pair

    out = []
    for a, b in pairs:
        same_family_pair(ex, a, b, "--pairs")
        out.append((a, b))
    return list(dict.fromkeys(out))


@dataclass
class Finding:
    """A failure, shrunk, with its case file."""

    draw: Draw
    first: Draw | None
    path: Any  # the case file


@dataclass
class Fuzzed:
    example: Any
    pairs: list[tuple[str, str]]
    findings: list[Finding] = field(default_factory=list)
    draws: int = 0
    seconds: float = 0.0
    out_of_time: bool = False
    cut_short: bool = False  # the time ran out while a failure was being shrunk
    refused: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.findings


def fuzz(
    ex: Any,
    pairs: list[tuple[str, str]],
    *,
    max_examples: int = MAX_EXAMPLES,
    seconds: float | None = SECONDS,
) -> Fuzzed:
    """Search until every pair has failed, `max_examples` draws were evaluated, or the
    time is up; each failure is written as a case file."""
    from ._bisect import write_case

    t0 = time.monotonic()
    result = Fuzzed(ex, list(pairs))
    remaining = list(pairs)
    while remaining:
        left_s = None if seconds is None else seconds - (time.monotonic() - t0)
        left_n = max_examples - result.draws
        if (left_s is not None and left_s <= 0) or left_n <= 0:
            break
        s = search(ex, remaining, max_examples=left_n, seconds=left_s)
        result.draws += s.draws
        result.out_of_time = result.out_of_time or s.out_of_time
        result.cut_short = result.cut_short or (s.out_of_time and s.failure is not None)
        for why, count in s.refused.items():
            result.refused[why] = result.refused.get(why, 0) + count
        if s.failure is None:
            break
        inputs = s.failure.case.inputs
        stem = f"fuzz-{inputs.key('float64')[:12]}"
        path = write_case(ex, inputs, stem, seed=s.failure.case.seed)
        result.findings.append(Finding(s.failure, s.first, path))
        failed = {(r.a, r.b) for r in s.failure.failing}
        remaining = [p for p in remaining if p not in failed]
    result.seconds = time.monotonic() - t0
    return result


def finding_lines(ex: Any, f: Finding) -> list[str]:
    from ._bisect import Outcome, outcome_lines, reproduce_lines, shown_path

    case = f.draw.case
    out = [f"FAIL on {case.describe()}"]
    if f.first is not None and f.first.case.order() != case.order():
        out[-1] += f" (shrunk from {f.first.case.describe()})"
    out.extend(case.values_lines("  "))
    out.append(f"  case written to {shown_path(f.path)}")
    for r in f.draw.failing:
        out.append(f"  {r.a} vs {r.b}:")
        out.extend(outcome_lines(Outcome(case.inputs, r.judgements, r.error), "    "))
        out.append("    reproduce it (from the project root):")
        out.extend(f"      {line}" for line in reproduce_lines(ex, r.a, r.b, f.path))
    return out


def report_lines(result: Fuzzed) -> list[str]:
    ex = result.example
    out = [finding for f in result.findings for finding in finding_lines(ex, f)]
    if result.refused:
        refusals = "; ".join(f"{why} ({n}×)" for why, n in list(result.refused.items())[:3])
        out.append(f"  drawn inputs refused by the example: {refusals}")
    failed = {(r.a, r.b) for f in result.findings for r in f.draw.failing}
    verdict = "FAIL" if result.findings else "ok"
    budget = " (stopped at the time limit)" if result.out_of_time else ""
    if result.cut_short:
        budget = (
            " (stopped at the time limit, maybe before shrinking was done: the next run "
            "starts from the case kept in the database)"
        )
    out.append(
        f"fuzz {ex.name}: {verdict} — {result.draws} draw(s) in {result.seconds:.0f} s{budget}; "
        f"{len(failed)} of {len(result.pairs)} pair(s) disagree"
        + (f": {', '.join(f'{a}~{b}' for a, b in sorted(failed))}" if failed else "")
    )
    return out


def command(
    example_name: str,
    *,
    pairs: list[tuple[str, str]] | None = None,
    max_examples: int | None = None,
    seconds: float | None = None,
) -> int:
    """`weanj fuzz`: 1 when some pair disagrees on a drawn input, else 0."""
    from ._registry import example

    try:
        import hypothesis  # noqa: F401
    except ImportError:
        raise UnavailableError("weanj fuzz needs Hypothesis: pip install 'weanj[fuzz]'") from None
    ex = example(example_name)
    every, left_out = same_family_pairs(ex)
    chosen = chosen_pairs(ex, pairs) if pairs else every
    max_examples = MAX_EXAMPLES if max_examples is None else max_examples
    seconds = SECONDS if seconds is None else seconds
    print(f"fuzz {ex.name}: {', '.join(f'{a}~{b}' for a, b in chosen) or 'no pair'}", flush=True)
    by_reason: dict[str, list[str]] = {}
    for name, why in left_out.items():  # one line per reason, however many variants
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():
        print(f"  skipped {', '.join(names)}: {why}", flush=True)
    if not chosen:
        print(f"fuzz {ex.name}: no same-family pair of float64 variants can run here")
        return 0
    space = space_of(ex, strategies_of(ex.name))
    print(f"  drawing {space.describe()}; up to {max_examples} draws or {seconds:g} s", flush=True)
    result = fuzz(ex, chosen, max_examples=max_examples, seconds=seconds)
    print("\n".join(report_lines(result)))
    if not result.draws and not result.findings:
        raise WeanjError(
            f"no drawn input of {ex.name} could be checked"
            + (f" (refused: {next(iter(result.refused))})" if result.refused else "")
        )
    return 0 if result.ok else 1


# --- pytest --weanj --weanj-fuzz N ---------------------------------------------------------------


def pytest_cases(example_names: list[str]) -> list[tuple[str, str, str, str, str | None]]:
    """`(case id, example, A, B, skip reason)` for every same-family pair registered (the
    unavailable ones skipped, saying why), `EX::FAMILY::A~B::fuzz`."""
    from ._registry import example, families, unavailable_variants

    out = []
    for name in example_names:
        ex = example(name)
        missing = unavailable_variants(ex)
        for family, members in families(ex).items():
            for a, b in itertools.combinations(members, 2):
                gone = next((v for v in (a, b) if v in missing), None)
                why = None if gone is None else f"{gone} is unavailable here: {missing[gone]}"
                out.append((f"{ex.name}::{family}::{a}~{b}::fuzz", ex.name, a, b, why))
    return out


def pytest_run(example_name: str, a: str, b: str, draws: int) -> str | None:
    """The fuzz search of one pair with `draws` draws: None when it agrees throughout,
    else the failure's report (case file, regions, reproducing commands)."""
    from ._registry import example

    ex = example(example_name)
    result = fuzz(ex, chosen_pairs(ex, [(a, b)]), max_examples=draws, seconds=None)
    if result.ok:
        return None
    return "\n".join(report_lines(result))
