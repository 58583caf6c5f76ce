"""Shared inputs: loading, their digest, every way a file can be bad, deterministic
regeneration and `weanj inputs verify`."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import weanj
from weanj._cli import main

from .conftest import REPO
from .helpers import assert_one_line_error, raw_datasets, run_weanj, sha256_of, write_h5

EXAMPLES = ("01-jacobi", "02-gauss-seidel")


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
    assert isinstance(d["K"], int) and d["K"] >= 1
    with h5py.File(REPO / "shared_inputs" / f"{name}.h5", "r") as f:
        assert d["K"] == int(f.attrs["K"])
        assert int(f.attrs["n"]) == d["theta"].shape[0]
        assert f.attrs["layout"] == "C" and f.attrs["example"] == name
        assert f.attrs["sha256"] == sha256_of(raw["theta"], raw["uobs"])
    assert d["sha256"] == sha256_of(raw["theta"], raw["uobs"])


def test_the_examples_have_different_inputs():
    a, b = (weanj.load_inputs(name) for name in EXAMPLES)
    assert a["sha256"] != b["sha256"]


def _shared(project, name="01-jacobi"):
    return project / "shared_inputs" / f"{name}.h5"


def _assert_regenerate_hint(excinfo, name="01-jacobi"):
    message = str(excinfo.value)
    assert f"weanj inputs regenerate {name}" in message
    assert "\n" not in message


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
    with pytest.raises(weanj.InputFileError, match="02-gauss-seidel"):
        weanj.load_inputs("01-jacobi")


# --- a user's own inputs file (`weanj run --inputs F`, `load_inputs(path=F)`) ----------


def test_user_inputs_file(tmp_path):
    rng = np.random.default_rng(7)
    theta, uobs = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    path = write_h5(tmp_path / "mine.h5", attrs={"K": 3}, theta=theta, uobs=uobs)
    d = weanj.load_inputs("01-jacobi", path)
    np.testing.assert_array_equal(d["theta"], theta)
    np.testing.assert_array_equal(d["uobs"], uobs)
    assert d["K"] == 3 and d["sha256"] == sha256_of(theta, uobs)
    # No K attribute: the example's default.
    path = write_h5(tmp_path / "noK.h5", theta=theta, uobs=uobs)
    assert weanj.load_inputs("01-jacobi", path)["K"] == weanj.example("01-jacobi").params[0].default
    # float32 arrays are accepted as they are.
    path = write_h5(tmp_path / "f32.h5", theta=theta.astype("f4"), uobs=uobs.astype("f4"))
    assert weanj.load_inputs("01-jacobi", path)["theta"].dtype == np.float32


_GOOD = np.zeros((4, 4))


@pytest.mark.parametrize(
    "theta, uobs, match",
    [
        (np.zeros((4, 5)), np.zeros((4, 5)), "square"),
        (np.zeros(16), np.zeros(16), "square"),
        (np.zeros((2, 4, 4)), np.zeros((2, 4, 4)), "square"),
        (_GOOD, np.zeros((3, 3)), "uobs has shape"),
        (np.arange(16).reshape(4, 4), _GOOD, "dtype int64"),
        (_GOOD, np.zeros((4, 4), dtype=np.int32), "dtype int32"),
        (_GOOD, np.zeros((4, 4), dtype=np.complex128), "dtype complex128"),
        (np.where(np.eye(4) > 0, np.nan, 0.0), _GOOD, "theta has 4 NaN/Inf"),
        (_GOOD, np.full((4, 4), np.inf), "uobs has 16 NaN/Inf"),
    ],
    ids=[
        "non-square",
        "1-d",
        "3-d",
        "mismatched",
        "int-theta",
        "int-uobs",
        "complex",
        "nan",
        "inf",
    ],
)
def test_user_inputs_file_rejected(tmp_path, theta, uobs, match):
    path = write_h5(tmp_path / "bad.h5", theta=theta, uobs=uobs)
    with pytest.raises(weanj.InputError, match=match) as excinfo:
        weanj.load_inputs("01-jacobi", path)
    assert str(path) in str(excinfo.value)


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


# --- regeneration and verification ----------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLES)
def test_regenerate_is_byte_identical(tmp_path, name):
    first = weanj.write_inputs(name, tmp_path / "a" / f"{name}.h5")
    second = weanj.write_inputs(name, tmp_path / "b" / f"{name}.h5")
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() == (REPO / "shared_inputs" / f"{name}.h5").read_bytes()
    assert sorted(p.name for p in first.parent.iterdir()) == [f"{name}.h5"]  # no temp left


def test_generated_inputs_match_their_digest():
    for name in EXAMPLES:
        content = weanj.generate_inputs(name)
        arrays = content["arrays"]
        assert content["attrs"]["sha256"] == sha256_of(arrays["theta"], arrays["uobs"])
        assert content["attrs"]["n"] == arrays["theta"].shape[0]


def test_verify_inputs(project):
    report = weanj.verify_inputs(list(EXAMPLES))
    assert [(name, ok) for name, ok, _ in report] == [(name, True) for name in EXAMPLES]
    with h5py.File(_shared(project), "r+") as f:
        f.attrs["K"] = 5  # not covered by the digest, but not what the generator wrote
    report = dict((name, (ok, msg)) for name, ok, msg in weanj.verify_inputs(list(EXAMPLES)))
    assert report["02-gauss-seidel"][0]
    assert not report["01-jacobi"][0] and "K" in report["01-jacobi"][1]


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
        (np.array([1, 2]), "K must be an integer, got array([1, 2])"),
        (np.uint64(2**64 - 1), "K must be at most 2147483647"),
        (np.int64(_TOO_BIG), "K must be at most 2147483647"),
        (2**31, "K must be at most 2147483647"),
        (0, "K must be at least 1"),
        (np.bool_(True), "K must be an integer, got"),
    ],
    ids=[
        "text",
        "bytes",
        "nan",
        "inf",
        "fraction",
        "array",
        "uint64-max",
        "int64-max",
        "int32-max+1",
        "zero",
        "bool",
    ],
)
def test_mistyped_parameter_attributes_are_refused(tmp_path, capsys, value, words):
    path = _user_file(tmp_path, attrs={"K": value})
    with pytest.raises(weanj.InputFileError, match="attribute K") as excinfo:
        weanj.load_inputs("01-jacobi", path)
    assert words in str(excinfo.value)
    # Before any variant runs, and whatever `--K` says: the file is malformed.
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(path), "--K", "2"]) == 2
    assert_one_line_error(capsys.readouterr().err, str(path), words)


def test_integral_float_parameter_is_accepted(tmp_path):
    assert weanj.load_inputs("01-jacobi", _user_file(tmp_path, attrs={"K": 4.0}))["K"] == 4


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
        ({b"\xff": 1}, "not UTF-8 text"),
    ],
    ids=["K-text", "K-array", "sha256-array", "example-array", "bytes-name"],
)
def test_mistyped_shared_inputs_fail_verify_and_check(project, capsys, attrs, words):
    with h5py.File(_shared(project), "r+") as f:
        for key, value in attrs.items():
            f.attrs[key] = value
    assert main(["inputs", "verify", "01-jacobi"]) == 2
    assert_one_line_error(capsys.readouterr().err, words, "weanj inputs regenerate 01-jacobi")
    assert main(["check", "01-jacobi"]) == 2  # one line, before any variant runs
    assert_one_line_error(capsys.readouterr().err, words)


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
    from weanj._inputs import check_params

    assert check_params(ex, {"S": 9, "T": np.int32(5)}) == {"S": 9, "T": 5}
    assert check_params(ex, {}) == {"S": 3, "T": 1}
    for params, words in [
        ({"S": 10}, "S must be at most 9, got 10"),
        ({"S": 1}, "S must be at least 2, got 1"),
        ({"T": 2**31}, "T must be at most 2147483647"),
        ({"T": "3"}, "T must be an integer, got '3'"),
        ({"T": None}, "T must be an integer, got None"),
        ({"T": np.zeros((100, 100))}, "T must be an integer, got array("),
    ]:
        with pytest.raises(weanj.InputError, match="must be") as excinfo:
            check_params(ex, params)
        assert words in str(excinfo.value) and "\n" not in str(excinfo.value)
