"""What a live run did not judge, said once per run in every headline (docs/DESIGN.md
§8.2, "Coverage in every headline"): the variants its scope left out (`--variants`), the
devices `[tool.weanj] devices` names that are absent here, and the variants an `ok` leans
on without them (the Julia variants and family references that did not run, whether
found unavailable before the run, no Julia here, or during it, a Julia worker that
refused to start); `--require` makes the last two failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._judge._contract import Fault, first_clause
from ..._judge._judgement import Coverage
from ..._judge._verdict import ExampleJudgement
from ..._model import Catalog
from ..._model._verdicts import Verdict


def coverage(cats: Sequence[Catalog], absent: dict[str, str]) -> Coverage:
    """The run's scope: every registered variant of its examples, those it left out, and
    the absent devices (`{kind: why}`)."""
    left_out = tuple(sorted({name for cat in cats for name in cat.left_out}))
    variants = sum(len(cat.variants) + len(cat.left_out) for cat in cats)
    return Coverage(variants, left_out, dict(absent))


def did_not_run(
    cats: Sequence[Catalog], judged: Sequence[Any], required: set[str]
) -> list[tuple[str, str, bool]]:
    """`[(variant, why, required)]`: the Julia variants and family references that did not
    run (unavailable before the run or found so during it: a Julia worker that would not
    start), and any variant `required` names by name or backend."""
    found = {ej.name: ej for ej in judged}
    out = []
    for cat in cats:
        ej = found.get(cat.name)
        firsts = {members[0].name for members in cat.families().values()}
        for v in cat.variants:
            why = v.unavailable_reason()
            if why is None and ej is not None:
                why = ej.unavailable.get(v.name)
            if why is None:
                continue
            needed = v.name in required or v.backend in required
            if needed or v.backend == "julia" or v.name in firsts:
                out.append((v.name, first_clause(why), needed))
    return out


def device_did_not_run(
    judged: Sequence[ExampleJudgement], devices: tuple[str, ...], required: set[str]
) -> list[tuple[str, str, bool]]:
    """`[(label, why, True)]`: each run on a required device (`--require tpu`) that was
    unavailable there (a platform limit): a failure only then."""
    out = []
    for device in devices:
        if device == "cpu" or device not in required:
            continue
        for ej in judged:
            for label, why in ej.unavailable.items():
                cpu_twin = label[: -len(device) - 1]
                if label.endswith(f"@{device}") and cpu_twin not in ej.unavailable:
                    out.append((label, why.split(" (")[0], True))  # the device's, not the port's
    return out


def absent_did_not_run(absent: dict[str, str], required: set[str]) -> list[tuple[str, str, bool]]:
    """`[(device, why, True)]`: each absent device the run requires (`--require tpu`)."""
    return [(kind, first_clause(why), True) for kind, why in absent.items() if kind in required]


@dataclass
class _Seen:
    """What a run that judged case by case knows of an example: the float64 CPU runs it
    found unavailable (`{label: why}`)."""

    name: str
    unavailable: dict[str, str]


def run_coverage(run: Any) -> tuple[Coverage, list[tuple[str, str, bool]]]:
    """A live `CheckRun`'s coverage and what did not run, from the evaluations its session
    made (`pytest --weanj`, which judges case by case: nothing is evaluated here)."""
    seen = []
    session = run._session
    for plan in run.plans.values():
        if isinstance(plan, Exception) or session is None:
            continue
        found = {}
        for v in plan.catalog.variants:
            outcome = session.known(v, plan.inputs, "float64")
            if isinstance(outcome, Fault) and outcome.verdict == Verdict.UNAVAILABLE:
                found[v.name] = outcome.what
        seen.append(_Seen(plan.catalog.name, found))
    missing = did_not_run(run.catalogs, seen, run.require)
    missing += absent_did_not_run(run.absent, run.require)
    return coverage(run.catalogs, run.absent), missing
