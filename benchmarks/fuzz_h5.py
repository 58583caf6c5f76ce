"""Find corrupt HDF5 files that crash or hang libhdf5: the battery of tests/data/corrupt/.

Run by hand (minutes), from the repository root:

    python benchmarks/fuzz_h5.py                 # fuzz tests/data/corrupt/base.h5
    python benchmarks/fuzz_h5.py --make-base     # (re)write the base file first
    python benchmarks/fuzz_h5.py --write-cases   # and record what it found in cases.json
    python benchmarks/fuzz_h5.py --measure shared_inputs/*.h5   # what the probe costs

The base file is a small inputs file in the shared inputs' format (example 01-jacobi,
n = 4: datasets `theta`, `uobs`, string and integer attributes), as weanj writes it. Each
trial changes one byte of its metadata (the datasets' raw values are skipped: changing
them cannot crash a reader) to one of: the byte xor 0xFF, 0x00, 0xFF, and each of its
eight single-bit flips. A forked child reads the mutated file with plain h5py, from its
path, the way weanj read files before `_safeh5` (open, every attribute, every object,
every dataset); an alarm ends it after `--timeout` seconds. A child killed by a signal
is a crash, one ended by the alarm a hang. Each candidate is then confirmed twice in a
fresh interpreter (`python -c`): read from its path, and read from memory
(`h5py.File(io.BytesIO(...))`, as `_safeh5` does); only cases that crash or hang both
ways are kept, so the battery tests the probe on what the parent would otherwise hit.

`cases.json` lists `{offset, value, kind, signal}` patches of the base file; the test
(tests/test_hardening.py) first confirms each still crashes or hangs raw h5py, so a new
libhdf5 that no longer does cannot leave the battery silently testing nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
FOLDER = REPO / "tests" / "data" / "corrupt"


def read_all(source) -> None:
    """What a reader of the file does, as plain h5py: every attribute, object and dataset
    of `source` (a path or a file object)."""
    import h5py

    def read(obj) -> None:
        dict(obj.attrs.items())
        if isinstance(obj, h5py.Dataset):
            obj[()]

    with h5py.File(source, "r") as f:
        read(f)
        f.visititems(lambda name, obj: read(obj))  # None: visit every object


def make_base(path: Path) -> None:
    """The base file: 01-jacobi's inputs format, n = 4, written as `write_inputs` does."""
    import h5py

    rng = np.random.default_rng(0)
    arrays = {"theta": rng.standard_normal((4, 4)), "uobs": rng.standard_normal((4, 4))}
    sha = hashlib.sha256()
    for a in arrays.values():
        sha.update(np.ascontiguousarray(a, dtype="<f8").tobytes())
    attrs = {
        "example": "01-jacobi",
        "n": 4,
        "K": 20,
        "seed": 0,
        "generator": "weanj-inputs/1",
        "layout": "C",
        "sha256": sha.hexdigest(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w", track_order=False) as f:
        for name, a in arrays.items():
            f.create_dataset(name, data=a, track_times=False)
        for key, value in attrs.items():
            f.attrs[key] = value


def raw_ranges(path: Path) -> list[tuple[int, int]]:
    """Byte ranges of the datasets' raw values (skipped: they cannot crash a reader)."""
    import h5py

    with h5py.File(path, "r") as f:
        return [
            (f[name].id.get_offset(), f[name].id.get_offset() + f[name].id.get_storage_size())
            for name in f
        ]


def mutations(data: bytes, skip: list[tuple[int, int]]):
    for offset, byte in enumerate(data):
        if any(lo <= offset < hi for lo, hi in skip):
            continue
        values = {byte ^ 0xFF, 0x00, 0xFF} | {byte ^ (1 << k) for k in range(8)}
        values.discard(byte)
        for value in sorted(values):
            yield offset, value


def patched(data: bytes, offset: int, value: int) -> bytes:
    out = bytearray(data)
    out[offset] = value
    return bytes(out)


def fuzz(base: bytes, skip, timeout: int, jobs: int, say) -> list[dict]:
    """Every mutation, read by a forked child; returns the crashes and hangs found."""
    import h5py  # noqa: F401  (imported once, before forking)

    work = list(mutations(base, skip))
    scratch = Path(tempfile.mkdtemp(dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    running: dict[int, tuple[int, int]] = {}
    found, done, t0 = [], 0, time.time()

    def reap(block: bool):
        nonlocal done
        pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        if pid == 0:
            return False
        offset, value = running.pop(pid)
        done += 1
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            kind = "hang" if sig == signal.SIGALRM else "crash"
            found.append(
                {"offset": offset, "value": value, "kind": kind, "signal": signal.Signals(sig).name}
            )
            say(f"  offset {offset} value {value:#04x}: {kind} ({signal.Signals(sig).name})")
        if done % 2000 == 0:
            say(f"{done}/{len(work)} trials, {time.time() - t0:.0f} s, {len(found)} found")
        return True

    for i, (offset, value) in enumerate(work):
        while len(running) >= jobs:
            reap(block=True)
        path = scratch / f"trial{i % (jobs * 4)}.h5"
        path.write_bytes(patched(base, offset, value))
        pid = os.fork()
        if pid == 0:  # the child: read, and leave without any cleanup
            signal.alarm(timeout)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # libhdf5's error stacks
            try:
                read_all(str(path))
                os._exit(0)
            except BaseException:
                os._exit(1)
        running[pid] = (offset, value)
    while running:
        reap(block=True)
    for p in scratch.iterdir():
        p.unlink()
    scratch.rmdir()
    return found


def confirm(data: bytes, from_memory: bool, timeout: float) -> tuple[str, str]:
    """Read `data` with plain h5py in a fresh interpreter: ("crash", signal), ("hang", ""),
    ("error", "") or ("ok", "")."""
    with tempfile.NamedTemporaryFile(suffix=".h5", delete=False) as f:
        f.write(data)
    source = "io.BytesIO(open(sys.argv[1], 'rb').read())" if from_memory else "sys.argv[1]"
    code = (
        f"import io, sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        f"from fuzz_h5 import read_all\nread_all({source})\n"
    )
    try:
        rc = subprocess.run(
            [sys.executable, "-c", code, f.name],
            capture_output=True,
            timeout=timeout,
            check=False,
        ).returncode
    except subprocess.TimeoutExpired:
        return "hang", ""
    finally:
        os.unlink(f.name)
    if rc < 0:
        return "crash", signal.Signals(-rc).name
    return ("ok" if rc == 0 else "error"), ""


def measure(paths: list[Path], say) -> None:
    """The cost of weanj's safe opening (`weanj._io._safeh5`): the probe process's start (once
    per weanj process), one probe per file, and parsing from memory against plain h5py."""
    import statistics

    import h5py

    from weanj._io import _probe_process, _safeh5

    def median_ms(fn, n=7):
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return 1e3 * statistics.median(times)

    def read(f):
        dict(f.attrs.items())
        for name in f:
            if isinstance(f[name], h5py.Dataset):
                f[name][()]

    def start():
        _safeh5._reset()
        _probe_process.PROBER._proc = _probe_process.PROBER._start()

    say(f"probe process start: {median_ms(start, 5):.0f} ms (once per weanj process)")
    for path in paths:
        data = path.read_bytes()

        def probe(data=data):
            _safeh5._memo.clear()
            assert _safeh5.probe(data).ok

        def plain(path=path):
            with h5py.File(path, "r") as f:
                read(f)

        def safe(path=path):  # memoised: reading the bytes, hashing them, parsing from memory
            with _safeh5.open_h5(path, "file") as f:
                read(f)

        say(
            f"{path} ({len(data)} bytes): probe {median_ms(probe):.1f} ms; then open and read "
            f"{median_ms(safe):.2f} ms (plain h5py {median_ms(plain):.2f} ms)"
        )
    _safeh5._reset()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=FOLDER / "base.h5")
    parser.add_argument("--make-base", action="store_true", help="write the base file first")
    parser.add_argument("--timeout", type=int, default=3, help="seconds before a hang")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--write-cases", action="store_true", help="write cases.json")
    parser.add_argument("--measure", nargs="+", type=Path, metavar="FILE", help="only measure")
    args = parser.parse_args()

    def say(message):
        print(message, file=sys.stderr, flush=True)

    if args.measure:
        measure(args.measure, say)
        return 0

    if args.make_base:
        make_base(args.base)
        say(f"wrote {args.base} ({args.base.stat().st_size} bytes)")
    base = args.base.read_bytes()
    skip = raw_ranges(args.base)
    say(f"fuzzing {args.base} ({len(base)} bytes, raw values at {skip} skipped)")
    found = fuzz(base, skip, args.timeout, args.jobs, say)
    kept = []
    for case in found:
        data = patched(base, case["offset"], case["value"])
        # A hang must outlast twice the fuzz's limit in a fresh interpreter too.
        limit = 2 * args.timeout + 5
        on_disk = confirm(data, from_memory=False, timeout=limit)
        in_memory = confirm(data, from_memory=True, timeout=limit)
        say(f"  confirm {case['offset']}/{case['value']:#04x}: path {on_disk}, memory {in_memory}")
        if on_disk[0] == case["kind"] and in_memory[0] == case["kind"]:
            kept.append({**case, "signal": on_disk[1] if case["kind"] == "crash" else ""})
    kinds = {k: sum(c["kind"] == k for c in kept) for k in ("crash", "hang")}
    say(f"confirmed {len(kept)} of {len(found)}: {kinds}")
    print(json.dumps(kept, indent=1))
    if args.write_cases:
        payload = {
            "base": args.base.name,
            "base_sha256": hashlib.sha256(base).hexdigest(),
            "found_with": "python benchmarks/fuzz_h5.py --write-cases",
            "cases": kept,
        }
        (args.base.parent / "cases.json").write_text(json.dumps(payload, indent=1) + "\n")
        say(f"wrote {args.base.parent / 'cases.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
