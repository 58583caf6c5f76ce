"""The Julia variants where Julia runs, through weanj's Julia worker: the index and
dtype conventions, arrays of every kind (complex gradients in the stored convention, int
indices, bools), a user's own Julia file with several gradient arrays, one that includes
a helper beside it, one that uses a package its project's Project.toml declares, a
callable with a buffer of its own (the loss's activity), and `weanj run` saving a
gradient with Julia's provenance; this process never imports juliacall.

The pairwise comparisons of every variant with its family (Julia's included) live in the
registry-driven tests beside this file, and WeanJ's own tests in julia/test/runtests.jl
(`Pkg.test()`, run by .github/workflows/julia.yml); these tests check what is particular
to the worker. Every test here is marked `julia` and skips, saying why, where Julia is not
available (or where a stand-in worker is configured). Nothing here writes a Julia result
into the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._backends import _julia, _julia_stand_in

from ..helpers import graph_fields, graph_gradient

REPO = Path(__file__).resolve().parent.parent.parent
REASON = (
    f"a stand-in worker is configured (${_julia_stand_in.WORKER_VARIABLE}), not Julia"
    if _julia_stand_in.stand_in()
    else _julia.unavailable_reason()
)

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


def test_a_users_file_may_include_a_helper_beside_it(smooth_example):
    """The user's module has an `include` of its own (a `module` block, not
    `Module(name)`), resolved against the file's folder, not the current directory."""
    ex, path = smooth_example
    (path.parent / "terms.jl").write_text("residual(x, y, S, i) = S * x[i] - y[i]\n")
    helped = path.parent / "helped.jl"
    helped.write_text(
        'include("terms.jl")\n\n'
        "function helped_loss(x, y, S)\n"
        "    s = 0.0\n"
        "    for i in eachindex(x, y)\n"
        "        s += residual(x, y, S, i)^2\n"
        "    end\n"
        "    return s\n"
        "end\n"
    )
    v = weanj.julia_variant(ex, "julia-helped", family="smooth", loss="helped_loss", file=helped)
    x, y = ex.generate(5)["x"], ex.generate(5)["y"]
    assert v.loss(x, y, 3) == pytest.approx(np.sum((3 * x - y) ** 2), rel=1e-14)
    np.testing.assert_allclose(v.grad(x, y, 3)["x"], 6 * (3 * x - y), rtol=1e-14)
    assert "juliacall" not in sys.modules  # Julia ran in the worker


@pytest.mark.slow
def test_a_package_the_project_declares_reaches_the_worker(tmp_path):
    """A user project whose kernel uses LinearAlgebra, declared in its Project.toml as
    `Pkg.add` would: juliapkg installs it into the worker's environment, and weanj check
    judges the Julia variant with its family."""
    from ..projects import run_in, user_env, write_project

    kernels = (
        "import numpy as np\n"
        "import weanj\n"
        "from toy_kernels import smooth_loop\n\n"
        "ex = weanj.register_example(weanj.Example(\n"
        '    name="21-dot", arrays=("x", "y"), wrt="x", params=(weanj.Param("S", default=1),),\n'
        '    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8),\n'
        '                           "y": np.random.default_rng(seed + 1).standard_normal(8)},\n'
        "))\n"
        'weanj.jax_variant(ex, "jax-loop", family="smooth", loss=smooth_loop)\n'
        'weanj.julia_variant(ex, "julia-dot", family="smooth", file="julia/dot.jl",\n'
        '                    loss="dot_loss", dtypes=("float64",))\n'
    )
    julia = (
        "using LinearAlgebra: dot\n\n"
        "function dot_loss(x, y, S)\n"
        "    n = length(x)\n"
        "    u = [(x[mod1(i - 1, n)] + 2 * x[i] + x[mod1(i + 1, n)]) / 4 for i in 1:n]\n"
        "    r = u .- y\n"
        "    return dot(r, r)\n"
        "end\n"
    )
    root = write_project(tmp_path, {"dot.py": kernels, "julia/dot.jl": julia})
    (root / "Project.toml").write_text(
        '[deps]\nLinearAlgebra = "37e2e46d-f89d-539d-b4ee-838fcccc9c8e"\n'
    )
    done = run_in(root, "-m", "weanj", "check", "--dtype", "float64", env=user_env(), timeout=3600)
    assert done.returncode == 0, done.stdout + done.stderr
    requirements = root / ".weanj-cache" / "julia" / "requirements" / "juliapkg.json"
    assert "LinearAlgebra" in requirements.read_text()


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
