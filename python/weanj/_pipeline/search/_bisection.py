"""`weanj bisect`'s two searches (`_commands.bisect` says what it prints of them): the
smallest value of an int parameter at which two ports part ways, and the smallest size
of the example's `Sizes` at which they do. Each asks a function of its own (`disagree`,
`check`) and runs nothing itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._model import Example, Inputs
from ..engine._cases import PairOutcome
from ._minimal_case import sized_case

# The values a search over an int parameter tries one by one from its lowest, before it
# doubles: a port wrong at odd T, or at T = 3 only, is wrong among them.
SMALL_VALUES = 8


def smallest_value(disagree: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """The smallest v in [lo, hi] with `disagree(v)` among the values tried: every one
    from `lo` to `lo + SMALL_VALUES - 1` (each asked, so that agreement above a
    disagreement shows), then doubling, then bisection (divergence assumed to persist
    once started); None if none of the tried values."""
    small = range(lo, min(lo + SMALL_VALUES - 1, hi) + 1)
    found = [v for v in small if disagree(v)]
    if found:
        return found[0]
    good = small[-1]
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


def smallest_size(
    ex: Example,
    check: Callable[[Inputs], PairOutcome],
    params: dict[str, Any],
    seed: int,
    say: Callable[[str], None],
) -> tuple[PairOutcome | None, list[int]]:
    """The outcome at the smallest size of `ex.sizes` at which the pair disagrees (None:
    none), and the sizes tried (module docstring, step 2)."""
    name = ex.sizes.name
    tried: dict[int, PairOutcome | str] = {}

    def at(size: int) -> PairOutcome | str:
        if size not in tried:
            made = sized_case(ex, size, params, seed)
            tried[size] = made if isinstance(made, str) else check(made.inputs)
            shown = tried[size] if isinstance(tried[size], str) else tried[size].word()
            say(f"  {name} = {size}: {shown}")
        return tried[size]

    good, bad = 0, None
    for size in ex.sizes.candidates():
        o = at(size)
        if isinstance(o, str):
            continue
        if not o.agree:
            bad = size
            break
        good = size
    if bad is None:
        return None, [s for s, o in tried.items() if not isinstance(o, str)]
    for size in range(good + 1, bad):  # every size between: the smallest failing one
        o = at(size)
        if not isinstance(o, str) and not o.agree:
            bad = size
            break
    return tried[bad], [s for s, o in tried.items() if not isinstance(o, str)]
