"""The Julia package's test fixtures, written by the Python side.

`julia/test/fixtures/<variant>.json` holds tiny fixed cases of one Julia variant: its
inputs and parameters, and the loss and gradient that the independent Python reference
computes (for the Poisson examples, `tests/crossval/reference.py`). `Pkg.test()`
(`julia/test/runtests.jl`) checks WeanJ's kernels against them under the tolerance
policy, so that Julia's own test run is a cross-language check. Nothing here runs Julia
or claims a Julia result.

`julia/test/rules.json` holds the rules julia/run.jl must follow as Python applies them:
inputs digests of arrays of every kind (`weanj._io._inputs.digest`), provenance keys of
parameters of every kind (`weanj._io._h5.provenance_key`), and where the store lets a
run go (`weanj._run.default_path`, `weanj._io._store.check_target`), case by case.
runtests.jl checks julia/provenance.jl and julia/store.jl against them; the tests here
check the digests and keys against the definitions of docs/DESIGN.md written out anew.

`FIXTURES` is the table: one entry per Julia variant, naming its Python reference and
its cases. After changing a reference, or adding a kernel (one entry), regenerate:

    python -m tests.test_julia_fixtures

The tests check that the committed files are exactly what the Python side writes now,
that every Julia kernel of weanj has one, and that the fixtures, decoded as the Julia
test decodes them, agree with the JAX variants of the same family.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import re
import struct
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj._backends import _julia
from weanj._errors import InputFileError
from weanj._io._h5 import provenance_key
from weanj._io._inputs import Inputs, digest
from weanj._io._store import check_target, write_gradient
from weanj._model import Gradient
from weanj._registry import find_variant
from weanj._run import default_path

REPO = Path(__file__).resolve().parent.parent
FIXTURE_DIR = REPO / "julia" / "test" / "fixtures"
RULES_PATH = REPO / "julia" / "test" / "rules.json"
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


@dataclass(frozen=True)
class FiniteDifferences:
    """runtests.jl's central-difference check of Enzyme's gradient (weanj's fd_check
    measure: `|D - g·v| / max(|D|, |g·v|)` along fixed unit directions)."""

    step: float = 1e-2
    directions: int = 3
    threshold: float = 1e-6


@dataclass(frozen=True)
class Fixture:
    """One Julia variant's fixture: `variant` of `example`, the Python `reference` that
    computes the expected loss and gradient, the `cases`, and the finite-difference check
    (None for a kernel whose kinks a central difference would straddle)."""

    variant: str
    example: str
    reference: Reference
    cases: tuple[Case, ...]
    finite_differences: FiniteDifferences | None = field(default_factory=FiniteDifferences)


def reference_of(module: str, algorithm: str) -> Reference:
    """The reference computed by `tests/crossval/<module>.py`, which offers every
    example's reference interface: `loss(algorithm, arrays, params)` (float64, summed
    exactly) and `gradient(algorithm, arrays, params)` (`{wrt name: array}`, by a
    hand-derived adjoint). Imported on use, so that one broken reference module does not
    take the others' checks with it."""

    def compute(arrays: Arrays, params: Params):
        ref = importlib.import_module(f"{__package__}.crossval.{module}")
        return ref.loss(algorithm, arrays, params), ref.gradient(algorithm, arrays, params)

    return compute


# --- the Poisson examples (01-jacobi, 02-gauss-seidel) ---------------------------------


def poisson_case(n: int, K: int, seed: int) -> Case:
    """θ ~ N(0, 1) and observations of a solution's size, as the shared inputs: random, so
    that no symmetry hides a swapped axis or a transposed gradient."""

    def inputs() -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {"theta": rng.standard_normal((n, n)), "uobs": 0.01 * rng.standard_normal((n, n))}

    return Case(f"n{n}-K{K}", inputs, {"K": K})


# n = 1 (a single unknown), an even and an odd n, and K beyond the first iteration. The
# losses are quadratic in θ, so central differences are exact up to rounding.
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
    reference_case("reference_advection", "n5-T2", "small_inputs", 0),
    reference_case("reference_advection", "n6-T3", "small_inputs", 1),
)
# The loss is piecewise quadratic in c0 and the random fields sit away from every kink:
# a step of 1e-5 crosses none, rounding stays ≈ 1e-9 (as weanj check's policy).
ADVECTION_FD = FiniteDifferences(step=1e-5, directions=3, threshold=1e-6)
ADVECTION_TIES = reference_case(
    "reference_advection", "ties-n6-T2", "tie_inputs", 0, julia_convention=True
)

# --- 04-tridiagonal: a few systems, down to 2×2 and 1×1 ----------------------------------

TRIDIAGONAL_CASES = (
    reference_case("reference_tridiagonal", "m3-n6", "small_inputs", 0),
    reference_case("reference_tridiagonal", "m3-n2", "sized_inputs", 3, 2, 1),
    reference_case("reference_tridiagonal", "m2-n1", "sized_inputs", 2, 1, 2),
)
# The loss is rational in a, b, c, d: truncation O(h²); at 1e-4 the error is ≤ 5e-9 here.
TRIDIAGONAL_FD = FiniteDifferences(step=1e-4, directions=3, threshold=1e-6)

# --- 05-deposition: particles on kinks and on the periodic wrap, and random ones ---------

DEPOSITION_CASES = (
    reference_case("reference_deposition", "P12-n8-kinks-wrap", "small_inputs", 0),
    reference_case("reference_deposition", "P12-n8-kinks-wrap-2", "small_inputs", 1),
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
        ADVECTION_FD,
    ),
    # At the ties, the gradient Julia's `min` is predicted to give (README, 03-advection:
    # `ifelse(signbit(x - y), x, y)` returns y, Enzyme differentiates what is returned):
    # the Python reference of that convention, so that Pkg.test checks the prediction.
    Fixture(
        "julia-muscl-minmax",
        "03-advection",
        reference_of("reference_advection", "muscl-minmax-julia"),
        (*ADVECTION_RANDOM, ADVECTION_TIES),
        finite_differences=None,  # the tie case sits on kinks
    ),
    Fixture(
        "julia-thomas",
        "04-tridiagonal",
        reference_of("reference_tridiagonal", "thomas"),
        TRIDIAGONAL_CASES,
        TRIDIAGONAL_FD,
    ),
    Fixture(
        "julia-cic",
        "05-deposition",
        reference_of("reference_deposition", "cic"),
        DEPOSITION_CASES,
        finite_differences=None,  # particles sit on kink lines: floor's one-sided slope
    ),
    # At n = 7 the loop's t is exactly 0 at the midpoint and sign(t) = 0, where XLA's
    # fused grid gives t = -5.6e-17 (python/weanj/examples/signed_grid.py). L is quadratic
    # in x and linear in w: central differences are exact up to rounding.
    Fixture(
        "julia-signfit",
        "06-signed-grid",
        reference_of("reference_signed_grid", "signfit"),
        SIGNED_GRID_CASES,
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
    kernel = _julia.julia_kernels()[(fixture.example, fixture.variant)]
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
            }
        )
    fd = fixture.finite_differences
    content = {
        "written_by": f"{REGENERATE} (the Python reference); do not edit",
        "example": fixture.example,
        "variant": fixture.variant,
        "loss": kernel.loss,
        "arrays": list(kernel.arrays),
        "wrt": list(kernel.wrt),
        "params": list(kernel.params),
        "finite_differences": None if fd is None else vars(fd),
        "cases": cases,
    }
    return compact_json(content)


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
    """Write every fixture file (and remove files no entry writes), and the rules."""
    FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for fixture in FIXTURES:
        path = fixture_path(fixture)
        path.write_text(render(fixture), encoding="utf-8")
        written.append(path)
    for stale in set(FIXTURE_DIR.glob("*.json")) - set(written):
        stale.unlink()
    RULES_PATH.write_text(render_rules(), encoding="utf-8")
    return [*written, RULES_PATH]


# --- the rules of julia/run.jl, as Python decides them (julia/test/rules.json) ----------

# Inputs digests: arrays of every kind and of the dtypes the digest names, 0-d and 1-d
# arrays, numbers of no symmetry (a transposed or reordered array changes the digest).
DIGEST_CASES: dict[str, dict[str, np.ndarray]] = {
    "float64 matrix and vector": {
        "theta": np.array([[1.5, -0.25, 1 / 3], [2.0**-30, -7.0, 0.1]]),
        "q": np.array([0.1, -2.5e-300, 3.0, -0.0]),
    },
    "every kind": {
        "x": np.array([[0.5, -1.25], [1e-3, 4.0]]),
        "z": np.array([[1 + 2j, -0.5 + 0.25j, 3.0 - 1j], [0.1j, -2.0 + 0j, 1 / 3 - 1j / 7]]),
        "edges": np.array([[0, 1], [1, 2], [2, 0]], dtype=np.int64),
        "cells": np.array([3, 0, -1, 2**31 - 1], dtype=np.int32),
        "mask": np.array([[True, False, True], [False, False, True]]),
        "tiny": np.array([0, 255, 7], dtype=np.uint8),
        "small": np.array([-128, 127], dtype=np.int8),
        "s": np.array(2.75),
    },
    "float32 and complex64": {
        "u": np.array([[0.1, -0.2], [0.3, 1e-8]], dtype=np.float32),
        "w": np.array([1 - 1j, 0.5 + 2j], dtype=np.complex64),
    },
}

# Provenance keys: parameters of every kind, names out of order (upper case, Greek),
# floats whose decimal spelling could differ (0.1, -0.0, 1e300) and a float that equals
# an integer (3.0 is `float:...`, not `int:3`).
KEY_CASES: dict[str, tuple[dict[str, tuple[str, object]], str]] = {
    "one int parameter": ({"K": ("int", 20)}, "float64"),
    "no parameters, float32": ({}, "float32"),
    "every kind": (
        {
            "nu": ("float", 0.1),
            "K": ("int", 2**31 - 1),
            "upwind": ("bool", True),
            "a": ("bool", False),
            "θ": ("float", -0.0),
            "big": ("float", 1e300),
            "three": ("float", 3.0),
        },
        "float64",
    ),
}
KEY_INPUTS = "0123456789abcdef" * 4


@dataclass(frozen=True)
class StoreCase:
    """A run of julia-lex (02-gauss-seidel, shared K = 20) and where it asks to go:
    `out` (relative to the root; None: the default place), with `existing` files
    (path, "gradient" | "file" | "dir"); `error`, a fragment of the refusal (None: the
    run may go there)."""

    name: str
    params: dict = field(default_factory=dict)
    dtype: str = "float64"
    out: str | None = None
    force: bool = False
    existing: tuple[tuple[str, str], ...] = ()
    error: str | None = None


STORE_EXAMPLE, STORE_VARIANT, STORE_SHARED = "02-gauss-seidel", "julia-lex", {"K": 20}
_OWN = f"results/{STORE_EXAMPLE}"
_RECORDED = f"{_OWN}/recorded/julia-lex.h5"
STORE_CASES = (
    StoreCase("float64 on the shared inputs: the store"),
    StoreCase("float32 on the shared inputs: the float32 store", dtype="float32"),
    StoreCase("another K: runs/", params={"K": 5}),
    StoreCase("another K in float32: runs/", params={"K": 5}, dtype="float32"),
    StoreCase(
        "another K into the store",
        params={"K": 5},
        out=f"{_OWN}/gradients/julia-lex.h5",
        error="the store holds only gradients of the shared inputs",
    ),
    StoreCase(
        "another variant's store file",
        out=f"{_OWN}/gradients/julia-rb.h5",
        error="that is the store file of julia-rb",
    ),
    StoreCase(
        "float32 into the float64 store",
        dtype="float32",
        out=f"{_OWN}/gradients/julia-lex.h5",
        error="that is the store file of julia-lex (float64)",
    ),
    StoreCase("a new recorded reference", out=_RECORDED),
    StoreCase(
        "a recorded reference, without --force",
        out=_RECORDED,
        existing=((_RECORDED, "gradient"),),
        error="a recorded reference is replaced only with --force",
    ),
    StoreCase(
        "a recorded reference, with --force",
        out=_RECORDED,
        force=True,
        existing=((_RECORDED, "gradient"),),
    ),
    StoreCase(
        "a recorded reference on another K",
        params={"K": 5},
        out=_RECORDED,
        error="a reference must be computed on the shared inputs",
    ),
    StoreCase(
        "another example's runs/",
        out="results/01-jacobi/runs/julia-lex.h5",
        error="weanj writes only results/02-gauss-seidel/gradients/",
    ),
    StoreCase(
        "another folder of results/", out=f"{_OWN}/diff/julia-lex.h5", error="weanj writes only"
    ),
    StoreCase("a file of runs/", out=f"{_OWN}/runs/mine.h5"),
    StoreCase("the shared inputs", out="shared_inputs/julia-lex.h5", error="(the shared inputs)"),
    StoreCase("a new file elsewhere", out="elsewhere/new.h5"),
    StoreCase(
        "a gradient file elsewhere",
        out="elsewhere/old.h5",
        existing=(("elsewhere/old.h5", "gradient"),),
    ),
    StoreCase(
        "another file elsewhere",
        out="elsewhere/notes.txt",
        existing=(("elsewhere/notes.txt", "file"),),
        error="it is not a readable weanj gradient file",
    ),
    StoreCase(
        "a directory",
        out="elsewhere/folder",
        existing=(("elsewhere/folder", "dir"),),
        error="is a directory",
    ),
)


def encode_typed(a: np.ndarray) -> dict:
    """An array of any dtype as rules.json holds it: numpy's dtype string and shape, the
    values in C order (complex as [re, im], bool as true/false)."""
    a = np.asarray(a)
    flat = a.ravel(order="C")
    if a.dtype.kind == "c":
        data = [[float(z.real), float(z.imag)] for z in flat]
    elif a.dtype.kind == "b":
        data = [bool(x) for x in flat]
    elif a.dtype.kind in "iu":
        data = [int(x) for x in flat]
    else:
        data = [float(x) for x in flat]
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": data}


def _kind(a: np.ndarray) -> str:
    return {"f": "float", "c": "complex", "b": "bool"}.get(a.dtype.kind, "int")


def digest_of(arrays: Mapping[str, np.ndarray]) -> str:
    """weanj's own inputs digest of `arrays`, through an example declaring them."""
    specs = tuple(weanj.Array(name, _kind(a)) for name, a in arrays.items())
    wrt = next(s.name for s in specs if s.differentiable)
    ex = weanj.Example(name="90-digest", arrays=specs, wrt=wrt, generate=lambda seed: {})
    return digest(ex, arrays)


@contextlib.contextmanager
def _project_root(root: Path):
    before = os.environ.get("WEANJ_ROOT")
    os.environ["WEANJ_ROOT"] = str(root)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("WEANJ_ROOT", None)
        else:
            os.environ["WEANJ_ROOT"] = before


def _existing(root: Path, path: str, kind: str, ex) -> None:
    target = root / path
    if kind == "dir":
        target.mkdir(parents=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        target.write_text("notes\n")
        return
    params = dict(STORE_SHARED)
    g = Gradient(
        ex,
        STORE_VARIANT,
        "lex",
        "float64",
        {"theta": np.zeros((2, 2))},
        0.0,
        params,
        KEY_INPUTS,
        provenance_key(KEY_INPUTS, params, "float64"),
        backend="julia",
    )
    write_gradient(g, target)


def store_outcome(case: StoreCase) -> dict:
    """Where Python's rules put `case`'s run (a path relative to the root), or the
    refusal's fragment, found in its message."""
    ex = weanj.example(STORE_EXAMPLE)
    params = {**STORE_SHARED, **case.params}
    key = provenance_key(KEY_INPUTS, params, case.dtype)
    g = Gradient(ex, STORE_VARIANT, "lex", case.dtype, {}, None, params, KEY_INPUTS, key)
    shared = Inputs(ex, {}, dict(STORE_SHARED), KEY_INPUTS)
    with tempfile.TemporaryDirectory() as tmp, _project_root(Path(tmp).resolve()):
        root = Path(tmp).resolve()
        for path, kind in case.existing:
            _existing(root, path, kind, ex)
        path = root / case.out if case.out is not None else default_path(g, shared)
        try:
            target = check_target(path, g, shared.key(case.dtype), force=case.force)
        except InputFileError as e:
            assert case.error is not None and case.error in str(e), (case.name, str(e))
            return {"target": None, "error": case.error}
        assert case.error is None, (case.name, target)
        return {"target": str(Path(target).relative_to(root)), "error": None}


def render_rules() -> str:
    """The JSON text of julia/test/rules.json, from weanj's own functions."""
    weanj.example_names()  # the examples are registered before any root changes
    digests = [
        {
            "name": name,
            "arrays": [{"name": a, **encode_typed(v)} for a, v in arrays.items()],
            "sha256": digest_of(arrays),
        }
        for name, arrays in DIGEST_CASES.items()
    ]
    keys = [
        {
            "name": name,
            "inputs": KEY_INPUTS,
            "dtype": dtype,
            "params": [{"name": p, "kind": k, "value": v} for p, (k, v) in params.items()],
            "key": provenance_key(KEY_INPUTS, {p: v for p, (_, v) in params.items()}, dtype),
        }
        for name, (params, dtype) in KEY_CASES.items()
    ]
    cases = [
        {
            "name": case.name,
            "params": case.params,
            "dtype": case.dtype,
            "out": case.out,
            "force": case.force,
            "existing": [{"path": p, "kind": k} for p, k in case.existing],
            **store_outcome(case),
        }
        for case in STORE_CASES
    ]
    store = {
        "example": STORE_EXAMPLE,
        "variant": STORE_VARIANT,
        "shared_params": STORE_SHARED,
        "cases": cases,
    }
    written_by = f"{REGENERATE} (weanj's digest, key and store rules); do not edit"
    return compact_json(
        {"written_by": written_by, "digests": digests, "keys": keys, "store": store}
    )


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
    builtin = {k.variant for k in _julia.julia_kernels().values() if k.file is None}
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


# --- the rules file ----------------------------------------------------------------------


def test_committed_rules_are_what_python_decides():
    assert RULES_PATH.is_file(), f"{RULES_PATH} is missing; write it with {REGENERATE}"
    assert RULES_PATH.read_text(encoding="utf-8") == render_rules(), (
        f"{RULES_PATH} differs from what weanj decides now; regenerate it with {REGENERATE}"
    )


# Each element of a decoded rules array as docs/DESIGN.md's little-endian bytes, packed by
# `struct` (not by numpy): the digest is recomputed from its definition.
_PACKING = {
    "<f8": "<d",
    "<f4": "<f",
    "<c16": "<dd",
    "<c8": "<ff",
    "<i8": "<q",
    "<i4": "<i",
    "|i1": "<b",
    "|u1": "<B",
    "|b1": "<?",
}


def digest_from_definition(arrays: list[dict]) -> str:
    """docs/DESIGN.md's inputs digest of rules.json's arrays, written out anew."""
    h = hashlib.sha256(b"weanj-inputs/2\n")
    for a in arrays:
        shape = ",".join(str(d) for d in a["shape"])
        h.update(a["name"].encode() + b"\0" + a["dtype"].encode() + b"\0")
        h.update(shape.encode() + b"\0")
        for value in a["data"]:
            values = value if isinstance(value, list) else [value]
            h.update(struct.pack(_PACKING[a["dtype"]], *values))
    return h.hexdigest()


def test_the_rules_digests_follow_the_definition():
    """The digests julia/provenance.jl must reproduce are docs/DESIGN.md's: name, NUL, dtype,
    NUL, shape, NUL, C-order little-endian bytes, per array in order, after the header."""
    content = json.loads(RULES_PATH.read_text(encoding="utf-8"))
    assert [c["name"] for c in content["digests"]] == list(DIGEST_CASES)
    for case in content["digests"]:
        assert case["sha256"] == digest_from_definition(case["arrays"]), case["name"]
        # What runtests.jl decodes is the array weanj digested.
        for a in case["arrays"]:
            original = DIGEST_CASES[case["name"]][a["name"]]
            assert a["dtype"] == original.dtype.str and tuple(a["shape"]) == original.shape
    dtypes = {a["dtype"] for c in content["digests"] for a in c["arrays"]}
    assert dtypes == set(_PACKING)  # every element type julia/provenance.jl names


def test_a_digest_written_out_by_hand():
    """One array x = [1.0] (float64): the bytes hashed, spelled out."""
    hashed = b"weanj-inputs/2\nx\x00<f8\x001\x00" + bytes.fromhex("000000000000f03f")
    assert digest_of({"x": np.array([1.0])}) == hashlib.sha256(hashed).hexdigest()
    # 0-d: an empty shape.
    hashed = b"weanj-inputs/2\nx\x00<f8\x00\x00" + bytes.fromhex("0000000000000040")
    assert digest_of({"x": np.array(2.0)}) == hashlib.sha256(hashed).hexdigest()


def _bits(x: float) -> str:
    return f"{int.from_bytes(struct.pack('>d', x), 'big'):016x}"


def test_the_rules_keys_follow_the_definition():
    """The keys julia/provenance.jl must reproduce: the lines of docs/DESIGN.md's key text,
    sorted by parameter name, each a typed value; floats by their IEEE bits."""
    content = json.loads(RULES_PATH.read_text(encoding="utf-8"))
    assert [c["name"] for c in content["keys"]] == list(KEY_CASES)
    for case in content["keys"]:
        lines = ["weanj-key/2", f"inputs={case['inputs']}", f"dtype={case['dtype']}"]
        for p in sorted(case["params"], key=lambda p: p["name"]):
            kind, value = p["kind"], p["value"]
            if kind == "float":
                text = _bits(value)
            elif kind == "bool":
                text = "true" if value else "false"
            else:
                text = str(value)
            lines.append(f"param:{p['name']}={kind}:{text}")
        text = "".join(line + "\n" for line in lines)
        assert case["key"] == hashlib.sha256(text.encode()).hexdigest(), case["name"]
    # The spellings that would differ between languages if written in decimal.
    assert (_bits(0.1), _bits(-0.0), _bits(3.0)) == (
        "3fb999999999999a",
        "8000000000000000",
        "4008000000000000",
    )
    one = f"weanj-key/2\ninputs={KEY_INPUTS}\ndtype=float64\nparam:K=int:20\n"
    assert content["keys"][0]["key"] == hashlib.sha256(one.encode()).hexdigest()


def test_the_rules_places_are_the_stores():
    """Where the cases without --out go: docs/DESIGN.md's store table."""
    content = json.loads(RULES_PATH.read_text(encoding="utf-8"))
    targets = {c["name"]: c["target"] for c in content["store"]["cases"] if c["out"] is None}
    assert targets == {
        "float64 on the shared inputs: the store": f"{_OWN}/gradients/julia-lex.h5",
        "float32 on the shared inputs: the float32 store": f"{_OWN}/gradients/float32/julia-lex.h5",
        "another K: runs/": f"{_OWN}/runs/julia-lex-K5.h5",
        "another K in float32: runs/": f"{_OWN}/runs/julia-lex-K5-float32.h5",
    }
    refused = [c for c in content["store"]["cases"] if c["error"] is not None]
    assert len(refused) == 10 and all(c["target"] is None for c in refused)


if __name__ == "__main__":
    for written in write_fixtures():
        print(f"wrote {written.relative_to(REPO)}")
