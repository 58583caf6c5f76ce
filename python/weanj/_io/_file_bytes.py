"""A regular file's bytes, read whole and bounded (`WEANJ_MAX_FILE_BYTES`, default 4 GiB).

The bound is on what one file may make weanj read: its size on disk (only regular files
are read), and, checked by the HDF5 probe (`_probe_process`) before it reads them, the
declared size of all its datasets together, so that a small compressed file declaring
gigabytes is refused, not decompressed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .._errors import InputFileError, UnavailableError
from ._h5probe import size_text

MAX_BYTES_VARIABLE = "WEANJ_MAX_FILE_BYTES"
DEFAULT_MAX_BYTES = 4 * 2**30


def number_setting(variable: str, default, kind):
    """`$variable` as a `kind` (int or float), `default` when unset, None when unreadable."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        return None


def max_file_bytes() -> int:
    """The most bytes weanj reads from one file, on disk or decompressed
    (`$WEANJ_MAX_FILE_BYTES`, default 4 GiB)."""
    value = number_setting(MAX_BYTES_VARIABLE, DEFAULT_MAX_BYTES, int) or 0
    raw = os.environ.get(MAX_BYTES_VARIABLE, "")
    if value < 1:
        raise UnavailableError(f"{MAX_BYTES_VARIABLE} must be a number of bytes >= 1, got {raw!r}")
    return value


def _too_large(what: str, path: Path, size: int, limit: int, hint: str) -> InputFileError:
    return InputFileError(
        f"{what} {path} is {size_text(size)}, past the {size_text(limit)} weanj reads from one "
        f"file (${MAX_BYTES_VARIABLE}){hint}"
    )


def read_bytes(path: Path, what: str, hint: str = "", limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (default `max_file_bytes()`),
    or an `InputFileError` (missing, a directory, a device or pipe, too large, unreadable).
    Opened without blocking and checked on the open file, so that a pipe or device put in
    its place after the checks never blocks or floods the reader."""
    limit = max_file_bytes() if limit is None else limit
    if not path.exists():
        if path.is_symlink():
            raise InputFileError(f"{what} {path} is a symbolic link to nothing (or a loop){hint}")
        raise InputFileError(f"{what} {path} does not exist{hint}")
    if path.is_dir():
        raise InputFileError(f"{what} {path} is a directory, not a file{hint}")
    if not path.is_file():  # a device or a pipe (/dev/zero would never end)
        raise InputFileError(f"{what} {path} is not a regular file{hint}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InputFileError(f"{what} {path} is not a regular file{hint}")
            if info.st_size > limit:
                raise _too_large(what, path, info.st_size, limit, hint)
            # Its size and one byte more (growth since fstat shows), not the limit: a
            # read of n bytes allocates n bytes up front, 4 GiB for every small file.
            data = f.read(info.st_size + 1)
            if len(data) > info.st_size:  # it grew since: the rest, up to the limit
                data += f.read(limit + 1 - len(data))
    except OSError as e:
        if isinstance(e, InputFileError):
            raise
        raise InputFileError(f"cannot read {what} {path} ({e.strerror or e}){hint}") from None
    if len(data) > limit:  # it grew while read
        raise _too_large(what, path, len(data), limit, hint)
    return data
