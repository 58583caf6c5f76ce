"""`CHECKS`, the one table of the case table's gradient checks (`GRADIENT_CHECKS`, the
`CaseKind` members with `is_check`; docs/DESIGN.md, "Gradient checks"), each check in a
module of its own (`_check_taylor`, `_check_jvp`). The case table, the workers, the
records, `check.json`, the evidence and every view dispatch through it; none names a
check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..._judge._dot import DotResult
from ..._judge._jvp import JvpResult
from ..._judge._second import SymmetryResult, Taylor2Result
from ..._judge._taylor import TaylorResult
from ..._judge._verdict import CaseJudgement
from ..._model import Example
from ..._model._verdicts import CaseKind
from ._beyond_checks import (
    dot_judgement,
    dot_policy,
    result_only,
    symmetry_judgement,
    symmetry_policy,
    taylor2_judgement,
    taylor2_policy,
)
from ._check_jvp import jvp_beside, jvp_evidence, jvp_judgement, jvp_policy
from ._check_taylor import taylor_beside, taylor_evidence, taylor_judgement, taylor_policy


def no_evidence(j: CaseJudgement, example: Example) -> list[str]:
    """A check that gathers nothing beyond its first pass names nothing."""
    return []


@dataclass(frozen=True)
class GradientCheck:
    """One gradient check of the case table (a `CaseKind` with `is_check`):

    - `judgement(session, case, catalog, inputs, g, array, **fields)`: the check of `g`'s
      `array`, judged (from an evaluation record's numbers where there are some);
    - `policy(example)`: the entries of the evaluation record's check policy it adds
      (`_record_form.check_policy`: a change of one recomputes the evaluation);
    - `result`: the class of the numbers it records, registered in `_judge._checks.RESULTS`
      (`from_json`/`to_json` for its record; its rule, `judge`; its views: `summary`,
      `measure`, `view_json`, and `plot` where it draws one);
    - `beside(numbers)`: whether a record's numbers beside `result` are what it writes;
    - `may_skip`: its record may hold only why it was skipped (`{"skipped": why}`);
    - `evidence(judgement, example)`: what its judgement's numbers show it gathered beyond
      the first pass, said beside its verdict (`CaseJudgement.evidence`).
    """

    kind: CaseKind
    judgement: Callable[..., CaseJudgement]
    policy: Callable[[Example], dict[str, Any]]
    result: type
    beside: Callable[[dict], bool]
    may_skip: bool = False
    evidence: Callable[[CaseJudgement, Example], list[str]] = no_evidence


# one per member of `GRADIENT_CHECKS`, in its order (tests/test_kinds.py holds them equal)
CHECKS: dict[CaseKind, GradientCheck] = {
    CaseKind.TAYLOR: GradientCheck(
        CaseKind.TAYLOR,
        taylor_judgement,
        taylor_policy,
        TaylorResult,
        taylor_beside,
        evidence=taylor_evidence,
    ),
    CaseKind.JVP: GradientCheck(
        CaseKind.JVP,
        jvp_judgement,
        jvp_policy,
        JvpResult,
        jvp_beside,
        may_skip=True,
        evidence=jvp_evidence,
    ),
    # beyond the gradient (`_beyond_checks`): cases only where the example asks for them
    CaseKind.TAYLOR2: GradientCheck(
        CaseKind.TAYLOR2, taylor2_judgement, taylor2_policy, Taylor2Result, result_only, True
    ),
    CaseKind.SYMMETRY: GradientCheck(
        CaseKind.SYMMETRY, symmetry_judgement, symmetry_policy, SymmetryResult, result_only, True
    ),
    CaseKind.DOT: GradientCheck(
        CaseKind.DOT, dot_judgement, dot_policy, DotResult, result_only, True
    ),
}
