"""`weanj list [EXAMPLE...]`: the project's examples, their arrays and parameters, their
families and which variants can run here."""

from __future__ import annotations

from collections.abc import Sequence

from .._backends._julia import gradient_by
from .._model import Catalog
from .._project import ProjectConfig


def listing(cats: Sequence[Catalog], project: ProjectConfig) -> list[str]:
    """The lines `weanj list` prints: the project (`project`, the one the catalogs were
    loaded from), then each catalog's example and variants."""
    out = [project.describe()]
    for cat in cats:
        ex = cat.example
        out.append(f"{ex.name}: {ex.title}" if ex.title else ex.name)
        out.append(f"  arrays: {'; '.join(a.describe() for a in ex.specs)}")
        params = ", ".join(f"{p.name}={p.default} ({p.range_text})" for p in ex.params) or "none"
        out.append(f"  gradient wrt {', '.join(ex.wrt_names)}; parameters: {params}")
        missing = cat.unavailable()
        for family, members in cat.families().items():
            out.append(f"  family {family}:")
            for v in members:
                why = missing.get(v.name)
                by = gradient_by(v)  # a Julia variant: its AD package, or "hand-written"
                said = "available" if why is None else "unavailable: " + why
                out.append(f"    {v.name:<24} " + (f"(gradient: {by}) " if by else "") + said)
    return out
