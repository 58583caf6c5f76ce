"""Finding Julia (`_julia_find`), with fake executables that answer `--version` as a given
Julia version would (and record every other call, so that a test sees that nothing else
ran): which one is chosen (the newest usable), the supported range (1.10.3 to 1.13), the
one-line reasons, numeric version order, and the two obstacles that lie in the Python:
its OpenSSL (Julia 1.12 and later need 3.5) and Python 3.14 with a juliacall older than
0.9.31. This Python's OpenSSL is pinned by the fixture (3.5, unless a test says
otherwise), so that the choice does not depend on the machine.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import ssl
import sys

import pytest

from weanj._backends import _julia, _julia_find

from . import julia_helpers
from .julia_helpers import (
    calls,
    fake_julia,
    juliaup_install,
    one_line,
)

# The shared fixtures (tests/julia_helpers.py), under their names here.
no_julia = julia_helpers.no_julia

# OPENSSL_VERSION_INFO as the ssl module gives it: (major, minor, fix, patch, status).
OPENSSL_35 = (3, 5, 1, 0, 15)
OPENSSL_30 = (3, 0, 13, 0, 15)


@pytest.fixture(autouse=True)
def openssl_35(monkeypatch):
    """This Python's OpenSSL 3.5 (a test of an older one sets it again)."""
    monkeypatch.setattr(ssl, "OPENSSL_VERSION_INFO", OPENSSL_35)


def test_without_julia_the_reason_is_one_line_saying_how_to_get_it(no_julia):
    julia, why = _julia_find.find_julia()
    assert julia is None
    one_line(why)
    assert "juliaup add 1.13" in why and "WEANJ_JULIA" in why
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
    assert str(fake) in one_line(why) and "not a working Julia" in why


def test_a_julia_that_hangs_is_given_up_on(no_julia, monkeypatch):
    monkeypatch.setattr(_julia_find, "VERSION_TIMEOUT_S", 0.5)
    fake_julia(no_julia / "julia", "1.11.5", delay=5)
    julia, why = _julia_find.find_julia()
    assert julia is None and "did not answer" in one_line(why)


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
    assert f"{var}=" in one_line(why)


@pytest.mark.parametrize("var", [_julia_find.ENV_VAR, "PYTHON_JULIAPKG_EXE"])
def test_an_explicit_julia_114_is_refused_naming_the_fix(no_julia, tmp_path, monkeypatch, var):
    fake_julia(no_julia / "julia", "1.11.5")  # explicit settings are not second-guessed
    chosen = fake_julia(tmp_path / "opt" / "bin" / "julia", "1.14.0-DEV")
    monkeypatch.setenv(var, str(chosen))
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert f"{var}={chosen} is Julia 1.14.0-DEV (newer than 1.13" in one_line(why)
    assert "juliaup add 1.13" in why


@pytest.mark.parametrize("var", [_julia_find.ENV_VAR, "PYTHON_JULIAPKG_EXE"])
def test_an_explicit_julia_112_is_used(no_julia, tmp_path, monkeypatch, var):
    fake_julia(no_julia / "julia", "1.13.1")  # newer, but the user asked for this one
    chosen = fake_julia(tmp_path / "opt" / "bin" / "julia", "1.12.6")
    monkeypatch.setenv(var, str(chosen))
    assert _julia_find.find_julia() == (chosen, None)


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


def test_the_newest_usable_julia_is_chosen(no_julia, tmp_path, monkeypatch):
    """juliaup's launcher (its default channel, here 1.12) and the versions juliaup
    installed: the newest supported, 1.13.1, is chosen; a 1.14 pre-release is not."""
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    fake_julia(tmp_path / "home" / ".juliaup" / "bin" / "julia", "1.12.6")
    juliaup_install(depot, "julia-1.11.7+0.x64.linux.gnu")
    juliaup_install(depot, "julia-1.14.0-DEV+0.x64.linux.gnu")
    newest = juliaup_install(depot, "julia-1.13.1+0.x64.linux.gnu")
    found = _julia_find.locate_julia()
    assert (found.path, found.version, found.why) == (newest, "1.13.1", None)


def test_with_an_older_openssl_a_112_launcher_is_passed_over_for_111(
    no_julia, tmp_path, monkeypatch
):
    """Where this Python's OpenSSL is older than 3.5, juliacall keeps Julia at 1.11 or
    older: the 1.11 juliaup also installed is chosen, by its own executable, so that
    juliapkg gets a Julia it can use."""
    monkeypatch.setattr(ssl, "OPENSSL_VERSION_INFO", OPENSSL_30)
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    launcher = fake_julia(tmp_path / "home" / ".juliaup" / "bin" / "julia", "1.12.6")
    fake_julia(no_julia / "julia", "1.12.6")  # the launcher, as juliaup puts it on PATH
    juliaup_install(depot, "julia-1.12.6+0.x64.linux.gnu")
    chosen = juliaup_install(depot, "julia-1.11.7+0.x64.linux.gnu")
    found = _julia_find.locate_julia()
    assert (found.path, found.version, found.why) == (chosen, "1.11.7", None)
    assert calls(launcher) == ["--version"]


def test_with_an_older_openssl_only_julia_112_is_one_line_naming_both_remedies(
    no_julia, tmp_path, monkeypatch
):
    monkeypatch.setattr(ssl, "OPENSSL_VERSION_INFO", OPENSSL_30)
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    launcher = fake_julia(tmp_path / "home" / ".juliaup" / "bin" / "julia", "1.12.6")
    juliaup_install(depot, "julia-1.13.1+0.x64.linux.gnu")
    julia, why = _julia_find.find_julia()
    assert julia is None
    one_line(why)
    assert "Julia 1.12.6 needs a Python whose OpenSSL is 3.5 or newer, and this one has " in why
    assert "OpenSSL 3.0.13" in why and f"(at {launcher})" in why and "Julia 1.13.1" in why
    # both remedies: a Python with a newer OpenSSL (and how to see one's own), or 1.11
    assert "import ssl; print(ssl.OPENSSL_VERSION)" in why and "`uv python`" in why
    assert why.endswith("or run `juliaup add 1.11`")
    assert _julia.unavailable_reason() == why


def test_with_an_older_openssl_an_explicit_julia_113_is_refused_in_one_line(
    no_julia, tmp_path, monkeypatch
):
    monkeypatch.setattr(ssl, "OPENSSL_VERSION_INFO", OPENSSL_30)
    chosen = fake_julia(tmp_path / "opt" / "bin" / "julia", "1.13.1")
    monkeypatch.setenv(_julia_find.ENV_VAR, str(chosen))
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert one_line(why).startswith(f"WEANJ_JULIA={chosen}: Julia 1.13.1 needs a Python whose")
    assert why.endswith(_julia_find.OPENSSL_FIX)
    # With OpenSSL 3.5 the same setting is used.
    monkeypatch.setattr(ssl, "OPENSSL_VERSION_INFO", OPENSSL_35)
    assert _julia_find.find_julia() == (chosen, None)


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


def test_among_equal_versions_the_one_on_path_is_used(no_julia, tmp_path, monkeypatch):
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    juliaup_install(depot, "julia-1.10.9+0.x64.linux.gnu")
    older = juliaup_install(depot, "julia-1.10.4+0.x64.linux.gnu")
    on_path = fake_julia(no_julia / "julia", "1.10.9")
    assert _julia_find.find_julia() == (on_path, None)
    assert calls(older) == ["--version"]


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
        ("1.12.0-rc1", True),
        ("1.12.6", True),
        ("1.13.1", True),
        ("1.14.0-DEV", False),
        ("2.0.0", False),
    ],
)
def test_the_supported_range_is_1_10_3_to_1_13(version, ok):
    """Compared on (major, minor, patch) as Pkg compares versions: PythonCall needs
    1.10.3; a 1.14 pre-release is a 1.14, a 1.12 one a 1.12."""
    key = _julia_find.version_key(version)
    assert _julia_find.supported(key) is ok


# What `julia --version` prints, and what discovery makes of it with this Python's OpenSSL
# at 3.5: the Julia used, or the reason in its one line.
DISCOVERY = [
    ("1.9.4", "older than 1.10, the oldest that PythonCall and Enzyme.jl support"),
    ("1.10.2", "older than 1.10.3, which PythonCall, juliacall's Julia side, requires"),
    ("1.10.3", None),
    ("1.11.7", None),
    ("1.12.6", None),
    ("1.13.1", None),
    ("1.14.0-DEV", "newer than 1.13, the newest release weanj supports"),
]


@pytest.mark.parametrize("version, reason", DISCOVERY)
def test_discovery_accepts_or_refuses_each_version_saying_why(no_julia, version, reason):
    fake = fake_julia(no_julia / "julia", version)
    found = _julia_find.locate_julia()
    if reason is None:
        assert (found.path, found.version, found.why) == (fake, version, None)
    else:
        assert found.path is None
        assert f"no usable Julia: Julia {version} at {fake} ({reason}); " in one_line(found.why)
        assert found.why.endswith(f"need {_julia_find.SUPPORTED_TEXT}: {_julia_find.fix_version()}")
    assert calls(fake) == ["--version"]


@pytest.mark.parametrize("version, reason", DISCOVERY)
def test_with_an_older_openssl_only_1_10_3_to_1_11_are_accepted(
    no_julia, monkeypatch, version, reason
):
    monkeypatch.setattr(ssl, "OPENSSL_VERSION_INFO", OPENSSL_30)
    fake = fake_julia(no_julia / "julia", version)
    found = _julia_find.locate_julia()
    key = _julia_find.version_key(version)
    if reason is None and key[:2] < (1, 12):
        assert (found.path, found.version) == (fake, version)
    elif reason is None:  # 1.12 and 1.13: the OpenSSL line, with both remedies
        assert found.path is None and "needs a Python whose OpenSSL is 3.5" in one_line(found.why)
        assert found.why.endswith(_julia_find.OPENSSL_FIX)
    else:
        assert found.path is None and reason in one_line(found.why)
        assert found.why.endswith(
            "run `juliaup add 1.11` (or set WEANJ_JULIA=/path/to/julia-1.11/bin/julia)"
        )


def test_julia_1_10_2_on_path_is_passed_over_saying_why(no_julia, tmp_path, monkeypatch):
    """PythonCall (juliacall's Julia side) needs 1.10.3: an older 1.10 is not used, and
    the reason says so; an installed 1.10.3 is chosen instead."""
    depot = tmp_path / "depot"
    monkeypatch.setenv("JULIAUP_DEPOT_PATH", str(depot))
    old = fake_julia(no_julia / "julia", "1.10.2")
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert f"Julia 1.10.2 at {old} (older than 1.10.3" in one_line(why)
    assert "juliaup add 1.13" in why
    juliaup_install(depot, "julia-1.10.2+0.x64.linux.gnu")
    assert _julia_find.find_julia()[0] is None  # juliaup's 1.10.2 is not chosen either
    newer = juliaup_install(depot, "julia-1.10.3+0.x64.linux.gnu")
    assert _julia_find.find_julia() == (newer, None)


def test_an_explicit_julia_1_10_0_is_refused_naming_the_minimum(no_julia, tmp_path, monkeypatch):
    chosen = fake_julia(tmp_path / "opt" / "bin" / "julia", "1.10.0")
    monkeypatch.setenv(_julia_find.ENV_VAR, str(chosen))
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert f"WEANJ_JULIA={chosen} is Julia 1.10.0 (older than 1.10.3" in one_line(why)
    assert "juliaup add 1.13" in why


# --- Python 3.14 and juliacall -------------------------------------------------------------


def _python(monkeypatch, version: tuple, juliacall: str | None) -> None:
    """This Python's version as `sys.version_info` gives it, and the juliacall installed."""
    monkeypatch.setattr(sys, "version_info", (*version, "final", 0))

    def installed(name):
        if name != "juliacall" or juliacall is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return juliacall

    monkeypatch.setattr(importlib.metadata, "version", installed)


def test_python_314_with_an_older_juliacall_is_one_line(no_julia, monkeypatch):
    """PythonCall 0.9.30 supports Python up to 3.13 only, and earlier versions fail at
    import on 3.14; 0.9.31 restored 3.14. The reason comes before any Julia is looked
    for, so the Julia variants are unavailable whatever Julia is installed."""
    fake = fake_julia(no_julia / "julia", "1.11.7")
    _python(monkeypatch, (3, 14, 0), "0.9.30")
    julia, why = _julia_find.find_julia()
    assert julia is None
    assert one_line(why) == (
        "Python 3.14 needs juliacall 0.9.31 or later (PythonCall dropped Python 3.14 in "
        "0.9.30 and restored it in 0.9.31), and juliacall 0.9.30 is installed: "
        "pip install -U 'juliacall>=0.9.31', or use Python 3.13"
    )
    assert _julia.unavailable_reason() == why
    assert calls(fake) == []  # no Julia was even asked its version


@pytest.mark.parametrize(
    "version, juliacall",
    [((3, 14, 0), "0.9.31"), ((3, 14, 2), "0.9.37"), ((3, 13, 9), "0.9.30"), ((3, 14, 0), None)],
)
def test_python_314_with_juliacall_0_9_31_or_later_is_fine(
    no_julia, monkeypatch, version, juliacall
):
    """And neither is Python 3.13 refused, nor 3.14 without juliacall (that reason is
    the missing juliacall's, given where juliacall is looked for)."""
    fake = fake_julia(no_julia / "julia", "1.11.7")
    _python(monkeypatch, version, juliacall)
    assert _julia_find.python_reason() is None
    assert _julia_find.find_julia() == (fake, None)
