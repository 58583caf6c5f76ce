"""The Julia variants where Julia cannot run, on weanj's side of the worker.

- The settings the worker gets for juliacall and juliapkg (finding Julia itself, with the
  fake executables of tests/julia_helpers.py, is tested in tests/test_julia_discovery.py).
- The project's Julia packages: its top-level `Project.toml` as juliapkg requirements.
- Arguments checked before anything crosses, for every kind of array and parameter (no
  worker starts for them); registering (relative files, missing or unreadable files,
  options).
- The registry and the command line without Julia: one line, exit 2, no juliacall import;
  a Julia that does not start (real juliacall and juliapkg in the worker, a fake Julia).
- The Julia sources: the kernels against the registry and docs/DESIGN.md's loops, the
  dependency files against each other and against the juliacall installed, the `julia`
  extra, fatou's lint and format, the wheel layout.

The worker itself, its protocol and its failures are tested in tests/test_julia_worker.py;
the tests that need Julia are in tests/crossval/test_julia.py.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj._backends import (
    _julia,
    _julia_calls,
    _julia_client,
    _julia_env,
    _julia_find,
    _julia_process,
    _julia_stand_in,
)
from weanj._backends._julia_bounds import compat_ranges
from weanj._registry import catalog, catalogs, find_variant

from . import julia_helpers
from .helpers import graph_fields, run_python
from .julia_helpers import (
    SETTINGS,
    calls,
    fake_julia,
    forget_julia,
    graph_inputs,
    one_line,
)

# The shared fixtures (tests/julia_helpers.py), under their names here.
new_example = julia_helpers.new_example
no_julia = julia_helpers.no_julia

REPO = Path(__file__).resolve().parent.parent
JULIA_DIR = REPO / "julia"
# The Julia variants of the Poisson examples and their loss functions in WeanJ.
POISSON_VARIANTS = {
    ("01-jacobi", "julia-jacobi"): ("jacobi", "jacobi_loss"),
    ("02-gauss-seidel", "julia-lex"): ("lex", "lex_loss"),
    ("02-gauss-seidel", "julia-rb"): ("rb", "rb_loss"),
}


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a subprocess that has no Julia."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    (tmp_path / "bin").mkdir(exist_ok=True)
    env.update(PATH=str(tmp_path / "bin"), HOME=str(tmp_path / "home"))
    return env


def _python_without_julia(
    tmp_path: Path, *argv, root: Path | None = None, **extra: str
) -> subprocess.CompletedProcess:
    """`python ARGV` in a fresh process that has no Julia (`_clean_env`, plus `extra`), its
    project root `root` when given."""
    env = {**_clean_env(tmp_path), **extra}
    if root is not None:
        env["WEANJ_ROOT"] = str(root)
    return run_python(*argv, env=env, timeout=120)


# --- the worker's settings ---------------------------------------------------------------


def test_the_worker_gets_the_julia_found_one_thread_and_juliacalls_signals():
    julia = Path("/opt/julia-1.11.5/bin/julia")
    assert _julia_find.worker_settings(julia, {}) == {
        "PYTHON_JULIAPKG_EXE": str(julia),
        "PYTHON_JULIACALL_THREADS": "1",
    }


@pytest.mark.parametrize(
    "given, expected",
    [
        ({"JULIA_NUM_THREADS": "4"}, {"PYTHON_JULIACALL_HANDLE_SIGNALS": "yes"}),
        ({"PYTHON_JULIACALL_THREADS": "2"}, {"PYTHON_JULIACALL_HANDLE_SIGNALS": "yes"}),
        ({"PYTHON_JULIACALL_THREADS": "2", "PYTHON_JULIACALL_HANDLE_SIGNALS": "no"}, {}),
        ({"JULIA_NUM_THREADS": "1"}, {}),
    ],
)
def test_more_julia_threads_turn_on_julias_signal_handling_unless_told(given, expected):
    """With more than one Julia thread, Julia must handle signals (PythonCall's advice);
    the user's own settings win."""
    settings = _julia_find.worker_settings(Path("/opt/julia"), given)
    assert "PYTHON_JULIACALL_THREADS" not in settings  # the user's threads rule
    assert {k: v for k, v in settings.items() if k != "PYTHON_JULIAPKG_EXE"} == expected


def test_with_juliacalls_own_julia_juliapkg_is_not_involved():
    settings = _julia_find.worker_settings(
        Path("/opt/julia"), {"PYTHON_JULIACALL_EXE": "/x/julia", "PYTHON_JULIACALL_PROJECT": "/p"}
    )
    assert "PYTHON_JULIAPKG_EXE" not in settings


# --- the project's Julia packages ----------------------------------------------------------

SPECIAL = "276daf66-3868-5448-9aa4-cd146d93841b"
ENZYME = "7da242da-08ed-463a-9acd-ee780be4f1d9"
LINEAR_ALGEBRA = "37e2e46d-f89d-539d-b4ee-838fcccc9c8e"


def test_the_project_toml_becomes_juliapkgs_requirements(tmp_path):
    """`[deps]` with their `[compat]` bounds, in juliapkg.json's format: what a user adds
    with `Pkg.add` reaches the worker's environment; what weanj declares itself with the
    same bounds (Enzyme 0.13, julia 1.10.3 - 1.13) is left to weanj's juliapkg.json."""
    (tmp_path / "Project.toml").write_text(
        "[deps]\n"
        f'SpecialFunctions = "{SPECIAL}"\n'
        f'LinearAlgebra = "{LINEAR_ALGEBRA}"\n'
        f'Enzyme = "{ENZYME}"\n\n'
        "[compat]\n"
        'SpecialFunctions = "2.4"\n'
        'Enzyme = "0.13"\n'
        f'julia = "{_julia_find.COMPAT}"\n'
    )
    assert _julia_env.requirements(tmp_path) == {
        "packages": {
            "SpecialFunctions": {"uuid": SPECIAL, "version": "2.4"},
            "LinearAlgebra": {"uuid": LINEAR_ALGEBRA},
        }
    }
    folder = _julia_env.write_requirements(tmp_path, tmp_path / "work", JULIA_DIR)
    written = folder / "juliapkg.json"
    assert json.loads(written.read_text())["packages"]["SpecialFunctions"]["version"] == "2.4"
    before = written.stat().st_mtime_ns
    time.sleep(0.01)
    assert _julia_env.write_requirements(tmp_path, tmp_path / "work", JULIA_DIR) == folder
    assert written.stat().st_mtime_ns == before  # unchanged: juliapkg need not resolve again


def test_weanj_is_developed_by_path_in_the_workers_environment(tmp_path):
    """The worker loads WeanJ with `using WeanJ`: juliapkg `dev`s it from weanj's julia/
    folder (its uuid from julia/Project.toml), beside the project's own packages, so Pkg
    precompiles it once and every later start reuses the cache."""
    folder = _julia_env.write_requirements(tmp_path / "none", tmp_path / "work", JULIA_DIR)
    written = json.loads((folder / "juliapkg.json").read_text())
    uuid_line = re.search(r'^uuid = "(.+)"$', (JULIA_DIR / "Project.toml").read_text(), re.M)
    assert written == {
        "packages": {"WeanJ": {"uuid": uuid_line.group(1), "path": str(JULIA_DIR), "dev": True}}
    }


def test_a_project_that_declares_only_weanjs_packages_adds_nothing(tmp_path):
    assert _julia_env.requirements(tmp_path) is None  # no Project.toml
    assert _julia_env.requirements(REPO) is None  # weanj's own: Enzyme and julia's bounds
    (tmp_path / "Project.toml").write_text(f'[deps]\nEnzyme = "{ENZYME}"\n')
    # Enzyme without weanj's bound is a requirement of its own (juliapkg intersects them).
    assert _julia_env.requirements(tmp_path) == {"packages": {"Enzyme": {"uuid": ENZYME}}}
    (tmp_path / "Project.toml").write_text('[compat]\njulia = "1.11"\n')
    assert _julia_env.requirements(tmp_path) == {"julia": "1.11"}


def test_a_broken_project_toml_makes_the_julia_variants_unavailable(tmp_path):
    (tmp_path / "Project.toml").write_text("[deps\n")
    with pytest.raises(weanj.UnavailableError, match="Julia packages cannot be read") as caught:
        _julia_env.requirements(tmp_path)
    one_line(str(caught.value))
    (tmp_path / "Project.toml").write_text("[deps]\nSpecialFunctions = 3\n")
    with pytest.raises(weanj.UnavailableError, match="must be a UUID string"):
        _julia_env.requirements(tmp_path)


# --- arguments are checked before anything crosses -----------------------------------------


@pytest.fixture
def worker_that_must_not_start(tmp_path, monkeypatch):
    """A stand-in worker that dies on its first request: an argument that reached it
    would be a JuliaError, not the InputError these tests expect."""
    forget_julia()
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    worker = REPO / "tests" / "stand_ins" / "julia_worker.py"
    monkeypatch.setenv(
        _julia_stand_in.WORKER_VARIABLE, shlex.join([sys.executable, str(worker), "segfault"])
    )
    yield _julia_process.work_folder(tmp_path) / "worker.log"
    forget_julia()


BAD_ARGUMENTS = [
    ((np.ones((3, 4)), np.ones((3, 4))), 1, "theta"),  # the example's validate
    ((np.ones((3, 3)), np.ones((3, 2))), 1, "uobs"),
    ((np.ones((3, 3), dtype=int), np.zeros((3, 3))), 1, "expected float64 or float32"),
    ((np.ones((3, 3), np.float32), np.zeros((3, 3))), 1, "mix float32 and float64"),
    ((np.ones((3, 3)), np.ones((3, 3))), 0, "K must be at least 1"),
    ((np.ones((3, 3)), np.ones((3, 3))), 2.5, "integer"),
    ((np.ones((3, 3)),), 1, "arguments"),
]


def _graph_mistakes() -> list[tuple[tuple, str]]:
    """Arguments of `helpers.graph_fields`'s example, each with one mistake of kind: an
    int that would wrap around in Julia's Int32, ints of another width, a real array
    where a complex one is declared, a mask not of bools, parameters of another kind."""
    x, z, edges, mask, w = graph_inputs(np.float64)
    wrapping = edges.copy()
    wrapping[0, 0] = np.iinfo(np.int32).max
    return [
        ((x, z, wrapping, mask, w, 0.5, 3, True), "would wrap around"),
        ((x, z, edges.astype(np.int64), mask, w, 0.5, 3, True), "edges"),
        ((x, z.real.copy(), edges, mask, w, 0.5, 3, True), "z"),
        ((x, z, edges, mask.astype(np.int8), w, 0.5, 3, True), "mask"),
        ((x, z, edges, mask, w, 0.5, 3.0, True), "steps"),
        ((x, z, edges, mask, w, 0.5, 3, 1), "flag"),
    ]


@pytest.mark.parametrize(
    "example, arguments, message",
    [
        *(("02-gauss-seidel", (*arrays, K), message) for arrays, K, message in BAD_ARGUMENTS),
        *(("90-graph", arguments, message) for arguments, message in _graph_mistakes()),
    ],
)
def test_argument_mistakes_are_refused_before_anything_crosses(
    worker_that_must_not_start, new_example, tmp_path, example, arguments, message
):
    """Refused in one line (by the registry's generic checks or the bridge's own, which
    add the example's `validate`), by the loss and the gradient alike, for a built-in
    example's arrays and for every kind a user's can declare, and no worker is started
    for them."""
    if example == "90-graph":
        (tmp_path / "graph.jl").write_text("# never read: nothing crosses\n")
        ex = new_example(example, **graph_fields())
        v = weanj.julia_variant(
            ex, "julia-graph", family="graph", loss="graph_loss", file="graph.jl"
        )
    else:
        v = weanj.variant(example, "julia-lex")
    for call in (v.loss, v.grad):
        with pytest.raises(weanj.InputError, match=message) as caught:
            call(*arguments)
        one_line(str(caught.value))
    assert not worker_that_must_not_start.exists()


@pytest.mark.parametrize("arrays, K, message", BAD_ARGUMENTS)
def test_the_bridge_checks_arguments_itself(worker_that_must_not_start, arrays, K, message):
    """The bridge's functions, called without the registry's checks in front of them,
    refuse the same arguments before anything crosses."""
    kernel = _julia.julia_kernels([catalog("02-gauss-seidel")])[("02-gauss-seidel", "julia-lex")]
    built = _julia_calls.julia_functions(weanj.example("02-gauss-seidel"), kernel)
    assert built.jvp is None  # a Julia loss cannot be pushed forward by JAX
    for call in (built.loss, built.grad):
        with pytest.raises(weanj.InputError, match=message) as caught:
            call(*arrays, K)
        one_line(str(caught.value))
    assert not worker_that_must_not_start.exists()


# --- registering ---------------------------------------------------------------------------


def test_a_relative_julia_file_is_found_under_the_project_root(
    no_julia, new_example, tmp_path, monkeypatch
):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "f.jl").write_text("f(x) = sum(x)\n")
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    ex = new_example("90-f", arrays=("x",), wrt="x")
    weanj.julia_variant(ex, "julia-f", family="f", loss="f", file="kernels/f.jl")
    kernel = _julia.julia_kernels([catalog("90-f")])[("90-f", "julia-f")]
    assert kernel.file == (tmp_path / "kernels" / "f.jl").resolve()
    assert (kernel.arrays, kernel.wrt, kernel.params, kernel.loss) == (("x",), ("x",), (), "f")


@pytest.mark.parametrize("problem", ["does not exist", "cannot be read"])
def test_a_julia_file_that_cannot_be_read_is_its_variants_reason(
    no_julia, new_example, tmp_path, problem
):
    """Registering a Julia variant whose file is missing (not written yet) or unreadable
    raises nothing: the variant is unavailable, with that reason, and calling it raises
    `UnavailableError` saying so."""
    path = tmp_path / "f.jl"
    if problem == "cannot be read":
        path.write_text("f(x) = sum(x)\n")
        path.chmod(0)
        if os.access(path, os.R_OK):
            pytest.skip("this user reads files whatever their mode (root)")
    ex = new_example("90-f", arrays=("x",), wrt="x")
    v = weanj.julia_variant(ex, "julia-f", family="f", loss="f", file=path)
    assert v.unavailable_reason() == f"the Julia file {path} {problem}"
    assert "julia-f" not in weanj.variants("90-f")
    with pytest.raises(weanj.UnavailableError, match=problem):
        v.loss(np.ones(3))


def test_julia_variant_options_are_checked_when_registering(no_julia, new_example, tmp_path):
    ex = new_example("90-f", arrays=("x",), wrt="x")
    bad = [{"function": "shadow"}, {"function": True}, {"runtime_activity": "yes"}]
    for given in bad:
        with pytest.raises(weanj.DefinitionError) as caught:
            weanj.julia_variant(ex, "julia-bad", family="f", loss="f", **given)
        one_line(str(caught.value))
    assert find_variant("90-f", "julia-bad") is None


# --- the registry and the command line without Julia ---------------------------------------


def test_listing_variants_neither_imports_juliacall_nor_offers_julia(tmp_path):
    script = (
        "import json, sys, weanj\n"
        "out = {ex: {'available': weanj.variants(ex), 'families': weanj.families(ex),\n"
        "            'unavailable': weanj.unavailable_variants(ex)}\n"
        "       for ex in weanj.example_names()}\n"
        "out['juliacall imported'] = 'juliacall' in sys.modules\n"
        "print(json.dumps(out))\n"
    )
    done = _python_without_julia(tmp_path, "-c", script)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out.pop("juliacall imported") is False
    for (example, name), (family, _) in POISSON_VARIANTS.items():
        assert name in out[example]["families"][family]
    for listing in out.values():
        for name, reason in listing["unavailable"].items():
            if name.startswith("julia-"):
                assert name not in listing["available"] and "juliaup" in reason


def test_using_a_julia_variant_without_julia_raises_unavailable(no_julia):
    had_juliacall = "juliacall" in sys.modules
    with pytest.raises(weanj.UnavailableError, match="juliaup"):
        weanj.variant("02-gauss-seidel", "julia-lex")
    v = find_variant("02-gauss-seidel", "julia-lex")
    with pytest.raises(weanj.UnavailableError, match="WEANJ_JULIA"):
        _ = v.grad
    assert ("juliacall" in sys.modules) == had_juliacall


def _error_line(stderr: str) -> tuple[str, str]:
    """weanj's error on stderr, and no traceback: its first line, at most ~200 characters,
    and the whole message (a longer one goes on, once, on an indented second line:
    `weanj._errors.wrapped`)."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("weanj: error:"), stderr
    assert len(lines[0]) <= 200 + len("weanj: error: "), lines[0]
    assert lines[1:] == [] or lines[1].startswith("  "), stderr
    return lines[0], " ".join(line.strip() for line in lines)


def test_weanj_run_julia_without_julia_is_one_line_and_exit_2(tmp_path, project):
    done = _python_without_julia(
        tmp_path, "-m", "weanj", "run", "02-gauss-seidel", "julia-lex", root=project
    )
    assert done.returncode == 2
    first, _ = _error_line(done.stderr)
    assert "Julia" in first and "julia-lex" in first and "juliaup" in first
    assert "Traceback" not in done.stdout
    assert not (project / "results" / "02-gauss-seidel" / "gradients" / "julia-lex.h5").exists()


def test_weanj_run_with_only_julia_114_is_one_line_naming_the_fix(tmp_path, project):
    fake = fake_julia(tmp_path / "home" / ".juliaup" / "bin" / "julia", "1.14.0-DEV")
    done = _python_without_julia(
        tmp_path, "-m", "weanj", "run", "01-jacobi", "julia-jacobi", root=project
    )
    assert done.returncode == 2
    first, message = _error_line(done.stderr)
    # the first line names the problem; a long path may push the version to the next. The
    # fix is 1.13, or 1.11 where this Python's OpenSSL is older than 3.5.
    assert "no usable Julia" in first and "1.14.0-DEV" in message
    assert re.search(r"juliaup add 1\.1[13]", message), message
    assert calls(fake) == ["--version"]


def test_a_julia_that_does_not_start_is_one_line_and_exit_2(tmp_path, project):
    """A `julia` on PATH that says it is 1.11.5 but is not Julia: juliacall (through
    juliapkg) is handed that executable, nothing is downloaded, and the failure is one
    line."""
    # Not importorskip: importing juliacall here, with no Julia handed to it, would make
    # juliapkg look for one to download.
    if _julia.importlib.util.find_spec("juliacall") is None:
        pytest.skip("juliacall is not installed (pip install 'weanj[julia]')")
    fake = fake_julia(tmp_path / "bin" / "julia", "1.11.5")
    # juliapkg's own state goes to a temporary folder, not the virtualenv.
    julia_env = tmp_path / "julia_env"
    done = _python_without_julia(
        tmp_path,
        *("-m", "weanj", "run", "02-gauss-seidel", "julia-rb"),
        root=project,
        PYTHON_JULIAPKG_PROJECT=str(julia_env),
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("weanj: error:")]
    assert len(errors) == 1 and "could not start Julia 1.11.5" in errors[0], done.stderr
    assert str(fake) in errors[0]
    assert str(project / ".weanj-cache" / "julia" / "worker.log") in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    # juliapkg ran the fake (and no other Julia), and installed none of its own.
    assert calls(fake)[0] == "--version" and len(calls(fake)) > 1
    assert not (julia_env / "pyjuliapkg" / "install").exists()


# --- the Julia sources ---------------------------------------------------------------------

UPDATE = "(source + u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) / 4"
SRC = JULIA_DIR / "src"
WEANJ_JL = SRC / "WeanJ.jl"


def test_weanjs_kernels_are_exported_from_the_files_of_their_examples():
    """Each built-in Julia variant's loss (`weanj.julia_variant(..., loss=...)` without a
    file) is a function of julia/src/<the example's stem>.jl, which WeanJ.jl includes and
    whose loss it exports; the fixtures name the same loss. Every kernel file lies in
    src/, where Pkg precompiles it with the package, none beside it."""
    kernels = {k: v for k, v in _julia.julia_kernels(catalogs()).items() if v.file is None}
    assert set(POISSON_VARIANTS) <= set(kernels)
    text = WEANJ_JL.read_text()
    for (example, variant), kernel in kernels.items():
        stem = weanj.example(example).stem
        assert f'include("{stem}.jl")' in text
        source = (SRC / f"{stem}.jl").read_text()
        assert re.search(rf"^function {kernel.loss}\(", source, re.MULTILINE), (stem, kernel)
        assert re.search(rf"^export .*\b{kernel.loss}\b", text, re.MULTILINE), kernel.loss
        assert (REPO / "python" / "weanj" / "examples" / f"{stem}.py").is_file()
        fixture = json.loads((JULIA_DIR / "test" / "fixtures" / f"{variant}.json").read_text())
        assert fixture["loss"] == kernel.loss and fixture["example"] == example
    for (example, name), (family, loss) in POISSON_VARIANTS.items():
        assert (find_variant(example, name).family, kernels[(example, name)].loss) == (family, loss)
    assert not list(JULIA_DIR.glob("*.jl"))
    included = set(re.findall(r'^include\("(\w+\.jl)"\)$', text, re.MULTILINE))
    assert included == {p.name for p in SRC.glob("*.jl")} - {"WeanJ.jl"}


def _julia_function(stem: str, name: str) -> str:
    """The text of `function NAME(...)` in julia/src/<stem>.jl, up to its closing `end`."""
    text = (SRC / f"{stem}.jl").read_text()
    body = text[text.index(f"function {name}(") :]
    return body[: body.index("\nend\n")]


def test_the_poisson_loop_and_update_are_designs():
    """poisson.jl's sweep is the column-major loop over the padded grid, and its point
    update docs/DESIGN.md's: h2*θ first, then the neighbours in the order i-1, i+1, j-1, j+1;
    the loss checks its arguments before it solves."""
    update = _julia_function("poisson", "poisson_update")
    assert "source = h2 * θ[i - 1, j - 1]" in update and f"return {UPDATE}" in update
    sweep = _julia_function("poisson", "poisson_sweep!")
    assert "for j in 2:(n + 1), i in 2:(n + 1)" in sweep
    assert "unew[i, j] = poisson_update(u, θ, h2, i, j)" in sweep
    loss = _julia_function("poisson", "poisson_loss")
    assert loss.index("check_poisson(θ, uobs, K)") < loss.index("misfit(solve(θ, K), uobs)")


@pytest.mark.parametrize("stem, kernels", [("jacobi", 1), ("gauss_seidel", 2)])
def test_kernels_are_designs_loops(stem, kernels):
    """Each kernel sweeps with docs/DESIGN.md's loop and update (poisson.jl's `poisson_sweep!`
    into a second buffer for jacobi and in place for lex, the same loop and update over
    one colour for rb), and each loss is `poisson_loss` of its solver."""
    text = (SRC / f"{stem}.jl").read_text()
    assert len(re.findall(r"^function \w+_loss\(", text, re.MULTILINE)) == kernels
    losses = re.findall(r"^    return poisson_loss\(\w+_solve, θ, uobs, K\)$", text, re.MULTILINE)
    assert len(losses) == kernels
    if stem == "jacobi":
        solve = _julia_function(stem, "jacobi_solve")
        assert "poisson_sweep!(unew, u, θ, h2)" in solve and "u, unew = unew, u" in solve
    else:
        assert "lex_sweep!(u, θ, h2) = poisson_sweep!(u, u, θ, h2)" in text
        half = _julia_function(stem, "half_sweep!")
        assert "for j in 2:(n + 1), i in 2:(n + 1)" in half and "if iseven(i + j) == red" in half
        assert "u[i, j] = poisson_update(u, θ, h2, i, j)" in half


def test_the_poisson_loss_sums_in_float64():
    """julia/README.md's rule for every loss: the sum in Float64 (`accumulator_type`,
    `promote_type(Float64, T)`: Float64 itself for Float64 and Float32), rounded to T once;
    T is the arrays' promoted element type."""
    text = (SRC / "poisson.jl").read_text()
    body = text[text.index("function misfit(") :]
    body = body[: body.index("\nend\n")]
    assert "T = promote_type(eltype(u), eltype(uobs))" in body
    assert "S = accumulator_type(T)" in body and "s = zero(S)" in body
    assert "s += S(r)^2" in body and "return T(s)" in body
    sums = (SRC / "sums.jl").read_text()
    assert "accumulator_type(::Type{T}) where {T <: Real} = promote_type(Float64, T)" in sums


def _fatou() -> str:
    found = shutil.which("fatou", path=str(Path(sys.executable).parent)) or shutil.which("fatou")
    if found is None:
        pytest.skip("fatou is not installed (pip install 'weanj[test]')")
    return found


def test_fatou_lints_and_formats_julia_clean():
    fatou = _fatou()
    files = {str(p.relative_to(JULIA_DIR)) for p in JULIA_DIR.rglob("*.jl")}
    kernels = {"poisson", "jacobi", "gauss_seidel", "advection", "tridiagonal", "deposition"}
    assert {f"src/{k}.jl" for k in kernels} | {"src/WeanJ.jl", "test/runtests.jl"} <= files
    for command in (["lint"], ["format", "--check"]):
        done = subprocess.run(
            [fatou, *command, str(JULIA_DIR)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_fatou_rejects_a_julia_file_that_does_not_parse(tmp_path):
    """The lint above would catch a syntax error: the same check fails on one."""
    fatou = _fatou()
    broken = tmp_path / "broken.jl"
    broken.write_text((SRC / "poisson.jl").read_text().replace(UPDATE, UPDATE[:-5] + " / 4"))
    done = subprocess.run([fatou, "lint", str(broken)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "parse" in done.stdout + done.stderr


Version = tuple[int, int, int]


# The compat reading the worker checks environments with (and these tests check the
# dependency files with), by the rules of Pkg's documentation.
pkg_compat = compat_ranges


# The examples of Pkg's documentation ("Version specifier format"): each entry and the
# range [lo, hi) it allows.
PKG_DOCUMENTATION = """\
^1.2.3          1.2.3  2.0.0
1.2             1.2.0  2.0.0
^0.2.3          0.2.3  0.3.0
^0.0.3          0.0.3  0.0.4
^0.0            0.0.0  0.1.0
~1.2.3          1.2.3  1.3.0
~1              1.0.0  2.0.0
~0.0.3          0.0.3  0.0.4
=1.2.3          1.2.3  1.2.4
1.2.3 - 4.5.6   1.2.3  4.5.7
1.2.3 - 4.5     1.2.3  4.6.0
1.2 - 4         1.2.0  5.0.0
"""


def _version(text: str) -> Version:
    major, minor, patch = map(int, text.split("."))
    return major, minor, patch


def test_the_compat_reading_follows_pkgs_documentation():
    """The examples of Pkg's documentation, so that the checks below read the entries as
    Pkg does (`~1.10` stops before 1.11.0, a hyphen range's `1.11` means every 1.11.x)."""
    for line in PKG_DOCUMENTATION.splitlines():
        spec, lo, hi = re.fullmatch(r"(.+?) +(\S+) +(\S+)", line).groups()
        assert pkg_compat(spec) == [(_version(lo), _version(hi))], spec
    assert pkg_compat("~1.10, ~1.11") == [((1, 10, 0), (1, 11, 0)), ((1, 11, 0), (1, 12, 0))]


def test_the_compat_reading_agrees_with_juliapkgs(tmp_path):
    """juliapkg (installed with juliacall) reads juliapkg.json's entries itself: its
    parser gives the same ranges (in a child process: juliapkg imported here would count
    as imported before the bridge)."""
    if importlib.util.find_spec("juliapkg") is None:
        pytest.skip("juliapkg comes with juliacall (pip install 'weanj[julia]')")
    specs = ["1.10.3 - 1.11", "^1.10.3", "~1.10, ~1.11", "1.2.3 - 4.5.6", "=1.2.3", "0.13"]
    script = (
        "import json, sys\n"
        "from juliapkg.compat import Compat\n"
        "out = [[[[r.lo.major, r.lo.minor, r.lo.patch], [r.hi.major, r.hi.minor, r.hi.patch]]\n"
        "        for r in Compat.parse(s).clauses] for s in json.loads(sys.argv[1])]\n"
        "print(json.dumps(out))\n"
    )
    done = _python_without_julia(
        tmp_path,
        *("-c", script, json.dumps(specs)),
        PYTHON_JULIAPKG_PROJECT=str(tmp_path / "julia_env"),
    )
    assert done.returncode == 0, done.stderr
    theirs = [[(tuple(lo), tuple(hi)) for lo, hi in ranges] for ranges in json.loads(done.stdout)]
    assert theirs == [pkg_compat(spec) for spec in specs]


SUPPORTED_RANGE = [(_julia_find.MINIMUM, _julia_find.BELOW)]


def _dependency_files() -> tuple[dict, dict, dict]:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    juliapkg = json.loads((REPO / "python" / "weanj" / "juliapkg.json").read_text())
    top = tomllib.loads((REPO / "Project.toml").read_text())
    package = tomllib.loads((JULIA_DIR / "Project.toml").read_text())
    return juliapkg, top, package


def test_julia_dependencies_agree():
    """juliapkg.json (the worker's environment), julia/Project.toml (the package WeanJ)
    and Project.toml (the Julia packages the project's kernel files use) name Enzyme by
    one UUID and compat bound, and allow exactly the Julia versions weanj accepts,
    [1.10.3, 1.14.0): `1.10.3 - 1.13` (`1.10, 1.13` would allow up to 2.0, `~1.10` 1.10.0
    to 1.10.2, which PythonCall refuses). WeanJ's own PrecompileTools (its precompile
    workload) is in the worker's environment too; JET is a test-only dependency of the
    package. Nothing reads HDF5 in Julia any more."""
    juliapkg, top, package = _dependency_files()
    enzyme = "7da242da-08ed-463a-9acd-ee780be4f1d9"
    precompile_tools = "aea7be01-6a6a-4083-8856-8a6e6704d82a"
    assert juliapkg["packages"] == {
        "Enzyme": {"uuid": enzyme, "version": "0.13"},
        "PrecompileTools": {"uuid": precompile_tools, "version": "1"},
    }
    assert package["deps"] == {
        "ADTypes": "47edcb42-4c32-4615-8424-f2b9edc5f35b",
        "DifferentiationInterface": "a0c0ee7d-e4b9-4e03-894e-1c5f64a51d63",
        "Enzyme": enzyme,
        "PrecompileTools": precompile_tools,
    }
    # DifferentiationInterface 0.7.x and ADTypes 1.x declare julia "1.10" (docs/julia.md)
    assert package["compat"]["ADTypes"] == "1"
    assert package["compat"]["DifferentiationInterface"] == "0.7"
    # The AD packages Pkg.test uses (every one `julia_variant(ad=...)` offers besides
    # Enzyme) have the bounds weanj declares when a variant uses them.
    for ad in ("forwarddiff", "mooncake", "zygote", "finitedifferences"):
        name, uuid_text, bound = _julia_env.AD[ad]
        assert package["extras"][name] == uuid_text and package["compat"][name] == bound
    assert top["deps"] == {"Enzyme": enzyme}
    assert top["compat"]["Enzyme"] == package["compat"]["Enzyme"] == "0.13"
    assert package["compat"]["PrecompileTools"] == "1"
    for spec in (juliapkg["julia"], top["compat"]["julia"], package["compat"]["julia"]):
        assert spec == _julia_find.COMPAT
        assert pkg_compat(spec) == SUPPORTED_RANGE
    assert set(top) == {"deps", "compat"}  # an environment, not a package
    # The package: a name, a UUID, and test-only dependencies (JSON: the fixtures; JET:
    # the optimisation analysis of every loss).
    assert package["name"] == "WeanJ" and uuid.UUID(package["uuid"]).version == 4
    assert package["extras"] == {
        "FiniteDifferences": "26cc04aa-876d-5657-8c51-4c34ba976000",
        "ForwardDiff": "f6369f11-7733-5829-9624-2563aa707210",
        "JET": "c3a54625-cd67-489e-a8e7-0a5a0ff4e31b",
        "JSON": "682c06a0-de6a-54ab-a142-c8b1cf79cde6",
        "Mooncake": "da2b9cff-9c12-43a0-ae48-6db2b0edb7d6",
        "Test": "8dfed614-e22c-5e08-85e1-65c5234f0b40",
        "Zygote": "e88e6eb3-aa80-5325-afca-941959d7151f",
    }
    assert package["targets"]["test"] == [
        "FiniteDifferences",
        "ForwardDiff",
        "JET",
        "JSON",
        "Mooncake",
        "Test",
        "Zygote",
    ]
    # JET's series each run on a few Julia minors only: the bound lets Pkg pick one for
    # every Julia weanj supports (0.9 for 1.10 and 1.11, 0.12 for 1.12 and 1.13).
    jet = pkg_compat(package["compat"]["JET"])
    assert _inside([((0, 9, 0), (0, 10, 0)), ((0, 12, 0), (0, 13, 0))], jet)


def _inside(ranges: list, within: list) -> bool:
    return all(any(lo2 <= lo and hi <= hi2 for lo2, hi2 in within) for lo, hi in ranges)


def test_weanjs_julia_bounds_lie_inside_the_installed_juliacalls():
    """juliacall's own juliapkg.json (PythonCall's `julia` compat) bounds the Julia any
    juliacall can run: weanj's range must lie inside it, or juliapkg would find no Julia
    that satisfies both. Read from the installed package's folder, without importing
    juliacall (which would start Julia)."""
    spec = importlib.util.find_spec("juliacall")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("juliacall is not installed (pip install 'weanj[julia]')")
    path = Path(next(iter(spec.submodule_search_locations))) / "juliapkg.json"
    theirs = json.loads(path.read_text())["julia"]
    assert _inside(SUPPORTED_RANGE, pkg_compat(theirs)), (theirs, _julia_find.COMPAT)
    # And a range too wide would be noticed: 1.10.0 is outside juliacall's.
    assert not _inside([((1, 10, 0), (1, 12, 0))], pkg_compat(theirs))


def test_the_julia_extra_pins_juliacall_below_1():
    """`weanj[julia]`: juliacall 0.9.28 or later (PYTHON_JULIACALL_EXE and
    PYTHON_JULIACALL_PROJECT, which the bridge honours, exist from 0.9.28 on), below 1.0
    (PythonCall 1.0 renames `seval` and changes conversions); the installed one fits."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["project"]["optional-dependencies"]["julia"] == ["juliacall>=0.9.28,<1"]
    try:
        installed = importlib.metadata.version("juliacall")
    except importlib.metadata.PackageNotFoundError:
        return
    version = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)\.(\d+)", installed).groups())
    assert (0, 9, 28) <= version < (1, 0, 0), installed


def test_julia_sources_in_a_checkout_and_in_a_wheel(tmp_path, monkeypatch):
    assert _julia_find.julia_sources() == JULIA_DIR
    # A wheel's layout: site-packages/weanj/julia/{src/WeanJ.jl, *.jl}, no checkout around.
    package = tmp_path / "site-packages" / "weanj"
    (package / "julia" / "src").mkdir(parents=True)
    shutil.copy(WEANJ_JL, package / "julia" / "src")
    monkeypatch.setattr(_julia_find, "_PACKAGE_DIR", package)
    assert _julia_find.julia_sources() == package / "julia"
    (package / "julia" / "src" / "WeanJ.jl").unlink()
    assert _julia_find.julia_sources() is None


# --- what computes the Julia variants, known without starting Julia -------------------------


def test_the_julia_identity_needs_no_julia_run_and_follows_the_manifest(
    no_julia, tmp_path, monkeypatch
):
    """A record's key holds it, so it is known before any worker starts (a later command
    that starts none looks records up with it): Julia's version and path (`julia
    --version` only), the worker environment's Manifest (digest, and the Enzyme it
    resolved), WeanJ's sources; "no manifest yet" before the first resolve. A changed
    Manifest changes it, an unchanged one does not."""
    fake = fake_julia(no_julia / "julia", "1.11.5")
    environment = tmp_path / "julia_env"
    monkeypatch.setenv("PYTHON_JULIAPKG_PROJECT", str(environment))
    assert _julia_env.environment_folder() == environment
    before = _julia_env.identity()
    assert before.startswith(f"Julia 1.11.5 ({fake}), environment {environment}: no manifest yet")
    weanj_digest = _julia_env.weanj_sources_digest(JULIA_DIR)
    assert f"WeanJ sha256 {weanj_digest}" in before
    environment.mkdir()
    manifest = environment / "Manifest.toml"
    manifest.write_text('[[deps.Enzyme]]\ndeps = ["CEnum"]\nuuid = "7da2"\nversion = "0.13.30"\n')
    resolved = _julia_env.identity()
    assert "Enzyme 0.13.30 (environment" in resolved and resolved != before
    assert _julia_env.identity() == resolved
    manifest.write_text(manifest.read_text().replace("0.13.30", "0.13.31"))
    assert "Enzyme 0.13.31" in _julia_env.identity()
    assert calls(fake) == ["--version"]  # nothing but `julia --version`, once


def test_the_environment_folder_is_the_one_juliapkg_chooses(tmp_path):
    """pyjuliapkg's rule, read from its state.py and checked against it where it is
    installed: a virtual environment's `julia_env`, or `$PYTHON_JULIAPKG_PROJECT`."""
    if importlib.util.find_spec("juliapkg") is None:
        pytest.skip("juliapkg is not installed (pip install 'weanj[julia]')")
    script = (
        "import json, sys\n"
        "from juliapkg.state import STATE\n"
        "from weanj._backends._julia_env import environment_folder\n"
        "print(json.dumps([STATE['project'], str(environment_folder())]))\n"
    )
    for extra in ({}, {"PYTHON_JULIAPKG_PROJECT": str(tmp_path / "env")}):
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHON_JULIAPKG_PROJECT", "PYTHON_JULIACALL_PROJECT")
        }
        done = run_python("-c", script, env={**env, **extra}, timeout=120)
        assert done.returncode == 0, done.stderr
        theirs, ours = json.loads(done.stdout)
        assert Path(theirs).resolve() == Path(ours).resolve()


def test_a_julia_variant_depends_on_its_own_file_and_what_it_includes(tmp_path):
    """What a Julia variant's records depend on beyond Python: its file and the files it
    includes by a literal path, followed in turn; a computed include adds its folder."""
    (tmp_path / "lib").mkdir()
    main = tmp_path / "main.jl"
    main.write_text('include("lib/helpers.jl")\nf(x) = g(x)\n')
    (tmp_path / "lib" / "helpers.jl").write_text('include("more.jl")\ng(x) = x\n')
    (tmp_path / "lib" / "more.jl").write_text("h(x) = x\n")
    (tmp_path / "other.jl").write_text("k(x) = x\n")
    found = _julia_env.kernel_sources(main)
    assert set(found) == {main, tmp_path / "lib" / "helpers.jl", tmp_path / "lib" / "more.jl"}
    main.write_text('include(joinpath(@__DIR__, "lib", "helpers.jl"))\n')
    assert _julia_env.kernel_sources(main) == (main, tmp_path)


def test_the_default_julia_time_limit_is_overridable_and_checked(monkeypatch):
    monkeypatch.delenv(_julia_client.TIMEOUT_VARIABLE, raising=False)
    assert _julia_client.default_timeout_s() == _julia_client.DEFAULT_TIMEOUT_S == 1800
    monkeypatch.setenv(_julia_client.TIMEOUT_VARIABLE, "2.5")
    assert _julia_client.default_timeout_s() == 2.5
    for bad in ("0", "-1", "soon", "inf", "nan"):
        monkeypatch.setenv(_julia_client.TIMEOUT_VARIABLE, bad)
        with pytest.raises(weanj.InputError, match=_julia_client.TIMEOUT_VARIABLE) as caught:
            _julia_client.default_timeout_s()
        one_line(str(caught.value))
