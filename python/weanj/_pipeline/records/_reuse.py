"""What a run says of the evaluations it reused and recomputed: per example (its note,
and the label of each run for `check.json`), and once for the whole run."""

from __future__ import annotations

from ._records import Records


def reuse_line(records: Records) -> str | None:
    """`evaluations: reused 39 of 62, 23 recomputed (…)` for the whole run (None: no
    evaluation was asked of the records)."""
    reused = len(records.reused)
    total = reused + len(records.recomputed)
    if not total:
        return None
    again = f", {total - reused} recomputed" if total > reused else ""
    return (
        f"evaluations: reused {reused} of {total}{again} (weanj check --fresh recomputes them all)"
    )


def example_reuse(records: Records, example: str) -> tuple[dict[str, str], str | None]:
    """`({label: "reused" | "recomputed: why"}, one line)` for one example."""
    out = {
        label: f"reused (from {when})"
        for (ex, label), when in records.reused.items()
        if ex == example
    }
    out.update(
        {
            label: f"recomputed: {why}"
            for (ex, label), why in records.recomputed.items()
            if ex == example
        }
    )
    if not out:
        return out, None
    reused = sum(1 for (ex, _) in records.reused if ex == example)
    changed = {
        label: why
        for (ex, label), why in records.recomputed.items()
        if ex == example and why not in ("no earlier record",)
    }
    line = f"  evaluations: reused {reused} of {len(out)}"
    if reused < len(out):
        line += f", {len(out) - reused} recomputed"
    if changed:
        by_why: dict[str, list[str]] = {}
        for label, why in changed.items():  # one reason once, however many variants
            by_why.setdefault(why, []).append(label)
        shown = "; ".join(
            f"{', '.join(labels[:4])}{' …' if len(labels) > 4 else ''}: recomputed — {why}"
            for why, labels in by_why.items()
        )
        line += f" ({shown})"
    return out, line
