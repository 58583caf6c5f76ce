"""The case table of one example, built (docs/DESIGN.md, "The case table"): its subjects,
its cases and their ids. `_cases` reads it from the project (`read_plan`) and judges it;
this module says which cases exist and how each is named, once.

Which subjects are compared: every same-family pair of float64 subjects; each float32
subject against its own variant's float64 subject (precision alone, DESIGN §9.4; against
the family's float64 reference where the variant declares no float64 run); the family
references across families, for information. Case ids are the pytest ids.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field

from ..._errors import ExcludedError, UnavailableError
from ..._io._gradient_files import StoreScan
from ..._judge._contract import Fault, fault_of
from ..._judge._files import comparable, judge_file, misplaced_file, unreadable
from ..._judge._verdict import CaseJudgement
from ..._model import DTYPES, Catalog, Example, Gradient, Inputs, Variant, VariantRun
from ..._model._beyond import applies, order_of, pullback_names
from ..._model._verdicts import GRADIENT_CHECKS, CaseKind
from ..._places import PRODUCED, RECORDED, Places
from ..evaluation._on_device import label_of
from . import _device_cases as device_cases

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


def output_id(ex: Example, name: str, a: str, b: str) -> str:
    """The id of an output's pair case: `EX::output::NAME::A~B` (docs/outputs.md)."""
    return f"{ex.name}::{CaseKind.OUTPUT}::{name}::{a}~{b}"


def hvp_id(ex: Example, array: str, a: str, b: str) -> str:
    """The id of a Hessian-vector product's pair case: `EX::hvp::ARRAY::A~B`."""
    return f"{ex.name}::{CaseKind.HVP}::{array}::{a}~{b}"


def pullback_id(ex: Example, name: str, a: str, b: str) -> str:
    """The id of an output's pullback's pair case: `EX::pullback::OUTPUT::ARRAY::A~B`."""
    return f"{ex.name}::{CaseKind.PULLBACK}::{name}::{a}~{b}"


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
    across_families: bool = False  # a pair across families: for information, never a failure


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
    order: int = 1  # the order the run asks (`--order 2`; the example's own where higher)

    @property
    def example(self) -> Example:
        return self.catalog.example

    @functools.cached_property
    def has_checks(self) -> bool:
        """Whether the table holds gradient checks (read once it is built): its float64
        CPU runs then call what a check's runs want (`Session.checking`)."""
        return any(c.kind.is_check for c in self.cases)

    def case(self, case_id: str) -> Case:
        return next(c for c in self.cases if c.id == case_id)

    def skip_of(self, case: Case) -> Fault | None:
        """Why a case is not judged here before anything runs (a subject unavailable or
        not applicable), or None."""
        if case.kind == CaseKind.FILE:
            return None
        for label in case.subjects:
            s = self.subjects.get(label)
            if s is not None and not_run(s):
                return s.skip
        return None

    def same_family_pairs(self, dtype: str = "float64") -> list[tuple[VariantRun, VariantRun]]:
        """The pairs of live CPU runs that can run here, in table order, whose second run
        is in `dtype`: float64, every same-family pair of float64 runs; float32, each
        float32 run against its own float64 run. What `weanj fuzz` (`--dtype`) and
        `pytest --weanj-fuzz` search: the pairs `weanj check` judges."""
        out = []
        for c in self.cases:
            if c.kind != CaseKind.PAIR or c.across_families or c.array != self.example.wrt_names[0]:
                continue
            a, b = (self.subjects[label] for label in c.subjects)
            live = all(s.live and s.variant and s.device == "cpu" for s in (a, b))
            if live and b.dtype == dtype and self.skip_of(c) is None:
                out.append((VariantRun(a.variant, a.dtype), VariantRun(b.variant, b.dtype)))
        return out


def unregistered(g: Gradient) -> bool:
    """A store file of a variant the project no longer registers: a file of the produced
    store (`gradients/`) that a weanj evaluation wrote (`Gradient.evaluated`: it says
    whether its rounding levels were gathered, `levels`, or carries them, `noise_loss`;
    a user's experiment saved with `weanj.save_gradient` does neither) under a name no
    registered variant has. Such a file is never judged, and `weanj clean` removes it."""
    return g.source == "store" and g.of is None and g.evaluated


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
    order: int = 1,
) -> Plan:
    """The case table of an example. `live`: registered variants are evaluated (check,
    pytest); otherwise their store files are judged (diff). `scan`: the store's files
    (recorded references and, for diff, the store itself); `checks`: include the Taylor
    and jvp cases (live only); `order`: 2 adds the second order's cases (`--order 2`)."""
    ex = catalog.example
    for e in catalog.expectations:  # one line naming a declaration that cannot fit: before any run
        e.validate(inputs.arrays, ex.wrt_names)
    dtypes = tuple(d for d in DTYPES if d in dtypes)
    p = Plan(catalog, inputs, live, dtypes, devices=devices, order=order_of(ex, order))
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
            p.files[case_id] = unreadable(case_id, message)
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
    at = places.result_path(path) if places is not None else None
    if at is not None and at.kind == RECORDED:
        return f"recorded/{path.stem}"
    if at is not None and at.kind == PRODUCED and at.dtype != "float64":
        return f"{path.stem}@{at.dtype}"
    return path.stem


def not_run(s: Subject) -> bool:
    """A subject that does not run here (unavailable, skipped); any other skip is a fault
    the last check found."""
    return s.skip is not None and not s.skip.verdict.ran


def _skip(p: Plan, v: Variant, dtype: str) -> Fault | None:
    """Why a variant does not run here, reported to the judge (`fault_of`), or None."""
    why = v.unavailable_reason()
    if why is not None:
        return fault_of(UnavailableError(why))
    if dtype not in v.dtypes:
        return fault_of(ExcludedError(f"{v.name} supports {', '.join(v.dtypes)} only"))
    excluded = v.excluded(p.inputs.arrays, p.inputs.params)
    if excluded is not None:
        return fault_of(ExcludedError(f"{v.name} does not apply to these inputs: {excluded}"))
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
        if g.source == "file" and g.of is not None:  # a variant's store file holding another's
            case_id = file_id(ex, label)
            p.files[case_id] = misplaced_file(case_id, g)
            continue
        if _file_case(p, label, g, g.of):
            family = g.of.family if g.of is not None else g.family
            p.subjects[label] = Subject(label, family, g.dtype, gradient=g)


def _file_case(p: Plan, label: str, g: Gradient, registered: Variant | None) -> bool:
    """Judge a file the plan read; True when it can take part in pairs."""
    case_id = file_id(p.example, label)
    family = registered.family if registered is not None else None
    p.files[case_id] = judge_file(case_id, g, p.inputs, family=family)
    return comparable(p.files[case_id])


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


def _own_float64(p: Plan, s: Subject, ref: Subject) -> Subject:
    """What a float32 subject is judged against: its own float64 run, so that the check
    measures precision alone (a port wrong in float64 is the family pairs' to say, once);
    the family's float64 reference where it has none (a float32-only variant, a file of
    no registered variant). Decided from the declarations, not from what runs here, so
    that the case ids are the same on every machine."""
    if s.variant is not None and "float64" in s.variant.dtypes:
        own = p.subjects.get(label_of(s.variant, "float64"))
        if own is not None:
            return own
    return ref


def _pair_cases(
    p: Plan, family: str, a: Subject, b: Subject, *, across_families: bool = False
) -> list[Case]:
    """The cases of a pair: each gradient array; each output the example declares; of
    float64 CPU runs (a check's), each output's pullback `Jᵀ·w` by real wrt array and,
    at the second order, each array's Hessian-vector product."""
    ex, both = p.example, (a.label, b.label)
    found = [
        Case(
            pair_id(ex, family, a.label, b.label, array, info=across_families),
            CaseKind.PAIR,
            family,
            both,
            array,
            across_families=across_families,
        )
        for array in ex.wrt_names
    ]
    # a file holds outputs or Hessian products only where written with them (a recorded
    # reference of before, none): its pair has no such case
    files = [s.gradient for s in (a, b) if s.gradient is not None]
    found += [
        Case(output_id(ex, o, *both), CaseKind.OUTPUT, family, both, o, across_families)
        for o in ex.outputs
        if all(o in g.outputs for g in files)
    ]
    checked = all(s.dtype == "float64" and s.device == "cpu" for s in (a, b))
    if checked and all(g.pullback is not None for g in files):
        found += [
            Case(pullback_id(ex, k, *both), CaseKind.PULLBACK, family, both, k, across_families)
            for k in pullback_names(ex)
        ]
    if p.order >= 2 and checked and all(g.hvp is not None for g in files):
        found += [
            Case(hvp_id(ex, array, *both), CaseKind.HVP, family, both, array, across_families)
            for array in ex.wrt_names
        ]
    return found


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
                p.cases.extend(_pair_cases(p, family, _own_float64(p, s, ref), s))
    for fa, fb in itertools.combinations(references, 2):
        p.cases.extend(
            _pair_cases(p, f"{fa} vs {fb}", references[fa], references[fb], across_families=True)
        )


def _add_checks(p: Plan) -> None:
    ex = p.example
    for s in p.subjects.values():
        if s.variant is None or s.dtype != "float64" or not s.live or s.device != "cpu":
            continue  # the gradient checks are the CPU float64 run's
        for kind in (k for k in GRADIENT_CHECKS if applies(k, ex, p.order)):
            for array in ex.wrt_names:
                case_id = check_id(ex, s.family, s.label, kind, array)
                p.cases.append(Case(case_id, kind, s.family, (s.label,), array))
