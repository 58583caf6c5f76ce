"""The gradient store: provenance, refusals, atomic writes, concurrent and killed writers."""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.metadata
import os
import select
import subprocess
import textwrap
import time

import h5py
import numpy as np
import pytest

import weanj
from weanj._atomic import atomic_path

from .helpers import PYTHON, raw_datasets, sha256_of, subprocess_env

EXAMPLE = "01-jacobi"
DESIGN_ATTRS = {
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


def _gradient(value=None, shape=None, seed=0):
    shape = shape or weanj.load_inputs(EXAMPLE)["theta"].shape
    if value is not None:
        return np.full(shape, float(value))
    return np.random.default_rng(seed).standard_normal(shape)


def _shared_sha(project):
    raw = raw_datasets(project / "shared_inputs" / f"{EXAMPLE}.h5")
    return sha256_of(raw["theta"], raw["uobs"])


def test_save_gradient_provenance(project):
    g = _gradient()
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    path = weanj.save_gradient(EXAMPLE, "jax-jacobi", g, loss=0.25)
    after = dt.datetime.now(dt.timezone.utc)
    assert path == project / "results" / EXAMPLE / "gradients" / "jax-jacobi.h5"
    with h5py.File(path, "r") as f:
        assert list(f) == ["gradient"]
        np.testing.assert_array_equal(f["gradient"][()], g)
        attrs = dict(f.attrs)
        with h5py.File(project / "shared_inputs" / f"{EXAMPLE}.h5", "r") as shared:
            K = int(shared.attrs["K"])
    assert set(attrs) == DESIGN_ATTRS
    assert attrs["loss"] == 0.25
    assert attrs["variant"] == "jax-jacobi" and attrs["family"] == "jacobi"
    assert attrs["example"] == EXAMPLE and attrs["K"] == K
    assert attrs["dtype"] == "float64"
    assert attrs["inputs_sha256"] == _shared_sha(project)
    assert attrs["backend"] == "jax"
    assert importlib.metadata.version("jax") in attrs["backend_version"]
    created = dt.datetime.fromisoformat(attrs["created"])
    assert created.tzinfo is not None and before <= created <= after

    stored = weanj.load_gradient(EXAMPLE, "jax-jacobi")
    np.testing.assert_array_equal(stored.gradient, g)
    assert (stored.loss, stored.variant, stored.family, stored.example) == (
        0.25,
        "jax-jacobi",
        "jacobi",
        EXAMPLE,
    )
    assert stored.params == {"K": K} and stored.dtype == "float64"
    assert stored.inputs_sha256 == attrs["inputs_sha256"] and stored.path == path
    assert not stored.recorded


def test_save_without_loss_and_in_float32(project):
    g = _gradient(seed=1).astype(np.float32)
    path = weanj.save_gradient(EXAMPLE, "jax-jacobi", g)
    with h5py.File(path, "r") as f:
        assert set(f.attrs) == DESIGN_ATTRS - {"loss"}  # unknown loss: absent, not invented
        assert f["gradient"].dtype == np.float32 and f.attrs["dtype"] == "float32"
    stored = weanj.load_gradient(EXAMPLE, "jax-jacobi")
    assert stored.loss is None and stored.gradient.dtype == np.float32


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
    assert stored.backend_version == "custom 1.0"
    assert not (project / "results" / EXAMPLE / "gradients").exists()


def test_family_is_required_for_unknown_names(project):
    with pytest.raises(weanj.InputError, match="family"):
        weanj.save_gradient(EXAMPLE, "my-experiment", _gradient())
    path = weanj.save_gradient(EXAMPLE, "my-experiment", _gradient(), family="jacobi")
    stored = weanj.load_gradient(EXAMPLE, "my-experiment")
    assert stored.family == "jacobi" and stored.backend == "my"  # backend: the name's prefix
    assert path.name == "my-experiment.h5"


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", ""])
def test_variant_names_stay_inside_the_store(project, name):
    with pytest.raises(weanj.InputError):
        weanj.save_gradient(EXAMPLE, name, _gradient(), family="jacobi")


def test_stale_gradient_is_refused(project):
    g = _gradient()
    weanj.save_gradient(EXAMPLE, "jax-jacobi", g)
    old_sha = _shared_sha(project)
    # New shared inputs (a consistent file, as a regeneration with another seed makes).
    shared = project / "shared_inputs" / f"{EXAMPLE}.h5"
    with h5py.File(shared, "r+") as f:
        f["theta"][0, 0] += 1.0
        f.attrs["sha256"] = sha256_of(f["theta"][()], f["uobs"][()])
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
    with pytest.raises(weanj.InputError, match="02-gauss-seidel"):
        weanj.load_gradient(EXAMPLE, "jax-jacobi", path=other)


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
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"new but unfinished")
        raise RuntimeError("crash mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]
    with atomic_path(target) as tmp:
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
                assert p.wait(timeout=60) == 0, p.stderr.read()
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
        ({"variant": np.array([1, 2])}, "attribute variant must be text"),
        ({"family": 3}, "attribute family must be text, got 3"),
        ({"dtype": "int8"}, "attribute dtype must be float32 or float64"),
        ({"dtype": "float32"}, "is float64 but the attribute dtype says float32"),
        ({"inputs_sha256": "abc"}, "inputs_sha256 must be 64 hexadecimal digits"),
        ({"example": "99-nope"}, "example '99-nope', which this project does not have"),
        ({"created": None, "backend": 1.5}, "attribute backend must be text"),
        ({b"\xff\xfe": 1}, "name is not UTF-8 text"),
        ({"variant": None}, "lacks attribute(s) variant"),
        ({"family": "rb"}, "says jax-jacobi is of family 'rb', but jax-jacobi is registered"),
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


def test_a_text_gradient_and_a_mistyped_digest_are_refused(project):
    path = weanj.gradient_path(EXAMPLE, "jax-jacobi")
    path.parent.mkdir(parents=True)
    weanj.save_gradient(EXAMPLE, "jax-jacobi", _gradient(), path=path)
    with h5py.File(path, "r+") as f:
        del f["gradient"]
        f["gradient"] = "not numbers"
    with pytest.raises(weanj.InputFileError, match="is not a float32/float64 array"):
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
    with pytest.raises(weanj.InputFileError, match="holds a gradient of 02-gauss-seidel"):
        weanj.stored_gradients(EXAMPLE)


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
    from weanj._atomic import STALE_AFTER_S

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
