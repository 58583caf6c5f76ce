"""weanj in a user's own project: `[tool.weanj]`, the authoring API, every command and
`pytest --weanj`, run as a user runs them (subprocesses, in a folder outside this
repository, found by root discovery, not `$WEANJ_ROOT`).

The project holds three modules: `kernels/snippet.py`, DESIGN.md's snippet exactly as
written, with a working loss body; `kernels/ring.py`, a 1-D kernel with two correct
variants and one whose gradient is deliberately wrong at one element; and
`kernels/fit.py`, an example with two gradient arrays of different shapes (a (m, k)
matrix and an (m,) vector). Every number is checked against numpy.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from .helpers import assert_one_line_error

PYPROJECT = """\
[project]
name = "my-kernels"
version = "0.0.1"

[tool.weanj]
examples = ["kernels.snippet", "kernels.ring", "kernels.fit"]
"""

# DESIGN.md's snippet, exactly as written, with a working loss body (`...` replaced).
SNIPPET = """\
import jax, jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="10-smooth", arrays=("x", "y"), wrt="x",            # wrt: a name or a tuple of names
    params=(weanj.Param("S", default=3),),                     # static ints, after the arrays
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(40),
                           "y": np.random.default_rng(seed + 1).standard_normal(40)},
))

@weanj.jax_variant(ex, "jax-loop", family="smooth")           # registers; jit with params static,
def smooth_loop(x, y, S):                                      # gradient by jax.grad over `wrt`
    for _ in range(S):
        x = (jnp.roll(x, 1) + 2 * x + jnp.roll(x, -1)) / 4
    return jnp.sum((x - y) ** 2)

weanj.julia_variant(ex, "julia-smooth", family="smooth",
                    file="julia/smooth.jl", loss="smooth_loss")  # path relative to the project
"""

# A 1-D kernel with sizes to sweep: two correct variants, and one whose gradient is off by
# 1e-3 relative at x[7].
RING = """\
import jax, jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="12-ring", arrays=("x", "y"), wrt="x", shapes={"x": ("n",), "y": ("n",)},
    params=(weanj.Param("S", default=3),),
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(40),
                           "y": np.random.default_rng(seed + 1).standard_normal(40)},
    sizes=weanj.Sizes(generate=lambda seed, n: {"x": np.ones(n), "y": np.zeros(n)},
                      values=(16, 32)),
))


@weanj.jax_variant(ex, "jax-loop", family="smooth")
def smooth_loop(x, y, S):
    for _ in range(S):
        x = (jnp.roll(x, 1) + 2 * x + jnp.roll(x, -1)) / 4
    return jnp.sum((x - y) ** 2)


@weanj.jax_variant(ex, "jax-scan", family="smooth")
def smooth_scan(x, y, S):
    def sweep(x, _):
        return (jnp.roll(x, 1) + 2 * x + jnp.roll(x, -1)) / 4, None

    xs, _ = jax.lax.scan(sweep, x, None, length=S)
    return jnp.sum((xs - y) ** 2)


def wrong_grad(x, y, S):
    g = jax.grad(smooth_loop)(x, y, S)
    return g.at[7].multiply(1.001)


weanj.jax_variant(ex, "jax-wrong", family="smooth", grad=wrong_grad)(smooth_loop)
"""

JULIA_SMOOTH = """\
function smooth_loss(x::Vector{T}, y::Vector{T}, S::Integer) where {T <: AbstractFloat}
    n = length(x)
    current, next = copy(x), similar(x)
    for _ in 1:S
        for i in 1:n
            next[i] = (current[mod1(i - 1, n)] + 2 * current[i] + current[mod1(i + 1, n)]) / 4
        end
        current, next = next, current
    end
    s = 0.0
    for i in 1:n
        s += Float64(current[i] - y[i])^2
    end
    return T(s)
end
"""

# Two gradient arrays of different shapes: L(A, b) = Σ_r (tanh(Σ_c A[r,c] t[c]) + b[r] − z[r])².
FIT = """\
import jax.numpy as jnp
import numpy as np
import weanj


def generate(seed, m=6, k=3):
    rng = np.random.default_rng(seed)
    return {"A": rng.standard_normal((m, k)), "b": rng.standard_normal(m),
            "t": rng.standard_normal(k), "z": rng.standard_normal(m)}


def validate(arrays):
    A, b, t, z = (arrays[k] for k in ("A", "b", "t", "z"))
    if A.ndim != 2 or b.shape != (A.shape[0],) or t.shape != (A.shape[1],) or z.shape != b.shape:
        raise weanj.InputError(f"need A (m, k), b (m,), t (k,), z (m,): got {A.shape}, "
                               f"{b.shape}, {t.shape}, {z.shape}")


ex = weanj.register_example(weanj.Example(
    name="20-fit", arrays=("A", "b", "t", "z"), wrt=("A", "b"), generate=generate,
    validate=validate, fd=weanj.FDPolicy(step=1e-4, threshold=1e-6),
    sizes=weanj.Sizes(generate=lambda seed, m: generate(seed, m, 3), values=(8, 16), name="m"),
))


@weanj.jax_variant(ex, "jax-dot", family="fit")
def fit_dot(A, b, t, z):
    return jnp.sum((jnp.tanh(A @ t) + b - z) ** 2)


@weanj.jax_variant(ex, "jax-sum", family="fit")
def fit_sum(A, b, t, z):
    return jnp.sum((jnp.tanh(jnp.sum(A * t[None, :], axis=1)) + b - z) ** 2)
"""


def fit_reference(A, b, t, z):
    """Loss and both gradients of the `20-fit` example in numpy, by hand."""
    s = A @ t
    r = np.tanh(s) + b - z
    gb = 2 * r
    gA = np.outer(2 * r * (1 - np.tanh(s) ** 2), t)
    return float(np.sum(r**2)), {"A": gA, "b": gb}


def smooth_reference(x, y, S):
    """Loss and gradient of `10-smooth` and `12-ring` in numpy: the smoothing is the symmetric
    circulant M = (S_+ + 2I + S_-)/4, so ∇L = 2 Mᵀᔆ (MˢX − y) = 2 Mˢ (Mˢx − y)."""

    def smooth(v):
        for _ in range(S):
            v = (np.roll(v, 1) + 2 * v + np.roll(v, -1)) / 4
        return v

    r = smooth(x) - y
    return float(np.sum(r**2)), smooth(2 * r)


def weanj_cli(*args, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "WEANJ_ROOT"}
    return subprocess.run(
        [sys.executable, "-m", "weanj", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def user_project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("user-project")
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "kernels").mkdir()
    (root / "kernels" / "__init__.py").write_text("")
    (root / "kernels" / "snippet.py").write_text(SNIPPET)
    (root / "kernels" / "ring.py").write_text(RING)
    (root / "kernels" / "fit.py").write_text(FIT)
    (root / "julia").mkdir()
    (root / "julia" / "smooth.jl").write_text(JULIA_SMOOTH)
    r = weanj_cli("inputs", "regenerate", cwd=root)
    assert r.returncode == 0, r.stderr
    return root


def test_inputs_and_list_are_the_projects_own(user_project):
    assert sorted(p.name for p in (user_project / "shared_inputs").iterdir()) == [
        "10-smooth.h5",
        "12-ring.h5",
        "20-fit.h5",
    ]
    # Commands run from a subfolder find the project too.
    r = weanj_cli("list", cwd=user_project / "kernels")
    assert r.returncode == 0, r.stderr
    assert all(name in r.stdout for name in ("10-smooth", "12-ring", "20-fit"))
    assert "jacobi" not in r.stdout and "gauss-seidel" not in r.stdout  # no built-ins
    assert "julia-smooth" in r.stdout and "unavailable" in r.stdout


def test_the_design_snippet_as_written_is_checked(user_project):
    """DESIGN.md's snippet, pasted as written with a working loss body: `weanj check` runs
    its JAX variant (fd-checked against the numpy gradient's direction derivatives) and
    skips its Julia variant, saying why."""
    r = weanj_cli("check", "10-smooth", cwd=user_project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"jax-loop\s+smooth\s+\S+\s+\S+ ok", r.stdout), r.stdout
    assert "skipped julia-smooth" in r.stdout and "10-smooth: ok" in r.stdout
    with h5py.File(user_project / "results/10-smooth/gradients/jax-loop.h5") as f:
        stored, loss = f["gradient"][()], float(f.attrs["loss"])
    with h5py.File(user_project / "shared_inputs" / "10-smooth.h5") as f:
        x, y = f["x"][()], f["y"][()]
    loss_ref, g_ref = smooth_reference(x, y, 3)
    assert abs(loss - loss_ref) <= 1e-12 * loss_ref
    assert np.max(np.abs(stored - g_ref)) <= 1e-11 * np.max(np.abs(g_ref))


def test_run_matches_numpy(user_project, tmp_path):
    out = tmp_path / "g.h5"
    r = weanj_cli("run", "12-ring", "jax-scan", "--S", "5", "--out", out, cwd=user_project)
    assert r.returncode == 0, r.stderr
    with h5py.File(user_project / "shared_inputs" / "12-ring.h5") as f:
        x, y = f["x"][()], f["y"][()]
    loss, g = smooth_reference(x, y, 5)
    with h5py.File(out) as f:
        assert int(f.attrs["S"]) == 5
        assert abs(f.attrs["loss"] - loss) <= 1e-12 * loss
        np.testing.assert_allclose(f["gradient"][()], g, rtol=0, atol=1e-11 * np.max(np.abs(g)))


def test_check_names_the_wrong_variant_and_its_worst_element(user_project):
    r = weanj_cli("check", "12-ring", cwd=user_project)
    assert r.returncode == 1, r.stdout + r.stderr
    failures = [line for line in r.stdout.splitlines() if line.strip().startswith("FAIL ")]
    assert failures and all("jax-wrong" in line for line in failures), r.stdout
    assert any("numpy (7) / Julia (8)" in line for line in failures), r.stdout
    assert re.search(r"jax-wrong\s+smooth\s+\S+\s+\S+ FAIL", r.stdout), r.stdout  # its fd check
    # The diff of the store says the same, and both correct variants agree.
    d = weanj_cli("diff", "12-ring", "--json", cwd=user_project)
    assert d.returncode == 1
    report = json.loads(d.stdout)
    verdicts = {(p["reference"], p["other"]): p["verdict"] for p in report["pairs"]}
    assert verdicts == {
        ("jax-loop", "jax-scan"): "ok",
        ("jax-loop", "jax-wrong"): "FAIL",
        ("jax-scan", "jax-wrong"): "FAIL",
    }
    wrong = next(p for p in report["pairs"] if p["other"] == "jax-wrong")
    assert wrong["worst"] == [7] and wrong["differing_at"] == [[7]] and wrong["differing"] == 1


def test_two_gradient_arrays_of_different_shapes(user_project, tmp_path):
    # run: a group `gradient` with one dataset per array, against numpy.
    out = tmp_path / "fit.h5"
    r = weanj_cli("run", "20-fit", "jax-sum", "--out", out, cwd=user_project)
    assert r.returncode == 0, r.stderr
    assert "‖∂L/∂A‖" in r.stdout and "‖∂L/∂b‖" in r.stdout
    with h5py.File(user_project / "shared_inputs" / "20-fit.h5") as f:
        arrays = {k: f[k][()] for k in ("A", "b", "t", "z")}
    loss, grads = fit_reference(**arrays)
    with h5py.File(out) as f:
        assert isinstance(f["gradient"], h5py.Group) and sorted(f["gradient"]) == ["A", "b"]
        assert abs(f.attrs["loss"] - loss) <= 1e-12 * loss
        for name, g in grads.items():
            stored = f["gradient"][name][()]
            assert stored.shape == g.shape
            np.testing.assert_allclose(stored, g, rtol=0, atol=1e-11 * np.max(np.abs(g)))

    # check and diff --json: one row per pair and array, each array named.
    c = weanj_cli("check", "20-fit", cwd=user_project)
    assert c.returncode == 0, c.stdout + c.stderr
    d = weanj_cli("diff", "20-fit", "--json", cwd=user_project)
    assert d.returncode == 0, d.stderr
    report = json.loads(d.stdout)
    assert [(p["reference"], p["other"], p["array"]) for p in report["pairs"]] == [
        ("jax-dot", "jax-sum", "A"),
        ("jax-dot", "jax-sum", "b"),
    ]
    assert {k: v["shape"] for k, v in report["gradients"][0]["arrays"].items()} == {
        "A": [6, 3],
        "b": [6],
    }
    text = weanj_cli("diff", "20-fit", cwd=user_project).stdout
    assert re.search(r"jax-dot\s+jax-sum\s+A\s", text) and re.search(
        r"jax-dot\s+jax-sum\s+b\s", text
    )

    # bench over the example's own size (`m`), N counting both arrays' entries.
    b = weanj_cli("bench", "20-fit", "--sizes", "4", "8", "--samples", "1", cwd=user_project)
    assert b.returncode == 0, b.stderr
    records = json.loads((user_project / "results/20-fit/bench/jax-cpu.json").read_text())[
        "records"
    ]
    assert sorted((r["variant"], r["m"], r["N"]) for r in records) == [
        ("jax-dot", 4, 4 * 3 + 4),
        ("jax-dot", 8, 8 * 3 + 8),
        ("jax-sum", 4, 4 * 3 + 4),
        ("jax-sum", 8, 8 * 3 + 8),
    ]


def test_bench_sweeps_the_sizes_the_example_defines(user_project):
    r = weanj_cli("bench", "12-ring", "--sizes", "16", "32", "--samples", "1", cwd=user_project)
    assert r.returncode == 0, r.stderr
    records = json.loads((user_project / "results/12-ring/bench/jax-cpu.json").read_text())[
        "records"
    ]
    assert {(r["variant"], r["n"], r["S"]) for r in records} == {
        (v, n, 3) for v in ("jax-loop", "jax-scan", "jax-wrong") for n in (16, 32)
    }
    assert weanj_cli("plot", "12-ring", cwd=user_project).returncode == 0


def test_pytest_weanj_fails_exactly_the_wrong_variants_items(user_project):
    env = {k: v for k, v in os.environ.items() if k != "WEANJ_ROOT"}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--weanj", "-p", "no:cacheprovider", "-rfs"],
        cwd=user_project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    failed = sorted(re.findall(r"^FAILED weanj::(\S+)", r.stdout, re.MULTILINE))
    assert failed == [
        "12-ring::smooth::jax-loop~jax-wrong",
        "12-ring::smooth::jax-scan~jax-wrong",
        "12-ring::smooth::jax-wrong::fd",
    ], r.stdout
    passed = int(re.search(r"(\d+) passed", r.stdout).group(1))
    # 10-smooth: 1 fd (its Julia items skip); 12-ring: 1 correct pair, 2 correct fd;
    # 20-fit: 1 pair × 2 arrays, 2 fd.
    assert passed == 1 + 1 + 2 + 2 + 2, r.stdout
    assert "julia-smooth" in r.stdout  # its items skip, saying why


def test_broken_module_is_one_line_naming_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.weanj]\nexamples = ["broken"]\n')
    cases = {
        "import": "import no_such_module_anywhere\n",
        "duplicate": textwrap.dedent(
            """
            import numpy as np, weanj
            e = weanj.register_example(weanj.Example(name="x", arrays=("a",), wrt="a",
                                                     generate=lambda s: {"a": np.ones(3)}))
            weanj.register_example(weanj.Example(name="x", arrays=("a",), wrt="a",
                                                 generate=lambda s: {"a": np.ones(3)}))
            """
        ),
        "unknown example": textwrap.dedent(
            """
            import weanj
            weanj.jax_variant("no-such-example", "jax-v", family="f")(lambda a: a)
            """
        ),
    }
    for what, body in cases.items():
        (tmp_path / "broken.py").write_text(body)
        r = weanj_cli("list", cwd=tmp_path)
        assert r.returncode == 2, (what, r.stdout)
        assert_one_line_error(r.stderr, "'broken'")
    missing = tmp_path / "pyproject.toml"
    missing.write_text('[tool.weanj]\nexamples = ["not_there"]\n')
    r = weanj_cli("list", cwd=tmp_path)
    assert r.returncode == 2
    assert_one_line_error(r.stderr, "cannot import example module 'not_there'")


def test_weanj_new_then_the_commands_it_prints(tmp_path):
    r = weanj_cli("new", "11-mine", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    commands = [line.strip() for line in r.stdout.splitlines() if line.startswith("  weanj ")]
    assert commands == ["weanj inputs regenerate 11-mine", "weanj check 11-mine"]
    assert (tmp_path / "examples" / "mine.py").is_file()
    assert (tmp_path / "julia" / "mine.jl").is_file()
    assert 'examples = ["examples.mine"]' in (tmp_path / "pyproject.toml").read_text()
    for command in commands:
        done = weanj_cli(*command.split()[1:], cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "11-mine: ok" in done.stdout
    # It refuses to overwrite, and says so in one line.
    again = weanj_cli("new", "11-mine", cwd=tmp_path)
    assert again.returncode == 2
    assert_one_line_error(again.stderr, "already exists")


def test_pytest_weanj_record_writes_references_then_checks_them(user_project):
    """`--weanj-record` (pytest-regressions' `--force-regen`): writes the family's
    reference and fails saying so; the next `pytest --weanj` checks every variant of the
    family against it."""
    env = {k: v for k, v in os.environ.items() if k != "WEANJ_ROOT"}

    def pytest_weanj(*extra):
        return subprocess.run(
            [sys.executable, "-m", "pytest", "--weanj", "--weanj-example", "20-fit", *extra]
            + ["-p", "no:cacheprovider", "-rf"],
            cwd=user_project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    recorded = user_project / "results" / "20-fit" / "recorded" / "jax-dot.h5"
    assert not recorded.exists()
    r = pytest_weanj("--weanj-record")
    assert r.returncode == 1 and f"wrote {recorded}" in r.stdout, r.stdout
    assert recorded.is_file()
    r = pytest_weanj()
    assert r.returncode == 0, r.stdout
    # 1 pair × 2 arrays, 2 fd, and both variants against recorded/jax-dot.
    assert re.search(r"\b6 passed\b", r.stdout), r.stdout
    r = pytest_weanj("-v")
    for variant in ("jax-dot", "jax-sum"):
        assert f"20-fit::fit::{variant}~recorded/jax-dot PASSED" in r.stdout, r.stdout
