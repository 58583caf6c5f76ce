"""Shared inputs (format 2): loading, typed datasets and attributes, their digest, every
way a file can be bad, format-1 files, deterministic regeneration and `weanj inputs verify`."""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest

import weanj
from weanj._cli import main
from weanj._io import _inputs
from weanj._model._inputs import digest

from .conftest import REPO
from .helpers import (
    TYPED,
    assert_one_line_error,
    format1_sha256,
    inputs_sha256,
    raw_datasets,
    registered_typed,
    run_weanj,
    typed_arrays,
    write_h5,
)
from .projects import weanj_here

EXAMPLES = ("01-jacobi", "02-gauss-seidel")
ALL_EXAMPLES = ("01-jacobi", "02-gauss-seidel", "03-advection", "04-tridiagonal", "05-deposition")
FORMAT1 = REPO / "tests" / "data" / "format1"


def _raw_attrs(path):
    """Every attribute as h5py returns it (numpy scalars kept: their dtype is the type)."""
    with h5py.File(path, "r") as f:
        return dict(f.attrs)


@pytest.mark.parametrize("name", EXAMPLES)
def test_load_inputs(name):
    d = weanj.load_inputs(name)
    raw = raw_datasets(REPO / "shared_inputs" / f"{name}.h5")
    assert set(raw) == {"theta", "uobs"}
    for key in ("theta", "uobs"):
        assert isinstance(d[key], np.ndarray)
        assert d[key].dtype == np.float64 and d[key].shape == raw[key].shape
        assert d[key].shape[0] == d[key].shape[1]
        np.testing.assert_array_equal(d[key], raw[key])
    assert type(d["K"]) is int and d["K"] >= 1
    attrs = _raw_attrs(REPO / "shared_inputs" / f"{name}.h5")
    assert d["K"] == attrs["K"] and attrs["K"].dtype == np.int64  # typed: an integer attribute
    assert attrs["n"] == d["theta"].shape[0]
    assert attrs["layout"] == "C" and attrs["example"] == name
    assert attrs["format"] == 2 and attrs["generator"] == "weanj-inputs/2"
    digest = inputs_sha256([("theta", raw["theta"]), ("uobs", raw["uobs"])])
    assert attrs["sha256"] == digest and d["sha256"] == digest


def test_the_examples_have_different_inputs():
    a, b = (weanj.load_inputs(name) for name in EXAMPLES)
    assert a["sha256"] != b["sha256"]


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_every_shared_file_is_format_2_with_typed_attributes(name):
    path = REPO / "shared_inputs" / f"{name}.h5"
    ex = weanj.example(name)
    attrs, raw = _raw_attrs(path), raw_datasets(path)
    assert attrs["format"] == 2 and attrs["format"].dtype.kind == "i"
    assert set(raw) == set(ex.arrays)
    for spec in ex.specs:
        assert spec.kind == "float" and raw[spec.name].dtype == np.dtype("<f8"), spec.name
    assert attrs["sha256"] == inputs_sha256([(a, raw[a]) for a in ex.arrays])
    for p in ex.params:
        expected = {"int": np.int64, "float": np.float64, "bool": np.bool_}[p.kind]
        assert type(attrs[p.name]) is expected, (p.name, type(attrs[p.name]))
    inputs = weanj.read_inputs(name)
    assert inputs.digest == attrs["sha256"] and inputs.shared
    # The format-1 digest, for format-1 gradient files: every array's float64 bytes.
    assert inputs.legacy == format1_sha256(*(raw[a] for a in ex.arrays))


def _shared(project, name="01-jacobi"):
    return project / "shared_inputs" / f"{name}.h5"


def _assert_regenerate_hint(excinfo, name="01-jacobi"):
    message = str(excinfo.value)
    assert f"weanj inputs regenerate {name}" in message
    assert "\n" not in message


def _assert_not_judged(*words, name="01-jacobi"):
    """`weanj.check()` of an example whose shared inputs cannot be read: not judged (no
    verdict: not FAIL), nothing run, exit code 2, the reader's one line as its error."""
    judgement = weanj.check(name, dtype="float64", say=lambda line: None)
    ej = judgement[name]
    assert ej.verdict is None and ej.state == "not judged" and ej.judgements == []
    assert judgement.exit_code == 2 and judgement.verdict == "not judged" and not judgement.ok
    data = judgement.to_json()["examples"][0]
    assert data["verdict"] == "not judged" and data["error"] == ej.error and not data["runs"]
    assert "\n" not in ej.error and all(w in ej.error for w in words), ej.error


def test_missing_inputs_file(project):
    _shared(project).unlink()
    with pytest.raises(weanj.InputFileError, match="does not exist") as excinfo:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(excinfo)


def test_garbage_inputs_file(project):
    _shared(project).write_bytes(b"this is not HDF5\n" * 100)
    with pytest.raises(weanj.InputFileError) as excinfo:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(excinfo)


@pytest.mark.parametrize("keep", [0, 100, 2000, 40000, -1])
def test_truncated_inputs_file(project, keep):
    path = _shared(project)
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    with pytest.raises(weanj.InputFileError) as excinfo:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(excinfo)


def test_tampered_data(project):
    with h5py.File(_shared(project), "r+") as f:
        f["theta"][3, 4] += 1e-12
    with pytest.raises(weanj.InputFileError, match="sha256") as excinfo:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(excinfo)


def test_tampered_into_nonfinite(project):
    with h5py.File(_shared(project), "r+") as f:
        f["uobs"][0, 0] = np.nan
    with pytest.raises(weanj.InputFileError, match="NaN") as excinfo:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(excinfo)


def test_shared_file_lacking_a_dataset(project):
    with h5py.File(_shared(project), "r+") as f:
        del f["uobs"]
    with pytest.raises(weanj.InputFileError, match="uobs") as excinfo:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(excinfo)


def test_shared_file_with_a_retyped_dataset(project):
    # The same values as float32: a shared file holds float arrays as float64 exactly.
    with h5py.File(_shared(project), "r+") as f:
        uobs = f["uobs"][()]
        del f["uobs"]
        f["uobs"] = uobs.astype(np.float32)
    with pytest.raises(weanj.InputFileError, match="uobs is stored as float32, not float64") as e:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(e)


def test_corrupt_attribute_heap_is_an_input_file_error(project):
    # h5py reports this damage as RuntimeError ("Error iterating over attributes"): found
    # by flipping bytes of the committed file one at a time.
    path = _shared(project)
    data = bytearray(path.read_bytes())
    data[-44] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(weanj.InputFileError) as excinfo:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(excinfo)


def test_shared_file_of_another_example(project):
    _shared(project).write_bytes(_shared(project, "02-gauss-seidel").read_bytes())
    with pytest.raises(weanj.InputFileError, match="is for example '02-gauss-seidel'") as e:
        weanj.load_inputs("01-jacobi")
    _assert_regenerate_hint(e)


# --- format-1 files (written by the weanj before format 2) -----------------------------


def test_a_format_1_shared_file_is_refused_with_the_command_that_rewrites_it(project, capsys):
    committed = _shared(project).read_bytes()
    shutil.copyfile(FORMAT1 / "01-jacobi.h5", _shared(project))
    assert "format" not in _raw_attrs(_shared(project))  # what makes it format 1
    with pytest.raises(weanj.InputFileError) as excinfo:
        weanj.load_inputs("01-jacobi")
    message = str(excinfo.value)
    assert "written by an earlier weanj (format 1, not 2)" in message
    assert "rewrite it with `weanj inputs regenerate 01-jacobi`" in message
    assert "\n" not in message
    for argv in (["inputs", "verify", "01-jacobi"], ["check", "01-jacobi"]):
        assert main(argv) == 2
        assert_one_line_error(
            capsys.readouterr().err, "written by an earlier weanj", "weanj inputs regenerate"
        )
    _assert_not_judged("written by an earlier weanj", "weanj inputs regenerate 01-jacobi")
    assert not (project / "results" / "01-jacobi" / "gradients").exists()  # nothing ran
    assert main(["inputs", "regenerate", "01-jacobi"]) == 0
    assert _shared(project).read_bytes() == committed
    assert main(["inputs", "verify", "01-jacobi"]) == 0
    capsys.readouterr()


def test_a_format_1_file_given_as_inputs_is_read_for_its_arrays(project):
    """As `--inputs`, a file needs only its arrays: the format-1 file of the same arrays
    is the shared inputs (same digest, same key), and its recorded sha256 is the
    format-1 digest of those arrays."""
    old = FORMAT1 / "01-jacobi.h5"
    raw = raw_datasets(old)
    mine = weanj.read_inputs("01-jacobi", old)
    shared = weanj.read_inputs("01-jacobi")
    assert not mine.shared and mine.params == {"K": 20}
    for name in ("theta", "uobs"):
        np.testing.assert_array_equal(mine.arrays[name], shared.arrays[name])
    assert (
        mine.digest
        == shared.digest
        == inputs_sha256([("theta", raw["theta"]), ("uobs", raw["uobs"])])
    )
    assert mine.key("float64") == shared.key("float64")
    assert _raw_attrs(old)["sha256"] == format1_sha256(raw["theta"], raw["uobs"]) == mine.legacy


# --- a user's own inputs file (`weanj run --inputs F`, `load_inputs(path=F)`) ----------


def test_user_inputs_file(tmp_path):
    rng = np.random.default_rng(7)
    theta, uobs = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    path = write_h5(tmp_path / "mine.h5", attrs={"K": 3}, theta=theta, uobs=uobs)
    d = weanj.load_inputs("01-jacobi", path)
    np.testing.assert_array_equal(d["theta"], theta)
    np.testing.assert_array_equal(d["uobs"], uobs)
    assert d["K"] == 3 and d["sha256"] == inputs_sha256([("theta", theta), ("uobs", uobs)])
    # No K attribute: the example's default.
    path = write_h5(tmp_path / "noK.h5", theta=theta, uobs=uobs)
    assert weanj.load_inputs("01-jacobi", path)["K"] == weanj.example("01-jacobi").params[0].default


def test_user_float32_arrays_are_cast_to_float64_exactly(tmp_path):
    rng = np.random.default_rng(8)
    theta, uobs = (rng.standard_normal((5, 5)).astype(np.float32) for _ in range(2))
    path = write_h5(tmp_path / "f32.h5", theta=theta, uobs=uobs)
    inputs = weanj.read_inputs("01-jacobi", path)
    for name, a in (("theta", theta), ("uobs", uobs)):
        assert inputs.arrays[name].dtype == np.float64  # what the shared files store
        np.testing.assert_array_equal(inputs.arrays[name], a.astype(np.float64))
    # The digest is of what is stored (float64), so a float64 file of the same values is
    # the same inputs.
    as64 = [("theta", theta.astype(np.float64)), ("uobs", uobs.astype(np.float64))]
    assert inputs.digest == inputs_sha256(as64)
    assert inputs.digest != inputs_sha256([("theta", theta), ("uobs", uobs)])
    # A float32 run rounds them back to exactly the file's values.
    np.testing.assert_array_equal(inputs.run_arrays("float32")["theta"], theta)


def test_complex_values_for_a_float_array_are_refused_in_one_line(project, tmp_path, capsys):
    rng = np.random.default_rng(9)
    theta = rng.standard_normal((5, 5))
    uobs = rng.standard_normal((5, 5)) + 1e-3j * rng.standard_normal((5, 5))
    path = write_h5(tmp_path / "complex.h5", theta=theta, uobs=uobs)
    with pytest.raises(weanj.InputError) as excinfo:
        weanj.load_inputs("01-jacobi", path)
    message = str(excinfo.value)
    assert "uobs has dtype complex128" in message and "kind='complex'" in message
    assert str(path) in message and "\n" not in message
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "uobs has dtype complex128")
    assert not (project / "results" / "01-jacobi").joinpath("runs").exists()  # never truncated


def test_user_file_naming_another_example_is_refused(project, tmp_path, capsys):
    theta = np.ones((5, 5))
    path = write_h5(
        tmp_path / "other.h5", attrs={"example": "02-gauss-seidel"}, theta=theta, uobs=theta
    )
    with pytest.raises(weanj.InputFileError, match="is for example '02-gauss-seidel', not 01-"):
        weanj.load_inputs("01-jacobi", path)
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err, str(path), "02-gauss-seidel")
    # Its own example reads it.
    assert weanj.read_inputs("02-gauss-seidel", path).params == {"K": 20}


_GOOD = np.zeros((4, 4))


@pytest.mark.parametrize(
    "theta, uobs, match",
    [
        (np.zeros((4, 5)), np.zeros((4, 5)), r"expected \(n, n\) with the same n"),
        (np.zeros(16), np.zeros(16), r"theta has shape \(16,\); expected \(n, n\)"),
        (np.zeros((2, 4, 4)), np.zeros((2, 4, 4)), r"expected \(n, n\)"),
        (np.zeros((0, 0)), np.zeros((0, 0)), "square"),
        (_GOOD, np.zeros((3, 3)), r"uobs has shape \(3, 3\)"),
        (np.arange(16).reshape(4, 4), _GOOD, "theta has dtype int64"),
        (_GOOD, np.zeros((4, 4), dtype=np.int32), "uobs has dtype int32"),
        (_GOOD, np.zeros((4, 4), dtype=bool), "uobs has dtype bool"),
        (_GOOD, np.zeros((4, 4), dtype=np.complex128), "uobs has dtype complex128"),
        (np.where(np.eye(4) > 0, np.nan, 0.0), _GOOD, "theta has 4 NaN/Inf"),
        (_GOOD, np.full((4, 4), np.inf), "uobs has 16 NaN/Inf"),
    ],
    ids=[
        "non-square",
        "1-d",
        "3-d",
        "empty",
        "mismatched",
        "int-theta",
        "int-uobs",
        "bool",
        "complex",
        "nan",
        "inf",
    ],
)
def test_user_inputs_file_rejected(tmp_path, theta, uobs, match):
    path = write_h5(tmp_path / "bad.h5", theta=theta, uobs=uobs)
    with pytest.raises(weanj.InputError, match=match) as excinfo:
        weanj.load_inputs("01-jacobi", path)
    assert str(path) in str(excinfo.value) and "\n" not in str(excinfo.value)


def test_user_inputs_file_missing_or_incomplete(tmp_path):
    with pytest.raises(weanj.InputFileError, match="does not exist"):
        weanj.load_inputs("01-jacobi", tmp_path / "absent.h5")
    path = write_h5(tmp_path / "half.h5", theta=_GOOD)
    with pytest.raises(weanj.InputFileError, match="uobs"):
        weanj.load_inputs("01-jacobi", path)


def test_unknown_example_lists_the_known_ones():
    with pytest.raises(weanj.UnknownNameError) as excinfo:
        weanj.load_inputs("03-nope")
    for name in EXAMPLES:
        assert name in str(excinfo.value)


# --- typed arrays and parameters on disk ----------------------------------------------


@pytest.fixture
def typed(project):
    """`helpers.typed_example` registered for this test (its inputs not yet written)."""
    with registered_typed() as ex:
        yield ex


def test_typed_inputs_file_keeps_each_kind(typed, project):
    path = weanj.write_inputs(TYPED)
    assert path == project / "shared_inputs" / f"{TYPED}.h5"
    generated = typed_arrays(typed.seed)
    with h5py.File(path, "r") as f:
        dtypes = {name: f[name].dtype for name in f}
        shapes = {name: f[name].shape for name in f}
        values = {name: f[name][()] for name in f}
        attrs = dict(f.attrs)
    assert dtypes == {
        "x": np.dtype("<f8"),
        "z": np.dtype("<c16"),
        "idx": np.dtype("<i8"),
        "mask": np.dtype("bool"),
        "s": np.dtype("<f8"),
        "counts": np.dtype("<i4"),
    }
    assert shapes["s"] == () and shapes["x"] == (6,) and shapes["idx"] == (4,)  # 0-d: scalar
    for name, a in generated.items():
        np.testing.assert_array_equal(values[name], a)
    # The parameters as typed attributes: int64, float64 and bool, not all numbers alike.
    assert type(attrs["S"]) is np.int64 and attrs["S"] == 3
    assert type(attrs["nu"]) is np.float64 and attrs["nu"] == 0.25
    assert type(attrs["upwind"]) is np.bool_ and attrs["upwind"]
    assert attrs["format"] == 2 and attrs["example"] == TYPED and attrs["n"] == 6
    assert attrs["seed"] == typed.seed and attrs["layout"] == "C"
    assert attrs["sha256"] == inputs_sha256([(name, generated[name]) for name in typed.arrays])

    inputs = weanj.read_inputs(TYPED)
    assert inputs.shared and inputs.legacy is None  # not all float: no format-1 spelling
    for name, a in generated.items():
        assert inputs.arrays[name].dtype == a.dtype and inputs.arrays[name].shape == a.shape
        np.testing.assert_array_equal(inputs.arrays[name], a)
    assert {k: type(v) for k, v in inputs.params.items()} == {
        "S": int,
        "nu": float,
        "upwind": bool,
    }
    d = weanj.load_inputs(TYPED)
    assert d["idx"].dtype == np.int64 and d["mask"].dtype == bool and d["z"].dtype == complex
    assert d["s"].shape == () and d["sha256"] == attrs["sha256"]
    # A float32 run: float arrays float32, complex complex64, int and bool as stored.
    run = inputs.run_arrays("float32")
    assert run["x"].dtype == np.float32 and run["s"].dtype == np.float32
    assert run["z"].dtype == np.complex64
    assert run["idx"].dtype == np.int64 and run["counts"].dtype == np.int32
    assert run["mask"].dtype == bool
    [(name, ok, message)] = weanj.verify_inputs([TYPED])
    assert name == TYPED and ok, message


def test_typed_inputs_are_byte_identical_on_regeneration(typed, tmp_path):
    first = weanj.write_inputs(TYPED, tmp_path / "a.h5")
    second = weanj.write_inputs(TYPED, tmp_path / "b.h5")
    assert first.read_bytes() == second.read_bytes()


def test_the_digest_covers_names_dtypes_and_shapes(typed):
    arrays = typed_arrays(typed.seed)
    base = digest(typed, arrays)
    assert base == inputs_sha256([(name, arrays[name]) for name in typed.arrays])
    # The same values in another integer dtype are other inputs...
    idx32 = dict(arrays, idx=arrays["idx"].astype(np.int32))
    assert digest(typed, idx32) == inputs_sha256([(n, idx32[n]) for n in typed.arrays])
    assert digest(typed, idx32) != base
    # ...and so are the same bytes under another shape.
    folded = dict(arrays, x=arrays["x"].reshape(2, 3))
    assert digest(typed, folded) != base
    assert np.asarray(folded["x"]).tobytes() == arrays["x"].tobytes()


@pytest.mark.parametrize(
    "change, words",
    [
        ({"idx": np.zeros(4)}, "idx has dtype float64, but the example declares it int"),
        ({"counts": np.ones(4, dtype=np.int64)}, "counts has dtype int64"),
        ({"mask": np.ones(6, dtype=np.int8)}, "mask has dtype int8"),
        ({"x": np.ones(6) + 1j}, "x has dtype complex128"),
        ({"s": np.ones(1)}, "s has shape (1,); expected ()"),
        ({"z": np.ones(5, dtype=complex)}, "z has shape (5,)"),
        ({"z": np.array([np.nan + 0j] * 6)}, "z has 6 NaN/Inf"),
    ],
    ids=[
        "float-for-int",
        "int64-for-int32",
        "int-for-bool",
        "complex-for-float",
        "0-d",
        "n",
        "nan",
    ],
)
def test_typed_user_file_refusals(typed, tmp_path, change, words):
    path = write_h5(tmp_path / "bad.h5", **{**typed_arrays(1), **change})
    with pytest.raises(weanj.InputError) as excinfo:
        weanj.read_inputs(TYPED, path)
    assert words in str(excinfo.value) and "\n" not in str(excinfo.value)


def test_typed_user_file_casts_only_what_loses_nothing(typed, tmp_path):
    arrays = typed_arrays(1)
    real_z = arrays["z"].real.copy()
    path = write_h5(
        tmp_path / "mine.h5",
        attrs={"S": 9, "nu": 1, "upwind": False},
        **{**arrays, "z": real_z, "x": arrays["x"].astype(np.float32)},
    )
    inputs = weanj.read_inputs(TYPED, path)
    assert inputs.arrays["z"].dtype == np.complex128  # a real array for a complex one
    np.testing.assert_array_equal(inputs.arrays["z"], real_z.astype(complex))
    assert inputs.arrays["x"].dtype == np.float64
    # nu = 1 (an int) is a float parameter's 1.0; S and upwind keep their kinds.
    assert inputs.params == {"S": 9, "nu": 1.0, "upwind": False}
    assert type(inputs.params["nu"]) is float and type(inputs.params["upwind"]) is bool


@pytest.mark.parametrize(
    "attrs, words",
    [
        ({"S": 3.0}, "S must be an integer, got 3.0"),
        ({"S": 10}, "S must be at most 9, got 10"),
        ({"nu": np.nan}, "nu must be a finite number, got nan"),
        ({"nu": -np.inf}, "nu must be a finite number"),
        ({"nu": -0.5}, "nu must be at least 0, got -0.5"),
        ({"upwind": 1}, "upwind must be true or false, got 1"),
        ({"upwind": "yes"}, "upwind must be true or false, got 'yes'"),
    ],
    ids=["int-float", "int-range", "nan", "inf", "float-range", "bool-int", "bool-text"],
)
def test_typed_parameter_attributes_are_checked(typed, tmp_path, attrs, words):
    path = write_h5(tmp_path / "mine.h5", attrs=attrs, **typed_arrays(1))
    with pytest.raises(weanj.InputFileError) as excinfo:
        weanj.read_inputs(TYPED, path)
    assert f"attribute {words}" in str(excinfo.value) and "\n" not in str(excinfo.value)


# --- regeneration and verification ----------------------------------------------------


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_regenerate_is_byte_identical(tmp_path, name):
    first = weanj.write_inputs(name, tmp_path / "a" / f"{name}.h5")
    second = weanj.write_inputs(name, tmp_path / "b" / f"{name}.h5")
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() == (REPO / "shared_inputs" / f"{name}.h5").read_bytes()
    assert sorted(p.name for p in first.parent.iterdir()) == [f"{name}.h5"]  # no temp left


def test_generated_inputs_match_their_digest():
    for name in EXAMPLES:
        inputs = weanj.generate_inputs(name)
        arrays = inputs.arrays
        assert inputs.digest == inputs_sha256(
            [("theta", arrays["theta"]), ("uobs", arrays["uobs"])]
        )
        attrs = _inputs.file_attributes(inputs, weanj.example(name).seed)
        assert attrs["sha256"] == inputs.digest and attrs["n"] == arrays["theta"].shape[0]
        assert list(attrs)[:2] == ["format", "example"] and attrs["format"] == 2
        assert not arrays["theta"].flags.writeable  # one object shared by every run


def test_verify_inputs(project):
    report = weanj.verify_inputs(list(EXAMPLES))
    assert [(name, ok) for name, ok, _ in report] == [(name, True) for name in EXAMPLES]
    with h5py.File(_shared(project), "r+") as f:
        f.attrs["K"] = 5  # not covered by the digest, but not what the generator wrote
    report = dict((name, (ok, msg)) for name, ok, msg in weanj.verify_inputs(list(EXAMPLES)))
    assert report["02-gauss-seidel"][0]
    assert not report["01-jacobi"][0] and "K" in report["01-jacobi"][1]


def test_verify_notices_a_retyped_parameter(project):
    # K = 20.0 (float) where the generator writes the int 20: the same number, another type.
    with h5py.File(_shared(project), "r+") as f:
        f.attrs["K"] = np.float64(20.0)
    with pytest.raises(weanj.InputFileError, match="attribute K must be an integer, got 20.0"):
        weanj.read_inputs("01-jacobi")
    [(name, ok, message)] = weanj.verify_inputs(["01-jacobi"])
    assert not ok and "K must be an integer" in message


def test_cli_verify_and_regenerate(project, capsys):
    assert main(["inputs", "verify", *EXAMPLES]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.count(" ok") == len(EXAMPLES)

    original = _shared(project).read_bytes()
    _shared(project).write_bytes(b"garbage")
    # In a fresh process, as a user runs it: one line naming the fix, no traceback.
    result = run_weanj("inputs", "verify", *EXAMPLES, root=project)
    assert result.returncode != 0
    assert_one_line_error(result.stderr, "weanj inputs regenerate 01-jacobi")

    assert main(["inputs", "regenerate", "01-jacobi"]) == 0
    assert _shared(project).read_bytes() == original
    assert main(["inputs", "verify", *EXAMPLES]) == 0


# --- what an inputs file must not be (issue 17) -----------------------------------------


def _user_file(tmp_path, name="mine.h5", attrs=None, **datasets):
    rng = np.random.default_rng(3)
    arrays = {"theta": rng.standard_normal((5, 5)), "uobs": rng.standard_normal((5, 5))}
    arrays.update(datasets)
    return write_h5(tmp_path / name, attrs=attrs, **arrays)


def _external_storage(tmp_path, raw_bytes):
    """theta stored in a raw file beside the HDF5 file (`raw_bytes` of its 200)."""
    (tmp_path / "theta.bin").write_bytes(np.ones(25).tobytes()[:raw_bytes])
    path = tmp_path / "external.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("theta", (5, 5), "f8", external=[(str(tmp_path / "theta.bin"), 0, 200)])
        f["uobs"] = np.zeros((5, 5))
    return path


def _virtual(tmp_path):
    source = write_h5(tmp_path / "source.h5", theta=np.ones((5, 5)))
    layout = h5py.VirtualLayout((5, 5), "f8")
    layout[:] = h5py.VirtualSource(str(source), "theta", (5, 5))
    path = tmp_path / "virtual.h5"
    with h5py.File(path, "w") as f:
        f.create_virtual_dataset("theta", layout, fillvalue=0.0)
        f["uobs"] = np.zeros((5, 5))
    source.unlink()  # the values now live nowhere: h5py would read the fill value
    return path


def _external_link(tmp_path):
    write_h5(tmp_path / "other.h5", theta=np.ones((5, 5)))
    path = tmp_path / "linked.h5"
    with h5py.File(path, "w") as f:
        f["theta"] = h5py.ExternalLink(str(tmp_path / "other.h5"), "/theta")
        f["uobs"] = np.zeros((5, 5))
    return path


def _never_written(tmp_path):
    path = tmp_path / "empty.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("theta", (5, 5), "f8")  # allocated late: no values in the file
        f["uobs"] = np.zeros((5, 5))
    return path


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda t: _external_storage(t, 0), "external file(s)"),
        (lambda t: _external_storage(t, 100), "external file(s)"),
        (lambda t: _external_storage(t, 200), "external file(s)"),
        (_virtual, "virtual dataset"),
        (_external_link, "external link"),
        (_never_written, "only 0 of its 200 bytes stored"),
    ],
    ids=["external-missing", "external-short", "external-whole", "virtual", "link", "unwritten"],
)
def test_datasets_not_stored_in_the_file_are_refused(project, tmp_path, capsys, make, words):
    path = make(tmp_path)
    with pytest.raises(weanj.InputFileError, match="stored in the file itself") as excinfo:
        weanj.load_inputs("01-jacobi", path)
    assert words in str(excinfo.value) and str(path) in str(excinfo.value)
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err, words)
    # The same file as the shared inputs: verify and check refuse it, before any variant.
    _shared(project).write_bytes(path.read_bytes())
    for argv in (["inputs", "verify", "01-jacobi"], ["check", "01-jacobi"]):
        assert main(argv) == 2
        assert_one_line_error(capsys.readouterr().err, words, "weanj inputs regenerate 01-jacobi")
    _assert_not_judged(words, "weanj inputs regenerate 01-jacobi")
    assert not (project / "results" / "01-jacobi" / "gradients").exists()


_TOO_BIG = 2**63 - 1


@pytest.mark.parametrize(
    "value, words",
    [
        ("abc", "K must be an integer, got 'abc'"),
        (b"7", "K must be an integer, got '7'"),
        (np.nan, "K must be an integer, got nan"),
        (np.inf, "K must be an integer, got inf"),
        (2.5, "K must be an integer, got 2.5"),
        (4.0, "K must be an integer, got 4.0"),
        (np.array([1, 2]), "K must be an integer, got array([1, 2])"),
        (np.uint64(2**64 - 1), "K must be at most 2147483647"),
        (np.int64(_TOO_BIG), "K must be at most 2147483647"),
        (2**31, "K must be at most 2147483647"),
        (0, "K must be at least 1"),
        (np.bool_(True), "K must be an integer, got True"),
    ],
    ids=[
        "text",
        "bytes",
        "nan",
        "inf",
        "fraction",
        "integral-float",
        "array",
        "uint64-max",
        "int64-max",
        "int32-max+1",
        "zero",
        "bool",
    ],
)
def test_mistyped_parameter_attributes_are_refused(tmp_path, capsys, value, words):
    # An integral float (4.0) too: an int parameter is never read from a float attribute,
    # so a file's parameters mean the same in Python and in Julia.
    path = _user_file(tmp_path, attrs={"K": value})
    with pytest.raises(weanj.InputFileError, match="attribute K") as excinfo:
        weanj.load_inputs("01-jacobi", path)
    assert words in str(excinfo.value)
    # Before any variant runs, and whatever `--K` says: the file is malformed.
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(path), "--K", "2"]) == 2
    assert_one_line_error(capsys.readouterr().err, str(path), words)


def test_attribute_names_and_text_must_be_utf8(tmp_path, capsys):
    path = _user_file(tmp_path, attrs={b"\xff\xfeK": 3})
    with pytest.raises(weanj.InputFileError, match="name is not UTF-8 text"):
        weanj.load_inputs("01-jacobi", path)
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "not UTF-8")
    path = _user_file(tmp_path, "text.h5", attrs={"example": np.bytes_(b"\xff\xfe")})
    with pytest.raises(weanj.InputFileError, match="attribute example is not UTF-8 text"):
        weanj.load_inputs("01-jacobi", path)


def test_a_group_where_an_array_belongs(tmp_path):
    path = tmp_path / "group.h5"
    with h5py.File(path, "w") as f:
        f.create_group("theta")
        f["uobs"] = np.zeros((5, 5))
    with pytest.raises(weanj.InputFileError, match="theta is a group, not a dataset"):
        weanj.load_inputs("01-jacobi", path)


@pytest.mark.parametrize(
    "attrs, words",
    [
        ({"K": "abc"}, "attribute K must be an integer"),
        ({"K": np.array([20, 20])}, "attribute K must be an integer"),
        ({"sha256": np.array([1, 2])}, "does not match its recorded sha256"),
        ({"example": np.array([1, 2])}, "is for example array([1, 2])"),
        ({"format": 3}, "written by an earlier weanj (format 3, not 2)"),
        ({b"\xff": 1}, "not UTF-8 text"),
        # The parameters are part of the inputs: an edited K is never run at the new value.
        ({"K": 21}, "holds K = 21 where 01-jacobi registers K = 20"),
    ],
    ids=[
        "K-text",
        "K-array",
        "sha256-array",
        "example-array",
        "format-3",
        "bytes-name",
        "K-edited",
    ],
)
def test_mistyped_shared_inputs_fail_verify_and_check(project, capsys, attrs, words):
    with h5py.File(_shared(project), "r+") as f:
        for key, value in attrs.items():
            f.attrs[key] = value
    assert main(["inputs", "verify", "01-jacobi"]) == 2
    assert_one_line_error(capsys.readouterr().err, words, "weanj inputs regenerate 01-jacobi")
    assert main(["check", "01-jacobi"]) == 2  # one line, before any variant runs
    assert_one_line_error(capsys.readouterr().err, words)
    _assert_not_judged(words)


# --- parameters in range -------------------------------------------------------------


@pytest.mark.parametrize(
    "K, words",
    [
        (str(2**63 - 1), "K must be at most 2147483647 (the kernels' loop counters are int32)"),
        (str(2**64), "K must be at most 2147483647"),
        (str(10**30), "K must be at most 2147483647"),
        (str(2**31), "K must be at most 2147483647"),
        ("0", "K must be at least 1"),
        ("-5", "K must be at least 1"),
        ("3.0", "--K takes an integer, got '3.0'"),
    ],
)
def test_parameters_out_of_range_are_refused(project, capsys, K, words):
    assert main(["run", "01-jacobi", "jax-jacobi", "--K", K]) == 2
    assert_one_line_error(capsys.readouterr().err, words)
    assert not (project / "results" / "01-jacobi" / "gradients").exists()


def test_check_params_uses_each_parameters_own_range():
    ex = weanj.Example(
        name="10-range",
        arrays=("x",),
        wrt="x",
        generate=lambda seed: {"x": np.zeros(3)},
        params=(weanj.Param("S", default=3, minimum=2, maximum=9), weanj.Param("T", default=1)),
    )
    assert ex.check_params({"S": 9, "T": np.int32(5)}) == {"S": 9, "T": 5}
    assert type(ex.check_params({"T": np.int32(5)})["T"]) is int
    assert ex.check_params({}) == {"S": 3, "T": 1}
    for params, words in [
        ({"S": 10}, "S must be at most 9, got 10"),
        ({"S": 1}, "S must be at least 2, got 1"),
        ({"T": 2**31}, "T must be at most 2147483647"),
        ({"T": "3"}, "T must be an integer, got '3'"),
        ({"T": 3.0}, "T must be an integer, got 3.0"),
        ({"T": None}, "T must be an integer, got None"),
        ({"T": np.zeros((100, 100))}, "T must be an integer, got array("),
    ]:
        with pytest.raises(weanj.InputError, match="must be") as excinfo:
            ex.check_params(params)
        assert words in str(excinfo.value) and "\n" not in str(excinfo.value)
    with pytest.raises(weanj.InputError, match="10-range has no parameter U"):
        ex.check_params({"U": 1})


# --- inputs files that are not what weanj writes, as the commands meet them ----------------


def test_a_directory_given_as_inputs_is_named_as_one(tmp_path, capsys):
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(tmp_path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "is a directory, not a file")


@pytest.mark.parametrize("attribute", ["example", "K"])
def test_shared_inputs_lacking_an_attribute_weanj_writes_are_refused(project, capsys, attribute):
    """The writer always writes the example and every parameter: a shared file without
    one was not written by it (a missing K used to be taken as K's default, silently)."""
    shared = _shared(project)
    with h5py.File(shared, "r+") as f:
        del f.attrs[attribute]
    assert main(["run", "01-jacobi", "jax-jacobi"]) == 2
    assert_one_line_error(
        capsys.readouterr().err,
        f"inputs file {shared} lacks attribute(s) {attribute}",
        "weanj inputs regenerate 01-jacobi",
    )


def test_nan_in_inputs_names_its_first_index_in_both_conventions(project, capsys, tmp_path):
    uobs = np.ones((4, 4))
    uobs[3, 0], uobs[2, 1] = np.inf, np.nan  # the first in C order is (2, 1)
    path = write_h5(tmp_path / "bad.h5", theta=np.ones((4, 4)), uobs=uobs)
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(path)]) == 2
    assert_one_line_error(
        capsys.readouterr().err,
        "uobs has 2 NaN/Inf value(s), the first at numpy (2, 1) / Julia (3, 2)",
    )


def test_a_missing_inputs_file_keeps_the_other_examples_results(tiny, tmp_path):
    """`weanj check` of two examples, one without its inputs file (in a user's project):
    the other is judged, printed and saved; the one is "not judged" (it was FAIL), its
    error printed once, on stderr; exit 2 (in this process, as a fresh one runs it)."""
    root = tmp_path / "project"
    shutil.copytree(tiny, root, ignore=shutil.ignore_patterns("results", ".weanj-cache"))
    (root / "shared_inputs" / "11-other.h5").unlink()
    r = weanj_here(root, "check", "10-tiny", "11-other", "--dtype", "float64")
    assert r.returncode == 2, r.stdout + r.stderr
    judged = json.loads((root / "results" / "10-tiny" / "check.json").read_text())
    assert judged["verdict"] == "ok" and judged["failures"] == []
    assert {j["case"]: j["verdict"] for j in judged["runs"]} == {
        "10-tiny::f::jax-a::run": "ok",
        "10-tiny::f::jax-b::run": "ok",
    }
    assert not (root / "results" / "11-other").exists()  # nothing of it ran or was written
    for variant in ("jax-a", "jax-b"):  # the judged example's gradients were saved
        assert (root / "results" / "10-tiny" / "gradients" / f"{variant}.h5").is_file()
    # The text views: the error once on stderr (no other error line), "not judged" in the
    # example's block and the overall line (never FAIL).
    error = assert_one_line_error(
        "\n".join(line for line in r.stderr.splitlines() if not line.startswith("[")),
        "weanj: 11-other not judged: ",
        "11-other.h5 does not exist",
        "weanj inputs regenerate 11-other",
    )
    assert r.stderr.count("does not exist") == 1 and "Traceback" not in r.stderr, error
    lines = r.stdout.splitlines()
    assert "  10-tiny: ok" in lines and "FAIL" not in r.stdout
    (missing,) = [line for line in lines if line.startswith("== 11-other: not judged: ")]
    assert "11-other.h5 does not exist" in missing
    (overall,) = [line for line in lines if line.startswith("overall: ")]
    assert overall.startswith("overall: not judged") and "not judged: 11-other" in overall


def test_inputs_the_generator_would_not_write_are_stale(tmp_path):
    """`generate()` edited (n 64 → 80) and the inputs not regenerated: `weanj check` says
    the file is stale in one line naming the command, and exits non-zero; an edit that
    leaves the inputs as they were is accepted without a word. The check that finds the
    file stale is a fresh process; the others run in this one as a fresh one runs them."""
    from .projects import weanj_here, weanj_in, write_project

    module = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="41-gen", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(64)},
))

@weanj.jax_variant(ex, "jax-a", family="f")
def a(x):
    return jnp.sum(x ** 2)
"""
    root = write_project(tmp_path, {"kernels/gen.py": module})
    assert weanj_here(root, "check", "--dtype", "float64").returncode == 0
    path = root / "kernels" / "gen.py"
    path.write_text(module + "# an edit that changes no input\n")
    r = weanj_here(root, "check", "--dtype", "float64")
    assert r.returncode == 0 and "stale" not in r.stdout + r.stderr, r.stdout + r.stderr
    path.write_text(module.replace("standard_normal(64)", "standard_normal(80)"))
    r = weanj_in(root, "check", "--dtype", "float64")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    said = " ".join(r.stderr.split())  # one message (wrapped to the terminal's width)
    assert said.count("is stale") == 1, r.stderr
    assert "41-gen.h5 is stale: 41-gen's generator now makes other inputs" in said
    assert said.endswith("regenerate it with `weanj inputs regenerate 41-gen`"), said
    assert weanj_here(root, "inputs", "regenerate", "41-gen").returncode == 0
    r = weanj_here(root, "check", "--dtype", "float64")
    assert r.returncode == 0, r.stdout + r.stderr
