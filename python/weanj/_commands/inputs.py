"""`weanj inputs regenerate|verify [EXAMPLE...]`: write each example's shared inputs from
its generator (byte-identical every time), or check the committed files against it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .._io import _inputs
from .._model import Catalog
from .._places import places


def regenerate(cats: Sequence[Catalog]) -> list[Path]:
    """Write the shared inputs of each example; **Returns:** the paths."""
    here = places()
    return [_inputs.write_inputs(cat.example, here) for cat in cats]


def verify(cats: Sequence[Catalog]) -> list[tuple[str, bool, str]]:
    """`[(example, ok, message)]`: each committed file against its generator."""
    here = places()
    return [(cat.name, *_inputs.verify_inputs(cat.example, here)) for cat in cats]
