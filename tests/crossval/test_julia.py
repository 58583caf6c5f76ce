"""The Julia variants where Julia runs: the bridge's index and dtype conventions, arrays
of every kind (complex gradients in the stored convention, int indices, bools), a user's
own Julia file with several gradient arrays, a callable with a buffer of its own (the
loss's activity), the kernels' own checks, and the Julia side on its own
(`julia/run.jl`) writing format-2 files where the store's rules say, which the store
reads, and refusing bad inputs files in one line.

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
from weanj import _registry
from weanj._backends import _julia, _julia_find
from weanj._model import provenance_key

from ..helpers import graph_fields, graph_gradient

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
    """docs/DESIGN.md's tolerance policy for one pair of the same family."""
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
    with pytest.raises(weanj.InputError, match="expected float64 or float32"):
        v.loss(theta.astype(int), uobs, 2)
    with pytest.raises(weanj.InputError, match=r"expected \(n, n\)"):
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


# A user's kernel: loops over two vectors and a parameter (WeanJ's tests include it too).
SMOOTH_JL = (REPO / "julia" / "test" / "smooth_kernel.jl").read_text()


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


GRAPH_JL = """
# A user's kernel over arrays of every kind: edges are 1-based indices into z (the bridge
# adds one), mask is Bool, scale a Float64, steps an Int, flag a Bool.
function graph_loss(x, z, edges, mask, w, scale, steps, flag)
    s = 0.0
    for e in axes(edges, 1)
        if mask[e]
            s += scale * abs2(z[edges[e, 1]] - z[edges[e, 2]])
        end
    end
    for i in eachindex(x, w)
        s += steps * x[i]^2 + (flag ? w[i] : zero(w[i]))
    end
    return s
end

# A callable with a scratch buffer of its own, which holds values the loss depends on.
struct Scratch
    buffer::Vector{Float64}
end
function (s::Scratch)(x, y)
    s.buffer .= 2 .* x .- y
    return sum(abs2, s.buffer)
end
const scratch_loss = Scratch(zeros(7))
"""


@pytest.fixture
def graph_file(tmp_path):
    (tmp_path / "julia").mkdir()
    path = tmp_path / "julia" / "graph.jl"
    path.write_text(GRAPH_JL)
    made = []

    def register(example):
        made.append(example.name)
        return weanj.register_example(example)

    yield path, register
    for name in made:
        _registry.unregister_example(name)
        for key in [k for k in _julia._KERNELS if k[0] == name]:
            _julia._KERNELS.pop(key)


def test_every_kind_crosses_and_complex_gradients_are_the_stored_convention(graph_file):
    """Int32 indices arrive 1-based, bools as Bool, the parameters as Float64, Int and
    Bool; the gradient of the complex array is ∂L/∂Re z + i·∂L/∂Im z (not its conjugate),
    computed here from the 0-based indices in numpy."""
    path, register = graph_file
    ex = register(weanj.Example(name="90-julia-graph", **graph_fields(), generate=lambda seed: {}))
    v = weanj.julia_variant(ex, "julia-graph", family="graph", loss="graph_loss", file=path)
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(4), rng.standard_normal(4)
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    edges = np.array([[0, 1], [1, 3], [3, 0], [2, 3]], dtype=np.int32)
    mask = np.array([True, False, True, True])
    g = v.grad(x, z, edges, mask, w, 0.5, 3, True)
    expected = graph_gradient(x, z, edges, mask, 0.5, 3)
    assert list(g) == ["z", "x"] and g["z"].dtype == np.complex128
    np.testing.assert_allclose(g["z"], expected["z"], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(g["x"], expected["x"], rtol=1e-14)
    a, b = z[edges[:, 0]], z[edges[:, 1]]
    loss = 0.5 * np.sum(mask * np.abs(a - b) ** 2) + 3 * np.sum(x**2) + np.sum(w)
    assert float(v.loss(x, z, edges, mask, w, 0.5, 3, True)) == pytest.approx(loss, rel=1e-14)


def test_a_callable_with_its_own_buffer_needs_function_duplicated(graph_file):
    """Passed bare, Enzyme refuses a callable that writes to its own memory
    (EnzymeMutabilityException): one line naming the option; with
    function='duplicated' the buffer gets a shadow and the gradient is right."""
    path, register = graph_file
    ex = register(
        weanj.Example(
            name="90-julia-scratch",
            arrays=("x", "y"),
            wrt=("x", "y"),
            generate=lambda seed: {},
        )
    )
    bare = weanj.julia_variant(ex, "julia-bare", family="s", loss="scratch_loss", file=path)
    dup = weanj.julia_variant(
        ex, "julia-dup", family="s", loss="scratch_loss", file=path, function="duplicated"
    )
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal(7), rng.standard_normal(7)
    with pytest.raises(weanj.DefinitionError, match="function='duplicated'"):
        bare.grad(x, y)
    g = dup.grad(x, y)
    np.testing.assert_allclose(g["x"], 4 * (2 * x - y), rtol=1e-14)
    np.testing.assert_allclose(g["y"], -2 * (2 * x - y), rtol=1e-14)


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
    julia, _ = _julia_find.find_julia()
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
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_run_jl_writes_files_the_store_reads(julia_alone, project, dtype):
    """`julia --project=. julia/run.jl 02-gauss-seidel [--dtype float32]` writes julia-lex
    and julia-rb as format-2 files of the shared inputs (gradients/, or gradients/float32/),
    with the key Python computes, agreeing with JAX."""
    done = run_jl(julia_alone, "02-gauss-seidel", "--dtype", dtype, root=project)
    assert done.returncode == 0, done.stderr
    shared = weanj.read_inputs("02-gauss-seidel")
    folder = project / "results" / "02-gauss-seidel" / "gradients"
    for name, jax in (("julia-lex", "jax-lex"), ("julia-rb", "jax-rb")):
        path = folder / (f"{name}.h5" if dtype == "float64" else f"float32/{name}.h5")
        assert path.is_file(), done.stdout
        stored = weanj.load_gradient("02-gauss-seidel", name, dtype=dtype)  # refuses others
        assert (stored.backend, stored.family, stored.dtype) == ("julia", name[6:], dtype)
        assert stored.format == 2 and stored.key == shared.key(dtype)
        assert stored.params == {"K": shared.params["K"]}
        assert stored.backend_version.startswith("Julia 1.")
        args = shared.args(dtype)
        loss_x, g_x = evaluate("02-gauss-seidel", jax, *args)
        assert within_policy(g_x, stored.gradient, loss_x, stored.loss, dtype)


@pytest.mark.slow
def test_run_jl_puts_other_parameters_in_runs(julia_alone, project):
    """Another K is not the shared inputs' run: results/<ex>/runs/<variant>-K5.h5, with
    its own key, and nothing in the store."""
    done = run_jl(julia_alone, "02-gauss-seidel", "--K", "5", root=project)
    assert done.returncode == 0, done.stderr
    assert "not saved to the store" in done.stdout
    shared = weanj.read_inputs("02-gauss-seidel")
    for name in ("julia-lex", "julia-rb"):
        path = project / "results" / "02-gauss-seidel" / "runs" / f"{name}-K5.h5"
        stored = weanj.load_gradient("02-gauss-seidel", name, path=path, allow_stale=True)
        assert stored.params == {"K": 5} and not shared.matches(stored)
        assert stored.key == provenance_key(shared.digest, {"K": 5}, "float64")
    assert not (project / "results" / "02-gauss-seidel" / "gradients").exists()


@pytest.mark.slow
def test_run_jl_replaces_a_recorded_reference_only_with_force(julia_alone, project):
    recorded = project / "results" / "02-gauss-seidel" / "recorded" / "julia-lex.h5"
    out = ("--variant", "julia-lex", "--out", str(recorded))
    assert not recorded.exists()
    first = run_jl(julia_alone, "02-gauss-seidel", *out, root=project)
    assert first.returncode == 0, first.stderr
    before = recorded.read_bytes()
    again = run_jl(julia_alone, "02-gauss-seidel", *out, root=project)
    assert_one_line_error(again, str(recorded), "replaced only with --force")
    assert recorded.read_bytes() == before
    forced = run_jl(julia_alone, "02-gauss-seidel", *out, "--force", root=project)
    assert forced.returncode == 0, forced.stderr
    kept = list(recorded.parent.glob("julia-lex.h5.replaced-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == before
    assert weanj.load_gradient("02-gauss-seidel", "julia-lex", recorded=True).format == 2
    several = run_jl(julia_alone, "02-gauss-seidel", "--out", str(recorded), root=project)
    assert_one_line_error(several, "--out names one file; choose one variant with --variant")


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
            return "theta: has NaN/Inf values"
        if how == "format-1":
            del f.attrs["format"]
            return "was written by an earlier weanj (format 1, not 2); rewrite it with"
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
    "how",
    [
        "garbage",
        "truncated",
        "nan",
        "no-dataset",
        "tampered",
        "other-example",
        "bad-K",
        "format-1",
    ],
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
