"""`weanj bench`'s records as a Markdown table (times in ms, scratch memory in MiB), with
the times a Julia worker measured inside itself beside its round trips."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._model import Example


def _inside_cells(inside: Any, cell: Callable) -> str:
    if not isinstance(inside, dict):
        return " – | – |"
    return f" {cell(inside.get('forward_s'), 1e3, 3)} | {cell(inside.get('grad_s'), 1e3, 3)} |"


def markdown_table(ex: Example, records: Sequence[dict[str, Any]]) -> str:
    """The timed records as a Markdown table (times in ms, scratch memory in MiB)."""

    def cell(value, scale, digits):
        return "–" if value is None else f"{value * scale:.{digits}f}"

    size_name = ex.sizes.name if ex.sizes is not None else None
    columns = ([size_name] if size_name else []) + list(ex.param_names)
    if any(r.get("devices", 1) != 1 for r in records):
        columns.append("devices")
    # A Julia variant's round trips, and beside them the times measured inside its worker
    inside = any(isinstance(r.get("timed_inside"), dict) for r in records)
    lines = [
        "| variant | device | dtype | "
        + "".join(f"{c} | " for c in columns)
        + "forward [ms] | gradient [ms] | gradient/forward | first call [s] | scratch [MiB] |"
        + (" forward inside [ms] | gradient inside [ms] |" if inside else ""),
        "| --- | --- | --- | "
        + "---: | " * len(columns)
        + "---: | ---: | ---: | ---: | ---: |"
        + (" ---: | ---: |" if inside else ""),
    ]
    for r in records:
        if not r.get("timed", r.get("forward_s") is not None):
            continue
        ratio = r["grad_s"] / r["forward_s"] if r["forward_s"] else None
        lines.append(
            f"| `{r['variant']}` | {r['device']}{' (stand-in)' if r.get('standin') else ''} | "
            f"{r['dtype']} | "
            + "".join(f"{r.get(c, '–')} | " for c in columns)
            + f"{cell(r['forward_s'], 1e3, 3)} | {cell(r['grad_s'], 1e3, 3)} | "
            f"{cell(ratio, 1, 1)} | {cell(r['compile_s'], 1, 2)} | "
            f"{cell(r['peak_mem_bytes'], 2**-20, 2)} |"
            + (_inside_cells(r.get("timed_inside"), cell) if inside else "")
        )
    return "\n".join(lines)
