"""What `weanj fuzz` draws and how one draw is judged (`_fuzz` runs the search).

A draw is one input: a size of the example's `Sizes` (1 … 8, the smallest benchmark
size, or the shared inputs' size through the example's own `generate`), a value of every
parameter and a seed; or the arrays of one of the example's strategies
(`weanj.fuzz_strategy`). Inputs the generator or the example's `validate` refuses are
rejected (Hypothesis draws again). Every variant of the pairs is evaluated once on the
draw, and every pair judged by the one judge (`_bisect.judge_inputs`).

Nothing here imports Hypothesis or JAX at import time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._errors import ExcludedError, InputError

SMALL_SIZES = (1, 2, 3, 4, 5, 6, 7, 8)
SHOWN_ELEMENTS = 24  # a case this small is printed in full


# --- what is drawn ----------------------------------------------------------------------------

GENERATOR = "generator"


def param_candidates(p: Any) -> tuple:
    """The values drawn for one parameter, the preferred (shrink target) first."""
    if p.kind == "bool":
        return (bool(p.default), not p.default)
    if p.kind == "int":
        lo = int(p.minimum)
        values = [lo + k for k in (0, 1, 2, 3, 5, 8)] + [int(p.default)]
        return tuple(dict.fromkeys(v for v in values if lo <= v <= p.maximum))
    values = [float(p.default), 0.0, 1.0, -1.0, float(p.minimum), float(p.maximum)]
    inside = (v for v in values if math.isfinite(v) and p.minimum <= v <= p.maximum)
    return tuple(dict.fromkeys(inside))


@dataclass(frozen=True)
class Space:
    """Everything a draw chooses from."""

    sizes: tuple[int | None, ...]  # None: the example's own `generate(seed)`
    size_name: str
    params: Mapping[str, tuple]
    sources: tuple  # GENERATOR, then the example's strategies

    def describe(self) -> str:
        sizes = ", ".join("shared" if s is None else str(s) for s in self.sizes)
        parts = [f"{self.size_name} ∈ {{{sizes}}}" if self.size_name else "the shared size"]
        parts += [f"{k} ∈ {{{', '.join(map(str, v))}}}" for k, v in self.params.items()]
        parts.append("seeds")
        strategies = [getattr(s, "__name__", "strategy") for s in self.sources[1:]]
        if strategies:
            parts.append(f"strategies {', '.join(strategies)}")
        return "; ".join(parts)


def space_of(ex: Any, strategies: list[Callable] = ()) -> Space:
    """The space of an example, with its registered strategies."""
    sizes: tuple[int | None, ...] = ()
    if ex.sizes is not None:
        sizes = tuple(sorted(set(SMALL_SIZES) | {min(ex.sizes.values)}))
    return Space(
        sizes=(*sizes, None),
        size_name=ex.sizes.name if ex.sizes is not None else "",
        params={p.name: param_candidates(p) for p in ex.params},
        sources=(GENERATOR, *strategies),
    )


@dataclass
class Case:
    """One drawn input."""

    inputs: Any  # Inputs
    seed: int
    size: int | None
    source: str

    def order(self) -> tuple:
        """Smaller is simpler: fewer elements, smaller parameters, smaller seed."""
        elements = sum(int(a.size) for a in self.inputs.arrays.values())
        params = sum(abs(float(v)) for v in self.inputs.params.values())
        return (elements, params, self.seed)

    def describe(self) -> str:
        from ._bisect import describe

        where = f"seed {self.seed}" if self.source == GENERATOR else f"strategy {self.source}"
        return f"{describe(self.inputs)}, {where}"

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


def draw_case(data: Any, ex: Any, space: Space, refused: dict[str, int]) -> Case:
    """One input drawn from `space`; refused ones (`validate`, the generator) are
    `assume`d away and counted in `refused`."""
    from hypothesis import reject
    from hypothesis import strategies as st
    from hypothesis.errors import HypothesisException

    from ._io._inputs import from_arrays

    # Earlier draws weigh more in Hypothesis's order of simplicity: the size first, then
    # the parameters, the seed last, so that shrinking prefers a smaller problem.
    source = data.draw(st.sampled_from(space.sources), label="source")
    seed, size = 0, None
    if source == GENERATOR:
        size = data.draw(st.sampled_from(space.sizes), label=space.size_name or "size")
    params = {k: data.draw(st.sampled_from(v), label=k) for k, v in space.params.items()}
    try:
        if source == GENERATOR:
            seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
            arrays = dict(ex.generate(seed) if size is None else ex.sizes.generate(seed, size))
            label = GENERATOR
        else:
            arrays = dict(source(data.draw))
            label = getattr(source, "__name__", "strategy")
            params.update({k: arrays.pop(k) for k in list(arrays) if k in space.params})
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


# --- judging a draw -----------------------------------------------------------------------------


@dataclass
class PairResult:
    a: str
    b: str
    judgements: list = field(default_factory=list)
    error: str | None = None

    @property
    def agree(self) -> bool:
        from ._bisect import agree

        return self.error is None and agree(self.judgements)


@dataclass
class Draw:
    case: Case
    results: list[PairResult]

    @property
    def failing(self) -> list[PairResult]:
        return [r for r in self.results if not r.agree]


def judge_draw(ex: Any, pairs: list[tuple[str, str]], case: Case) -> Draw:
    """Every variant of `pairs` evaluated once on the case, every pair judged."""
    from ._bisect import judge_inputs
    from ._run import evaluate

    evaluated: dict[str, Any] = {}
    for name in dict.fromkeys(v for pair in pairs for v in pair):
        try:
            evaluated[name] = evaluate(ex, name, inputs=case.inputs)
        except ExcludedError as e:  # declared not to apply here: not judged on this draw
            evaluated[name] = e
        except Exception as e:  # raising where the sibling runs is a difference
            first = (str(e).strip().splitlines() or [""])[0][:200]
            evaluated[name] = f"{name} raised {type(e).__name__}: {first}"
    results = []
    for a, b in pairs:
        ga, gb = evaluated[a], evaluated[b]
        if isinstance(ga, ExcludedError) or isinstance(gb, ExcludedError):
            results.append(PairResult(a, b))  # no judgement: nothing to disagree with
        elif isinstance(ga, str) or isinstance(gb, str):
            results.append(PairResult(a, b, error=ga if isinstance(ga, str) else gb))
        else:
            results.append(PairResult(a, b, judge_inputs(ex, ga, gb, case.inputs)))
    return Draw(case, results)
