"""`pytest --weanj` collects from the project it is started in, and says which (issue 70,
item 8): run from a folder that holds a clone of weanj (another project, whose tests fail
to import there), it used to print 381 lines and 7 collection tracebacks.

`work/` holds `clone/` (a project of its own: a `pyproject.toml` and a test that cannot be
imported outside it); `work/` itself is, or is not, a weanj project (the tiny one). pytest
runs in a fresh process, as a user runs it.
"""

from __future__ import annotations

import pytest

from .projects import pytest_weanj_in, tiny_project

BROKEN = "import a_module_only_the_clone_has  # collected here, a traceback\n"


def _work(tmp_path, *, project: bool):
    work = tmp_path / "work"
    (work / "clone" / "tests").mkdir(parents=True)
    (work / "clone" / "pyproject.toml").write_text('[project]\nname = "other"\n')
    (work / "clone" / "tests" / "test_theirs.py").write_text(BROKEN)
    return tiny_project(work) if project else work


def test_a_project_holding_another_collects_its_own_items_and_names_the_other(tmp_path):
    work = _work(tmp_path, project=True)
    r = pytest_weanj_in(work)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "Traceback" not in out and "ERROR" not in out and "test_theirs" not in out
    lines = r.stdout.splitlines()
    assert f"weanj: project {work} (the nearest pyproject.toml with [tool.weanj])" in lines
    (said,) = [line for line in lines if line.startswith("weanj: ") and "item(s)" in line]
    assert said.endswith("; not collected, other projects: clone/ (name one to collect it)")
    assert "10-tiny" in said and "11-other" in said


def test_a_folder_that_is_no_project_stops_in_one_line_before_collecting(tmp_path):
    work = _work(tmp_path, project=False)
    r = pytest_weanj_in(work)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out[-3000:]
    assert "Traceback" not in out and "test_theirs" not in out and "error" in out
    assert f"not in a weanj project: no pyproject.toml at or above {work}" in out
    assert len(out.splitlines()) <= 8, out


@pytest.mark.parametrize("named", ["clone", "clone/tests/test_theirs.py"])
def test_the_other_project_named_on_the_command_line_is_collected(tmp_path, named):
    work = _work(tmp_path, project=True)
    r = pytest_weanj_in(work, named)
    assert r.returncode == 2 and "a_module_only_the_clone_has" in r.stdout, r.stdout[-3000:]
