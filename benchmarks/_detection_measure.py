"""The smallest planted error caught, per planting and per check (`detection.py`; the
tests import it): the grid of ε, where each planting goes, and the ratio of the
self-checks' smallest caught ε to the reference's.

**Caught** is a FAIL verdict of the planted array's check (any planted array's, for
`every array`); a check that is skipped judges nothing (the `custom_vjp` way's jvp).
**The smallest caught ε** is the smallest grid ε down to which every ε of the grid, from
the largest, is caught (a catch further down, below a miss, is listed apart: `below`).
**The ratio** of a check to the reference is 1 where both stop at the same grid point;
where they do not, each threshold is bisected in log ε between its grid point and the
half decade below it (`refined`; one not caught at the grid's top is first sought by half
decades above it, `above`), and the ratio is the thresholds' (a bound, `≤` or `≥`, where
the half decade below the grid's smallest ε is caught too).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from _detection import Bench
from _detection_kernels import Kernel

import weanj
from weanj._model._verdicts import Verdict

# ε = 1e-2, 10^-2.5, 1e-3, ..., 1e-9: half decades
EPSILONS = tuple(10.0 ** (-k / 2) for k in range(4, 19))
REFERENCE = "walk alone"  # under the rounding floor the check reads remainders against
# a diagnosis where a check and the reference part: the walk with no floor beyond the
# loss's own 64·eps·|L| (`taylor` of one array, as a notebook calls it)
FLOOR_WALK = "walk alone, no floor"
# each way's checks: `custom_vjp` has no forward mode (its jvp is skipped: Taylor alone)
SERIES = ("custom_vjp taylor", "grad= taylor", "grad= jvp", "grad= either")
# the self-checks against the reference: Taylor alone, and everything `grad=` runs
COMPARED = ("custom_vjp taylor", "grad= taylor", "grad= either")
BISECTIONS = 7  # in log ε between two half decades: thresholds within 10^(1/256), 0.9 %


@dataclass(frozen=True)
class Planting:
    """Where the planted error goes: `element` (one entry of `array`, `index`), `array`
    (all of `array`) or `every` (every wrt array)."""

    kind: str
    array: str | None = None
    index: tuple[int, ...] | None = None

    @property
    def label(self) -> str:
        if self.kind == "element":
            return f"{self.array}[{','.join(map(str, self.index))}]"
        return self.array if self.kind == "array" else "every array"

    def plants(self, kernel: Kernel, eps: float) -> dict[str, np.ndarray]:
        """`{wrt name: relative error per entry}`: ε where planted, 0 elsewhere."""
        out = {}
        for a in kernel.wrt:
            p = np.zeros(np.shape(kernel.arrays[a]))
            if self.kind == "every" or (self.kind == "array" and a == self.array):
                p[...] = eps
            elif self.kind == "element" and a == self.array:
                p[self.index] = eps
            out[a] = p
        return out

    def planted(self, kernel: Kernel) -> list[str]:
        return list(kernel.wrt) if self.kind == "every" else [self.array]


def median_element(g: np.ndarray, mask: np.ndarray | None) -> tuple[int, ...]:
    """The entry of median |g| among the nonzero entries the kink mask keeps (the upper
    median where their number is even; ties in the order of the flattened array)."""
    keep = np.abs(g) > 0 if mask is None else (np.abs(g) > 0) & mask
    flat = np.flatnonzero(keep)
    if flat.size == 0:
        raise weanj.InputError("no nonzero gradient entry to plant an error into")
    order = flat[np.argsort(np.abs(g).ravel()[flat], kind="stable")]
    return tuple(int(i) for i in np.unravel_index(order[flat.size // 2], np.shape(g)))


def plantings(bench: Bench) -> list[Planting]:
    """Per wrt array its median element and the whole array, then every array (where
    there are several)."""
    kernel, out = bench.kernel, []
    for a in kernel.wrt:
        out.append(Planting("element", a, median_element(bench.gradient[a], bench.masks[a])))
        out.append(Planting("array", a))
    return [*out, Planting("every")] if len(kernel.wrt) > 1 else out


# --- one planting at one ε ------------------------------------------------------------------


def caught(verdicts: list[str]) -> bool | None:
    """Whether any of these verdicts failed; None where none judged (all skipped)."""
    judged = [v for v in verdicts if v != str(Verdict.SKIPPED)]
    return None if not judged else any(v == str(Verdict.FAIL) for v in judged)


class Outcomes:
    """One planting's outcomes at each ε asked, each computed once: the check's
    (`check`, one `Bench.check`) and the reference's (`reference`)."""

    def __init__(self, bench: Bench, planting: Planting):
        self.bench, self.planting = bench, planting
        self._checks: dict[float, dict] = {}
        self._references: dict[float, bool | None] = {}

    def check(self, eps: float) -> dict:
        """`{series: caught}` (`SERIES`), and `elsewhere`: the checks of arrays not
        planted that failed (none should)."""
        if eps not in self._checks:
            k, planted = self.bench.kernel, self.planting.planted(self.bench.kernel)
            found = self.bench.check(self.planting.plants(k, eps))
            out: dict = {}
            for way in self.bench.ways:
                per = {a: found[way][a] for a in planted}
                for check in ("taylor", "jvp"):
                    out[f"{way} {check}"] = caught([v.get(check, "skipped") for v in per.values()])
                out[f"{way} either"] = caught([x for v in per.values() for x in v.values()])
            out["elsewhere"] = sorted(
                f"{way} {a} {check}"
                for way in self.bench.ways
                for a in k.wrt
                if a not in planted
                for check, v in found[way][a].items()
                if v == str(Verdict.FAIL)
            )
            self._checks[eps] = out
        return self._checks[eps]

    def reference(self, eps: float) -> bool | None:
        if eps not in self._references:
            plants = self.planting.plants(self.bench.kernel, eps)
            planted = self.planting.planted(self.bench.kernel)
            self._references[eps] = caught(
                [self.bench.reference(plants, a, check_floor=True) for a in planted]
            )
        return self._references[eps]

    def floor_reference(self, eps: float) -> bool | None:
        """The walk with no floor beyond 64·eps·|L| (`Bench.reference`): a diagnosis."""
        plants = self.planting.plants(self.bench.kernel, eps)
        planted = self.planting.planted(self.bench.kernel)
        return caught([self.bench.reference(plants, a) for a in planted])

    def decide(self, series: str) -> Callable[[float], bool]:
        if series == REFERENCE:
            return lambda eps: bool(self.reference(eps))
        if series == FLOOR_WALK:
            return lambda eps: bool(self.floor_reference(eps))
        return lambda eps: bool(self.check(eps)[series])


def smallest(caught_at: dict[float, bool | None]) -> float | None:
    """The smallest ε of the grid down to which every ε is caught (from the largest):
    None where the largest is not."""
    found = None
    for eps in sorted(caught_at, reverse=True):
        if not caught_at[eps]:
            break
        found = eps
    return found


def refined(decide: Callable[[float], bool], caught_eps: float, steps: int) -> tuple[float, bool]:
    """`(threshold, bounded)`: the smallest ε caught between `caught_eps` and the half
    decade below it, by `steps` bisections in log ε; `bounded` where the half decade
    below is caught too (then the threshold is at most that)."""
    lo, hi = caught_eps / math.sqrt(10.0), caught_eps
    if decide(lo):
        return lo, True
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if decide(mid) else (mid, hi)
    return hi, False


def above(decide: Callable[[float], bool], largest: float) -> float | None:
    """The first half decade above `largest` (the grid's top, not caught) that is caught,
    up to a relative error of 1: where a ratio is needed beyond the grid's top."""
    eps = largest
    while eps < 1.0:
        eps = min(eps * math.sqrt(10.0), 1.0)
        if decide(eps):
            return eps
    return None


def ratio(outcomes: Outcomes, series: str, smallest_of: dict, top: float, steps: int) -> dict:
    """The series' smallest caught ε over the reference's (module docstring): 1 at the
    same grid point; else each bisected below its smallest caught ε, sought above the
    grid's `top` where that is not caught (infinite where not even ε = 1 is)."""
    mine, theirs = smallest_of[series], smallest_of[REFERENCE]
    if mine == theirs:
        how = "same grid point" if mine is not None else "neither caught at the largest ε"
        return {"ratio": 1.0, "how": how}
    decide_mine, decide_theirs = outcomes.decide(series), outcomes.decide(REFERENCE)
    mine = mine if mine is not None else above(decide_mine, top)
    theirs = theirs if theirs is not None else above(decide_theirs, top)
    if mine is None or theirs is None:
        return {"ratio": math.inf if mine is None else 0.0, "how": "not caught up to ε = 1"}
    check, at_most = refined(decide_mine, mine, steps)
    reference, at_least = refined(decide_theirs, theirs, steps)
    # a threshold below the grid's bottom is a bound: the check's bounds the ratio above,
    # the reference's below (never both: both at the bottom is the same grid point)
    bound = "≤" if at_most else ("≥" if at_least else "")
    found = {"ratio": check / reference, "how": "bisected", "bound": bound}
    return {**found, "check": check, "reference": reference}


def _threshold(outcomes: Outcomes, series: str, epsilons, steps: int) -> dict:
    """`series`' smallest caught ε on the grid and its threshold, bisected below it (or
    sought above the grid's top)."""
    decide = outcomes.decide(series)
    found = smallest({eps: decide(eps) for eps in epsilons})
    start = found if found is not None else above(decide, max(epsilons))
    threshold = None if start is None else refined(decide, start, steps)[0]
    return {"smallest": found, "threshold": threshold}


def _scan(outcomes: Outcomes, names: tuple[str, ...], epsilons, stop_after: int | None):
    """The grid's rows from the largest ε down; with `stop_after`, ended once every
    series has missed that many ε in a row (the rest is not computed)."""
    grid, missed = [], dict.fromkeys(names, 0)
    for eps in sorted(epsilons, reverse=True):
        row = {"eps": eps, **outcomes.check(eps), REFERENCE: outcomes.reference(eps)}
        grid.append(row)
        missed = {s: 0 if row[s] else missed[s] + 1 for s in names}
        if stop_after and min(missed.values()) >= stop_after:
            break
    return grid


def measure(
    bench: Bench,
    planting: Planting,
    epsilons: tuple[float, ...] = EPSILONS,
    steps: int = BISECTIONS,
    stop_after: int | None = None,
) -> dict:
    """One planting's record: its outcome with nothing planted (`baseline`: nothing
    should be caught), at every ε of the grid (from the largest; with `stop_after`, down
    to where every series has missed that many in a row), each series' smallest caught
    ε (and any catch below a miss), and the compared series' ratios to the reference;
    where a Taylor test and the reference part, the walk with no floor beyond the loss's
    own 64·eps·|L| (`FLOOR_WALK`: how much of the difference is the floor)."""
    outcomes = Outcomes(bench, planting)
    ways = bench.ways
    series = tuple(s for s in SERIES if s.split()[0] in ways)
    names = (*series, REFERENCE)
    grid = _scan(outcomes, names, epsilons, stop_after)
    smallest_of = {s: smallest({row["eps"]: row[s] for row in grid}) for s in names}
    below = {
        s: [r["eps"] for r in grid if r[s] and smallest_of[s] and r["eps"] < smallest_of[s]]
        for s in names
    }
    baseline = {**outcomes.check(0.0), REFERENCE: outcomes.reference(0.0)}
    compared = [s for s in COMPARED if s in series]
    record = {
        "kernel": bench.kernel.name,
        "planting": planting.label,
        "kind": planting.kind,
        "array": planting.array,
        "baseline": baseline,
        "grid": grid,
        "smallest": smallest_of,
        "below": {s: v for s, v in below.items() if v},
        "ratios": {s: ratio(outcomes, s, smallest_of, max(epsilons), steps) for s in compared},
    }
    if any(record["ratios"][s]["ratio"] != 1.0 for s in compared if "taylor" in s):
        nothing = planting.plants(bench.kernel, 0.0)
        record[FLOOR_WALK] = {
            **_threshold(outcomes, FLOOR_WALK, epsilons, steps),
            "floor": bench.free_floor(nothing),  # with nothing planted
            "rounding": bench.rounding_level(),
        }
    if planting.kind == "element":
        record["index"] = list(planting.index)
        record["g"] = float(bench.gradient[planting.array][planting.index])
    return record
