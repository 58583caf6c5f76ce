"""`weanj report` meets files it did not write: a check file changed by hand is reported
as unreadable, in one line, and the rest of the page is written (never a traceback)."""

from __future__ import annotations

import json

import weanj
from weanj._cli import main

EX = "01-jacobi"


def test_a_current_check_file_changed_by_hand_is_unreadable_not_a_traceback(project, capsys):
    """`weanj report` shows a check.json whose key is current: one whose contents are not
    of the form `weanj check` writes is reported as unreadable, and the page is written."""
    key = weanj.read_inputs(EX).key("float64")
    check = project / "results" / EX / "check.json"
    check.write_text(
        json.dumps({"weanj_check": 1, "example": EX, "key": key, "gradients": 5, "checks": [1]})
    )
    assert main(["report", EX, "--out", str(project / "report.md")]) == 0
    page = (project / "report.md").read_text()
    assert "is unreadable" in page and "are not what `weanj check` writes" in page
    capsys.readouterr()
    # The same in the report's data: the check file's state and why.
    done = weanj.report([EX], out=project / "again.md")
    (page,) = done.pages
    assert page.check.state == "unreadable" and page.check.data == {}
    path = project / "results" / EX / "check.json"
    assert page.check.note == (
        f"{path} is unreadable (its gradients, checks are not what `weanj check` writes); "
        f"rerun `weanj check {EX}`"
    )
    assert page.checks == [] and done.path == project / "again.md"
