"""Issue 17: no crash, no hang, no silent loss.

- The corrupted-inputs battery (`tests/data/corrupt/`, found by `benchmarks/fuzz_h5.py`):
  single-byte patches of a small inputs file that make plain h5py segfault or hang. The
  base file is a format-1 inputs file (what weanj wrote when the battery was found); each
  case is also applied to the same field of the format-2 file weanj writes now for the
  same arrays (found by the bytes around the patch). Each file is first confirmed
  against plain h5py in a child process (so the battery cannot go stale unnoticed), then
  `weanj inputs verify`, `weanj run --inputs` and `weanj check` must each print one line
  and exit 2 within 20 s. The same damage in a gradient file of the store is a verdict
  of `weanj diff`, not a crash.
- How `_safeh5` probes: once per distinct content, never for files weanj just wrote, the
  parent parsing the very bytes that were probed, the probe process restarted after a
  crash or a hang.
- `weanj run --out`: places that are not gradient files are refused, untouched.
- `weanj run` on other inputs, parameters or dtype writes apart from the store.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import weanj
from weanj._cli import main
from weanj._io import _inputs, _safeh5
from weanj._run import apart_note, default_path, differences

from .conftest import REPO
from .helpers import PYTHON, assert_one_line_error, inputs_sha256, subprocess_env, write_h5

CORRUPT = REPO / "tests" / "data" / "corrupt"
BATTERY = json.loads((CORRUPT / "cases.json").read_text())
BASE = (CORRUPT / BATTERY["base"]).read_bytes()
PROBE_LIMIT_S = 2  # $WEANJ_H5_TIMEOUT_S in the battery: a hang costs this much per command
COMMAND_LIMIT_S = 20
EX = "01-jacobi"


def _pick(kind: str, count: int) -> list[dict]:
    """The first `count` cases of a kind, each at another offset (another field)."""
    chosen: dict[int, dict] = {}
    for case in BATTERY["cases"]:
        if case["kind"] == kind and len(chosen) < count:
            chosen.setdefault(case["offset"], case)
    return list(chosen.values())


# A few cases keep the test quick (a hang costs the probe's limit per command): one crash
# and one hang by default, a second of each kind (another field) with `-m slow`; the fuzz
# script finds all of them (cases.json lists every one found).
_CRASHES, _HANGS = _pick("crash", 2), _pick("hang", 2)
CASES = [
    _CRASHES[0],
    _HANGS[0],
    *(pytest.param(c, marks=pytest.mark.slow) for c in (_CRASHES[1], _HANGS[1])),
]


def _case_id(case: dict) -> str:
    return f"{case['kind']}-{case['offset']}-{case['value']:#04x}"


def _patched(case: dict) -> bytes:
    data = bytearray(BASE)
    data[case["offset"]] = case["value"]
    return bytes(data)


# The bytes on either side of a patch that identify its field (an attribute's name and
# datatype, a B-tree node, ...) in another file of the same structure.
_CONTEXT = 12


def _format2_base(tmp_path: Path) -> bytes:
    """The format-2 inputs file of the battery's arrays, as weanj writes it now."""
    with h5py.File(CORRUPT / BATTERY["base"], "r") as f:
        arrays = {name: f[name][()] for name in f}
        K, seed = int(f.attrs["K"]), int(f.attrs["seed"])
    inputs = _inputs.from_arrays(EX, arrays, {"K": K})
    return _inputs.write_inputs_file(inputs, tmp_path / "base2.h5", seed=seed).read_bytes()


def _patched_format2(case: dict, tmp_path: Path) -> bytes:
    """The case's patch applied to the same field of the format-2 file."""
    base2 = _format2_base(tmp_path)
    at = case["offset"]
    context = BASE[at - _CONTEXT : at + _CONTEXT]
    hits = [i for i in range(len(base2)) if base2[i : i + len(context)] == context]
    assert len(hits) == 1, (
        f"the field of {_case_id(case)} is not found once in the format-2 file ({len(hits)} "
        "times): refresh the battery with `python benchmarks/fuzz_h5.py --write-cases`"
    )
    data = bytearray(base2)
    data[hits[0] + _CONTEXT] = case["value"]
    return bytes(data)


# Plain h5py, as weanj read files before `_safeh5`: open, every attribute and dataset.
_RAW_READ = """
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    dict(f.attrs.items())
    def visit(name, obj):
        dict(obj.attrs.items())
        if isinstance(obj, h5py.Dataset):
            obj[()]
    f.visititems(visit)
"""


def _raw_h5py(path: Path, limit: float) -> str:
    """What plain h5py does with the file in a child: "crash (SIGSEGV)", "hang", "ok"..."""
    try:
        rc = subprocess.run(
            [PYTHON, "-c", _RAW_READ, str(path)], capture_output=True, timeout=limit, check=False
        ).returncode
    except subprocess.TimeoutExpired:
        return "hang"
    if rc < 0:
        return f"crash ({signal.Signals(-rc).name})"
    return "ok" if rc == 0 else "error"


def test_the_battery_is_the_fuzzed_base():
    """The patches are offsets into this exact base file."""
    assert _safeh5.digest(BASE) == BATTERY["base_sha256"]
    assert _pick("crash", 2) and _pick("hang", 2), "refresh: python benchmarks/fuzz_h5.py"


@pytest.mark.parametrize("fmt", ["format1", "format2"])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_corrupt_file_is_one_line_and_exit_2(project, tmp_path, case, fmt):
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes(_patched(case) if fmt == "format1" else _patched_format2(case, tmp_path))
    raw = _raw_h5py(corrupt, limit=3 if case["kind"] == "hang" else 60)
    expected = "hang" if case["kind"] == "hang" else f"crash ({case['signal']})"
    assert raw == expected, (
        f"plain h5py no longer {expected}s on this case (it says {raw!r}): libhdf5 changed; "
        "refresh the battery with `python benchmarks/fuzz_h5.py --write-cases`"
    )

    shutil.copyfile(corrupt, project / "shared_inputs" / f"{EX}.h5")
    commands = {
        "verify": ["inputs", "verify", EX],
        "run": ["run", EX, "jax-jacobi", "--inputs", str(corrupt)],
        "check": ["check", EX],
    }
    env = subprocess_env(project, WEANJ_H5_TIMEOUT_S=str(PROBE_LIMIT_S))
    started = time.perf_counter()
    procs = {
        name: subprocess.Popen(
            [PYTHON, "-m", "weanj", *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, argv in commands.items()
    }
    words = (
        f"did not finish within {PROBE_LIMIT_S} s"
        if case["kind"] == "hang"
        else f"libhdf5 crashed ({case['signal']})"
    )
    for name, p in procs.items():
        try:
            _, err = p.communicate(timeout=COMMAND_LIMIT_S - (time.perf_counter() - started))
        except subprocess.TimeoutExpired:
            for q in procs.values():
                q.kill()
                q.communicate()
            pytest.fail(f"`weanj {name}` took longer than {COMMAND_LIMIT_S} s")
        assert p.returncode == 2, f"weanj {name}: {err}"
        assert_one_line_error(err, words, "corrupt.h5" if name == "run" else f"{EX}.h5")
    assert not (project / "results" / EX / "gradients").exists()  # no variant ran


def test_a_crashing_gradient_file_is_a_verdict_not_a_crash(project):
    """The battery's crash, on a text attribute's datatype, in a gradient file of the store:
    `weanj diff` judges the file unreadable and still reads the others."""
    path = weanj.save_gradient(EX, "jax-jacobi", np.ones((64, 64)), loss=1.0)
    data = bytearray(path.read_bytes())
    # The attribute `family`: its name padded to 8 bytes, then a variable-length string
    # datatype (0x19), whose next byte the battery's crash cases patch.
    field = b"family\0\0\x19\x01"
    assert data.count(field) == 1
    data[data.index(field) + len(field) - 1] = 0x03
    path.write_bytes(bytes(data))
    assert _raw_h5py(path, limit=60) == "crash (SIGSEGV)"

    with pytest.raises(weanj.InputFileError, match=r"libhdf5 crashed \(SIGSEGV\)") as excinfo:
        weanj.load_gradient(EX, "jax-jacobi")
    assert "\n" not in str(excinfo.value) and f"weanj run {EX} jax-jacobi" in str(excinfo.value)
    result = subprocess.run(
        [PYTHON, "-m", "weanj", "diff", EX],
        env=subprocess_env(project),
        capture_output=True,
        text=True,
        timeout=COMMAND_LIMIT_S * 3,
        check=False,
    )
    assert result.returncode == 1, result.stderr  # a failing verdict, not an error or a crash
    assert "Traceback" not in result.stdout + result.stderr
    [line] = [line for line in result.stdout.splitlines() if "libhdf5 crashed" in line]
    assert "file jax-jacobi: FAIL" in line and str(path) in line
    assert "recorded/jax-jacobi" in result.stdout  # the reference was still read


def test_a_crash_in_the_probe_is_an_error_here_and_the_next_file_reads(tmp_path):
    """In this very process: the crash is the probe's, not ours."""
    case = _pick("crash", 1)[0]
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes(_patched(case))
    with pytest.raises(weanj.InputFileError, match=rf"libhdf5 crashed \({case['signal']}\)"):
        weanj.load_inputs(EX, corrupt)
    good = write_h5(tmp_path / "good.h5", theta=np.ones((4, 4)), uobs=np.zeros((4, 4)))
    assert weanj.load_inputs(EX, good)["theta"].sum() == 16


def test_a_hang_in_the_probe_ends_at_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("WEANJ_H5_TIMEOUT_S", "1")
    corrupt = tmp_path / "hang.h5"
    corrupt.write_bytes(_patched(_pick("hang", 1)[0]))
    started = time.perf_counter()
    with pytest.raises(weanj.InputFileError, match="did not finish within 1 s") as excinfo:
        weanj.load_inputs(EX, corrupt)
    assert time.perf_counter() - started < 10
    assert "WEANJ_H5_TIMEOUT_S" in str(excinfo.value)


# --- how files are probed --------------------------------------------------------------


@pytest.fixture
def probes(monkeypatch):
    """The list of contents the probe process was asked about (from now on)."""
    _safeh5._reset()
    seen: list[str] = []
    real = _safeh5._PROBER.probe

    def counting(data, lookups, limit):
        seen.append(_safeh5.digest(data))
        return real(data, lookups, limit)

    monkeypatch.setattr(_safeh5._PROBER, "probe", counting)
    yield seen
    _safeh5._reset()


def test_each_distinct_content_is_probed_once(tmp_path, probes):
    a = write_h5(tmp_path / "a.h5", theta=np.ones((4, 4)), uobs=np.zeros((4, 4)))
    weanj.load_inputs(EX, a)
    weanj.load_inputs(EX, a)
    shutil.copyfile(a, tmp_path / "copy.h5")
    weanj.load_inputs(EX, tmp_path / "copy.h5")  # same bytes, another name
    assert len(probes) == 1
    write_h5(tmp_path / "a.h5", theta=np.full((4, 4), 2.0), uobs=np.zeros((4, 4)))
    assert weanj.load_inputs(EX, a)["theta"][0, 0] == 2.0
    assert len(probes) == 2


def test_files_weanj_wrote_are_not_probed(project, tmp_path, probes):
    path = weanj.write_inputs(EX, tmp_path / "inputs.h5")
    weanj.load_inputs(EX, path)
    weanj.load_inputs(EX)  # byte-identical to what write_inputs just wrote
    weanj.save_gradient(EX, "jax-jacobi", np.ones((64, 64)))
    weanj.load_gradient(EX, "jax-jacobi")
    weanj.save_gradient(EX, "jax-jacobi", np.ones((64, 64), dtype=np.float32))
    weanj.load_gradient(EX, "jax-jacobi", dtype="float32")
    assert probes == []
    mine = write_h5(tmp_path / "mine.h5", theta=np.ones((4, 4)), uobs=np.zeros((4, 4)))
    weanj.load_inputs(EX, mine)  # written by someone else: probed
    assert probes == [_safeh5.digest(mine.read_bytes())]


def test_the_bytes_parsed_are_the_bytes_probed(tmp_path, monkeypatch):
    """A file replaced after the probe does not reach the parser: the parent parses the
    bytes it read (and hashed) once."""
    path = write_h5(tmp_path / "x.h5", theta=np.ones((4, 4)), uobs=np.zeros((4, 4)))
    real = _safeh5.check

    def check_then_swap(data, *args, **kwargs):
        real(data, *args, **kwargs)
        write_h5(path, theta=np.full((4, 4), 7.0), uobs=np.zeros((4, 4)))

    monkeypatch.setattr(_safeh5, "check", check_then_swap)
    assert weanj.load_inputs(EX, path)["theta"][0, 0] == 1.0


def test_probe_limit_variable(tmp_path, monkeypatch, probes, capsys):
    path = write_h5(tmp_path / "x.h5", theta=np.ones((4, 4)), uobs=np.zeros((4, 4)))
    monkeypatch.setenv("WEANJ_H5_TIMEOUT_S", "0")  # no probe: parsed here, unprotected
    weanj.load_inputs(EX, path)
    assert probes == []
    monkeypatch.setenv("WEANJ_H5_TIMEOUT_S", "soon")
    # Another file (one already read is not read again in this process: no probe to time).
    other = write_h5(tmp_path / "y.h5", theta=np.full((4, 4), 2.0), uobs=np.zeros((4, 4)))
    assert main(["run", EX, "jax-jacobi", "--inputs", str(other)]) == 2
    assert_one_line_error(capsys.readouterr().err, "WEANJ_H5_TIMEOUT_S must be a number")


def test_a_directory_given_as_inputs_is_named_as_one(tmp_path, capsys):
    assert main(["run", EX, "jax-jacobi", "--inputs", str(tmp_path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "is a directory, not a file")


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
    shared = weanj.read_inputs(EX)
    ev = weanj.evaluate(EX, "jax-jacobi", params={"K": 3}, dtype="float32")
    assert differences(ev, shared) == ["K3", "float32"] and not shared.matches(ev)
    note = apart_note(ev, shared)
    assert "not saved to the store" in note and "K3, float32" in note
    assert (
        default_path(ev, shared) == project / "results" / EX / "runs" / "jax-jacobi-K3-float32.h5"
    )
    # On the shared inputs, in either dtype: the store, and nothing to explain.
    for dtype in ("float64", "float32"):
        same = weanj.evaluate(EX, "jax-jacobi", dtype=dtype)
        assert shared.matches(same) and differences(same, shared) == []
        assert apart_note(same, shared) == ""
        assert default_path(same, shared) == weanj.gradient_path(EX, "jax-jacobi", dtype=dtype)
    same = weanj.evaluate(EX, "jax-jacobi")
    with h5py.File(weanj.save_gradient(EX, "jax-jacobi", same.gradient, loss=same.loss), "r") as f:
        assert f.attrs["inputs_sha256"] == weanj.load_inputs(EX)["sha256"]
        assert f.attrs["key"] == shared.key("float64")
