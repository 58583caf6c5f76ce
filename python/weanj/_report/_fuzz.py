"""`weanj fuzz`'s report as text: what is drawn (the header), each finding with its case
file and reproducing commands, and the summary line. The command prints it and
`pytest --weanj-fuzz` fails an item with it; both hand in the engine's `Fuzzed`
(`_pipeline.search._fuzz_run`), read here by its fields alone (this layer stands beside the
pipeline, not above it)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .._judge._expected import beyond_declaration
from .._model import INT32_MAX, Catalog, Example, Param
from .._model._verdicts import Verdict
from .._places import Places
from ._lines import message, ranges_text


def _range_text(p: Param) -> str:
    lo, hi = p.search_range
    if p.kind == "int":
        return f"{lo}…{hi}"
    return f"[{lo:g}, {hi:g}]"


def drawn_text(ex: Example, strategies: Sequence[Callable]) -> str:
    """What the drawn inputs are drawn from, as the header says it: `n ∈ {1, …, 8, 16,
    shared}; S ∈ 1…10 (shrinking towards 2); seeds; strategies ties`."""
    parts = ["the shared size"]
    if ex.sizes is not None:
        parts = [f"{ex.sizes.name} ∈ {{{ranges_text(ex.sizes.candidates())}, shared}}"]
    for p in ex.params:
        if p.kind == "int":
            parts.append(f"{p.name} ∈ {_range_text(p)} (shrinking towards {p.default})")
        elif p.kind == "float":
            parts.append(f"{p.name} ∈ {_range_text(p)} (shrinking towards {p.default:g})")
        else:
            parts.append(f"{p.name} ∈ {{{p.default}, {not p.default}}}")
    parts.append("seeds")
    if strategies:
        names = (getattr(s, "__name__", "strategy") for s in strategies)
        parts.append("strategies " + ", ".join(names))
    return "; ".join(parts)


def nonfinite_line(ex: Example, draws: int, nonfinite: int) -> str | None:
    """How many draws gave NaN/Inf in every variant alike (None: none did). When a quarter
    of them or more did, the parameters are drawn where the kernel cannot go (an explicit
    step past its stability limit): the line names the parameters whose range the example
    left open (else every numeric one) and points at `weanj.Param(minimum=, maximum=)`."""
    if not nonfinite:
        return None
    if 4 * nonfinite < draws:
        return f"{nonfinite} of {draws} draw(s) gave NaN/Inf in every variant alike"
    if 2 * nonfinite > draws:
        head = f"most draws ({nonfinite} of {draws}) gave NaN/Inf in every variant"
    else:
        head = f"{nonfinite} of {draws} draw(s) gave NaN/Inf in every variant"
    numeric = [p for p in ex.params if p.kind != "bool"]
    named = [p for p in numeric if _left_open(p)] or numeric
    if not named:
        return f"{head}: the inputs drawn are where the kernel cannot go"
    ranges = ", ".join(f"{p.name} drawn from {_range_text(p)}" for p in named)
    p = named[0]
    return (
        f"{head}: {ranges}; bound it with weanj.Param({p.name!r}, default={p.default!r}, "
        "minimum=..., maximum=...)"
    )


def _left_open(p: Param) -> bool:
    """A side of the range the example did not declare (an int's top at int32's maximum)."""
    if p.kind == "int":
        return p.maximum == INT32_MAX
    return not (math.isfinite(p.minimum) and math.isfinite(p.maximum))


def finding_lines(cat: Catalog, f: Any, here: Places, runs: dict[str, Any]) -> list[str]:
    """One finding (`_fuzz_run.Finding`): the case, its file, each pair's judgements and
    the commands that reproduce it (`runs`: the pairs' runs by their labels)."""
    case = f.draw.case
    out = [f"FAIL on {case.describe()}"]
    if f.first is not None and f.first.index != f.draw.index:
        out[-1] += f" (shrunk from {f.first.case.describe()})"
    out.extend(case.values_lines("  "))
    out.append(f"  case written to {here.shown(f.path)}")
    for (a, b), outcome in f.draw.failing.items():
        declared = bool(cat.declared_pair(runs[a].variant, runs[b].variant))
        out.append(f"  {a} vs {b}" + (" (beyond its declaration):" if declared else ":"))
        for j in outcome.judgements:
            # what differs beyond the declaration, and what differs as declared beside it
            if beyond_declaration(j) or j.verdict.declared:
                out.extend(f"    {line}" for line in message(j).splitlines())
        out.append("    reproduce it (from the project root):")
        again = f.case.reproduce(runs[a], runs[b], here)
        out.extend(f"      {line}" for line in again)
    return out


def report_lines(cat: Catalog, result: Any, here: Places) -> list[str]:
    """The findings of a run (`_fuzz_run.Fuzzed`), what its draws came to, and the
    summary line."""
    runs = {r.label: r for pair in result.pairs for r in pair}
    out = [line for f in result.findings for line in finding_lines(cat, f, here, runs)]
    if result.refused:
        refusals = "; ".join(f"{why} ({n}×)" for why, n in list(result.refused.items())[:3])
        out.append(f"  drawn inputs refused by the example: {refusals}")
    for (a, b), count in result.as_declared.items():
        out.append(f"  {a}~{b}: {count} draw(s) differed as declared (expected)")
    nonfinite = nonfinite_line(cat.example, result.draws, result.tally.nonfinite)
    if nonfinite:
        out.append(f"  {nonfinite}")
    failed = sorted(result.failed_pairs)
    verdict = Verdict.FAIL if result.findings else Verdict.OK
    budget = " (stopped at the time limit)" if result.out_of_time else ""
    if result.cut_short:
        budget = " (stopped at the time limit, maybe before shrinking was done" + (
            ")" if result.seeded else ": the next run starts from the case kept in the database)"
        )
    # A seeded run's report is a function of its seed: no wall-clock figure in it.
    took = "" if result.seeded else f" in {result.seconds:.0f} s"
    if took and result.compiling_s >= 0.5:
        took += f" (and {result.compiling_s:.0f} s compiling)"
    out.append(
        f"fuzz {cat.name}: {verdict} — {result.draws} draw(s){took}{budget}; "
        f"{len(failed)} of {len(result.pairs)} pair(s) disagree"
        + (f": {', '.join(f'{a}~{b}' for a, b in failed)}" if failed else "")
    )
    return out
