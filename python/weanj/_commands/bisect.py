"""`weanj bisect EX A B [--over PARAM|SIZE] [--dtype D] [--device D]`: when, and on how
small an input, two ports part ways.

A and B are runs, named as the views name them (`weanj._run_names`): `V V@float32` is a
variant's float32 run against its own float64 run, as `weanj check` pairs them; `A B
--dtype float32` two ports in float32; `A B@tpu` (or `--device tpu`) B on the device. A
pair "agrees" exactly when the one judge says `ok` (or `kinks`, for a pair declared with
`weanj.differ_at_kinks`) on every gradient array, as `weanj check` judges it
(`_pipeline.engine._cases.judge_pair_on`, with the same case ids); a variant at fault on some
input parts ways there. A pair declared to differ (`weanj.Expected`) is said to be so,
with the reason, and "parts ways" where it differs beyond its declaration: elsewhere than
declared, by more than the bound, or with another verdict
(`_judge._expected.beyond_declaration`); where it differs as declared (`expected`), or
where the declared difference does not show, it is taken to agree.

1. Along an iteration parameter (an int `Param`: K, T, S; `--over`, default the first):
   A and B are evaluated at every value from its minimum to minimum + 7 (a port wrong at
   odd values, or at small ones, is seen there), then at doubled values, until they
   disagree (or the search reaches the value given with `--PARAM V`, else 8× the inputs'
   value); bisection between the last value that agrees and the first that does not gives
   the smallest value at which they part, and the value above it is tried too. Bisection
   assumes that divergence persists once started; where a value that agrees lies above
   one that does not, the search says agreement is "not monotone" in the parameter, and
   which values went which way. Every value reported was evaluated, and the values tried
   are listed (`ranges_text`): "agree at every T tried" names them, and says that the
   values between were not.
2. At that value, the smallest problem size of the example's `Sizes` generator at which
   they disagree (`--over SIZE` searches sizes only). Sizes are not assumed monotone (a
   port can be wrong at odd sizes only): every size from 1 to 8, then each power of two
   and its odd neighbours up to the largest benchmark size, and every benchmark size
   (`Sizes.candidates`); once a size fails, every size between the largest agreeing one
   and it is tried, so the answer is the smallest failing size, and "agree at every size
   tried" lists the sizes tried.
3. The minimal case (`_pipeline.search._minimal_case.FuzzInput`, the one fuzz writes too) is written
   as an inputs file, `results/EX/cases/`, with the commands that reproduce it (`weanj
   bisect EX A B --inputs CASE` judges the pair on it alone).

An example with no int parameter and no declared `Sizes` has nothing to search: one line
says so (`InputError`), and `--inputs CASE` judges the pair on one file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._backends._placement import present
from .._errors import InputError, WeanjError
from .._io import _inputs, _jax_cache
from .._model import Catalog, Example, Inputs, Param, VariantRun
from .._model._verdicts import Verdict
from .._pipeline.engine._cases import PairOutcome, judge_pair_on
from .._pipeline.search._bisection import smallest_size, smallest_value
from .._pipeline.search._minimal_case import FuzzInput, declared_line
from .._pipeline.session._session import Session
from .._places import places
from .._project import time_limit
from .._report._lines import message, ranges_text

# Without `--PARAM V`, doubling goes up to this many times the inputs' value.
REACH = 8


@dataclass
class Bisected:
    """What `weanj bisect` found: the lines it printed, the first disagreeing value of the
    parameter, the outcome on the minimal case, the case as written and how to reproduce
    it."""

    lines: list[str] = field(default_factory=list)
    first: int | None = None
    outcome: PairOutcome | None = None
    minimal: FuzzInput | None = None
    reproduce: list[str] = field(default_factory=list)
    tried: dict[int, bool] = field(default_factory=dict)  # each value tried: disagrees?

    @property
    def monotone(self) -> bool:
        """No value tried above the first disagreement agrees (bisection's premise)."""
        return self.first is None or all(bad for v, bad in self.tried.items() if v > self.first)

    @property
    def case(self) -> Path | None:
        """The case file written, if any."""
        return None if self.minimal is None else self.minimal.path

    @property
    def agree(self) -> bool:
        return self.outcome is None or self.outcome.agree

    @property
    def exit_code(self) -> int:
        return 0 if self.agree else 1


def outcome_lines(outcome: PairOutcome, indent: str = "  ") -> list[str]:
    """The judgements of an outcome with their regions, as `weanj check` prints them."""
    out = []
    for j in outcome.judgements:
        if j.verdict.agreeing and not j.failed:
            continue
        out.extend(f"{indent}{line}" for line in message(j).splitlines())
    return out or [f"{indent}{j.case}: {j.verdict}" for j in outcome.judgements]


# --- the command -------------------------------------------------------------------------------


def _over(ex: Example, over: str | None) -> Param | str | None:
    """The int parameter searched (default: the first), the size name, or None."""
    ints = [p for p in ex.params if p.kind == "int"]
    if over is None:
        return ints[0] if ints else (ex.sizes.name if ex.sizes is not None else None)
    if ex.sizes is not None and over == ex.sizes.name:
        return over
    if over not in ex.param_names:
        known = [p.name for p in ints] + ([ex.sizes.name] if ex.sizes is not None else [])
        close = [k for k in known if k.lower() == over.lower()]
        hint = f"; did you mean {close[0]}?" if close else ""
        raise InputError(
            f"bisect --over {over}: {ex.name} has no int parameter or size {over}{hint} "
            f"(it has: {', '.join(known) or 'none'})"
        )
    p = ex.param(over)
    if p.kind != "int":
        raise InputError(
            f"bisect --over needs an int parameter (an iteration count) or the size; {over} is "
            f"{p.kind}"
            + (f"; int parameters of {ex.name}: {', '.join(q.name for q in ints)}" if ints else "")
        )
    return p


def nothing_to_search(ex: Example, a: VariantRun, b: VariantRun) -> str | None:
    """The line that says a search has nothing to go over (no int parameter, no declared
    `Sizes`), or None."""
    if any(p.kind == "int" for p in ex.params) or ex.sizes is not None:
        return None
    return (
        f"bisect {ex.name}: nothing to search: it has no int parameter and declares no "
        f"Sizes; `weanj bisect {ex.name} {a.label} {b.label} --inputs FILE` judges the pair "
        "on one inputs file"
    )


def bisect(
    cat: Catalog,
    a: VariantRun,
    b: VariantRun,
    *,
    over: str | None = None,
    params: dict[str, Any] | None = None,
    inputs: str | Path | None = None,
    timeout: float | None = None,
    say: Callable[[str], None] = print,
) -> Bisected:
    """Where the runs `a` and `b` (each in its dtype, on its device), of two available
    variants of one family of `cat` (as the front end reads their names,
    `_run_names.same_family_pair`), part ways (module docstring); `inputs`: judge them on
    that inputs file alone. An example with nothing to search (no int parameter, no
    declared `Sizes`) is an `InputError` saying so, unless `inputs` is given. **Returns**
    a `Bisected` (`exit_code` 1 when they part ways)."""
    for run in (a, b):  # a device named must be here: one line, exit 2, before any work
        present(run.device, run.label)
    ex = cat.example
    nothing = None if inputs is not None else nothing_to_search(ex, a, b)
    if nothing is not None:
        raise InputError(nothing)
    p = _over(ex, over) if inputs is None else None
    here = places()
    _jax_cache.enable()
    result = Bisected()

    def tell(line: str) -> None:
        result.lines.append(line)
        say(line)

    with Session(timeout_s=time_limit(timeout), shown_path=here.shown) as session:

        def check(on: Inputs) -> PairOutcome:
            o = judge_pair_on(session, cat, a, b, on)
            if o.timed_out:  # which variant, and the limit: the timeout's own line
                late = next(j for j in o.judgements if j.verdict == Verdict.TIMEOUT)
                raise WeanjError(
                    f"{late.reason} on {on.sizes_text()}; cannot tell; raise --timeout"
                )
            return o

        if inputs is not None:
            on = _inputs.read_inputs(ex, here, inputs)
            if params:
                on = on.with_params(params)
            result.outcome = check(on)
            _tell_declared(cat, a, b, tell)
            tell(
                f"{a.label} vs {b.label} ({a.family}) on {here.shown(Path(inputs))} "
                f"({on.sizes_text()}): {result.outcome.word()}"
            )
            tell("\n".join(outcome_lines(result.outcome)))
            return result
        return _search(cat, a, b, p, dict(params or {}), check, here, tell, result)


def _tell_declared(cat: Catalog, a: VariantRun, b: VariantRun, tell) -> None:
    line = declared_line(cat, a, b)
    if line is not None:
        tell(line)


def _declared(cat: Catalog, a: VariantRun, b: VariantRun) -> bool:
    return bool(cat.declared_pair(a.variant, b.variant))


def _agree(cat: Catalog, a: VariantRun, b: VariantRun) -> str:
    """What a search that found nothing says the pair does."""
    return "agree, or differ only as declared," if _declared(cat, a, b) else "agree"


def _search(cat, a, b, p, params, check, here, tell, result: Bisected) -> Bisected:
    ex = cat.example
    base = _inputs.read_inputs(ex, here)
    given = dict(params)
    if params:  # `--PARAM V`; for the parameter bisected, the top of the search
        base = base.with_params(params)
    tell(
        f"bisect {ex.name}: {a.label} vs {b.label} ({a.family}) on the shared inputs "
        f"({base.sizes_text()})"
    )
    _tell_declared(cat, a, b, tell)
    agree = _agree(cat, a, b)
    at_first = None
    if isinstance(p, Param):
        hi = (
            int(base.params[p.name])
            if p.name in given
            else min(p.maximum, REACH * max(int(base.params[p.name]), 1))
        )
        lo = min(int(p.minimum), hi)
        seen: dict[int, Any] = {}

        def disagree(value: int) -> bool:
            seen[value] = check(base.with_params({p.name: value}))
            tell(f"  {p.name} = {value}: {seen[value].word()}")
            result.tried[value] = not seen[value].agree
            return result.tried[value]

        result.first = smallest_value(disagree, lo, hi)
        if result.first is not None and result.first < hi and result.first + 1 not in seen:
            disagree(result.first + 1)  # above a value bisection found: does it hold there?
        if result.first is not None:
            at_first = seen[result.first]
            tell(_first_line(p.name, result, lo, _declared(cat, a, b)))
            tell("\n".join(outcome_lines(at_first)))
        else:
            tell(_agree_line(a, b, agree, p.name, result.tried, lo, hi))
            if int(base.params[p.name]) in seen:
                return result  # the shared value was among those tried
    if at_first is None and isinstance(p, Param):  # the shared value was not among those tried
        at_first = check(base)
        tell(f"on the shared inputs ({base.sizes_text()}): {at_first.word()}")
        if at_first.agree:
            return result
        tell("\n".join(outcome_lines(at_first)))
        result.first = int(base.params[p.name])
    return _minimal_case(cat, a, b, p, result, at_first, base, check, here, tell)


def _first_line(name: str, result: Bisected, lo: int, declared: bool) -> str:
    """`first disagreement at T = 6 (T = 5 agrees; T tried: 1…8)`, and, where a value
    above it agrees, that agreement is not monotone in the parameter, with the values."""
    first, tried = result.first, result.tried
    since = f"{name} = {first - 1} agrees" if first > lo else "the smallest value"
    beyond = " beyond the declaration" if declared else ""
    line = (
        f"first disagreement{beyond} at {name} = {first} ({since}; {name} tried: "
        f"{ranges_text(tried)})"
    )
    if result.monotone:
        return line + ":"
    above = [v for v, bad in tried.items() if v > first and not bad]
    apart = [v for v, bad in tried.items() if bad]
    return (
        f"{line}; not monotone in {name}: {name} = {ranges_text(above)} agree above it "
        f"({ranges_text(apart)} disagree), so a value not tried may go either way:"
    )


def _agree_line(a, b, agree: str, name: str, tried: dict[int, bool], lo: int, hi: int) -> str:
    """`A and B agree at every T tried (T = 1…8, 16, 32, 64, 80)`, saying that the values
    between were not tried, where some were not."""
    line = f"{a.label} and {b.label} {agree} at every {name} tried ({name} = {ranges_text(tried)})"
    if len(tried) < hi - lo + 1:
        line += (
            f"; the {hi - lo + 1 - len(tried)} value(s) between were not tried (a port wrong "
            f"at some values only may part there: weanj fuzz draws others)"
        )
    return line


def _minimal_case(cat, a, b, p, result: Bisected, at_first, base, check, here, tell) -> Bisected:
    """Step 2 and 3: the smallest size at the value found, the case file and the commands."""
    ex = cat.example
    params = dict((at_first.inputs if at_first is not None else base).params)
    minimal, made_at = at_first, None  # the outcome there, and the size it was made at
    stem = f"bisect-{a.label}-{b.label}" + (
        f"-{p.name}{result.first}" if isinstance(p, Param) else ""
    )
    if ex.sizes is None:
        tell(f"{ex.name} declares no Sizes: the minimal case is the shared inputs")
    else:
        where = f" at {p.name} = {result.first}" if isinstance(p, Param) else ""
        tell(f"smallest {ex.sizes.name}{where} (Sizes generator, seed {ex.seed}):")
        found, tried = smallest_size(ex, check, params, ex.seed, tell)
        if found is None:
            tell(
                f"  {a.label} and {b.label} {_agree(cat, a, b)} at every {ex.sizes.name} tried "
                f"({ex.sizes.name} = {ranges_text(tried)})"
                + ("; the minimal case is the shared inputs" if minimal is not None else "")
            )
            if minimal is None:
                result.outcome = PairOutcome(base)
                return result
        else:
            minimal, made_at = found, found.inputs.dims.get(ex.sizes.name)
            stem += f"-{ex.sizes.name}{made_at}" if made_at is not None else ""
            tell(f"smallest case: {found.inputs.sizes_text()}")
            tell("\n".join(outcome_lines(found)))
    result.outcome = minimal
    result.minimal = FuzzInput(minimal.inputs, ex.seed, made_at).write(here, stem)
    tell(f"minimal case written to {here.shown(result.case)} ({minimal.inputs.sizes_text()})")
    result.reproduce = result.minimal.reproduce(a, b, here)
    tell("reproduce it (from the project root):")
    tell("\n".join(f"  {line}" for line in result.reproduce))
    return result
