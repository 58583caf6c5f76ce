"""The project a command acts on (docs/DESIGN.md, "The project"): `$WEANJ_ROOT`, else the
nearest folder at or above the current one whose `pyproject.toml` has a `[tool.weanj]`
table, and nothing else. Elsewhere every front end (`weanj`, `pytest --weanj`, the
Python API) refuses in the same one line, saying what to add, and writes nothing
anywhere (weanj's own checkout included: it used to be the fallback)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import weanj
from weanj._project import project_config

from .conftest import REPO
from .helpers import assert_one_line_error
from .projects import pytest_weanj_in, run_in, user_env, weanj_in

# --- the root, in this process ----------------------------------------------------------------


def test_root_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path / "elsewhere"))
    # A root that does not exist is a mistake (a typo), not an empty project.
    with pytest.raises(weanj.ProjectError, match="is not an existing folder"):
        weanj.project_root()
    (tmp_path / "elsewhere").mkdir()
    assert weanj.project_root() == (tmp_path / "elsewhere").resolve()


def test_weanjs_own_checkout_is_the_project_only_from_inside_it(monkeypatch, tmp_path):
    """Replaces test_root_is_the_editable_checkout: from outside the checkout (here a
    temporary folder) weanj's checkout is no longer the fallback."""
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    monkeypatch.chdir(REPO / "tests" / "data")
    assert weanj.project_root() == REPO
    monkeypatch.chdir(tmp_path)
    with pytest.raises(weanj.ProjectError) as raised:
        weanj.project_root()
    assert str(raised.value).startswith(
        f"not in a weanj project: no pyproject.toml at or above {tmp_path}; "
        'make a pyproject.toml with [tool.weanj] examples = ["your.module"]'
    )


def test_the_root_is_the_nearest_pyproject_with_the_table(monkeypatch, tmp_path):
    """Replaces test_root_falls_back_to_cwd: no folder is a project for lacking one."""
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    (inner / "deeper").mkdir(parents=True)
    monkeypatch.chdir(inner / "deeper")
    with pytest.raises(weanj.ProjectError, match="no pyproject.toml at or above"):
        weanj.project_root()
    # A pyproject.toml without the table: named, with what to add to it.
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n# tool.weanj: not here\n')
    with pytest.raises(weanj.ProjectError) as raised:
        weanj.project_root()
    message = str(raised.value)
    assert message.startswith(
        f"not in a weanj project: {inner / 'pyproject.toml'} has no [tool.weanj] table; add a "
        '[tool.weanj] table with examples = ["your.module"] to it (or run `weanj new NAME` there)'
    )
    assert "\n" not in message
    # The nearest folder with the table, however deep below it one works.
    (outer / "pyproject.toml").write_text("[tool.weanj]\nexamples = []\n")
    assert weanj.project_root() == outer
    (inner / "pyproject.toml").write_text("[tool.weanj]\nexamples = []\n")
    assert weanj.project_root() == inner
    monkeypatch.chdir(outer)
    assert weanj.project_root() == outer
    monkeypatch.setenv("WEANJ_ROOT", "")  # empty means unset
    assert weanj.project_root() == outer
    monkeypatch.setenv("WEANJ_ROOT", str(inner))  # the variable before the folders
    assert weanj.project_root() == inner


def test_results_follow_the_root(project):
    assert weanj.gradient_path("01-jacobi", "jax-jacobi") == (
        project / "results" / "01-jacobi" / "gradients" / "jax-jacobi.h5"
    )
    assert weanj.inputs_path("02-gauss-seidel") == project / "shared_inputs" / "02-gauss-seidel.h5"


def test_a_pyproject_that_is_not_utf8_is_one_error(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"\xff\xfe[tool.weanj]\x00")
    with pytest.raises(weanj.ProjectError, match="is not valid TOML \\(not UTF-8 text\\)"):
        project_config(tmp_path)


# --- outside a project: every front end, one line, nothing written ------------------------------

# In one fresh process (a registry that never loaded, as a user's): `weanj check`, `weanj
# list` and `weanj check 12-heat` through the command line's own `main`, then `weanj.check()`.
_FRONT_ENDS = """
import contextlib, io, json, weanj
from weanj._cli import main
out = {}
for argv in (["check"], ["list"], ["check", "12-heat"]):
    err, printed = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(printed):
        code = main(argv)
    out["weanj " + " ".join(argv)] = [code, err.getvalue(), printed.getvalue()]
try:
    weanj.check()
    out["weanj.check()"] = ["no error", "", ""]
except weanj.ProjectError as e:
    out["weanj.check()"] = [2, str(e), ""]
print(json.dumps(out))
"""


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder below `folder`: {relative path: (size, mtime in ns)}."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


def _checkout() -> dict[str, tuple[int, int]]:
    """What the old fallback wrote to: weanj's own results/, shared inputs and cache."""
    return {
        name: _tree(REPO / name) if (REPO / name).is_dir() else None
        for name in ("results", "shared_inputs", ".weanj-cache")
    }


def _pytest_exit_message(stdout: str) -> str:
    """The message of pytest's `! _pytest.outcomes.Exit: MESSAGE !` (wrapped lines joined)."""
    found = re.search(r"_pytest\.outcomes\.Exit: (.*?) !\n", stdout, re.DOTALL)
    assert found, stdout
    return " ".join(line.strip() for line in found.group(1).splitlines())


@pytest.mark.parametrize(
    "where", ["pyproject-without-the-table", pytest.param("no-pyproject", marks=pytest.mark.slow)]
)
def test_outside_a_project_every_front_end_says_the_same_line_and_writes_nothing(tmp_path, where):
    """`weanj check`, `weanj list`, `pytest --weanj` and `weanj.check()`, run from a folder
    below a `pyproject.toml` without `[tool.weanj]` (or below none): exit 2 (a
    `ProjectError`) with one and the same line naming what to add; no file appears or
    changes, here or in weanj's checkout. (`pytest --weanj` outside a project used to
    collect nothing and exit 5; `weanj check` acted on weanj's checkout.)"""
    top = tmp_path / "work"
    here = top / "src" / "deeper"
    here.mkdir(parents=True)
    if where == "pyproject-without-the-table":
        (top / "pyproject.toml").write_text('[project]\nname = "mine"\nversion = "0.1"\n')
        expected = (
            f"not in a weanj project: {top / 'pyproject.toml'} has no [tool.weanj] table; "
            'add a [tool.weanj] table with examples = ["your.module"] to it (or run `weanj new '
            "NAME` there), or set WEANJ_ROOT to a weanj project"
        )
    else:
        expected = (
            f"not in a weanj project: no pyproject.toml at or above {here}; "
            'make a pyproject.toml with [tool.weanj] examples = ["your.module"] (`weanj new '
            "NAME` writes one), or set WEANJ_ROOT to a weanj project"
        )
    before, checkout = _tree(tmp_path), _checkout()

    r = run_in(here, "-c", _FRONT_ENDS)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    outcomes = json.loads(r.stdout)
    for front, (code, err, out) in outcomes.items():
        assert code == 2 and out == "", (front, code, out)
        if front != "weanj.check()":
            assert assert_one_line_error(err) == f"weanj: error: {expected}", front
    assert outcomes["weanj.check()"][1] == expected
    r = pytest_weanj_in(here, "-q")
    assert r.returncode == 2, r.stdout + r.stderr
    assert _pytest_exit_message(r.stdout) == f"weanj: error: {expected}"
    assert "passed" not in r.stdout and "weanj::" not in r.stdout
    if where == "pyproject-without-the-table":  # the console script itself, once
        r = weanj_in(here, "check")
        assert r.returncode == 2 and r.stdout == ""
        assert assert_one_line_error(r.stderr) == f"weanj: error: {expected}"

    assert _tree(tmp_path) == before
    assert _checkout() == checkout


def test_unknown_example_names_the_project_and_how_it_was_found(tmp_path):
    """`weanj check 12-heat` inside a project: the message says which project root was
    searched and why that one. (Outside any project it is the one line above.)"""
    user = tmp_path / "mine"
    (user / "sub").mkdir(parents=True)
    (user / "pyproject.toml").write_text("[tool.weanj]\nexamples = []\nbuiltin = true\n")
    r = weanj_in(user / "sub", "check", "12-heat")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(
        f"weanj: error: unknown example '12-heat' in project {user.resolve()} (the nearest "
        "pyproject.toml with [tool.weanj])"
    )
    assert "known examples: 01-jacobi, 02-gauss-seidel" in assert_one_line_error(r.stderr)
    r = run_in(tmp_path, "-m", "weanj", "list", env=user_env(WEANJ_ROOT=str(tmp_path / "no")))
    assert r.returncode == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"WEANJ_ROOT={tmp_path / 'no'} is not an existing folder")
