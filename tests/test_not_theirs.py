"""Writes replace only what weanj wrote (issue 52, item 2).

In a user project (`tests/projects.py`): `weanj.save_inputs`, `weanj run --out`, `weanj
report --out` and the pictures of `weanj diff --plot` replace a file only if weanj wrote
it (it carries weanj's mark, `weanj._io._marks`), a missing path, or one named with
`--force` (`force=True`); never a `.py` module, even with `--force`. Each refusal is one
line and the user's file is byte for byte as it was. `save_inputs` also refuses, in one
line and before allocating anything, an array the example does not declare and arrays
too large for a file weanj would read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

import weanj
from weanj._errors import InputError, InputFileError

from . import test_clean
from .helpers import assert_one_line_error
from .projects import as_user_in, weanj_here, write_project

# 40-keep, two members of one family: the project of tests/test_clean.py.
KEEP = test_clean.KEEP + test_clean.JAX_B

X = {"x": np.linspace(-1.0, 1.0, 6)}


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("theirs") / "project"
    root.mkdir()
    write_project(root, {"kernels/keep.py": KEEP})
    first = weanj_here(root, "check")
    assert first.returncode == 0, first.stdout + first.stderr
    return root


@pytest.fixture
def project(checked, tmp_path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(checked, root, symlinks=True)
    return root


def _one_line(error: BaseException, *fragments: str) -> None:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text
    for fragment in fragments:
        assert fragment in text, (fragment, text)


# --- weanj.save_inputs --------------------------------------------------------------------


def test_save_inputs_never_replaces_a_module(project):
    module = project / "kernels" / "keep.py"
    before = module.read_bytes()
    with as_user_in(project):
        for force in (False, True):
            with pytest.raises(InputFileError) as e:
                weanj.save_inputs("40-keep", X, path="kernels/keep.py", force=force)
            _one_line(e.value, "refusing to replace", "keep.py", "source code")
    assert module.read_bytes() == before


def test_save_inputs_replaces_a_users_file_only_with_force(project):
    mine = project / "data" / "mine.h5"
    mine.parent.mkdir()
    with h5py.File(mine, "w") as f:
        f.create_dataset("x", data=np.arange(6.0))
    before = mine.read_bytes()
    with as_user_in(project):
        with pytest.raises(InputFileError) as e:
            weanj.save_inputs("40-keep", X, path="data/mine.h5")
        _one_line(e.value, "weanj did not write it", "--force")
        assert mine.read_bytes() == before
        written = weanj.save_inputs("40-keep", X, path="data/mine.h5", force=True)
        read = weanj.read_inputs("40-keep", written)
    assert np.array_equal(read.arrays["x"], X["x"])


def test_write_inputs_at_a_path_replaces_a_users_file_only_with_force(project):
    mine = project / "mine.h5"
    mine.write_bytes(b"not weanj's")
    with as_user_in(project):
        with pytest.raises(InputFileError) as e:
            weanj.write_inputs("40-keep", path="mine.h5")
        _one_line(e.value, "weanj did not write it")
        assert mine.read_bytes() == b"not weanj's"
        weanj.write_inputs("40-keep", path="mine.h5", force=True)
        shared = weanj.read_inputs("40-keep")
        assert np.array_equal(weanj.read_inputs("40-keep", mine).arrays["x"], shared.arrays["x"])


def test_save_inputs_replaces_its_own_file(project):
    with as_user_in(project):
        first = weanj.save_inputs("40-keep", X, path="data/case.h5")
        again = weanj.save_inputs("40-keep", {"x": 2 * X["x"]}, path="data/case.h5")
        assert first == again
        assert np.array_equal(weanj.read_inputs("40-keep", again).arrays["x"], 2 * X["x"])


def test_save_inputs_refuses_an_array_the_example_does_not_declare(project):
    shared = project / "shared_inputs" / "40-keep.h5"
    before = shared.read_bytes()
    with as_user_in(project):
        with pytest.raises(InputError) as e:
            weanj.save_inputs("40-keep", {**X, "z": np.zeros(3)})
    _one_line(e.value, "declares no array 'z'", "its arrays: x", "nothing written")
    assert shared.read_bytes() == before


def test_save_inputs_refuses_a_size_it_cannot_hold_before_allocating(project, monkeypatch):
    huge = np.broadcast_to(np.float64(0.5), (10**9,))  # 1e9 elements in 8 bytes of memory
    shared = project / "shared_inputs" / "40-keep.h5"
    before = shared.read_bytes()
    with as_user_in(project):
        with pytest.raises(InputError) as e:
            weanj.save_inputs("40-keep", {"x": huge})
        _one_line(e.value, "7.45 GiB", "past the 4 GiB", "WEANJ_MAX_FILE_BYTES")
        monkeypatch.setenv("WEANJ_MAX_FILE_BYTES", "40")  # the same limit, one the test reaches
        with pytest.raises(InputError) as e:
            weanj.save_inputs("40-keep", X)  # 6 float64: 48 bytes
        _one_line(e.value, "48 bytes, past the 40 bytes")
    assert shared.read_bytes() == before


def test_save_inputs_arguments_are_one_line(project):
    with as_user_in(project):
        with pytest.raises(InputError) as e:
            weanj.save_inputs("40-keep", X, path=5)
        _one_line(e.value, "save_inputs: path must be a file name")
        with pytest.raises(InputError) as e:
            weanj.save_inputs("40-keep", X, force="yes")
        _one_line(e.value, "save_inputs: force must be True or False")


# --- run --out, report --out ----------------------------------------------------------------


def test_run_out_replaces_a_users_file_only_with_force_and_never_a_module(project):
    notes = project / "notes.h5"
    notes.write_bytes(b"my notes, not HDF5\n")
    refused = weanj_here(project, "run", "40-keep", "jax-a", "--out", "notes.h5")
    assert refused.returncode == 2
    assert_one_line_error(refused.stderr, "refusing to overwrite", "--force")
    assert notes.read_bytes() == b"my notes, not HDF5\n"
    forced = weanj_here(project, "run", "40-keep", "jax-a", "--out", "notes.h5", "--force")
    assert forced.returncode == 0, forced.stderr
    assert notes.read_bytes()[:4] == b"\x89HDF"
    module = project / "kernels" / "keep.py"
    before = module.read_bytes()
    never = weanj_here(project, "run", "40-keep", "jax-a", "--out", "kernels/keep.py", "--force")
    assert never.returncode == 2
    assert_one_line_error(never.stderr, "keep.py", "source code")
    assert module.read_bytes() == before


@pytest.mark.parametrize("name", ["page.html", "page.md"])
def test_report_out_replaces_a_users_page_only_with_force(project, name):
    page = project / name
    page.write_text("<p>my own page</p>\n")
    refused = weanj_here(project, "report", "--out", name)
    assert refused.returncode == 2
    assert_one_line_error(refused.stderr, "refusing to replace", "weanj did not write it")
    assert page.read_text() == "<p>my own page</p>\n"
    forced = weanj_here(project, "report", "--out", name, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "weanj report: " in page.read_text()[:2000]
    again = weanj_here(project, "report", "--out", name)  # its own page: replaced
    assert again.returncode == 0, again.stderr


def test_report_out_never_replaces_a_module(project):
    module = project / "kernels" / "keep.py"
    before = module.read_bytes()
    done = weanj_here(project, "report", "--out", "kernels/keep.py", "--force")
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "source code")
    assert module.read_bytes() == before


def test_a_users_picture_in_the_diff_folder_is_kept(project):
    pytest.importorskip("matplotlib")
    folder = project / "results" / "40-keep" / "diff"
    folder.mkdir(parents=True, exist_ok=True)
    mine = folder / "mine.png"
    mine.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    done = weanj_here(project, "diff", "40-keep", "--plot")
    assert done.returncode == 0, done.stdout + done.stderr
    assert mine.read_bytes() == b"\x89PNG\r\n\x1a\n" + b"\0" * 32
