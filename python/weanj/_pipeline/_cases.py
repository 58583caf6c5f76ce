"""The case table: what is judged for an example, how each case is named, and how it is
judged (docs/DESIGN.md, "The case table").

One table (`build_plan`) feeds `weanj check`, `weanj diff`, `weanj report`, `pytest
--weanj`, `weanj bisect`, `weanj fuzz` and `weanj bench` (DifferentiationInterfaceTest's
`Scenario`, for cross-language ports). Which pairs exist, their ids and how a pair is
judged are written here once.

- **subjects**: each registered variant at each dtype under test (`jax-lex`,
  `jax-lex@float32`: evaluated live by check and pytest, read from its store file by
  diff), each recorded reference (`recorded/julia-lex`) and each other gradient file of
  the store (a user's experiment);
- **cases**: `run` (every live subject: evaluated, or its fault), `pair` (every
  same-family pair of float64 subjects, per gradient array; each float32 subject against
  its family's float64 reference; the family references across families, for
  information), `taylor` and `jvp` (every live float64 variant, per gradient array) and
  `file` (every file the plan read: ok, stale, NaN/Inf or unreadable).

A subject at fault (`error`, `NaN/Inf`, `timeout`) is judged once, in its `run` case; its
pairs and checks are "not compared" (skipped, naming it), so two broken variants never
fill a table with failures of each other.

Case ids are the pytest ids: `EX::FAMILY::V::run`, `EX::FAMILY::A~B[::ARRAY]`,
`EX::FAMILY::V::taylor[::ARRAY]`, `EX::FAMILY::V::jvp[::ARRAY]`, `EX::info::A~B[::ARRAY]`,
`EX::file::LABEL`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .._errors import WeanjError
from .._io._gradient_files import StoreScan, scan_store
from .._io._inputs import check_fresh, read_inputs
from .._judge import _verdict as judge
from .._judge._contract import Fault
from .._judge._expected import beyond_declaration
from .._judge._verdict import CaseJudgement, CaseKind, ExampleJudgement, Verdict
from .._model import DTYPES, Catalog, Example, Gradient, Inputs, Variant
from .._model._verdicts import GRADIENT_CHECKS
from .._places import PRODUCED, RECORDED, Places
from . import _device_cases as device_cases
from ._evaluate import configuration_of, label_of
from ._gradchecks import CHECKS
from ._session import Session

# --- ids -----------------------------------------------------------------------------------


def _suffix(ex: Example, array: str | None) -> str:
    return f"::{array}" if array is not None and len(ex.wrt_names) > 1 else ""


def run_id(ex: Example, family: str, label: str) -> str:
    return f"{ex.name}::{family}::{label}::run"


def pair_id(ex: Example, family: str, a: str, b: str, array: str, *, info: bool = False) -> str:
    """The id of a pair case: `EX::FAMILY::A~B[::ARRAY]` (`EX::info::...` across families)."""
    return f"{ex.name}::{'info' if info else family}::{a}~{b}{_suffix(ex, array)}"


def check_id(ex: Example, family: str, label: str, kind: CaseKind, array: str) -> str:
    return f"{ex.name}::{family}::{label}::{kind}{_suffix(ex, array)}"


def file_id(ex: Example, label: str) -> str:
    return f"{ex.name}::file::{label}"


def fuzz_id(ex: Example, family: str, a: str, b: str) -> str:
    return f"{ex.name}::{family}::{a}~{b}::fuzz"


# --- the table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    """Something the cases judge: a registered variant at a dtype, or a file."""

    label: str
    family: str
    dtype: str
    variant: Variant | None = None  # the registered variant it is (live, or its store file)
    gradient: Gradient | None = None  # what a file holds (None: computed when needed)
    skip: Fault | None = None  # why it is not evaluated here (unavailable, skipped)
    device: str = "cpu"  # where it runs (`_device_cases`: V@tpu)

    @property
    def live(self) -> bool:
        return self.gradient is None


@dataclass(frozen=True)
class Case:
    """One row of the case table."""

    id: str
    kind: CaseKind
    family: str
    subjects: tuple[str, ...]
    array: str | None = None
    info: bool = False  # a pair across families: for information, never a failure


# A subject's skip that means "not run here" (any other is a fault the last check found).
_NOT_RUN = (Verdict.UNAVAILABLE, Verdict.SKIPPED)


@dataclass
class Plan:
    """The case table of one example on some inputs."""

    catalog: Catalog
    inputs: Inputs
    live: bool
    dtypes: tuple[str, ...]
    devices: tuple[str, ...] = ("cpu",)  # the devices under test (the CPU first)
    subjects: dict[str, Subject] = field(default_factory=dict)
    cases: list[Case] = field(default_factory=list)
    files: dict[str, CaseJudgement] = field(default_factory=dict)  # file cases, judged
    ignored: list[Gradient] = field(default_factory=list)  # files of variants not registered
    notes: list[str] = field(default_factory=list)  # said once with the example's judgement

    @property
    def example(self) -> Example:
        return self.catalog.example

    def case(self, case_id: str) -> Case:
        return next(c for c in self.cases if c.id == case_id)

    def skip_of(self, case: Case) -> Fault | None:
        """Why a case is not judged here before anything runs (a subject unavailable or
        not applicable), or None."""
        if case.kind == CaseKind.FILE:
            return None
        for label in case.subjects:
            s = self.subjects.get(label)
            if s is not None and s.skip is not None and s.skip.verdict in _NOT_RUN:
                return s.skip
        return None

    def same_family_pairs(self) -> list[tuple[Variant, Variant]]:
        """The same-family pairs of live float64 variants that can run here, in table order:
        what `weanj fuzz` and `pytest --weanj-fuzz` search (the pairs `weanj check` judges)."""
        out = []
        for c in self.cases:
            if c.kind != CaseKind.PAIR or c.info or c.array != self.example.wrt_names[0]:
                continue
            a, b = (self.subjects[label] for label in c.subjects)
            live64 = all(s.live and s.variant and s.dtype == "float64" for s in (a, b))
            if live64 and self.skip_of(c) is None:
                out.append((a.variant, b.variant))
        return out


def unregistered(g: Gradient) -> bool:
    """A store file of a variant the project no longer registers: a file of the produced
    store (`gradients/`) that a weanj evaluation wrote (it carries the run's rounding
    level, `noise_loss`; a user's experiment saved with `weanj.save_gradient` does not)
    under a name no registered variant has. Such a file is never judged, and `weanj
    clean` removes it."""
    return g.source == "store" and g.of is None and bool(g.noise)


def ignored_note(example: str, files: list[Gradient], places: Places | None) -> str:
    """The one line every command that reads the store says about the files it ignored."""
    shown = places.shown if places is not None else str
    folders = sorted({shown(g.path.parent) for g in files if g.path is not None})
    names = ", ".join(sorted({g.label for g in files}))
    return (
        f"  ignored {len(files)} file(s) of variants no longer registered ({names}) in "
        f"{', '.join(folders)}; `weanj clean {example} --yes` removes them"
    )


def build_plan(
    catalog: Catalog,
    inputs: Inputs,
    scan: StoreScan | None = None,
    *,
    live: bool = True,
    dtypes: tuple[str, ...] = DTYPES,
    checks: bool = True,
    places: Places | None = None,
    faults: dict[str, Fault] | None = None,
    devices: tuple[str, ...] = ("cpu",),
) -> Plan:
    """The case table of an example. `live`: registered variants are evaluated (check,
    pytest); otherwise their store files are judged (diff). `scan`: the store's files
    (recorded references and, for diff, the store itself); `checks`: include the Taylor
    and jvp cases (live only)."""
    ex = catalog.example
    for e in catalog.expectations:  # one line naming a declaration that cannot fit: before any run
        e.validate(inputs.arrays, ex.wrt_names)
    p = Plan(catalog, inputs, live, tuple(d for d in DTYPES if d in dtypes), devices=devices)
    stored: dict[str, Gradient] = {}
    if scan is not None:
        for g in scan.gradients:
            g.of = catalog.find(g.variant)
            if g.source == "store" and live and g.of is not None:
                continue  # this run replaces the registered variants' own files
            if g.of is None and g.variant in catalog.left_out:
                continue  # a registered variant this run leaves out (`--variants`)
            if unregistered(g):
                p.ignored.append(g)  # a variant no longer registered: never judged
                continue
            stored[g.label] = g
        if p.ignored:
            p.notes.append(ignored_note(ex.name, p.ignored, places))
        for path, message in scan.problems:
            case_id = file_id(ex, _file_label(path, places))
            p.files[case_id] = judge.unreadable(case_id, message)
    _add_subjects(p, stored, faults or {})
    if live:
        device_cases.add_device_subjects(p)
    _add_runs(p)
    _add_pairs(p)
    device_cases.add_device_pairs(p, _pair_cases, _reference)
    if live and checks:
        _add_checks(p)
    for case_id in p.files:
        p.cases.append(Case(case_id, CaseKind.FILE, "", ()))
    return p


def _file_label(path, places: Places | None) -> str:
    place = places.place_of(path) if places is not None else None
    if place is not None and place.kind == RECORDED:
        return f"recorded/{path.stem}"
    if place is not None and place.kind == PRODUCED and place.dtype != "float64":
        return f"{path.stem}@{place.dtype}"
    return path.stem


def _skip(p: Plan, v: Variant, dtype: str) -> Fault | None:
    why = v.unavailable_reason()
    if why is not None:
        return Fault(Verdict.UNAVAILABLE, why)
    if dtype not in v.dtypes:
        return Fault(Verdict.SKIPPED, f"{v.name} supports {', '.join(v.dtypes)} only")
    excluded = v.excluded(p.inputs.arrays, p.inputs.params)
    if excluded is not None:
        return Fault(Verdict.SKIPPED, f"{v.name} does not apply to these inputs: {excluded}")
    return None


def _add_subjects(p: Plan, stored: dict[str, Gradient], faults: dict[str, Fault]) -> None:
    """The subjects; `faults`: what the last check found at fault, for a plan of the store
    (diff): a variant whose last evaluation was a fault has no file, and is that fault."""
    ex = p.example
    for family, members in p.catalog.families().items():
        for v in members:
            for dtype in p.dtypes:
                label = label_of(v, dtype)
                if p.live:
                    p.subjects[label] = Subject(label, family, dtype, v, skip=_skip(p, v, dtype))
                elif label in stored and stored[label].source == "store":
                    g = stored.pop(label)
                    if _file_case(p, label, g, v):
                        p.subjects[label] = Subject(label, family, dtype, v, gradient=g)
                elif label in faults:
                    p.subjects[label] = Subject(label, family, dtype, v, skip=faults[label])
    for label, g in sorted(stored.items()):
        if g.source == "file" and g.of is not None:
            case_id = file_id(ex, label)
            reason = (
                f"{g.path} holds a gradient of {g.variant}, not of {g.path.stem} (whose store "
                "file it is)"
            )
            p.files[case_id] = CaseJudgement(case_id, CaseKind.FILE, Verdict.FAIL, reason=reason)
            continue
        if _file_case(p, label, g, g.of):
            family = g.of.family if g.of is not None else g.family
            p.subjects[label] = Subject(label, family, g.dtype, gradient=g)


def _file_case(p: Plan, label: str, g: Gradient, registered: Variant | None) -> bool:
    """Judge a file the plan read; True when it can take part in pairs."""
    case_id = file_id(p.example, label)
    family = registered.family if registered is not None else None
    p.files[case_id] = judge.judge_file(case_id, g, p.inputs, family=family)
    return p.files[case_id].verdict in (Verdict.OK, Verdict.NONFINITE)


def _add_runs(p: Plan) -> None:
    for s in p.subjects.values():
        if s.live:
            p.cases.append(
                Case(run_id(p.example, s.family, s.label), CaseKind.RUN, s.family, (s.label,))
            )


def _members(p: Plan) -> dict[str, list[Subject]]:  # CPU subjects: a device run's pairs
    out: dict[str, list[Subject]] = {}
    for s in p.subjects.values():
        if s.device == "cpu":
            out.setdefault(s.family, []).append(s)
    return out


def _reference(members: list[Subject]) -> Subject | None:
    float64 = [s for s in members if s.dtype == "float64"]
    runnable = [s for s in float64 if s.skip is None]
    return (runnable or float64 or [None])[0]


def _pair_cases(p: Plan, family: str, a: Subject, b: Subject, *, info: bool = False) -> list[Case]:
    ex = p.example
    return [
        Case(
            pair_id(ex, family, a.label, b.label, array, info=info),
            CaseKind.PAIR,
            family,
            (a.label, b.label),
            array,
            info=info,
        )
        for array in ex.wrt_names
    ]


def _add_pairs(p: Plan) -> None:
    references = {}
    for family, members in _members(p).items():
        ref = _reference(members)
        if ref is None:
            continue
        references[family] = ref
        float64 = [s for s in members if s.dtype == "float64"]
        for a, b in itertools.combinations(float64, 2):
            p.cases.extend(_pair_cases(p, family, a, b))
        for s in members:
            if s.dtype != "float64":
                p.cases.extend(_pair_cases(p, family, ref, s))
    for fa, fb in itertools.combinations(references, 2):
        p.cases.extend(_pair_cases(p, f"{fa} vs {fb}", references[fa], references[fb], info=True))


def _add_checks(p: Plan) -> None:
    ex = p.example
    for s in p.subjects.values():
        if s.variant is None or s.dtype != "float64" or not s.live or s.device != "cpu":
            continue  # the gradient checks are the CPU float64 run's
        for kind in GRADIENT_CHECKS:
            for array in ex.wrt_names:
                case_id = check_id(ex, s.family, s.label, kind, array)
                p.cases.append(Case(case_id, kind, s.family, (s.label,), array))


def read_plan(
    catalog: Catalog,
    places: Places,
    *,
    live: bool,
    dtypes: tuple[str, ...] = DTYPES,
    checks: bool = True,
    faults: dict[str, Fault] | None = None,
    devices: tuple[str, ...] = ("cpu",),
) -> Plan:
    """The case table on the shared inputs, with the store as it is (raises the inputs'
    error when they cannot be read: the example is then not judged); `faults`: the last
    check's faults, for a plan of the store (`build_plan`)."""
    inputs = read_inputs(catalog.example, places)
    check_fresh(catalog.example, places, inputs)  # not stale: what the generator writes now
    names = {v.name for v in catalog.variants}
    produced = {places.gradients(catalog.name, d).resolve() for d in DTYPES}

    def replaced(path) -> bool:  # a live run replaces each variant's own store file
        return live and path.stem in names and path.parent.resolve() in produced

    scan = scan_store(catalog.example, places, skip=replaced)
    return build_plan(
        catalog,
        inputs,
        scan,
        live=live,
        dtypes=dtypes,
        checks=checks,
        places=places,
        faults=faults(inputs) if callable(faults) else faults,
        devices=devices,
    )


# --- judging -------------------------------------------------------------------------------


def subject_outcome(p: Plan, label: str, session: Session) -> Gradient | Fault:
    """What a subject is: its file, or its evaluation (or fault) in this session."""
    s = p.subjects[label]
    if s.gradient is not None:
        return s.gradient
    if s.skip is not None:
        return s.skip
    return session.outcome(s.variant, p.inputs, s.dtype, s.device)


def judge_case(p: Plan, case: Case, session: Session) -> CaseJudgement:
    """The judge's answer to one case (computing what it needs through `session`)."""
    what = {"family": case.family, "subjects": case.subjects}
    if case.kind == CaseKind.FILE:
        return p.files[case.id]
    if case.kind == CaseKind.RUN:
        label = case.subjects[0]
        s = p.subjects[label]
        wider = None
        if s.dtype != "float64" and s.variant is not None:
            wide = label_of(s.variant, "float64", s.device)
            if wide in p.subjects:
                wider = subject_outcome(p, wide, session)
        outcome = subject_outcome(p, label, session)
        j = judge.judge_run(case.id, label, outcome, family=case.family, wider=wider)
        config = configuration_of(outcome, s.variant, s.dtype, s.device)  # decided once
        if config is not None and config.x64 is not None:
            j.info["x64"] = config.x64.to_json()  # shown by every view
        return judge.declared_check(j, p.catalog.declared_check(CaseKind.RUN, s.variant))
    what["array"] = case.array
    outcomes = [subject_outcome(p, label, session) for label in case.subjects]
    for label, outcome in zip(case.subjects, outcomes, strict=True):
        if isinstance(outcome, Fault):
            if Verdict(outcome.verdict) in (Verdict.UNAVAILABLE, Verdict.SKIPPED):
                return judge.skipped(case.id, case.kind, outcome.what, **what)
            fault = judge.judge_run("", label, outcome)
            return judge.not_compared(case.id, case.kind, fault, **what)
    if case.kind == CaseKind.PAIR:
        j = _judge_pair(p, case, *outcomes, session=session)
        return device_cases.precision_or_bug(p, case, j, outcomes[1], session, judge_pair_of)
    g = outcomes[0]
    what.pop("array")
    try:
        check = CHECKS[case.kind]
        j = check.judgement(session, case.id, p.catalog, p.inputs, g, case.array, **what)
    except TimeoutError as e:
        j = CaseJudgement(
            case.id, case.kind, Verdict.TIMEOUT, reason=str(e), array=case.array, **what
        )
    return judge.declared_check(j, p.catalog.declared_check(case.kind, g.of))


def _judge_pair(
    p: Plan, case: Case, a: Gradient, b: Gradient, *, session: Session
) -> CaseJudgement:
    s = p.subjects.get(case.subjects[1])
    with device_cases.judged_on(s.variant if s else None, s.device if s else "cpu"):
        return judge_pair_of(
            p.catalog, p.inputs, case.id, a, b, case.array, session, info=case.info, declared=True
        )


def judge_pair_of(
    catalog: Catalog,
    inputs: Inputs,
    case_id: str,
    a: Gradient,
    b: Gradient,
    array: str,
    session: Session,
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
    )


def judge_plan(p: Plan, session: Session) -> ExampleJudgement:
    """Every case of a plan, judged in order."""
    result = ExampleJudgement(p.example, p.inputs, dtypes=p.dtypes)
    result.notes.extend(p.notes)
    for case in p.cases:
        result.judgements.append(judge_case(p, case, session))
    for label, s in p.subjects.items():
        if s.skip is not None and s.skip.verdict in _NOT_RUN:
            target = result.unavailable if s.skip.verdict == Verdict.UNAVAILABLE else result.skipped
            target[label] = s.skip.what
            continue
        found = subject_outcome(p, label, session)
        if device_cases.cpu_only(s, found):
            continue  # said once (`device_notes`), never a row of its own
        if isinstance(found, Gradient):
            result.subjects[label] = found
        elif found.verdict == Verdict.SKIPPED:
            result.skipped[label] = found.what
        elif found.verdict == Verdict.UNAVAILABLE:
            result.unavailable[label] = found.what
    result.notes.extend(device_cases.device_notes(p, result, session))
    return result


def not_judged(catalog: Catalog, error: WeanjError | str, dtypes=DTYPES) -> ExampleJudgement:
    """An example whose inputs cannot be read: not judged, saying why."""
    return ExampleJudgement(catalog.example, None, dtypes=tuple(dtypes), error=str(error))


# --- one pair on other inputs (bisect, fuzz) --------------------------------------------------


@dataclass
class PairOutcome:
    """A and B on one input: their judgements (their faults, or their pairs per array),
    each held to the pair's declarations (`weanj.Expected`), as `weanj check` holds it."""

    inputs: Inputs
    judgements: list[CaseJudgement] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        """Nothing beyond what was declared (`_judge._expected.beyond_declaration`): the
        pair agrees, or differs only as declared (what bisect and fuzz search the end
        of)."""
        return not any(beyond_declaration(j) for j in self.judgements)

    @property
    def as_declared(self) -> bool:
        """It differs, and only as declared: some judgement is `expected`, none beyond."""
        return self.agree and any(j.verdict == Verdict.EXPECTED for j in self.judgements)

    @property
    def timed_out(self) -> bool:
        return any(j.verdict == Verdict.TIMEOUT for j in self.judgements)

    def word(self) -> str:
        """The worst verdict (what a search prints per value tried); a declared
        difference that does not show here is no failure of the search: `ok`, saying so."""
        if self.agree and not self.as_declared:
            absent = any(j.verdict == Verdict.UNEXPECTEDLY_OK for j in self.judgements)
            ok = str(Verdict.OK)
            return f"{ok} (the declared difference does not show)" if absent else ok
        worst = Verdict.worst(j.verdict for j in self.judgements)
        return str(worst or Verdict.SKIPPED)


def judge_pair_on(
    session: Session, catalog: Catalog, a: Variant, b: Variant, inputs: Inputs
) -> PairOutcome:
    """A and B evaluated on `inputs` (float64) and judged, as `weanj check` would judge
    them there, held to their declarations: a side at fault is that side's judgement
    (they part ways there, unless its fault is declared); a side declared not to apply
    leaves nothing to judge. B runs on the session's device (`bisect`/`fuzz --device`),
    A on the CPU: the reference side."""
    ex, device = catalog.example, session.device
    outcomes = [
        session.outcome(a, inputs, "float64"),
        session.outcome(b, inputs, "float64", device),
    ]
    names = (a.name, label_of(b, "float64", device))
    found = PairOutcome(inputs)
    for v, name, o in zip((a, b), names, outcomes, strict=True):
        if isinstance(o, Fault):
            if o.verdict in (Verdict.SKIPPED, Verdict.UNAVAILABLE):
                return PairOutcome(inputs)
            j = judge.judge_run(run_id(ex, v.family, name), name, o, family=v.family)
            found.judgements.append(
                judge.declared_check(j, catalog.declared_check(CaseKind.RUN, v))
            )
    if found.judgements:
        return found
    ga, gb = outcomes
    for array in ex.wrt_names:
        case_id = pair_id(ex, a.family, *names, array)
        with device_cases.judged_on(b, device):
            j = judge_pair_of(catalog, inputs, case_id, ga, gb, array, session, declared=True)
        found.judgements.append(j)
    return found
