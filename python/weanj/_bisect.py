"""`weanj bisect EX A B [--over PARAM]`: when, and on how small an input, two ports part ways.

A pair "agrees" exactly when the one judge says `ok` (or `kinks`, for a pair declared with
`weanj.differ_at_kinks`) on the loss and on every gradient array (`judge_inputs`): bisect
and fuzz ask the same question as `weanj check`, on other inputs.

1. Along an iteration parameter (an int `Param`: K, T, S): A and B are evaluated at its
   minimum, then at doubled values, until they disagree (or the search reaches the value
   given with `--PARAM V`, else 8× the inputs' value); bisection between the last value
   that agrees and the first that does not gives the smallest value at which they part.
   Divergence is assumed to persist once started, which bisection needs; every value
   reported was evaluated, so the answer "agrees at v − 1, disagrees at v" is checked.
2. At that value, the smallest problem size of the example's `Sizes` generator at which
   they disagree: every size from 1 to 8, then doubling up to the largest benchmark size,
   then bisection. Sizes the generator or the example's validator refuses are skipped.
3. The minimal case is written as an inputs file, `results/EX/cases/`, with the commands
   that reproduce it: two `weanj run`s and `python -m weanj._bisect judge`, which judges
   the two gradient files on the case (`judge_files`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import ExcludedError, InputError, WeanjError
from ._io._inputs import Inputs, from_arrays, read_inputs, write_inputs_file
from ._judge._verdict import Judgement, Verdict, judge_pair
from ._model import Example, Gradient, Variant
from ._project import project_root, results_dir
from ._registry import example as example_named
from ._registry import kink_difference, same_family_pair

# Without `--PARAM V`, doubling goes up to this many times the inputs' value.
REACH = 8
# Sizes tried one by one before doubling: where odd sizes and n = 1 live.
SMALL_SIZES = tuple(range(1, 9))
AGREEING = (Verdict.OK, Verdict.KINKS)


def _say(line: str) -> None:
    print(line, flush=True)


# --- one pair on one input --------------------------------------------------------------------


def pair_id(ex: Example, a: str, b: str, family: str, array: str) -> str:
    """The case id of the pair, as `weanj check` and `pytest --weanj` name it."""
    suffix = f"::{array}" if len(ex.wrt_names) > 1 else ""
    return f"{ex.name}::{family}::{a}~{b}{suffix}"


def judge_inputs(ex: Example, ga: Gradient, gb: Gradient, inputs: Inputs) -> list[Judgement]:
    """The judge's verdict on `gb` against `ga`, both computed on `inputs`, per gradient
    array; a declared kink pair is judged away from the kinks of these inputs."""
    from ._judge._gradcheck import kink_masks

    why = kink_difference(ex.name, ga.variant, gb.variant)
    masks = None
    if why is not None:
        masks = kink_masks(ex, inputs.run_arrays("float64"), dict(inputs.params), inputs.digest)
    return [
        judge_pair(
            pair_id(ex, ga.variant, gb.variant, ga.family, array),
            ga,
            gb,
            array,
            kinks=why,
            keep=None if masks is None else masks[array],
        )
        for array in ex.wrt_names
    ]


def agree(judgements: list[Judgement]) -> bool:
    return all(j.verdict in AGREEING for j in judgements)


@dataclass
class Outcome:
    """A and B on one input: the judgements, or why one of them could not be evaluated."""

    inputs: Inputs
    judgements: list[Judgement] = field(default_factory=list)
    error: str | None = None

    @property
    def agree(self) -> bool:
        return self.error is None and agree(self.judgements)

    def word(self) -> str:
        if self.error is not None:
            return "ERROR"
        worst = next((j for j in self.judgements if j.verdict not in AGREEING), None)
        return str(worst.verdict if worst else self.judgements[0].verdict)


def evaluate_pair(
    ex: Example, a: Variant, b: Variant, inputs: Inputs, *, timeout_s: float | None = None
) -> Outcome:
    """Evaluate A and B on `inputs` (float64) and judge them. A variant that raises is
    an outcome (they part ways there); one that runs out of time is an error."""
    from ._run import evaluate
    from ._watch import Watch

    watch = Watch(timeout_s=timeout_s)
    gradients = []
    for v in (a, b):
        try:
            gradients.append(
                watch.run(lambda v=v: evaluate(ex, v, inputs=inputs), f"{ex.name} {v.name}")
            )
        except TimeoutError as e:
            raise WeanjError(f"{e} on {describe(inputs)}; cannot tell; raise --timeout") from None
        except ExcludedError:  # declared not to apply to these inputs: nothing to judge
            return Outcome(inputs, [])
        except Exception as e:  # a variant that fails where its sibling runs: a difference
            first = (str(e).strip().splitlines() or [""])[0][:200]
            return Outcome(inputs, error=f"{v.name} raised {type(e).__name__}: {first}")
    return Outcome(inputs, judge_inputs(ex, *gradients, inputs))


# --- describing inputs and cases ---------------------------------------------------------------


def describe(inputs: Inputs) -> str:
    """`n = 4, K = 6` (the symbolic dimensions, then the parameters)."""
    parts = [f"{d} = {size}" for d, size in inputs.dims.items()]
    if not parts:
        parts = [f"{name} {tuple(a.shape)}" for name, a in inputs.arrays.items()]
    parts += [f"{k} = {v}" for k, v in inputs.params.items()]
    return ", ".join(parts)


def shown_path(path: Path) -> str:
    """`path` relative to the project root where it lies inside (commands run there)."""
    try:
        return str(path.resolve().relative_to(project_root().resolve()))
    except ValueError:
        return str(path)


def write_case(ex: Example, inputs: Inputs, stem: str, *, seed: int) -> Path:
    """Write `inputs` as `results/EX/cases/<stem>.h5` (an inputs file `weanj run
    --inputs` reads, with the parameters as attributes)."""
    path = results_dir(ex.name) / "cases" / f"{stem}.h5"
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_inputs_file(inputs, path, seed=seed)


def _word(value: Any) -> str:
    """A parameter value as the command line spells it."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def reproduce_lines(ex: Example, a: str, b: str, case: Path) -> list[str]:
    """The commands that recompute A and B on a case file and judge them."""
    runs = results_dir(ex.name) / "runs"
    files = [shown_path(runs / f"{case.stem}-{v}.h5") for v in (a, b)]
    where = shown_path(case)
    params = "".join(f" --{k} {_word(v)}" for k, v in read_inputs(ex, case).params.items())
    return [
        f"weanj run {ex.name} {a} --inputs {where}{params} --out {files[0]}",
        f"weanj run {ex.name} {b} --inputs {where}{params} --out {files[1]}",
        f"python -m weanj._bisect judge {ex.name} {where} {files[0]} {files[1]}",
    ]


def outcome_lines(outcome: Outcome, indent: str = "  ") -> list[str]:
    """The judgements of an outcome with their regions, as `weanj check` prints them."""
    from ._report._text import message

    if outcome.error is not None:
        return [f"{indent}{outcome.error}"]
    out = []
    for j in outcome.judgements:
        out.extend(f"{indent}{line}" for line in message(j).splitlines())
    return out


# --- the searches ------------------------------------------------------------------------------


def smallest_value(disagree: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """The smallest v in [lo, hi] with `disagree(v)`, by doubling from `lo` then bisection
    (divergence assumed to persist once started); None if none of the tried values."""
    if disagree(lo):
        return lo
    good = lo
    while True:
        step = min(max(2 * good, good + 1), hi)
        if step <= good:
            return None
        if disagree(step):
            bad = step
            break
        good = step
    while bad - good > 1:
        mid = (good + bad) // 2
        if disagree(mid):
            bad = mid
        else:
            good = mid
    return bad


def size_candidates(largest: int) -> list[int]:
    """1 … 8, then doubling up to `largest` (the largest benchmark size)."""
    out = [s for s in SMALL_SIZES if s <= max(largest, SMALL_SIZES[-1])]
    s = SMALL_SIZES[-1] * 2
    while s <= largest:
        out.append(s)
        s *= 2
    if largest not in out:
        out.append(largest)
    return out


def sized_inputs(ex: Example, size: int, params: dict[str, Any], seed: int) -> Inputs | str:
    """The inputs of the example's `Sizes` generator at `size`, or why there are none."""
    try:
        arrays = ex.sizes.generate(seed, size)
        return from_arrays(ex, arrays, params, what=f"{ex.sizes.name} = {size}")
    except InputError as e:
        return f"refused ({e})"
    except Exception as e:  # a generator that does not make this size
        return f"not generated ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]})"


def smallest_size(
    ex: Example, check: Callable[[Inputs], Outcome], params: dict[str, Any], seed: int
) -> tuple[Outcome | None, list[str]]:
    """The outcome at the smallest size of `ex.sizes` at which the pair disagrees
    (None: none), and the lines saying what was tried."""
    name, lines = ex.sizes.name, []
    tried: dict[int, Outcome | str] = {}

    def at(size: int) -> Outcome | str:
        if size not in tried:
            made = sized_inputs(ex, size, params, seed)
            tried[size] = made if isinstance(made, str) else check(made)
            shown = tried[size] if isinstance(tried[size], str) else tried[size].word()
            lines.append(f"  {name} = {size}: {shown}")
            _say(lines[-1])
        return tried[size]

    good, bad = 0, None
    for size in size_candidates(max(ex.sizes.values)):
        o = at(size)
        if isinstance(o, str):
            continue
        if not o.agree:
            bad = size
            break
        good = size
    if bad is None:
        return None, lines
    while bad - good > 1:  # only between doubled sizes: the small ones were all tried
        accepted = None
        for size in range((good + bad) // 2, bad):  # past sizes the generator refuses
            if not isinstance(at(size), str):
                accepted = size
                break
        if accepted is None:
            break
        if at(accepted).agree:
            good = accepted
        else:
            bad = accepted
    return tried[bad], lines


# --- the command -------------------------------------------------------------------------------


def _over_param(ex: Example, over: str | None):
    ints = [p for p in ex.params if p.kind == "int"]
    if over is None:
        return ints[0] if ints else None
    p = ex.param(over)
    if p.kind != "int":
        raise InputError(
            f"bisect --over needs an int parameter (an iteration count); {over} is {p.kind}"
            + (f"; int parameters of {ex.name}: {', '.join(q.name for q in ints)}" if ints else "")
        )
    return p


def _variants(ex: Example, a: str, b: str) -> tuple[Variant, Variant]:
    va, vb = same_family_pair(ex, a, b, "bisect")
    for v in (va, vb):
        if "float64" not in v.dtypes:
            raise InputError(f"{v.name} does not run in float64, which bisect compares")
    return va, vb


def command(
    ex: Example | str,
    a: str,
    b: str,
    *,
    over: str | None = None,
    params: dict[str, Any] | None = None,
    timeout_s: float | None = None,
) -> int:
    """`weanj bisect`: 1 when A and B part ways (the case written), 0 when they agree on
    everything tried; errors are `WeanjError`s (exit 2)."""
    ex = example_named(ex)
    va, vb = _variants(ex, a, b)
    p = _over_param(ex, over)
    params = dict(params or {})
    base = read_inputs(ex)
    if params:  # `--PARAM V`; for the parameter bisected, the top of the search
        base = base.with_params(params)

    def check(inputs: Inputs) -> Outcome:
        return evaluate_pair(ex, va, vb, inputs, timeout_s=timeout_s)

    _say(f"bisect {ex.name}: {a} vs {b} ({va.family}) on the shared inputs ({describe(base)})")
    first, at_first = None, None
    if p is not None:
        given = p.name in params
        hi = (
            int(base.params[p.name])
            if given
            else min(p.maximum, REACH * max(int(base.params[p.name]), 1))
        )
        lo = min(int(p.minimum), hi)
        seen: dict[int, Outcome] = {}

        def disagree(value: int) -> bool:
            seen[value] = check(base.with_params({p.name: value}))
            _say(f"  {p.name} = {value}: {seen[value].word()}")
            return not seen[value].agree

        first = smallest_value(disagree, lo, hi)
        if first is not None:
            at_first = seen[first]
            since = f" ({p.name} = {first - 1} agrees)" if first > lo else " (the smallest value)"
            _say(f"first disagreement at {p.name} = {first}{since}:")
            _say("\n".join(outcome_lines(at_first)))
        else:
            _say(f"{a} and {b} agree at every {p.name} tried, {lo} … {hi}")
        if first is None and int(base.params[p.name]) in seen:
            return 0  # the shared value was among those tried
    if at_first is None:  # no parameter, or the shared value not tried: the shared inputs
        at_first = check(base)
        _say(f"on the shared inputs ({describe(base)}): {at_first.word()}")
        if at_first.agree:
            return 0
        _say("\n".join(outcome_lines(at_first)))
        first = None if p is None else int(base.params[p.name])
    return _minimal_case(ex, va, vb, p, first, at_first, check)


def _minimal_case(ex, va, vb, p, first, at_first: Outcome, check) -> int:
    """Step 2 and 3: the smallest size at the value found, the case file and the commands."""
    params = dict(at_first.inputs.params)
    minimal = at_first
    stem = f"bisect-{va.name}-{vb.name}" + (f"-{p.name}{first}" if p is not None else "")
    if ex.sizes is None:
        _say(f"{ex.name} declares no Sizes: the minimal case is the shared inputs")
    else:
        where = f" at {p.name} = {first}" if p is not None else ""
        _say(f"smallest {ex.sizes.name}{where} (Sizes generator, seed {ex.seed}):")
        found, _ = smallest_size(ex, check, params, ex.seed)
        if found is None:
            _say(
                f"  no size of the Sizes generator up to {max(ex.sizes.values)} shows it: "
                "the minimal case is the shared inputs"
            )
        else:
            minimal = found
            size = found.inputs.dims.get(ex.sizes.name)
            stem += f"-{ex.sizes.name}{size}" if size is not None else ""
            _say(f"smallest case: {describe(found.inputs)}")
            _say("\n".join(outcome_lines(found)))
    case = write_case(ex, minimal.inputs, stem, seed=ex.seed)
    _say(f"minimal case written to {shown_path(case)} ({describe(minimal.inputs)})")
    _say("reproduce it (from the project root):")
    _say("\n".join(f"  {line}" for line in reproduce_lines(ex, va.name, vb.name, case)))
    return 1


# --- judging two gradient files on a case -------------------------------------------------------


def judge_files(example: Example | str, inputs_file: Path | str, a: Path | str, b: Path | str):
    """The judgements of gradient file `b` against `a`, both computed on `inputs_file`
    (their keys must be the inputs' key: otherwise they are not comparable)."""
    from ._io._store import read_gradient_file

    ex = example_named(example)
    inputs = read_inputs(ex, inputs_file)
    ga, gb = read_gradient_file(a, source="file"), read_gradient_file(b, source="file")
    for path, g in ((a, ga), (b, gb)):
        if g.example.name != ex.name:
            raise InputError(f"{path} is a gradient of {g.example.name}, not {ex.name}")
        if not inputs.matches(g):
            raise InputError(
                f"{path} was not computed on {inputs_file} ({describe(inputs)}, float64): "
                f"recompute it with `weanj run {ex.name} {g.variant} --inputs {inputs_file}`"
            )
    if ga.family != gb.family:
        raise InputError(f"{ga.variant} and {gb.variant} are of different families")
    return judge_inputs(ex, ga, gb, inputs)


def main(argv: list[str]) -> int:
    """`python -m weanj._bisect judge EX INPUTS FILE_A FILE_B`: 0 agree, 1 not, 2 error."""
    if len(argv) != 5 or argv[0] != "judge":
        print("usage: python -m weanj._bisect judge EXAMPLE INPUTS FILE_A FILE_B", file=sys.stderr)
        return 2
    try:
        judgements = judge_files(*argv[1:])
    except WeanjError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(outcome_lines(Outcome(read_inputs(argv[1], argv[2]), judgements), "")))
    return 0 if agree(judgements) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
