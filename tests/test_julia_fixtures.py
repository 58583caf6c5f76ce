"""The Julia package's test fixtures, written by the Python side.

`julia/test/fixtures/<variant>.json` holds tiny fixed cases of one Julia variant: its
inputs and parameters, and the loss and gradient that the independent Python reference
computes (for the Poisson examples, `tests/crossval/reference.py`). `Pkg.test()`
(`julia/test/runtests.jl`) checks WeanJ's kernels against them under the tolerance
policy, so that Julia's own test run is a cross-language check. Nothing here runs Julia
or claims a Julia result.

`FIXTURES` is the table: one entry per Julia variant, naming its Python reference and
its cases. After changing a reference, or adding a kernel (one entry), regenerate:

    python -m tests.test_julia_fixtures

The tests check that the committed files are exactly what the Python side writes now,
that every Julia kernel of weanj has one, and that the fixtures, decoded as the Julia
test decodes them, agree with the JAX variants of the same family.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj._backends import _julia
from weanj._registry import catalog, catalogs, find_variant

from . import julia_smooth_cases

REPO = Path(__file__).resolve().parent.parent
FIXTURE_DIR = REPO / "julia" / "test" / "fixtures"
REGENERATE = "python -m tests.test_julia_fixtures"

Arrays = Mapping[str, np.ndarray]
Params = Mapping[str, int]
# A reference: (arrays, params) -> (loss, {wrt array name: gradient}), in float64.
Reference = Callable[[Arrays, Params], tuple[float, dict[str, np.ndarray]]]


@dataclass(frozen=True)
class Case:
    """One fixed input: `inputs()` makes the arrays (deterministically)."""

    name: str
    inputs: Callable[[], dict[str, np.ndarray]]
    params: dict[str, int]
    # On a kink where the Julia variant's convention (its reference) differs from the
    # JAX variants' of its family: their gradients are not compared there.
    julia_convention: bool = False
    # On the kernel's kinks (ties, particles on cell edges): the loss is not smooth along
    # any direction there, so runtests.jl's Taylor remainder test leaves the case out.
    on_kinks: bool = False
    # Farther from every kink than FiniteDifferences' steps reach (or with none): the
    # cases where runtests.jl compares its gradient with Enzyme's
    # (tests/test_julia_generic_kernels.py checks the distance).
    finite_differences: bool = True


@dataclass(frozen=True)
class Taylor:
    """runtests.jl's Taylor remainder test of Enzyme's gradient (docs/DESIGN.md, "The
    Taylor remainder test"; transliterated in tests/test_julia_checks.py): `directions`
    fixed unit directions per `wrt` array. No step and no threshold: the test asks for
    the order of convergence (rates ≥ 1.8 at the smallest resolved steps), valid for any
    kernel."""

    directions: int = 3


@dataclass(frozen=True)
class Fixture:
    """One Julia variant's fixture: `variant` of `example`, the Python `reference` that
    computes the expected loss and gradient, the `cases`, and the Taylor remainder test
    (of every case not `on_kinks`). `beyond`, for an example that declares outputs or
    the second order: the reference's outputs, their Jacobian and the loss's Hessian
    blocks (`beyond_of`)."""

    variant: str
    example: str
    reference: Reference
    cases: tuple[Case, ...]
    taylor: Taylor = field(default_factory=Taylor)
    beyond: Callable[[Arrays, Params], dict] | None = None


def reference_of(module: str, algorithm: str) -> Reference:
    """The reference computed by `tests/crossval/<module>.py`, which offers every
    example's reference interface: `loss(algorithm, arrays, params)` (float64, summed
    exactly) and `gradient(algorithm, arrays, params)` (`{wrt name: array}`, by a
    hand-derived adjoint). Imported on use, so that one broken reference module does not
    take the others' checks with it."""

    def compute(arrays: Arrays, params: Params):
        ref = importlib.import_module(f"{__package__}.crossval.{module}")
        return ref.loss(algorithm, arrays, params), ref.gradient(algorithm, arrays, params)

    def loss(arrays: Arrays, params: Params) -> float:
        ref = importlib.import_module(f"{__package__}.crossval.{module}")
        return ref.loss(algorithm, arrays, params)

    compute.loss = loss  # the loss alone (tests/test_julia_checks.py evaluates it often)
    return compute


def beyond_of(module: str, algorithm: str) -> Callable[[Arrays, Params], dict]:
    """`(arrays, params) -> {"outputs", "jacobian", "hessian"}` of `tests/crossval/
    <module>.py`, by its hand-derived functions of those names (docs/outputs.md): each
    output; each output's Jacobian by wrt array (`OUTPUT::ARRAY`: rows the output's
    elements, columns the array's, both in C order); each wrt array's own Hessian block."""

    def compute(arrays: Arrays, params: Params) -> dict:
        ref = importlib.import_module(f"{__package__}.crossval.{module}")
        return {
            what: getattr(ref, what)(algorithm, arrays, params)
            for what in ("outputs", "jacobian", "hessian")
        }

    return compute


# --- the Poisson examples (01-jacobi, 02-gauss-seidel) ---------------------------------


def poisson_case(n: int, K: int, seed: int) -> Case:
    """θ ~ N(0, 1) and observations of a solution's size, as the shared inputs: random, so
    that no symmetry hides a swapped axis or a transposed gradient."""

    def inputs() -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {"theta": rng.standard_normal((n, n)), "uobs": 0.01 * rng.standard_normal((n, n))}

    return Case(f"n{n}-K{K}", inputs, {"K": K})


# n = 1 (a single unknown), an even and an odd n, and K beyond the first iteration.
POISSON_CASES = (poisson_case(1, 2, 1601), poisson_case(4, 3, 1602), poisson_case(5, 4, 1603))


def poisson_fixture(variant: str, example: str, algorithm: str) -> Fixture:
    return Fixture(variant, example, reference_of("reference_poisson", algorithm), POISSON_CASES)


def reference_case(module: str, name: str, make: str, *args, **kwargs_of_case) -> Case:
    """A case whose inputs a reference module makes (`make(*args)` returns
    `(arrays, params)`), built on use."""

    def call():
        ref = importlib.import_module(f"{__package__}.crossval.{module}")
        return getattr(ref, make)(*args)

    return Case(name, lambda: call()[0], dict(call()[1]), **kwargs_of_case)


# --- 03-advection: random fields (smooth there), and ties where the conventions differ ---

ADVECTION_RANDOM = (
    reference_case("reference_advection", "n5-T2", "small_inputs", 0, finite_differences=False),
    reference_case("reference_advection", "n6-T3", "small_inputs", 1, finite_differences=False),
    Case("n5-T2-smooth", julia_smooth_cases.advection_inputs, {"T": 2}),  # for FD too
)
# The loss is piecewise quadratic in c0 and the random fields sit away from every kink:
# the Taylor test's smallest steps cross none, but FiniteDifferences' steps (about 1e-2)
# may (some slopes lie within 2e-3 of a tie). The ties sit on kinks.
ADVECTION_TIES = reference_case(
    "reference_advection", "ties-n6-T2", "tie_inputs", 0, julia_convention=True, on_kinks=True
)

# --- 04-tridiagonal: a few systems, down to 2×2 and 1×1 ----------------------------------

TRIDIAGONAL_CASES = (
    reference_case("reference_tridiagonal", "m3-n6", "small_inputs", 0),
    reference_case("reference_tridiagonal", "m3-n2", "sized_inputs", 3, 2, 1),
    reference_case("reference_tridiagonal", "m2-n1", "sized_inputs", 2, 1, 2),
)

# --- 05-deposition: particles on kinks and on the periodic wrap, and random ones ---------

# Particles on cell edges (floor's one-sided slope): the loss has kinks at the point; and
# particles away from them.
DEPOSITION_CASES = (
    reference_case("reference_deposition", "P12-n8-kinks-wrap", "small_inputs", 0, on_kinks=True),
    reference_case("reference_deposition", "P12-n8-kinks-wrap-2", "small_inputs", 1, on_kinks=True),
    Case("P5-n3-smooth", julia_smooth_cases.deposition_inputs, {}),
)

# --- 06-signed-grid: an odd n (the midpoint t = 0 on the grid), an even n, and n = 2 ----

SIGNED_GRID_CASES = (
    reference_case("reference_signed_grid", "m4-n7", "sized_inputs", 4, 7),
    reference_case("reference_signed_grid", "m3-n8", "sized_inputs", 3, 8),
    reference_case("reference_signed_grid", "m1-n2", "sized_inputs", 1, 2),
)

FIXTURES: tuple[Fixture, ...] = (
    poisson_fixture("julia-jacobi", "01-jacobi", "jacobi"),
    poisson_fixture("julia-lex", "02-gauss-seidel", "lex"),
    poisson_fixture("julia-rb", "02-gauss-seidel", "rb"),
    Fixture(
        "julia-muscl",
        "03-advection",
        reference_of("reference_advection", "muscl"),
        ADVECTION_RANDOM,
    ),
    # At the ties, the gradient Julia's `min` is predicted to give (docs/gallery/advection.md:
    # `ifelse(signbit(x - y), x, y)` returns y, Enzyme differentiates what is returned):
    # the Python reference of that convention, so that Pkg.test checks the prediction.
    Fixture(
        "julia-muscl-minmax",
        "03-advection",
        reference_of("reference_advection", "muscl-minmax-julia"),
        (*ADVECTION_RANDOM, ADVECTION_TIES),
    ),
    Fixture(
        "julia-thomas",
        "04-tridiagonal",
        reference_of("reference_tridiagonal", "thomas"),
        TRIDIAGONAL_CASES,
    ),
    Fixture(
        "julia-cic",
        "05-deposition",
        reference_of("reference_deposition", "cic"),
        DEPOSITION_CASES,
    ),
    # At n = 7 the loop's t is exactly 0 at the midpoint and sign(t) = 0, where XLA's
    # fused grid gives t = -5.6e-17 (python/weanj/examples/signed_grid.py). L is quadratic
    # in x and linear in w, but cubic along a direction moving both (Σ w·r(x)²): a
    # central difference along it is off by h²·Σ v_w·(A v_x)², 6.6e-4 relative at m1-n2
    # with h = 0.01 (tests/test_julia_checks.py). The Taylor test moves one array at a
    # time and asks only for the order of convergence.
    # Its residuals r are the example's output, and it is checked at the second order:
    # the fixture holds r, ∂r/∂x, ∂r/∂w and the Hessian blocks of x and w (by hand).
    Fixture(
        "julia-signfit",
        "06-signed-grid",
        reference_of("reference_signed_grid", "signfit"),
        SIGNED_GRID_CASES,
        beyond=beyond_of("reference_signed_grid", "signfit"),
    ),
)


# --- writing the files -----------------------------------------------------------------


def encode(a) -> dict:
    """An array as the fixtures hold it: numpy's shape and the values in C order (each
    float written as Python's shortest repr, which reads back exactly)."""
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float(x) for x in a.ravel(order="C")]}


def decode_as_julia(a: Mapping) -> np.ndarray:
    """What runtests.jl's `decode` does, in numpy: `reshape(data, reverse(shape))` in
    Julia's column-major order, then the axes reversed."""
    shape = tuple(a["shape"])
    data = np.asarray(a["data"], dtype=np.float64)
    return np.reshape(data, shape[::-1], order="F").transpose()


def render(fixture: Fixture) -> str:
    """The JSON text of a fixture file, from the reference and the registry."""
    kernel = _julia.julia_kernels([catalog(fixture.example)])[(fixture.example, fixture.variant)]
    cases = []
    for case in fixture.cases:
        arrays = case.inputs()
        loss, gradient = fixture.reference(arrays, case.params)
        cases.append(
            {
                "name": case.name,
                "params": {p: int(case.params[p]) for p in kernel.params},
                "inputs": {a: encode(arrays[a]) for a in kernel.arrays},
                "loss": float(loss),
                "gradient": {w: encode(gradient[w]) for w in kernel.wrt},
                **_beyond_case(fixture, arrays, case.params),
                "on_kinks": case.on_kinks,
                "finite_differences": case.finite_differences and not case.on_kinks,
            }
        )
    content = {
        "written_by": f"{REGENERATE} (the Python reference); do not edit",
        "example": fixture.example,
        "variant": fixture.variant,
        "loss": kernel.loss,
        "arrays": list(kernel.arrays),
        "wrt": list(kernel.wrt),
        "params": list(kernel.params),
        "taylor": vars(fixture.taylor),
        "outputs": list(kernel.outputs),
        "cases": cases,
    }
    return compact_json(content)


def _beyond_case(fixture: Fixture, arrays: Arrays, params: Params) -> dict:
    """A case's outputs, their Jacobian and the Hessian blocks, where the fixture has them
    (each matrix encoded as an array: rows, then columns)."""
    if fixture.beyond is None:
        return {}
    found = fixture.beyond(arrays, params)
    return {what: {k: encode(a) for k, a in found[what].items()} for what in found}


def compact_json(content: Mapping) -> str:
    """JSON text with lists of numbers or names on one line each: readable, and diffs
    stay small."""
    text = json.dumps(content, indent=2, ensure_ascii=False)
    return (
        re.sub(
            r"\[\n\s+([^\[\]{}]*?)\n\s+\]",
            lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",\n")) + "]",
            text,
        )
        + "\n"
    )


def fixture_path(fixture: Fixture) -> Path:
    return FIXTURE_DIR / f"{fixture.variant}.json"


def write_fixtures() -> list[Path]:
    """Write every fixture file (and remove files no entry writes)."""
    FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for fixture in FIXTURES:
        path = fixture_path(fixture)
        path.write_text(render(fixture), encoding="utf-8")
        written.append(path)
    for stale in set(FIXTURE_DIR.glob("*.json")) - set(written):
        stale.unlink()
    return written


# --- the tests -------------------------------------------------------------------------

IDS = [f.variant for f in FIXTURES]


@pytest.mark.parametrize("fixture", FIXTURES, ids=IDS)
def test_committed_fixtures_are_what_the_reference_writes(fixture):
    path = fixture_path(fixture)
    assert path.is_file(), f"{path} is missing; write it with {REGENERATE}"
    assert path.read_text(encoding="utf-8") == render(fixture), (
        f"{path} differs from what the reference writes now; regenerate it with {REGENERATE}"
    )


def test_every_julia_kernel_of_weanj_has_a_fixture():
    """Each Julia variant whose loss is in WeanJ (not a user's file) has an entry, and
    each entry one file, and no file is left over."""
    builtin = {k.variant for k in _julia.julia_kernels(catalogs()).values() if k.file is None}
    entries = {f.variant for f in FIXTURES}
    assert builtin == entries, (
        f"Julia variants without a FIXTURES entry: {sorted(builtin - entries)}; entries of "
        f"no Julia variant: {sorted(entries - builtin)}"
    )
    assert {p.stem for p in FIXTURE_DIR.glob("*.json")} == entries


def test_the_julia_decoding_is_numpys_c_order():
    a = np.arange(24.0).reshape(2, 3, 4) * 0.5 - 1
    for x in (a, a[0], a[0, 0], a[:, :1, 2]):
        encoded = json.loads(json.dumps(encode(x)))
        assert np.array_equal(decode_as_julia(encoded), x)


def _same_family_variant(fixture: Fixture) -> str | None:
    """A variant of the fixture's family that is not Julia's and can run here."""
    available = weanj.variants(fixture.example)
    for names in weanj.families(fixture.example).values():
        if fixture.variant in names:
            for name in names:
                if name in available and find_variant(fixture.example, name).backend != "julia":
                    return name
    return None


@pytest.mark.parametrize("fixture", FIXTURES, ids=IDS)
def test_fixtures_agree_with_the_jax_variants_of_their_family(fixture):
    """Decoded as runtests.jl decodes them, the fixtures' inputs give the JAX variant of
    the family the fixtures' loss and gradient (tolerance policy, float64): the files'
    index convention is right before any Julia reads them."""
    other = _same_family_variant(fixture)
    if other is None:
        pytest.skip(f"no variant of {fixture.variant}'s family is available here")
    content = json.loads(fixture_path(fixture).read_text(encoding="utf-8"))
    tol = weanj.tolerance("float64")
    v = weanj.variant(fixture.example, other)
    jax_convention = {c.name for c in fixture.cases if not c.julia_convention}
    for case in content["cases"]:
        if case["name"] not in jax_convention:
            continue  # at ties, where Julia's `min` convention is not JAX's
        arrays = [decode_as_julia(case["inputs"][a]) for a in content["arrays"]]
        args = (*arrays, *(case["params"][p] for p in content["params"]))
        loss = float(np.asarray(v.loss(*args)))
        assert abs(loss - case["loss"]) <= tol.loss * abs(case["loss"]), case["name"]
        g = v.grad(*args)
        found = g if isinstance(g, Mapping) else {content["wrt"][0]: g}
        for name in content["wrt"]:
            expected = decode_as_julia(case["gradient"][name])
            delta = np.max(np.abs(np.asarray(found[name]) - expected))
            assert delta <= tol.grad * np.max(np.abs(expected)), (case["name"], name)
        if content["outputs"]:  # the outputs, as the JAX variant returns them beside its loss
            (_, outputs), _ = v.functions().value_and_grad(*args)
            for name in content["outputs"]:
                expected = decode_as_julia(case["outputs"][name])
                delta = np.max(np.abs(np.asarray(outputs[name]) - expected))
                assert delta <= tol.grad * np.max(np.abs(expected)), (case["name"], name)


BEYOND = [f for f in FIXTURES if f.beyond is not None]


def _columns(f, x: np.ndarray, h: float) -> np.ndarray:
    """The Jacobian of `f` (an array of any shape) at x by central differences: rows
    f's elements, columns x's, both in C order (exact up to rounding where f is linear
    in x)."""
    columns = []
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += h
        minus[idx] -= h
        columns.append((np.ravel(f(plus)) - np.ravel(f(minus))) / (2 * h))
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("fixture", BEYOND, ids=[f.variant for f in BEYOND])
def test_the_hand_derived_jacobian_and_hessian_are_central_differences(fixture):
    """The fixture's Jacobian of each output and each array's Hessian block, derived by
    hand, against central differences of the reference's own outputs and gradient (06's
    residuals are linear in x and free of w, its gradient linear in x and free of w:
    central differences are exact there up to rounding)."""
    for case in fixture.cases:
        arrays, params = case.inputs(), case.params
        found = fixture.beyond(arrays, params)

        def moved(array, a, arrays=arrays):
            return {**arrays, array: a}

        for key, expected in found["jacobian"].items():
            output, array = key.split("::")

            def of(a, output=output, array=array, params=params, moved=moved):
                return fixture.beyond(moved(array, a), params)["outputs"][output]

            by_fd = _columns(of, np.asarray(arrays[array], np.float64), 1e-3)
            np.testing.assert_allclose(expected, by_fd, rtol=1e-9, atol=1e-9, err_msg=key)
        for array, expected in found["hessian"].items():

            def grad(a, array=array, params=params, moved=moved):
                return fixture.reference(moved(array, a), params)[1][array]

            by_fd = _columns(grad, np.asarray(arrays[array], np.float64), 1e-3)
            np.testing.assert_allclose(expected, by_fd, rtol=1e-8, atol=1e-8, err_msg=array)


if __name__ == "__main__":
    for written in write_fixtures():
        print(f"wrote {written.relative_to(REPO)}")
