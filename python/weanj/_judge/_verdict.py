"""The one judge: every verdict weanj gives is decided here, from numbers, running nothing.

A `CaseJudgement` is data: the case it answers (one row of the case table), its
verdict, and the numbers behind it (an `ArrayComparison`; a gradient check's `result`,
a `TaylorResult`, a `JvpResult` or any type registered in `_checks.RESULTS`; a
reason). `weanj check`, `weanj diff`, `weanj report`, `weanj
bisect`, `weanj fuzz` and `pytest --weanj` only render judgements (`_report`).

The verdicts themselves (label, colour, whether each fails or agrees, their rank) are
defined once, in `_kinds.Verdict`; a declared expectation (`weanj.Expected`) is applied
to a case's judgement here too (`_expected`), so `expected` and `unexpectedly ok` are
the judge's, like every other verdict.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._model import Expected, Gradient, Inputs
from .._model._verdicts import CaseKind, Verdict
from .._x64 import X64
from ._checks import CheckResult
from ._compare import ArrayComparison, compare
from ._contract import Fault
from ._expected import declared_pair
from ._information import CentralDifferences, DeviceComparison, Masked, information_json
from ._jvp import JvpResult
from ._policy import pair_floors
from ._taylor import TaylorResult

# How the evidence of a float32 run that differs from its float64 run as float32's own
# rounding does begins (`_pipeline.engine._evidence`; the views show such a run's digits).
PRECISION = "float32 keeps"


@dataclass
class CaseJudgement:
    """The answer to one case of the case table."""

    case: str  # the case id (also the pytest --weanj item id)
    kind: CaseKind
    verdict: Verdict
    family: str = ""
    subjects: tuple[str, ...] = ()  # labels: (reference, other) for pairs
    array: str | None = None
    reason: str = ""  # why: the skip, the fault, what is stale and how to fix it
    command: str = ""  # the command that reproduces a fault
    blocked_by: str | None = None  # not compared: this subject is at fault
    comparison: ArrayComparison | None = None
    away: ArrayComparison | None = None  # a declared kink pair, away from the kinks
    kinks: str | None = None  # why the pair may differ at the kinks
    result: CheckResult | None = None  # a gradient check's numbers (a type of `RESULTS`)
    # for information (`_information`; in files, the mapping `info`): a run's JAX x64
    # configuration, a gradient check's kink mask and central differences, a device pair's
    # device and matmul precision
    x64: X64 | None = None
    masked: Masked | None = None
    fd: CentralDifferences | None = None
    device: DeviceComparison | None = None
    expected: Expected | None = None  # the declaration it was held to (`weanj.Expected`)
    departure: str = ""  # how it differs from that declaration ("" when as declared)
    declared: str = ""  # where it declares a difference, on these inputs (`x[0]`)
    # the evidence gathered beyond a check's first pass to decide it (the runs' rounding
    # levels, central differences, a shared check split per array, the walk of every step)
    evidence: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.verdict.failing

    @property
    def info(self) -> dict[str, Any]:
        """Its information as files hold it under `info` (read-only: a copy,
        `_information.information_json`)."""
        return information_json(self)

    @property
    def taylor(self) -> TaylorResult | None:
        """A Taylor test's numbers (its `result`), None for any other case."""
        return self.result if isinstance(self.result, TaylorResult) else None

    @property
    def jvp(self) -> JvpResult | None:
        """A jvp check's numbers (its `result`), None for any other case."""
        return self.result if isinstance(self.result, JvpResult) else None


def skipped(case: str, kind: CaseKind, reason: str, **fields: Any) -> CaseJudgement:
    return CaseJudgement(case, kind, Verdict.SKIPPED, reason=reason, **fields)


def not_compared(case: str, kind: CaseKind, fault: CaseJudgement, **fields: Any) -> CaseJudgement:
    """A case one of whose subjects is at fault: skipped, naming it (the fault itself is
    that subject's `run` judgement, listed once)."""
    label = fault.subjects[0]
    reason = f"not compared: {label} is {_state(fault.verdict)}"
    return CaseJudgement(case, kind, Verdict.SKIPPED, reason=reason, blocked_by=label, **fields)


def _state(verdict: Verdict) -> str:
    return {
        Verdict.ERROR: "in error",
        Verdict.TIMEOUT: "out of time",
        Verdict.UNAVAILABLE: "unavailable here",
    }.get(verdict, str(verdict))


# --- a run ------------------------------------------------------------------------------


def judge_run(
    case: str, label: str, outcome: Gradient | Fault, *, family: str = "", wider: Any = None
) -> CaseJudgement:
    """A variant's evaluation at one dtype: `ok`, or its fault's verdict with the line
    saying what and the command that reproduces it. `wider`: the same variant's float64
    outcome, for a float32 run (a float32-only NaN/Inf is named a float32 overflow)."""
    fields = {"family": family, "subjects": (label,)}
    if isinstance(outcome, Fault):
        reason = outcome.what
        if outcome.verdict == Verdict.NONFINITE and isinstance(wider, Gradient) and wider.finite:
            reason = f"float32 overflow: {reason}"
        return CaseJudgement(
            case,
            CaseKind.RUN,
            Verdict(outcome.verdict),
            reason=reason,
            command=outcome.command,
            **fields,
        )
    return CaseJudgement(case, CaseKind.RUN, Verdict.OK, **fields)


# --- pairs -----------------------------------------------------------------------------


def judge_pair(
    case: str,
    a: Gradient,
    b: Gradient,
    array: str,
    *,
    kinks: str | None = None,
    keep: np.ndarray | None = None,
    info: bool = False,
    expected: tuple[Expected, ...] = (),
    arrays: Any = None,
    rounding: bool = True,
) -> CaseJudgement:
    """`b` against the reference `a`, on one gradient array. `info`: two families, for
    information; a declared kink pair (`kinks`, with the mask `keep` of entries away from
    the kinks) that agrees away from them gives `kinks`; a pair declared with
    `weanj.Expected` (`expected`, on the inputs' `arrays`) is held to its declarations
    (`_expected`). The floors of the tolerance come from the runs' rounding noise
    (`Gradient.noise`, `_policy.floor_of`); without `rounding`, the relative tolerance
    alone (what decides a pair whose differences are all within it, whatever the floors:
    a check gathers the levels only where one is beyond, `ArrayComparison.beyond_tolerance`)."""
    ga, gb = np.asarray(a.gradients[array]), np.asarray(b.gradients[array])
    if ga.shape != gb.shape:
        reason = f"{array} has shape {gb.shape} in {b.label} but {ga.shape} in {a.label}"
        fields = _pair_fields(a, b, array, info)
        j = CaseJudgement(case, CaseKind.PAIR, Verdict.FAIL, reason=reason, **fields)
        return declared_pair(j, expected, ga, ga, arrays=arrays) if expected else j
    floors = pair_floors(a, b, array, rounding=rounding)
    j = _judge_pair(case, a, b, array, floors, kinks=kinks, keep=keep, info=info)
    if rounding and j.verdict == Verdict.FAIL and j.comparison.differing:  # a wrong gradient
        floors = pair_floors(a, b, array, rounding=rounding, trusted=False)  # a stricter loss
        j = _judge_pair(case, a, b, array, floors, kinks=kinks, keep=keep, info=info)
    if not expected:
        return j
    held = {k: floors[k] for k in ("grad_floor", "entry_floor")}  # as the comparison had them
    return declared_pair(j, expected, ga, gb, **held, arrays=arrays)


def _pair_fields(a: Gradient, b: Gradient, array: str, info: bool) -> dict[str, Any]:
    """The case's fields a pair gives it: its family (two families: `A vs B`), subjects,
    array."""
    fields = {"family": a.family, "subjects": (a.label, b.label), "array": array}
    if info or a.family != b.family:
        fields["family"] = f"{a.family} vs {b.family}"
    return fields


def _judge_pair(
    case: str,
    a: Gradient,
    b: Gradient,
    array: str,
    floors: dict[str, Any],
    *,
    kinks: str | None,
    keep: np.ndarray | None,
    info: bool,
) -> CaseJudgement:
    """The pair judged by `compare` under its `floors` (arrays of one shape)."""
    fields = _pair_fields(a, b, array, info)
    ga, gb = np.asarray(a.gradients[array]), np.asarray(b.gradients[array])
    c = compare(ga, gb, a.loss, b.loss, **floors)
    if c.nonfinite:
        return CaseJudgement(
            case, CaseKind.PAIR, Verdict.NONFINITE, reason=_nonfinite(a, b), comparison=c, **fields
        )
    if info or a.family != b.family:
        return CaseJudgement(case, CaseKind.PAIR, Verdict.INFO, comparison=c, **fields)
    if c.agree:
        return CaseJudgement(case, CaseKind.PAIR, Verdict.OK, comparison=c, **fields)
    if kinks is not None and keep is not None:
        away = compare(ga, gb, a.loss, b.loss, keep=keep, **floors)
        if away.agree:
            return CaseJudgement(
                case, CaseKind.PAIR, Verdict.KINKS, comparison=c, away=away, kinks=kinks, **fields
            )
    return CaseJudgement(case, CaseKind.PAIR, Verdict.FAIL, comparison=c, kinks=kinks, **fields)


def stood_in(j: CaseJudgement, aside: dict[str, str]) -> CaseJudgement:
    """A comparison across families made with a family's stand-in reference (`{designated:
    the member that ran}`, DESIGN §5): its reason says so (its id names the designated)."""
    said = "; ".join(f"{a} is at fault, {b} stands in for it" for a, b in aside.items())
    return dataclasses.replace(j, reason=f"{said}; {j.reason}" if j.reason else said)


def _nonfinite(a: Gradient, b: Gradient) -> str:
    for g, other in ((b, a), (a, b)):
        if not g.finite:
            overflow = g.dtype == "float32" and other.dtype == "float64" and other.finite
            return f"{'float32 overflow: ' if overflow else ''}{g.label}: {g.nonfinite_text()}"
    return "NaN/Inf in the comparison"


# --- gradient checks -------------------------------------------------------------------------


def check_fault(case: str, kind: CaseKind, fault: Fault, **fields: Any) -> CaseJudgement:
    """A gradient check whose own calls were at fault (a time-out): the fault's verdict
    (`_contract.fault_of`), with its line."""
    return CaseJudgement(case, kind, Verdict(fault.verdict), reason=fault.what, **fields)


def judge_check(case: str, kind: CaseKind, result: CheckResult, **fields: Any) -> CaseJudgement:
    """A gradient check of one array judged by its result's rule (`result.judge()`, the
    protocol of `_checks`), the numbers kept as the judgement's `result`."""
    fields.setdefault("array", result.array)
    verdict, reason = result.judge()
    return CaseJudgement(case, kind, verdict, reason=reason, result=result, **fields)


# --- an example's judgement ------------------------------------------------------------------


@dataclass
class ExampleJudgement:
    """Every judgement of one example, in case-table order, with what they judged."""

    example: Any  # the Example
    inputs: Inputs | None
    judgements: list[CaseJudgement] = field(default_factory=list)
    subjects: dict[str, Gradient] = field(default_factory=dict)  # label: what was judged
    skipped: dict[str, str] = field(default_factory=dict)  # label: why it does not run here
    unavailable: dict[str, str] = field(default_factory=dict)  # label: why it cannot run here
    dtypes: tuple[str, ...] = ("float64",)
    error: str | None = None  # the example could not be judged at all (its inputs)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reuse: dict[str, str] = field(default_factory=dict)  # label: "reused"/"recomputed: why"
    # when it was judged (UTC, ISO 8601 to the second): the date its views show
    judged_at: str = field(default_factory=lambda: _now(), compare=False)
    # the environment the check ran in (set when its check.json is written)
    environment: dict[str, Any] = field(default_factory=dict, compare=False)

    def __repr__(self) -> str:
        return f"ExampleJudgement({self.name!r}, {self.state})"

    @property
    def name(self) -> str:
        return self.example.name

    @property
    def judged(self) -> bool:
        return self.error is None

    @property
    def failures(self) -> list[CaseJudgement]:
        return [j for j in self.judgements if j.failed]

    @property
    def faults(self) -> dict[str, CaseJudgement]:
        """`{label: its run judgement}` for the subjects at fault (error, NaN/Inf, timeout)."""
        return {j.subjects[0]: j for j in self.judgements if j.kind == CaseKind.RUN and j.failed}

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failures

    @property
    def verdict(self) -> Verdict | None:
        """The worst failing verdict, ok, or None when the example was not judged."""
        if self.error is not None:
            return None
        return Verdict.worst(j.verdict for j in self.failures) or Verdict.OK

    @property
    def state(self) -> str:
        """`ok`, the worst failing verdict, or `not judged`."""
        return "not judged" if self.verdict is None else str(self.verdict)

    @property
    def expected(self) -> dict[Expected, list[CaseJudgement]]:
        """`{declaration: its cases judged as declared}`: the expected differences (one
        per declared difference, however many arrays, dtypes and references show it)."""
        out: dict[Any, list[CaseJudgement]] = {}
        for j in self.judgements:
            if j.verdict.declared and j.expected is not None:
                e = j.expected
                out.setdefault((e.variant, e.against, e.check, e.reason), []).append(j)
        return {cases[0].expected: cases for cases in out.values()}

    def of_kind(self, kind: CaseKind) -> list[CaseJudgement]:
        return [j for j in self.judgements if j.kind == kind]

    def by_case(self) -> dict[str, CaseJudgement]:
        return {j.case: j for j in self.judgements}

    def run_of(self, label: str) -> CaseJudgement | None:
        return next((j for j in self.of_kind(CaseKind.RUN) if j.subjects == (label,)), None)

    def suspects(self) -> dict[str, list[CaseJudgement]]:
        """`{label: its failing pairs against its family's trusted group}`: the subjects
        the judge names most likely wrong (`_suspects.suspects`)."""
        from ._suspects import suspects

        out: dict[str, list[CaseJudgement]] = {}
        for s in suspects(self):
            out.setdefault(s.label, []).extend(s.against)
        return out

    def references(self) -> list[Any]:
        """Each family's reference as judged (`_suspects.Reference`): where its designated
        reference is at fault or did not run, the member it was judged against instead;
        `.line` is what every view says of it."""
        from ._suspects import references

        return references(self)

    def variant_verdict(self, name: str) -> Verdict | None:
        """The verdict of one variant as a whole (its row in the views): the fault of its
        float64 run; `unavailable` or `skipped` (`self.unavailable`, `self.skipped`);
        `stale` where only a stale file of it was judged; else the worst failing verdict of
        its own cases (its runs, its gradient checks, its float32 run against its own
        float64 run) and of the pairs in which the judge names it a suspect (`suspects`), or
        `ok`. None: nothing of it was judged."""
        run = self.run_of(name)
        if run is not None and run.failed:
            return run.verdict
        if name in self.unavailable:
            return Verdict.UNAVAILABLE
        if name in self.skipped and name not in self.subjects:
            return Verdict.SKIPPED
        labels = {name, *(f"{name}@{d}" for d in self.dtypes)}
        mine = [
            j
            for j in self.judgements
            if (j.kind != CaseKind.PAIR and j.kind != CaseKind.FILE and set(j.subjects) <= labels)
            or (
                j.kind == CaseKind.PAIR
                and len(j.subjects) == 2
                and j.subjects[1] in labels - {name}
            )
        ]
        accused = self.suspects()
        mine += [j for label in labels for j in accused.get(label, [])]
        worst = Verdict.worst(j.verdict for j in mine if j.failed)
        if worst is not None:
            return worst
        if name in self.subjects:
            return Verdict.OK
        files = self.of_kind(CaseKind.FILE)  # a file computed on other inputs says so
        return Verdict.worst(
            j.verdict for j in files if j.subjects == (name,) and j.verdict.outdated
        )


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
