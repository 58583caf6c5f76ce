"""The gradient store (format 2): provenance and its key, the store's rules (where
`save_gradient` and `weanj run` may write, and what goes to `runs/`), format-1 files,
refusals, a file's dtype and where it lies, atomic writes, concurrent and killed writers,
and how the judge meets a file it cannot use (a verdict on that file, the rest judged)."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import importlib.metadata
import os
import re
import select
import shutil
import subprocess
import textwrap
import time

import h5py
import numpy as np
import pytest

import weanj
from weanj._cli import main
from weanj._io import _gradient_files, _store
from weanj._io._atomic import atomic_path
from weanj._io._h5 import array_sha256
from weanj._model import DTYPES
from weanj._places import places

from .conftest import REPO
from .helpers import (
    PYTHON,
    TYPED,
    assert_one_line_error,
    format1_sha256,
    inputs_sha256,
    jacobi_loss_and_gradient,
    provenance_key,
    raw_datasets,
    registered_smooth,
    registered_typed,
    subprocess_env,
    typed_gradient,
    write_h5,
)

EXAMPLE = "01-jacobi"
EX = EXAMPLE
FORMAT1 = REPO / "tests" / "data" / "format1"
DESIGN_ATTRS = {
    "format",
    "key",
    "loss",
    "variant",
    "family",
    "example",
    "K",
    "dtype",
    "inputs_sha256",
    "backend",
    "backend_version",
    "created",
}


def read_gradient_file(path, example=EXAMPLE):
    """The store's reader of one file (`_io._gradient_files`), for the example named."""
    return _gradient_files.read_gradient_file(path, weanj.example(example), places())


def scan_store(example=EXAMPLE, **kwargs):
    """Every gradient file of the example's store, read, and the problems (the judge's view)."""
    return _gradient_files.scan_store(weanj.example(example), places(), **kwargs)


def check_target(path, g, shared_key, **kwargs):
    """The store's rules for a path (`_io._store.check_target`)."""
    return _store.check_target(path, g, shared_key, places(), **kwargs)


def _gradient(value=None, shape=None, seed=0):
    shape = shape or weanj.load_inputs(EXAMPLE)["theta"].shape
    if value is not None:
        return np.full(shape, float(value))
    return np.random.default_rng(seed).standard_normal(shape)


def _shared_sha(project):
    raw = raw_datasets(project / "shared_inputs" / f"{EXAMPLE}.h5")
    return inputs_sha256([("theta", raw["theta"]), ("uobs", raw["uobs"])])


def _values_sha256(a):
    """A dataset's `sha256` attribute, from its definition: its little-endian C-order bytes."""
    a = np.asarray(a)
    return hashlib.sha256(a.astype(a.dtype.newbyteorder("<"), order="C").tobytes()).hexdigest()


def test_save_gradient_provenance(project):
    g = _gradient()
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    path = weanj.save_gradient(EXAMPLE, "jax-jacobi", g, loss=0.25)
    after = dt.datetime.now(dt.timezone.utc)
    assert path == project / "results" / EXAMPLE / "gradients" / "jax-jacobi.h5"
    with h5py.File(path, "r") as f:
        assert list(f) == ["gradient"]
        np.testing.assert_array_equal(f["gradient"][()], g)
        assert f["gradient"].dtype == np.dtype("<f8")
        assert f["gradient"].attrs["sha256"] == _values_sha256(g)
        attrs = dict(f.attrs)
        with h5py.File(project / "shared_inputs" / f"{EXAMPLE}.h5", "r") as shared:
            K = int(shared.attrs["K"])
    assert set(attrs) == DESIGN_ATTRS
    assert attrs["format"] == 2 and attrs["loss"] == 0.25
    assert attrs["variant"] == "jax-jacobi" and attrs["family"] == "jacobi"
    assert attrs["example"] == EXAMPLE and attrs["K"] == K
    assert type(attrs["K"]) is np.int64  # a typed parameter: an integer, not a float
    assert attrs["dtype"] == "float64"
    assert attrs["inputs_sha256"] == _shared_sha(project)
    key = provenance_key(_shared_sha(project), {"K": K}, "float64")
    assert attrs["key"] == key == weanj.read_inputs(EXAMPLE).key("float64")
    assert attrs["backend"] == "jax"
    assert importlib.metadata.version("jax") in attrs["backend_version"]
    created = dt.datetime.fromisoformat(attrs["created"])
    assert created.tzinfo is not None and before <= created <= after

    stored = weanj.load_gradient(EXAMPLE, "jax-jacobi")
    np.testing.assert_array_equal(stored.gradient, g)
    assert (stored.loss, stored.variant, stored.family, stored.example.name) == (
        0.25,
        "jax-jacobi",
        "jacobi",
        EXAMPLE,
    )
    assert stored.params == {"K": K} and stored.dtype == "float64"
    assert stored.inputs_sha256 == attrs["inputs_sha256"] and stored.path == path
    assert stored.key == key and stored.format == 2 and stored.source == "store"
    assert not stored.recorded and stored.label == "jax-jacobi"


def test_save_without_loss_and_in_float32(project):
    g = _gradient(seed=1).astype(np.float32)
    path = weanj.save_gradient(EXAMPLE, "jax-jacobi", g)
    # float32 gradients of the shared inputs have their own folder of the store.
    assert path == project / "results" / EXAMPLE / "gradients" / "float32" / "jax-jacobi.h5"
    assert path == weanj.gradient_path(EXAMPLE, "jax-jacobi", dtype="float32")
    assert not weanj.gradient_path(EXAMPLE, "jax-jacobi").exists()
    with h5py.File(path, "r") as f:
        assert set(f.attrs) == DESIGN_ATTRS - {"loss"}  # unknown loss: absent, not invented
        assert f["gradient"].dtype == np.float32 and f.attrs["dtype"] == "float32"
        assert f.attrs["key"] == provenance_key(_shared_sha(project), {"K": 20}, "float32")
        assert f.attrs["key"] != provenance_key(_shared_sha(project), {"K": 20}, "float64")
    stored = weanj.load_gradient(EXAMPLE, "jax-jacobi", dtype="float32")
    assert stored.loss is None and stored.gradient.dtype == np.float32
    np.testing.assert_array_equal(stored.gradient, g)
    assert stored.label == "jax-jacobi@float32"
    with pytest.raises(weanj.InputFileError, match="does not exist"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi")  # no float64 file was written


def test_explicit_provenance_is_kept(project, tmp_path):
    g = _gradient(shape=(3, 3), value=2.0)
    out = weanj.save_gradient(
        EXAMPLE,
        "jax-jacobi",
        g,
        loss=1.0,
        params={"K": 7},
        inputs_sha256="ab" * 32,
        backend="jax",
        backend_version="custom 1.0",
        path=tmp_path / "elsewhere.h5",
    )
    assert out == tmp_path / "elsewhere.h5"
    stored = weanj.load_gradient(EXAMPLE, "jax-jacobi", path=out, allow_stale=True)
    assert stored.params == {"K": 7} and stored.inputs_sha256 == "ab" * 32
    assert stored.key == provenance_key("ab" * 32, {"K": 7}, "float64")
    assert stored.backend_version == "custom 1.0" and stored.source == "file"
    assert not weanj.read_inputs(EXAMPLE).matches(stored)
    with pytest.raises(weanj.StaleGradientError, match="computed on other inputs"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi", path=out)
    assert not (project / "results" / EXAMPLE / "gradients").exists()


def test_family_is_required_for_unknown_names(project):
    with pytest.raises(weanj.InputError, match="family"):
        weanj.save_gradient(EXAMPLE, "my-experiment", _gradient())
    path = weanj.save_gradient(EXAMPLE, "my-experiment", _gradient(), family="jacobi")
    stored = weanj.load_gradient(EXAMPLE, "my-experiment")
    assert stored.family == "jacobi" and stored.backend == "my"  # backend: the name's prefix
    assert path.name == "my-experiment.h5"


@pytest.mark.parametrize("name", ["../escape", "../../x", "a/b", ".hidden", "", "a\nb", "x.h5"])
def test_variant_names_stay_inside_the_store(project, name):
    with pytest.raises(weanj.InputError, match="variant name") as excinfo:
        weanj.save_gradient(EXAMPLE, name, _gradient(), family="jacobi")
    assert "\n" not in str(excinfo.value)
    assert sorted(p.name for p in (project / "results" / EXAMPLE).iterdir()) == ["recorded"]


def test_stale_gradient_is_refused(project):
    g = _gradient()
    weanj.save_gradient(EXAMPLE, "jax-jacobi", g)
    old_sha = _shared_sha(project)
    # New shared inputs (a consistent file, as a regeneration with another seed makes).
    shared = project / "shared_inputs" / f"{EXAMPLE}.h5"
    with h5py.File(shared, "r+") as f:
        f["theta"][0, 0] += 1.0
        f.attrs["sha256"] = inputs_sha256([("theta", f["theta"][()]), ("uobs", f["uobs"][()])])
    assert _shared_sha(project) != old_sha
    with pytest.raises(weanj.StaleGradientError, match="allow_stale") as excinfo:
        weanj.load_gradient(EXAMPLE, "jax-jacobi")
    assert f"weanj run {EXAMPLE} jax-jacobi" in str(excinfo.value)
    stored = weanj.load_gradient(EXAMPLE, "jax-jacobi", allow_stale=True)
    assert stored.inputs_sha256 == old_sha
    np.testing.assert_array_equal(stored.gradient, g)


@pytest.mark.parametrize("shape", [(63, 64), (64, 63), (64,), (64, 64, 1)])
def test_shape_mismatch_is_refused(project, shape):
    with pytest.raises(weanj.InputError, match="shape"):
        weanj.save_gradient(EXAMPLE, "jax-jacobi", np.zeros(shape))
    assert not weanj.gradient_path(EXAMPLE, "jax-jacobi").exists()


def test_nonfinite_and_integer_gradients(project):
    g = _gradient()
    g[5, 6] = np.nan
    with pytest.raises(weanj.InputError, match="NaN"):
        weanj.save_gradient(EXAMPLE, "jax-jacobi", g)
    assert not weanj.gradient_path(EXAMPLE, "jax-jacobi").exists()
    weanj.save_gradient(EXAMPLE, "jax-jacobi", g, allow_nonfinite=True)
    stored = weanj.load_gradient(EXAMPLE, "jax-jacobi")
    assert (
        np.isnan(stored.gradient[5, 6])
        and np.isfinite(np.delete(stored.gradient, 5 * 64 + 6)).all()
    )
    with pytest.raises(weanj.InputError, match="dtype"):
        weanj.save_gradient(EXAMPLE, "jax-jacobi", np.zeros((64, 64), dtype=np.int64))


def test_missing_corrupt_and_misplaced_gradient_files(project):
    with pytest.raises(weanj.InputFileError, match="does not exist"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi")
    path = weanj.gradient_path(EXAMPLE, "jax-jacobi")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a gradient")
    with pytest.raises(weanj.InputFileError, match="cannot read"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi")
    with h5py.File(path, "w") as f:
        f["gradient"] = np.zeros((64, 64))
    with pytest.raises(weanj.InputFileError, match="lacks attribute"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi")
    other = weanj.save_gradient("02-gauss-seidel", "jax-lex", _gradient())
    assert other == project / "results" / "02-gauss-seidel" / "gradients" / "jax-lex.h5"
    # A file problem now (InputFileError, was InputError): the file says another example.
    with pytest.raises(weanj.InputFileError) as excinfo:
        weanj.load_gradient(EXAMPLE, "jax-jacobi", path=other)
    assert str(excinfo.value).startswith(
        f"gradient file {other} holds a gradient of '02-gauss-seidel', not of 01-jacobi"
    )


def test_stored_gradients_lists_files_not_temporaries(project):
    a = weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(1.0))
    b = weanj.save_gradient(EXAMPLE, "other-jacobi", _gradient(2.0), family="jacobi")
    (a.parent / ".jax-jacobi.h5.abc.tmp").write_bytes(b"half written")
    listed = weanj.stored_gradients(EXAMPLE, recorded=False)
    assert sorted(s.path for s in listed) == sorted([a, b])
    assert {s.variant: float(s.gradient[0, 0]) for s in listed} == {
        "jax-jacobi": 1.0,
        "other-jacobi": 2.0,
    }


def test_atomic_path_keeps_the_old_file_on_failure(tmp_path):
    """(`force=True`: the file is no weanj file, which atomic_path otherwise refuses to
    replace, tests/test_not_theirs.py.)"""
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_path(target, force=True) as tmp:
        tmp.write_bytes(b"new but unfinished")
        raise RuntimeError("crash mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]
    with atomic_path(target, force=True) as tmp:
        tmp.write_bytes(b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


# --- other processes ------------------------------------------------------------------

# A writer that waits for the go file, then saves its variant `rounds` times, each time
# a constant gradient (base + round), so a reader can tell a whole file from a torn one.
_WRITER = textwrap.dedent("""
    import pathlib, sys, time
    import numpy as np, weanj
    variant, base, rounds, go = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    shape = weanj.load_inputs("01-jacobi")["theta"].shape
    print("ready", flush=True)
    while not pathlib.Path(go).exists():
        time.sleep(0.005)
    for i in range(rounds):
        weanj.save_gradient("01-jacobi", variant, np.full(shape, base + i), loss=base + i,
                            family="jacobi")
""")


def test_concurrent_writers_both_land_intact(project):
    rounds, go = 12, project / "go"
    bases = {"writer-a": 1000.0, "writer-b": 2000.0}
    with contextlib.ExitStack() as stack:
        procs = {
            name: stack.enter_context(
                subprocess.Popen(
                    [PYTHON, "-c", _WRITER, name, str(base), str(rounds), str(go)],
                    env=subprocess_env(project),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            for name, base in bases.items()
        }
        try:
            for p in procs.values():
                assert p.stdout.readline().strip() == "ready", p.stderr.read()
            go.touch()
            # Meanwhile read whatever is there: always a whole file, never a torn one.
            while any(p.poll() is None for p in procs.values()):
                for name, base in bases.items():
                    if weanj.gradient_path(EXAMPLE, name).exists():
                        stored = weanj.load_gradient(EXAMPLE, name)
                        value = stored.gradient[0, 0]
                        assert np.all(stored.gradient == value) and stored.loss == value
                        assert base <= value < base + rounds
                time.sleep(0.005)
            for p in procs.values():
                assert p.wait(timeout=300) == 0, p.stderr.read()  # a guard against a hang
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
    for name, base in bases.items():
        stored = weanj.load_gradient(EXAMPLE, name)
        np.testing.assert_array_equal(stored.gradient, np.full((64, 64), base + rounds - 1))
        assert stored.variant == name and stored.loss == base + rounds - 1
    folder = weanj.gradient_path(EXAMPLE, "writer-a").parent
    assert sorted(p.name for p in folder.iterdir()) == ["writer-a.h5", "writer-b.h5"]


# A writer that stops inside the atomic write, after the gradient went into the temporary
# file and before the rename, and says so; the test then SIGKILLs it.
_STOPPED_WRITER = textwrap.dedent("""
    import time
    import h5py, numpy as np, weanj
    create_dataset = h5py.Group.create_dataset
    def create_and_stop(self, *args, **kwargs):
        dataset = create_dataset(self, *args, **kwargs)
        self.file.flush()
        print("inside", flush=True)
        time.sleep(120)
    h5py.Group.create_dataset = create_and_stop
    weanj.save_gradient("01-jacobi", "jax-jacobi", np.full((64, 64), 2.0), loss=2.0)
""")


def test_killed_writer_leaves_the_previous_file(project):
    path = weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(1.0), loss=1.0)
    before = path.read_bytes()
    with subprocess.Popen(
        [PYTHON, "-c", _STOPPED_WRITER],
        env=subprocess_env(project),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as p:
        try:
            ready, _, _ = select.select([p.stdout], [], [], 60)
            assert ready and p.stdout.readline().strip() == "inside", p.stderr.read()
            temporaries = [q for q in path.parent.iterdir() if q.name.endswith(".tmp")]
            assert len(temporaries) == 1 and temporaries[0].stat().st_size > 0
        finally:
            p.kill()  # SIGKILL: no cleanup runs
    assert p.returncode == -9
    assert path.read_bytes() == before
    stored = weanj.load_gradient(EXAMPLE, "jax-jacobi")
    np.testing.assert_array_equal(stored.gradient, _gradient(1.0))
    assert stored.loss == 1.0
    # The leftover temporary file does not disturb the store or the next save.
    assert [s.variant for s in weanj.stored_gradients(EXAMPLE, recorded=False)] == ["jax-jacobi"]
    weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(3.0), loss=3.0)
    assert weanj.load_gradient(EXAMPLE, "jax-jacobi").loss == 3.0


# --- what a gradient file must be (issue 17) ------------------------------------------


def _edit(path, attrs):
    with h5py.File(path, "r+") as f:
        for key, value in attrs.items():
            if value is None:
                del f.attrs[key]
            else:
                f.attrs[key] = value


@pytest.mark.parametrize(
    "attrs, words",
    [
        ({"loss": "abc"}, "attribute loss must be a number, got 'abc'"),
        ({"loss": np.array([1.0, 2.0])}, "attribute loss must be a number"),
        ({"K": "abc"}, "attribute K must be an integer, got 'abc'"),
        ({"K": np.nan}, "attribute K must be an integer, got nan"),
        ({"K": np.uint64(2**64 - 1)}, "attribute K must be at most 2147483647"),
        ({"K": np.array([20, 20])}, "attribute K must be an integer"),
        ({"K": 20.0}, "attribute K must be an integer, got 20.0"),
        ({"K": 21}, "its key does not match its attributes (modified or corrupt)"),
        ({"K": None}, "lacks the parameter attribute(s) K"),
        ({"variant": np.array([1, 2])}, "attribute variant must be one line of text"),
        ({"variant": "../../x"}, "attribute variant '../../x' is not a safe name"),
        ({"family": 3}, "attribute family must be one line of text, got 3"),
        ({"family": "a\nb"}, "attribute family must be one line of text"),
        ({"dtype": "int8"}, "attribute dtype must be float32 or float64"),
        # said float32 in the float64 store: refused for where it lies, before its values
        # (test_a_float32_file_in_the_float64_store_is_a_file_problem: the values' check)
        (
            {"dtype": "float32"},
            "holds a float32 gradient but lies in the float64 store (results/01-jacobi/gradients/)",
        ),
        ({"inputs_sha256": "abc"}, "inputs_sha256 must be 64 hexadecimal digits"),
        ({"inputs_sha256": "ab" * 32}, "its key does not match its attributes"),
        ({"key": "zz"}, "attribute key must be 64 hexadecimal digits, got 'zz'"),
        ({"key": "0" * 64}, "its key does not match its attributes (modified or corrupt)"),
        ({"key": None}, "lacks attribute key"),
        ({"format": 3}, "format 3 is not one this weanj reads (1 or 2)"),
        ({"format": "2"}, "format '2' is not one this weanj reads"),
        ({"example": "99-nope"}, "holds a gradient of '99-nope', not of 01-jacobi"),
        ({"created": None, "backend": 1.5}, "attribute backend must be one line of text"),
        ({b"\xff\xfe": 1}, "name is not UTF-8 text"),
        ({"variant": None}, "lacks attribute(s) variant"),
        ({"family": "rb"}, "says jax-jacobi is of family 'rb', but it is registered in family"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_mistyped_gradient_attributes_are_refused(project, attrs, words):
    path = weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), loss=1.0)
    _edit(path, attrs)
    with pytest.raises(weanj.InputFileError) as excinfo:
        weanj.load_gradient(EXAMPLE, "jax-jacobi")
    message = str(excinfo.value)
    assert words in message and str(path) in message and "\n" not in message
    assert f"`weanj run {EXAMPLE} jax-jacobi`" in message  # what recomputes it


@pytest.mark.parametrize(
    "levels, words",
    [
        (np.zeros((63, 64)), "noise/theta is not a level per entry of its gradient"),
        (np.full((64, 64), -1.0), "noise/theta is not a level per entry"),
        (np.full((64, 64), np.nan), "noise/theta is not a level per entry"),
        (np.zeros((64, 64), np.int64), "noise/theta is not a level per entry"),
    ],
    ids=("shape", "negative", "nan", "integers"),
)
def test_entries_levels_are_kept_and_a_malformed_one_is_refused(project, levels, words):
    """Each entry's rounding level (`noise`, beside `gradient`) is written with a run's
    gradient and read back as it was; one not shaped, typed and signed as a level is
    refused in one line."""
    from weanj._io._store import write_gradient
    from weanj._places import places

    g = weanj.evaluate(EXAMPLE, "jax-jacobi")
    assert g.noise_entries["theta"].shape == g.gradients["theta"].shape
    path = write_gradient(g, weanj.gradient_path(EXAMPLE, "jax-jacobi"), places())
    back = weanj.load_gradient(EXAMPLE, "jax-jacobi")
    assert np.array_equal(back.noise_entries["theta"], g.noise_entries["theta"])
    with h5py.File(path, "r+") as f:
        del f["noise"]
        f["noise"] = levels
    with pytest.raises(weanj.InputFileError) as excinfo:
        weanj.load_gradient(EXAMPLE, "jax-jacobi")
    message = str(excinfo.value)
    assert words in message and str(path) in message and "\n" not in message


def test_a_text_gradient_and_a_mistyped_digest_are_refused(project):
    path = weanj.gradient_path(EXAMPLE, "jax-jacobi")
    path.parent.mkdir(parents=True)
    weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), path=path)
    with h5py.File(path, "r+") as f:
        del f["gradient"]
        f["gradient"] = "not numbers"
    with pytest.raises(weanj.InputFileError, match=r"theta is \|S11, but a float64 gradient is"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi")
    weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), path=path)
    with h5py.File(path, "r+") as f:
        f["gradient"].attrs["sha256"] = np.array([1, 2])
    with pytest.raises(weanj.InputFileError, match="sha256 attribute of gradient is not text"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi")


def test_a_flipped_byte_in_the_values_is_detected(project):
    path = weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), loss=1.0)
    with h5py.File(path, "r") as f:
        offset = f["gradient"].id.get_offset()  # where the raw values start
    data = bytearray(path.read_bytes())
    data[offset + 8 * 100 + 3] ^= 0x01  # one bit of element 100
    path.write_bytes(bytes(data))
    with pytest.raises(weanj.InputFileError, match="do not match their recorded sha256"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi")


def test_saving_a_registered_variant_under_another_family_is_refused(project):
    with pytest.raises(weanj.InputError, match="registered in family 'jacobi', not 'rb'"):
        weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), family="rb")


def test_a_gradient_of_another_example_in_the_store_is_refused(project):
    other = weanj.save_gradient("02-gauss-seidel", "jax-lex", _gradient())
    folder = project / "results" / EXAMPLE / "gradients"
    folder.mkdir(parents=True)
    (folder / "jax-lex.h5").write_bytes(other.read_bytes())
    with pytest.raises(weanj.InputFileError, match="holds a gradient of '02-gauss-seidel', not of"):
        weanj.stored_gradients(EXAMPLE)
    scan = scan_store(EXAMPLE)  # the judge's view: a problem to report, the rest still read
    problems = [
        (p.name, "of '02-gauss-seidel', not of 01-jacobi" in why) for p, why in scan.problems
    ]
    assert problems == [("jax-lex.h5", True)]
    assert [g.label for g in scan.gradients] == ["recorded/jax-jacobi"]


# --- where a gradient may be written ------------------------------------------------


def test_save_gradient_refuses_places_that_are_not_gradient_files(project, tmp_path):
    g = _gradient()
    shared = project / "shared_inputs" / f"{EXAMPLE}.h5"
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    (tmp_path / "file").write_text("a file")
    cases = {
        "": "the output path is empty",
        str(tmp_path): "is a directory",
        str(tmp_path / "file" / "g.h5"): "is a file, not a directory",
        str(shared): "(the shared inputs)",
        str(project / "shared_inputs" / "new.h5"): "(the shared inputs)",
        str(notes): "not a readable weanj gradient file",
    }
    before = {p: p.read_bytes() for p in (shared, notes)}
    for path, words in cases.items():
        with pytest.raises(weanj.InputFileError) as excinfo:
            weanj.save_gradient(EXAMPLE, "jax-jacobi", g, path=path)
        assert words in str(excinfo.value), path
    assert {p: p.read_bytes() for p in before} == before
    assert not (project / "shared_inputs" / "new.h5").exists()
    # A gradient file is replaced, as before.
    out = weanj.save_gradient(EXAMPLE, "jax-jacobi", g, loss=1.0, path=tmp_path / "g.h5")
    weanj.save_gradient(EXAMPLE, "jax-jacobi", g, loss=2.0, path=out)
    assert weanj.load_gradient(EXAMPLE, "jax-jacobi", path=out).loss == 2.0


def test_an_unwritable_place_is_one_error(project, tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("tempfile.mkstemp", refuse)
    with pytest.raises(weanj.InputFileError, match="Permission denied"):
        weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), path=tmp_path / "g.h5")


# --- temporary files of killed writers -----------------------------------------------


def test_stale_temporaries_are_removed_by_the_next_write(project):
    from weanj._io._atomic import STALE_AFTER_S

    folder = project / "results" / EXAMPLE / "gradients"
    folder.mkdir(parents=True)
    old = time.time() - STALE_AFTER_S - 60
    names = {
        ".jax-jacobi.h5.k3j_9x0a.tmp": old,  # a killed Python writer (mkstemp)
        ".julia-jacobi.h5.31337.tmp": old,  # a killed Julia writer (julia/io.jl)
        ".jax-rb.h5.abcdefgh.tmp": time.time() - 60,  # a live writer's
        ".notes.txt.abcdefgh.tmp": old,  # not one of weanj's files
        "jax-lex.h5.tmp": old,  # not a writer's temporary name
    }
    for name, mtime in names.items():
        (folder / name).write_bytes(b"half written")
        os.utime(folder / name, (mtime, mtime))
    weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient())
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [".jax-rb.h5.abcdefgh.tmp", ".notes.txt.abcdefgh.tmp", "jax-lex.h5.tmp", "jax-jacobi.h5"]
    )


# --- the provenance key -----------------------------------------------------------------


def test_the_key_of_the_shared_inputs(project):
    inputs = weanj.read_inputs(EXAMPLE)
    digest = _shared_sha(project)
    assert inputs.digest == digest
    for dtype in ("float64", "float32"):
        assert inputs.key(dtype) == provenance_key(digest, {"K": 20}, dtype)
    assert inputs.key("float64") != inputs.key("float32")
    other = inputs.with_params({"K": 3})
    assert other.digest == digest  # the same arrays, another parameter: other inputs
    assert other.key() == provenance_key(digest, {"K": 3}, "float64") != inputs.key()
    with pytest.raises(weanj.InputError, match="K must be an integer, got 3.0"):
        inputs.with_params({"K": 3.0})
    with pytest.raises(weanj.InputError, match="dtype must be float64 or float32"):
        inputs.key("float16")


def test_matches_decides_same_inputs_by_the_key(project, tmp_path):
    import dataclasses

    inputs = weanj.read_inputs(EXAMPLE)
    g64 = read_gradient_file(weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient()))
    g32 = read_gradient_file(
        weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(seed=2).astype("f4"))
    )
    assert inputs.matches(g64) and inputs.matches(g32)
    # Another K: saved apart, in runs/, named by what differs, as `weanj run` names it.
    apart = weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), params={"K": 3})
    key3 = provenance_key(_shared_sha(project), {"K": 3}, "float64")
    assert apart == project / "results" / EXAMPLE / "runs" / "jax-jacobi-K3.h5"
    assert not inputs.matches(read_gradient_file(apart))
    assert read_gradient_file(apart).key == key3
    # A file an older weanj named by its key reads as before (by contents, not by name).
    old = apart.with_name(f"jax-jacobi-key-{key3[:12]}.h5")
    apart.rename(old)
    assert weanj.load_gradient(EXAMPLE, "jax-jacobi", path=old, allow_stale=True).key == key3
    elsewhere = weanj.save_gradient(
        EXAMPLE, "jax-jacobi", _gradient(), inputs_sha256="cd" * 32, path=tmp_path / "g.h5"
    )
    assert not inputs.matches(read_gradient_file(elsewhere))
    # The key is of a dtype: a float64 key claimed by a float32 gradient is not a match.
    assert not inputs.matches(dataclasses.replace(g64, dtype="float32"))
    assert not inputs.matches(dataclasses.replace(g64, dtype="float16"))
    assert not inputs.matches(dataclasses.replace(g64, key=key3))


# --- format-1 gradient files (written by the weanj before format 2) ---------------------


@pytest.mark.parametrize(
    "name, example, variant",
    [
        ("recorded-jax-jacobi.h5", "01-jacobi", "jax-jacobi"),
        ("recorded-jax-thomas.h5", "04-tridiagonal", "jax-thomas"),
    ],
    ids=["one-array", "group"],
)
def test_a_format_1_reference_matches_the_shared_inputs_by_its_legacy_digest(
    project, name, example, variant
):
    target = project / "results" / example / "recorded" / f"old-{variant}.h5"
    shutil.copyfile(FORMAT1 / name, target)
    with h5py.File(target, "r") as f:
        assert "format" not in f.attrs and "key" not in f.attrs  # what makes it format 1
    g = read_gradient_file(target, example)
    assert g.format == 1 and g.source == "recorded" and g.label == f"recorded/old-{variant}"
    shared = weanj.read_inputs(example)
    raw = raw_datasets(project / "shared_inputs" / f"{example}.h5")
    legacy = format1_sha256(*(raw[a] for a in shared.example.arrays))
    assert g.inputs_sha256 == legacy and legacy != shared.digest
    assert g.key == provenance_key(legacy, dict(shared.params), "float64")
    assert shared.matches(g)
    assert weanj.load_gradient(example, variant, path=target).variant == variant  # not stale
    # The same values as the format-2 reference recorded on these inputs.
    current = read_gradient_file(
        project / "results" / example / "recorded" / f"{variant}.h5", example
    )
    assert current.format == 2 and shared.matches(current) and current.key == shared.key()
    assert set(g.gradients) == set(current.gradients) == set(shared.example.wrt_names)
    for array, values in current.gradients.items():
        np.testing.assert_array_equal(g.gradients[array], values)
    assert g.loss == current.loss
    # Nothing in the directory listing counts twice or goes unread.
    labels = sorted(s.label for s in scan_store(example).gradients)
    assert labels == sorted([f"recorded/{variant}", f"recorded/old-{variant}"])


def test_a_format_1_reference_is_checked_against_a_plain_numpy_jacobi(project):
    g = read_gradient_file(FORMAT1 / "recorded-jax-jacobi.h5")
    inputs = weanj.read_inputs(EXAMPLE)
    loss, gradient = jacobi_loss_and_gradient(
        np.array(inputs.arrays["theta"]), np.array(inputs.arrays["uobs"]), inputs.params["K"]
    )
    assert g.loss == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(g.gradient, gradient, rtol=0, atol=1e-13 * np.abs(gradient).max())


def test_a_format_1_file_of_another_parameter_is_stale(project):
    target = project / "results" / EXAMPLE / "recorded" / "old.h5"
    shutil.copyfile(FORMAT1 / "recorded-jax-jacobi.h5", target)
    with h5py.File(target, "r+") as f:
        f.attrs["K"] = np.int64(21)  # format 1 has no key to disagree: the file reads
    g = read_gradient_file(target)
    assert g.params == {"K": 21} and not weanj.read_inputs(EXAMPLE).matches(g)
    with pytest.raises(weanj.StaleGradientError, match="K=21"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi", path=target)


# --- typed gradient files: several arrays, a complex one, typed parameters ---------------


@pytest.fixture
def typed(project):
    """`helpers.typed_example` with one JAX variant, its shared inputs in the project."""
    with registered_typed(variant=True, inputs=True) as ex:
        yield ex


def test_typed_gradient_file(typed, project):
    inputs = weanj.read_inputs(TYPED)
    params = {"S": 3, "nu": 0.25, "upwind": True}
    assert dict(inputs.params) == params
    expected = typed_gradient(dict(inputs.arrays), **params)
    ev = weanj.evaluate(TYPED, "jax-typed")
    assert ev.gradients["z"].dtype == np.complex128 and ev.gradients["x"].dtype == np.float64
    # ∂L/∂Re z + i ∂L/∂Im z, not the conjugate jax.grad returns.
    np.testing.assert_allclose(ev.gradients["z"], expected["z"], rtol=1e-14, atol=0)
    np.testing.assert_allclose(ev.gradients["x"], expected["x"], rtol=1e-14, atol=0)
    assert ev.key == inputs.key() and inputs.matches(ev)

    path = weanj.save_gradient(TYPED, "jax-typed", ev.gradients, loss=ev.loss)
    assert path == project / "results" / TYPED / "gradients" / "jax-typed.h5"
    with h5py.File(path, "r") as f:
        assert sorted(f["gradient"]) == ["x", "z"]
        assert f["gradient/x"].dtype == np.dtype("<f8")
        assert f["gradient/z"].dtype == np.dtype("<c16")
        for array in ("x", "z"):
            assert f[f"gradient/{array}"].attrs["sha256"] == _values_sha256(ev.gradients[array])
        attrs = dict(f.attrs)
    assert (type(attrs["S"]), type(attrs["nu"]), type(attrs["upwind"])) == (
        np.int64,
        np.float64,
        np.bool_,
    )
    raw = raw_datasets(project / "shared_inputs" / f"{TYPED}.h5")
    digest = inputs_sha256([(a, raw[a]) for a in typed.arrays])
    assert attrs["inputs_sha256"] == digest
    assert attrs["key"] == provenance_key(digest, params, "float64")

    stored = weanj.load_gradient(TYPED, "jax-typed")
    assert stored.params == params
    assert {k: type(v) for k, v in stored.params.items()} == {"S": int, "nu": float, "upwind": bool}
    for array in ("x", "z"):
        np.testing.assert_array_equal(stored.gradients[array], ev.gradients[array])
    assert stored.gradient.keys() == {"x", "z"}


def test_typed_float32_gradient_is_complex64(typed, project):
    ev = weanj.evaluate(TYPED, "jax-typed", dtype="float32")
    assert ev.gradients["z"].dtype == np.complex64 and ev.gradients["x"].dtype == np.float32
    expected = typed_gradient(dict(weanj.read_inputs(TYPED).arrays), 3, 0.25, True)
    scale = max(np.abs(expected["x"]).max(), np.abs(expected["z"]).max())
    for array in ("x", "z"):
        np.testing.assert_allclose(ev.gradients[array], expected[array], rtol=0, atol=1e-6 * scale)
    path = weanj.save_gradient(TYPED, "jax-typed", ev.gradients)
    assert path == project / "results" / TYPED / "gradients" / "float32" / "jax-typed.h5"
    with h5py.File(path, "r") as f:
        assert f["gradient/z"].dtype == np.dtype("<c8") and f.attrs["dtype"] == "float32"
    # A complex128 z with a float32 x: one dtype under test, or none.
    with pytest.raises(weanj.InputError, match="mix float32 and float64"):
        weanj.save_gradient(
            TYPED, "jax-typed", {"x": ev.gradients["x"], "z": ev.gradients["z"].astype(complex)}
        )
    with pytest.raises(weanj.InputError, match=r"\(z\) has dtype float64; expected a complex"):
        weanj.save_gradient(TYPED, "jax-typed", {"x": expected["x"], "z": expected["z"].real})


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda f: f.attrs.__setitem__("nu", np.float64(0.5)), "its key does not match"),
        (lambda f: f.attrs.__setitem__("S", np.float64(3.0)), "attribute S must be an integer"),
        (lambda f: f.attrs.__setitem__("upwind", np.int64(1)), "upwind must be true or false"),
        (lambda f: f.attrs.__setitem__("nu", np.nan), "nu must be a finite number"),
        (
            lambda f: _retype(f, "gradient/z", np.float64),
            "z is float64, but a float64 gradient is complex128",
        ),
        (
            lambda f: _retype(f, "gradient/x", np.complex128),
            "x is complex128, but a float64 gradient is float64",
        ),
        (lambda f: f["gradient"].move("z", "w"), "holds gradient/w, gradient/x"),
    ],
    ids=["param", "int-param", "bool-param", "nan-param", "real-z", "complex-x", "names"],
)
def test_typed_gradient_files_are_checked_on_reading(typed, edit, words):
    arrays = dict(weanj.read_inputs(TYPED).arrays)
    path = weanj.save_gradient(TYPED, "jax-typed", typed_gradient(arrays, 3, 0.25, True))
    with h5py.File(path, "r+") as f:
        edit(f)
    with pytest.raises(weanj.InputFileError) as excinfo:
        read_gradient_file(path, TYPED)
    assert words in str(excinfo.value) and "\n" not in str(excinfo.value)


def _retype(f, where, dtype):
    """Replace a dataset by its values in another dtype, with a matching sha256."""
    values = f[where][()]
    values = values.real.astype(dtype) if np.iscomplexobj(values) else values.astype(dtype)
    del f[where]
    f[where] = values
    f[where].attrs["sha256"] = _values_sha256(values)


# --- save_gradient refuses what the reader would refuse ------------------------------


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"params": {"K": -3}}, "K must be at least 1, got -3"),
        ({"params": {"K": 5.7}}, "K must be an integer, got 5.7"),
        ({"params": {"K": 5.0}}, "K must be an integer, got 5.0"),
        ({"params": {"K": 2**31}}, "K must be at most 2147483647"),
        ({"params": {"Q": 1}}, "01-jacobi has no parameter Q"),
        ({"inputs_sha256": "zz"}, "inputs_sha256 must be 64 hexadecimal digits, got 'zz'"),
        ({"inputs_sha256": "AB" * 32}, "inputs_sha256 must be 64 hexadecimal digits"),
        ({"inputs_sha256": 5}, "inputs_sha256 must be 64 hexadecimal digits, got 5"),
        ({"backend": 5}, "backend must be one line of text, got 5"),
        ({"backend_version": "a\nb"}, "backend_version must be one line of text"),
        ({"family": "jacobi\nx"}, "not 'jacobi\\nx'"),
        ({"loss": "abc"}, "loss must be a number, got 'abc'"),
        ({"loss": np.array([1.0, 2.0])}, "loss must be a number"),
        ({"loss": float("nan")}, "the loss of jax-jacobi is nan; not saved"),
    ],
    ids=lambda v: str(v)[:24],
)
def test_save_gradient_refuses_what_the_reader_would_refuse(project, kwargs, words):
    with pytest.raises(weanj.InputError) as excinfo:
        weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), **kwargs)
    assert words in str(excinfo.value) and "\n" not in str(excinfo.value)
    assert sorted(p.name for p in (project / "results" / EXAMPLE).iterdir()) == ["recorded"]


def test_a_family_with_a_newline_is_refused_for_a_new_name(project):
    with pytest.raises(weanj.InputError, match="family must be one line of text"):
        weanj.save_gradient(EXAMPLE, "my-experiment", _gradient(), family="a\nb")


# --- the store's rules (`check_target`) ------------------------------------------------


def _results_files(project):
    return sorted(
        str(p.relative_to(project)) for p in (project / "results").rglob("*") if p.is_file()
    )


def test_the_store_refuses_files_that_are_not_its_own(project):
    results = project / "results"
    store = results / EXAMPLE / "gradients"
    g, g32 = _gradient(), _gradient(seed=3).astype(np.float32)
    refused = [
        (store / "jax-rb.h5", g, {}, "that is the store file of jax-rb (float64)"),
        (store / "jax-jacobi.h5", g32, {}, "jax-jacobi (float32) to"),
        (store / "float32" / "jax-jacobi.h5", g, {}, "store file of jax-jacobi (float32)"),
        (store / "jax-jacobi.h5", g, {"params": {"K": 3}}, "holds only gradients of the shared"),
        (store / "jax-jacobi.h5", g, {"inputs_sha256": "ab" * 32}, "holds only gradients of the"),
        (store / "float32" / "jax-jacobi.h5", g32, {"params": {"K": 3}}, "holds only gradients"),
        (results / "02-gauss-seidel" / "gradients" / "jax-jacobi.h5", g, {}, "writes only"),
        (results / "02-gauss-seidel" / "runs" / "x.h5", g, {}, "writes only"),
        (results / EXAMPLE / "x.h5", g, {}, "writes only"),
        (results / EXAMPLE / "diff" / "x.h5", g, {}, "writes only"),
        (results / EXAMPLE / "runs" / "x.txt", g, {}, "writes only"),
        (results / "x.h5", g, {}, "writes only"),
        (store / "float64" / "jax-jacobi.h5", g, {}, "writes only"),
        (store / "sub" / "deeper" / "jax-jacobi.h5", g, {}, "writes only"),
        (results / EXAMPLE / "recorded" / "new.h5", g, {"params": {"K": 3}}, "must be computed on"),
        (results / EXAMPLE / "recorded" / "jax-jacobi.h5", g, {}, "replaced only with --force"),
    ]
    before = _results_files(project)
    for path, gradient, kwargs, words in refused:
        with pytest.raises(weanj.InputFileError) as excinfo:
            weanj.save_gradient(EXAMPLE, "jax-jacobi", gradient, path=path, **kwargs)
        message = str(excinfo.value)
        assert words in message and str(path) in message and "\n" not in message, (path, message)
    assert _results_files(project) == before


def test_the_store_takes_what_belongs_there(project):
    results = project / "results" / EXAMPLE
    g, g32 = _gradient(), _gradient(seed=3).astype(np.float32)
    placed = [
        (results / "gradients" / "jax-jacobi.h5", g, {}, "store"),
        (results / "gradients" / "float32" / "jax-jacobi.h5", g32, {}, "store"),
        (results / "runs" / "anything.h5", g, {"params": {"K": 3}}, "file"),
        (results / "runs" / "other.h5", g32, {"inputs_sha256": "ab" * 32}, "file"),
        (results / "recorded" / "jax-jacobi-float32.h5", g32, {}, "recorded"),
        (results / "recorded" / "mine.h5", g, {}, "recorded"),
    ]
    for path, gradient, kwargs, source in placed:
        assert weanj.save_gradient(EXAMPLE, "jax-jacobi", gradient, path=path, **kwargs) == path
        stored = read_gradient_file(path)
        assert stored.source == source and stored.gradient.dtype == gradient.dtype, path
        np.testing.assert_array_equal(stored.gradient, gradient)
    # check_target itself: the same answer for the same question.
    shared_key = weanj.read_inputs(EXAMPLE).key("float64")
    stored = read_gradient_file(results / "gradients" / "jax-jacobi.h5")
    assert check_target(results / "gradients" / "jax-jacobi.h5", stored, shared_key) == (
        results / "gradients" / "jax-jacobi.h5"
    )
    with pytest.raises(weanj.InputFileError, match="holds only gradients of the shared inputs"):
        check_target(results / "gradients" / "jax-jacobi.h5", stored, shared_key=None)


def test_a_recorded_reference_is_replaced_only_with_force_and_kept_aside(project):
    target = project / "results" / EXAMPLE / "recorded" / "jax-jacobi.h5"
    before = target.read_bytes()
    first, second = _gradient(seed=4), _gradient(seed=5)
    with pytest.raises(weanj.InputFileError, match="replaced only with --force"):
        weanj.save_gradient(EXAMPLE, "jax-jacobi", first, path=target)
    assert target.read_bytes() == before
    assert weanj.save_gradient(EXAMPLE, "jax-jacobi", first, path=target, force=True) == target
    aside = sorted(p for p in target.parent.iterdir() if p != target)
    assert len(aside) == 1
    assert re.fullmatch(r"jax-jacobi\.h5\.replaced-\d{8}T\d{6}Z?", aside[0].name), aside[0].name
    assert aside[0].read_bytes() == before  # the old reference, byte for byte
    recorded = weanj.load_gradient(EXAMPLE, "jax-jacobi", recorded=True)
    np.testing.assert_array_equal(recorded.gradient, first)
    assert recorded.source == "recorded"
    # A second replacement within the same second keeps both older files.
    weanj.save_gradient(EXAMPLE, "jax-jacobi", second, path=target, force=True)
    aside = sorted(p for p in target.parent.iterdir() if p != target)
    assert len(aside) == 2 and len({p.name for p in aside}) == 2
    assert before in {p.read_bytes() for p in aside}
    # Kept-aside files are not gradient files of the store: nothing reads them.
    scan = scan_store(EXAMPLE)
    assert [g.label for g in scan.gradients] == ["recorded/jax-jacobi"] and scan.problems == []
    np.testing.assert_array_equal(scan.gradients[0].gradient, second)


# --- reading the store: unreadable files are the judge's problems ---------------------


def test_scan_store_reports_unreadable_files_and_reads_the_rest(project):
    good = weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(1.0))
    weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(2.0).astype(np.float32))
    weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), params={"K": 3})  # runs/: unread
    folder = good.parent
    (folder / "broken.h5").write_bytes(b"not HDF5 at all")
    (folder / "float32" / "torn.h5").write_bytes(good.read_bytes()[:1000])
    os.symlink(good, folder / "link.h5")
    shutil.copyfile(good, folder / "tampered.h5")
    with h5py.File(folder / "tampered.h5", "r+") as f:
        f.attrs["key"] = "0" * 64

    scan = scan_store(EXAMPLE)
    problems = {p.name: why for p, why in scan.problems}
    assert set(problems) == {"broken.h5", "link.h5", "tampered.h5", "torn.h5"}
    for name, why in problems.items():
        assert name in why and "\n" not in why
    assert "not a regular file" in problems["link.h5"]
    assert "its key does not match its attributes" in problems["tampered.h5"]
    assert sorted(g.label for g in scan.gradients) == [
        "jax-jacobi",
        "jax-jacobi@float32",
        "recorded/jax-jacobi",
    ]
    # stored_gradients (the notebook's listing) still raises the first problem.
    with pytest.raises(weanj.InputFileError, match="broken.h5"):
        weanj.stored_gradients(EXAMPLE)
    assert scan_store(EXAMPLE, produced=False).problems == []
    assert [g.label for g in weanj.stored_gradients(EXAMPLE, produced=False)] == [
        "recorded/jax-jacobi"
    ]


# --- a file's dtype is where it lies (issue 34) ----------------------------------------------


def test_a_float32_file_in_the_float64_store_is_a_file_problem(project, tmp_path):
    """`gradients/jax-jacobi.h5` holding a float32 gradient (a float32 file of the shared
    inputs copied there) was judged at the float32 tolerance and passed. The reader
    refuses it for where it lies (and a float64 file in the float32 store likewise), and
    the judge reports those files and compares nothing with them."""
    g32, g64 = _gradient(seed=6).astype(np.float32), _gradient(seed=7)
    f32 = weanj.save_gradient(EXAMPLE, "jax-jacobi", g32, loss=1.0, path=tmp_path / "a.h5")
    f64 = weanj.save_gradient(EXAMPLE, "jax-jacobi", g64, loss=1.0, path=tmp_path / "b.h5")
    in64, in32 = (weanj.gradient_path(EXAMPLE, "jax-jacobi", dtype=d) for d in DTYPES)
    in32.parent.mkdir(parents=True)
    shutil.copyfile(f32, in64)
    shutil.copyfile(f64, in32)
    words = {
        in64: "holds a float32 gradient but lies in the float64 store "
        "(results/01-jacobi/gradients/)",
        in32: "holds a float64 gradient but lies in the float32 store "
        "(results/01-jacobi/gradients/float32/)",
    }
    for path, expected in words.items():
        with pytest.raises(weanj.InputFileError) as excinfo:
            read_gradient_file(path)
        message = str(excinfo.value)
        assert message.startswith(f"gradient file {path} {expected}") and "\n" not in message
        flag = "" if path == in64 else " --dtype float32"
        assert f"recompute it with `weanj run {EXAMPLE} jax-jacobi{flag}`" in message
    with pytest.raises(weanj.InputFileError, match="lies in the float64 store"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi")

    judgement = weanj.diff(EXAMPLE)
    ej = judgement[EXAMPLE]
    files = {j.case: j for j in ej.of_kind("file")}
    for label, path in (("jax-jacobi", in64), ("jax-jacobi@float32", in32)):
        j = files[f"{EXAMPLE}::file::{label}"]
        assert j.verdict == weanj.Verdict.FAIL and words[path] in j.reason, (label, j)
    # Neither file is a subject: no pair was judged with it, at any tolerance.
    assert sorted(ej.subjects) == ["recorded/jax-jacobi"]
    assert ej.of_kind("pair") == []
    assert ej.verdict == weanj.Verdict.FAIL and judgement.exit_code == 1
    data = judgement.to_json()["examples"][0]
    assert {f["case"]: f["verdict"] for f in data["files"]} == {
        f"{EXAMPLE}::file::jax-jacobi": "FAIL",
        f"{EXAMPLE}::file::jax-jacobi@float32": "FAIL",
        f"{EXAMPLE}::file::recorded/jax-jacobi": "ok",
    }


def test_outside_the_store_a_dtype_attribute_must_match_the_values(project, tmp_path):
    """Where no folder says the dtype, the values must be of the dtype the file says."""
    path = weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), path=tmp_path / "g.h5")
    key32 = provenance_key(_shared_sha(project), {"K": 20}, "float32")
    _edit(path, {"dtype": "float32", "key": key32})
    with pytest.raises(weanj.InputFileError) as excinfo:
        read_gradient_file(path)
    assert "theta is float64, but a float32 gradient is float32" in str(excinfo.value)


# --- only the Julia worker writes a Julia variant's file (issue 33) ---------------------------


def test_save_gradient_refuses_a_julia_variants_name(project):
    before = sorted(project.rglob("*"))
    for kwargs in ({}, {"path": project / "results" / EXAMPLE / "runs" / "mine.h5"}):
        with pytest.raises(weanj.InputError) as excinfo:
            weanj.save_gradient(EXAMPLE, "julia-jacobi", _gradient(), loss=1.0, **kwargs)
        message = str(excinfo.value)
        assert message.startswith(
            "julia-jacobi is a Julia variant: only the Julia worker writes a gradient file that "
            "says backend julia"
        )
        assert "\n" not in message and "under another name" in message
    assert sorted(project.rglob("*")) == before
    # under a name of its own (and the family), the same gradient is kept
    mine = weanj.save_gradient(EXAMPLE, "my-julia-run", _gradient(), family="jacobi")
    assert weanj.load_gradient(EXAMPLE, "my-julia-run").path == mine


# --- weanj run --out -------------------------------------------------------------------


def _permission_denied(*args, **kwargs):
    raise PermissionError(13, "Permission denied")


def _run_cli(capsys, *argv):
    code = main(["run", EX, "jax-jacobi", "--K", "2", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_out_places_that_are_not_gradient_files_are_refused(project, tmp_path, capsys):
    mine = write_h5(
        tmp_path / "mine.h5", attrs={"K": 2}, theta=np.ones((4, 4)), uobs=np.ones((4, 4))
    )
    shared = project / "shared_inputs" / f"{EX}.h5"
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    (tmp_path / "a-file").write_text("a file")
    before = {p: p.read_bytes() for p in (mine, shared, notes)}
    cases = [
        (["--out", str(tmp_path)], "is a directory"),
        (["--out", ""], "the output path is empty"),
        (["--out", str(tmp_path / "a-file" / "g.h5")], "is a file, not a directory"),
        (["--inputs", str(mine), "--out", str(mine)], "not a readable weanj gradient file"),
        (["--out", str(shared)], "(the shared inputs)"),
        (["--out", str(notes)], "not a readable weanj gradient file"),
    ]
    for argv, words in cases:
        code, out, err = _run_cli(capsys, *argv)
        assert code == 2 and out == "", argv
        assert_one_line_error(err, words)
    assert {p: p.read_bytes() for p in before} == before
    # An unwritable folder (as root, permissions do not bind: the write is made to fail).
    with pytest.MonkeyPatch.context() as m:
        m.setattr("tempfile.mkstemp", _permission_denied)
        code, out, err = _run_cli(capsys, "--out", str(tmp_path / "g.h5"))
    assert code == 2 and out == ""
    assert_one_line_error(err, "cannot write gradient file", "Permission denied")
    # An existing gradient file is replaced.
    out_file = tmp_path / "g.h5"
    assert _run_cli(capsys, "--out", str(out_file))[0] == 0
    assert _run_cli(capsys, "--out", str(out_file))[0] == 0
    assert weanj.load_gradient(EX, "jax-jacobi", path=out_file, allow_stale=True).params == {"K": 2}


# HDF5's own report of a full disk, as h5py raises it (no errno; it runs over two lines).
FULL_DISK = (
    "Unable to synchronously create dataset (file write failed: time = Tue Dec  8 00:22:37 "
    "2026\n, filename = '{tmp}', file descriptor = 4, errno = 28, error message = 'No space "
    "left on device', buf = 0x7f349c1b3688, total write size = 96, bytes this sub-write = 96, "
    "offset = 0)"
)


def test_a_full_disk_is_one_line_naming_the_file(project, tmp_path, capsys, monkeypatch):
    """A stand-in for a full disk (the dataset's write raises what h5py raises then): one
    line naming the file and "no space left", not HDF5's report over three lines; nothing
    is left behind (the temporary file is removed)."""
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "g.h5"

    def full(f, *args, **kwargs):
        raise OSError(FULL_DISK.format(tmp=f.filename))

    monkeypatch.setattr("weanj._io._store.write_array", full)
    code, out, err = _run_cli(capsys, "--out", str(target))
    assert code == 2 and out == "", err
    assert err.strip() == (
        f"weanj: error: cannot write gradient file {target}: no space left on the device"
    )
    assert list((tmp_path / "out").iterdir()) == []


# --- the store holds only gradients of the shared inputs -------------------------------


def test_runs_on_other_inputs_are_kept_apart(project, tmp_path, capsys):
    results = project / "results" / EX
    K = weanj.load_inputs(EX)["K"]
    mine = write_h5(tmp_path / "mine.h5", theta=np.ones((4, 4)), uobs=np.zeros((4, 4)))
    copy = shutil.copyfile(project / "shared_inputs" / f"{EX}.h5", tmp_path / "copy.h5")
    sha = inputs_sha256([("theta", np.ones((4, 4))), ("uobs", np.zeros((4, 4)))])[:12]
    assert weanj.load_inputs(EX, mine)["sha256"][:12] == sha
    cases = [
        ([], results / "gradients" / "jax-jacobi.h5"),
        (["--K", str(K)], results / "gradients" / "jax-jacobi.h5"),
        (["--inputs", str(copy)], results / "gradients" / "jax-jacobi.h5"),
        (["--K", "3"], results / "runs" / "jax-jacobi-K3.h5"),
        # float32 on the shared inputs is store material too, in its own folder.
        (["--dtype", "float32"], results / "gradients" / "float32" / "jax-jacobi.h5"),
        (["--K", "3", "--dtype", "float32"], results / "runs" / "jax-jacobi-K3-float32.h5"),
        (["--inputs", str(mine)], results / "runs" / f"jax-jacobi-inputs-{sha}.h5"),
        (
            ["--inputs", str(mine), "--K", "3", "--dtype", "float32"],
            results / "runs" / f"jax-jacobi-inputs-{sha}-K3-float32.h5",
        ),
    ]
    for argv, where in cases:
        assert main(["run", EX, "jax-jacobi", *argv]) == 0
        out, _ = capsys.readouterr()
        assert f"saved {where}" in out, (argv, out)
    assert sorted(p.name for p in (results / "gradients").iterdir()) == ["float32", "jax-jacobi.h5"]
    assert sorted(p.name for p in (results / "gradients" / "float32").iterdir()) == [
        "jax-jacobi.h5"
    ]
    # The store holds the shared-inputs gradient: `weanj diff` has nothing stale to refuse.
    assert main(["diff", EX]) == 0
    capsys.readouterr()


def test_evaluation_says_why_it_was_kept_apart(project):
    from weanj._pipeline.records._store_writes import apart_note, differences
    from weanj._pipeline.records._store_writes import outside_store_path as default_path

    here = places()
    shared = weanj.read_inputs(EX)
    ev = weanj.evaluate(EX, "jax-jacobi", params={"K": 3}, dtype="float32")
    assert differences(ev, shared) == ["K3", "float32"] and not shared.matches(ev)
    note = apart_note(ev, shared)
    assert "not saved to the store" in note and "K3, float32" in note
    assert default_path(ev, shared, here) == (
        project / "results" / EX / "runs" / "jax-jacobi-K3-float32.h5"
    )
    # One naming scheme: weanj.save_gradient puts the same gradient in the same file.
    saved = weanj.save_gradient(EX, "jax-jacobi", ev.gradient, loss=ev.loss, params={"K": 3})
    assert saved == default_path(ev, shared, here)
    assert read_gradient_file(saved).key == ev.key
    # On the shared inputs, in either dtype: the store, and nothing to explain.
    for dtype in ("float64", "float32"):
        same = weanj.evaluate(EX, "jax-jacobi", dtype=dtype)
        assert shared.matches(same) and differences(same, shared) == []
        assert apart_note(same, shared) == ""
        path = default_path(same, shared, here)
        assert path == weanj.gradient_path(EX, "jax-jacobi", dtype=dtype)
    same = weanj.evaluate(EX, "jax-jacobi")
    with h5py.File(weanj.save_gradient(EX, "jax-jacobi", same.gradient, loss=same.loss), "r") as f:
        assert f.attrs["inputs_sha256"] == weanj.load_inputs(EX)["sha256"]
        assert f.attrs["key"] == shared.key("float64")


# --- the store is weanj's to write ---------------------------------------------------------


def test_out_cannot_put_a_gradient_where_the_store_says_otherwise(project, capsys):
    """The `--out` cases of the issue, each refused in one line before the variant runs,
    and `--K 5` without `--out` goes to runs/, never the store."""
    results = project / "results"
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    refused = [
        (["--out", results / "02-gauss-seidel" / "gradients" / "jax-lex.h5"], "writes only"),
        (["--K", "3", "--out", results / EX / "recorded" / "jax-jacobi.h5"], "must be computed on"),
        (
            ["--K", "3", "--out", results / EX / "recorded" / "jax-jacobi.h5", "--force"],
            "computed on",
        ),
        (["--out", results / EX / "recorded" / "jax-jacobi.h5"], "replaced only with --force"),
        (
            ["--out", results / EX / "gradients" / "jax-jacobi-adjoint.h5"],
            "store file of jax-jacobi-adjoint",
        ),
        (
            ["--dtype", "float32", "--out", results / EX / "gradients" / "jax-jacobi.h5"],
            "(float32) to",
        ),
        (
            ["--K", "5", "--out", results / EX / "gradients" / "jax-jacobi.h5"],
            "holds only gradients",
        ),
    ]
    for argv, words in refused:
        code = main(["run", EX, "jax-jacobi", *map(str, argv)])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", argv
        assert_one_line_error(err, words)
    assert {p: p.read_bytes() for p in results.rglob("*") if p.is_file()} == before
    assert main(["run", EX, "jax-jacobi", "--K", "5"]) == 0
    out, _ = capsys.readouterr()
    assert f"saved {results / EX / 'runs' / 'jax-jacobi-K5.h5'}" in out
    assert not (results / EX / "gradients").exists()
    assert main(["diff", EX]) == 0  # nothing in the store to refuse as stale
    capsys.readouterr()
    # --force replaces a recorded reference computed on the shared inputs, the old one aside
    recorded = results / EX / "recorded" / "jax-jacobi.h5"
    old = recorded.read_bytes()
    assert main(["run", EX, "jax-jacobi", "--out", str(recorded), "--force"]) == 0
    assert f"saved {recorded}" in capsys.readouterr().out
    (aside,) = [
        p for p in recorded.parent.iterdir() if p.name.startswith("jax-jacobi.h5.replaced-")
    ]
    assert aside.read_bytes() == old
    assert weanj.load_gradient(EX, "jax-jacobi", recorded=True).source == "recorded"


def test_a_recorded_reference_with_two_to_the_31_steps_is_stale_and_never_run(project, monkeypatch):
    """03-advection's T = 2³¹−1 in a recorded reference (its key rewritten to match): the
    case table (`pytest --weanj`'s, check's) judges the file stale and evaluates nothing
    for it. (The bound of 5 s on the judgement is gone: no evaluation at all is asserted.)"""
    from weanj._pipeline.engine import _cases
    from weanj._pipeline.session import _session
    from weanj._registry import catalog

    recorded = project / "results" / "03-advection" / "recorded"
    target = recorded / "huge-T.h5"
    shutil.copyfile(recorded / "jax-muscl.h5", target)
    with h5py.File(target, "r+") as f:
        f.attrs["T"] = np.int64(2**31 - 1)
        f.attrs["key"] = provenance_key(f.attrs["inputs_sha256"], {"T": 2**31 - 1}, "float64")

    def no_evaluation(*args, **kwargs):
        raise AssertionError(f"evaluated {args} {kwargs}")

    monkeypatch.setattr(_session, "evaluate", no_evaluation)
    p = _cases.read_plan(catalog("03-advection"), places(), live=True)
    mine = [c for c in p.cases if "huge-T" in c.id or any("huge-T" in s for s in c.subjects)]
    assert [c.id for c in mine] == ["03-advection::file::recorded/huge-T"]
    assert "recorded/huge-T" not in p.subjects  # a stale file takes part in no pair
    with _session.Session() as session:
        j = _cases.judge_case(p, mine[0], session)
    assert j.verdict == weanj.Verdict.STALE and "T=2147483647 vs T=20" in j.reason


# --- readers accept what writers write, and nothing else --------------------------------


def _reshaped_reference(path, edit) -> None:
    """Replace a gradient file's values by `edit(values)`, with their right digest."""
    with h5py.File(path, "r+") as f:
        values = edit(f["gradient"][()])
        del f["gradient"]
        ds = f.create_dataset("gradient", data=values)
        ds.attrs["sha256"] = array_sha256(values)


@pytest.mark.parametrize(
    "edit, shape",
    [(lambda g: np.ascontiguousarray(g.T[:, :63]), "(64, 63)"), (lambda g: g[:32], "(32, 64)")],
    ids=["transposed", "sliced"],
)
def test_a_reference_of_the_right_digest_but_another_shape_is_a_verdict(project, edit, shape):
    _reshaped_reference(project / "results" / EX / "recorded" / "jax-jacobi.h5", edit)
    judgement = weanj.diff(EX)
    ej = judgement[EX]
    (j,) = ej.failures
    assert j.case == f"{EX}::file::recorded/jax-jacobi" and j.verdict == weanj.Verdict.FAIL
    assert j.reason == f"theta has shape {shape}, but the inputs' theta has (64, 64)"
    assert ej.verdict == weanj.Verdict.FAIL and judgement.exit_code == 1


def test_check_keeps_its_report_when_a_reference_has_another_shape(project):
    """The other cases are judged as usual; only the file fails (it used to end the check
    in a traceback)."""
    with registered_smooth() as ex:
        name = ex.name
        stored = weanj.evaluate(name, "jax-loop")
        recorded = project / "results" / name / "recorded" / "jax-loop.h5"
        recorded.parent.mkdir(parents=True)
        weanj.save_gradient(name, "jax-loop", stored.gradient, loss=stored.loss, path=recorded)
        _reshaped_reference(recorded, lambda g: g[:12])
        judgement = weanj.check(name, dtype="float64", say=lambda line: None)
    ej = judgement[name]
    verdicts = {j.case: str(j.verdict) for j in ej.judgements}
    assert verdicts == {
        f"{name}::smooth::jax-loop::run": "ok",
        f"{name}::smooth::jax-loop::taylor": "ok",
        f"{name}::smooth::jax-loop::jvp": "ok",
        f"{name}::file::recorded/jax-loop": "FAIL",
    }
    (j,) = ej.failures
    assert j.reason == "x has shape (12,), but the inputs' x has (24,)"
    assert judgement.verdicts() == verdicts and judgement.exit_code == 1 and not judgement.ok


def test_a_newline_in_a_variant_name_is_refused_at_registration_and_in_a_file(project, capsys):
    ex = weanj.example(EX)
    with pytest.raises(weanj.DefinitionError, match="must start with a letter or digit"):
        weanj.jax_variant(ex, "jax-x\nEX: ok", family="jacobi", loss=lambda theta, uobs, K: 0.0)
    assert "jax-x\nEX: ok" not in weanj.variants(EX, available_only=False)
    target = project / "results" / EX / "recorded" / "jax-jacobi.h5"
    with h5py.File(target, "r+") as f:
        f.attrs["variant"] = "jax-jacobi\n  01-jacobi: ok"
    judgement = weanj.diff(EX)
    (j,) = judgement[EX].failures
    assert j.case == f"{EX}::file::recorded/jax-jacobi" and j.verdict == weanj.Verdict.FAIL
    assert "attribute variant must be one line of text" in j.reason and str(target) in j.reason
    # the text view (the report's lines): no line injected
    assert main(["diff", EX]) == 1
    assert "  01-jacobi: ok" not in capsys.readouterr().out.splitlines()


def test_a_format_2_gradient_file_without_its_digest_is_refused(project):
    recorded = project / "results" / EX / "recorded" / "jax-jacobi.h5"
    with h5py.File(recorded, "r+") as f:
        del f["gradient"].attrs["sha256"]
    judgement = weanj.diff(EX)
    (j,) = judgement[EX].failures
    assert j.case == f"{EX}::file::recorded/jax-jacobi" and j.verdict == weanj.Verdict.FAIL
    assert f"gradient file {recorded}: gradient lacks its sha256 attribute" in j.reason
    assert judgement.exit_code == 1
