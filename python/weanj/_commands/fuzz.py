"""`weanj fuzz EX [--pairs A B]... [--max-examples N] [--seconds S] [--seed S]`: differential
testing of same-family pairs on drawn inputs, with shrinking (Hypothesis).

The command is the front end: it resolves what to search, says what is drawn and with
which seed, runs the search engine and prints its report. The engine is the pipeline's,
as Hypothesis keeps its engine apart from every front end: what is drawn in
`_pipeline._fuzz_draws` (the first draws, Hypothesis's draws over `Param.search_range`,
the seed); judging a draw within the time and one Hypothesis run in
`_pipeline._fuzz_search`; the run, the shrinking's bookkeeping and the smallest case in
`_pipeline._fuzz_run`; the report's text in `_report._fuzz`. `pytest --weanj-fuzz` uses
the same engine and report (`_pytest_plugin`), not this command.

fuzz starts where `weanj check` stands: the pairs are the case table's (`Plan.
same_family_pairs`, the float64 pairs check judges, with check's ids), and every draw is
judged by the one judge as check judges it.

**The seed.** A run given no `--seed` draws one and shows it, with the command that
replays its draws; Hypothesis's database of failing draws, under `results/.weanj-fuzz/`
(nothing is written in the project root), is replayed first and added to. A run given
`--seed S` neither reads nor writes the database, has no time limit unless `--seconds` is
given, and prints no wall-clock figure: its report depends on the seed (and the project)
alone.

**The time.** `--seconds S` (default 60 without `--seed`) bounds the whole run, shrinking
included: no call starts after S, and the one in flight is waited for, so the command ends
within S and one evaluation and leaves no call running (`_fuzz_search.Budget`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from .._errors import InputError, UnavailableError, WeanjError
from .._io import _inputs, _jax_cache
from .._model import Catalog, Variant
from .._pipeline._fuzz_draws import (
    MAX_EXAMPLES,
    SEEDS,
    drawn_seed,
    fuzz_pairs,
    replay_command,
)
from .._pipeline._fuzz_run import Fuzzed, run_fuzz
from .._pipeline._minimal_case import declared_line
from .._pipeline._session import Session
from .._places import Places, places
from .._project import time_limit
from .._report._fuzz import drawn_text, report_lines

SECONDS = 60.0  # a run given no seed and no --seconds


def _header(
    cat: Catalog,
    chosen: list[tuple[Variant, Variant]],
    left_out: dict[str, str],
) -> list[str]:
    """The pairs searched, those left out (one line per reason, however many variants) and
    the pairs' declarations."""
    lines = [f"fuzz {cat.name}: {', '.join(f'{a.name}~{b.name}' for a, b in chosen) or 'no pair'}"]
    by_reason: dict[str, list[str]] = {}
    for name, why in left_out.items():
        by_reason.setdefault(why, []).append(name)
    lines += [f"  skipped {', '.join(names)}: {why}" for why, names in by_reason.items()]
    lines += [f"  {line}" for line in filter(None, (declared_line(cat, a, b) for a, b in chosen))]
    return lines


def _plan_lines(
    cat: Catalog,
    chosen: list[tuple[Variant, Variant]],
    here: Places,
    *,
    seed: int,
    seeded: bool,
    asked: bool,
    max_examples: int,
    seconds: float | None,
) -> list[str]:
    """The seed (and how to replay it) and what is drawn, within which budget."""
    kept = here.shown(here.results / ".weanj-fuzz")
    if seeded:
        said = (
            f"  seed {seed} (given: the draws depend on it alone; {kept}/ is neither read nor kept)"
        )
    else:
        replay = replay_command(cat.example, seed, chosen if asked else None, max_examples)
        said = (
            f"  seed {seed}: `{replay}` draws the same inputs again (this run first tries the "
            f"failures kept in {kept}/, which a seeded run neither reads nor keeps)"
        )
    budget = f"{max_examples} draws" + ("" if seconds is None else f" or {seconds:g} s")
    drawn = (
        "  first the shared inputs, the declared sizes and the defaults' neighbours; then "
        f"drawn inputs ({drawn_text(cat.example, cat.strategies)}); up to {budget}"
    )
    return [said, drawn]


def fuzz(
    cat: Catalog,
    *,
    pairs: Sequence[tuple[Variant, Variant]] | None = None,
    max_examples: int | None = None,
    seconds: float | None = None,
    timeout: float | None = None,
    seed: int | None = None,
    say: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic,
    device: str = "cpu",
) -> Fuzzed:
    """`weanj fuzz` (module docstring) of an example's catalog. `pairs`: the pairs to
    search, each two available variants of one family (as the front end resolves
    `--pairs`; default: every pair of the case table). `seed`: the run's draws (default:
    one drawn and shown); given, no database and no default time limit, so the report
    depends on the seed alone. `clock`: what `seconds` are counted on. `device`: where B
    of each pair runs (A, the reference, on the CPU). **Returns** a
    `Fuzzed` (`exit_code` 1 when some pair disagrees); its `lines` are what the command
    printed."""
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
    every, left_out = fuzz_pairs(cat, _inputs.read_inputs(ex, here))
    chosen = list(pairs) if pairs else every
    if pairs:  # only the variants of the pairs asked for
        asked = {v.name for pair in chosen for v in pair}
        left_out = {n: why for n, why in left_out.items() if n in asked}
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
        tell(f"fuzz {ex.name}: no same-family pair of float64 variants can run here")
        return Fuzzed(ex, [], seed=seed, seeded=seeded, lines=lines)
    plan = _plan_lines(
        cat, chosen, here, seed=seed, seeded=seeded, asked=bool(pairs),
        max_examples=max_examples, seconds=seconds,
    )  # fmt: skip
    for line in plan:
        tell(line)
    with Session(timeout_s=time_limit(timeout), shown_path=here.shown, device=device) as session:
        result = run_fuzz(
            session, cat, chosen, here, seed=seed, database=not seeded,
            max_examples=max_examples, seconds=seconds, clock=clock, say=tell,
        )  # fmt: skip
    result.left_out = left_out
    for line in report_lines(cat, result, here, device):
        tell(line)
    result.lines = lines
    if not result.draws and not result.findings and result.out_of_time:
        raise WeanjError(
            f"no draw of {ex.name} was judged within --seconds {seconds:g}: a draw evaluates "
            "every variant of the pairs once; give it more seconds"
        )
    if not result.draws and not result.findings:
        raise WeanjError(
            f"no drawn input of {ex.name} could be checked"
            + (f" (refused: {next(iter(result.refused))})" if result.refused else "")
        )
    return result
