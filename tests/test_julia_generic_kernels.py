"""weanj's Julia kernels (`julia/src/`), generic over the element type, transliterated
line by line into Python and run where no Julia runs.

Every kernel takes arrays of any `Real` element type, the differentiated ones possibly
of another type than the constant ones, and allocates in their promoted type (issue 63:
ForwardDiff pushes its `Dual` numbers through the differentiated arrays only, so a
kernel typed `Matrix{T} where {T <: AbstractFloat}` refused it). What this file shows:

- no kernel of `julia/src/` constrains an array to `AbstractFloat` or converts to
  `Float64`/`Float32` by name (the signatures and the code, parsed);
- the transliterated kernels, on Float64 and Float32 numbers, give the losses the Python
  reference wrote into `julia/test/fixtures/` within weanj's tolerance policy (what
  `Pkg.test()` asks of the Julia kernels): the generic code computes what the typed code
  computed;
- on forward-mode dual numbers (`Dual` below: a value and partials, with ForwardDiff's
  rules: the value by the same operation on the values, so bit for bit the plain loss;
  promotion of a dual and a float to a dual of the promoted value type, `Float64(dual)`
  refused), seeded on every `wrt` array at once (as DifferentiationInterface's flat
  vector does) or on one array alone (the others plain floats), they give the fixtures'
  gradients: the promoted allocations and the Float64 accumulators carry the
  derivatives;
- the inputs `Pkg.test()` hands FiniteDifferences (every fixture case off the kinks) lie
  farther from the kernels' kinks than its steps reach.

The transliteration is tests/julia_kernels.py (on the numbers of tests/julia_numbers.py):
a reading of the Julia code, not a run of it. tests/test_julia_checks.py runs
`Pkg.test()`'s Taylor check on its losses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from .julia_kernels import LOSSES, WITH_OUTPUTS, advect, julia_loss, julia_outputs, minmod
from .julia_numbers import Dual, JArray, convert

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "julia" / "src"
FIXTURE_DIR = REPO / "julia" / "test" / "fixtures"
# The files that are not kernels: the package's table of contents and AD glue (whose
# `check_flags` accepts float arrays as inputs), DI's glue (the gradient's, the outputs'
# and the Hessian's), the precompile workload.
NOT_KERNELS = {"WeanJ.jl", "gradients.jl", "outputs.jl", "second_order.jl", "workload.jl"}
# runtests.jl's TOLERANCE (weanj's tolerance policy, docs/DESIGN.md §6)
TOLERANCE = {np.float64: (1e-12, 1e-11), np.float32: (1e-5, 1e-4)}


# --- the fixtures, as runtests.jl reads them -----------------------------------------------


def fixtures() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(FIXTURE_DIR.glob("*.json"))]


def as_julia(a: dict) -> np.ndarray:
    """runtests.jl's `decode`: numpy's indices (C order reversed, then the axes reversed)."""
    shape = tuple(a["shape"])
    return np.reshape(np.asarray(a["data"], dtype=np.float64), shape[::-1], order="F").T


def seeded(arrays: dict, names: list[str], dtype) -> dict:
    """The arrays with the `names` ones as duals seeded one partial per entry (in that
    order, entries in Julia's column-major order), the others plain `dtype` arrays."""
    n = sum(arrays[a].size for a in names)
    out, at = {}, 0
    for name, a in arrays.items():
        if name not in names:
            out[name] = a.astype(dtype)
            continue
        duals = np.empty(a.shape, dtype=object)
        for k, index in enumerate(np.ndindex(*a.shape[::-1])):
            partials = np.zeros(n, dtype=dtype)
            partials[at + k] = 1
            duals[index[::-1]] = Dual(dtype(a[index[::-1]]), partials)
        out[name], at = duals, at + a.size
    return out


def gradients_of(value: Dual, arrays: dict, names: list[str]) -> dict:
    """The partials of `value`, cut back into one array per seeded name."""
    out, at = {}, 0
    for name in names:
        a = arrays[name]
        g = np.empty(a.shape)
        for k, index in enumerate(np.ndindex(*a.shape[::-1])):
            g[index[::-1]] = value.p[at + k]
        out[name], at = g, at + a.size
    return out


def every_case(kinks: bool = True):
    for content in fixtures():
        for case in content["cases"]:
            if kinks or not case["on_kinks"]:
                yield pytest.param(content, case, id=f"{content['variant']}-{case['name']}")


# --- the signatures --------------------------------------------------------------------------


def code_of(text: str) -> str:
    """A Julia file without its docstrings, comments and string literals."""
    text = re.sub(r'"""(?:.|\n)*?"""', '""', text)
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
    return re.sub(r"#.*", "", text)


def signatures(code: str) -> list[str]:
    """Every method signature of a file's code: `function f(...) where {...}` (over
    several lines) and the one-line `f(...) where {...} = ...`."""
    found = []
    for m in re.finditer(r"^(?:@\w+\s+)?function\s+(\S+?)\(", code, re.M):
        found.append(m.group(1) + _balanced(code, m.end() - 1) + _where(code, m.end() - 1))
    for m in re.finditer(r"^([A-Za-z_][\w!]*)\(", code, re.M):
        head = _balanced(code, m.end() - 1)
        rest = code[m.end() - 1 + len(head) :]
        if re.match(r"\s*(where\s*\{[^}]*\}\s*)?=", rest):
            found.append(m.group(1) + head + _where(code, m.end() - 1))
    return found


def _balanced(code: str, start: int) -> str:
    depth = 0
    for k in range(start, len(code)):
        depth += {"(": 1, ")": -1}.get(code[k], 0)
        if depth == 0:
            return code[start : k + 1]
    raise AssertionError(f"unbalanced parentheses from {code[start : start + 60]!r}")


def _where(code: str, start: int) -> str:
    after = code[start + len(_balanced(code, start)) :]
    m = re.match(r"\s*where\s*(\{[^}]*\}|\S+)", after)
    return m.group(0) if m else ""


def test_no_kernel_constrains_an_array_to_abstractfloat_or_converts_to_float64():
    """Issue 63, acceptance 1: the signatures of every kernel file in julia/src/, parsed:
    none names `AbstractFloat` or a concrete float type (a ForwardDiff dual is a `Real`,
    not an `AbstractFloat`), and no code converts to `Float64`/`Float32` by name
    (`Float64(x)` of a dual has no method: the sums convert to `accumulator_type`)."""
    kernels = sorted(p for p in SRC.glob("*.jl") if p.name not in NOT_KERNELS)
    assert {p.name for p in kernels} >= {"poisson.jl", "advection.jl", "sums.jl"}
    losses_seen = set()
    for path in kernels:
        code = code_of(path.read_text())
        found = signatures(code)
        assert found, path
        for signature in found:
            assert not re.search(r"AbstractFloat|IEEEFloat|Float64|Float32", signature), (
                path.name,
                signature,
            )
            losses_seen |= set(re.findall(r"^(\w+_loss)\(", signature))
        assert not re.search(r"\bFloat(64|32)\s*\(", code), path.name
    assert losses_seen >= set(LOSSES)  # every exported loss's signature was read
    # and the parser does see a constraint where there is one (the former signature)
    former = (
        "function jacobi_loss(θ::Matrix{T}, uobs::Matrix{T}, K::Integer) "
        "where {T <: AbstractFloat}\n"
    )
    (signature,) = signatures(former)
    assert "AbstractFloat" in signature


def test_every_exported_loss_is_transliterated():
    exports = re.findall(r"^export (.*)$", (SRC / "WeanJ.jl").read_text(), re.M)
    exported = {n.strip() for line in exports for n in line.split(",")}
    assert {n for n in exported if n.endswith("_loss")} == set(LOSSES)
    assert set(WITH_OUTPUTS) <= exported
    assert {c["loss"] for c in fixtures()} <= set(LOSSES) | set(WITH_OUTPUTS)
    # every `_loss` a fixture does not name is the loss of one that returns outputs
    named = {c["loss"] for c in fixtures()}
    assert set(LOSSES) - named == {n.removesuffix("_and_residuals") for n in WITH_OUTPUTS}


# --- the generic kernels compute what the typed ones did ------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["Float64", "Float32"])
@pytest.mark.parametrize("content, case", list(every_case()))
def test_the_generic_kernels_give_the_fixtures_losses(content, case, dtype):
    """runtests.jl's fixture check of the loss (`L isa T`, within the tolerance policy of
    the Python reference's loss), on the transliterated generic kernels."""
    arrays = {a: as_julia(case["inputs"][a]).astype(dtype) for a in content["arrays"]}
    L = julia_loss(content, arrays, case["params"])
    assert type(L) is dtype
    expected = float(case["loss"])
    assert abs(float(L) - expected) <= TOLERANCE[dtype][0] * abs(expected)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["Float64", "Float32"])
@pytest.mark.parametrize("content, case", list(every_case(kinks=False)))
def test_dual_numbers_pass_through_and_give_the_fixtures_gradients(content, case, dtype):
    """ForwardDiff's numbers through the differentiated arrays, the constant arrays plain
    floats: every `wrt` array at once (DI's flat vector), then each alone (the others
    floats). The loss's value is the plain loss bit for bit, its type the dual of the
    arrays' float type, and its partials the fixtures' gradient within the tolerance
    policy (a gradient by forward mode, the reference's by its own adjoint)."""
    plain = {a: as_julia(case["inputs"][a]) for a in content["arrays"]}
    expected_loss = julia_loss(
        content, {a: x.astype(dtype) for a, x in plain.items()}, case["params"]
    )
    reference = {w: as_julia(case["gradient"][w]) for w in content["wrt"]}
    largest = max(float(np.max(np.abs(g))) for g in reference.values())
    groups = [content["wrt"]] + ([[w] for w in content["wrt"]] if len(content["wrt"]) > 1 else [])
    for names in groups:
        duals = seeded(plain, names, dtype)
        L = julia_loss(content, duals, case["params"])
        assert isinstance(L, Dual) and type(L.v) is dtype and L.p.dtype == dtype
        assert L.v == expected_loss, names  # the value path is the plain loss's
        found = gradients_of(L, plain, names)
        for name in names:
            error = float(np.max(np.abs(found[name] - reference[name])))
            assert error <= TOLERANCE[dtype][1] * largest, (names, name, error)


def test_a_float64_conversion_would_refuse_the_duals():
    """The transliteration's `convert` refuses a dual to a float as ForwardDiff does (no
    method `Float64(::Dual)`): the kernels never call it, which the test above shows."""
    with pytest.raises(TypeError, match="no method matching float64"):
        convert(np.float64, Dual(np.float64(1.0), [1.0]))


# --- the inputs runtests.jl hands FiniteDifferences --------------------------------------

# FiniteDifferences' `central_fdm(5, 1)` (`ad_backend`) moves one coordinate at a time
# (`grad`, `_jvp`) by a step of its own (src/methods.jl, `estimate_step`): from its bound
# estimator, a 7-point stencil of the fifth derivative whose default step in Float64 is
# (5/2 · eps · 10 / (10 · 0.536))^(1/7) ≈ 7.2e-3 (reaching 3 steps, 0.022), then
# (ε/M)^(1/5), about 1.2 times that where the function is a low-degree polynomial up to
# rounding (reaching 2 steps, 0.017), less where it curves more. A kink inside that
# reach would spoil the estimate; every input runtests.jl hands FiniteDifferences (each
# fixture case off the kinks, Float64) keeps every branch of its kernel, at every step,
# under moves of each coordinate alone by FD_REACH, more than twice that.
FD_REACH = 0.05


def advection_branches(c0: np.ndarray, u, v, T: int) -> tuple:
    """Every piece the T steps take from `c0`: per slope pair (a, b), the signs of a and
    b, and where they agree whether |a| <= |b| (where both limiters change their piece:
    elsewhere both are zero); the faces' upwind sides follow the constant velocities."""
    taken = []

    def recording(a, b):
        signs = (int(np.sign(a)), int(np.sign(b)))
        taken.append((*signs, signs[0] == signs[1] != 0 and abs(a) <= abs(b)))
        return minmod(a, b)

    c = JArray.of(c0, np.float64)
    advect(c, JArray.of(u, np.float64), JArray.of(v, np.float64), T, recording)
    return tuple(taken)


def cic_cells(pos: np.ndarray, n: int) -> tuple:
    """The cells `floor(pos * n - 1/2)` of every coordinate: where the loss has kinks."""
    return tuple(int(np.floor(x * n - 0.5)) for x in pos.reshape(-1))


def moved(a: np.ndarray):
    """`a` with one entry moved by ±FD_REACH, for every entry."""
    for index in np.ndindex(*a.shape):
        for delta in (FD_REACH, -FD_REACH):
            b = a.copy()
            b[index] += delta
            yield b


@pytest.mark.parametrize(
    "content, case",
    [
        p
        for p in every_case(kinks=False)
        if p.values[1]["finite_differences"]
        and p.values[0]["loss"] in ("muscl_loss", "muscl_minmax_loss", "cic_loss")
    ],
)
def test_the_finite_differences_inputs_lie_away_from_every_kink(content, case):
    """Acceptance of issue 63 (runtests.jl compares FiniteDifferences' gradient with
    Enzyme's on these cases): the kernels with kinks, 03 and 05, keep every branch when
    any entry of a differentiated array moves alone by FD_REACH; the others have none
    (Poisson: quadratic in θ; 04: rational, its pivots kept from zero by diagonal
    dominance; 06: quadratic in x, linear in w)."""
    arrays = {a: as_julia(case["inputs"][a]) for a in content["arrays"]}
    if content["loss"] == "cic_loss":
        n = arrays["rhoobs"].shape[0]
        cells = cic_cells(arrays["pos"], n)
        assert all(cic_cells(pos, n) == cells for pos in moved(arrays["pos"]))
        return
    u, v, T = arrays["u"], arrays["v"], case["params"]["T"]
    branches = advection_branches(arrays["c0"], u, v, T)
    assert all(advection_branches(c0, u, v, T) == branches for c0 in moved(arrays["c0"]))


def test_every_kernel_has_a_case_for_finite_differences():
    """runtests.jl compares FiniteDifferences' gradient with Enzyme's on every kernel: each
    fixture holds a case marked for it (and the test above checks its distance to the
    kinks); a case on kinks is never marked."""
    for content in fixtures():
        assert any(c["finite_differences"] for c in content["cases"]), content["variant"]
        assert not any(c["finite_differences"] and c["on_kinks"] for c in content["cases"])


def _with_outputs():
    for content in fixtures():
        if content["outputs"]:
            for case in content["cases"]:
                yield pytest.param(content, case, id=f"{content['variant']}-{case['name']}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["Float64", "Float32"])
@pytest.mark.parametrize("content, case", list(_with_outputs()))
def test_a_kernel_with_outputs_gives_the_fixtures_outputs_and_the_plain_loss(content, case, dtype):
    """runtests.jl's `outputs_beside_the_loss` on the transliterated kernel: each output
    in the arrays' type, within the tolerance policy of the reference's; its loss that of
    the kernel without outputs (`signfit_loss`) to the bit: the same residuals, summed in
    the same order."""
    arrays = {a: as_julia(case["inputs"][a]).astype(dtype) for a in content["arrays"]}
    outputs = julia_outputs(content, arrays, case["params"])
    assert list(outputs) == content["outputs"]
    for name in content["outputs"]:
        expected = as_julia(case["outputs"][name])
        assert all(type(v) is dtype for v in outputs[name])
        found = np.array([float(v) for v in outputs[name]]).reshape(expected.shape)
        bound = TOLERANCE[dtype][1] * float(np.max(np.abs(expected)))
        assert float(np.max(np.abs(found - expected))) <= bound, name
    plain = {**content, "loss": content["loss"].removesuffix("_and_residuals"), "outputs": []}
    assert plain["loss"] in LOSSES and content["loss"] in WITH_OUTPUTS
    assert julia_loss(content, arrays, case["params"]) == julia_loss(plain, arrays, {})
