"""The cross-validation cases, read from the registry and from weanj's case table.

Every test is parametrised from the registry, so a variant added to an example module is
cross-validated without touching these tests: the same-family pairs per gradient array,
the float32 pairs, the Taylor and jvp checks and the recorded references come from
`weanj._pipeline.engine._cases` itself (the table `pytest --weanj` and `weanj check` iterate) and
are answered by its one judge, through the run `pytest --weanj` itself makes
(`weanj._pytest_plugin.weanj_run`: the same `CheckRun`, its plans and its `judge_case`),
and each example's independent reference (`reference_<stem>.py`, plain Python loops of
docs/DESIGN.md's mathematics) checks every variant on small inputs. Variants whose
backend is missing here appear as skipped tests that say why. Evaluations are kept by
that one run per process (`the_run()`, its session): each compiled function is built
once and shared by every test that needs it; unlike `pytest --weanj` the gallery keeps
no evaluation records (`keep=False`): every evaluation is computed here.

A reference module offers `ALGORITHMS` ({family: algorithm}), `small_inputs(seed)`,
`random_inputs(rng)`, `loss(algorithm, arrays, params)`, `gradient(algorithm, arrays,
params)` ({wrt name: array}) and optionally `eager_inputs(seed)` (a case small enough to
run op by op, without jit; default: `small_inputs`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Callable

import numpy as np
import pytest

import weanj
from weanj._judge._contract import Fault
from weanj._judge._policy import tolerance
from weanj._judge._verdict import CaseJudgement
from weanj._model._verdicts import Verdict
from weanj._pipeline.engine import _table
from weanj._pytest_plugin import weanj_run
from weanj._registry import catalogs, find_variant  # the registry entry, available or not
from weanj._report._lines import message


@functools.cache
def the_run():
    """`pytest --weanj`'s run of every example, one per test process: every evaluation is
    computed once and shared."""
    return weanj_run(catalogs(None), keep=False)


# The independent reference of each built-in example (tests/crossval/reference_<...>.py).
REFERENCES = {
    "01-jacobi": "reference_poisson",
    "02-gauss-seidel": "reference_poisson",
    "03-advection": "reference_advection",
    "04-tridiagonal": "reference_tridiagonal",
    "05-deposition": "reference_deposition",
    "06-signed-grid": "reference_signed_grid",
}

_BACKEND_MARKS = {
    "julia": pytest.mark.julia,
    "kernex": pytest.mark.kernex,
    "enzyme": pytest.mark.enzyme,
}


@functools.cache
def reference_module(example: str):
    """The example's reference module, or None when it has none."""
    name = REFERENCES.get(example)
    if name is None:
        return None
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ModuleNotFoundError as e:
        if e.name and e.name.endswith(name):
            return None
        raise


def _marks(example: str, names, *, skips: bool = True) -> list:
    """Backend markers, and (with `skips`) a skip saying why where a variant cannot run
    here."""
    marks = []
    unavailable = weanj.unavailable_variants(example)
    for name in names:
        backend = find_variant(example, name).backend
        if backend in _BACKEND_MARKS:
            marks.append(_BACKEND_MARKS[backend])
        if skips and name in unavailable:
            marks.append(pytest.mark.skip(reason=f"{example} {name}: {unavailable[name]}"))
    return marks


def variant_cases(*, slow_if=None, rest_of_family_slow: bool = False) -> list:
    """`pytest.param(example, name)` for every registered variant of every example that
    has a reference module; `slow_if(variant)` marks some `slow` (`pytest -m slow`), and
    `rest_of_family_slow` every variant but the first of its family."""
    cases = []
    for example in weanj.example_names():
        for names in weanj.families(example).values():
            for i, name in enumerate(names):
                marks = _marks(example, [name])
                if (slow_if is not None and slow_if(find_variant(example, name))) or (
                    rest_of_family_slow and i > 0
                ):
                    marks.append(pytest.mark.slow)
                if reference_module(example) is None:
                    marks.append(pytest.mark.skip(reason=f"{example} has no reference module"))
                cases.append(pytest.param(example, name, id=f"{example}:{name}", marks=marks))
    return cases


# --- the case table ---------------------------------------------------------------------


def plan_of(example: str) -> _table.Plan:
    """The case table of an example on the committed shared inputs, as `pytest --weanj`
    holds it (live variants, float64 and float32, Taylor and jvp), or the error that
    leaves the example unjudged."""
    found = the_run().plans[example]
    if isinstance(found, Exception):
        raise found
    return found


def table_cases(
    select: Callable[[_table.Plan, _table.Case], bool],
    what: str,
    *,
    slow_if: Callable[[_table.Plan, _table.Case], bool] | None = None,
) -> list:
    """`pytest.param(example, case_id)` for every case of every example's table that
    `select(plan, case)` keeps, marked by the backends of its variants (and `slow` where
    `slow_if(plan, case)`), skipped where the table says it cannot run here."""
    cases = []
    for example in weanj.example_names():
        p = plan_of(example)
        for case in p.cases:
            if not select(p, case):
                continue
            names = [p.subjects[s].variant for s in case.subjects if s in p.subjects]
            marks = _marks(example, [v.name for v in names if v is not None], skips=False)
            if slow_if is not None and slow_if(p, case):
                marks.append(pytest.mark.slow)
            skip = p.skip_of(case)
            if skip is not None:
                marks.append(pytest.mark.skip(reason=f"{case.id}: {skip.verdict}: {skip.what}"))
            cases.append(pytest.param(example, case.id, id=case.id, marks=marks))
    if not cases:
        cases.append(
            pytest.param(None, None, id=f"no-{what}", marks=pytest.mark.skip(reason=f"no {what}"))
        )
    return cases


def subjects_of(p: _table.Plan, case: _table.Case) -> list[_table.Subject]:
    return [p.subjects[label] for label in case.subjects]


def is_variant(s: _table.Subject, dtype: str = "float64") -> bool:
    """A registered variant evaluated live at `dtype` (not a file)."""
    return s.variant is not None and s.gradient is None and s.dtype == dtype


def is_recorded(s: _table.Subject) -> bool:
    return s.gradient is not None and s.gradient.source == "recorded"


def judge(example: str, case_id: str) -> CaseJudgement:
    """The judge's answer to one case of the table (evaluations shared per process)."""
    p = plan_of(example)
    return the_run().judge_case(p, p.case(case_id))


def subject(example: str, label: str) -> weanj.Gradient:
    """What a case judged: a live evaluation (kept by the session) or a file as read; a
    subject at fault fails the test with its one line."""
    found = the_run().outcome(plan_of(example), label)
    assert not isinstance(found, Fault), f"{label}: {found.verdict}: {found.line}"
    return found


def assert_as_declared(example: str, j: CaseJudgement) -> None:
    """A pair judged `expected` (a gallery variant kept for the hazard it shows, declared
    with `weanj.Expected`), checked by hand on the arrays compared: they differ beyond the
    tolerance, only at the declared elements, and by no more than the declared bound."""
    e = j.expected
    assert e is not None and j.comparison is not None, message(j)
    a, b = (subject(example, label) for label in j.subjects)
    ga, gb = np.asarray(a.gradients[j.array]), np.asarray(b.gradients[j.array])
    scale = float(np.max(np.abs(ga)))
    allowed = max(tolerance(j.comparison.dtype).grad * scale, j.comparison.grad_floor)
    beyond = np.abs(gb.astype(np.float64) - ga.astype(np.float64)) > allowed
    declared = e.mask(j.array, plan_of(example).inputs.arrays, ga.shape)
    assert beyond.any(), f"{j.case}: declared to differ, and nothing does: {message(j)}"
    if declared is not None:
        outside = np.argwhere(beyond & ~declared)
        assert not outside.size, f"{j.case}: differs outside {j.declared}, at {outside.tolist()}"
    if e.bound is not None:
        measured = float(np.max(np.abs(gb - ga))) / scale
        assert measured <= e.bound, f"{j.case}: {measured:.2e} above the bound {e.bound}"


def assert_judged(j: CaseJudgement, *verdicts: Verdict) -> None:
    """A judgement that cannot be made here (skipped, stale, unavailable) skips saying why;
    otherwise its verdict is one of `verdicts`, or the test fails with the judge's whole
    message."""
    if j.verdict in (Verdict.SKIPPED, Verdict.STALE, Verdict.UNAVAILABLE):
        pytest.skip(f"{j.case}: {j.verdict}: {j.reason}")
    assert not j.failed and j.verdict in verdicts, message(j)


def family_cases(examples=None) -> list:
    """One representative per family: its first available variant.

    For what is a property of the algorithm rather than of an implementation (the
    fixed point it converges to) and for what costs a subprocess (`weanj run`); the
    other variants of the family are tied to it by the pair and reference tests.
    """
    cases = []
    for example in examples or weanj.example_names():
        available = set(weanj.variants(example))
        for family, names in weanj.families(example).items():
            runnable = [n for n in names if n in available]
            if runnable:
                cases.append(pytest.param(example, runnable[0], id=f"{example}:{runnable[0]}"))
            else:
                reason = f"no variant of family {family} is available here"
                cases.append(
                    pytest.param(
                        example,
                        None,
                        id=f"{example}:{family}",
                        marks=pytest.mark.skip(reason=reason),
                    )
                )
    return cases


def first_of_each_example(cases: list) -> list:
    """`cases` (params whose first value is the example) with all but each example's first
    marked `slow`: the fast suite keeps one per example, `pytest -m slow` the rest."""
    seen, out = set(), []
    for case in cases:
        example = case.values[0]
        if example in seen:
            case = pytest.param(*case.values, id=case.id, marks=[*case.marks, pytest.mark.slow])
        seen.add(example)
        out.append(case)
    return out


def family_of(example: str, name: str) -> str:
    return find_variant(example, name).family


def reference_of(example: str, name: str):
    """`(module, algorithm)`: the reference that `name`'s family must reproduce."""
    module = reference_module(example)
    family = family_of(example, name)
    if module is None or family not in module.ALGORITHMS:
        pytest.skip(f"family {family!r} of {example} has no reference algorithm")
    return module, module.ALGORITHMS[family]


def run_variant(example: str, name: str, arrays: dict, params: dict, *, checked: bool = True):
    """(loss, {wrt name: gradient}) of a variant, asserting that neither call changed its
    inputs: in-place kernels (Julia through juliacall, custom calls, a zero-copy numpy
    buffer) could write into the caller's arrays, which must stay bit for bit as given.
    Every crossval run of a variant checks it (the reference tests on small float64
    inputs, jit and non-jit, float32). `checked`: through the variant's direct-call
    functions, which validate the inputs; otherwise through its built functions, as
    weanj's own runs call them (a float32 run: casting may round a value onto an edge
    that `validate` refuses, e.g. a particle position onto 1.0)."""
    ex = weanj.example(example)
    v = weanj.variant(example, name)
    fns = v if checked else v.built
    before = {k: np.array(a, copy=True) for k, a in arrays.items()}
    args = ex.args(arrays, params)
    loss = float(np.asarray(fns.loss(*args)))
    gradients = {k: np.asarray(g) for k, g in ex.gradients(fns.grad(*args)).items()}
    for k, a in before.items():
        assert np.array_equal(arrays[k], a) and np.asarray(arrays[k]).dtype == a.dtype, (
            f"{name} changed its input {k}"
        )
    return loss, gradients


def _cast(arrays: dict, dtype: str) -> dict:
    return {k: np.asarray(a).astype(dtype) for k, a in arrays.items()}


@functools.cache
def on_small(example: str, name: str, dtype: str = "float64"):
    """(loss, gradients) of a variant on its example's small inputs, in `dtype`."""
    arrays, params = reference_module(example).small_inputs()
    return run_variant(example, name, _cast(arrays, dtype), params, checked=dtype == "float64")


@functools.cache
def reference_on_small(example: str, algorithm: str):
    module = reference_module(example)
    arrays, params = module.small_inputs()
    return module.loss(algorithm, arrays, params), module.gradient(algorithm, arrays, params)


def assert_within_policy(loss_ref, g_ref, loss, g, dtype="float64", what=""):
    """`|ΔL| ≤ tol.loss·|L_ref|` and, per gradient array, `|Δg| ≤ tol.grad·max|g_ref|`
    elementwise; `g_ref` and `g` are arrays or dicts of arrays."""
    tol = weanj.tolerance(dtype)
    assert np.isfinite(loss), f"{what}: loss is {loss}"
    dl = abs(loss - loss_ref)
    assert dl <= tol.loss * abs(loss_ref), (
        f"{what}: loss {loss!r} vs {loss_ref!r}, |ΔL|/|L| = {dl / abs(loss_ref):.2e} "
        f"> {tol.loss:g} ({dtype})"
    )
    refs = g_ref if isinstance(g_ref, dict) else {"": g_ref}
    gots = g if isinstance(g, dict) else {"": g}
    assert set(refs) == set(gots), f"{what}: gradient arrays {sorted(gots)} vs {sorted(refs)}"
    for name, ref in refs.items():
        label = f"{what} {name}".strip()
        ref, got = np.asarray(ref, np.float64), np.asarray(gots[name], np.float64)
        assert got.shape == ref.shape, f"{label}: gradient shape {got.shape} vs {ref.shape}"
        assert np.all(np.isfinite(got)), f"{label}: NaN/Inf"
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        diff = np.abs(got - ref)
        worst = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else ()
        dg = float(diff[worst]) if diff.size else 0.0
        assert dg <= tol.grad * scale, (
            f"{label}: max|Δg|/max|g_ref| = {dg / scale if scale else float('inf'):.2e} > "
            f"{tol.grad:g} ({dtype}) at 0-based {tuple(int(i) for i in worst)}"
        )


# --- the optional backends' Poisson variants (kernex, Enzyme-JAX) --------------------------


def optional_backend(marker: str, module: str, reason: str) -> list:
    """`pytestmark` of the tests of one optional backend: its marker, and a skip saying
    `reason` where the module `module` is not installed."""
    return [
        getattr(pytest.mark, marker),
        pytest.mark.skipif(importlib.util.find_spec(module) is None, reason=reason),
    ]


def assert_agrees_with_family_and_reference(
    name: str, sibling: str, algorithm: str, evaluate, theta, uobs, K: int, where: str = ""
) -> None:
    """`evaluate(variant) -> (loss, gradient)` in float64 on (theta, uobs, K): the Poisson
    variant `name` within the float64 policy of its family's JAX variant `sibling`, and of
    the plain-loop reference of `algorithm` (reference.py)."""
    from . import reference

    loss, grad = evaluate(name)
    sibling_loss, sibling_grad = evaluate(sibling)
    assert_within_policy(
        float(sibling_loss), sibling_grad, float(loss), grad, what=f"{name} vs {sibling}{where}"
    )
    assert_within_policy(
        reference.loss(algorithm, theta, uobs, K),
        reference.adjoint_gradient(algorithm, theta, uobs, K),
        float(loss),
        grad,
        what=f"{name} vs the loop reference{where}",
    )


def assert_float32_within_float64_policy(name: str, sibling: str, evaluated, sibling_float64):
    """A variant's float32 (loss, gradient), both float32, within the float32 policy of its
    family's JAX variant's float64 answer."""
    loss, grad = evaluated
    assert loss.dtype == np.float32 and grad.dtype == np.float32
    sibling_loss, sibling_grad = sibling_float64
    assert_within_policy(
        float(sibling_loss),
        sibling_grad,
        float(loss),
        grad,
        "float32",
        what=f"{name} float32 vs {sibling} float64",
    )
