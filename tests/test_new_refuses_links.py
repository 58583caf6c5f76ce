"""`weanj new` never writes through, nor over, a symbolic link (issue 64, item 4): a link
(dangling, or to a file or folder outside the project) at a path it would write, or a
folder it would write into, is one line and exit 2; nothing is written, and every link
and the file it names are as they were. A link where it writes nothing (a project's own
`.gitignore`) is left alone."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from .helpers import assert_one_line_error


def _tree(*roots: Path) -> dict[str, tuple[str, str]]:
    """Every entry under `roots`, not following links: `{path: (kind, what)}`, a link's
    target as written, a file's sha256."""
    out = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = Path(folder) / name
                if path.is_symlink():
                    out[str(path)] = ("link", os.readlink(path))
                elif path.is_file():
                    out[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
                else:
                    out[str(path)] = ("folder", "")
    return out


def _new(root: Path, monkeypatch, capsys) -> tuple[int, str]:
    """`weanj new 11-smooth` in `root` (the command line's `main`, in this process)."""
    from weanj._cli import main

    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    monkeypatch.chdir(root)
    code = main(["new", "11-smooth"])
    return code, capsys.readouterr().err


# {where the link is: what `weanj new` would have written there}
LINKED = {
    "examples/smooth.py": "the example module",
    "julia/smooth.jl": "the Julia twin",
    "pyproject.toml": "[tool.weanj], edited",
    "examples/__init__.py": "the examples package",
    "examples": "the folder of the example module",
    "julia": "the folder of the Julia twin",
}


@pytest.mark.parametrize("dangling", [True, False], ids=["dangling", "to a file outside"])
@pytest.mark.parametrize("where", sorted(LINKED))
def test_a_link_where_new_writes_is_refused(tmp_path, monkeypatch, capsys, where, dangling):
    root, outside = tmp_path / "project", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    if where != "pyproject.toml":  # the project's own table, where that is no link
        (root / "pyproject.toml").write_text("[tool.weanj]\nexamples = []\n")
    is_folder = where in ("examples", "julia")
    target = outside / ("gone" if dangling else "theirs")
    if not dangling:
        if is_folder:
            target.mkdir()
            (target / "keep.txt").write_text("the user's\n")
        else:
            target.write_text("[tool.weanj]\nexamples = []\n# the user's own file\n")
    link = root / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=is_folder)
    before = _tree(root, outside)

    code, err = _new(root, monkeypatch, capsys)

    assert code == 2, err
    assert_one_line_error(
        err,
        f"{link} is a symbolic link (to {target})",
        "never writes through or over a link",
        "nothing was written",
    )
    assert _tree(root, outside) == before


def test_a_gitignore_that_is_a_link_is_left_as_it_is(tmp_path, monkeypatch, capsys):
    """`weanj new` writes a `.gitignore` only where the project has none; a link there
    (even a dangling one) is the project's own, kept, and the example is written."""
    root = tmp_path / "project"
    root.mkdir()
    (root / ".gitignore").symlink_to(tmp_path / "gone")
    code, err = _new(root, monkeypatch, capsys)
    assert code == 0, err
    assert os.readlink(root / ".gitignore") == str(tmp_path / "gone")
    assert not (tmp_path / "gone").exists()
    assert (root / "examples" / "smooth.py").is_file() and (root / "julia" / "smooth.jl").is_file()
