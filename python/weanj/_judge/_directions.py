"""The directions every gradient check moves along, and what it moves (docs/DESIGN.md,
"Gradient checks").

`⟨g, dx⟩` is the real inner product `Re Σ conj(g)·dx`, so complex arrays (with g in
weanj's convention `∂L/∂Re z + i·∂L/∂Im z`) are checked like pairs of real arrays. Every
check keeps its directions inside the example's kink mask (`checked_masks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._errors import InputError
from .._model import Example


def inner(g: np.ndarray, dx: np.ndarray) -> float:
    """`Re Σ conj(g)·dx`: the real inner product (complex arrays as pairs of reals)."""
    return float(np.real(np.vdot(np.asarray(g), np.asarray(dx))))


def random_direction(
    rng: np.random.Generator, x: np.ndarray, mask: np.ndarray | None = None
) -> np.ndarray:
    """A standard normal direction shaped like `x` (complex for complex `x`), zero
    outside `mask`, of unit 2-norm."""
    shape = np.shape(x)
    v = rng.standard_normal(shape)
    if np.iscomplexobj(x):
        v = v + 1j * rng.standard_normal(shape)
    if mask is not None:
        v = v * mask
    norm = float(np.sqrt(np.sum(np.abs(v) ** 2)))
    return v / norm if norm > 0 else v


# --- kink masks ------------------------------------------------------------------------


def checked_masks(
    ex: Example, given: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The kink mask of every wrt array (True: may be perturbed; all True where the
    example's mask function names none), from what that function returned, or an
    `InputError` saying what is wrong with it."""
    unknown = set(given) - set(ex.wrt_names)
    if unknown:
        raise InputError(f"{ex.name}: the kink mask names arrays {sorted(unknown)} outside wrt")
    masks = {}
    for name in ex.wrt_names:
        m = np.asarray(given.get(name, np.ones(np.shape(arrays[name]), bool)), bool)
        if m.shape != np.shape(arrays[name]):
            raise InputError(
                f"{ex.name}: the kink mask of {name} has shape "
                f"{m.shape}, not {np.shape(arrays[name])}"
            )
        masks[name] = m
    return masks


# --- beyond the gradient (docs/outputs.md) ------------------------------------------------


def output_weights(ex: Example, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Each output's seeded weight `w` of the dot-product test (`⟨w, J·v⟩` against
    `⟨Jᵀ·w, v⟩`), of its shape, unit norm, seeded by the output's position: every variant
    of a family (and the Julia reference) is weighted alike, so a borrowed forward mode
    and a comparison of `Jᵀ·w` across variants mean the same."""
    return {
        name: random_direction(
            np.random.default_rng([3, ex.outputs.index(name)]), np.zeros(tuple(shapes[name]))
        )
        for name in ex.outputs
    }


def second_direction(ex: Example, array: str, x: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The second seeded direction `u` of `array` at the second order, apart from its jvp
    direction `v`: the symmetry check compares `⟨u, H·v⟩` with `⟨v, H·u⟩`, and the
    second-order Taylor test reads the gradient's remainder along `u`."""
    rng = np.random.default_rng([2, ex.wrt_names.index(array)])
    return random_direction(rng, x, mask)
