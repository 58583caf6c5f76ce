"""weanj in a user's own project: `[tool.weanj]`, the authoring API, every command and
`pytest --weanj`, run as a user runs them (in a folder outside this repository, found by
root discovery, not `$WEANJ_ROOT`): the whole check, `pytest --weanj` and a broken
project's first command in fresh processes, the other commands in this process as a fresh
one runs them (`projects.weanj_here`: the project loaded afresh from its folder).

The project holds three modules: `kernels/snippet.py`, docs/DESIGN.md's snippet exactly as
written, with a working loss body; `kernels/ring.py`, a 1-D kernel with two correct
variants and one whose gradient is deliberately wrong by 1e-3 at one element; and
`kernels/fit.py`, an example with two gradient arrays of different shapes (a (m, k)
matrix and an (m,) vector) and a variant whose gradient of the vector alone is wrong by
1e-3 at one element. A wrong gradient must fail its Taylor and jvp checks and its pairs,
naming the array, and nothing else may fail. Every number is checked against numpy.
One `weanj check` of the whole project is shared by the tests that read its verdicts
(`results/<example>/check.json`: the judge's data, not the printed table).
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from .helpers import assert_one_line_error
from .projects import (
    RING,
    import_failure,
    pytest_weanj_in,
    weanj_here,
    weanj_in,
    write_project,
)
from .toy_kernels import smooth_reference

# docs/DESIGN.md's snippet, exactly as written, with a working loss body (`...` replaced).
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
import jax, jax.numpy as jnp
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


def wrong_b(A, b, t, z):
    gA, gb = jax.grad(fit_dot, argnums=(0, 1))(A, b, t, z)
    return gA, gb.at[2].multiply(1.001)


weanj.jax_variant(ex, "jax-wrong-b", family="fit", grad=wrong_b)(fit_dot)
"""


def fit_reference(A, b, t, z):
    """Loss and both gradients of the `20-fit` example in numpy, by hand."""
    s = A @ t
    r = np.tanh(s) + b - z
    gb = 2 * r
    gA = np.outer(2 * r * (1 - np.tanh(s) ** 2), t)
    return float(np.sum(r**2)), {"A": gA, "b": gb}


@pytest.fixture(scope="module")
def user_project(tmp_path_factory) -> Path:
    return write_project(
        tmp_path_factory.mktemp("user-project"),
        {
            "kernels/snippet.py": SNIPPET,
            "kernels/ring.py": RING,
            "kernels/fit.py": FIT,
            "julia/smooth.jl": JULIA_SMOOTH,
        },
        name="my-kernels",
    )


@pytest.fixture(scope="module")
def checked(user_project) -> subprocess.CompletedProcess:
    """`weanj check` of the whole project, once, as a user runs it."""
    return weanj_in(user_project, "check")


def _judged(root: Path, example: str) -> dict:
    """What `weanj check` judged of an example, as data: its `results/<example>/check.json`
    (the judge's JSON, with the fields of `weanj diff --json`)."""
    return json.loads((root / "results" / example / "check.json").read_text())


def _verdicts(judged: dict) -> dict[str, str]:
    """`{case id: verdict}` of every case judged (runs, checks, pairs, files, skipped)."""
    kinds = ("runs", "checks", "pairs", "files", "skipped")
    return {j["case"]: j["verdict"] for kind in kinds for j in judged[kind]}


def _pairs(judged: dict) -> dict[tuple[str, str, str], dict]:
    """`{(reference, other, array): pair}` of the pairs judged."""
    return {(p["reference"], p["other"], p["array"]): p for p in judged["pairs"]}


def _checks(judged: dict) -> dict[str, dict]:
    return {c["case"]: c for c in judged["checks"]}


def _smallest_rate(check: dict) -> float:
    """The smallest of the rates at the three smallest resolved steps of every direction
    of a Taylor check (what the terminal's table shows)."""
    return min(min(d["rates"][-3:]) for d in check["taylor"]["directions"])


def _one_region(pair: dict, numpy: int, julia: int) -> None:
    """The pair differs in one region: one element, at `numpy` (0-based) / `julia`."""
    (region,) = pair["regions"]
    assert region["count"] == 1 and not region["nonfinite"], region
    assert region["numpy"] == {"lo": [numpy], "hi": [numpy], "worst": [numpy]}
    assert region["julia"] == {"lo": [julia], "hi": [julia], "worst": [julia]}


def _stored(root: Path, example: str, variant: str):
    with h5py.File(root / f"results/{example}/gradients/{variant}.h5") as f:
        node = f["gradient"]
        gradient = {k: node[k][()] for k in node} if isinstance(node, h5py.Group) else node[()]
        return gradient, float(f.attrs["loss"])


def _shared(root: Path, example: str) -> dict[str, np.ndarray]:
    with h5py.File(root / "shared_inputs" / f"{example}.h5") as f:
        return {k: f[k][()] for k in f}


def test_inputs_and_list_are_the_projects_own(user_project):
    assert sorted(p.name for p in (user_project / "shared_inputs").iterdir()) == [
        "10-smooth.h5",
        "12-ring.h5",
        "20-fit.h5",
    ]
    # Commands run from a subfolder find the project too.
    r = weanj_here(user_project / "kernels", "list")
    assert r.returncode == 0, r.stderr
    assert all(name in r.stdout for name in ("10-smooth", "12-ring", "20-fit"))
    assert "jacobi" not in r.stdout and "gauss-seidel" not in r.stdout  # no built-ins
    assert "julia-smooth" in r.stdout and "unavailable" in r.stdout


def test_the_design_snippet_as_written_is_checked(user_project, checked):
    """docs/DESIGN.md's snippet, pasted as written with a working loss body: `weanj check` runs
    its JAX variant (Taylor and jvp checks, float32 against float64, the stored gradient
    against numpy's) and skips its Julia variant, saying why."""
    judged = _judged(user_project, "10-smooth")
    # The Julia variant is unavailable here (it was "skipped"): its run, pairs and checks.
    assert _verdicts(judged) == {
        "10-smooth::smooth::jax-loop::run": "ok",
        "10-smooth::smooth::jax-loop@float32::run": "ok",
        "10-smooth::smooth::julia-smooth::run": "unavailable",
        "10-smooth::smooth::julia-smooth@float32::run": "unavailable",
        "10-smooth::smooth::jax-loop::taylor": "ok",
        "10-smooth::smooth::jax-loop::jvp": "ok",
        "10-smooth::smooth::julia-smooth::taylor": "skipped",
        "10-smooth::smooth::julia-smooth::jvp": "skipped",
        "10-smooth::smooth::jax-loop~jax-loop@float32": "ok",
        "10-smooth::smooth::jax-loop~julia-smooth": "skipped",
        "10-smooth::smooth::julia-smooth~julia-smooth@float32": "skipped",
    }
    assert set(judged["unavailable"]) == {"julia-smooth", "julia-smooth@float32"}
    assert all("no Julia found" in why for why in judged["unavailable"].values())
    assert judged["verdict"] == "ok" and judged["ok"]
    stored, loss = _stored(user_project, "10-smooth", "jax-loop")
    d = _shared(user_project, "10-smooth")
    loss_ref, g_ref = smooth_reference(d["x"], d["y"], 3)
    assert abs(loss - loss_ref) <= 1e-12 * loss_ref
    assert np.max(np.abs(stored - g_ref)) <= 1e-11 * np.max(np.abs(g_ref))


def test_run_matches_numpy(user_project, tmp_path):
    out = tmp_path / "g.h5"
    r = weanj_here(user_project / "kernels", "run", "12-ring", "jax-scan", "--S", "5", "--out", out)
    assert r.returncode == 0, r.stderr
    d = _shared(user_project, "12-ring")
    loss, g = smooth_reference(d["x"], d["y"], 5)
    with h5py.File(out) as f:
        assert int(f.attrs["S"]) == 5
        assert abs(f.attrs["loss"] - loss) <= 1e-12 * loss
        np.testing.assert_allclose(f["gradient"][()], g, rtol=0, atol=1e-11 * np.max(np.abs(g)))


def test_check_names_the_wrong_variant_and_its_worst_element(user_project, checked):
    """jax-wrong's gradient is 1.001 times the true one at x[7]: its Taylor test (the
    remainders fall like h, not h²) and its forward-vs-reverse check fail, naming x, and
    so do its pairs, at numpy (7) / Julia (8); its siblings pass everything."""
    assert checked.returncode == 1, checked.stdout + checked.stderr
    judged = _judged(user_project, "12-ring")
    verdicts = _verdicts(judged)
    assert sorted(case for case, v in verdicts.items() if v != "ok") == [
        "12-ring::smooth::jax-loop~jax-wrong",
        "12-ring::smooth::jax-scan~jax-wrong",
        "12-ring::smooth::jax-wrong::jvp",
        "12-ring::smooth::jax-wrong::taylor",
    ]
    assert all(verdicts[case] == "FAIL" for case in verdicts if verdicts[case] != "ok")
    checks = _checks(judged)
    taylor, jvp = (checks[f"12-ring::smooth::jax-wrong::{k}"] for k in ("taylor", "jvp"))
    assert "the gradient of x is not the loss's derivative" in taylor["reason"]
    assert _smallest_rate(taylor) < 1.8
    assert "forward mode (jax-wrong) gives" in jvp["reason"]
    for label in ("jax-loop", "jax-scan"):
        for kind in ("taylor", "jvp"):
            assert checks[f"12-ring::smooth::{label}::{kind}"]["verdict"] == "ok"
        assert _smallest_rate(checks[f"12-ring::smooth::{label}::taylor"]) > 1.9
    pairs = _pairs(judged)
    assert pairs[("jax-loop", "jax-scan", "x")]["verdict"] == "ok"
    for ref in ("jax-loop", "jax-scan"):
        assert pairs[(ref, "jax-wrong", "x")]["verdict"] == "FAIL"
        _one_region(pairs[(ref, "jax-wrong", "x")], 7, 8)
    assert len(judged["failures"]) == 4 and judged["verdict"] == "FAIL"

    # The diff of the store says the same of the pairs (it runs no gradient checks).
    d = weanj_here(user_project, "diff", "12-ring", "--json")
    assert d.returncode == 1
    report = json.loads(d.stdout)
    verdicts = {(p["reference"], p["other"]): p["verdict"] for p in report["pairs"]}
    assert {k: v for k, v in verdicts.items() if "@" not in k[1]} == {
        ("jax-loop", "jax-scan"): "ok",
        ("jax-loop", "jax-wrong"): "FAIL",
        ("jax-scan", "jax-wrong"): "FAIL",
    }
    assert sorted(k for k in verdicts if "@" in k[1]) == [  # each against its own float64
        (v, f"{v}@float32") for v in ("jax-loop", "jax-scan", "jax-wrong")
    ]
    assert report["checks"] == []
    wrong = next(p for p in report["pairs"] if p["other"] == "jax-wrong")
    assert wrong["worst"] == [7] and wrong["differing_at"] == [[7]] and wrong["differing"] == 1
    inputs = _shared(user_project, "12-ring")
    _, g = smooth_reference(inputs["x"], inputs["y"], 3)
    assert wrong["max_rel"] == pytest.approx(1e-3 * abs(g[7]) / np.abs(g).max(), rel=1e-6)


def test_two_gradient_arrays_of_different_shapes(user_project, checked, tmp_path):
    # run: a group `gradient` with one dataset per array, against numpy.
    out = tmp_path / "fit.h5"
    r = weanj_here(user_project, "run", "20-fit", "jax-sum", "--out", out)
    assert r.returncode == 0, r.stderr
    assert "‖∂L/∂A‖" in r.stdout and "‖∂L/∂b‖" in r.stdout
    loss, grads = fit_reference(**{k: v for k, v in _shared(user_project, "20-fit").items()})
    with h5py.File(out) as f:
        assert isinstance(f["gradient"], h5py.Group) and sorted(f["gradient"]) == ["A", "b"]
        assert abs(f.attrs["loss"] - loss) <= 1e-12 * loss
        for name, g in grads.items():
            stored = f["gradient"][name][()]
            assert stored.shape == g.shape
            np.testing.assert_allclose(stored, g, rtol=0, atol=1e-11 * np.max(np.abs(g)))

    # check: every array judged on its own. jax-wrong-b's gradient of b is wrong at b[2]:
    # its checks and pairs of b fail, naming b; those of A pass.
    judged = _judged(user_project, "20-fit")
    verdicts = _verdicts(judged)
    failing = sorted(c for c, v in verdicts.items() if "::jax-wrong-b::" in c and v != "ok")
    assert failing == ["20-fit::fit::jax-wrong-b::jvp::b", "20-fit::fit::jax-wrong-b::taylor::b"]
    assert verdicts["20-fit::fit::jax-wrong-b::taylor::A"] == "ok"
    assert verdicts["20-fit::fit::jax-wrong-b::jvp::A"] == "ok"
    checks = _checks(judged)
    taylor = checks["20-fit::fit::jax-wrong-b::taylor::b"]
    assert "the gradient of b is not the loss's derivative" in taylor["reason"]
    assert _smallest_rate(taylor) < 1.8
    pairs = _pairs(judged)
    assert pairs[("jax-dot", "jax-sum", "A")]["verdict"] == "ok"
    assert pairs[("jax-dot", "jax-sum", "b")]["verdict"] == "ok"
    assert pairs[("jax-dot", "jax-wrong-b", "b")]["verdict"] == "FAIL"
    assert pairs[("jax-dot", "jax-wrong-b", "A")]["verdict"] == "ok"
    # Its float32 run computes the same wrong b[2] (off by 1e-3 of itself, 3.9e-4·max|∂L/∂b|,
    # beyond the float32 tolerance against jax-dot): judged against its own float64 run, it
    # is ok (precision alone); the family pair above reports the port's error, once.
    assert 1e-3 * abs(grads["b"][2]) / np.abs(grads["b"]).max() > 1e-4
    assert pairs[("jax-wrong-b", "jax-wrong-b@float32", "b")]["verdict"] == "ok"
    assert pairs[("jax-wrong-b", "jax-wrong-b@float32", "A")]["verdict"] == "ok"
    _one_region(pairs[("jax-dot", "jax-wrong-b", "b")], 2, 3)
    for label in ("jax-dot", "jax-sum"):
        for kind in ("taylor", "jvp"):
            for array in ("A", "b"):
                assert verdicts[f"20-fit::fit::{label}::{kind}::{array}"] == "ok"

    # diff --json: one row per pair and array, each array named.
    d = weanj_here(user_project, "diff", "20-fit", "--json")
    assert d.returncode == 1, d.stderr
    report = json.loads(d.stdout)
    same = [(p["reference"], p["other"], p["array"], p["verdict"]) for p in report["pairs"]]
    assert [p for p in same if "@" not in p[1]] == [
        ("jax-dot", "jax-sum", "A", "ok"),
        ("jax-dot", "jax-sum", "b", "ok"),
        ("jax-dot", "jax-wrong-b", "A", "ok"),
        ("jax-dot", "jax-wrong-b", "b", "FAIL"),
        ("jax-sum", "jax-wrong-b", "A", "ok"),
        ("jax-sum", "jax-wrong-b", "b", "FAIL"),
    ]
    assert {k: v["shape"] for k, v in report["gradients"][0]["arrays"].items()} == {
        "A": [6, 3],
        "b": [6],
    }
    wrong = next(p for p in report["pairs"] if p["case"] == "20-fit::fit::jax-dot~jax-wrong-b::b")
    assert wrong["worst"] == [2] and wrong["differing"] == 1
    assert wrong["max_rel"] == pytest.approx(
        1e-3 * abs(grads["b"][2]) / np.abs(grads["b"]).max(), rel=1e-6
    )


def test_bench_sweeps_the_sizes_the_example_defines(user_project):
    # No --sizes: the example's own `Sizes.values`, (16, 32); --S typed as the Param says.
    r = weanj_here(user_project, "bench", "12-ring", "--S", "2", "--samples", "1")
    assert r.returncode == 0, r.stderr
    records = json.loads((user_project / "results/12-ring/bench/jax-cpu.json").read_text())[
        "records"
    ]
    assert {(r["variant"], r["n"], r["S"]) for r in records} == {
        (v, n, 2) for v in ("jax-loop", "jax-scan", "jax-wrong") for n in (16, 32)
    }
    assert all(isinstance(r["S"], int) for r in records)


BROKEN = {
    "import": ("import no_such_module_anywhere\n", "ModuleNotFoundError: No module named"),
    "duplicate": (
        textwrap.dedent(
            """
            import numpy as np, weanj
            e = weanj.register_example(weanj.Example(name="91-x", arrays=("a",), wrt="a",
                                                     generate=lambda s: {"a": np.ones(3)}))
            weanj.register_example(weanj.Example(name="91-x", arrays=("a",), wrt="a",
                                                 generate=lambda s: {"a": np.ones(3)}))
            """
        ),
        "example '91-x' is registered twice",
    ),
    "unknown example": (
        textwrap.dedent(
            """
            import numpy as np, weanj
            e = weanj.register_example(weanj.Example(name="92-y", arrays=("a",), wrt="a",
                                                     generate=lambda s: {"a": np.ones(3)}))
            weanj.jax_variant("no-such-example", "jax-v", family="f")(lambda a: a)
            """
        ),
        "'no-such-example', which is not registered",
    ),
    "exit": ("import sys\nsys.exit(3)\n", "called sys.exit(3) on import"),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_broken_module_is_one_error_naming_it_and_withdrawn(tmp_path, monkeypatch, what):
    """The registry's loading of one example module, in this process: whatever fails is
    one `ProjectError` naming the module, and what it registered is taken back."""
    body, words = BROKEN[what]
    module = "broken_" + what.replace(" ", "_")
    assert words in import_failure(tmp_path, monkeypatch, module, body)


def test_a_broken_module_stops_every_command_in_one_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.weanj]\nexamples = ["broken", "not_there"]\n')
    (tmp_path / "broken.py").write_text(BROKEN["duplicate"][0])
    r = weanj_in(tmp_path, "list")
    assert r.returncode == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "example module 'broken'", "registered twice")
    (tmp_path / "pyproject.toml").write_text('[tool.weanj]\nexamples = ["not_there"]\n')
    r = weanj_here(tmp_path, "check")  # the first command was a fresh process
    assert r.returncode == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "cannot import example module 'not_there'")


def test_weanj_new_then_the_commands_it_prints(tmp_path, monkeypatch, capsys):
    from weanj._cli import main

    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["new", "11-mine"]) == 0
    out = capsys.readouterr().out
    commands = [line.strip() for line in out.splitlines() if line.startswith("  weanj ")]
    assert commands == ["weanj inputs regenerate 11-mine", "weanj check 11-mine"]
    assert (tmp_path / "examples" / "mine.py").is_file()
    assert (tmp_path / "julia" / "mine.jl").is_file()
    assert 'examples = ["examples.mine"]' in (tmp_path / "pyproject.toml").read_text()
    # The printed commands, in order, each as a fresh process of the new project runs it.
    stdout = ""
    for command in [*commands, "weanj report"]:
        done = weanj_here(tmp_path, *command.split()[1:])
        assert done.returncode == 0, done.stdout + done.stderr
        stdout += done.stdout
    assert "wrote " in stdout and "11-mine: ok" in stdout
    # What the project commits: its sources and the shared inputs; the .gitignore that
    # `weanj new` wrote keeps out everything the runs wrote (the store, the records, the
    # check file, the report, the compilation cache).
    assert out.startswith("wrote examples/mine.py, julia/mine.jl, [tool.weanj] in ")
    assert "and .gitignore" in out.splitlines()[0]
    assert (tmp_path / "results" / "11-mine" / "check.json").is_file()
    assert (tmp_path / "results" / "report.html").is_file()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert sorted(line[3:] for line in status.splitlines()) == [
        ".gitignore",
        "examples/__init__.py",
        "examples/mine.py",
        "julia/mine.jl",
        "pyproject.toml",
        "shared_inputs/11-mine.h5",
    ], status
    # It refuses to overwrite, and says so in one line.
    assert main(["new", "11-mine"]) == 2
    assert_one_line_error(capsys.readouterr().err, "already exists")


def test_pytest_weanj_record_then_the_whole_table(user_project, checked):
    """`--weanj-record` (pytest-regressions' `--force-regen`) writes the family's
    reference and fails saying so. Then `pytest --weanj` collects the case table: exactly
    the wrong variants' items fail (and the pairs with the new reference check every
    variant against it); Julia's items skip, saying why."""
    recorded = user_project / "results" / "20-fit" / "recorded" / "jax-dot.h5"
    assert not recorded.exists()
    r = pytest_weanj_in(user_project, "--weanj-example", "20-fit", "--weanj-record", "-rf")
    assert r.returncode == 1 and f"wrote {recorded}" in r.stdout, r.stdout
    assert recorded.is_file()

    r = pytest_weanj_in(user_project, "-v", "-rfs")
    assert r.returncode == 1, r.stdout + r.stderr
    outcomes = dict(
        (case, outcome)
        for case, outcome in re.findall(r"^weanj::(\S+) (PASSED|FAILED|SKIPPED)", r.stdout, re.M)
    )
    failed = sorted(re.findall(r"^FAILED weanj::(\S+)", r.stdout, re.MULTILINE))
    assert failed == sorted(case for case, outcome in outcomes.items() if outcome == "FAILED")
    assert failed == [
        "12-ring::smooth::jax-loop~jax-wrong",
        "12-ring::smooth::jax-scan~jax-wrong",
        "12-ring::smooth::jax-wrong::jvp",
        "12-ring::smooth::jax-wrong::taylor",
        "20-fit::fit::jax-dot~jax-wrong-b::b",
        "20-fit::fit::jax-sum~jax-wrong-b::b",
        "20-fit::fit::jax-wrong-b::jvp::b",
        "20-fit::fit::jax-wrong-b::taylor::b",
        "20-fit::fit::jax-wrong-b~recorded/jax-dot::b",
    ], r.stdout
    for variant in ("jax-dot", "jax-sum", "jax-wrong-b"):
        assert f"20-fit::fit::{variant}~recorded/jax-dot::A PASSED" in r.stdout
    assert "20-fit::file::recorded/jax-dot PASSED" in r.stdout
    assert "the gradient of b is not the loss's derivative" in r.stdout
    passed = int(re.search(r"(\d+) passed", r.stdout).group(1))
    # 10-smooth: jax-loop's 2 runs (float64, float32), float32 pair, Taylor and jvp (its
    # Julia items skip); 12-ring: 6 runs, 1 pair, 3 float32 pairs, Taylor and jvp of the 2
    # correct variants; 20-fit: 6 runs and (per array A, b) 3 pairs, 3 float32 pairs, 3
    # pairs with recorded/jax-dot, Taylor and jvp of 3 variants, less jax-wrong-b's 5 items
    # of b (its float32 run, against its own float64 run, passes); the recorded file. (The
    # runs are items of their own since the redesign.)
    runs = 2 + 6 + 6
    assert passed == 3 + (1 + 3 + 4) + (2 * 3 + 2 * 3 + 2 * 3 + 2 * 2 * 3 - 5 + 1) + runs
    assert sum(outcome == "PASSED" for outcome in outcomes.values()) == passed
    # the Julia variant's 2 runs, 2 pairs, Taylor and jvp (was 4: no run items)
    assert re.search(r"SKIPPED \[6\] .*unavailable: no Julia found", r.stdout), r.stdout
    # The same verdicts as `weanj check` gave each case it judged (before the reference
    # was recorded): pytest fails exactly the failing ones and skips exactly the rest.
    for example in ("10-smooth", "12-ring", "20-fit"):
        for case, verdict in _verdicts(_judged(user_project, example)).items():
            expected = {"ok": "PASSED", "FAIL": "FAILED", "unavailable": "SKIPPED"}
            assert outcomes[case] == expected.get(verdict, "SKIPPED"), (case, verdict)
