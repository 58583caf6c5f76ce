"""Files weanj reads are hostile until proven otherwise; files it writes are whole.

- The corrupted-inputs battery (`tests/data/corrupt/`, found by `benchmarks/fuzz_h5.py`):
  single-byte patches of a small inputs file that make plain h5py segfault or hang. The
  base file is a format-1 inputs file (what weanj wrote when the battery was found); each
  case is also applied to the same field of the format-2 file weanj writes now for the
  same arrays (found by the bytes around the patch). Each file is first confirmed
  against plain h5py in a child process (so the battery cannot go stale unnoticed), then
  `weanj check` in a fresh process, and meanwhile `weanj inputs verify` and `weanj run
  --inputs` in this one, must each print one line and exit 2. The same damage in a
  gradient file of the store is a verdict of `weanj diff`, not a crash.
- How `_safeh5` probes: once per distinct content, never for files weanj just wrote, the
  parent parsing the very bytes that were probed, the probe process restarted after a
  crash or a hang.
- Bounds: on a file's size, on the bytes its datasets declare (a decompression bomb),
  benchmark files that are pipes, devices, deep JSON or huge; symbolic link loops.
- Atomic writes: `weanj plot` keeps its old figures until new ones exist.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import tracemalloc
from pathlib import Path

import h5py
import numpy as np
import pytest

import weanj
from weanj._cli import main
from weanj._io import _inputs, _probe_process, _safeh5
from weanj._model import from_arrays

from .conftest import REPO
from .helpers import (
    PYTHON,
    assert_one_line_error,
    bench_record,
    main_in_thread,
    subprocess_env,
    write_h5,
)

CORRUPT = REPO / "tests" / "data" / "corrupt"
BATTERY = json.loads((CORRUPT / "cases.json").read_text())
BASE = (CORRUPT / BATTERY["base"]).read_bytes()
# $WEANJ_H5_TIMEOUT_S in the battery: a hang costs this much per probe (the limit runs once
# the probe process is up; a file of a few kB that libhdf5 parses, or crashes on, takes
# milliseconds, and 2 s keeps a margin for a busy machine).
PROBE_LIMIT_S = 2
# What marks a command that hangs (the probe itself gives up after PROBE_LIMIT_S): far
# beyond what the battery's commands take side by side on a busy machine.
COMMAND_LIMIT_S = 300
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
    inputs = from_arrays(weanj.example(EX), arrays, {"K": K})
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


# The same patches in a file of today's format by default; in a format-1 file (refused
# after the probe, with what rewrites it) with `-m slow`.
@pytest.mark.parametrize("fmt", [pytest.param("format1", marks=pytest.mark.slow), "format2"])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_corrupt_file_is_one_line_and_exit_2(project, tmp_path, monkeypatch, case, fmt):
    """`weanj check` on the file as the shared inputs, in a fresh process, and meanwhile in
    this one `weanj inputs verify` (the same file) and `weanj run --inputs` (a copy): each
    one line naming the file and what libhdf5 did, exit 2, no variant run. This process
    first forgets what it probed before, as a fresh one has probed nothing; its second
    command is then answered from its first one's probe (the same bytes), as within one
    process. So two probes meet the file, not three: in the hang case each waits out
    PROBE_LIMIT_S."""
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes(_patched(case) if fmt == "format1" else _patched_format2(case, tmp_path))
    raw = _raw_h5py(corrupt, limit=3 if case["kind"] == "hang" else 60)
    expected = "hang" if case["kind"] == "hang" else f"crash ({case['signal']})"
    assert raw == expected, (
        f"plain h5py no longer {expected}s on this case (it says {raw!r}): libhdf5 changed; "
        "refresh the battery with `python benchmarks/fuzz_h5.py --write-cases`"
    )

    shutil.copyfile(corrupt, project / "shared_inputs" / f"{EX}.h5")
    monkeypatch.setenv("WEANJ_H5_TIMEOUT_S", str(PROBE_LIMIT_S))
    started = time.perf_counter()
    fresh = subprocess.Popen(
        [PYTHON, "-m", "weanj", "check", EX],
        env=subprocess_env(project, WEANJ_H5_TIMEOUT_S=str(PROBE_LIMIT_S)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    here = {}
    try:
        _safeh5._reset()
        for name, argv in (
            ("verify", ["inputs", "verify", EX]),
            ("run", ["run", EX, "jax-jacobi", "--inputs", str(corrupt)]),
        ):
            here[name] = _main_within(argv, COMMAND_LIMIT_S - (time.perf_counter() - started))
            if here[name][0] is None:
                pytest.fail(f"`weanj {name}` took longer than {COMMAND_LIMIT_S} s")
        try:
            _, err = fresh.communicate(timeout=COMMAND_LIMIT_S - (time.perf_counter() - started))
        except subprocess.TimeoutExpired:
            pytest.fail(f"`weanj check` took longer than {COMMAND_LIMIT_S} s")
    finally:
        if fresh.poll() is None:
            fresh.kill()
            fresh.communicate()
        _safeh5._reset()  # no later test is answered from this file's outcome
    here["check"] = (fresh.returncode, err)
    words = (
        (f"did not finish within {PROBE_LIMIT_S} s", "WEANJ_H5_TIMEOUT_S sets the limit")
        if case["kind"] == "hang"
        else (f"libhdf5 crashed ({case['signal']})",)
    )
    for name, (code, err) in here.items():
        assert code == 2, f"weanj {name}: {err}"
        assert_one_line_error(err, *words, "corrupt.h5" if name == "run" else f"{EX}.h5")
    assert not (project / "results" / EX / "gradients").exists()  # no variant ran


def test_a_crashing_gradient_file_is_a_verdict_not_a_crash(project, capsys):
    """The battery's crash, on a text attribute's datatype, in a gradient file of the store:
    `weanj diff` (in this process, its probe started afresh) judges the file unreadable and
    still reads the others."""
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
    _safeh5._reset()  # `weanj diff` probes the file again, as a fresh process does
    try:
        code = main(["diff", EX, "--json"])
    finally:
        _safeh5._reset()
    out, err = capsys.readouterr()
    assert code == 1, err  # a failing verdict, not an error or a crash
    assert "Traceback" not in out + err
    files = {f["case"]: f for f in json.loads(out)["files"]}
    crashed = files[f"{EX}::file::jax-jacobi"]
    assert crashed["verdict"] == "FAIL" and crashed["failed"]
    assert "libhdf5 crashed (SIGSEGV)" in crashed["reason"] and str(path) in crashed["reason"]
    assert files[f"{EX}::file::recorded/jax-jacobi"]["verdict"] == "ok"  # still read


def test_a_crash_in_the_probe_is_an_error_here_and_the_next_file_reads(tmp_path):
    """In this very process: the crash is the probe's, not ours."""
    case = _pick("crash", 1)[0]
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes(_patched(case))
    with pytest.raises(weanj.InputFileError, match=rf"libhdf5 crashed \({case['signal']}\)"):
        weanj.load_inputs(EX, corrupt)
    good = write_h5(tmp_path / "good.h5", theta=np.ones((4, 4)), uobs=np.zeros((4, 4)))
    assert weanj.load_inputs(EX, good)["theta"].sum() == 16


# slow: held by test_corrupt_file_is_one_line_and_exit_2's hang case, whose `weanj inputs
# verify` in this process meets the same hang in the probe, which ends at the limit with
# one line naming WEANJ_H5_TIMEOUT_S
@pytest.mark.slow
def test_a_hang_in_the_probe_ends_at_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("WEANJ_H5_TIMEOUT_S", "1")
    corrupt = tmp_path / "hang.h5"
    corrupt.write_bytes(_patched(_pick("hang", 1)[0]))
    started = time.perf_counter()
    with pytest.raises(weanj.InputFileError, match="did not finish within 1 s") as excinfo:
        weanj.load_inputs(EX, corrupt)
    assert time.perf_counter() - started < COMMAND_LIMIT_S  # a hang would never end
    assert "WEANJ_H5_TIMEOUT_S" in str(excinfo.value)


# --- how files are probed --------------------------------------------------------------


@pytest.fixture
def probes(monkeypatch):
    """The list of contents the probe process was asked about (from now on)."""
    _safeh5._reset()
    seen: list[str] = []
    real = _probe_process.PROBER.probe

    def counting(data, lookups, limit):
        seen.append(_safeh5.digest(data))
        return real(data, lookups, limit)

    monkeypatch.setattr(_probe_process.PROBER, "probe", counting)
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


# --- bounds on what is read; whole files written ----------------------------------------------


def _bench_record(variant: str, n: int, **changes) -> dict:
    """A benchmark record of 01-jacobi at size n, K = 2, with its timings and memory."""
    timings = {"forward_s": 1e-4, "grad_s": 2e-4, "compile_s": 0.1, "peak_mem_bytes": 100}
    return bench_record(variant, n, 2, **timings, size=n) | changes


def _plots(project) -> dict[str, bytes]:
    folder = project / "results" / EX / "plots"
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))}


def test_plot_keeps_the_old_figures_until_new_ones_exist(project, capsys, monkeypatch):
    weanj.write_results(
        EX, "jax", "cpu", [_bench_record("jax-jacobi", 8), _bench_record("jax-jacobi", 16)], env={}
    )
    plots = project / "results" / EX / "plots"
    plots.mkdir(parents=True)
    old = weanj_png(EX, b"old time figure")
    gone = weanj_png(EX, b"a figure of a series no longer stored")
    (plots / "time_vs_n.png").write_bytes(old)
    (plots / "memory_vs_K.png").write_bytes(gone)
    (plots / "mine.png").write_bytes(b"a user's own picture: never removed")
    from matplotlib.figure import Figure

    real = Figure.savefig
    calls = []

    def fails_second(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", fails_second)
    assert main(["plot", EX]) == 2
    assert_one_line_error(capsys.readouterr().err, "No space left on device")
    kept = _plots(project)
    assert kept["memory_vs_K.png"] == gone  # not yet removed
    assert kept["time_vs_n.png"].startswith(b"\x89PNG") and kept["time_vs_n.png"] != old
    assert not [p for p in plots.iterdir() if p.suffix != ".png"]  # no temporaries left
    monkeypatch.setattr(Figure, "savefig", real)
    assert main(["plot", EX]) == 0
    capsys.readouterr()
    assert "memory_vs_K.png" not in _plots(project)  # now that the new ones exist
    assert _plots(project)["mine.png"] == b"a user's own picture: never removed"


def weanj_png(example: str, body: bytes) -> bytes:
    """A PNG as weanj's pictures are marked (a `weanj` text chunk naming the example):
    the signature, that chunk, a private chunk holding `body`, the end."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    text = chunk(b"tEXt", b"weanj\0" + example.encode())
    return b"\x89PNG\r\n\x1a\n" + text + chunk(b"prIv", body) + chunk(b"IEND", b"")


def _main_within(argv: list[str], seconds: float) -> tuple[int | None, str]:
    """`weanj ARGV` in a thread of this process (`main_in_thread`): its exit code, or None
    if it had not ended within `seconds`, and what it wrote on stderr."""
    code, _, err = main_in_thread(argv, seconds)
    return code, err


# The files of `test_benchmark_files_that_are_no_records_files_are_skipped`: {name: kind}.
NO_RECORDS = {
    "fifo-cpu.json": "a pipe that is never written (an open for reading blocks forever)",
    "zero-cpu.json": "a link to /dev/zero (a read never ends)",
    "deep-cpu.json": "JSON nested past the parser's depth (json.loads: RecursionError)",
    "huge-cpu.json": "5 GiB (sparse: refused by its size, never read)",
}


def test_benchmark_files_that_are_no_records_files_are_skipped(project):
    """Each file of `NO_RECORDS` beside a good benchmark file, all in one `weanj plot` run:
    the plot ends (exit 0), and each is skipped with one warning of its own naming it."""
    weanj.write_results(
        EX, "jax", "cpu", [_bench_record("jax-jacobi", 8), _bench_record("jax-jacobi", 16)], env={}
    )
    folder = project / "results" / EX / "bench"
    os.mkfifo(folder / "fifo-cpu.json")
    os.symlink("/dev/zero", folder / "zero-cpu.json")
    (folder / "deep-cpu.json").write_text("[" * 100_000 + "]" * 100_000)
    with open(folder / "huge-cpu.json", "wb") as f:
        f.truncate(5 * 2**30)
    code, err = _main_within(["plot", EX], COMMAND_LIMIT_S)
    assert code == 0, (code, err)
    messages = re.split(r"\n(?! )", err)  # a long message goes on, indented, below its first line
    for name, kind in NO_RECORDS.items():
        said = [m.replace("\n  ", " ") for m in messages if name in m]
        assert len(said) == 1, (kind, err)
        (warning,) = said
        assert warning.startswith(f"weanj: warning: benchmark file {folder / name}"), kind
        assert warning.endswith("(skipped)") and len(warning) < 260, (kind, warning)
    assert "Traceback" not in err


def test_files_weanj_reads_have_a_size_bound(project, capsys, monkeypatch, tmp_path):
    shared = project / "shared_inputs" / f"{EX}.h5"
    monkeypatch.setenv("WEANJ_MAX_FILE_BYTES", "4096")
    assert main(["run", EX, "jax-jacobi"]) == 2
    assert_one_line_error(
        capsys.readouterr().err,
        f"inputs file {shared} is {shared.stat().st_size / 1024:.3g} kiB, past the 4 kiB weanj",
        "reads from one file ($WEANJ_MAX_FILE_BYTES)",
    )
    monkeypatch.setenv("WEANJ_MAX_FILE_BYTES", "many")
    assert main(["run", EX, "jax-jacobi"]) == 2
    assert_one_line_error(capsys.readouterr().err, "WEANJ_MAX_FILE_BYTES must be a number of bytes")
    monkeypatch.delenv("WEANJ_MAX_FILE_BYTES")
    huge = tmp_path / "huge.h5"
    with open(huge, "wb") as f:
        f.truncate(5 * 2**30)  # over the default 4 GiB: refused without reading it
    tracemalloc.start()  # (was: within 10 s; memory, unlike time, a busy machine leaves alone)
    try:
        code = main(["run", EX, "jax-jacobi", "--inputs", str(huge)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2 and peak < 64 * 2**20, peak  # not one GiB of it was read
    assert_one_line_error(capsys.readouterr().err, f"{huge} is 5 GiB, past the 4 GiB weanj reads")


def test_a_small_compressed_file_declaring_much_is_refused_whatever_its_size(
    project, capsys, monkeypatch, tmp_path
):
    """The bound is on the datasets' declared bytes, all together, before any is read:
    a compressed file of a few kB declaring 256 MiB (one chunk written, the others read as
    fill values) is refused at a bound of 128 MiB. The earlier bound grew with 1024 × the
    file's size, so a 2 MiB file could make weanj decompress 2.3 GiB."""
    bomb = tmp_path / "bomb.h5"
    with h5py.File(bomb, "w") as f:
        d = f.create_dataset(
            "theta", shape=(4096, 8192), dtype="f8", chunks=(512, 512), compression="gzip"
        )
        d[:512, :512] = 1.0  # one chunk written: the data is compressed, not missing
        f.create_dataset("uobs", data=np.zeros((64, 64)))
    assert bomb.stat().st_size < 2**20
    monkeypatch.setenv("WEANJ_MAX_FILE_BYTES", str(2**27))
    _safeh5._reset()
    assert main(["run", EX, "jax-jacobi", "--inputs", str(bomb)]) == 2
    assert_one_line_error(
        capsys.readouterr().err,
        f"cannot read inputs file {bomb}",
        "(/theta declares 256 MiB, past the 128 MiB weanj reads from one file",
    )


def test_symbolic_link_loops_are_one_line(project, capsys, tmp_path):
    loop = tmp_path / "loop.h5"
    os.symlink(loop.name, loop)
    assert main(["run", EX, "jax-jacobi", "--inputs", str(loop)]) == 2
    assert_one_line_error(
        capsys.readouterr().err, f"inputs file {loop} is a symbolic link to nothing"
    )
    # the cheapest run (K = 1): where it writes is what is at stake; the link is replaced
    assert main(["run", EX, "jax-jacobi", "--K", "1", "--out", str(loop)]) == 0
    assert loop.is_file() and not loop.is_symlink()
    capsys.readouterr()
    in_store = project / "results" / EX / "gradients" / "jax-jacobi.h5"
    in_store.parent.mkdir(parents=True)
    os.symlink(in_store.name, in_store)
    judgement = weanj.diff(EX)  # a verdict on that file, not an error
    (j,) = [j for j in judgement[EX].of_kind("file") if j.case == f"{EX}::file::jax-jacobi"]
    assert j.verdict == weanj.Verdict.FAIL and j.reason == (
        f"{in_store} is not a regular file; weanj reads only regular files"
    )
    assert judgement.exit_code == 1 and "jax-jacobi" not in judgement[EX].subjects


# --- never through a link: every file weanj writes replaces a link, never its target ---------


def test_check_and_report_never_write_through_a_link(tmp_path):
    """check.json, the report, a gradient file and an evaluation record, each replaced by a
    link to a file outside the project: `weanj check` and `weanj report` (in this process,
    as a fresh one runs them) replace the links and leave the outside files byte for byte
    as they were (docs/files.md, "Links")."""
    from .projects import tiny_project, weanj_here

    (tmp_path / "project").mkdir()
    root = tiny_project(tmp_path / "project")
    first = weanj_here(root, "check", "--dtype", "float64")
    assert first.returncode == 0, first.stdout + first.stderr
    assert weanj_here(root, "report").returncode == 0
    results = root / "results"
    targets = [
        results / "10-tiny" / "check.json",
        results / "report.html",
        results / "10-tiny" / "gradients" / "jax-a.h5",
        results / "10-tiny" / "evaluations" / "jax-b.npz",
    ]
    outside = tmp_path / "outside"
    outside.mkdir()
    precious = {}
    for i, target in enumerate(targets):
        assert target.is_file(), target
        kept = outside / f"{i}-{target.name}"
        kept.write_bytes(f"someone else's file {i}\n".encode())
        precious[kept] = kept.read_bytes()
        target.unlink()
        target.symlink_to(kept)
    r = weanj_here(root, "check", "--dtype", "float64")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    r = weanj_here(root, "report")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    for kept, data in precious.items():
        assert kept.read_bytes() == data, kept
    for target in targets:
        assert target.is_file() and not target.is_symlink(), target
    data = json.loads(targets[0].read_text())
    assert data["verdict"] == "ok"
    assert targets[1].read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    with h5py.File(targets[2], "r") as f:
        assert f.attrs["variant"] == "jax-a"
    assert not list(outside.glob(".*.tmp")) and not list(results.rglob(".*.tmp"))


def test_a_folder_of_the_project_linked_outside_is_never_written_into(tmp_path):
    """`results/10-tiny/evaluations` a link to a folder outside the project, holding a file
    of a record's name: `weanj check` neither reads it as a record nor writes there; it
    says why in one line and judges as before."""
    from .projects import tiny_project, weanj_here

    (tmp_path / "project").mkdir()
    root = tiny_project(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "jax-a.npz").write_bytes(b"someone else's file\n")
    folder = root / "results" / "10-tiny" / "evaluations"
    folder.parent.mkdir(parents=True)
    folder.symlink_to(elsewhere, target_is_directory=True)
    r = weanj_here(root, "check", "--dtype", "float64")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["jax-a.npz"]
    assert (elsewhere / "jax-a.npz").read_bytes() == b"someone else's file\n"
    said = [line for line in r.stdout.splitlines() if "could not write" in line]
    assert said and all("is a symbolic link to" in line for line in said), r.stdout
    assert "outside the project" in said[0]
