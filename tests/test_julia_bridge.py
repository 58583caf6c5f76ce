"""The Julia bridge where Julia cannot run: finding Julia without running it, the one-line
error, juliacall imported only on use, and the Julia sources themselves (parsed and linted
by fatou, mirrored by the Python registry, found in a checkout and in a wheel's layout).

The tests that run Julia are in tests/crossval/test_julia.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _julia
from weanj._registry import find_variant

REPO = Path(__file__).resolve().parent.parent
JULIA_DIR = REPO / "julia"
SETTINGS = (
    _julia.ENV_VAR,
    "PYTHON_JULIACALL_EXE",
    "PYTHON_JULIACALL_PROJECT",
    "PYTHON_JULIAPKG_EXE",
    "JULIAUP_DEPOT_PATH",
)


def fake_executable(path: Path) -> Path:
    """An executable file that is not Julia: finding Julia must not run it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 1\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def no_julia(tmp_path, monkeypatch) -> Path:
    """No Julia anywhere: no settings, an empty PATH folder (returned), a bare HOME."""
    for var in SETTINGS:
        monkeypatch.delenv(var, raising=False)
    path_dir = tmp_path / "bin"
    path_dir.mkdir()
    monkeypatch.setenv("PATH", str(path_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return path_dir


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a subprocess that has no Julia."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    (tmp_path / "bin").mkdir(exist_ok=True)
    env.update(PATH=str(tmp_path / "bin"), HOME=str(tmp_path / "home"))
    return env


# --- finding Julia -------------------------------------------------------------------


def test_without_julia_the_reason_is_one_line_saying_how_to_get_it(no_julia):
    julia, why = _julia.find_julia()
    assert julia is None
    assert "\n" not in why
    assert "juliaup" in why and "WEANJ_JULIA" in why and "1.10" in why
    assert _julia.unavailable_reason() == why


def test_julia_on_path_is_found_without_running_it(no_julia):
    fake = fake_executable(no_julia / "julia")
    assert _julia.find_julia() == (fake, None)
    if _julia.importlib.util.find_spec("juliacall") is None:
        assert "juliacall" in _julia.unavailable_reason()
    else:
        assert _julia.unavailable_reason() is None


def test_a_non_executable_julia_on_path_is_not_julia(no_julia):
    (no_julia / "julia").write_text("not a program")
    assert _julia.find_julia()[0] is None


def test_weanj_setting_wins_over_path(no_julia, tmp_path, monkeypatch):
    fake_executable(no_julia / "julia")
    chosen = fake_executable(tmp_path / "opt" / "julia-1.11" / "bin" / "julia")
    monkeypatch.setenv(_julia.ENV_VAR, str(chosen))
    assert _julia.find_julia() == (chosen, None)


@pytest.mark.parametrize("var", [_julia.ENV_VAR, "PYTHON_JULIAPKG_EXE"])
def test_a_broken_explicit_setting_is_reported_not_skipped(no_julia, tmp_path, monkeypatch, var):
    fake_executable(no_julia / "julia")  # would be found, but the user asked for another
    monkeypatch.setenv(var, str(tmp_path / "nowhere" / "julia"))
    julia, why = _julia.find_julia()
    assert julia is None
    assert f"{var}=" in why and "\n" not in why


def test_juliacall_exe_needs_its_project(no_julia, tmp_path, monkeypatch):
    fake = fake_executable(tmp_path / "opt" / "julia")
    monkeypatch.setenv("PYTHON_JULIACALL_EXE", str(fake))
    julia, why = _julia.find_julia()
    assert julia is None and "PYTHON_JULIACALL_PROJECT" in why
    monkeypatch.setenv("PYTHON_JULIACALL_PROJECT", str(tmp_path))
    assert _julia.find_julia() == (fake, None)


def test_juliaup_launcher_is_found(no_julia, tmp_path):
    launcher = fake_executable(tmp_path / "home" / ".juliaup" / "bin" / "julia")
    assert _julia.find_julia() == (launcher, None)


def test_juliaup_installed_version_is_found(no_julia, tmp_path, monkeypatch):
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    older = fake_executable(depot / "juliaup" / "julia-1.10.9+0.x64.linux.gnu" / "bin" / "julia")
    newer = fake_executable(depot / "juliaup" / "julia-1.11.5+0.x64.linux.gnu" / "bin" / "julia")
    assert _julia.find_julia() == (newer, None)
    newer.unlink()
    assert _julia.find_julia() == (older, None)


# --- the registry and the command line without Julia --------------------------------

JULIA_VARIANTS = {
    # (example, name): (family, Julia loss function)
    ("01-jacobi", "julia-jacobi"): ("jacobi", "jacobi_loss"),
    ("02-gauss-seidel", "julia-lex"): ("lex", "lex_loss"),
    ("02-gauss-seidel", "julia-rb"): ("rb", "rb_loss"),
}


def test_listing_variants_neither_imports_juliacall_nor_offers_julia(tmp_path):
    script = (
        "import json, sys, weanj\n"
        "out = {ex: {'available': weanj.variants(ex), 'families': weanj.families(ex),\n"
        "            'unavailable': weanj.unavailable_variants(ex)}\n"
        "       for ex in weanj.example_names()}\n"
        "out['juliacall imported'] = 'juliacall' in sys.modules\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=_clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["juliacall imported"] is False
    for (example, name), (family, _) in JULIA_VARIANTS.items():
        assert name in out[example]["families"][family]
        assert name not in out[example]["available"]
        assert "juliaup" in out[example]["unavailable"][name]


def test_using_a_julia_variant_without_julia_raises_unavailable(no_julia):
    had_juliacall = "juliacall" in sys.modules
    with pytest.raises(weanj.UnavailableError, match="juliaup"):
        weanj.variant("02-gauss-seidel", "julia-lex")
    v = find_variant("02-gauss-seidel", "julia-lex")
    with pytest.raises(weanj.UnavailableError, match="WEANJ_JULIA"):
        _ = v.grad
    assert ("juliacall" in sys.modules) == had_juliacall


def test_weanj_run_julia_without_julia_is_one_line_and_exit_2(tmp_path, project):
    env = _clean_env(tmp_path)
    env["WEANJ_ROOT"] = str(project)
    done = subprocess.run(
        [sys.executable, "-m", "weanj", "run", "02-gauss-seidel", "julia-lex"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("weanj: error:") and "Julia" in lines[0]
    assert "julia-lex" in lines[0] and "juliaup" in lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert not (project / "results" / "02-gauss-seidel" / "gradients" / "julia-lex.h5").exists()


def test_a_julia_that_does_not_start_is_one_line_and_exit_2(tmp_path, project):
    """A `julia` on PATH that is not Julia: juliacall is handed that executable (nothing is
    downloaded) and its failure becomes one line."""
    # Not importorskip: importing juliacall here, with no Julia handed to it, would make
    # juliapkg look for one to download.
    if _julia.importlib.util.find_spec("juliacall") is None:
        pytest.skip("juliacall is not installed (pip install 'weanj[julia]')")
    env = _clean_env(tmp_path)
    fake_executable(tmp_path / "bin" / "julia")
    # juliapkg's own state goes to a temporary folder, not the virtualenv.
    env.update(WEANJ_ROOT=str(project), PYTHON_JULIAPKG_PROJECT=str(tmp_path / "julia_env"))
    done = subprocess.run(
        [sys.executable, "-m", "weanj", "run", "02-gauss-seidel", "julia-rb"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("weanj: error:")]
    assert len(errors) == 1 and "could not start Julia" in errors[0], done.stderr
    assert str(tmp_path / "bin" / "julia") in errors[0]
    assert "Traceback" not in done.stderr + done.stdout


def test_registered_julia_variants_match_the_julia_table():
    """julia/WeanJ.jl's VARIANTS and the Python registrations name the same variants,
    families and loss functions, and each loss lives in julia/<the example's stem>.jl."""
    text = (JULIA_DIR / "WeanJ.jl").read_text()
    rows = re.findall(
        r'\(example = "([^"]+)", name = "([^"]+)", family = "([^"]+)", loss = (\w+)\)', text
    )
    julia_table = {(ex, name): (family, loss) for ex, name, family, loss in rows}
    assert julia_table == JULIA_VARIANTS
    for (example, name), (family, loss) in JULIA_VARIANTS.items():
        v = find_variant(example, name)
        assert (v.backend, v.family, v.build.args) == ("julia", family, (loss,))
        stem = weanj.example(example).stem
        assert f'include("{stem}.jl")' in text
        kernel = (JULIA_DIR / f"{stem}.jl").read_text()
        assert re.search(rf"^function {loss}\(", kernel, re.MULTILINE), (stem, loss)
        assert (REPO / "python" / "weanj" / "examples" / f"{stem}.py").is_file()


# --- the Julia sources ---------------------------------------------------------------

UPDATE = "(source + u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) / 4"


@pytest.mark.parametrize("stem, kernels", [("jacobi", 1), ("gauss_seidel", 2)])
def test_kernels_are_designs_loops(stem, kernels):
    """Each kernel is the column-major loop over the padded grid with DESIGN.md's update:
    h2*θ first, then the neighbours in the order i-1, i+1, j-1, j+1."""
    text = (JULIA_DIR / f"{stem}.jl").read_text()
    assert text.count("for j in 2:(n + 1), i in 2:(n + 1)") == kernels
    assert text.count("source = h2 * θ[i - 1, j - 1]") == kernels
    assert text.count(UPDATE) == kernels
    if stem == "gauss_seidel":
        assert "if iseven(i + j) == red" in text


def _fatou() -> str:
    found = shutil.which("fatou", path=str(Path(sys.executable).parent)) or shutil.which("fatou")
    if found is None:
        pytest.skip("fatou is not installed (pip install 'weanj[test]')")
    return found


def test_fatou_lints_and_formats_julia_clean():
    fatou = _fatou()
    files = sorted(p.name for p in JULIA_DIR.glob("*.jl"))
    assert files == ["WeanJ.jl", "gauss_seidel.jl", "io.jl", "jacobi.jl", "poisson.jl", "run.jl"]
    for command in (["lint"], ["format", "--check"]):
        done = subprocess.run(
            [fatou, *command, str(JULIA_DIR)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_fatou_rejects_a_julia_file_that_does_not_parse(tmp_path):
    """The lint above would catch a syntax error: the same check fails on one."""
    fatou = _fatou()
    broken = tmp_path / "broken.jl"
    broken.write_text((JULIA_DIR / "jacobi.jl").read_text().replace(UPDATE, UPDATE[:-5] + " / 4"))
    done = subprocess.run([fatou, "lint", str(broken)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "parse" in done.stdout + done.stderr


def test_julia_dependencies_agree():
    """juliapkg.json (the bridge) and Project.toml (Julia alone) name Enzyme by one UUID
    and the same compat bounds; Project.toml adds HDF5 for the files."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    juliapkg = json.loads((REPO / "python" / "weanj" / "juliapkg.json").read_text())
    project = tomllib.loads((REPO / "Project.toml").read_text())
    enzyme = juliapkg["packages"]["Enzyme"]
    assert enzyme["uuid"] == project["deps"]["Enzyme"] == "7da242da-08ed-463a-9acd-ee780be4f1d9"
    assert enzyme["version"] == project["compat"]["Enzyme"]
    assert project["deps"]["HDF5"] == "f67ccb44-e63f-5c2f-98bd-6dc0ccc4ba2f"
    assert juliapkg["julia"].lstrip("^") == project["compat"]["julia"] == "1.10"


def test_julia_sources_in_a_checkout_and_in_a_wheel(tmp_path, monkeypatch):
    assert _julia.julia_sources() == JULIA_DIR
    # A wheel's layout: site-packages/weanj/julia/*.jl, no checkout around it.
    package = tmp_path / "site-packages" / "weanj"
    (package / "julia").mkdir(parents=True)
    shutil.copy(JULIA_DIR / "WeanJ.jl", package / "julia")
    monkeypatch.setattr(_julia, "_PACKAGE", package)
    assert _julia.julia_sources() == package / "julia"
    (package / "julia" / "WeanJ.jl").unlink()
    assert _julia.julia_sources() is None


# --- the bridge's plumbing, against a stand-in for juliacall ---------------------------
# No Julia runs here, so a stand-in `juliacall` checks what the bridge hands to Julia and
# what it makes of the answers: converted arrays, the function names of julia/WeanJ.jl,
# dtypes, C order, copies, the settings made before the import. Its arithmetic is the JAX
# variant of the same family, so nothing here is, or is saved as, a Julia result.


class StandInArray:
    """What `Main.Array(numpy array)` returns: a column-major copy, same indices."""

    def __init__(self, values):
        self.values = np.asfortranarray(np.array(values, copy=True))

    def to_numpy(self, dtype=None, copy=True, order="K"):
        return np.array(self.values, dtype=dtype, copy=copy, order=order)


class StandInLoss:
    def __init__(self, example, jax_name):
        self.variant = weanj.variant(example, jax_name)

    def __call__(self, theta, uobs, K):
        assert isinstance(theta, StandInArray) and isinstance(uobs, StandInArray)
        assert isinstance(K, int)
        return float(self.variant.loss(theta.values, uobs.values, K))


class StandInWeanJ:
    jacobi_loss = StandInLoss("01-jacobi", "jax-jacobi")
    lex_loss = StandInLoss("02-gauss-seidel", "jax-lex")
    rb_loss = StandInLoss("02-gauss-seidel", "jax-rb")

    @staticmethod
    def gradient(loss, theta, uobs, K):
        assert isinstance(theta, StandInArray) and isinstance(uobs, StandInArray)
        return StandInArray(np.asarray(loss.variant.grad(theta.values, uobs.values, K)))

    @staticmethod
    def backend_version():
        return "Julia 0.0.0-stand-in, Enzyme 0.0.0-stand-in"


class StandInMain:
    def __init__(self):
        self.included = []

    def include(self, path):
        self.included.append(path)
        self.WeanJ = StandInWeanJ()

    Array = staticmethod(StandInArray)


@pytest.fixture
def stand_in_juliacall(no_julia, monkeypatch):
    """A `julia` on PATH, a stand-in `juliacall`, and a clean bridge before and after."""
    import importlib.machinery
    import types

    julia = fake_executable(no_julia / "julia")
    main = StandInMain()
    module = types.ModuleType("juliacall")
    module.__spec__ = importlib.machinery.ModuleSpec("juliacall", None)
    module.Main = main
    monkeypatch.setitem(sys.modules, "juliacall", module)
    monkeypatch.setattr(_julia, "_session", {})
    watched = (
        "PYTHON_JULIAPKG_EXE",
        "PYTHON_JULIACALL_HANDLE_SIGNALS",
        "PYTHON_JULIACALL_THREADS",
        "JULIA_NUM_THREADS",
    )
    saved = {k: os.environ.get(k) for k in watched}
    for k in watched:
        os.environ.pop(k, None)
    julia_variants = [find_variant(ex, name) for ex, name in JULIA_VARIANTS]
    for v in julia_variants:
        v._built.clear()
    yield julia, main
    for v in julia_variants:
        v._built.clear()
    for k, value in saved.items():
        os.environ.pop(k, None)
        if value is not None:
            os.environ[k] = value


@pytest.mark.parametrize(
    "example, name, jax_name, dtype",
    [
        ("01-jacobi", "julia-jacobi", "jax-jacobi", "float64"),
        ("02-gauss-seidel", "julia-lex", "jax-lex", "float64"),
        ("02-gauss-seidel", "julia-rb", "jax-rb", "float64"),
        ("02-gauss-seidel", "julia-lex", "jax-lex", "float32"),
    ],
)
def test_bridge_converts_calls_and_returns_numpy(
    stand_in_juliacall, example, name, jax_name, dtype
):
    julia, main = stand_in_juliacall
    rng = np.random.default_rng(7)
    theta = rng.standard_normal((5, 5)).astype(dtype)
    uobs = (rng.standard_normal((5, 5)) / 36).astype(dtype)
    before = theta.copy()

    v = weanj.variant(example, name)
    loss, g = v.loss(theta, uobs, 3), v.grad(theta, uobs, 3)

    assert main.included == [str(JULIA_DIR / "WeanJ.jl")]
    assert os.environ["PYTHON_JULIAPKG_EXE"] == str(julia)
    assert os.environ["PYTHON_JULIACALL_HANDLE_SIGNALS"] == "yes"
    assert os.environ["PYTHON_JULIACALL_THREADS"] == "1"
    expected = weanj.variant(example, jax_name)
    assert np.asarray(loss).dtype == np.dtype(dtype)
    assert float(loss) == float(expected.loss(theta, uobs, 3))
    assert g.dtype == np.dtype(dtype) and g.flags.c_contiguous and g.flags.owndata
    assert np.array_equal(g, np.asarray(expected.grad(theta, uobs, 3)))
    assert np.array_equal(theta, before)
    assert v.backend_version().startswith("Julia 0.0.0-stand-in, Enzyme 0.0.0-stand-in, juliacall")


def test_bridge_keeps_the_users_thread_setting(stand_in_juliacall, monkeypatch):
    monkeypatch.setenv("JULIA_NUM_THREADS", "4")
    weanj.variant("02-gauss-seidel", "julia-lex").loss(np.ones((3, 3)), np.zeros((3, 3)), 1)
    assert "PYTHON_JULIACALL_THREADS" not in os.environ


def test_bridge_refuses_integer_arrays(stand_in_juliacall):
    v = weanj.variant("02-gauss-seidel", "julia-lex")
    with pytest.raises(weanj.InputError, match="float32 or float64"):
        v.loss(np.ones((3, 3), dtype=int), np.zeros((3, 3), dtype=int), 1)


def test_the_store_reads_hdf5_jl_strings(project):
    """julia/io.jl writes its string attributes as HDF5.jl does: fixed-length,
    null-terminated UTF-8 of exactly the string's size, written without conversion (h5py
    writes variable-length strings). The store must read them whole. Emulated with h5py's
    low-level API; the gradient is random numbers, not anybody's result."""
    import h5py
    from h5py import h5a, h5s, h5t

    shared = weanj.load_inputs("02-gauss-seidel")
    gradient = np.random.default_rng(3).standard_normal(shared["theta"].shape)
    path = project / "julia-layout.h5"
    strings = {
        "variant": "julia-layout",
        "family": "lex",
        "example": "02-gauss-seidel",
        "dtype": "float64",
        "inputs_sha256": shared["sha256"],
        "backend": "julia",
        "backend_version": "HDF5.jl layout emulated by h5py",
        "created": "2026-11-30T05:40:00+00:00",
    }
    with h5py.File(path, "w") as f:
        f["gradient"] = gradient
        f.attrs["loss"] = 0.25
        f.attrs["K"] = np.int64(shared["K"])
        for name, text in strings.items():
            raw = text.encode()
            fixed = h5t.C_S1.copy()
            fixed.set_size(len(raw))
            fixed.set_cset(h5t.CSET_UTF8)
            fixed.set_strpad(h5t.STR_NULLTERM)
            attr = h5a.create(f.id, name.encode(), fixed, h5s.create(h5s.SCALAR))
            attr.write(np.array(raw, dtype=f"S{len(raw)}"), mtype=fixed)
    stored = weanj.load_gradient("02-gauss-seidel", "julia-layout", path=path)
    assert (stored.example, stored.family, stored.dtype) == ("02-gauss-seidel", "lex", "float64")
    assert (stored.inputs_sha256, stored.backend) == (shared["sha256"], "julia")
    assert stored.created == strings["created"] and stored.params == {"K": shared["K"]}
    assert stored.loss == 0.25 and np.array_equal(stored.gradient, gradient)
