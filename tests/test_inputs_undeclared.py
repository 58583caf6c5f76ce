"""An inputs file holding data its example does not declare is refused in one line (issue
64, item 4): weanj would neither read, digest nor judge that data, so the file is not the
example's inputs. The shared file says how to regenerate it; a user's (`--inputs FILE`)
says what an inputs file holds. Exit 2, nothing run or written, the file as it was. The
gallery's committed shared inputs hold nothing else, and read as before.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import h5py
import numpy as np
import pytest

import weanj

from .helpers import assert_one_line_error, weanj_main, write_h5

REPO = Path(__file__).resolve().parent.parent


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _assert_as_they_were(root: Path, before: dict[str, str]) -> None:
    """Every file of `before` byte-identical; a new one only a note weanj keeps for itself
    (`results/.weanj-*`: the files it probed, the inputs it found fresh)."""
    after = _snapshot(root)
    assert {k: after.get(k) for k in before} == before
    assert all(k.startswith("results/.weanj-") for k in set(after) - set(before)), after


@pytest.mark.parametrize("extra", ["dataset", "group"])
def test_a_shared_inputs_file_with_undeclared_data_is_refused(project, extra):
    shared = project / "shared_inputs" / "01-jacobi.h5"
    with h5py.File(shared, "a") as f:
        if extra == "dataset":
            f.create_dataset("notes", data=np.arange(3.0))
        else:
            f.create_group("more").create_dataset("x", data=np.zeros(2))
    name = "notes" if extra == "dataset" else "more"
    before = _snapshot(project)
    done = weanj_main("run", "01-jacobi", "jax-jacobi", root=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert_one_line_error(
        done.stderr,
        f"inputs file {shared} holds '{name}', which 01-jacobi does not declare (its arrays: "
        "theta, uobs); regenerate it with `weanj inputs regenerate 01-jacobi`",
    )
    assert done.stdout == ""
    _assert_as_they_were(project, before)


def test_a_users_inputs_file_with_undeclared_data_is_refused(project, tmp_path):
    rng = np.random.default_rng(3)
    theta, uobs = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))
    mine = write_h5(tmp_path / "mine.h5", theta=theta, uobs=uobs, weights=np.ones(6))
    before, mine_bytes = _snapshot(project), mine.read_bytes()
    done = weanj_main("run", "01-jacobi", "jax-jacobi", "--inputs", mine, root=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert_one_line_error(
        done.stderr,
        f"inputs file {mine} holds 'weights', which 01-jacobi does not declare",
        "an inputs file holds the example's arrays only (weanj.save_inputs writes one)",
    )
    _assert_as_they_were(project, before)
    assert mine.read_bytes() == mine_bytes
    with pytest.raises(weanj.InputFileError, match="holds 'weights'"):
        weanj.load_inputs("01-jacobi", mine)
    # the same arrays without it are read, exactly
    plain = write_h5(tmp_path / "plain.h5", theta=theta, uobs=uobs)
    np.testing.assert_array_equal(weanj.load_inputs("01-jacobi", plain)["theta"], theta)


@pytest.mark.parametrize("path", sorted(REPO.glob("shared_inputs/*.h5")), ids=lambda p: p.stem)
def test_the_committed_shared_inputs_hold_only_their_arrays_and_read(path):
    """The rule reads the gallery's own files as before: each holds its example's arrays
    and nothing else, and reads (its digest checked)."""
    ex = weanj.example(path.stem)
    with h5py.File(path) as f:
        assert sorted(f) == sorted(ex.arrays)
        recorded = f.attrs["sha256"]
    assert weanj.read_inputs(ex, path).digest == recorded
