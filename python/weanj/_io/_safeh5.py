"""Opening HDF5 files that weanj did not itself just write, without trusting libhdf5.

A file whose metadata is damaged can make libhdf5 crash the process (SIGSEGV while
decoding a string attribute's type) or loop forever (a corrupt heap length): no Python
`except` can catch either. So before h5py parses a file in this process, the very same
bytes are parsed in a child process with a time limit:

1. The file is read into memory once, and its sha256 taken.
2. A probe process (`sys.executable`, importing only h5py and numpy) opens the bytes from
   memory, walks every object, reads every attribute and dataset, looks up the names the
   reader will look up, and reports problems that are not crashes: datasets whose values
   are not stored in the file itself (virtual datasets, external storage, external links,
   values never written), which h5py would read as zeros or from elsewhere.
3. A crash (a signal), a time-out or a problem becomes an `InputFileError` naming the file
   and what happened; otherwise this process parses the bytes it hashed
   (`h5py.File(io.BytesIO(data))`), so nothing can change between the probe and the read.

One probe process serves every file of a weanj process: it starts once (~0.25 s on an
idle machine, nearly all of it importing h5py), then each file costs a few milliseconds
(4 ms for a 70 kB inputs file); it is started afresh after a file that crashed it, hung
it or made it report an error. Outcomes are memoised by the bytes' sha256, and files
weanj writes itself are trusted without a probe (`trust`). The price of parsing from
memory is holding the file's bytes (twice, briefly: here and in the probe). The probe
process itself is `_probe_process`; reading a file's bytes, bounded, is `_file_bytes`.

Across processes, a project's check keeps a ledger (`keep_probes`,
`results/.weanj-h5-probed.json`) of the digests of bytes found safe and of the files weanj
wrote or found safe, each by its device, inode, size and nanosecond modification time: a
file unchanged since is opened in place, neither read first nor probed, so that a
re-check reads each file once. A file changed in any way (another size, or a later
modification time) is read and probed again. Like the evaluation records, this guards
against accidents and damaged files, not against someone who edits the ledger.

`WEANJ_H5_TIMEOUT_S` sets the time limit per file (default 10 s); `0` turns the probe off
(files are then parsed in this process unprotected, for platforms that cannot start a
child Python). `WEANJ_MAX_FILE_BYTES` (default 4 GiB) bounds what one file may make weanj
read: its size on disk (only regular files are read), and, checked by the probe before it
reads them, the declared size of all its datasets together, so that a small compressed
file declaring gigabytes is refused, not decompressed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from .._errors import InputFileError
from ._file_bytes import max_file_bytes, read_bytes
from ._probe_process import OK, PROBER, TIMEOUT_VARIABLE, Outcome, timeout_s

_memo: dict[tuple[str, tuple[str, ...], int], Outcome] = {}
_trusted: set[str] = set()
_memo_lock = threading.Lock()
# The digests of bytes that probed ok (or that weanj wrote) in earlier processes of this
# project (`keep_probes`): a re-check reads each file once and hashes it, and probes only
# bytes it has not seen. At most `LEDGER_SIZE` digests, the latest kept; written once,
# when the check ends (`dirty`: something new to write).
_ledger: dict[str, object] = {"path": None, "known": None, "dirty": False}
LEDGER_SIZE = 2000


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def trust(data: bytes) -> None:
    """Mark bytes that weanj itself just wrote with h5py as safe to parse without a probe."""
    sha = digest(data)
    with _memo_lock:
        _trusted.add(sha)
    _remember(sha)


@contextlib.contextmanager
def keep_probes(path: Path) -> Iterator[None]:
    """While the block runs (a check), remember the files and bytes found safe in the
    JSON file `path` (weanj's own hidden memo, `results/.weanj-h5-probed.json`), across
    processes; after it, in this process only. The file is written once, as the block
    ends (a process that dies first wrote nothing: the next check probes again)."""
    with _memo_lock:
        _ledger.update(path=path, known=None, dirty=False)
    try:
        yield
    finally:
        with _memo_lock:
            known, dirty = _ledger["known"], _ledger["dirty"]
            _ledger.update(path=None, known=None, dirty=False)
        if dirty and known:
            _write_ledger(Path(path), list(known)[-LEDGER_SIZE:])  # type: ignore[arg-type]


def _known() -> dict[str, None]:
    """The ledger's digests, read once (in order, oldest first; {} without a ledger or
    where it cannot be read: then every file is probed)."""
    path = _ledger["path"]
    if _ledger["known"] is None:
        found: dict[str, None] = {}
        if path is not None:
            try:
                data = json.loads(Path(path).read_text(encoding="utf-8"))
                if isinstance(data, list) and all(isinstance(x, str) for x in data):
                    found = dict.fromkeys(data[-LEDGER_SIZE:])
            except (OSError, ValueError, RecursionError):
                pass
        _ledger["known"] = found
    return _ledger["known"]  # type: ignore[return-value]


def _remember(entry: str) -> None:
    """Add an entry to the ledger (a digest of bytes weanj wrote, or one with the names
    it was probed for), written when `keep_probes` ends, where it is new."""
    with _memo_lock:
        known = _known()
        if _ledger["path"] is None or entry in known:
            return
        known[entry] = None
        _ledger["dirty"] = True


def _write_ledger(path: Path, kept: list[str]) -> None:
    """Replace the ledger file with `kept`, atomically; where it cannot be written, the
    next check probes again."""
    if path.is_symlink() or not path.parent.is_dir():
        return  # never written through a link; no results/ yet: probed again next time
    try:  # weanj's own hidden memo (no mark of its own): replaced whole, atomically
        with tempfile.NamedTemporaryFile(
            "w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
        ) as f:
            f.write(json.dumps(kept) + "\n")
        os.replace(f.name, path)
    except OSError:  # a read-only project: probed again next time
        with contextlib.suppress(OSError, NameError):
            os.unlink(f.name)


def trust_file(path: Path | str) -> None:
    """`trust` the current contents of a file weanj just wrote, and remember the file
    itself (`_signature`: its device, inode, size and modification time, which a rename
    keeps) so that a later process opens it unprobed, without reading it first."""
    trust(Path(path).read_bytes())
    _remember(_signature(os.stat(path)))


def _signature(info: os.stat_result) -> str:
    """A file weanj wrote, as long as nobody changed it: where it is, its size and the
    nanosecond of its last change."""
    return f"file {info.st_dev} {info.st_ino} {info.st_size} {info.st_mtime_ns}"


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _written_by_weanj(path: Path) -> bool:
    """Whether `path` is a regular file weanj wrote, or found safe, and nobody changed
    since (its signature in the ledger: `trust_file`, `open_h5`)."""
    info = _stat(path)
    if info is None or not stat.S_ISREG(info.st_mode) or info.st_size > max_file_bytes():
        return False
    with _memo_lock:
        return _signature(info) in _known()


def probe(data: bytes, lookups: Iterable[str] = ()) -> Outcome:
    """Parse `data` in the probe process (memoised by its sha256)."""
    limit = timeout_s()
    sha = digest(data)
    key = (sha, tuple(lookups), max_file_bytes())
    probed = f"{sha} {json.dumps(key[1])}"  # the names it was probed for matter
    with _memo_lock:
        if sha in _trusted or sha in _known() or probed in _known():
            return OK
        if key in _memo:
            return _memo[key]
    if limit == 0:
        return OK
    outcome = PROBER.probe(data, key[1], limit)
    with _memo_lock:
        _memo[key] = outcome
    if outcome.ok:
        _remember(probed)
    return outcome


def explain(outcome: Outcome, path: Path, what: str, hint: str = "") -> str:
    """The one-line message for a file that did not probe ok."""
    if outcome.kind == "crash":
        return (
            f"libhdf5 crashed ({outcome.detail[0]}) while reading {what} {path}: the file is "
            f"corrupt{hint}"
        )
    if outcome.kind == "hang":
        return (
            f"reading {what} {path} did not finish within {outcome.detail[0]} s (damaged HDF5 "
            f"metadata make libhdf5 loop; {TIMEOUT_VARIABLE} sets the limit){hint}"
        )
    if outcome.kind == "error":
        return f"cannot read {what} {path} ({outcome.detail[0]}){hint}"
    # Datasets whose values are not in the file: h5py would read zeros, or another file.
    first = outcome.detail[0]
    more = f" (and {len(outcome.detail) - 1} more)" if len(outcome.detail) > 1 else ""
    return f"{what} {path}: {first}{more}; weanj reads only values stored in the file itself{hint}"


def check(data: bytes, path: Path, what: str, hint: str = "", lookups: Iterable[str] = ()) -> None:
    """Probe `data` (the contents of `path`); anything but ok is an `InputFileError`."""
    outcome = probe(data, lookups)
    if not outcome.ok:
        raise InputFileError(explain(outcome, path, what, hint))


@contextlib.contextmanager
def open_h5(
    path: Path | str, what: str, hint: str = "", lookups: Iterable[str] = ()
) -> Iterator[object]:
    """An `h5py.File` of `path`'s bytes, read once and probed first (see the module
    docstring). `what` names the file in messages ("inputs file"), `hint` is appended to
    them ("; regenerate it with ..."), `lookups` are names the reader will look up."""
    import h5py

    path = Path(path)
    if _written_by_weanj(path):  # unchanged since weanj wrote it: read in place
        with h5py.File(path, "r") as f:
            yield f
        return
    before = _stat(path)
    data = read_bytes(path, what, hint)
    check(data, path, what, hint, lookups)
    after = _stat(path)
    if before is not None and after is not None and _signature(before) == _signature(after):
        _remember(_signature(after))  # found safe, and unchanged while it was read
    with h5py.File(io.BytesIO(data), "r") as f:
        yield f


@contextlib.contextmanager
def parsed(
    path: Path | str, what: str, hint: str = "", lookups: Iterable[str] = ()
) -> Iterator[object]:
    """`open_h5`, with every error h5py raises for damaged metadata (OSError, KeyError,
    ValueError, TypeError, RuntimeError for a corrupt attribute heap...) turned into one
    `InputFileError` line: the file is unusable, weanj is not broken."""
    try:
        with open_h5(path, what, hint, lookups) as f:
            yield f
    except InputFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputFileError(f"cannot read {what} {path} ({first}){hint}") from None


def _reset() -> None:
    """Forget every outcome and stop the probe process (for tests)."""
    PROBER.close()
    with _memo_lock:
        _memo.clear()
        _trusted.clear()
        _ledger.update(path=None, known=None, dirty=False)
