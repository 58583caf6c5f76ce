"""The Julia variants where Julia runs: the bridge's index and dtype conventions, a user's
own Julia file with several gradient arrays, the kernels' own checks, and the Julia side
on its own (`julia/run.jl`) writing files that the store reads and refusing bad inputs
files in one line.

The pairwise comparisons of every variant with its family (Julia's included) live in the
registry-driven tests beside this file, and WeanJ's own tests in julia/test/runtests.jl
(`Pkg.test()`, run by .github/workflows/julia.yml); these tests check what is particular
to the bridge and to run.jl. Every test here is marked `julia` and skips, saying why,
where Julia is not available. Nothing here writes a Julia result into the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import weanj
from weanj import _julia, _registry

REPO = Path(__file__).resolve().parent.parent.parent
REASON = _julia.unavailable_reason()

pytestmark = [
    pytest.mark.julia,
    pytest.mark.skipif(REASON is not None, reason=f"Julia variants unavailable: {REASON}"),
]

# Each Julia variant of the Poisson examples and the JAX variant of its family.
COUNTERPARTS = [
    pytest.param("01-jacobi", "julia-jacobi", "jax-jacobi", id="julia-jacobi-vs-jax-jacobi"),
    pytest.param("02-gauss-seidel", "julia-lex", "jax-lex", id="julia-lex-vs-jax-lex"),
    pytest.param("02-gauss-seidel", "julia-rb", "jax-rb", id="julia-rb-vs-jax-rb"),
]


def asymmetric_inputs(n: int = 6, seed: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Small random θ and uobs: no symmetry that would hide swapped or transposed axes."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)), rng.standard_normal((n, n)) / (n + 1) ** 2


def evaluate(example: str, name: str, *args) -> tuple[float, np.ndarray]:
    v = weanj.variant(example, name)
    return float(np.asarray(v.loss(*args))), np.asarray(v.grad(*args))


def within_policy(g_ref, g, loss_ref, loss, dtype) -> bool:
    """DESIGN.md's tolerance policy for one pair of the same family."""
    tol = weanj.tolerance(dtype)
    g_ref, g = np.asarray(g_ref, np.float64), np.asarray(g, np.float64)
    if g.shape != g_ref.shape:
        return False
    grad_ok = np.max(np.abs(g - g_ref)) <= tol.grad * np.max(np.abs(g_ref))
    return bool(grad_ok and abs(loss - loss_ref) <= tol.loss * abs(loss_ref))


@pytest.mark.parametrize("example, julia, jax", COUNTERPARTS)
def test_same_indices_as_numpy(example, julia, jax):
    """numpy's theta[i-1, j-1] is Julia's θ[i, j]: Julia's gradient agrees elementwise
    with JAX's on inputs without symmetry, and its transpose does not."""
    theta, uobs = asymmetric_inputs()
    loss_j, g_j = evaluate(example, julia, theta, uobs, 3)
    loss_x, g_x = evaluate(example, jax, theta, uobs, 3)
    assert g_j.shape == theta.shape and g_j.dtype == np.float64 and g_j.flags.c_contiguous
    assert within_policy(g_x, g_j, loss_x, loss_j, "float64")
    assert not within_policy(g_x, g_j.T, loss_x, loss_j, "float64")


@pytest.mark.parametrize("example, julia, jax", COUNTERPARTS)
def test_float32_stays_float32(example, julia, jax):
    theta, uobs = (a.astype(np.float32) for a in asymmetric_inputs())
    loss_j, g_j = evaluate(example, julia, theta, uobs, 3)
    loss_x, g_x = evaluate(example, jax, theta, uobs, 3)
    assert g_j.dtype == np.float32
    assert np.asarray(weanj.variant(example, julia).loss(theta, uobs, 3)).dtype == np.float32
    assert within_policy(g_x, g_j, loss_x, loss_j, "float32")


def test_inputs_are_not_modified():
    theta, uobs = asymmetric_inputs()
    before = theta.copy(), uobs.copy()
    evaluate("02-gauss-seidel", "julia-lex", theta, uobs, 2)
    assert np.array_equal(theta, before[0]) and np.array_equal(uobs, before[1])


def test_bad_inputs_are_refused_before_julia():
    theta, uobs = asymmetric_inputs()
    v = weanj.variant("02-gauss-seidel", "julia-lex")
    with pytest.raises(weanj.InputError, match="float32 or float64"):
        v.loss(theta.astype(int), uobs, 2)
    with pytest.raises(weanj.InputError, match="square"):
        v.loss(theta[:, :5], uobs[:, :5], 2)


def test_the_julia_kernels_check_shapes_themselves():
    """Called directly (not through the bridge's checks), a Poisson kernel refuses a
    non-square θ instead of computing on a sub-block."""
    Main, WeanJ = _julia._start_julia()
    theta = Main.Array(np.ones((3, 4)))
    with pytest.raises(Exception, match="DimensionMismatch"):
        WeanJ.jacobi_loss(theta, theta, 1)


def test_backend_version_names_julia_and_enzyme():
    evaluate("02-gauss-seidel", "julia-lex", *asymmetric_inputs(), 1)
    version = weanj.variant("02-gauss-seidel", "julia-lex").backend_version()
    assert version.startswith("Julia 1.") and "Enzyme 0." in version


SMOOTH_JL = """
# A user's kernel: loops over two vectors and a parameter.
function smooth_loss(x, y, S)
    s = 0.0
    for i in eachindex(x, y)
        s += (S * x[i] - y[i])^2
    end
    return s
end
"""


@pytest.fixture
def smooth_example(tmp_path):
    """A user's example with its Julia file, registered for the test only."""
    (tmp_path / "julia").mkdir()
    path = tmp_path / "julia" / "smooth.jl"
    path.write_text(SMOOTH_JL)
    ex = weanj.register_example(
        weanj.Example(
            name="90-julia-smooth",
            arrays=("x", "y"),
            wrt=("y", "x"),
            params=(weanj.Param("S", default=3),),
            generate=lambda seed: {
                "x": np.random.default_rng(seed).standard_normal(7),
                "y": np.random.default_rng(seed + 1).standard_normal(7),
            },
        )
    )
    yield ex, path
    _registry.unregister_example(ex.name)
    _julia._KERNELS.pop((ex.name, "julia-smooth"), None)


def test_a_users_julia_file_with_two_gradient_arrays(smooth_example):
    ex, path = smooth_example
    v = weanj.julia_variant(ex, "julia-smooth", family="smooth", loss="smooth_loss", file=path)
    x, y = ex.generate(5)["x"], ex.generate(5)["y"]
    assert v.loss(x, y, 3) == pytest.approx(np.sum((3 * x - y) ** 2), rel=1e-14)
    g = v.grad(x, y, 3)
    assert list(g) == ["y", "x"]  # the example's wrt order
    r = 3 * x - y
    np.testing.assert_allclose(g["x"], 2 * 3 * r, rtol=1e-14)
    np.testing.assert_allclose(g["y"], -2 * r, rtol=1e-14)


# --- julia/run.jl: the Julia side on its own -------------------------------------------------


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


@pytest.fixture(scope="module")
def julia_alone() -> Path:
    julia, _ = _julia.find_julia()
    reason = _julia_project_reason(julia)
    if reason is not None:
        pytest.skip(reason)
    return julia


def run_jl(julia: Path, *args: str, root: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if root is not None:
        env["WEANJ_ROOT"] = str(root)
    return subprocess.run(
        [str(julia), f"--project={REPO}", str(REPO / "julia" / "run.jl"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def assert_one_line_error(done: subprocess.CompletedProcess, *fragments: str) -> None:
    assert done.returncode == 2, done.stderr
    # Julia may report precompilation on stderr first; the error is the last line, alone.
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("run.jl: error: "), done.stderr
    for fragment in fragments:
        assert fragment in last, last
    assert "Stacktrace" not in done.stderr and "ERROR" not in done.stderr
    assert "HDF5-DIAG" not in done.stderr  # the HDF5 library's own error stack, printed


@pytest.mark.slow
def test_run_jl_writes_files_the_store_reads(julia_alone, project):
    """`julia --project=. julia/run.jl 02-gauss-seidel` writes julia-lex and julia-rb in
    the store's format, on the shared inputs, agreeing with JAX."""
    done = run_jl(julia_alone, "02-gauss-seidel", root=project)
    assert done.returncode == 0, done.stderr
    shared = weanj.load_inputs("02-gauss-seidel")
    for name, jax in (("julia-lex", "jax-lex"), ("julia-rb", "jax-rb")):
        stored = weanj.load_gradient("02-gauss-seidel", name)  # refuses other inputs
        assert (stored.backend, stored.family, stored.dtype) == ("julia", name[6:], "float64")
        assert stored.params == {"K": shared["K"]}
        assert stored.inputs_sha256 == shared["sha256"]
        assert stored.backend_version.startswith("Julia 1.")
        loss_x, g_x = evaluate("02-gauss-seidel", jax, shared["theta"], shared["uobs"], shared["K"])
        assert within_policy(g_x, stored.gradient, loss_x, stored.loss, "float64")


@pytest.mark.slow
def test_run_jl_rejects_an_unknown_example_in_one_line(julia_alone):
    done = run_jl(julia_alone, "03-nothing")
    assert_one_line_error(done, "no Julia variants of 03-nothing; examples that have some:")


def _damage(path: Path, how: str) -> str:
    """Damage an inputs file; returns what the one-line error must say."""
    if how == "garbage":
        path.write_bytes(b"not an HDF5 file at all\n" * 40)
        return "cannot read inputs file"
    if how == "truncated":
        # HDF5 may refuse to open it, or open it and miss the datasets: either way, one line.
        path.write_bytes(path.read_bytes()[:2048])
        return "inputs file"
    with h5py.File(path, "r+") as f:
        if how == "nan":
            data = f["theta"][()]
            data[1, 2] = np.nan
            f["theta"][...] = data
            return "NaN/Inf values in theta"
        if how == "no-dataset":
            del f["uobs"]
            return "lacks the dataset uobs"
        if how == "tampered":
            f["uobs"][0, 0] = f["uobs"][0, 0] + 1.0
            return "does not match its recorded sha256"
        if how == "other-example":
            f.attrs["example"] = "01-jacobi"
            return "is for example 01-jacobi"
        if how == "bad-K":
            f.attrs["K"] = np.int64(0)
            return "K = 0"
    raise ValueError(how)


@pytest.mark.slow
@pytest.mark.parametrize(
    "how", ["garbage", "truncated", "nan", "no-dataset", "tampered", "other-example", "bad-K"]
)
def test_run_jl_refuses_a_bad_inputs_file_in_one_line(julia_alone, project, how):
    path = project / "shared_inputs" / "02-gauss-seidel.h5"
    expected = _damage(path, how)
    done = run_jl(julia_alone, "02-gauss-seidel", root=project)
    assert_one_line_error(done, str(path), expected, "weanj inputs regenerate 02-gauss-seidel")
    assert not (project / "results" / "02-gauss-seidel" / "gradients").exists()


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
