"""The case table: what is judged for an example, and how each case is judged.

One table (`plan`) feeds `weanj check`, `weanj diff`, `weanj report` and `pytest
--weanj` (DifferentiationInterfaceTest's `Scenario`, for cross-language ports):

- **subjects**: each registered variant at each dtype under test (`jax-lex`,
  `jax-lex@float32`: evaluated live by check and pytest, read from its store file by
  diff), each recorded reference (`recorded/julia-lex`) and each other gradient file of
  the store (a user's experiment);
- **cases**: `pair` (every same-family pair of float64 subjects, per gradient array;
  each float32 subject against its family's float64 reference; the family references
  across families, for information), `taylor` and `jvp` (every live float64 variant, per
  gradient array) and `file` (every file the plan read: ok, stale, NaN/Inf or unreadable).

Case ids are the pytest ids: `EX::FAMILY::A~B[::ARRAY]`, `EX::FAMILY::V::taylor[::ARRAY]`,
`EX::FAMILY::V::jvp[::ARRAY]`, `EX::info::A~B[::ARRAY]`, `EX::file::LABEL`.
`judge_case` answers one case through the judge (`_judge`), whoever asks.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._errors import WeanjError
from ._io._inputs import Inputs, read_inputs
from ._io._store import PRODUCED, place_of, scan_store
from ._judge import _checks as checks
from ._judge import _verdict as judge
from ._model import DTYPES, Example, Gradient
from ._registry import example as example_named
from ._registry import families, find_variant, kink_difference
from ._run import evaluate
from ._watch import Watch


@dataclass(frozen=True)
class Subject:
    """Something the cases judge: a registered variant at a dtype, or a file."""

    label: str
    family: str
    dtype: str
    variant: str | None = None  # the registered variant it is (live, or its store file)
    gradient: Gradient | None = None  # what a file holds (None: computed when needed)
    skip: str | None = None  # why it cannot be computed here

    @property
    def live(self) -> bool:
        return self.gradient is None


@dataclass(frozen=True)
class Case:
    """One row of the case table."""

    id: str
    kind: str  # "pair", "taylor", "jvp", "file"
    family: str
    subjects: tuple[str, ...]
    array: str | None = None
    skip: str | None = None
    info: bool = False  # a pair across families: for information, never a failure


@dataclass
class Plan:
    """The case table of one example on its shared inputs."""

    example: Example
    inputs: Inputs
    live: bool
    dtypes: tuple[str, ...]
    subjects: dict[str, Subject] = field(default_factory=dict)
    cases: list[Case] = field(default_factory=list)
    files: dict[str, judge.Judgement] = field(default_factory=dict)  # file cases, judged

    def case(self, case_id: str) -> Case:
        return next(c for c in self.cases if c.id == case_id)


def _suffix(ex: Example, array: str) -> str:
    return f"::{array}" if len(ex.wrt_names) > 1 else ""


def plan(
    example: Example | str,
    *,
    live: bool = True,
    dtypes: tuple[str, ...] = DTYPES,
    checks: bool = True,
    inputs: Inputs | None = None,
) -> Plan:
    """The case table of an example. `live`: registered variants are evaluated (check,
    pytest); otherwise their store files are judged (diff). `checks`: include the
    Taylor and jvp cases (live only). Raises the inputs' error when they cannot be read."""
    ex = example_named(example)
    inputs = inputs if inputs is not None else read_inputs(ex)
    p = Plan(ex, inputs, live, tuple(d for d in DTYPES if d in dtypes))
    scan = scan_store(ex)
    stored = {}
    for g in scan.gradients:
        if g.source == "store" and live:
            continue  # this run replaces the variants' own files
        stored[g.label] = g
    for path, message in scan.problems:
        case_id = f"{ex.name}::file::{_file_label(path)}"
        p.files[case_id] = judge.unreadable(case_id, message)
    _add_subjects(p, stored)
    _add_pairs(p)
    if live and checks:
        _add_checks(p)
    for case_id in p.files:
        p.cases.append(Case(case_id, "file", "", ()))
    return p


def _file_label(path) -> str:
    place = place_of(path)
    if place is not None and place.kind == "recorded":
        return f"recorded/{path.stem}"
    if place is not None and place.kind == PRODUCED and place.dtype != "float64":
        return f"{path.stem}@{place.dtype}"
    return path.stem


def _add_subjects(p: Plan, stored: dict[str, Gradient]) -> None:
    ex = p.example
    for family, names in families(ex).items():
        for name in names:
            v = find_variant(ex, name)
            for dtype in p.dtypes:
                label = name if dtype == "float64" else f"{name}@{dtype}"
                if p.live:
                    skip = v.unavailable_reason() or v.excluded(p.inputs.arrays, p.inputs.params)
                    if skip is None and dtype not in v.dtypes:
                        skip = f"{name} supports {', '.join(v.dtypes)} only"
                    p.subjects[label] = Subject(label, family, dtype, variant=name, skip=skip)
                elif label in stored and stored[label].source == "store":
                    g = stored.pop(label)
                    if _file_case(p, label, g):
                        p.subjects[label] = Subject(label, family, dtype, variant=name, gradient=g)
    for label, g in sorted(stored.items()):
        if g.source == "file" and find_variant(ex, g.path.stem) is not None:
            case_id = f"{ex.name}::file::{label}"
            reason = (
                f"{g.path} holds a gradient of {g.variant}, "
                f"not of {g.path.stem} (whose store file it is)"
            )
            p.files[case_id] = judge.Judgement(case_id, "file", judge.Verdict.FAIL, reason=reason)
            continue
        if _file_case(p, label, g):
            registered = find_variant(ex, g.variant)
            family = registered.family if registered is not None else g.family
            p.subjects[label] = Subject(label, family, g.dtype, variant=None, gradient=g)


def _file_case(p: Plan, label: str, g: Gradient) -> bool:
    """Judge a file the plan read; True when it can take part in pairs."""
    case_id = f"{p.example.name}::file::{label}"
    p.files[case_id] = judge.judge_file(case_id, g, p.inputs)
    return p.files[case_id].verdict in (judge.Verdict.OK, judge.Verdict.NONFINITE)


def _members(p: Plan) -> dict[str, list[Subject]]:
    out: dict[str, list[Subject]] = {}
    for s in p.subjects.values():
        out.setdefault(s.family, []).append(s)
    return out


def _reference(members: list[Subject]) -> Subject | None:
    float64 = [s for s in members if s.dtype == "float64"]
    runnable = [s for s in float64 if s.skip is None]
    return (runnable or float64 or [None])[0]


def _pair_case(p: Plan, family: str, a: Subject, b: Subject, *, info: bool = False) -> list[Case]:
    ex = p.example
    skip = a.skip or b.skip
    head = f"{ex.name}::{'info' if info else family}::{a.label}~{b.label}"
    return [
        Case(
            head + _suffix(ex, array),
            "pair",
            family,
            (a.label, b.label),
            array,
            skip=skip,
            info=info,
        )
        for array in ex.wrt_names
    ]


def _add_pairs(p: Plan) -> None:
    by_family = _members(p)
    references = {}
    for family, members in by_family.items():
        ref = _reference(members)
        if ref is None:
            continue
        references[family] = ref
        float64 = [s for s in members if s.dtype == "float64"]
        for a, b in itertools.combinations(float64, 2):
            p.cases.extend(_pair_case(p, family, a, b))
        for s in members:
            if s.dtype != "float64":
                p.cases.extend(_pair_case(p, family, ref, s))
    for fa, fb in itertools.combinations(references, 2):
        p.cases.extend(_pair_case(p, f"{fa} vs {fb}", references[fa], references[fb], info=True))


def _add_checks(p: Plan) -> None:
    ex = p.example
    for s in p.subjects.values():
        if s.variant is None or s.dtype != "float64":
            continue
        for kind in ("taylor", "jvp"):
            for array in ex.wrt_names:
                case_id = f"{ex.name}::{s.family}::{s.label}::{kind}{_suffix(ex, array)}"
                p.cases.append(Case(case_id, kind, s.family, (s.label,), array, skip=s.skip))


# --- computing subjects ---------------------------------------------------------------------


class SubjectFailed(Exception):
    """A live subject that raised or ran out of time; the message says which and why."""

    def __init__(self, label: str, message: str, timed_out: bool = False):
        super().__init__(message)
        self.label, self.message, self.timed_out = label, message, timed_out


# Live evaluations, once per process: {(example, variant, key): Gradient or SubjectFailed}.
_EVALUATIONS: dict[tuple, Any] = {}


class Runner:
    """Resolves a plan's subjects: files as read, live variants evaluated once (cached
    per process), optionally saved to the store, each under the `Watch` (heartbeat on
    stderr, time limit)."""

    def __init__(
        self, p: Plan, *, watch: Watch | None = None, on_evaluated: Callable | None = None
    ):
        self.plan, self.watch = p, watch or Watch()
        self.on_evaluated = on_evaluated

    def subject(self, label: str) -> Gradient:
        s = self.plan.subjects[label]
        if s.gradient is not None:
            return s.gradient
        key = (self.plan.example.name, s.variant, self.plan.inputs.key(s.dtype))
        if key not in _EVALUATIONS:
            _EVALUATIONS[key] = self._evaluate(s)
            if self.on_evaluated is not None:
                self.on_evaluated(s, _EVALUATIONS[key])
        found = _EVALUATIONS[key]
        if isinstance(found, SubjectFailed):
            raise found
        return found

    def _evaluate(self, s: Subject) -> Gradient | SubjectFailed:
        ex, inputs = self.plan.example, self.plan.inputs
        try:
            return self.watch.run(
                lambda: evaluate(ex, s.variant, inputs=inputs, dtype=s.dtype),
                f"{ex.name} {s.label}",
            )
        except TimeoutError as e:
            return SubjectFailed(s.label, str(e), timed_out=True)
        except Exception as e:  # one broken variant must not hide the others' verdicts
            first = (str(e).strip().splitlines() or [""])[0][:200]
            what = first if isinstance(e, WeanjError) else f"{type(e).__name__}: {first}"
            flag = "" if s.dtype == "float64" else f" --dtype {s.dtype}"
            return SubjectFailed(
                s.label, f"{what} (details: `weanj run {ex.name} {s.variant}{flag}`)"
            )


def forget_evaluations() -> None:
    # the forward-mode derivatives too: they are evaluations of the same variants
    _EVALUATIONS.clear()
    checks.forget()


# --- judging one case ---------------------------------------------------------------------


def judge_case(p: Plan, case: Case, runner: Runner) -> judge.Judgement:
    """The judge's answer to one case (computing what it needs through `runner`)."""
    what = {"family": case.family, "subjects": case.subjects, "array": case.array}
    if case.kind == "file":
        return p.files[case.id]
    if case.skip is not None:
        return judge.skipped(case.id, case.kind, case.skip, **what)
    try:
        gradients = [runner.subject(label) for label in case.subjects]
    except SubjectFailed as e:
        return judge.not_evaluated(
            case.id, case.kind, e.label, e.message, timed_out=e.timed_out, **what
        )
    if case.kind == "pair":
        return _judge_pair(p, case, *gradients)
    what = {"family": case.family, "subjects": case.subjects}
    if case.kind == "taylor":
        return checks.taylor_judgement(case.id, p.inputs, gradients[0], case.array, **what)
    return checks.jvp_judgement(case.id, p.inputs, gradients[0], case.array, **what)


def _judge_pair(p: Plan, case: Case, a: Gradient, b: Gradient) -> judge.Judgement:
    why = None
    if a.variant != b.variant:
        why = kink_difference(p.example.name, a.variant, b.variant)
    keep = None
    if why is not None:
        keep = checks.masks(p.inputs)[case.array]
    j = judge.judge_pair(case.id, a, b, case.array, kinks=why, keep=keep)
    if case.info and j.verdict == judge.Verdict.OK:
        j.verdict = judge.Verdict.INFO
    return j


def judge_plan(p: Plan, runner: Runner) -> judge.ExampleJudgement:
    """Every case of a plan, judged in order."""
    result = judge.ExampleJudgement(p.example, p.inputs, dtypes=p.dtypes)
    for case in p.cases:
        result.judgements.append(judge_case(p, case, runner))
    for label, s in p.subjects.items():
        if s.skip is not None:
            result.skipped[label] = s.skip
            continue
        try:
            result.subjects[label] = runner.subject(label)
        except SubjectFailed as e:
            result.errors[label] = e.message
            if e.timed_out:
                result.timed_out.add(label)
    return result


# --- benchmark points ---------------------------------------------------------------------


@dataclass(frozen=True)
class BenchPoint:
    """One benchmark measurement: a variant at a dtype, a size, parameters and values of
    symbolic dimensions; `timed` False for scratch memory only (compiled, never run)."""

    variant: str
    dtype: str
    sweep: str  # the size's name, or the parameter or dimension swept
    size: int | None
    params: tuple[tuple[str, Any], ...]
    dims: tuple[tuple[str, int], ...] = ()
    timed: bool = True


def bench_points(
    ex: Example,
    variant: str,
    *,
    sizes: list[int | None],
    params: dict[str, Any],
    dtype: str,
    over: tuple[str, tuple] | None = None,
    memory_over: tuple[str, tuple] | None = None,
) -> list[list[BenchPoint]]:
    """The series of one variant: over the sizes, then (at the middle size) `over` a
    parameter or a dimension (timed) and `memory_over` one (compiled only)."""
    size_name = ex.sizes.name if ex.sizes is not None else "size"
    point = tuple(params.items())
    series = [[BenchPoint(variant, dtype, size_name, s, point) for s in sizes]]
    middle = sizes[len(sizes) // 2]
    for spec, timed in ((over, True), (memory_over, False)):
        if spec is None:
            continue
        name, values = spec
        run = []
        for value in values:
            if name in ex.param_names:
                run.append(
                    BenchPoint(
                        variant,
                        dtype,
                        name,
                        middle,
                        tuple({**params, name: value}.items()),
                        timed=timed,
                    )
                )
            else:
                run.append(
                    BenchPoint(
                        variant, dtype, name, middle, point, ((name, int(value)),), timed=timed
                    )
                )
        series.append(run)
    return series
