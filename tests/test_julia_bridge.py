"""The Julia bridge where Julia cannot run.

- Finding Julia (`_julia_find`): fake executables that answer `--version` as a given
  Julia version would (and record every other call, so that a test sees that nothing else
  ran): which one is chosen, the supported range (1.10.3 to 1.11), the one-line reasons,
  numeric version order, juliapkg imported first.
- The registry and the command line without Julia: one line, exit 2, no juliacall import.
- The generic bridge (`_julia`) against a stand-in for juliacall: argument checks before
  anything crosses, what crosses for each kind of array and parameter (index arrays plus
  one), gradient flags and order, several `wrt` arrays, a user's file, the loss's
  activity options, Enzyme's errors in one line, the environment settings, the one-line
  failures of a start.
- The Julia sources: the tables of julia/src/WeanJ.jl against the Python registry, the
  dependency files against each other and against the juliacall installed, the
  `julia` extra, fatou's lint and format, the wheel layout, the gradient files julia/io.jl
  writes as the store reads them.

Nothing here runs Julia; the tests that do are in tests/crossval/test_julia.py.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import types
import uuid
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._backends import _julia, _julia_find
from weanj._registry import find_variant

from .helpers import graph_fields, graph_gradient, run_python

REPO = Path(__file__).resolve().parent.parent
JULIA_DIR = REPO / "julia"
SETTINGS = (
    _julia_find.ENV_VAR,
    "PYTHON_JULIACALL_EXE",
    "PYTHON_JULIACALL_PROJECT",
    "PYTHON_JULIAPKG_EXE",
    "JULIAUP_DEPOT_PATH",
)
# The Julia variants of the Poisson examples and their loss functions in WeanJ.
POISSON_VARIANTS = {
    ("01-jacobi", "julia-jacobi"): ("jacobi", "jacobi_loss"),
    ("02-gauss-seidel", "julia-lex"): ("lex", "lex_loss"),
    ("02-gauss-seidel", "julia-rb"): ("rb", "rb_loss"),
}


SLEEP = shutil.which("sleep") or "/bin/sleep"  # by its path: the tests empty PATH


def fake_julia(path: Path, version: str | None = "1.11.5", *, delay: float = 0) -> Path:
    """An executable that is not Julia: it answers `--version` as Julia `version` would
    (None: it fails), fails on anything else, and appends every call to `<path>.calls`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    answer = f'echo "julia version {version}"; exit 0' if version else "exit 1"
    path.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{path}.calls"\n'
        + (f"{SLEEP} {delay}\n" if delay else "")
        + f'if [ "$1" = "--version" ]; then {answer}; fi\n'
        "exit 1\n"
    )
    path.chmod(0o755)
    return path


def calls(path: Path) -> list[str]:
    log = Path(f"{path}.calls")
    return log.read_text().splitlines() if log.exists() else []


def juliaup_install(depot: Path, folder: str) -> Path:
    """A version juliaup installed: `<depot>/juliaup/<folder>/bin/julia`."""
    version = re.match(r"julia-([^+]+)", folder).group(1)
    return fake_julia(depot / "juliaup" / folder / "bin" / "julia", version)


@pytest.fixture
def no_julia(tmp_path, monkeypatch) -> Path:
    """No Julia anywhere: no settings, an empty PATH folder (returned), a bare HOME."""
    for var in SETTINGS:
        monkeypatch.delenv(var, raising=False)
    path_dir = tmp_path / "bin"
    path_dir.mkdir()
    monkeypatch.setenv("PATH", str(path_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _julia_find._probe_version.cache_clear()
    monkeypatch.setattr(_julia, "_session", {})
    return path_dir


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


def _one_line(text: str) -> str:
    assert "\n" not in text.strip(), text
    return text


# --- finding Julia -----------------------------------------------------------------------


def test_without_julia_the_reason_is_one_line_saying_how_to_get_it(no_julia):
    julia, why = _julia_find.find_julia()
    assert julia is None
    _one_line(why)
    assert "juliaup add 1.11" in why and "WEANJ_JULIA" in why
    assert _julia.unavailable_reason() == why


def test_julia_on_path_is_found_by_its_version_and_nothing_else_runs(no_julia):
    fake = fake_julia(no_julia / "julia", "1.10.9")
    assert _julia_find.find_julia() == (fake, None)
    assert _julia_find.locate_julia().version == "1.10.9"
    _julia_find.find_julia(), _julia.unavailable_reason()
    assert calls(fake) == ["--version"]  # once per executable and process, nothing else


def test_a_non_executable_julia_on_path_is_not_julia(no_julia):
    (no_julia / "julia").write_text("not a program")
    assert _julia_find.find_julia()[0] is None


def test_a_program_that_does_not_answer_as_julia_is_passed_over_in_one_line(no_julia):
    fake = fake_julia(no_julia / "julia", None)
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert str(fake) in _one_line(why) and "not a working Julia" in why


def test_a_julia_that_hangs_is_given_up_on(no_julia, monkeypatch):
    monkeypatch.setattr(_julia_find, "VERSION_TIMEOUT_S", 0.5)
    fake_julia(no_julia / "julia", "1.11.5", delay=5)
    julia, why = _julia_find.find_julia()
    assert julia is None and "did not answer" in _one_line(why)


def test_weanj_setting_wins_over_path(no_julia, tmp_path, monkeypatch):
    fake_julia(no_julia / "julia")
    chosen = fake_julia(tmp_path / "opt" / "julia-1.10" / "bin" / "julia", "1.10.4")
    monkeypatch.setenv(_julia_find.ENV_VAR, str(chosen))
    assert _julia_find.find_julia() == (chosen, None)


@pytest.mark.parametrize("var", [_julia_find.ENV_VAR, "PYTHON_JULIAPKG_EXE"])
def test_a_broken_explicit_setting_is_reported_not_skipped(no_julia, tmp_path, monkeypatch, var):
    fake_julia(no_julia / "julia")  # would be found, but the user asked for another
    monkeypatch.setenv(var, str(tmp_path / "nowhere" / "julia"))
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert f"{var}=" in _one_line(why)


@pytest.mark.parametrize("var", [_julia_find.ENV_VAR, "PYTHON_JULIAPKG_EXE"])
def test_an_explicit_julia_112_is_refused_naming_the_fix(no_julia, tmp_path, monkeypatch, var):
    fake_julia(no_julia / "julia", "1.11.5")  # explicit settings are not second-guessed
    chosen = fake_julia(tmp_path / "opt" / "bin" / "julia", "1.12.1")
    monkeypatch.setenv(var, str(chosen))
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert f"{var}={chosen} is Julia 1.12.1 (not a supported version)" in _one_line(why)
    assert "juliaup add 1.11" in why


def test_juliacall_exe_needs_its_project(no_julia, tmp_path, monkeypatch):
    fake = fake_julia(tmp_path / "opt" / "julia")
    monkeypatch.setenv("PYTHON_JULIACALL_EXE", str(fake))
    julia, why = _julia_find.find_julia()
    assert julia is None and "PYTHON_JULIACALL_PROJECT" in why
    monkeypatch.setenv("PYTHON_JULIACALL_PROJECT", str(tmp_path))
    assert _julia_find.find_julia() == (fake, None)


def test_juliaup_launcher_is_found(no_julia, tmp_path):
    launcher = fake_julia(tmp_path / "home" / ".juliaup" / "bin" / "julia", "1.11.5")
    assert _julia_find.find_julia() == (launcher, None)


def test_a_112_launcher_with_a_111_channel_installed_picks_111(no_julia, tmp_path, monkeypatch):
    """juliaup's default channel is 1.12 (late 2025 on); the 1.11 it also installed is
    chosen, by its own executable, so that juliapkg gets a supported Julia."""
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    launcher = fake_julia(tmp_path / "home" / ".juliaup" / "bin" / "julia", "1.12.1")
    fake_julia(no_julia / "julia", "1.12.1")  # the launcher, as juliaup puts it on PATH
    juliaup_install(depot, "julia-1.12.1+0.x64.linux.gnu")
    chosen = juliaup_install(depot, "julia-1.11.5+0.x64.linux.gnu")
    found = _julia_find.locate_julia()
    assert (found.path, found.version, found.why) == (chosen, "1.11.5", None)
    assert calls(launcher) == ["--version"]


def test_only_julia_112_is_one_line_naming_juliaup_add_111(no_julia, tmp_path, monkeypatch):
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    launcher = fake_julia(tmp_path / "home" / ".juliaup" / "bin" / "julia", "1.12.1")
    juliaup_install(depot, "julia-1.12.1+0.x64.linux.gnu")
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert f"Julia 1.12.1 at {launcher}" in _one_line(why)
    assert "juliaup add 1.11" in why and _julia_find.SUPPORTED_TEXT in why


def test_juliaup_versions_sort_by_number_not_by_name(no_julia, tmp_path, monkeypatch):
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    installed = {
        folder: juliaup_install(depot, folder)
        for folder in (
            "julia-1.9.4+0.x64.linux.gnu",
            "julia-1.10.9+0.x64.linux.gnu",
            "julia-1.10.10+0.x64.linux.gnu",
            "julia-1.11.0-rc1+0.x64.linux.gnu",
        )
    }
    # As text, 1.9.4 would sort last and 1.10.9 after 1.10.10; a release candidate is used
    # only where no release is.
    assert _julia_find.find_julia()[0] == installed["julia-1.10.10+0.x64.linux.gnu"]
    release = juliaup_install(depot, "julia-1.11.0+0.x64.linux.gnu")
    assert _julia_find.find_julia()[0] == release
    for folder in ("julia-1.10.10+0.x64.linux.gnu", "julia-1.10.9+0.x64.linux.gnu"):
        shutil.rmtree(depot / "juliaup" / folder)
    shutil.rmtree(release.parent.parent)
    assert _julia_find.find_julia()[0] == installed["julia-1.11.0-rc1+0.x64.linux.gnu"]
    keys = [
        _julia_find.version_key(v) for v in ("1.9.4", "1.10.9", "1.10.10", "1.11.0-rc1", "1.11.0")
    ]
    assert keys == sorted(keys)


def test_a_supported_julia_on_path_is_used_before_juliaup(no_julia, tmp_path, monkeypatch):
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    juliaup_install(depot, "julia-1.11.5+0.x64.linux.gnu")
    on_path = fake_julia(no_julia / "julia", "1.10.9")
    assert _julia_find.find_julia() == (on_path, None)


@pytest.mark.parametrize(
    "version, ok",
    [
        ("1.9.4", False),
        ("1.10.0", False),
        ("1.10.2", False),
        ("1.10.3", True),
        ("1.10.10", True),
        ("1.11.0-rc1", True),
        ("1.11.7", True),
        ("1.12.0-rc1", False),
        ("1.12.1", False),
        ("2.0.0", False),
    ],
)
def test_the_supported_range_is_1_10_3_to_1_11(version, ok):
    """Compared on (major, minor, patch) as Pkg compares versions: PythonCall needs
    1.10.3; a 1.12 pre-release is a 1.12, a 1.11 one a 1.11."""
    key = _julia_find.version_key(version)
    assert _julia_find.supported(key) is ok


def test_julia_1_10_2_on_path_is_passed_over_saying_why(no_julia, tmp_path, monkeypatch):
    """PythonCall (juliacall's Julia side) needs 1.10.3: an older 1.10 is not used, and
    the reason says so; an installed 1.10.3 is chosen instead."""
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    old = fake_julia(no_julia / "julia", "1.10.2")
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert f"Julia 1.10.2 at {old} (older than 1.10.3" in _one_line(why)
    assert "juliaup add 1.11" in why
    juliaup_install(depot, "julia-1.10.2+0.x64.linux.gnu")
    assert _julia_find.find_julia()[0] is None  # juliaup's 1.10.2 is not chosen either
    newer = juliaup_install(depot, "julia-1.10.3+0.x64.linux.gnu")
    assert _julia_find.find_julia() == (newer, None)


def test_an_explicit_julia_1_10_0_is_refused_naming_the_minimum(no_julia, tmp_path, monkeypatch):
    chosen = fake_julia(tmp_path / "opt" / "bin" / "julia", "1.10.0")
    monkeypatch.setenv(_julia_find.ENV_VAR, str(chosen))
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert f"WEANJ_JULIA={chosen} is Julia 1.10.0 (older than 1.10.3" in _one_line(why)
    assert "juliaup add 1.11" in why


# --- juliapkg imported before the bridge ---------------------------------------------------


def test_juliapkg_imported_first_gets_its_override_set(tmp_path):
    """juliapkg reads PYTHON_JULIAPKG_EXE once, on import: the bridge sets its recorded
    override too, and forces a new resolve (real juliapkg, nothing resolved or run)."""
    pytest.importorskip("juliapkg", reason="juliapkg comes with juliacall (weanj[julia])")
    fake = fake_julia(tmp_path / "bin" / "julia")
    script = (
        "import json, sys\n"
        "import juliapkg\n"
        "from pathlib import Path\n"
        "from weanj._backends import _julia_find\n"
        "juliapkg.state.STATE['resolved'] = True\n"
        f"_julia_find.point_juliapkg_at(Path({str(fake)!r}))\n"
        "state = juliapkg.state.STATE\n"
        "print(json.dumps([state['override_executable'], state['resolved'],\n"
        "                  'juliacall' in sys.modules]))\n"
    )
    done = _python_without_julia(
        tmp_path, "-c", script, PYTHON_JULIAPKG_PROJECT=str(tmp_path / "julia_env")
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [str(fake), False, False]
    assert calls(fake) == []


def test_a_juliapkg_whose_choice_cannot_be_set_is_refused_in_one_line(
    stand_in_juliacall, monkeypatch
):
    old = types.ModuleType("juliapkg")
    state = types.ModuleType("juliapkg.state")
    state.STATE = {"executable": "/somewhere/else/julia"}  # no override_executable
    old.state = state
    monkeypatch.setitem(sys.modules, "juliapkg", old)
    monkeypatch.setitem(sys.modules, "juliapkg.state", state)
    with pytest.raises(weanj.UnavailableError, match="juliapkg was imported") as caught:
        weanj.variant("02-gauss-seidel", "julia-lex").loss(np.ones((2, 2)), np.ones((2, 2)), 1)
    _one_line(str(caught.value))
    assert stand_in_juliacall[1].included == []  # juliacall was never asked to start


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


def test_weanj_run_with_only_julia_112_is_one_line_naming_the_fix(tmp_path, project):
    fake = fake_julia(tmp_path / "home" / ".juliaup" / "bin" / "julia", "1.12.1")
    done = _python_without_julia(
        tmp_path, "-m", "weanj", "run", "01-jacobi", "julia-jacobi", root=project
    )
    assert done.returncode == 2
    first, message = _error_line(done.stderr)
    # the first line names the problem; a long path may push the version to the next
    assert "no usable Julia" in first and "1.12.1" in message and "juliaup add 1.11" in message
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
    assert "Traceback" not in done.stderr + done.stdout
    # juliapkg ran the fake (and no other Julia), and installed none of its own.
    assert calls(fake)[0] == "--version" and len(calls(fake)) > 1
    assert not (julia_env / "pyjuliapkg" / "install").exists()


# --- the bridge's plumbing, against a stand-in for juliacall ---------------------------------
# No Julia runs here, so a stand-in `juliacall` checks what the bridge hands to Julia and
# what it makes of the answers: converted arrays, the functions of julia/src/WeanJ.jl,
# gradient flags, dtypes, C order, copies, the settings made before the import. Its
# arithmetic is a JAX variant's or numpy's, so nothing here is, or is saved as, a Julia
# result.


class StandInArray:
    """What `Main.Array(numpy array)` returns: a column-major copy of the same element
    type (PythonCall's PyArray keeps numpy's dtype: bool as Bool, int32 as Int32,
    complex128 as ComplexF64), same indices."""

    def __init__(self, values):
        self.values = np.asfortranarray(np.array(values, copy=True))
        self.dtype = self.values.dtype

    def to_numpy(self, dtype=None, copy=True, order="K"):
        return np.array(self.values, dtype=dtype, copy=copy, order=order)


class StandInLoss:
    """A Julia loss function: `loss(*args)` and, for `enzyme_gradient`, the gradient with
    respect to every array argument (`gradients(*args)`, in argument order)."""

    def __init__(self, loss, gradients):
        self.loss, self.gradients = loss, gradients

    def __call__(self, *args):
        arrays = [a for a in args if isinstance(a, StandInArray)]
        params = args[len(arrays) :]
        # What juliacall hands to Julia as Int, Float64 or Bool: Python's own scalars.
        assert all(type(p) in (int, float, bool) for p in params), args
        return float(self.loss(*(a.values for a in arrays), *params))


def jax_loss(example, name) -> StandInLoss:
    def loss(*args):
        return weanj.variant(example, name).loss(*args)

    def gradients(*args):
        return [np.asarray(weanj.variant(example, name).grad(*args))]

    return StandInLoss(loss, gradients)


class StandInModule:
    def __init__(self, kernels):
        self.kernels = kernels


class StandInWeanJ:
    """julia/src/WeanJ.jl as the bridge uses it."""

    def __init__(self, user_files):
        self.module = StandInModule(
            {
                "jacobi_loss": jax_loss("01-jacobi", "jax-jacobi"),
                "lex_loss": jax_loss("02-gauss-seidel", "jax-lex"),
                "rb_loss": jax_loss("02-gauss-seidel", "jax-rb"),
            }
        )
        self.user_files = user_files
        self.included_files = []
        self.gradient_calls = []
        self.gradient_options = []
        self.failure = None  # an Exception for enzyme_gradient to raise

    def kernel_function(self, module, name):
        module = self.module if module is self else module
        if name not in module.kernels:
            raise Exception(f"ArgumentError: {name} is not defined in module M\nStacktrace:")
        return module.kernels[name]

    def include_kernels(self, path):
        self.included_files.append(path)
        return StandInModule(self.user_files[Path(path).name])

    def enzyme_gradient(self, loss, flags, *args, activity, runtime_activity):
        assert isinstance(flags, tuple) and all(isinstance(f, bool) for f in flags)
        assert len(flags) == len(args)
        # WeanJ.enzyme_gradient refuses a flag on anything but a float or complex array.
        assert all(a.dtype.kind in "fc" for a, f in zip(args, flags, strict=True) if f)
        self.gradient_calls.append(flags)
        self.gradient_options.append((activity, runtime_activity))
        if self.failure is not None:
            raise self.failure
        arrays = [a for a in args if isinstance(a, StandInArray)]
        params = args[len(arrays) :]
        every = loss.gradients(*(a.values for a in arrays), *params)
        return tuple(StandInArray(g) for g, flag in zip(every, flags, strict=False) if flag)

    @staticmethod
    def backend_version():
        return "Julia 0.0.0-stand-in, Enzyme 0.0.0-stand-in"


class StandInMain:
    def __init__(self, user_files):
        self.included = []
        self.evaluated = []
        self.converted = 0
        self.crossed = []  # every numpy array handed to `Main.Array`
        self.version = "1.11.5"
        self.fail_on = {}
        self.user_files = user_files

    def include(self, path):
        self.included.append(path)
        self.WeanJ = StandInWeanJ(self.user_files)

    def seval(self, code):
        self.evaluated.append(code)
        if code in self.fail_on:
            raise Exception(self.fail_on[code])
        if code == "string(VERSION)":
            return self.version
        return None

    def Array(self, values):  # noqa: N802 (Julia's name)
        assert isinstance(values, np.ndarray) and values.flags.c_contiguous
        assert values.dtype.isnative  # PythonCall does not byte-swap
        self.converted += 1
        self.crossed.append(values.copy())
        return StandInArray(values)


WATCHED = (
    "PYTHON_JULIAPKG_EXE",
    "PYTHON_JULIACALL_HANDLE_SIGNALS",
    "PYTHON_JULIACALL_THREADS",
    "JULIA_NUM_THREADS",
)


class StandInFinder:
    """Makes `import juliacall` give the stand-in, as the real import would: the module
    is created (and Julia "started", i.e. `failure` raised if set) on the first import,
    after the bridge's settings."""

    def __init__(self, main):
        self.main, self.failure, self.imports = main, None, 0

    def find_spec(self, name, path=None, target=None):
        if name != "juliacall":
            return None
        return importlib.machinery.ModuleSpec("juliacall", self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        self.imports += 1
        if self.failure is not None:
            raise self.failure
        module.Main = self.main


@pytest.fixture
def stand_in_juliacall(no_julia, monkeypatch):
    """A `julia` 1.11.5 on PATH, a stand-in `juliacall` to import, and a clean bridge
    before and after. Returns `(julia, Main)`; `Main.user_files` maps a file name to its
    kernels, `Main.finder` can make the import fail."""
    julia = fake_julia(no_julia / "julia", "1.11.5")
    main = StandInMain(user_files={})
    main.finder = StandInFinder(main)
    monkeypatch.delitem(sys.modules, "juliacall", raising=False)
    monkeypatch.delitem(sys.modules, "juliapkg", raising=False)
    monkeypatch.setattr(sys, "meta_path", [main.finder, *sys.meta_path])
    for k in WATCHED:
        monkeypatch.delenv(k, raising=False)
    julia_variants = [find_variant(ex, name) for ex, name in POISSON_VARIANTS]
    for v in julia_variants:
        v._built.clear()
    yield julia, main
    for v in julia_variants:
        v._built.clear()
    sys.modules.pop("juliacall", None)  # the stand-in, imported during the test
    for k in WATCHED:  # the bridge sets them in os.environ directly
        os.environ.pop(k, None)


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

    assert main.included == [str(JULIA_DIR / "src" / "WeanJ.jl")]
    assert main.evaluated[:2] == ["string(VERSION)", "import Enzyme"]
    assert os.environ["PYTHON_JULIAPKG_EXE"] == str(julia)
    assert os.environ["PYTHON_JULIACALL_THREADS"] == "1"
    # One thread: juliacall's default signal handling (Ctrl-C stays Python's).
    assert "PYTHON_JULIACALL_HANDLE_SIGNALS" not in os.environ
    assert main.WeanJ.gradient_calls == [(True, False, False)]
    expected = weanj.variant(example, jax_name)
    assert np.asarray(loss).dtype == np.dtype(dtype)
    assert float(loss) == float(expected.loss(theta, uobs, 3))
    assert g.dtype == np.dtype(dtype) and g.flags.c_contiguous and g.flags.owndata
    assert np.array_equal(g, np.asarray(expected.grad(theta, uobs, 3)))
    assert np.array_equal(theta, before)
    assert v.backend_version().startswith("Julia 0.0.0-stand-in, Enzyme 0.0.0-stand-in, juliacall")


def test_more_julia_threads_turn_on_julias_signal_handling(stand_in_juliacall, monkeypatch):
    monkeypatch.setenv("JULIA_NUM_THREADS", "4")
    weanj.variant("02-gauss-seidel", "julia-lex").loss(np.ones((3, 3)), np.zeros((3, 3)), 1)
    assert "PYTHON_JULIACALL_THREADS" not in os.environ  # the user's setting rules
    assert os.environ["PYTHON_JULIACALL_HANDLE_SIGNALS"] == "yes"


def test_the_users_signal_setting_wins(stand_in_juliacall, monkeypatch):
    monkeypatch.setenv("PYTHON_JULIACALL_THREADS", "2")
    monkeypatch.setenv("PYTHON_JULIACALL_HANDLE_SIGNALS", "no")
    weanj.variant("02-gauss-seidel", "julia-lex").loss(np.ones((3, 3)), np.zeros((3, 3)), 1)
    assert os.environ["PYTHON_JULIACALL_HANDLE_SIGNALS"] == "no"


@pytest.mark.parametrize(
    "arrays, K, message",
    [
        ((np.ones((3, 4)), np.ones((3, 4))), 1, "theta"),
        ((np.ones((3, 3)), np.ones((3, 2))), 1, "uobs"),
        ((np.ones((3, 3), dtype=int), np.zeros((3, 3), dtype=int)), 1, "float32|float64"),
        ((np.ones((3, 3), np.float32), np.zeros((3, 3))), 1, "float32 and float64"),
        ((np.ones((3, 3)), np.ones((3, 3))), 0, "K must be"),
        ((np.ones((3, 3)), np.ones((3, 3))), 2.5, "integer"),
        ((np.ones((3, 3)),), 1, "arguments"),
    ],
)
def test_bad_arguments_are_refused_before_anything_crosses(stand_in_juliacall, arrays, K, message):
    """Refused in one line (by the registry's generic checks or the bridge's own, which
    add the example's `validate`), and nothing reaches Julia."""
    _, main = stand_in_juliacall
    v = weanj.variant("02-gauss-seidel", "julia-lex")
    for call in (v.loss, v.grad):
        with pytest.raises(weanj.InputError, match=message) as caught:
            call(*arrays, K)
        _one_line(str(caught.value))
    assert main.converted == 0 and main.WeanJ.gradient_calls == []


@pytest.mark.parametrize(
    "arrays, K, message",
    [
        ((np.ones((3, 4)), np.ones((3, 4))), 1, "theta"),  # the example's validate
        ((np.ones((3, 3), dtype=int), np.zeros((3, 3))), 1, "expected float64 or float32"),
        ((np.ones((3, 3), np.float32), np.zeros((3, 3))), 1, "mix float32 and float64"),
        ((np.ones((3, 3)), np.ones((3, 3))), 0, "K must be at least 1"),
        ((np.ones((3, 3)), np.ones((3, 3))), 2.5, "integer"),
        ((np.ones((3, 3)),), 1, "arguments"),
    ],
)
def test_the_bridge_checks_arguments_itself(stand_in_juliacall, arrays, K, message):
    """The bridge's functions, called without the registry's checks in front of them,
    refuse the same arguments before anything crosses."""
    _, main = stand_in_juliacall
    kernel = _julia.julia_kernels()[("02-gauss-seidel", "julia-lex")]
    built = _julia._build(weanj.example("02-gauss-seidel"), kernel)
    assert built.jvp is None  # a Julia loss cannot be pushed forward by JAX
    for call in (built.loss, built.grad):
        with pytest.raises(weanj.InputError, match=message) as caught:
            call(*arrays, K)
        _one_line(str(caught.value))
    assert main.converted == 0 and main.WeanJ.gradient_calls == []


def test_a_start_that_fails_is_remembered_and_says_why(stand_in_juliacall):
    julia, main = stand_in_juliacall
    main.finder.failure = OSError(
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found "
        "(required by /opt/julia/lib/julia/libjulia-internal.so.1)\nmore lines"
    )
    v = weanj.variant("02-gauss-seidel", "julia-rb")
    with pytest.raises(weanj.UnavailableError) as caught:
        v.loss(np.ones((3, 3)), np.zeros((3, 3)), 1)
    message = _one_line(str(caught.value))
    assert f"could not start Julia 1.11.5 ({julia})" in message
    assert "GLIBCXX_3.4.30" in message and "LD_PRELOAD=" in message
    # Not tried again in this process: the variants are unavailable, saying why.
    assert _julia.unavailable_reason() == message
    assert weanj.unavailable_variants("02-gauss-seidel")["julia-lex"] == message
    with pytest.raises(weanj.UnavailableError):
        v.grad(np.ones((3, 3)), np.zeros((3, 3)), 1)
    assert main.finder.imports == 1


def test_enzyme_missing_from_the_users_juliacall_project_says_so(
    stand_in_juliacall, tmp_path, monkeypatch
):
    julia, main = stand_in_juliacall
    monkeypatch.setenv("PYTHON_JULIACALL_EXE", str(julia))
    monkeypatch.setenv("PYTHON_JULIACALL_PROJECT", str(tmp_path / "myenv"))
    main.fail_on["import Enzyme"] = (
        "ArgumentError: Package Enzyme not found in current path.\n- Run `import Pkg`..."
    )
    with pytest.raises(weanj.UnavailableError) as caught:
        weanj.variant("01-jacobi", "julia-jacobi").grad(np.ones((2, 2)), np.ones((2, 2)), 1)
    message = _one_line(str(caught.value))
    assert (
        "Julia 1.11.5 started but could not load Enzyme: ArgumentError: Package Enzyme" in message
    )
    assert f"PYTHON_JULIACALL_PROJECT={tmp_path / 'myenv'}" in message and "Pkg.add" in message
    assert "PYTHON_JULIAPKG_EXE" not in os.environ  # juliapkg is not involved then


def test_a_julia_started_elsewhere_in_an_unsupported_version_is_refused(
    stand_in_juliacall, monkeypatch
):
    """juliacall imported before weanj (Julia already running): its version is checked,
    and nothing is set for an import that already happened."""
    _, main = stand_in_juliacall
    main.version = "1.12.1"
    module = types.ModuleType("juliacall")
    module.Main = main
    monkeypatch.setitem(sys.modules, "juliacall", module)
    with pytest.raises(weanj.UnavailableError, match=r"Julia 1\.12\.1.*juliaup add 1\.11"):
        weanj.variant("01-jacobi", "julia-jacobi").loss(np.ones((2, 2)), np.ones((2, 2)), 1)
    assert "PYTHON_JULIAPKG_EXE" not in os.environ


# --- the generic bridge: any arrays, several wrt, a user's file --------------------------------


def deposit_loss(pos, q, rhoobs):
    """A toy loss of three arrays of different shapes: (P, 2), (P,), (n, n)."""
    return float(np.sum(pos[:, 0] * q) + 2 * np.sum(pos[:, 1] ** 2) - np.sum(rhoobs))


def deposit_gradients(pos, q, rhoobs):
    g_pos = np.stack([q, 4 * pos[:, 1]], axis=1)
    return [g_pos, pos[:, 0].copy(), -np.ones_like(rhoobs)]


@pytest.fixture
def new_example(monkeypatch):
    """`make(name, arrays=..., wrt=..., params=..., validate=...)`: a user's example,
    registered for the test only (with its variants, which the bridge forgets too)."""
    weanj.example_names()  # the project's examples are loaded first
    monkeypatch.setattr(_julia, "_KERNELS", dict(_julia._KERNELS))
    made = []

    def make(name, *, arrays, wrt, params=(), validate=None):
        ex = weanj.Example(
            name=name,
            arrays=arrays,
            wrt=wrt,
            params=tuple(
                weanj.Param(p, default=1, maximum=100) if isinstance(p, str) else p for p in params
            ),
            generate=lambda seed: {},
            validate=validate,
        )
        made.append(name)
        return weanj.register_example(ex)

    yield make
    for name in made:
        _registry.unregister_example(name)


def test_several_wrt_arrays_of_any_shape_come_back_as_a_dict_in_wrt_order(
    stand_in_juliacall, new_example, tmp_path, monkeypatch
):
    _, main = stand_in_juliacall
    (tmp_path / "julia").mkdir()
    (tmp_path / "julia" / "deposit.jl").write_text("# the stand-in reads no Julia\n")
    main.user_files["deposit.jl"] = {"deposit_loss": StandInLoss(deposit_loss, deposit_gradients)}
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    ex = new_example("90-deposit", arrays=("pos", "q", "rhoobs"), wrt=("q", "pos"))
    v = weanj.julia_variant(
        ex, "julia-deposit", family="cic", loss="deposit_loss", file="julia/deposit.jl"
    )
    assert find_variant("90-deposit", "julia-deposit") is v and v.backend == "julia"
    rng = np.random.default_rng(0)
    pos, q, rho = rng.random((4, 2)), rng.random(4), rng.random((3, 3))
    for dtype in (np.float64, np.float32):
        args = [a.astype(dtype) for a in (pos, q, rho)]
        assert v.loss(*args) == dtype(deposit_loss(*args))
        g = v.grad(*args)
        assert list(g) == ["q", "pos"]  # wrt order, not argument order
        expected = dict(zip(("pos", "q"), deposit_gradients(*args)[:2], strict=True))
        for name in ("q", "pos"):
            assert g[name].dtype == dtype and g[name].flags.c_contiguous
            assert np.array_equal(g[name], expected[name].astype(dtype))
    assert main.WeanJ.gradient_calls[-1] == (True, True, False)
    assert main.WeanJ.included_files == [str((tmp_path / "julia" / "deposit.jl").resolve())]


def test_params_come_after_the_arrays_and_one_wrt_is_an_array(
    stand_in_juliacall, new_example, tmp_path
):
    _, main = stand_in_juliacall
    seen = []

    def smooth_loss(x, y, S):
        seen.append(S)
        return float(np.sum((S * x - y) ** 2))

    def smooth_gradients(x, y, S):
        r = S * x - y
        return [2 * S * r, -2 * r]

    path = tmp_path / "smooth.jl"
    path.write_text("# stand-in\n")
    main.user_files["smooth.jl"] = {"smooth_loss": StandInLoss(smooth_loss, smooth_gradients)}
    ex = new_example("90-smooth", arrays=("x", "y"), wrt="x", params=("S",))
    v = weanj.julia_variant(ex, "julia-smooth", family="smooth", loss="smooth_loss", file=path)
    x, y = np.linspace(-1, 1, 5), np.linspace(0, 1, 5)
    g = v.grad(x, y, 3)
    assert isinstance(g, np.ndarray) and np.allclose(g, 2 * 3 * (3 * x - y))
    assert seen == [] and main.WeanJ.gradient_calls == [(True, False, False)]
    assert v.loss(x, y, 3) == pytest.approx(np.sum((3 * x - y) ** 2)) and seen == [3]
    with pytest.raises(weanj.InputError, match="S must be"):
        v.loss(x, y, 0)


def test_validate_sees_the_arrays_before_julia_does(stand_in_juliacall, new_example, tmp_path):
    _, main = stand_in_juliacall
    path = tmp_path / "smooth.jl"
    path.write_text("# stand-in\n")

    def validate(arrays):
        if arrays["x"].shape != arrays["y"].shape:
            raise weanj.InputError(f"x has shape {arrays['x'].shape}, y {arrays['y'].shape}")

    ex = new_example("90-f", arrays=("x", "y"), wrt="x", validate=validate)
    main.user_files["smooth.jl"] = {"f": StandInLoss(np.sum, None)}
    v = weanj.julia_variant(ex, "julia-f", family="f", loss="f", file=path)
    with pytest.raises(weanj.InputError, match="x has shape"):
        v.loss(np.ones(3), np.ones(4))
    assert main.converted == 0


def test_a_missing_julia_file_is_refused_when_registering(no_julia, new_example, tmp_path):
    ex = new_example("90-f", arrays=("x",), wrt="x")
    with pytest.raises(weanj.InputError) as caught:
        weanj.julia_variant(ex, "julia-f", family="f", loss="f", file=tmp_path / "nowhere.jl")
    assert str(tmp_path / "nowhere.jl") in _one_line(str(caught.value))
    assert find_variant("90-f", "julia-f") is None


def test_a_relative_julia_file_is_found_under_the_project_root(
    no_julia, new_example, tmp_path, monkeypatch
):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "f.jl").write_text("f(x) = sum(x)\n")
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    ex = new_example("90-f", arrays=("x",), wrt="x")
    weanj.julia_variant(ex, "julia-f", family="f", loss="f", file="kernels/f.jl")
    kernel = _julia.julia_kernels()[("90-f", "julia-f")]
    assert kernel.file == (tmp_path / "kernels" / "f.jl").resolve()
    assert (kernel.arrays, kernel.wrt, kernel.params, kernel.loss) == (("x",), ("x",), (), "f")


def test_a_loss_missing_from_the_file_is_one_line_naming_both(
    stand_in_juliacall, new_example, tmp_path
):
    _, main = stand_in_juliacall
    path = tmp_path / "smooth.jl"
    path.write_text("# stand-in\n")
    main.user_files["smooth.jl"] = {}
    ex = new_example("90-f", arrays=("x",), wrt="x")
    v = weanj.julia_variant(ex, "julia-f", family="f", loss="smoth_loss", file=path)
    with pytest.raises(weanj.InputError) as caught:
        v.loss(np.ones(3))
    message = _one_line(str(caught.value))
    assert "smoth_loss" in message and str(path) in message


def test_two_variants_of_one_file_include_it_once(stand_in_juliacall, new_example, tmp_path):
    _, main = stand_in_juliacall
    path = tmp_path / "smooth.jl"
    path.write_text("# stand-in\n")
    kernel = StandInLoss(lambda x: float(np.sum(x)), lambda x: [np.ones_like(x)])
    main.user_files["smooth.jl"] = {"f": kernel, "g": kernel}
    ex = new_example("90-f", arrays=("x",), wrt="x")
    for name in ("f", "g"):
        weanj.julia_variant(ex, f"julia-{name}", family="f", loss=name, file=path).loss(np.ones(2))
    assert len(main.WeanJ.included_files) == 1


# --- what crosses, for each kind; the loss's activity; Enzyme's errors ----------------------


def _graph_example(new_example, tmp_path, main, validate=None):
    """A user's example with arrays of every kind: x (float), z (complex), edges (int32
    indices into z, index=True), mask (bool), w (float, not differentiated), and a float,
    an int and a bool parameter; wrt z and x. Its stand-in kernel indexes 1-based, as
    Julia does, and returns Enzyme's convention for z (∂L/∂Re z + i·∂L/∂Im z), so that an
    index not shifted by one or a conjugated gradient shows."""

    def loss(x, z, edges, mask, w, scale, steps, flag):
        main.seen.append({"edges": edges.copy(), "types": (type(scale), type(steps), type(flag))})
        a, b = z[edges[:, 0] - 1], z[edges[:, 1] - 1]  # 1-based, as the Julia loop reads
        return scale * np.sum(mask * np.abs(a - b) ** 2) + steps * np.sum(x**2) + flag * np.sum(w)

    def gradients(x, z, edges, mask, w, scale, steps, flag):
        a, b = edges[:, 0] - 1, edges[:, 1] - 1
        d = 2 * scale * mask * (z[a] - z[b])
        gz = np.zeros_like(z)
        np.add.at(gz, a, d)
        np.add.at(gz, b, -d)
        return [2 * steps * x, gz, None, None, None]

    path = tmp_path / "graph.jl"
    path.write_text("# the stand-in reads no Julia\n")
    main.user_files["graph.jl"] = {"graph_loss": StandInLoss(loss, gradients)}
    main.seen = []
    ex = new_example("90-graph", **graph_fields(), validate=validate)
    return weanj.julia_variant(ex, "julia-graph", family="graph", loss="graph_loss", file=path)


def _graph_inputs(dtype):
    rng = np.random.default_rng(11)
    n = 4
    x = rng.standard_normal(n).astype(dtype)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(
        np.complex128 if dtype == np.float64 else np.complex64
    )
    edges = np.array([[0, 1], [1, 3], [3, 0], [2, 3]], dtype=np.int32)  # 0-based; 3 is the last
    mask = np.array([True, False, True, True])
    w = rng.standard_normal(n).astype(dtype)
    return x, z, edges, mask, w


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_kind_crosses_as_its_julia_type(stand_in_juliacall, new_example, tmp_path, dtype):
    """Each array reaches Julia with its own element type (float64/float32, complex128/
    complex64, int32 kept int32, bool), the index array plus one, the parameters as
    Python float, int and bool (Julia's Float64, Int, Bool); only the float and complex
    `wrt` arrays are flagged; the complex gradient comes back as Enzyme gives it."""
    _, main = stand_in_juliacall
    validated = []

    def validate(arrays):  # sees the 0-based values, as stored
        validated.append(arrays["edges"].copy())
        if arrays["edges"].max() >= arrays["z"].shape[0]:
            raise weanj.InputError("edges point past the last node")

    v = _graph_example(new_example, tmp_path, main, validate)
    x, z, edges, mask, w = _graph_inputs(dtype)
    g = v.grad(x, z, edges, mask, w, 0.5, 3, True)
    crossed = {a.dtype.name for a in main.crossed}
    complex_name = "complex128" if dtype == np.float64 else "complex64"
    assert crossed == {np.dtype(dtype).name, complex_name, "int32", "bool"}
    by_dtype = [a for a in main.crossed if a.dtype == np.int32]
    assert len(by_dtype) == 1 and np.array_equal(by_dtype[0], edges + 1)
    assert np.array_equal(validated[-1], edges) and edges.min() == 0  # the caller's, unshifted
    assert main.WeanJ.gradient_calls == [(True, True, False, False, False, False, False, False)]
    assert main.WeanJ.gradient_options == [("bare", False)]
    expected = graph_gradient(x, z, edges, mask, 0.5, 3)
    assert list(g) == ["z", "x"]
    assert g["z"].dtype == np.dtype(complex_name) and g["x"].dtype == np.dtype(dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(g["z"], expected["z"], rtol=tol, atol=tol)
    assert not np.allclose(g["z"], np.conj(expected["z"]), rtol=tol, atol=tol)
    np.testing.assert_allclose(g["x"], expected["x"], rtol=tol)
    assert v.jvp is None
    loss = v.loss(x, z, edges, mask, w, 0.5, 3, False)
    assert main.seen[-1]["types"] == (float, int, bool)
    a, b = z[edges[:, 0]], z[edges[:, 1]]
    reference = 0.5 * np.sum(mask * np.abs(a - b) ** 2) + 3 * np.sum(x**2)
    assert np.asarray(loss).dtype == np.dtype(dtype)
    assert float(loss) == pytest.approx(float(reference), rel=tol)


def test_index_and_kind_mistakes_are_refused_before_anything_crosses(
    stand_in_juliacall, new_example, tmp_path
):
    _, main = stand_in_juliacall
    v = _graph_example(new_example, tmp_path, main)
    x, z, edges, mask, w = _graph_inputs(np.float64)
    wrapping = edges.copy()
    wrapping[0, 0] = np.iinfo(np.int32).max
    cases = [
        ((x, z, wrapping, mask, w, 0.5, 3, True), "would wrap around"),
        ((x, z, edges.astype(np.int64), mask, w, 0.5, 3, True), "edges"),
        ((x, z.real.copy(), edges, mask, w, 0.5, 3, True), "z"),
        ((x, z, edges, mask.astype(np.int8), w, 0.5, 3, True), "mask"),
        ((x, z, edges, mask, w, 0.5, 3.0, True), "steps"),
        ((x, z, edges, mask, w, 0.5, 3, 1), "flag"),
    ]
    for args, fragment in cases:
        with pytest.raises(weanj.InputError, match=fragment) as caught:
            v.grad(*args)
        _one_line(str(caught.value))
    assert main.converted == 0 and main.WeanJ.gradient_calls == []


def test_the_loss_activity_options_reach_enzyme_gradient(stand_in_juliacall, new_example, tmp_path):
    _, main = stand_in_juliacall
    path = tmp_path / "f.jl"
    path.write_text("# stand-in\n")
    kernel = StandInLoss(lambda x: float(np.sum(x**2)), lambda x: [2 * x])
    main.user_files["f.jl"] = {"f": kernel}
    ex = new_example("90-f", arrays=("x",), wrt="x")
    options = {
        "julia-bare": {},
        "julia-dup": {"function": "duplicated", "runtime_activity": True},
        "julia-const": {"function": "const"},
    }
    for name, given in options.items():
        v = weanj.julia_variant(ex, name, family="f", loss="f", file=path, **given)
        np.testing.assert_array_equal(v.grad(np.arange(3.0)), 2 * np.arange(3.0))
    assert main.WeanJ.gradient_options == [
        ("bare", False),
        ("duplicated", True),
        ("const", False),
    ]
    bad = [{"function": "shadow"}, {"function": True}, {"runtime_activity": "yes"}]
    for given in bad:
        with pytest.raises(weanj.DefinitionError) as caught:
            weanj.julia_variant(ex, "julia-bad", family="f", loss="f", file=path, **given)
        _one_line(str(caught.value))
    assert find_variant("90-f", "julia-bad") is None


MUTABILITY = (
    "EnzymeMutabilityException: Function argument passed to autodiff cannot be proven "
    "readonly.\nIf the the function argument cannot contain derivative data, instead call "
    "autodiff(Mode, Const(f), ...)\nSee https://enzyme.mit.edu/..."
)
RUNTIME_ACTIVITY = (
    "EnzymeRuntimeActivityError: Detected potential need for runtime activity.\n\n"
    "Constant memory is stored (or returned) to a differentiable variable and correctness "
    "cannot be guaranteed with static activity analysis.\n..."
)


@pytest.mark.parametrize(
    "given, failure, says, not_said",
    [
        ({}, MUTABILITY, ["function='duplicated'", "function='const'"], []),
        ({}, RUNTIME_ACTIVITY, ["runtime_activity=True", "function='duplicated'"], []),
        (
            {"function": "duplicated"},
            RUNTIME_ACTIVITY,
            ["runtime_activity=True"],
            ["function='duplicated'"],
        ),
    ],
)
def test_enzymes_activity_errors_name_the_option_that_fixes_them(
    stand_in_juliacall, new_example, tmp_path, given, failure, says, not_said
):
    """Enzyme's messages (as Enzyme.jl's src/errors.jl prints them, read, not run) become
    one line naming the variant and julia_variant's option, exit code 2."""
    _, main = stand_in_juliacall
    path = tmp_path / "f.jl"
    path.write_text("# stand-in\n")
    main.user_files["f.jl"] = {"f": StandInLoss(lambda x: float(np.sum(x)), None)}
    ex = new_example("90-f", arrays=("x",), wrt="x")
    v = weanj.julia_variant(ex, "julia-f", family="f", loss="f", file=path, **given)
    v.loss(np.ones(3))  # builds the functions: the stand-in WeanJ exists from here on
    main.WeanJ.failure = Exception(failure)
    with pytest.raises(weanj.DefinitionError) as caught:
        v.grad(np.ones(3))
    message = _one_line(str(caught.value))
    assert message.startswith("julia-f: Enzyme") and caught.value.exit_code == 2
    for fragment in says:
        assert fragment in message
    for fragment in not_said:
        assert fragment not in message


def test_a_kernels_own_check_is_one_line_and_other_errors_pass_through(
    stand_in_juliacall, new_example, tmp_path
):
    _, main = stand_in_juliacall
    path = tmp_path / "f.jl"
    path.write_text("# stand-in\n")

    def checked(x):
        raise Exception("DimensionMismatch: x must have 3 entries, got (2,)\nStacktrace: ...")

    main.user_files["f.jl"] = {"f": StandInLoss(checked, None)}
    ex = new_example("90-f", arrays=("x",), wrt="x")
    v = weanj.julia_variant(ex, "julia-f", family="f", loss="f", file=path)
    with pytest.raises(weanj.InputError) as caught:
        v.loss(np.ones(2))
    assert (
        _one_line(str(caught.value))
        == "julia-f: DimensionMismatch: x must have 3 entries, got (2,)"
    )
    bug = Exception("UndefVarError: `y` not defined")
    main.WeanJ.failure = bug
    with pytest.raises(Exception) as caught:
        v.grad(np.ones(2))
    assert caught.value is bug  # a bug in the kernel keeps Julia's message and traceback


# --- the Julia sources ---------------------------------------------------------------------

UPDATE = "(source + u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) / 4"
WEANJ_JL = JULIA_DIR / "src" / "WeanJ.jl"


def julia_tables() -> tuple[dict, dict]:
    """WeanJ.jl's EXAMPLES (`{name: (arrays, kinds, wrt, params, param kinds)}`) and
    VARIANTS (`{(example, name): (family, loss)}`), read from its source text as fatou
    formats them."""
    text = WEANJ_JL.read_text()
    flat = re.sub(r"\s+", " ", text)

    def strings(group: str) -> tuple[str, ...]:
        return tuple(re.findall(r'"([^"]*)"', group))

    fields = ", ".join(
        rf"{f} = (\([^)]*\))" for f in ("arrays", "kinds", "wrt", "params", "param_kinds")
    )
    examples = {
        found[0]: tuple(strings(group) for group in found[1:])
        for found in re.findall(r'\( ?name = "([^"]+)", ' + fields + r",? ?\)", flat)
    }
    # Rows whose fields are a constant's (`const POISSON = (arrays = ..., ...)`), spliced
    # in: `(; name = "01-jacobi", POISSON...)`.
    shared = {
        found[0]: tuple(strings(group) for group in found[1:])
        for found in re.findall(r"const (\w+) = \( ?" + fields + r",? ?\)", flat)
    }
    for name, constant in re.findall(r'\(; name = "([^"]+)", (\w+)\.\.\.,? ?\)', flat):
        examples[name] = shared[constant]
    variants = {
        (ex, name): (family, loss)
        for ex, name, family, loss in re.findall(
            r'\( ?example = "([^"]+)", name = "([^"]+)", family = "([^"]+)", '
            r"loss = (\w+),? ?\)",
            flat,
        )
    }
    return examples, variants


def test_weanj_jl_tables_agree_with_the_registry():
    """julia/src/WeanJ.jl's EXAMPLES and VARIANTS (what julia/run.jl and Pkg.test use)
    name the same examples, arrays with their kinds ("index" for an int array of
    indices), wrt, parameters with their kinds, variants, families and loss functions
    as the Python registry; each loss is defined in julia/<the example's stem>.jl, which
    the module includes, and exported."""
    examples, variants = julia_tables()
    assert set(POISSON_VARIANTS) <= set(variants)
    assert set(examples) == {example for example, _ in variants}
    kernels = {k: v for k, v in _julia.julia_kernels().items() if v.file is None}
    assert {k: (find_variant(*k).family, v.loss) for k, v in kernels.items()} == variants
    text = WEANJ_JL.read_text()
    for (example, _), (_, loss) in variants.items():
        ex = weanj.example(example)
        kinds = tuple("index" if a.index else a.kind for a in ex.specs)
        param_kinds = tuple(p.kind for p in ex.params)
        assert examples[example] == (ex.arrays, kinds, ex.wrt_names, ex.param_names, param_kinds)
        stem = ex.stem
        assert f'include("../{stem}.jl")' in text
        kernel = (JULIA_DIR / f"{stem}.jl").read_text()
        assert re.search(rf"^function {loss}\(", kernel, re.MULTILINE), (stem, loss)
        assert re.search(rf"^export .*\b{loss}\b", text, re.MULTILINE), loss
        assert (REPO / "python" / "weanj" / "examples" / f"{stem}.py").is_file()


def _julia_function(stem: str, name: str) -> str:
    """The text of `function NAME(...)` in julia/<stem>.jl, up to its closing `end`."""
    text = (JULIA_DIR / f"{stem}.jl").read_text()
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
    text = (JULIA_DIR / f"{stem}.jl").read_text()
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
    """julia/README.md's rule for every loss: the sum in Float64, rounded to T once."""
    text = (JULIA_DIR / "poisson.jl").read_text()
    body = text[text.index("function misfit(") :]
    body = body[: body.index("\nend\n")]
    assert "s = 0.0" in body and "s += Float64(r)^2" in body and "return T(s)" in body


def _fatou() -> str:
    found = shutil.which("fatou", path=str(Path(sys.executable).parent)) or shutil.which("fatou")
    if found is None:
        pytest.skip("fatou is not installed (pip install 'weanj[test]')")
    return found


def test_fatou_lints_and_formats_julia_clean():
    fatou = _fatou()
    files = {str(p.relative_to(JULIA_DIR)) for p in JULIA_DIR.rglob("*.jl")}
    mine = {"src/WeanJ.jl", "poisson.jl", "jacobi.jl", "gauss_seidel.jl", "io.jl", "run.jl"}
    assert mine | {"test/runtests.jl"} <= files
    for command in (["lint"], ["format", "--check"]):
        done = subprocess.run(
            [fatou, *command, str(JULIA_DIR)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_fatou_rejects_a_julia_file_that_does_not_parse(tmp_path):
    """The lint above would catch a syntax error: the same check fails on one."""
    fatou = _fatou()
    broken = tmp_path / "broken.jl"
    broken.write_text((JULIA_DIR / "poisson.jl").read_text().replace(UPDATE, UPDATE[:-5] + " / 4"))
    done = subprocess.run([fatou, "lint", str(broken)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "parse" in done.stdout + done.stderr


Version = tuple[int, int, int]


def pkg_compat(spec: str) -> list[tuple[Version, Version]]:
    """The half-open version ranges `[lo, hi)` a compat entry allows, by the rules of
    Pkg's documentation ("Version specifier format"): bare and `^` (caret), `~` (tilde),
    `=` (equality) and `a - b` (hyphen: missing trailing numbers of `b` are wildcards)
    clauses, separated by commas."""
    ranges = []
    for clause in (c.strip() for c in spec.split(",")):
        if " - " in clause:
            first, last = (part.strip().split(".") for part in clause.split(" - "))
            lo = tuple(int(x) for x in first) + (0,) * (3 - len(first))
            b = [int(x) for x in last]
            hi = (b[0] + 1, 0, 0) if len(b) == 1 else (b[0], b[1] + 1, 0)
            ranges.append((lo, hi if len(b) < 3 else (b[0], b[1], b[2] + 1)))
            continue
        m = re.fullmatch(r"([\^~=]?)(\d+)(?:\.(\d+))?(?:\.(\d+))?", clause)
        assert m, f"no Pkg compat clause: {clause!r}"
        op, given = m.group(1), [int(x) for x in m.groups()[1:] if x is not None]
        lo = tuple(given) + (0,) * (3 - len(given))
        major, minor, patch = lo
        if op == "=":
            assert len(given) == 3, clause
            hi = (major, minor, patch + 1)
        elif op == "~":
            hi = (major + 1, 0, 0) if len(given) == 1 else (major, minor + 1, 0)
            if len(given) == 3 and major == minor == 0:
                hi = (0, 0, patch + 1)
        elif major != 0 or len(given) == 1:
            hi = (major + 1, 0, 0)
        elif minor != 0 or len(given) == 2:
            hi = (0, minor + 1, 0)
        else:
            hi = (0, 0, patch + 1)
        ranges.append((lo, hi))
    return ranges


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
    """juliapkg.json (the bridge), julia/Project.toml (the package WeanJ) and Project.toml
    (julia/run.jl) name Enzyme by one UUID and compat bound, and allow exactly the Julia
    versions the bridge accepts, [1.10.3, 1.12.0): `1.10.3 - 1.11` (`1.10, 1.11` would
    allow up to 2.0, `~1.10` 1.10.0 to 1.10.2, which PythonCall refuses)."""
    juliapkg, top, package = _dependency_files()
    enzyme = "7da242da-08ed-463a-9acd-ee780be4f1d9"
    assert juliapkg["packages"]["Enzyme"]["uuid"] == enzyme
    assert top["deps"]["Enzyme"] == package["deps"]["Enzyme"] == enzyme
    bound = juliapkg["packages"]["Enzyme"]["version"]
    assert bound == top["compat"]["Enzyme"] == package["compat"]["Enzyme"]
    for spec in (juliapkg["julia"], top["compat"]["julia"], package["compat"]["julia"]):
        assert spec == _julia_find.COMPAT
        assert pkg_compat(spec) == SUPPORTED_RANGE
    assert top["deps"]["HDF5"] == "f67ccb44-e63f-5c2f-98bd-6dc0ccc4ba2f"
    assert top["deps"]["SHA"] == "ea8e919c-243c-51af-8825-aaa63cd721ce"
    # The package: a name, a UUID, and test-only dependencies (SHA: provenance.jl).
    assert package["name"] == "WeanJ" and uuid.UUID(package["uuid"]).version == 4
    assert set(package["deps"]) == {"Enzyme"}
    assert package["extras"] == {
        "JSON": "682c06a0-de6a-54ab-a142-c8b1cf79cde6",
        "SHA": "ea8e919c-243c-51af-8825-aaa63cd721ce",
        "Test": "8dfed614-e22c-5e08-85e1-65c5234f0b40",
    }
    assert package["targets"]["test"] == ["JSON", "SHA", "Test"]


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
    assert _julia.julia_sources() == JULIA_DIR
    # A wheel's layout: site-packages/weanj/julia/{src/WeanJ.jl, *.jl}, no checkout around.
    package = tmp_path / "site-packages" / "weanj"
    (package / "julia" / "src").mkdir(parents=True)
    shutil.copy(WEANJ_JL, package / "julia" / "src")
    monkeypatch.setattr(_julia, "_PACKAGE", package)
    assert _julia.julia_sources() == package / "julia"
    (package / "julia" / "src" / "WeanJ.jl").unlink()
    assert _julia.julia_sources() is None


def _hdf5_jl_string(node, name: str, text: str) -> None:
    """A string attribute as HDF5.jl writes it: fixed-length, null-terminated UTF-8 of
    exactly the string's size, written without conversion (h5py writes variable-length
    strings)."""
    from h5py import h5a, h5s, h5t

    raw = text.encode()
    fixed = h5t.C_S1.copy()
    fixed.set_size(len(raw))
    fixed.set_cset(h5t.CSET_UTF8)
    fixed.set_strpad(h5t.STR_NULLTERM)
    attr = h5a.create(node.id, name.encode(), fixed, h5s.create(h5s.SCALAR))
    attr.write(np.array(raw, dtype=f"S{len(raw)}"), mtype=fixed)


def julia_layout_file(path: Path, gradient: np.ndarray, **changes) -> dict:
    """A gradient file laid out as julia/io.jl writes it (format 2, emulated with h5py's
    low-level API): the dataset `gradient` with its `sha256`, `format` and the parameter
    K as Int64, `loss` as Float64, the key and the other text attributes as HDF5.jl's
    strings. The gradient is random numbers, not anybody's result. Returns the text
    attributes written."""
    import h5py

    from weanj._io._h5 import provenance_key
    from weanj._io._store import array_sha256

    shared = weanj.read_inputs("02-gauss-seidel")
    params = {"K": shared.params["K"]}
    strings = {
        "key": provenance_key(shared.digest, params, "float64"),
        "variant": "julia-layout",
        "family": "lex",
        "example": "02-gauss-seidel",
        "dtype": "float64",
        "inputs_sha256": shared.digest,
        "backend_version": "HDF5.jl layout emulated by h5py",
        "backend": "julia",
        "created": "2026-11-30T05:40:00+00:00",
        **changes,
    }
    with h5py.File(path, "w") as f:
        f["gradient"] = gradient
        _hdf5_jl_string(f["gradient"], "sha256", array_sha256(gradient))
        f.attrs["format"] = np.int64(2)
        f.attrs["loss"] = np.float64(0.25)
        f.attrs["K"] = np.int64(params["K"])
        for name, text in strings.items():
            _hdf5_jl_string(f, name, text)
    return strings


def test_the_store_reads_julias_format_2_files(project):
    """What julia/io.jl writes (format 2, the key, typed K, HDF5.jl's strings) reads back
    as a gradient of the shared inputs, whole; the same file with a key that does not
    match its attributes is refused."""
    theta = weanj.read_inputs("02-gauss-seidel").arrays["theta"]
    gradient = np.random.default_rng(3).standard_normal(theta.shape)
    path = project / "julia-layout.h5"
    strings = julia_layout_file(path, gradient)
    stored = weanj.load_gradient("02-gauss-seidel", "julia-layout", path=path)
    assert (stored.example.name, stored.family, stored.dtype) == (
        "02-gauss-seidel",
        "lex",
        "float64",
    )
    assert stored.format == 2 and stored.key == strings["key"]
    assert (stored.inputs_sha256, stored.backend) == (strings["inputs_sha256"], "julia")
    assert stored.created == strings["created"] and stored.params == {"K": 20}
    assert type(stored.params["K"]) is int
    assert stored.loss == 0.25 and np.array_equal(stored.gradient, gradient)
    assert weanj.read_inputs("02-gauss-seidel").matches(stored)
    tampered = project / "julia-tampered.h5"
    julia_layout_file(tampered, gradient, key="0" * 64)
    with pytest.raises(weanj.InputFileError, match="key does not match its attributes"):
        weanj.load_gradient("02-gauss-seidel", "julia-layout", path=tampered)
