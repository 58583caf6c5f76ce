"""`julia/test/runtests.jl`'s gradient check, transliterated into numpy and run on what
`Pkg.test()` runs it on, as far as that can be had without Julia: the losses of weanj's
Julia kernels transliterated line by line (tests/julia_kernels.py, equal to the Python
references' losses within the tolerance policy: tests/test_julia_generic_kernels.py), and
the gradients the Python references wrote into the fixtures (which `Pkg.test()` holds
Enzyme's gradient to, within 1e-11 of the largest entry). It shows that the check, as
written, passes on every fixture case off the kinks and fails on a gradient wrong by
1 %; it does not run Julia, Enzyme or the Julia kernels themselves (no Julia runs here).

The check is the Taylor remainder test (docs/DESIGN.md, "The Taylor remainder test"):
along the k-th fixed unit direction v of one `wrt` array (runtests.jl's `direction`:
`sin(1.7·m + 2.9·k)` over Julia's column-major positions m), the remainders
`r(h) = |L(x + h·v) − L(x) − h⟨g, v⟩|` for h halving from `1e-2·‖x‖` until three stand at
rounding level; it passes when the rates between the last three resolved remainders are
all ≥ 1.8, or when none is resolved (L linear along v). Each line of `taylor_test` and
`taylor_passes` below is the line of runtests.jl with the same name.

The check it replaces (central differences moving every `wrt` array along one joint
direction, step 0.01, threshold 1e-6) is transliterated too (`old_check`), to show it
failing on julia-signfit's m1-n2 and m3-n8 with the correct gradient: Σ w·r(x)² is
cubic along a direction moving x and w together, so the central difference is off by
h²·Σ v_w·(A v_x)², which this file computes independently.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from .julia_kernels import julia_loss
from .test_julia_fixtures import FIXTURE_DIR, FIXTURES, decode_as_julia

# runtests.jl's TAYLOR and AT_ROUNDING (python/weanj/_judge/_taylor.py's values)
RATE, MAX_STEPS, ROUNDING, RESOLVED, AT_ROUNDING = 1.8, 40, 64 * np.finfo(float).eps, 100.0, 3


def direction(x: np.ndarray, k: int) -> np.ndarray:
    """runtests.jl's `direction(x, k)`: Julia's linear index m runs in column-major order,
    which is numpy's Fortran order on the same axes."""
    m = np.arange(1, x.size + 1)
    return np.reshape(np.sin(1.7 * m + 2.9 * k), x.shape, order="F")


def taylor_test(loss, arrays: dict, name: str, g: np.ndarray, k: int):
    """runtests.jl's `taylor_test`: (remainders, rounding, finite)."""
    x = arrays[name]
    v = direction(x, k)
    v = v / math.sqrt(float(np.sum(v**2)))
    slope = float(np.sum(g * v))
    base = float(loss(arrays))
    norm = math.sqrt(float(np.sum(x**2)))
    h = 1e-2 * (norm if norm > 0 else math.sqrt(x.size))
    remainders, rounding, quiet = [], [], 0
    if not (math.isfinite(base) and math.isfinite(slope)):
        return remainders, rounding, False
    for _ in range(MAX_STEPS):
        value = float(loss({**arrays, name: x + h * v}))
        if not math.isfinite(value):
            return remainders, rounding, False
        r = abs(value - base - h * slope)
        rho = ROUNDING * max(abs(base), abs(value), abs(h * slope))
        remainders.append(r)
        rounding.append(rho)
        quiet = quiet + 1 if r <= RESOLVED * rho else 0
        if quiet == AT_ROUNDING:
            break
        h /= 2
    return remainders, rounding, True


def rates_of(test) -> list[float]:
    remainders, rounding, _ = test
    return [
        math.log2(a / b)
        for k, (a, b) in enumerate(zip(remainders, remainders[1:], strict=False))
        if a > RESOLVED * rounding[k] and b > RESOLVED * rounding[k + 1]
    ]


def taylor_passes(test) -> bool:
    """runtests.jl's `taylor_passes`."""
    if not test[2]:
        return False
    return all(rate >= RATE for rate in rates_of(test)[-3:])


# --- the fixtures, as runtests.jl reads them ---------------------------------------------


def cases():
    """(fixture entry, its JSON, one case) for every case runtests.jl Taylor-tests."""
    for fixture in FIXTURES:
        content = json.loads((FIXTURE_DIR / f"{fixture.variant}.json").read_text())
        for case in content["cases"]:
            if not case["on_kinks"]:
                yield pytest.param(fixture, content, case, id=f"{fixture.variant}-{case['name']}")


def problem(fixture, content, case):
    """The loss of the fixture's Julia kernel, transliterated (a function of the arrays by
    name, in Float64), the arrays decoded as runtests.jl decodes them, and the Python
    reference's gradient, which the fixture holds."""
    arrays = {a: decode_as_julia(case["inputs"][a]) for a in content["arrays"]}

    def loss(by_name: dict) -> float:
        return float(julia_loss(content, by_name, case["params"]))

    gradient = {w: decode_as_julia(case["gradient"][w]) for w in content["wrt"]}
    return loss, arrays, gradient


def test_every_fixture_is_taylor_tested_unless_it_sits_on_kinks():
    """Only the cases on kinks (03's ties, 05's particles on cell edges) are left out,
    and every kernel keeps some."""
    left_out, kept = set(), set()
    for fixture in FIXTURES:
        content = json.loads((FIXTURE_DIR / f"{fixture.variant}.json").read_text())
        assert content["taylor"] == {"directions": 3}
        for case in content["cases"]:
            (left_out if case["on_kinks"] else kept).add((fixture.variant, case["name"]))
    assert left_out == {
        ("julia-muscl-minmax", "ties-n6-T2"),
        ("julia-cic", "P12-n8-kinks-wrap"),
        ("julia-cic", "P12-n8-kinks-wrap-2"),
    }
    assert {v for v, _ in kept} == {f.variant for f in FIXTURES}


@pytest.mark.parametrize("fixture, content, case", list(cases()))
def test_the_taylor_check_passes_on_the_gradient_and_fails_when_it_is_1_percent_off(
    fixture, content, case
):
    loss, arrays, gradient = problem(fixture, content, case)
    largest = max(float(np.max(np.abs(g))) for g in gradient.values())
    for name, g in gradient.items():
        peak = np.unravel_index(np.argmax(np.abs(g)), g.shape)
        one_entry = g.copy()
        one_entry[peak] += 0.01 * largest
        for k in (1, 2, 3):
            test = taylor_test(loss, arrays, name, g, k)
            assert taylor_passes(test), (name, k, rates_of(test))
        # Scaled by 1.01, or one entry off by 1 % of the case's largest gradient entry
        # (an array whose gradient is zero, 04's `a` at n = 1, has no scaled variant):
        # along at least one of the three directions the rates fall to 1.
        wrongs = [one_entry] if not np.any(g) else [1.01 * g, one_entry]
        for wrong in wrongs:
            verdicts = [taylor_passes(taylor_test(loss, arrays, name, wrong, k)) for k in (1, 2, 3)]
            assert not all(verdicts), (name, verdicts)


# --- the check it replaces --------------------------------------------------------------


def old_check(loss, arrays: dict, gradient: dict, step=0.01, directions=3) -> list[float]:
    """runtests.jl's former check: every `wrt` array moved along one joint unit direction,
    `|D − ⟨g, v⟩| / max(|D|, |⟨g, v⟩|)` per direction, D the central difference."""
    errors = []
    for k in range(1, directions + 1):
        v = {a: direction(x, k) for a, x in arrays.items() if a in gradient}
        unit = math.sqrt(sum(float(np.sum(vi**2)) for vi in v.values()))
        v = {a: vi / unit for a, vi in v.items()}
        plus = {a: x + step * v[a] if a in v else x for a, x in arrays.items()}
        minus = {a: x - step * v[a] if a in v else x for a, x in arrays.items()}
        difference = (loss(plus) - loss(minus)) / (2 * step)
        directional = sum(float(np.sum(gradient[a] * v[a])) for a in v)
        errors.append(abs(difference - directional) / max(abs(difference), abs(directional)))
    return errors


def signfit_cubic_term(arrays: dict, k: int, step: float) -> float:
    """h²·Σ_i v_w[i]·(A v_x)[i]², A[i, j] = t_i^(j-1): the central difference's error
    along the joint direction, the loss being cubic there (its h³ coefficient, with the
    direction normalised as the old check normalises it)."""
    x, w = arrays["x"], arrays["w"]
    n = w.size
    t = -1 + 2 * np.arange(n) / (n - 1)
    a = t[:, None] ** np.arange(x.size)[None, :]
    vx, vw = direction(x, k), direction(w, k)
    unit = math.sqrt(float(np.sum(vx**2) + np.sum(vw**2)))
    vx, vw = vx / unit, vw / unit
    return step**2 * float(np.sum(vw * (a @ vx) ** 2))


@pytest.mark.parametrize("name", ["m1-n2", "m3-n8"])
def test_the_old_check_fails_on_signfit_with_the_correct_gradient(name):
    """The fixed-step check fails on julia-signfit's correct gradient by the cubic term
    alone (computed independently), which the Taylor test above does not mind."""
    (fixture,) = [f for f in FIXTURES if f.variant == "julia-signfit"]
    content = json.loads((FIXTURE_DIR / "julia-signfit.json").read_text())
    (case,) = [c for c in content["cases"] if c["name"] == name]
    loss, arrays, gradient = problem(fixture, content, case)
    errors = old_check(loss, arrays, gradient)
    assert max(errors) > 1e-6, errors  # what runtests.jl asserted below 1e-6
    for k, error in enumerate(errors, start=1):
        cubic = signfit_cubic_term(arrays, k, 0.01)
        v = {a: direction(x, k) for a, x in arrays.items()}
        unit = math.sqrt(sum(float(np.sum(vi**2)) for vi in v.values()))
        directional = sum(float(np.sum(gradient[a] * v[a] / unit)) for a in v)
        # D − ⟨g, v⟩ is the cubic term (up to rounding, far below it)
        scale = max(abs(directional + cubic), abs(directional))
        assert error == pytest.approx(abs(cubic) / scale, rel=1e-6)
