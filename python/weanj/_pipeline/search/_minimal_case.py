"""The minimal case: one input on which two ports part ways, as `weanj bisect` and `weanj
fuzz` find it, write it and say how to reproduce it (one machine, two searches).

A `FuzzInput` is the inputs (arrays and parameters) and how they were made: the seed of the
generator that made the arrays, the size of the example's `Sizes` (None: not made at a
size), and the words a report says of it ("declared size 101", "the shared inputs",
"strategy ties"). Written, it is an ordinary inputs file under `results/EX/cases/`
(atomically, byte-identical each time), which `weanj run --inputs` reads; its reproduce
commands are the two runs on that file and the pair judged on it alone.

A pair declared to differ (`weanj.Expected`) is searched for where it differs beyond its
declaration (`_judge._expected.beyond_declaration`): both searches say so first, in one
line with the declaration's reason (`declared_line`).

Fuzz inputs are ordered (`FuzzInput.order`), smaller being simpler: fewer array elements, then
parameters nearer their defaults, then the generator's smaller seed; between equals the
one found first is kept. fuzz reports the smallest failing case of that order; bisect's
searches find the smallest value and size directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._errors import InputError
from ..._io import _inputs
from ..._model import Catalog, Example, Inputs, VariantRun, from_arrays
from ..._places import Places
from ..evaluation._evaluate import reproduce_command

SHOWN_ELEMENTS = 24  # a case this small is printed in full


@dataclass(frozen=True)
class FuzzInput:
    """One input two ports are judged on, and how it was made.

    **Arguments:**
    - `inputs`: the arrays and parameters (once written: read back from the case file).
    - `seed`: the seed of the generator that made the arrays (0 for a strategy's draw).
    - `size`: the value of the example's `Sizes` it was made at; None: another way.
    - `source`: how a report says it was made ("the shared inputs", "declared size 16",
      "strategy ties"); None: drawn from the generator, said as its seed.
    """

    inputs: Inputs
    seed: int
    size: int | None = None
    source: str | None = None

    @property
    def example(self) -> Example:
        return self.inputs.example

    @property
    def path(self) -> Path | None:
        """The case file, once written (`write`)."""
        return self.inputs.path

    @property
    def elements(self) -> int:
        return sum(int(a.size) for a in self.inputs.arrays.values())

    def order(self) -> tuple[int, float, int]:
        """Smaller is simpler: (array elements, the parameters' distance to their defaults,
        the generator's seed). The distance adds |value − default| over the parameters (a
        flipped bool counts 1)."""
        ex = self.example
        distance = sum(
            abs(float(v) - float(ex.param(k).default)) for k, v in self.inputs.params.items()
        )
        return (self.elements, distance, self.seed)

    def describe(self) -> str:
        """`m = 4, n = 7, seed 0`, `n = 40, T = 20, the shared inputs`."""
        return f"{self.inputs.sizes_text()}, {self.source or f'seed {self.seed}'}"

    def values_lines(self, indent: str) -> list[str]:
        """The arrays themselves, when the case is small enough to read."""
        if self.elements > SHOWN_ELEMENTS:
            return []
        lines = []
        for k, a in self.inputs.arrays.items():
            head = f"{indent}{k} = "  # continuation rows line up under the first
            lines.extend((head + np.array2string(a, separator=", ", prefix=head)).splitlines())
        return lines

    def write(self, here: Places, stem: str) -> FuzzInput:
        """Write the case as `results/EX/cases/<stem>.h5` (an inputs file, the parameters
        among its attributes). **Returns** the case on the file, read back (what its
        reproduce commands name)."""
        ex = self.example
        path = _inputs.write_inputs_file(
            self.inputs, here.case_file(ex.name, stem), seed=self.seed, foreign="aside"
        )
        written = _inputs.read_inputs(ex, here, path)
        return FuzzInput(written, self.seed, self.size, self.source)

    def reproduce(self, a: VariantRun, b: VariantRun, here: Places) -> list[str]:
        """The commands, from the project root, that recompute the runs A and B (each in
        its dtype, on its device) on the written case and judge them on it alone."""
        if self.path is None:
            raise ValueError("a case is reproduced from its file: write it first")
        shown = here.shown(self.path)
        return [
            reproduce_command(a.variant, self.inputs, a.dtype, here.shown, a.device),
            reproduce_command(b.variant, self.inputs, b.dtype, here.shown, b.device),
            f"weanj bisect {self.example.name} {a.label} {b.label} --inputs {shown}",
        ]


def sized_case(
    ex: Example, size: int, params: Mapping[str, Any], seed: int, source: str | None = None
) -> FuzzInput | str:
    """The inputs of the example's `Sizes` generator at `size` with `params`, or why there
    are none ("refused (...)": the example's `validate`; "not generated (...)")."""
    try:
        arrays = ex.sizes.generate(seed, size)
        inputs = from_arrays(ex, arrays, dict(params), what=f"{ex.sizes.name} = {size}")
    except InputError as e:
        return f"refused ({e})"
    except Exception as e:  # a generator that does not make this size
        return f"not generated ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]})"
    return FuzzInput(inputs, seed, size, source)


def declared_line(cat: Catalog, a: VariantRun, b: VariantRun) -> str | None:
    """`A~B is declared to differ (reason): ...`, for a pair declared with
    `weanj.Expected` (None for any other): what bisect and fuzz say before they search."""
    reasons = dict.fromkeys(e.reason for e in cat.declared_pair(a.variant, b.variant))
    if not reasons:
        return None
    return (
        f"{a.label}~{b.label} is declared to differ ({'; '.join(reasons)}): searching for "
        "where it differs beyond the declaration"
    )
