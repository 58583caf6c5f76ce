"""What `weanj fuzz` draws: its first draws, Hypothesis's draws of sizes, parameters, seeds
and the example's own strategies, and the run's seed.

The first draws are not random (a pair `weanj check` fails is reported at once):

1. the shared inputs with the default parameters (check's own case);
2. each declared size (`Sizes.values`, smallest first) at the default parameters;
3. the default's neighbours: each int parameter at default ± 1, each bool flipped.

Then Hypothesis draws, from the run's seed: a seed of the generator, a size
(`Sizes.candidates`, the sizes bisect tries: 1 … 8, each power of two from 16 with its odd
neighbours up to the largest declared size, every declared size; or the shared size
through the example's own `generate`) and every parameter over `Param.search_range`,
shrinking towards the default (an open int top is drawn up to 4× the default or
default + 8; an open float side keeps the default's sign and scale, [default/4,
4·default] for a positive default); or the arrays of one of the example's own strategies
(`weanj.fuzz_strategy`: ties, zeros, particles on cell boundaries). Earlier draws weigh
more in Hypothesis's order of simplicity: the size first, then the parameters, the seed
last, so that shrinking prefers a smaller problem.

**The seed.** A run given no seed draws one and shows it (`drawn_seed`), with the command
that replays its draws (`replay_command`); `pytest --weanj-fuzz` seeds each pair from its
case id (`pair_seed`). The constants Hypothesis would now and then draw from the "local"
modules loaded are off while fuzz draws (`no_local_constants`): which modules are loaded
differs between front ends, and a seed would not replay.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from typing import Any

import numpy as np

from ..._errors import InputError
from ..._model import Catalog, Example, Inputs, VariantRun, from_arrays
from ..engine._table import build_plan, fuzz_id
from ._minimal_case import FuzzInput, sized_case

MAX_EXAMPLES = 100
GENERATOR = "generator"  # a draw from the example's generator (not one of its strategies)
SEEDS = 2**32  # a run's seed is one of 0 … SEEDS - 1

# --- the pairs ---------------------------------------------------------------------------------


def fuzz_pairs(
    cat: Catalog, inputs: Inputs, dtype: str = "float64"
) -> tuple[list[tuple[VariantRun, VariantRun]], dict[str, str]]:
    """The pairs fuzz searches in `dtype` (`Plan.same_family_pairs`: the float64 pairs, or
    each float32 run against its own float64 run), and `{run: why it takes no part}`."""
    dtypes = ("float64",) if dtype == "float64" else ("float64", dtype)
    plan = build_plan(cat, inputs, live=True, dtypes=dtypes, checks=False)
    left_out = {s.label: s.skip.what for s in plan.subjects.values() if s.skip is not None}
    return plan.same_family_pairs(dtype), left_out


def fuzz_cases(cat: Catalog, inputs: Inputs) -> list[tuple[str, VariantRun, VariantRun]]:
    """`(case id, A, B)` of every pair fuzz searches by default (the pytest items)."""
    pairs, _ = fuzz_pairs(cat, inputs)
    return [(fuzz_id(cat.example, a.family, a.label, b.label), a, b) for a, b in pairs]


# --- the first draws ---------------------------------------------------------------------------


def neighbours(ex: Example) -> list[dict[str, Any]]:
    """The default's neighbours: each int parameter at default ± 1, each bool flipped."""
    out = []
    for p in ex.params:
        if p.kind == "int":
            lo, hi = p.search_range
            out += [{p.name: v} for v in (p.default - 1, p.default + 1) if lo <= v <= hi]
        elif p.kind == "bool":
            out.append({p.name: not p.default})
    return out


def first_cases(ex: Example, shared: Inputs) -> list[tuple[str, FuzzInput]]:
    """The first draws (module docstring): the shared inputs, the declared sizes, the
    default's neighbours, each with how it was made."""
    out = [("shared inputs", FuzzInput(shared, ex.seed, None, "the shared inputs"))]
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
        out.append(("neighbour", FuzzInput(inputs, ex.seed, None, f"the shared inputs at {what}")))
    return out


# --- Hypothesis's draws ------------------------------------------------------------------------


def sizes(ex: Example) -> tuple[int | None, ...]:
    """The sizes drawn (bisect's candidates: `Sizes.candidates`), and None: the shared
    inputs' own size, through the example's `generate`."""
    if ex.sizes is None:
        return (None,)
    return (*ex.sizes.candidates(), None)


def _draw_params(data: Any, ex: Example) -> dict[str, Any]:
    """Every parameter over its search range, as an offset from the default (so that
    Hypothesis shrinks it towards the default)."""
    from hypothesis import strategies as st

    params: dict[str, Any] = {}
    for p in ex.params:
        if p.kind == "int":
            lo, hi = p.search_range
            params[p.name] = p.default + data.draw(
                st.integers(lo - p.default, hi - p.default), label=p.name
            )
        elif p.kind == "float":
            lo, hi = p.search_range
            offset = st.floats(
                lo - p.default, hi - p.default, allow_nan=False, allow_infinity=False
            )
            params[p.name] = float(np.clip(p.default + data.draw(offset, label=p.name), lo, hi))
        else:
            params[p.name] = data.draw(st.sampled_from((p.default, not p.default)), label=p.name)
    return params


def draw_case(data: Any, ex: Example, strategies: tuple, refused: dict[str, int]) -> FuzzInput:
    """One input drawn by Hypothesis (module docstring); refused ones (`validate`, the
    generator) are rejected and counted in `refused`."""
    from hypothesis import reject
    from hypothesis import strategies as st
    from hypothesis.errors import HypothesisException

    source = data.draw(st.sampled_from((GENERATOR, *strategies)), label="source")
    seed, size = 0, None
    if source == GENERATOR:
        size = data.draw(st.sampled_from(sizes(ex)), label=ex.sizes.name if ex.sizes else "size")
    params = _draw_params(data, ex)
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
    return FuzzInput(inputs, seed, size, label)


@contextlib.contextmanager
def no_local_constants():
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


# --- the seed ----------------------------------------------------------------------------------


def drawn_seed() -> int:
    """A seed for a run given none (shown, so that the run can be replayed)."""
    return secrets.randbelow(SEEDS)


def pair_seed(case_id: str) -> int:
    """`pytest --weanj-fuzz`'s seed of a pair: from its case id, the same on every run."""
    return int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:4], "big") % SEEDS


def replay_command(
    ex: Example,
    seed: int,
    pairs=None,
    max_examples: int | None = None,
    *,
    dtype: str = "float64",
    device: str = "cpu",
) -> str:
    """`weanj fuzz EX [--pairs A B]... [--dtype D] [--device D] [--max-examples N] --seed
    S`: the pairs by their runs' names (which say their dtype and device); without pairs,
    the `dtype` and the `device` of the default pairs' B side."""
    words = ["weanj", "fuzz", ex.name]
    for a, b in pairs or ():
        words += ["--pairs", a.label, b.label]
    if not pairs and dtype != "float64":
        words += ["--dtype", dtype]
    if not pairs and device != "cpu":
        words += ["--device", device]
    if max_examples is not None and max_examples != MAX_EXAMPLES:
        words += ["--max-examples", str(max_examples)]
    return " ".join([*words, "--seed", str(seed)])
