"""The case table: what is judged for an example, how each case is named, and how it is
judged (docs/DESIGN.md, "The case table").

One table (`build_plan`, built in `_table`, read from the project by `read_plan` here)
feeds `weanj check`, `weanj diff`, `weanj report`, `pytest --weanj`, `weanj bisect`, `weanj
fuzz` and `weanj bench` (DifferentiationInterfaceTest's `Scenario`, for cross-language
ports). Which pairs exist and their ids are written in `_table`, how a case is judged here,
each once.

- **subjects**: each registered variant at each dtype under test (`jax-lex`,
  `jax-lex@float32`: evaluated live by check and pytest, read from its store file by
  diff), each recorded reference (`recorded/julia-lex`) and each other gradient file of
  the store (a user's experiment);
- **cases**: `run` (every live subject: evaluated, or its fault), `pair` (every
  same-family pair of float64 subjects, per gradient array; each float32 subject against
  its own variant's float64 subject; the family references across families, for
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

from dataclasses import dataclass, field

from ..._errors import UnavailableError, WeanjError
from ..._io._gradient_files import scan_store
from ..._io._inputs import check_fresh, read_inputs
from ..._judge import _verdict as judge
from ..._judge._contract import Fault, fault_of
from ..._judge._events import CaseJudged
from ..._judge._expected import beyond_declaration, declared_check
from ..._judge._verdict import CaseJudgement, ExampleJudgement
from ..._model import DTYPES, Catalog, Gradient, Inputs, VariantRun
from ..._model._verdicts import CaseKind, Verdict
from ..._places import Places
from ..checks._gradchecks import CHECKS
from ..evaluation._evaluate import configuration_of
from ..evaluation._on_device import label_of
from ..session._pair_rule import judge_beyond_of, judge_pair_of
from ..session._session import Session
from . import _device_cases as device_cases
from ._evidence import with_evidence

# The table itself is built in `_table` (its subjects, cases and ids); these are its names.
from ._table import (
    Case,
    Plan,
    build_plan,
    not_run,
    output_id,
    pair_id,
    run_id,
)


def read_plan(
    catalog: Catalog,
    places: Places,
    *,
    live: bool,
    dtypes: tuple[str, ...] = DTYPES,
    checks: bool = True,
    faults: dict[str, Fault] | None = None,
    devices: tuple[str, ...] = ("cpu",),
    order: int = 1,
) -> Plan:
    """The case table on the shared inputs, with the store as it is (raises the inputs'
    error when they cannot be read: the example is then not judged); `faults`: the last
    check's faults, for a plan of the store (`build_plan`); `order`: the run's."""
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
        order=order,
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
    if p.has_checks:
        session.checking = True  # the plan's float64 runs call what a check's runs want
    fields = {"family": case.family, "subjects": case.subjects}
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
            j.x64 = config.x64  # shown by every view
        return declared_check(j, p.catalog.declared_check(CaseKind.RUN, s.variant))
    fields["array"] = case.array
    labels = case.subjects
    if case.across_families:  # two families, each by its reference as judged (DESIGN §5)
        labels = tuple(_stand_in(p, label, session) for label in labels)
    outcomes = [subject_outcome(p, label, session) for label in labels]
    for label, outcome in zip(labels, outcomes, strict=True):
        if isinstance(outcome, Fault):
            if not Verdict(outcome.verdict).ran:
                return judge.skipped(case.id, case.kind, outcome.what, **fields)
            fault = judge.judge_run("", label, outcome)
            return judge.not_compared(case.id, case.kind, fault, **fields)
    if case.kind.compares and case.kind != CaseKind.PAIR:  # an output, a Hessian product
        j = _judge_beyond(p, case, *outcomes, session=session)
        return with_evidence(j, p.example, outcomes)
    if case.kind == CaseKind.PAIR:
        j = with_evidence(_judge_pair(p, case, *outcomes, session=session), p.example, outcomes)
        aside = {a: b for a, b in zip(case.subjects, labels, strict=True) if a != b}
        j = judge.stood_in(j, aside) if aside else j
        return device_cases.precision_or_bug(p, case, j, outcomes[1], session)
    g = outcomes[0]
    fields.pop("array")
    try:
        check = CHECKS[case.kind]
        j = check.judgement(session, case.id, p.catalog, p.inputs, g, case.array, **fields)
    except TimeoutError as e:  # what happened, reported to the judge
        j = judge.check_fault(case.id, case.kind, fault_of(e), array=case.array, **fields)
    j = with_evidence(j, p.example)
    return declared_check(j, p.catalog.declared_check(case.kind, g.of))


def _stand_in(p: Plan, label: str, session: Session) -> str:
    """A family's reference for a comparison across families: itself, or where it is at
    fault its family's next float64 member that ran (what the family was judged against:
    `ExampleJudgement.references`); itself where none did."""
    if not isinstance(subject_outcome(p, label, session), Fault):
        return label
    family = p.subjects[label].family
    for s in p.subjects.values():
        if s.family == family and s.dtype == "float64" and s.label != label and s.device == "cpu":
            if isinstance(subject_outcome(p, s.label, session), Gradient):
                return s.label
    return label


def _judge_pair(
    p: Plan, case: Case, a: Gradient, b: Gradient, *, session: Session
) -> CaseJudgement:
    of = f" ({case.array})" if case.array else ""
    s = p.subjects.get(case.subjects[1])
    on = device_cases.judged_on(s.variant if s else None, s.device if s else "cpu")
    with session.phase(f"{p.example.name}: judging {a.label} against {b.label}{of}"), on:
        return judge_pair_of(
            p.catalog,
            p.inputs,
            case.id,
            a,
            b,
            case.array,
            session,
            info=case.across_families,
            declared=True,
        )


def _judge_beyond(
    p: Plan, case: Case, a: Gradient, b: Gradient, *, session: Session
) -> CaseJudgement:
    s = p.subjects.get(case.subjects[1])
    on = device_cases.judged_on(s.variant if s else None, s.device if s else "cpu")
    with session.phase(f"{p.example.name}: judging {a.label} against {b.label} ({case.array})"):
        with on:
            return judge_beyond_of(
                p.catalog, p.inputs, case, a, b, session, info=case.across_families
            )


def judge_plan(p: Plan, session: Session, emit=None) -> ExampleJudgement:
    """Every case of a plan, judged in order, each told as it is (`emit(CaseJudged)`)."""
    result = ExampleJudgement(p.example, p.inputs, dtypes=p.dtypes)
    result.notes.extend(p.notes)
    for case in p.cases:
        j = judge_case(p, case, session)
        result.judgements.append(j)
        if emit is not None:
            emit(CaseJudged(p.example.name, j))
    for label, s in p.subjects.items():
        if not_run(s):
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
        return self.agree and any(j.verdict.declared for j in self.judgements)

    @property
    def timed_out(self) -> bool:
        return any(j.verdict == Verdict.TIMEOUT for j in self.judgements)

    def word(self) -> str:
        """The worst verdict (what a search prints per value tried); a declared
        difference that does not show here is no failure of the search: `ok`, saying so."""
        if self.agree and not self.as_declared:
            absent = any(j.verdict.not_there for j in self.judgements)
            ok = str(Verdict.OK)
            return f"{ok} (the declared difference does not show)" if absent else ok
        worst = Verdict.worst(j.verdict for j in self.judgements)
        return str(worst or Verdict.SKIPPED)


def judge_pair_on(
    session: Session, catalog: Catalog, a: VariantRun, b: VariantRun, inputs: Inputs
) -> PairOutcome:
    """The runs A and B (each in its dtype, on its device) evaluated on `inputs` and judged
    as `weanj check` would judge them there, by the same judge (`judge_pair_of`, under the
    coarser dtype's tolerance: `V~V@float32` as check's float32 pair), with check's case
    ids, held to their declarations: a side at fault is that side's judgement (they part
    ways there, unless its fault is declared); a side declared not to apply leaves nothing
    to judge; a side that cannot run here (its backend, its device) is an
    `UnavailableError`, never an agreement."""
    ex = catalog.example
    outcomes = [session.outcome(r.variant, inputs, r.dtype, r.device) for r in (a, b)]
    found = PairOutcome(inputs)
    for r, o in zip((a, b), outcomes, strict=True):
        if isinstance(o, Fault):
            if o.verdict == Verdict.UNAVAILABLE:  # not here at all: no input would tell
                raise UnavailableError(f"{r.label} cannot run here: {o.what}")
            if not o.verdict.ran:
                return PairOutcome(inputs)
            wider = _float64_of(r, a, b, outcomes)
            j = judge.judge_run(
                run_id(ex, r.family, r.label), r.label, o, family=r.family, wider=wider
            )
            found.judgements.append(
                declared_check(j, catalog.declared_check(CaseKind.RUN, r.variant))
            )
    if found.judgements:
        return found
    ga, gb = outcomes
    for array in ex.wrt_names:
        case_id = pair_id(ex, a.family, a.label, b.label, array)
        with device_cases.judged_on(b.variant, b.device):
            j = judge_pair_of(catalog, inputs, case_id, ga, gb, array, session, declared=True)
        found.judgements.append(j)
    for name in ex.outputs:  # an output parts ways as a gradient does (docs/outputs.md)
        both = (a.label, b.label)
        case = Case(output_id(ex, name, *both), CaseKind.OUTPUT, a.family, both, name)
        with device_cases.judged_on(b.variant, b.device):
            found.judgements.append(judge_beyond_of(catalog, inputs, case, ga, gb, session))
    return found


def _float64_of(r: VariantRun, a: VariantRun, b: VariantRun, outcomes) -> Gradient | Fault | None:
    """The same variant's float64 outcome on the other side of the pair (`V~V@float32`),
    for a float32 run at fault: a float32-only NaN/Inf is named a float32 overflow, as
    check names it."""
    other, found = (b, outcomes[1]) if r is a else (a, outcomes[0])
    same = other.variant is r.variant and other.dtype == "float64" and r.dtype != "float64"
    return found if same else None
