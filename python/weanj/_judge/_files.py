"""The judge of a file of the store or of recorded/: current, stale (computed on other
inputs), of the wrong shape or family, NaN/Inf, unreadable or misplaced; each with the
line saying what differs and what rewrites it."""

from __future__ import annotations

from .._model import Gradient, Inputs
from .._model._verdicts import CaseKind, Verdict
from ._verdict import CaseJudgement


def stale_reason(g: Gradient, inputs: Inputs) -> str:
    """What differs between a stale file and the inputs, and what recomputes it."""
    differs = []
    if g.inputs_sha256 not in (inputs.digest, inputs.legacy):
        differs.append(f"inputs sha256 {g.inputs_sha256[:12]}… vs {inputs.digest[:12]}…")
    for name, value in inputs.params.items():
        if g.params.get(name) != value:
            differs.append(f"{name}={g.params.get(name, '?')} vs {name}={value}")
    if not differs:
        differs.append("its key differs")
    return f"{'; '.join(differs)}: {_fix(g)}"


def _fix(g: Gradient) -> str:
    """What rewrites a file that cannot be used as it is."""
    if g.source == "recorded":
        return "re-record it on the current inputs (`pytest --weanj --weanj-record`) or delete it"
    if g.source == "store":
        flag = "" if g.dtype == "float64" else f" --dtype {g.dtype}"
        return f"recompute it with `weanj run {g.example.name} {g.variant}{flag}`"
    return "recompute it on the current inputs or delete it"


def judge_file(
    case: str, g: Gradient, inputs: Inputs, *, family: str | None = None
) -> CaseJudgement:
    """A stored or recorded file: `stale` when computed on other inputs, FAIL when its
    arrays do not have the inputs' shapes or it claims another family than its variant's
    (`family`: the registered one), `NaN/Inf` when it holds any, else ok."""
    fields = {"family": g.family, "subjects": (g.label,)}
    if family is not None and g.family != family:
        reason = (
            f"{g.path} says {g.variant} is of family {g.family!r}, but it is registered in "
            f"family {family!r}; {_fix(g)}"
        )
        return CaseJudgement(case, CaseKind.FILE, Verdict.FAIL, reason=reason, **fields)
    if not inputs.matches(g):
        return CaseJudgement(
            case, CaseKind.FILE, Verdict.STALE, reason=stale_reason(g, inputs), **fields
        )
    for name, shape in inputs.wrt_shapes.items():
        if g.shapes[name] != shape:
            reason = f"{name} has shape {g.shapes[name]}, but the inputs' {name} has {shape}"
            return CaseJudgement(case, CaseKind.FILE, Verdict.FAIL, reason=reason, **fields)
    if not g.finite:
        return CaseJudgement(
            case, CaseKind.FILE, Verdict.NONFINITE, reason=g.nonfinite_text(), **fields
        )
    return CaseJudgement(case, CaseKind.FILE, Verdict.OK, **fields)


def unreadable(case: str, message: str) -> CaseJudgement:
    """A file of the store that cannot be read: FAIL, with the reader's one line."""
    return CaseJudgement(case, CaseKind.FILE, Verdict.FAIL, reason=message)


def misplaced_file(case: str, g: Gradient) -> CaseJudgement:
    """A variant's store file that holds another variant's gradient: FAIL, naming both."""
    reason = (
        f"{g.path} holds a gradient of {g.variant}, not of {g.path.stem} (whose store file it is)"
    )
    return CaseJudgement(case, CaseKind.FILE, Verdict.FAIL, reason=reason)


def comparable(j: CaseJudgement) -> bool:
    """A file judged on its own takes part in pairs: it is current and of the inputs'
    shapes (`ok`, or a fault of its numbers, `NaN/Inf`, which its pairs then say)."""
    return j.verdict == Verdict.OK or j.verdict.fault
