"""`weanj clean` removes only what weanj wrote, provably (issue 52, item 1).

A user project (`tests/projects.py`) is checked once: `40-keep` (jax-a, jax-b) and `41-gone`
(jax-g). Then jax-b is deleted from its module and `41-gone`'s module is dropped from
`[tool.weanj]`: their results are stale. Each test works on a copy of that project and
puts a user's own file where the issue found `weanj clean` deleting one; after `weanj clean
--yes` that file is byte for byte as it was, and the stale files weanj wrote are gone.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from .helpers import assert_one_line_error
from .projects import pyproject, run_here, weanj_here, write_project

KEEP = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="40-keep", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)}))

@weanj.jax_variant(ex, "jax-a", family="f")
def a(x):
    return jnp.sum(jnp.sin(x) ** 2)
"""

JAX_B = """
@weanj.jax_variant(ex, "jax-b", family="f")
def b(x):
    return jnp.sum(1 - jnp.cos(x) ** 2)
"""

GONE = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="41-gone", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(5)}))

@weanj.jax_variant(ex, "jax-g", family="g")
def g(x):
    return jnp.sum(x ** 3)
"""

SAVE_GRADIENT = """\
import numpy as np, weanj
x = weanj.read_inputs("41-gone").arrays["x"]
weanj.save_gradient("41-gone", "my-own", 3 * x ** 2, loss=float(np.sum(x ** 3)), family="g")
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> Path:
    """The project after one `weanj check` of both examples, then jax-b and 41-gone no
    longer registered (its `my-own` gradient saved by the user with save_gradient)."""
    root = tmp_path_factory.mktemp("clean") / "project"
    root.mkdir()
    root = write_project(
        root,
        {"kernels/keep.py": KEEP + JAX_B, "kernels/gone.py": GONE},
    )
    first = weanj_here(root, "check")
    assert first.returncode == 0, first.stdout + first.stderr
    saved = run_here(root, SAVE_GRADIENT)
    assert saved.returncode == 0, saved.stderr
    (root / "kernels" / "keep.py").write_text(KEEP)
    (root / "pyproject.toml").write_text(pyproject("kernels.keep"))
    return root


@pytest.fixture
def project(checked, tmp_path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(checked, root, symlinks=True)
    return root


STALE = (  # what weanj wrote for jax-b and 41-gone: `weanj clean --yes` removes these
    "results/40-keep/gradients/jax-b.h5",
    "results/40-keep/gradients/float32/jax-b.h5",
    "results/40-keep/evaluations/jax-b.npz",
    "results/40-keep/evaluations/jax-b@float32.npz",
    "results/41-gone/gradients/jax-g.h5",
    "results/41-gone/gradients/float32/jax-g.h5",
    "results/41-gone/evaluations/jax-g.npz",
    "results/41-gone/evaluations/jax-g@float32.npz",
    "results/41-gone/check.json",
)


def files(folder: Path) -> dict[str, bytes]:
    """Every regular file under `folder` (links not followed), by relative path."""
    out = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                out[str(path.relative_to(folder))] = path.read_bytes()
    return out


def clean(root: Path, *args: str, ci: str | None = None):
    old = os.environ.pop("CI", None)
    if ci is not None:
        os.environ["CI"] = ci
    try:
        return weanj_here(root, "clean", *args)
    finally:
        os.environ.pop("CI", None)
        if old is not None:
            os.environ["CI"] = old


def test_the_stale_files_are_there_and_marked(project):
    from weanj._io._marks import mark_of

    for relative in STALE:
        mark = mark_of(project / relative)
        assert mark is not None, relative
        assert mark.example in relative


def test_without_yes_it_lists_and_changes_nothing(project):
    before = files(project)
    done = clean(project)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"weanj clean: would remove {len(STALE)} file(s) (run `weanj clean --yes` to remove them):"
    )
    for relative in STALE:
        assert any(line.startswith(f"  {relative}  (") for line in lines), relative
    assert files(project) == before
    dry = clean(project, "--dry-run", ci="true")  # --dry-run wins over CI=true
    assert dry.returncode == 0 and files(project) == before
    assert dry.stdout.startswith("weanj clean: would remove")


@pytest.mark.parametrize("how", ["--yes", "CI=true"])
def test_yes_removes_the_stale_files_and_the_folders_it_empties(project, how):
    before = files(project)
    done = clean(project, "--yes") if how == "--yes" else clean(project, ci="true")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"weanj clean: removing {len(STALE)} file(s):")
    after = files(project)
    assert set(before) - set(after) == set(STALE)
    assert all(after[k] == before[k] for k in after)
    # 41-gone keeps only the user's own gradient (saved with save_gradient): its folder stays
    assert (project / "results/41-gone/gradients/my-own.h5").is_file()
    assert not (project / "results/41-gone/evaluations").exists()  # emptied, so removed
    assert not (project / "results/41-gone/gradients/float32").exists()
    again = clean(project, "--yes")
    assert again.stdout.startswith("weanj clean: nothing to remove")


def _foreign_h5(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        f.create_dataset("gradient", data=np.arange(4.0))
        f.attrs["example"] = "mine"  # even a look-alike attribute is no mark


USERS = {
    # the cases, each a user's file where `weanj clean` used to delete one
    "foreign HDF5 under results/mydata/gradients": (
        "results/mydata/gradients/my.h5",
        _foreign_h5,
    ),
    "a user's JSON at results/notes/check.json": (
        "results/notes/check.json",
        lambda p: p.write_text(json.dumps({"format": 2, "example": "notes", "mine": True})),
    ),
    "a user's .npz in a registered example's evaluations": (
        "results/40-keep/evaluations/mine.npz",
        lambda p: np.savez(p, record=np.array('{"format": 2}'), x=np.arange(3.0)),
    ),
    "a user's .npz in a stale example's evaluations": (
        "results/41-gone/evaluations/mine.npz",
        lambda p: np.savez(p, x=np.arange(3.0)),
    ),
    "a user's mine.h5 in a stale example's gradients": (
        "results/41-gone/gradients/mine.h5",
        _foreign_h5,
    ),
    "a notebook in a stale example's gradients": (
        "results/41-gone/gradients/analysis.ipynb",
        lambda p: p.write_text('{"cells": [], "nbformat": 4}'),
    ),
}


@pytest.mark.parametrize("case", sorted(USERS))
def test_a_users_file_is_byte_identical_after_clean_yes(project, case):
    relative, make = USERS[case]
    path = project / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)
    mine = path.read_bytes()
    done = clean(project, "--yes")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == mine
    assert relative not in done.stdout
    assert not any((project / s).exists() for s in STALE)  # what weanj wrote still goes
    assert path.parent.is_dir()


def test_a_users_save_gradient_file_in_a_stale_example_is_kept(project):
    mine = project / "results/41-gone/gradients/my-own.h5"
    before = mine.read_bytes()
    clean(project, "--yes")
    assert mine.read_bytes() == before


@pytest.mark.parametrize("example", ["41-gone", "40-keep"])
def test_a_backup_copy_of_an_examples_folder_is_left_alone_and_said(project, example):
    """A copy carries weanj's marks, but they name the example it was copied from, not the
    folder it is in: it is the user's copy, left alone with a line saying so."""
    backup = project / "results" / f"{example}.bak"
    shutil.copytree(project / "results" / example, backup)
    before = files(backup)
    done = clean(project, "--yes")
    assert done.returncode == 0, done.stderr
    assert files(backup) == before
    assert (
        f"weanj clean: left alone results/{example}.bak: it holds results of {example}, not in "
        "that example's own folder (a copy?)"
    ) in done.stdout
    assert not (project / "results/41-gone/check.json").exists()


def test_results_linked_outside_the_project_is_refused(project, tmp_path):
    outside = tmp_path / "elsewhere"
    shutil.move(project / "results", outside)
    (project / "results").symlink_to(outside, target_is_directory=True)
    before = files(outside)
    done = clean(project, "--yes")
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "refusing to clean", "outside the project")
    assert files(outside) == before


def test_results_linked_inside_the_project_is_followed(project):
    """A `results/` that is a link to a folder of the project itself stays inside it."""
    inside = project / "store"
    shutil.move(project / "results", inside)
    (project / "results").symlink_to("store", target_is_directory=True)
    done = clean(project, "--yes")
    assert done.returncode == 0, done.stderr
    assert not (inside / "41-gone" / "check.json").exists()
    assert (inside / "40-keep" / "gradients" / "jax-a.h5").is_file()


def test_a_folder_of_a_stale_example_linked_elsewhere_is_not_followed(project, tmp_path):
    outside = tmp_path / "elsewhere"
    shutil.move(project / "results/41-gone/gradients", outside)
    (project / "results/41-gone/gradients").symlink_to(outside, target_is_directory=True)
    before = files(outside)
    done = clean(project, "--yes")
    assert done.returncode == 0, done.stderr
    assert files(outside) == before
