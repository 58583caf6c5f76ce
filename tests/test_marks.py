"""The marks of what weanj wrote (`weanj._io._marks`), read without trusting the file:
each kind is recognised from its contents, a look-alike or a damaged file is nobody's mark
(None, never an exception), and nothing but a regular file has one."""

from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest

from weanj._io._marks import Mark, mark_of, png_metadata, refuse_unless_ours


def test_a_picture_weanj_drew_carries_its_example(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    ours, theirs = tmp_path / "ours.png", tmp_path / "theirs.png"
    fig.savefig(ours, format="png", metadata=png_metadata("01-jacobi"))
    fig.savefig(theirs, format="png")  # matplotlib's own Software chunk is no mark
    assert mark_of(ours) == Mark("picture", "01-jacobi")
    assert mark_of(theirs) is None
    (tmp_path / "cut.png").write_bytes(ours.read_bytes()[:40])
    assert mark_of(tmp_path / "cut.png") is None


@pytest.mark.parametrize(
    ("data", "mark"),
    [
        ({"weanj_check": 2, "example": "01-jacobi"}, Mark("check", "01-jacobi")),
        ({"weanj_check": 2}, None),  # names no example
        ({"format": 2, "example": "01-jacobi"}, None),
        (
            {"environment": {}, "records": [{"example": "03-advection"}]},
            Mark("bench", "03-advection"),
        ),
        ({"records": []}, None),
        ([1, 2, 3], None),
    ],
)
def test_json_marks(tmp_path, data, mark):
    path = tmp_path / "f.json"
    path.write_text(json.dumps(data))
    assert mark_of(path) == mark


def test_a_damaged_or_deep_json_is_no_mark(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "cut.json").write_text('{"weanj_check": 2, "exam')
    assert mark_of(tmp_path / "deep.json") is None
    assert mark_of(tmp_path / "cut.json") is None


def test_record_marks(tmp_path):
    record = {
        "format": 2,
        "key": "k",
        "example": "01-jacobi",
        "variant": "jax-a",
        "dtype": "float32",
    }
    ours = tmp_path / "jax-a@float32.npz"
    np.savez(ours, record=np.array(json.dumps(record)), g_x=np.zeros(3))
    assert mark_of(ours) == Mark("record", "01-jacobi", "jax-a", "float32")
    del record["key"]
    np.savez(tmp_path / "nokey.npz", record=np.array(json.dumps(record)))
    np.savez(tmp_path / "mine.npz", x=np.arange(3))
    (tmp_path / "notzip.npz").write_bytes(b"PK\x03\x04 not really")
    for name in ("nokey.npz", "mine.npz", "notzip.npz"):
        assert mark_of(tmp_path / name) is None, name


def test_hdf5_marks(tmp_path):
    gradient = tmp_path / "g.h5"
    with h5py.File(gradient, "w") as f:
        f["gradient"] = np.zeros(3)
        for k, v in {
            "variant": "jax-a",
            "family": "f",
            "example": "01-jacobi",
            "dtype": "float64",
            "inputs_sha256": "0" * 64,
        }.items():
            f.attrs[k] = v
    assert mark_of(gradient) == Mark("gradient", "01-jacobi", "jax-a", "float64", False)
    with h5py.File(gradient, "a") as f:
        f.attrs["noise_loss"] = 1e-16
    assert mark_of(gradient).evaluation
    inputs = tmp_path / "i.h5"
    with h5py.File(inputs, "w") as f:
        f["x"] = np.zeros(3)
        f.attrs["example"] = "01-jacobi"
        f.attrs["generator"] = "weanj-inputs/2"
    assert mark_of(inputs) == Mark("inputs", "01-jacobi")
    mine = tmp_path / "mine.h5"
    with h5py.File(mine, "w") as f:
        f["gradient"] = np.zeros(3)
        f.attrs["example"] = "01-jacobi"  # one look-alike attribute is no mark
    (tmp_path / "fake.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    (tmp_path / "text.h5").write_text("not HDF5")
    for name in ("mine.h5", "fake.h5", "text.h5"):
        assert mark_of(tmp_path / name) is None, name


def test_reports_and_nothing_but_regular_files(tmp_path):
    (tmp_path / "r.html").write_text("<!DOCTYPE html>\n<html><head><title>weanj report: ok</title>")
    (tmp_path / "r.md").write_text("# weanj report: FAIL\n")
    (tmp_path / "mine.md").write_text("# my notes on the weanj report: nothing\n")
    assert mark_of(tmp_path / "r.html") == Mark("report")
    assert mark_of(tmp_path / "r.md") == Mark("report")
    assert mark_of(tmp_path / "mine.md") is None
    (tmp_path / "link.md").symlink_to(tmp_path / "r.md")
    (tmp_path / "folder.md").mkdir()
    os.mkfifo(tmp_path / "pipe.md")
    for name in ("link.md", "folder.md", "pipe.md", "missing.md"):
        assert mark_of(tmp_path / name) is None, name  # never opened: a pipe never waits


def test_what_may_be_replaced(tmp_path):
    from weanj._errors import InputFileError

    (tmp_path / "r.md").write_text("# weanj report: ok\n")
    (tmp_path / "mine.md").write_text("mine\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    refuse_unless_ours(tmp_path / "missing.md")
    refuse_unless_ours(tmp_path / "r.md")
    refuse_unless_ours(tmp_path / "mine.md", force=True)
    with pytest.raises(InputFileError, match="weanj did not write it"):
        refuse_unless_ours(tmp_path / "mine.md")
    with pytest.raises(InputFileError, match="source code"):
        refuse_unless_ours(tmp_path / "m.py", force=True)
