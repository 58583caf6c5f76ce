"""What an example declares about checking and sweeping it: the sizes `weanj bench` sweeps
(`Sizes`), central differences and the kink mask (`FDPolicy`), and the Taylor test of its
gradients (`TaylorPolicy`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import DefinitionError

# The sizes tried one by one before powers of two: where odd sizes and n = 1 live.
SMALL_SIZES = tuple(range(1, 9))


@dataclass(frozen=True)
class Sizes:
    """The problem size `weanj bench` sweeps (e.g. the grid size n).

    - `generate`: `(seed, size) -> {array name: array}`, the inputs at that size.
    - `values`: the default sizes of the sweep.
    - `name`: what the size is called in reports and records (`"n"`, `"P"`, ...).
    """

    generate: Callable[[int, int], Mapping[str, Any]]
    values: tuple[int, ...]
    name: str = "n"
    help: str = ""

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(sorted({int(v) for v in self.values})))
        if not self.values or self.values[0] < 1:
            raise DefinitionError(f"sizes {self.name}: values must be positive, got {self.values}")

    def candidates(self) -> tuple[int, ...]:
        """The sizes `weanj bisect` tries in order and `weanj fuzz` draws from: 1 … 8 (where
        odd sizes and n = 1 live), each power of two from 16 with its odd neighbours (15,
        16, 17, 31, 32, 33, ...) up to the largest declared size, and every declared size."""
        top = max(self.values[-1], SMALL_SIZES[-1])
        out = set(SMALL_SIZES) | set(self.values)
        s = 2 * SMALL_SIZES[-1]
        while s - 1 <= top:
            out.update(v for v in (s - 1, s, s + 1) if v <= top)
            s *= 2
        return tuple(sorted(out))


@dataclass(frozen=True)
class FDPolicy:
    """Central differences (information) and the example's kink mask.

    Central differences along `directions` random unit directions with step `step`; the
    reports show the relative error and flag it above `threshold`. The verdict on a
    gradient is the Taylor test's (`TaylorPolicy`), not this one's.

    - `mask`: `(arrays, params) -> {wrt name: bool array}`: True marks the entries that
      may be perturbed, False the entries next to a kink of the loss (where one-sided
      slopes differ). Every gradient check (Taylor, jvp, central differences) keeps its
      directions inside the mask, and a pair declared with `weanj.differ_at_kinks` is
      judged outside it. None: no kinks.
    - `why`: one line saying what the mask leaves out and why, for the reports.
    """

    directions: int = 10
    step: float = 1e-2
    threshold: float = 1e-6
    mask: Callable[[Mapping[str, np.ndarray], Mapping[str, Any]], Mapping[str, Any]] | None = None
    why: str = ""

    def __post_init__(self):
        if self.directions < 1 or not self.step > 0 or not self.threshold > 0:
            raise DefinitionError("FDPolicy needs directions >= 1, step > 0 and threshold > 0")


@dataclass(frozen=True)
class TaylorPolicy:
    """The Taylor remainder test of one gradient array (docs/DESIGN.md, "Gradient checks").

    Along `directions` seeded random unit directions dx (inside the kink mask; the array
    moves alone, the others stay), the remainder `|L(x + h dx) − L(x) − h⟨g, dx⟩|` is
    computed for h = h0/2^k down to rounding level. A correct gradient's remainder falls
    as h² (rate 2), a wrong one's as h: the gradient passes when the rates at the
    smallest steps above rounding level are at least `rate`.

    - `h0`: the first step; None: 1e-2·‖x‖₂ (the array's magnitude). Give a smaller one
      where the loss has kinks closer than that along a direction.
    - `directions`: one by default (about four losses each, three for each further one):
      a further direction gives a gradient error confined to a few entries another chance
      to lie along it (`weanj.taylor_test` takes two).
    """

    h0: float | None = None
    directions: int = 1
    rate: float = 1.8
    max_steps: int = 40
    seed: int = 0

    def __post_init__(self):
        if self.h0 is not None and not (np.isfinite(self.h0) and self.h0 > 0):
            raise DefinitionError(f"TaylorPolicy: h0 must be a positive number, got {self.h0!r}")
        if self.directions < 1 or self.max_steps < 3 or not 1.0 < self.rate <= 2.0:
            raise DefinitionError(
                "TaylorPolicy needs directions >= 1, max_steps >= 3 and 1 < rate <= 2"
            )
