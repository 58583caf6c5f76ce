"""The cross-validation cases, read from the registry, and cached evaluations.

Every test is parametrised from `weanj.variants` / `weanj.families`, so a variant added
to `weanj/examples/<stem>.py` is cross-validated without touching these tests. Variants
whose backend is missing here appear as skipped tests that say why. Evaluations are
cached per process: each compiled function is built once and reused by several tests.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

import weanj
from weanj._registry import find_variant  # the registry entry, available or not

# Which reference algorithm each family computes (DESIGN.md: families are algorithms).
REFERENCE_ALGORITHM = {"jacobi": "jacobi", "lex": "lex", "rb": "rb"}

# Small problems for the Python-loop reference: odd n (so red and black counts differ)
# and enough sweeps that every point feels every other one.
SMALL_N, SMALL_K, SMALL_SEED = 7, 5, 20261130

_BACKEND_MARKS = {
    "julia": pytest.mark.julia,
    "kernex": pytest.mark.kernex,
    "enzyme": pytest.mark.enzyme,
}


def _registered(example: str) -> list[str]:
    return weanj.variants(example, available_only=False)


def _marks(example: str, names) -> list:
    """Backend markers, and a skip saying why where a variant cannot run here."""
    marks = []
    unavailable = weanj.unavailable_variants(example)
    for name in names:
        backend = find_variant(example, name).backend
        if backend in _BACKEND_MARKS:
            marks.append(_BACKEND_MARKS[backend])
        if name in unavailable:
            marks.append(pytest.mark.skip(reason=f"{example} {name}: {unavailable[name]}"))
    return marks


def variant_cases(*, families=None) -> list:
    """`pytest.param(example, name)` for every registered variant (of `families`)."""
    cases = []
    for example in weanj.example_names():
        for family, names in weanj.families(example).items():
            if families is not None and family not in families:
                continue
            for name in names:
                cases.append(
                    pytest.param(
                        example, name, id=f"{example}:{name}", marks=_marks(example, [name])
                    )
                )
    return cases


def pair_cases() -> list:
    """Every same-family pair of registered variants, `example:a-vs-b`."""
    cases = []
    for example in weanj.example_names():
        for names in weanj.families(example).values():
            for a, b in itertools.combinations(names, 2):
                cases.append(
                    pytest.param(
                        example, a, b, id=f"{example}:{a}-vs-{b}", marks=_marks(example, [a, b])
                    )
                )
    if not cases:
        cases.append(
            pytest.param(
                None,
                None,
                None,
                id="no-pairs",
                marks=pytest.mark.skip(
                    reason="no family of any example has two registered variants yet"
                ),
            )
        )
    return cases


def family_cases() -> list:
    """One representative per family: its first available variant.

    For what is a property of the algorithm rather than of an implementation (the
    fixed point it converges to) and for what costs a subprocess (`weanj run`); the
    other variants of the family are tied to it by the pair and reference tests.
    """
    cases = []
    for example in weanj.example_names():
        available = set(weanj.variants(example))
        for family, names in weanj.families(example).items():
            runnable = [n for n in names if n in available]
            if runnable:
                cases.append(pytest.param(example, runnable[0], id=f"{example}:{runnable[0]}"))
            else:
                cases.append(
                    pytest.param(
                        example,
                        None,
                        id=f"{example}:{family}",
                        marks=(
                            pytest.mark.skip(
                                reason=f"no variant of family {family} is available here"
                            )
                        ),
                    )
                )
    return cases


def family_of(example: str, name: str) -> str:
    return find_variant(example, name).family


def algorithm_of(example: str, name: str) -> str:
    family = family_of(example, name)
    if family not in REFERENCE_ALGORITHM:
        pytest.skip(f"family {family!r} has no numpy reference in tests/crossval/reference.py")
    return REFERENCE_ALGORITHM[family]


@functools.cache
def small_inputs(n: int = SMALL_N, seed: int = SMALL_SEED) -> tuple[np.ndarray, np.ndarray]:
    """θ ~ N(0, 1) and observations the size of a solution at this n (u ≈ h2·θ·O(1))."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((n, n))
    uobs = rng.standard_normal((n, n)) / (n + 1) ** 2
    return theta, uobs


@functools.cache
def shared_inputs(example: str) -> dict:
    """The committed shared inputs (read-only)."""
    return weanj.load_inputs(example)


def _call(example: str, name: str, theta, uobs, K: int) -> tuple[float, np.ndarray]:
    v = weanj.variant(example, name)
    return float(np.asarray(v.loss(theta, uobs, K))), np.asarray(v.grad(theta, uobs, K))


@functools.cache
def on_small(example: str, name: str, dtype: str = "float64") -> tuple[float, np.ndarray]:
    """(loss, gradient) of a variant on `small_inputs()` with K = SMALL_K, in `dtype`."""
    theta, uobs = small_inputs()
    return _call(example, name, theta.astype(dtype), uobs.astype(dtype), SMALL_K)


@functools.cache
def on_shared(example: str, name: str) -> tuple[float, np.ndarray]:
    """(loss, gradient) of a variant on the shared inputs at their K."""
    d = shared_inputs(example)
    return _call(example, name, d["theta"], d["uobs"], d["K"])


@functools.cache
def reference_on_small(algorithm: str) -> tuple[float, np.ndarray]:
    from . import reference

    theta, uobs = small_inputs()
    return (
        reference.loss(algorithm, theta, uobs, SMALL_K),
        reference.adjoint_gradient(algorithm, theta, uobs, SMALL_K),
    )


def assert_within_policy(loss_ref, g_ref, loss, g, dtype="float64", what=""):
    """`|ΔL| ≤ tol.loss·|L_ref|` and `|Δg| ≤ tol.grad·max|g_ref|` elementwise."""
    tol = weanj.tolerance(dtype)
    g_ref, g = np.asarray(g_ref, np.float64), np.asarray(g, np.float64)
    assert g.shape == g_ref.shape, f"{what}: gradient shape {g.shape} vs {g_ref.shape}"
    assert np.all(np.isfinite(g)) and np.isfinite(loss), f"{what}: NaN/Inf"
    dl = abs(loss - loss_ref)
    assert dl <= tol.loss * abs(loss_ref), (
        f"{what}: loss {loss!r} vs {loss_ref!r}, |ΔL|/|L| = {dl / abs(loss_ref):.2e} "
        f"> {tol.loss:g} ({dtype})"
    )
    scale = float(np.max(np.abs(g_ref)))
    worst = np.unravel_index(int(np.argmax(np.abs(g - g_ref))), g.shape)
    dg = float(np.abs(g - g_ref)[worst])
    assert dg <= tol.grad * scale, (
        f"{what}: max|Δg|/max|g_ref| = {dg / scale:.2e} > {tol.grad:g} ({dtype}) at "
        f"0-based {tuple(int(i) for i in worst)}"
    )
