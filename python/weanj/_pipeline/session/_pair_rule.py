"""How two gradients of one array are judged against each other, whoever asks: the case
table's pairs (`_cases`), a device run's precision-or-bug re-run (`_device_cases`), the
forward mode's donor (`_donors`), and bisect and fuzz on other inputs."""

from __future__ import annotations

from typing import Any

from ..._judge import _verdict as judge
from ..._judge._beyond import judge_beyond
from ..._judge._verdict import CaseJudgement
from ..._model import Catalog, Gradient, Inputs
from ..._model._verdicts import Verdict


def judge_pair_of(
    catalog: Catalog,
    inputs: Inputs,
    case_id: str,
    a: Gradient,
    b: Gradient,
    array: str,
    session: Any,
    *,
    info: bool = False,
    declared: bool = False,
) -> CaseJudgement:
    """How a pair is judged, whoever asks: a declared kink pair away from the kinks of
    these inputs, any other by the tolerance policy; with `declared` (the case table),
    held to the pair's `weanj.Expected` declarations."""
    why = catalog.kink_difference(a.of, b.of)
    keep = session.masks(catalog.example, inputs)[array] if why is not None else None
    expected = catalog.declared_pair(a.of, b.of) if declared and not info else ()

    def judged(rounding: bool) -> CaseJudgement:
        return judge.judge_pair(
            case_id,
            a,
            b,
            array,
            kinks=why,
            keep=keep,
            info=info,
            expected=expected,
            arrays=inputs.arrays,
            rounding=rounding,
        )

    # Within the relative tolerance everywhere, the floors decide nothing: judged without
    # them, so the numbers shown are the same whether or not the levels were gathered for
    # another pair. Beyond it, the runs' rounding levels are gathered and the floors apply.
    j = judged(rounding=False)
    c = j.comparison
    if j.verdict != Verdict.INFO and c is not None and c.beyond_tolerance:
        session.levels(a)
        session.levels(b)
        j = judged(rounding=True)
    return j


def judge_beyond_of(
    catalog: Catalog,
    inputs: Inputs,
    case: Any,
    a: Gradient,
    b: Gradient,
    session: Any,
    *,
    info: bool = False,
) -> CaseJudgement:
    """An output's or a Hessian-vector product's pair, judged as a gradient's pair is
    (`judge_pair_of`; `_judge._beyond`): without the floors where the relative tolerance
    decides, with the runs' rounding levels (gathered now) where it does not."""
    expected = () if info else catalog.declared_pair(a.of, b.of)

    def judged(rounding: bool) -> CaseJudgement:
        return judge_beyond(
            case.id,
            case.kind,
            a,
            b,
            case.array,
            info=info,
            expected=expected,
            arrays=inputs.arrays,
            rounding=rounding,
        )

    j = judged(rounding=False)
    c = j.comparison
    if j.verdict != Verdict.INFO and c is not None and c.beyond_tolerance:
        session.levels(a)
        session.levels(b)
        j = judged(rounding=True)
    return j
