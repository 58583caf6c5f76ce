"""Where two gradient arrays part ways: the elements beyond the tolerance grouped into
connected regions (neighbours along any axis, diagonals included; any rank), largest
first, so that a report can say *where* two ports differ, not only the first elements in
C order (`_compare` finds the elements)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# How many regions a comparison describes (the count of the others is kept).
MAX_REGIONS = 6


@dataclass(frozen=True)
class Region:
    """A connected set of elements beyond the tolerance (neighbours along any axis,
    diagonals included)."""

    count: int
    lo: tuple[int, ...]  # bounding box, 0-based numpy indices, inclusive
    hi: tuple[int, ...]
    worst: tuple[int, ...]  # the element of the largest |Δ| (or the first NaN/Inf)
    worst_rel: float  # |Δ| there / max|g_ref| (inf for NaN/Inf, or where max|g_ref| = 0)
    worst_abs: float | None = None  # |Δ| there (NaN for NaN/Inf; None: not given)

    @property
    def nonfinite(self) -> bool:
        """Whether the worst element is a NaN/Inf (not merely a difference from zero)."""
        if self.worst_abs is not None:
            return not np.isfinite(self.worst_abs)
        return not np.isfinite(self.worst_rel)

    def to_json(self) -> dict[str, Any]:
        finite = np.isfinite(self.worst_rel)
        return {
            "count": self.count,
            "numpy": {"lo": list(self.lo), "hi": list(self.hi), "worst": list(self.worst)},
            "julia": {
                "lo": [i + 1 for i in self.lo],
                "hi": [i + 1 for i in self.hi],
                "worst": [i + 1 for i in self.worst],
            },
            "worst_rel": float(self.worst_rel) if finite else None,
            "worst_abs": (
                None if self.nonfinite or self.worst_abs is None else float(self.worst_abs)
            ),
            "nonfinite": bool(self.nonfinite),
        }


def regions(
    outside: np.ndarray,
    severity: np.ndarray,
    limit: int = MAX_REGIONS,
    delta: np.ndarray | None = None,
) -> tuple[tuple[Region, ...], int]:
    """The connected regions of `outside` (booleans), largest first (then worst), at most
    `limit` of them, and how many there are in all. `severity` ranks elements (the
    relative |Δ|, inf at NaN/Inf); `delta`, where given, is |Δ| (NaN at NaN/Inf)."""
    if not outside.any():
        return (), 0

    def at(worst: tuple[int, ...]) -> float | None:
        return None if delta is None else float(delta[worst])

    if outside.ndim == 0:
        return (Region(1, (), (), (), float(severity), at(())),), 1
    from scipy import ndimage

    structure = ndimage.generate_binary_structure(outside.ndim, outside.ndim)
    labels, total = ndimage.label(outside, structure=structure)
    boxes = ndimage.find_objects(labels)
    counts = np.bincount(labels.ravel())
    ranked = []
    for k, box in enumerate(boxes, start=1):
        part = labels[box] == k
        sev = np.where(part, severity[box], -1.0)
        local = np.unravel_index(int(np.argmax(sev)), part.shape)
        worst = tuple(int(s.start + i) for s, i in zip(box, local, strict=True))
        lo = tuple(int(s.start) for s in box)
        hi = tuple(int(s.stop - 1) for s in box)
        ranked.append(Region(int(counts[k]), lo, hi, worst, float(severity[worst]), at(worst)))
    ranked.sort(key=lambda r: (-r.count, -min(r.worst_rel, 1e308), r.lo))
    return tuple(ranked[:limit]), int(total)
