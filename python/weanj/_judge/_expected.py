"""Declared expectations, applied by the judge (docs/verdicts.md, "Declaring
expectations").

A case a `weanj.Expected` concerns is first judged as any other (`_verdict`); the
declaration then decides, here and nowhere else:

- the difference shows as declared (its verdict; in the declared array, only at the
  declared elements or region, within the bound): `expected`, with the reason;
- it does not show (the pair agrees, the check passes, the run is ok): `unexpectedly ok`,
  a failure, as pytest's `xfail(strict=True)` makes an XPASS one;
- it shows otherwise (another array, elements outside the declared ones, larger than
  the bound, another verdict): the case keeps its failing verdict and its reason says
  how it differs from the declaration, naming both.

A declaration whose elements are chosen from the inputs and are none on these inputs
expects nothing here: the case is judged as if undeclared.

The searches (`weanj bisect`, `weanj fuzz`) look for inputs on which a pair differs
beyond its declarations (`beyond_declaration`), on the judgements made here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._model import Expected
from .._model._verdicts import Verdict
from ._compare import compare


def _as_declared(j: Any, e: Expected, reason: str, **more: Any) -> Any:
    return dataclasses.replace(j, verdict=Verdict.EXPECTED, expected=e, reason=reason, **more)


def _not_there(j: Any, e: Expected, found: str, **more: Any) -> Any:
    reason = f"declared {e.verdict} ({e.reason}), but {found}"
    return dataclasses.replace(
        j, verdict=Verdict.UNEXPECTEDLY_OK, expected=e, reason=reason, **more
    )


def _otherwise(j: Any, e: Expected, how: str, **more: Any) -> Any:
    """A failing judgement that differs from its declaration: its verdict stays, its
    reason says how (`departure`), naming the declaration."""
    reason = f"not as declared: {how} (declared: {e.reason})"
    if j.reason:
        reason += f"; {j.reason}"
    verdict = j.verdict if j.verdict.failing else Verdict.FAIL
    return dataclasses.replace(j, verdict=verdict, expected=e, departure=how, reason=reason, **more)


def _at(array: str, index: tuple[int, ...]) -> str:
    return f"{array}[{', '.join(str(i) for i in index)}]"


def declared_pair(
    j: Any,
    declared: Sequence[Expected],
    g_ref: np.ndarray,
    g: np.ndarray,
    *,
    grad_floor: float = 0.0,
    entry_floor: np.ndarray | None = None,
    arrays: Mapping[str, np.ndarray] | None = None,
) -> Any:
    """A pair's judgement on one gradient array, held to the pair's declarations (its
    floors, `grad_floor` and `entry_floor`, as the pair's comparison had them)."""
    if not declared or not j.verdict.judged:  # it says nothing about a difference
        return j
    array, c = j.array, j.comparison
    # The pair has one loss: a declared difference moves it (the gradient is the loss's),
    # so each array is held to the declaration on its gradient alone.
    gradient = None
    if c is not None and not c.nonfinite:
        gradient = compare(g_ref, g, grad_floor=grad_floor, entry_floor=entry_floor)
    differs = j.failed if gradient is None else not gradient.agree
    mine = sorted((e for e in declared if e.array in (None, array)), key=lambda e: e.array is None)
    if not mine:  # declared for another array of the pair
        names = "; ".join(e.where(arrays) for e in declared)
        if not differs:
            return _loss_only(j, declared[0]) if j.failed else j
        how = f"differs in {array}, where the declaration names {names}"
        return _otherwise(j, declared[0], how, declared=names)
    e = mine[0]
    place = {"declared": e.where(arrays, array)}
    mask = e.mask(array, arrays or {}, np.shape(g_ref))
    if mask is not None and not mask.any():  # nothing expected on these inputs
        if j.failed:
            return _otherwise(j, e, f"differs in {array}, where the declaration names no element")
        return j
    if not differs:  # how closely: the pair's comparison says it, once
        return _not_there(j, e, f"{array} agrees", **place)
    if j.verdict != Verdict.FAIL or c is None or e.verdict != Verdict.FAIL:
        found = j.verdict if c is not None else f"{j.verdict} ({j.reason})"
        return _otherwise(j, e, f"declared {e.verdict}, found {found}", **place)
    if mask is not None:
        away = compare(g_ref, g, keep=~mask, grad_floor=grad_floor, entry_floor=entry_floor)
        if not away.agree:
            if away.nonfinite:
                where = f" ({Verdict.NONFINITE})"
            elif away.max_rel is not None and away.max_rel != c.max_rel:
                where = f" ({away.max_rel:.2e}·max|g_ref|)"
            else:  # the pair's worst element: its comparison gives the number, once
                where = ""
            how = (
                f"differs outside {e.where(arrays, array)}: {away.differing} other element(s) of "
                f"{array}, the worst {_at(array, away.worst)}{where}"
            )
            return _otherwise(j, e, how, away=away, **place)
    if e.bound is not None:
        measured = c.max_rel
        if measured is None or measured > e.bound:  # the comparison gives how much, once
            how = f"differs in {array} by more than the declared bound {e.bound:g}·max|g_ref|"
            return _otherwise(j, e, how, **place)
    return _as_declared(j, e, e.reason, **place)


def beyond_declaration(j: Any) -> bool:
    """Whether a judgement shows a difference beyond what was declared: what `weanj
    bisect` and `weanj fuzz` search for, on inputs other than the shared ones. A failing
    verdict, but not `unexpectedly ok`: a declared difference that does not show on some
    input is no difference there (a declaration fitted on the shared inputs need not
    apply at another size or seed; where its elements are none, the pair is judged as
    undeclared, above). That it shows on the shared inputs is `weanj check`'s to hold."""
    return j.verdict.failing and not j.verdict.not_there


def _loss_only(j: Any, e: Expected) -> Any:
    """An array of a declared pair whose gradient agrees and whose loss differs: the loss
    moved with the declared difference; the array is ok."""
    reason = f"its loss differs with the declared difference ({e.reason})"
    return dataclasses.replace(j, verdict=Verdict.OK, reason=reason)


def declared_check(j: Any, declared: Sequence[Expected]) -> Any:
    """A run's or a gradient check's judgement, held to its declarations."""
    if not declared or not j.verdict.judged:
        return j
    e = declared[0]
    if j.verdict == Verdict.OK:
        return _not_there(j, e, f"{j.kind} is ok")
    if str(j.verdict) == e.verdict:
        return _as_declared(j, e, f"{e.reason}; {j.reason}" if j.reason else e.reason)
    return _otherwise(j, e, f"declared {e.verdict}, found {j.verdict}")
