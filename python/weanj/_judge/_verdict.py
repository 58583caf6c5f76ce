"""The one judge: every verdict weanj gives is decided here.

A `Judgement` is data: the case it answers, its verdict, and the numbers behind it
(an `ArrayComparison`, a `TaylorResult`, a `DirectionalResult`, a reason). `weanj
check`, `weanj diff`, `weanj report` and `pytest --weanj` only render judgements
(`_report`); none of them decides anything itself.

Verdicts (docs/DESIGN.md, "The judge"):

- `ok`: within the tolerance policy / the check passed;
- `FAIL`: outside it, a check that failed, a file that cannot be read, a run that raised;
- `info`: two different families (different algorithms), compared for information;
- `kinks`: a pair declared with `weanj.differ_at_kinks` that agrees away from the kinks;
- `NaN/Inf`: a NaN or Inf in a loss or gradient;
- `stale`: a file computed on other inputs, parameters or dtype (reported with the command
  that recomputes it, never compared);
- `timeout`: a run that exceeded its time limit;
- `skipped`: what cannot be judged here, with the reason.

FAIL, NaN/Inf and timeout are failures; the others are not.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._io._inputs import Inputs
from .._model import Gradient
from ._compare import ArrayComparison, compare
from ._gradcheck import DirectionalResult, TaylorResult


class Verdict(str, enum.Enum):
    OK = "ok"
    FAIL = "FAIL"
    INFO = "info"
    KINKS = "kinks"
    NONFINITE = "NaN/Inf"
    STALE = "stale"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"

    @property
    def failing(self) -> bool:
        return self in (Verdict.FAIL, Verdict.NONFINITE, Verdict.TIMEOUT)

    def __str__(self) -> str:
        return self.value


# From the worst down: which verdict a cell of several judgements shows.
SEVERITY = ("FAIL", "NaN/Inf", "timeout", "kinks", "skipped", "ok")


def is_failing(verdict: str) -> bool:
    """Whether a verdict, as files and report rows hold it (text), is a failure."""
    return any(verdict == v.value and v.failing for v in Verdict)


@dataclass
class Judgement:
    """The answer to one case of the case table."""

    case: str  # the case id (also the pytest --weanj item id)
    kind: str  # "pair", "taylor", "jvp", "file"
    verdict: Verdict
    family: str = ""
    subjects: tuple[str, ...] = ()  # labels: (reference, other) for pairs
    array: str | None = None
    reason: str = ""  # why: the skip, the error, what is stale and how to fix it
    comparison: ArrayComparison | None = None
    away: ArrayComparison | None = None  # a declared kink pair, away from the kinks
    kinks: str | None = None  # why the pair may differ at the kinks
    taylor: TaylorResult | None = None
    directional: DirectionalResult | None = None
    info: dict[str, Any] = field(default_factory=dict)  # extra numbers (central differences)

    @property
    def failed(self) -> bool:
        return self.verdict.failing


def skipped(case: str, kind: str, reason: str, **what: Any) -> Judgement:
    return Judgement(case, kind, Verdict.SKIPPED, reason=reason, **what)


def not_evaluated(
    case: str, kind: str, label: str, error: str, *, timed_out: bool, **what: Any
) -> Judgement:
    """A case whose subject could not be computed (it raised, or ran out of time)."""
    verdict = Verdict.TIMEOUT if timed_out else Verdict.FAIL
    return Judgement(case, kind, verdict, reason=f"{label}: {error}", **what)


# --- pairs -----------------------------------------------------------------------------


def judge_pair(
    case: str,
    a: Gradient,
    b: Gradient,
    array: str,
    *,
    kinks: str | None = None,
    keep: np.ndarray | None = None,
) -> Judgement:
    """`b` against the reference `a`, on one gradient array. Different families give
    `info`; a declared kink pair (`kinks`, with the mask `keep` of entries away from the
    kinks) that agrees away from them gives `kinks`."""
    what = {"family": a.family, "subjects": (a.label, b.label), "array": array}
    if a.family != b.family:
        what["family"] = f"{a.family} vs {b.family}"
    ga, gb = np.asarray(a.gradients[array]), np.asarray(b.gradients[array])
    if ga.shape != gb.shape:
        reason = f"{array} has shape {gb.shape} in {b.label} but {ga.shape} in {a.label}"
        return Judgement(case, "pair", Verdict.FAIL, reason=reason, **what)
    c = compare(ga, gb, a.loss, b.loss)
    if c.nonfinite:
        return Judgement(
            case, "pair", Verdict.NONFINITE, reason=_nonfinite_reason(a, b), comparison=c, **what
        )
    if a.family != b.family:
        return Judgement(case, "pair", Verdict.INFO, comparison=c, **what)
    if c.agree:
        return Judgement(case, "pair", Verdict.OK, comparison=c, **what)
    if kinks is not None and keep is not None:
        away = compare(ga, gb, a.loss, b.loss, keep=keep)
        if away.agree:
            return Judgement(
                case, "pair", Verdict.KINKS, comparison=c, away=away, kinks=kinks, **what
            )
    return Judgement(case, "pair", Verdict.FAIL, comparison=c, kinks=kinks, **what)


def _nonfinite_reason(a: Gradient, b: Gradient) -> str:
    for g, other in ((b, a), (a, b)):
        if not g.finite:
            overflow = g.dtype == "float32" and other.dtype == "float64" and other.finite
            head = "float32 overflow: " if overflow else ""
            return f"{head}{g.label}: {g.nonfinite_text()}"
    return "NaN/Inf in the comparison"


# --- gradient checks -------------------------------------------------------------------------


def judge_taylor(case: str, result: TaylorResult, **what: Any) -> Judgement:
    """ok when, along every direction, the rates at the smallest resolved steps are at
    least the policy's (about 2), or when every remainder is at rounding level (the loss
    is linear along the direction); FAIL with the rates otherwise."""
    what.setdefault("array", result.array)
    if not result.directions:
        return skipped(
            case,
            "taylor",
            f"the kink mask leaves no entry of {result.array} to perturb",
            taylor=result,
            **what,
        )
    if any(d.nonfinite for d in result.directions):
        return Judgement(
            case,
            "taylor",
            Verdict.NONFINITE,
            reason="a loss along a direction is NaN/Inf",
            taylor=result,
            **what,
        )
    bound = result.policy.rate
    failing = [rates for rates in result.asymptotic if rates and min(rates) < bound]
    verdict = Verdict.FAIL if failing else Verdict.OK
    reason = ""
    if failing:
        reason = (
            f"remainders fall with rate(s) {', '.join(f'{r:.2f}' for r in failing[0])} at the "
            f"smallest steps, below {bound:g}: the gradient of {result.array} is not the "
            "loss's derivative (a correct one gives 2)"
        )
    elif not any(d.resolved for d in result.directions):
        reason = (
            "every remainder is at rounding level (the loss is linear along the directions at "
            f"this step); a relative gradient error above {result.sensitivity:.0e} would have shown"
        )
    return Judgement(case, "taylor", verdict, reason=reason, taylor=result, **what)


def judge_directional(case: str, result: DirectionalResult, **what: Any) -> Judgement:
    """ok when `|jvp − ⟨g, dx⟩| ≤ tolerance·Σ|g_i dx_i|`."""
    what.setdefault("array", result.array)
    if not (math.isfinite(result.forward) and math.isfinite(result.reverse)):
        return Judgement(
            case,
            "jvp",
            Verdict.NONFINITE,
            reason="NaN/Inf in jvp or ⟨g, dx⟩",
            directional=result,
            **what,
        )
    if result.error <= result.tolerance:
        return Judgement(case, "jvp", Verdict.OK, directional=result, **what)
    reason = (
        f"forward mode ({result.by}) gives {result.forward:.15g}, ⟨g, dx⟩ {result.reverse:.15g}: "
        f"{result.error:.1e} relative, above {result.tolerance:g}"
    )
    return Judgement(case, "jvp", Verdict.FAIL, reason=reason, directional=result, **what)


# --- files ---------------------------------------------------------------------------------


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
    if g.source == "recorded":
        fix = (
            "re-record it on the current inputs (docs: Recording a reference gradient) or delete it"
        )
    elif g.source == "store":
        flag = "" if g.dtype == "float64" else f" --dtype {g.dtype}"
        fix = f"recompute it with `weanj run {g.example.name} {g.variant}{flag}`"
    else:
        fix = "recompute it on the current inputs or delete it"
    return f"{'; '.join(differs)}: {fix}"


def judge_file(case: str, g: Gradient, inputs: Inputs) -> Judgement:
    """A stored or recorded file: `stale` when computed on other inputs, FAIL when its
    arrays do not have the inputs' shapes, `NaN/Inf` when it holds any, else ok."""
    what = {"family": g.family, "subjects": (g.label,)}
    if not inputs.matches(g):
        return Judgement(case, "file", Verdict.STALE, reason=stale_reason(g, inputs), **what)
    for name, shape in inputs.wrt_shapes.items():
        if g.shapes[name] != shape:
            reason = f"{name} has shape {g.shapes[name]}, but the inputs' {name} has {shape}"
            return Judgement(case, "file", Verdict.FAIL, reason=reason, **what)
    if not g.finite:
        return Judgement(case, "file", Verdict.NONFINITE, reason=g.nonfinite_text(), **what)
    return Judgement(case, "file", Verdict.OK, **what)


def unreadable(case: str, message: str) -> Judgement:
    """A file of the store that cannot be read: FAIL, with the reader's one line."""
    return Judgement(case, "file", Verdict.FAIL, reason=message)


# --- an example's judgement ------------------------------------------------------------------


@dataclass
class ExampleJudgement:
    """Every judgement of one example, in case-table order, with what they judged."""

    example: Any  # the Example
    inputs: Inputs | None
    judgements: list[Judgement] = field(default_factory=list)
    subjects: dict[str, Gradient] = field(default_factory=dict)  # label: what was judged
    errors: dict[str, str] = field(default_factory=dict)  # label: why it could not be computed
    skipped: dict[str, str] = field(default_factory=dict)  # label: why it cannot run here
    timed_out: set[str] = field(default_factory=set)
    dtypes: tuple[str, ...] = ("float64",)
    error: str | None = None  # the example could not be judged at all (its inputs)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return self.example.name

    @property
    def failures(self) -> list[Judgement]:
        return [j for j in self.judgements if j.failed]

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failures and not self.errors

    @property
    def verdict(self) -> Verdict:
        if self.error is not None or self.errors:
            return (
                Verdict.TIMEOUT
                if self.timed_out and len(self.timed_out) == len(self.errors)
                else Verdict.FAIL
            )
        failing = [j.verdict for j in self.failures]
        if not failing:
            return Verdict.OK
        return Verdict.FAIL if Verdict.FAIL in failing else failing[0]

    def of_kind(self, kind: str) -> list[Judgement]:
        return [j for j in self.judgements if j.kind == kind]

    def by_case(self) -> dict[str, Judgement]:
        return {j.case: j for j in self.judgements}
