"""Atomic file writes: a temporary file in the target's folder, then `os.replace`.

A crash mid-write leaves the previous file intact (and at worst a `.tmp` file beside
it); concurrent writers of one path each land a complete file, the last one wins. A
symbolic link at the target is replaced, never written through (docs/files.md, "Links").
Temporary files left by killed writers are removed by the next write into the folder,
once they are older than any live writer could be (`STALE_AFTER_S`). Read-merge-write
cycles (the benchmark files) are serialised with `locked`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .._errors import InputFileError
from .._interrupts import deferred

# A writer's temporary file lives from the start of one write to its rename: weanj writes
# a finished gradient, inputs or benchmark file (at most a few hundred MB, written in
# seconds), and every write advances the file's mtime. One untouched for an hour belongs
# to a writer that was killed; even a write stalled on a slow network disk has long
# failed by then.
STALE_AFTER_S = 3600.0

# `.<name>.<8 random characters>.tmp` (tempfile.mkstemp, below), for the data files, pages
# and pictures weanj writes; nothing else in the folder is touched.
_TEMPORARY = re.compile(
    r"\.(?P<name>.+\.(?:h5|json|html|md|png|npz))\.(?:[a-z0-9_]{8}|[0-9]+)\.tmp\Z"
)


NO_SPACE = "no space left on the device"


def why_not_written(e: BaseException) -> str:
    """Why a write failed, in a few words on one line: a full disk says so whoever
    reports it (HDF5's report of it runs over several lines: the time, the buffer's
    address, the bytes written), else the system's reason."""
    text = str(e)
    if getattr(e, "errno", None) == errno.ENOSPC or "errno = 28," in text:
        return NO_SPACE
    if "No space left on device" in text:
        return NO_SPACE
    return " ".join(str(getattr(e, "strerror", None) or text).split())[:200]


def not_written(what: str, path: Path | str, e: OSError, hint: str = "") -> InputFileError:
    """The one line of a write that failed: `cannot write <what> <path>: no space left on
    the device`, or the reason in brackets, then `hint` (`; choose a writable place`),
    which says nothing useful of a full disk."""
    why = why_not_written(e)
    if why == NO_SPACE:
        return InputFileError(f"cannot write {what}{path}: {NO_SPACE}")
    return InputFileError(f"cannot write {what}{path} ({why}){hint}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def remove_stale_temporaries(folder: Path, older_than_s: float = STALE_AFTER_S) -> list[Path]:
    """Remove the writers' temporary files in `folder` older than `older_than_s`; returns
    them. Errors (a file another process removed first, no permission) are ignored."""
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not _TEMPORARY.match(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and now - info.st_mtime > older_than_s:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def writable_target(path: Path | str) -> Path:
    """Where an atomic write of `path` goes: `path` itself, never through a symbolic link.

    A link at `path` is replaced by the file written, as a link of Git's checkout is: the
    file it named (perhaps outside the project) is left byte for byte as it was. A link to
    something that is not a regular file (a device, a pipe, a folder) and such a thing
    itself are refused (`InputFileError`), never replaced: they are nobody's stale output.
    (A folder of the project that links outside it is refused by `atomic_path`:
    `outside_the_project`.)
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode  # what the path (or the link's end) is
    except FileNotFoundError:
        return path  # nothing there, or a link to nothing: the link itself is replaced
    except OSError as e:
        if e.errno == errno.ELOOP:  # a loop of links names no file: the link itself is replaced
            return path
        raise InputFileError(f"cannot write {path} ({e.strerror or e})") from None
    if not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a device, pipe or socket)"
        raise InputFileError(f"refusing to write {path}: it is {what}; choose a file")
    return path


def outside_the_project(path: Path | str) -> str | None:
    """Why a write of `path`, inside the current project by its name, would land outside
    it (a folder on the way is a symbolic link to elsewhere), or None. A path outside the
    project by its name (an `--out` the user chose) is theirs: None."""
    try:
        from .._places import places

        root = Path(os.path.abspath(places().root))
    except Exception:  # no project (`weanj new` in an empty folder): nothing to stay inside
        return None
    target = Path(os.path.abspath(path))
    if root not in target.parents:
        return None
    real_root = Path(os.path.realpath(root))
    folder = target.parent
    while folder != root and not os.path.lexists(folder):
        folder = folder.parent
    real = Path(os.path.realpath(folder))
    if real == real_root or real_root in real.parents:
        return None
    probe = root
    for part in folder.relative_to(root).parts:
        probe = probe / part
        if probe.is_symlink():
            return f"its folder {probe} is a symbolic link to {os.path.realpath(probe)}"
    return f"its folder {folder} leads to {real}"


@contextlib.contextmanager
def atomic_path(
    path: Path | str, *, force: bool = False, foreign: str = "refuse"
) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces `path` in one step (a
    symbolic link at `path` is replaced, never written through; never over a device:
    `writable_target`). An interrupt at any moment leaves no temporary behind. The
    temporary file is made new (`mkstemp`: `O_EXCL`, so never an existing file or link)
    beside the target, and renamed over it: a reader sees the old file or the new one,
    never half of one.

    Only a file weanj wrote is replaced (`_marks.refuse_unless_ours`): another is refused
    in one line, unless `force` (the user named the path and said so), or, with
    `foreign="aside"` (weanj's own store, where a damaged file of its own is likelier than
    a user's), kept aside under a new name (`aside_path`), said in one line."""
    path = writable_target(path)
    why = outside_the_project(path)
    if why is not None:
        raise InputFileError(
            f"refusing to write {path}: {why}, outside the project; weanj writes only inside it"
        )
    aside = _not_ours(path, force, foreign)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    tmp = None
    try:
        # A Ctrl-C while the temporary file is made is handed on once its name is known,
        # here, inside the `try` that removes it: never a `.tmp` left beside the file.
        with deferred():
            fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.close(fd)
            tmp = Path(name)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        if aside:  # only now, the new file whole: an interrupted write leaves it in place
            _keep_aside(path)
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def locked(path: Path | str) -> Iterator[bool]:
    """Hold an exclusive lock for `path` (on the file `.<name>.lock` beside it) while
    reading, merging and rewriting it, so that concurrent writers serialise.

    Yields True when locked; False where the platform or file system has no `flock`
    (the caller then proceeds unlocked, as before). The lock file is left in place:
    removing it would let a third writer lock a new file while a second holds the old.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows
        yield False
        return
    with open(path.parent / f".{path.name}.lock", "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except OSError:  # e.g. ENOLCK on some network file systems
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _not_ours(path: Path, force: bool, foreign: str) -> bool:
    """Whether the file at `path` is to be kept aside before it is replaced; an
    `InputFileError` where it may not be replaced at all (`_marks.refuse_unless_ours`)."""
    from ._marks import refuse_unless_ours

    try:
        refuse_unless_ours(path, force=force)
    except InputFileError:
        if foreign != "aside" or path.suffix == ".py":
            raise
        return True
    return False


def _keep_aside(path: Path) -> None:
    from .._errors import say, wrapped

    aside = aside_path(path, "not-weanj")
    try:
        os.replace(path, aside)  # a rename: its bytes stay as they were, under a new name
    except FileNotFoundError:  # gone meanwhile: nothing to keep
        return
    say(
        wrapped(
            f"weanj: note: {path} carries no weanj mark (damaged, or not weanj's); "
            f"kept as {aside.name}"
        )
    )


def aside_path(path: Path, why: str) -> Path:
    """A free name beside `path` for keeping it aside (`grad.h5.replaced-<UTC stamp>`):
    no reader takes it for a file of its kind (it no longer ends in `.h5`/`.json`)."""
    import datetime as _dt

    path = Path(path)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    aside, k = path.with_name(f"{path.name}.{why}-{stamp}"), 1
    while aside.exists():
        k += 1
        aside = path.with_name(f"{path.name}.{why}-{stamp}-{k}")
    return aside
