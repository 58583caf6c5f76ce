"""`weanj fuzz EX [--pairs A B]... [--max-examples N] [--seconds S] [--seed S]`: differential
testing of same-family pairs on drawn inputs, with shrinking (Hypothesis).

The command is the front end: it resolves what to search, says what is drawn and with
which seed, runs the search engine and prints its report. The engine is the pipeline's,
as Hypothesis keeps its engine apart from every front end: what is drawn in
`_pipeline.search._fuzz_draws` (the first draws, Hypothesis's draws over `Param.search_range`,
the seed); judging a draw within the time and one Hypothesis run in
`_pipeline.search._fuzz_search`; the run, the shrinking's bookkeeping and the smallest case in
`_pipeline.search._fuzz_run`; the report's text in `_report._fuzz`. `pytest --weanj-fuzz` uses
the same engine and report (`_pytest_plugin`), not this command.

fuzz starts where `weanj check` stands: the pairs are the case table's (`Plan.
same_family_pairs`, with check's ids: in float64, the same-family pairs; with `--dtype
float32`, each variant's float32 run against its own float64 run), and every draw is
judged by the one judge as check judges it, under the tolerance of the pair's coarser
dtype. `--pairs A B` names runs as the views name them (`weanj._run_names`: `V
V@float32`, `A B@tpu`).

**The seed.** A run given no `--seed` draws one and shows it, with the command that
replays its draws; Hypothesis's database of failing draws, under `results/.weanj-fuzz/`
(nothing is written in the project root), is replayed first and added to. A run given
`--seed S` neither reads nor writes the database, has no time limit unless `--seconds` is
given, and prints no wall-clock figure: its report depends on the seed (and the project)
alone.

**The time.** `--seconds S` (default 60 without `--seed`) bounds the whole run, shrinking
included, compilation excluded: S seconds of evaluating and judging, on a clock that stops
while JAX traces, lowers and compiles (`_jax_cache.RunningClock`: each new shape or
parameter value compiles every variant anew, which on a loaded machine took most of a
minute, and the draws it left were three). No call starts after S, and the one in flight is
waited for, so no call is left running (`_fuzz_search.Budget`). Each draw judged is one
line with the values drawn, and the summary says how many draws ran and how long was
spent compiling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from .._backends._placement import present
from .._errors import InputError, UnavailableError, WeanjError
from .._io import _inputs, _jax_cache
from .._model import DTYPES, Catalog, VariantRun
from .._pipeline.search._fuzz_draws import (
    MAX_EXAMPLES,
    SEEDS,
    drawn_seed,
    fuzz_pairs,
    replay_command,
)
from .._pipeline.search._fuzz_run import Fuzzed, run_fuzz
from .._pipeline.search._minimal_case import declared_line
from .._pipeline.session._session import Session
from .._places import Places, places
from .._project import time_limit
from .._report._fuzz import drawn_text, report_lines

SECONDS = 60.0  # a run given no seed and no --seconds


def _header(
    cat: Catalog,
    chosen: list[tuple[VariantRun, VariantRun]],
    left_out: dict[str, str],
) -> list[str]:
    """The pairs searched, those left out (one line per reason, however many runs) and the
    pairs' declarations."""
    lines = [
        f"fuzz {cat.name}: {', '.join(f'{a.label}~{b.label}' for a, b in chosen) or 'no pair'}"
    ]
    by_reason: dict[str, list[str]] = {}
    for name, why in left_out.items():
        by_reason.setdefault(why, []).append(name)
    lines += [f"  skipped {', '.join(names)}: {why}" for why, names in by_reason.items()]
    lines += [f"  {line}" for line in filter(None, (declared_line(cat, a, b) for a, b in chosen))]
    return lines


def _plan_lines(
    cat: Catalog, here: Places, seed: int, replay: str | None, budget: str
) -> list[str]:
    """The seed (`replay`: the command that replays its draws; None for a seed given) and
    what is drawn, within which `budget`."""
    kept = here.shown(here.results / ".weanj-fuzz")
    if replay is None:
        said = (
            f"  seed {seed} (given: the draws depend on it alone; {kept}/ is neither read nor kept)"
        )
    else:
        said = (
            f"  seed {seed}: `{replay}` draws the same inputs again (this run first tries the "
            f"failures kept in {kept}/, which a seeded run neither reads nor keeps)"
        )
    drawn = (
        "  first the shared inputs, the declared sizes and the defaults' neighbours; then "
        f"drawn inputs ({drawn_text(cat.example, cat.strategies)}); up to {budget}"
    )
    return [said, drawn]


def _hypothesis_home(seed: int | None, dtype: str):
    """Hypothesis's `set_hypothesis_home_dir`, once the run's options are checked."""
    try:
        import hypothesis  # noqa: F401
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        raise UnavailableError("weanj fuzz needs Hypothesis: pip install 'weanj[fuzz]'") from None
    if seed is not None and not 0 <= seed < SEEDS:
        raise InputError(f"fuzz --seed {seed}: a seed is an integer from 0 to {SEEDS - 1}")
    if dtype not in DTYPES:
        raise InputError(f"fuzz --dtype: one of {', '.join(DTYPES)}, got {dtype!r}")
    return set_hypothesis_home_dir


def fuzz(
    cat: Catalog,
    *,
    pairs: Sequence[tuple[VariantRun, VariantRun]] | None = None,
    dtype: str = "float64",
    max_examples: int | None = None,
    seconds: float | None = None,
    timeout: float | None = None,
    seed: int | None = None,
    say: Callable[[str], None] = print,
    clock: Callable[[], float] | None = None,
    device: str = "cpu",
) -> Fuzzed:
    """`weanj fuzz` (module docstring) of an example's catalog. `pairs`: the pairs of runs
    to search, each two runs of available variants of one family (as the front end reads
    `--pairs`, `_run_names.chosen_pairs`); default: the case table's pairs in `dtype`
    (float64: the same-family pairs; float32: each float32 run against its own float64
    run), B of each on `device` (A, the reference, on the CPU). `seed`: the run's draws
    (default: one drawn and shown); given, no database and no default time limit, so the
    report depends on the seed alone. `clock`: what `seconds` are counted on (default:
    the time not spent compiling, module docstring). **Returns** a `Fuzzed` (`exit_code`
    1 when some pair disagrees); its `lines` are what the command printed."""
    set_hypothesis_home_dir = _hypothesis_home(seed, dtype)
    present(device)  # a device named must be here: one line, exit 2, before any work
    for run in (run for pair in pairs or () for run in pair):
        present(run.device, run.label)
    ex = cat.example
    here = places()
    set_hypothesis_home_dir(here.results / ".weanj-fuzz")  # nothing in the project root
    _jax_cache.enable()
    chosen, left_out = _searched_pairs(cat, pairs, dtype, device, here)
    max_examples = MAX_EXAMPLES if max_examples is None else max_examples
    seeded = seed is not None
    if not seeded:
        seconds = SECONDS if seconds is None else seconds
        seed = drawn_seed()
    lines: list[str] = []

    def tell(line: str) -> None:
        lines.append(line)
        say(line)

    for line in _header(cat, chosen, left_out):
        tell(line)
    if not chosen:
        tell(f"fuzz {ex.name}: {_none_line(dtype)}")
        return Fuzzed(ex, [], seed=seed, seeded=seeded, lines=lines)
    again = replay_command(ex, seed, pairs, max_examples, dtype=dtype, device=device)
    budget = f"{max_examples} draws" + ("" if seconds is None else f" or {seconds:g} s")
    if seconds is not None and clock is None:
        budget += " (compilation not counted)"
    for line in _plan_lines(cat, here, seed, None if seeded else again, budget):
        tell(line)
    how = dict(seed=seed, database=not seeded, max_examples=max_examples, seconds=seconds)
    result = _run(cat, chosen, here, timeout, clock, tell, **how)
    result.left_out = left_out
    for line in report_lines(cat, result, here):
        tell(line)
    result.lines = lines
    _judged_some(result, seconds)
    return result


def _run(cat: Catalog, chosen, here: Places, timeout, clock, tell, **how) -> Fuzzed:
    """The search (`run_fuzz`, `how`: its options) in a session of its own, its seconds
    counted on `clock`, or, where none is given, on the time not spent compiling (the
    seconds spent compiling noted in the result)."""
    running = _jax_cache.RunningClock()
    with (
        running.listening() if clock is None else contextlib.nullcontext(),
        Session(timeout_s=time_limit(timeout), shown_path=here.shown) as session,
    ):
        found = run_fuzz(
            session, cat, chosen, here, clock=running if clock is None else clock, say=tell, **how
        )
    found.compiling_s = running.compiling_s if clock is None else 0.0
    return found


def _searched_pairs(
    cat: Catalog, pairs, dtype: str, device: str, here: Places
) -> tuple[list[tuple[VariantRun, VariantRun]], dict[str, str]]:
    """The pairs searched (those named, else the case table's in `dtype`, B on `device`)
    and `{run: why it takes no part}` (of the named pairs' variants alone, where named)."""
    every, left_out = fuzz_pairs(cat, _inputs.read_inputs(cat.example, here), dtype)
    if not pairs:
        return [(a, replace(b, device=device)) for a, b in every], left_out
    asked = {name for pair in pairs for r in pair for name in (r.label, r.variant.name)}
    return list(pairs), {label: why for label, why in left_out.items() if label in asked}


def _none_line(dtype: str) -> str:
    """What a run whose default pairs in `dtype` cannot run says."""
    if dtype == "float64":
        return "no same-family pair of float64 variants can run here"
    return f"no variant's {dtype} run can run here, to be judged against its float64 run"


def _judged_some(result: Fuzzed, seconds: float | None) -> None:
    """A run that judged no draw is an error, saying why: the time, or the example's
    refusals."""
    name = result.example.name
    if not result.draws and not result.findings and result.out_of_time:
        raise WeanjError(
            f"no draw of {name} was judged within --seconds {seconds:g}: a draw evaluates "
            "every run of the pairs once; give it more seconds"
        )
    if not result.draws and not result.findings:
        raise WeanjError(
            f"no drawn input of {name} could be checked"
            + (f" (refused: {next(iter(result.refused))})" if result.refused else "")
        )
