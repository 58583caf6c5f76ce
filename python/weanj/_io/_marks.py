"""What weanj wrote: the mark each of its files carries, read without trusting the file.

weanj replaces (`atomic_path`) or removes (`weanj clean`) only files it wrote, and
decides that from the file's contents, never from its name or folder: a user's HDF5
file, JSON, `.npz` or notebook under `results/` is theirs whatever it is called. The
mark of each kind of file is what its own format already holds, so that no file needs
rewriting to be recognised (docs/files.md, "What weanj wrote"):

- gradient file (`.h5`): the text attributes `variant`, `family`, `example`, `dtype`,
  `inputs_sha256`; a file a weanj evaluation wrote also `levels` (files written before
  rounding levels were gathered on demand: `noise_loss`);
- inputs or case file (`.h5`): `example` and `generator = "weanj-inputs/…"`;
- evaluation record (`.npz`): its `record.npy` JSON, with `format`, `example`, `variant`,
  `dtype`, `key`;
- `check.json`: `"weanj_check"` and `example`;
- benchmark file (`.json`): `environment` (an object) and `records` (a list);
- picture (`.png`): a PNG text chunk `weanj` (`PNG_KEY`) naming its example;
- report (`.html`, `.md`): its head, `<!DOCTYPE html>` with `<title>weanj report: …`, or
  `# weanj report: …`.

Reading a mark never raises: a file that cannot be read, parsed or is too large is
unmarked (nobody's proof that weanj wrote it), and so is kept. HDF5 files are parsed
through the probe (`_safeh5`), since a damaged one can crash libhdf5.
"""

from __future__ import annotations

import io
import json
import os
import stat
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .._errors import InputFileError, WeanjError

# The PNG text chunk (tEXt) whose presence marks a picture weanj drew; its value names
# the example (`png_metadata`). matplotlib's `savefig(metadata=...)` writes it.
PNG_KEY = "weanj"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# What a mark is read from, at most: far above any check.json, record or picture header.
_MAX_TEXT_BYTES = 256 * 2**20
_MAX_RECORD_JSON_BYTES = 64 * 2**20

# What weanj never writes over, even when told to (`--force`): source code.
_NEVER_REPLACED = (".py", ".pyi", ".ipynb")


@dataclass(frozen=True)
class Mark:
    """What a file weanj wrote says it is: its `kind` ("gradient", "inputs", "record",
    "check", "bench", "picture", "report"), the example and variant it is of (None where
    the kind names none), its dtype, and for a gradient file whether a weanj evaluation
    wrote it (`evaluation`: it carries the run's rounding level; `weanj.save_gradient`'s
    files do not)."""

    kind: str
    example: str | None = None
    variant: str | None = None
    dtype: str | None = None
    evaluation: bool = False


def png_metadata(example: str | None) -> dict[str, str]:
    """The `savefig(metadata=...)` that marks a picture as weanj's (of `example`)."""
    return {PNG_KEY: example or ""}


def mark_of(path: Path | str) -> Mark | None:
    """The mark of the regular file `path`, or None (not weanj's, unreadable, a link, a
    folder, missing). Never raises."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        return None
    try:
        return reader(path)
    except (WeanjError, OSError, ValueError, TypeError, KeyError, RecursionError, EOFError):
        return None
    except (zipfile.BadZipFile, struct.error, UnicodeDecodeError, MemoryError):
        return None


def _head(path: Path, n: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def _h5_mark(path: Path) -> Mark | None:
    if _head(path, 8) != _HDF5_SIGNATURE:  # cheap: most foreign files end here
        return None
    from ._h5 import read_attributes
    from ._safeh5 import parsed

    with parsed(path, "file") as f:
        attrs = read_attributes(f.attrs, str(path))
    example = _text(attrs.get("example"))
    if example is None:
        return None
    gradient = ("variant", "family", "dtype", "inputs_sha256")
    if all(isinstance(attrs.get(k), str) for k in gradient):
        return Mark(
            "gradient",
            example,
            attrs["variant"],
            attrs["dtype"],
            evaluation="levels" in attrs or "noise_loss" in attrs,
        )
    generator = _text(attrs.get("generator"))
    if generator is not None and generator.startswith("weanj-inputs/"):
        return Mark("inputs", example)
    return None


def _json_mark(path: Path) -> Mark | None:
    if os.path.getsize(path) > _MAX_TEXT_BYTES:
        return None
    data = json.loads(path.read_bytes())
    if not isinstance(data, dict):
        return None
    if "weanj_check" in data:
        example = _text(data.get("example"))
        return Mark("check", example) if example is not None else None
    if isinstance(data.get("environment"), dict) and isinstance(data.get("records"), list):
        examples = {r.get("example") for r in data["records"] if isinstance(r, dict)}
        one = examples.pop() if len(examples) == 1 else None
        return Mark("bench", _text(one))
    return None


def _npz_mark(path: Path) -> Mark | None:
    from numpy.lib import format as npy

    with zipfile.ZipFile(path) as z:
        info = z.getinfo("record.npy")
        if info.file_size > _MAX_RECORD_JSON_BYTES:
            return None
        with z.open(info) as member:
            text = npy.read_array(io.BytesIO(member.read()), allow_pickle=False)
    if text.shape != () or text.dtype.kind != "U":
        return None
    record = json.loads(str(text[()]))
    if not isinstance(record, dict) or "format" not in record or "key" not in record:
        return None
    fields = [_text(record.get(k)) for k in ("example", "variant", "dtype")]
    if any(f is None for f in fields):
        return None
    return Mark("record", *fields)


def _png_mark(path: Path) -> Mark | None:
    """The `PNG_KEY` text chunk, read chunk by chunk (headers only, data skipped)."""
    with open(path, "rb") as f:
        if f.read(8) != _PNG_SIGNATURE:
            return None
        while True:
            head = f.read(8)
            if len(head) < 8:
                return None
            length, kind = struct.unpack(">I4s", head)
            if kind == b"tEXt" and length <= 1 << 20:
                key, _, value = f.read(length).partition(b"\0")
                if key.decode("latin-1") == PNG_KEY:
                    return Mark("picture", value.decode("latin-1") or None)
                f.seek(4, os.SEEK_CUR)  # the chunk's CRC
            elif kind == b"IEND":
                return None
            else:
                f.seek(length + 4, os.SEEK_CUR)


def _html_mark(path: Path) -> Mark | None:
    head = _head(path, 8192)
    if head.startswith(b"<!DOCTYPE html>") and b"<title>weanj report: " in head:
        return Mark("report")
    return None


def _md_mark(path: Path) -> Mark | None:
    return Mark("report") if _head(path, 64).startswith(b"# weanj report: ") else None


_READERS = {
    ".h5": _h5_mark,
    ".json": _json_mark,
    ".npz": _npz_mark,
    ".png": _png_mark,
    ".html": _html_mark,
    ".md": _md_mark,
}


def refuse_unless_ours(path: Path | str, *, force: bool = False) -> None:
    """Nothing, if weanj may replace `path`: nothing is there, a symbolic link is there
    (replaced, never written through: `_atomic.writable_target`), a file weanj wrote (it
    carries its mark), or `force` (the user named the path and said so). Otherwise an
    `InputFileError` line; source code (`.py`, `.ipynb`) is refused even with `force`."""
    path = Path(path)
    if not os.path.lexists(path) or os.path.islink(path):
        return
    if path.suffix.lower() in _NEVER_REPLACED:
        raise InputFileError(
            f"refusing to replace {path}: it is source code (a {path.suffix} file), which weanj "
            "never writes over; choose another path"
        )
    if force or mark_of(path) is not None:
        return
    raise InputFileError(
        f"refusing to replace {path}: weanj did not write it (it carries no weanj mark); choose "
        "another path, move it away, or name it with --force (force=True)"
    )
