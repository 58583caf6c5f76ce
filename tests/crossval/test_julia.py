"""The Julia variants where Julia runs: the bridge's index and dtype conventions, and the
Julia side on its own (`julia/run.jl`) writing files that the store reads.

The pairwise comparisons of every variant with its family (Julia's included) live in the
registry-driven tests beside this file; these tests check what is particular to Julia.
Every test here is marked `julia` and skips, saying why, where Julia is not available.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _julia

REPO = Path(__file__).resolve().parent.parent.parent
REASON = _julia.unavailable_reason()

pytestmark = [
    pytest.mark.julia,
    pytest.mark.skipif(REASON is not None, reason=f"Julia variants unavailable: {REASON}"),
]

# Each Julia variant and the JAX variant of its family that it must agree with.
COUNTERPARTS = [
    pytest.param("01-jacobi", "julia-jacobi", "jax-jacobi", id="julia-jacobi-vs-jax-jacobi"),
    pytest.param("02-gauss-seidel", "julia-lex", "jax-lex", id="julia-lex-vs-jax-lex"),
    pytest.param("02-gauss-seidel", "julia-rb", "jax-rb", id="julia-rb-vs-jax-rb"),
]


def asymmetric_inputs(n: int = 6, seed: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Small random θ and uobs: no symmetry that would hide swapped or transposed axes."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)), rng.standard_normal((n, n)) / (n + 1) ** 2


def evaluate(example: str, name: str, theta, uobs, K: int) -> tuple[float, np.ndarray]:
    v = weanj.variant(example, name)
    return float(np.asarray(v.loss(theta, uobs, K))), np.asarray(v.grad(theta, uobs, K))


@pytest.mark.parametrize("example, julia, jax", COUNTERPARTS)
def test_same_indices_as_numpy(example, julia, jax):
    """numpy's theta[i-1, j-1] is Julia's θ[i, j]: Julia's gradient agrees elementwise
    with JAX's on inputs without symmetry, and its transpose does not."""
    theta, uobs = asymmetric_inputs()
    loss_j, g_j = evaluate(example, julia, theta, uobs, 3)
    loss_x, g_x = evaluate(example, jax, theta, uobs, 3)
    assert g_j.shape == theta.shape and g_j.dtype == np.float64 and g_j.flags.c_contiguous
    assert weanj.compare(g_x, g_j, loss_x, loss_j).agree
    assert not weanj.compare(g_x, g_j.T).agree


@pytest.mark.parametrize("example, julia, jax", COUNTERPARTS)
def test_float32_stays_float32(example, julia, jax):
    theta, uobs = (a.astype(np.float32) for a in asymmetric_inputs())
    loss_j, g_j = evaluate(example, julia, theta, uobs, 3)
    loss_x, g_x = evaluate(example, jax, theta, uobs, 3)
    assert g_j.dtype == np.float32
    assert np.asarray(weanj.variant(example, julia).loss(theta, uobs, 3)).dtype == np.float32
    result = weanj.compare(g_x, g_j, loss_x, loss_j)
    assert result.dtype == "float32" and result.agree


def test_inputs_are_not_modified():
    theta, uobs = asymmetric_inputs()
    before = theta.copy(), uobs.copy()
    evaluate("02-gauss-seidel", "julia-lex", theta, uobs, 2)
    assert np.array_equal(theta, before[0]) and np.array_equal(uobs, before[1])


def test_non_float_inputs_are_refused():
    theta, uobs = asymmetric_inputs()
    with pytest.raises(weanj.InputError, match="float32 or float64"):
        weanj.variant("02-gauss-seidel", "julia-lex").loss(theta.astype(int), uobs, 2)


def test_backend_version_names_julia_and_enzyme():
    evaluate("02-gauss-seidel", "julia-lex", *asymmetric_inputs(), 1)
    version = weanj.variant("02-gauss-seidel", "julia-lex").backend_version()
    assert version.startswith("Julia 1.") and "Enzyme 0." in version


def _julia_project_reason(julia: Path) -> str | None:
    """Why `julia --project=.` cannot load the Julia side's own dependencies, or None."""
    try:
        done = subprocess.run(
            [str(julia), f"--project={REPO}", "-e", "using Enzyme, HDF5, SHA"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        return "loading Enzyme and HDF5 took over 10 minutes"
    if done.returncode != 0:
        return (
            "the top-level Project.toml is not instantiated; run "
            "julia --project=. -e 'using Pkg; Pkg.instantiate()'"
        )
    return None


@pytest.mark.slow
def test_run_jl_writes_files_the_store_reads(project):
    """`julia --project=. julia/run.jl 02-gauss-seidel` writes julia-lex and julia-rb in
    the store's format, on the shared inputs, agreeing with JAX."""
    julia, _ = _julia.find_julia()
    reason = _julia_project_reason(julia)
    if reason is not None:
        pytest.skip(reason)
    done = subprocess.run(
        [str(julia), f"--project={REPO}", str(REPO / "julia" / "run.jl"), "02-gauss-seidel"],
        env={**os.environ, "WEANJ_ROOT": str(project)},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr
    shared = weanj.load_inputs("02-gauss-seidel")
    for name, jax in (("julia-lex", "jax-lex"), ("julia-rb", "jax-rb")):
        stored = weanj.load_gradient("02-gauss-seidel", name)  # refuses other inputs
        assert (stored.backend, stored.family, stored.dtype) == ("julia", name[6:], "float64")
        assert stored.params == {"K": shared["K"]}
        assert stored.inputs_sha256 == shared["sha256"]
        assert stored.backend_version.startswith("Julia 1.")
        loss_x, g_x = evaluate("02-gauss-seidel", jax, shared["theta"], shared["uobs"], shared["K"])
        assert weanj.compare(g_x, stored.gradient, loss_x, stored.loss).agree


@pytest.mark.slow
def test_run_jl_rejects_an_unknown_example_in_one_line():
    julia, _ = _julia.find_julia()
    reason = _julia_project_reason(julia)
    if reason is not None:
        pytest.skip(reason)
    done = subprocess.run(
        [str(julia), f"--project={REPO}", str(REPO / "julia" / "run.jl"), "03-nothing"],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 2
    # Julia may report precompilation on stderr first; the error is the last line, alone.
    assert done.stderr.strip().splitlines()[-1] == (
        "run.jl: error: no Julia variants of 03-nothing; examples that have some: "
        "01-jacobi, 02-gauss-seidel"
    )
    assert "Stacktrace" not in done.stderr and "ERROR" not in done.stderr


@pytest.mark.slow
def test_weanj_run_saves_a_julia_gradient_with_julias_provenance(project):
    done = subprocess.run(
        [sys.executable, "-m", "weanj", "run", "01-jacobi", "julia-jacobi"],
        env={**os.environ, "WEANJ_ROOT": str(project)},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr
    stored = weanj.load_gradient("01-jacobi", "julia-jacobi")
    assert stored.backend == "julia" and stored.backend_version.startswith("Julia 1.")
