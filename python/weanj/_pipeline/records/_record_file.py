"""An evaluation record's file, read (docs/DESIGN.md §8.4; `_records` writes it): numpy's
own `.npz`, its members' npy headers held to the form and the example before anything is
inflated, its stored members read straight into their arrays, every digest checked."""

from __future__ import annotations

import json
import math

from ..._io._h5 import array_sha256
from ..._model import COMPLEX_OF, Variant
from ..._sources import text_digest
from ._record_beyond import check_fields, check_members, expected_members
from ._record_form import RECORD_TEXT_MAX, Discarded, canonical, check_record


def _member(filename: str) -> str:
    return filename[: -len(".npy")] if filename.endswith(".npy") else f"?{filename}"


def _nbytes(dtype, shape) -> int:
    return int(dtype.itemsize * math.prod(shape))


def _header_checked(z, info, dtype, shape):
    """A zip member's array, once its npy header says it is what the record must hold
    (`dtype` and `shape`; None for the record's own text: a unicode scalar of bounded
    size) and the member's declared size is exactly what that header implies: nothing is
    inflated before (a member of 1.5e8 compressed zeros is refused unread)."""
    import numpy as np
    from numpy.lib import format as npy

    with z.open(info) as f:
        version = npy.read_magic(f)
        if version == (1, 0):
            got_shape, fortran, got_dtype = npy.read_array_header_1_0(f)
        elif version == (2, 0):
            got_shape, fortran, got_dtype = npy.read_array_header_2_0(f)
        else:
            raise Discarded(f"{_member(info.filename)} is not an array weanj writes")
        offset = f.tell()
        if fortran or got_dtype.hasobject:
            raise Discarded(f"{_member(info.filename)} is not an array weanj writes")
        if dtype is None:
            if got_dtype.kind != "U" or got_shape != () or got_dtype.itemsize > RECORD_TEXT_MAX:
                raise Discarded("its record is not a text")
        else:
            if got_dtype != dtype:
                raise Discarded(
                    f"{_member(info.filename)[2:]} is of dtype {got_dtype}, not {dtype.name}"
                )
            if tuple(got_shape) != shape:
                raise Discarded(
                    f"{_member(info.filename)[2:]} has shape {tuple(got_shape)}, not {shape}"
                )
        if info.file_size != offset + _nbytes(got_dtype, got_shape):
            raise Discarded(f"{_member(info.filename)} is not the size its header says")
        out = np.empty(got_shape, dtype=got_dtype)  # read into it: one copy of the array
        view = out.reshape(-1).view(np.uint8) if out.size else memoryview(b"")
        stored = _stored_at(z, info)  # np.savez stores its members: read in place
        if stored is not None:
            z.fp.seek(stored + offset)
            got = z.fp.readinto(view) if out.size else 0
        else:
            got = f.readinto(view) if out.size else 0
        if got != out.nbytes:
            raise Discarded(f"{_member(info.filename)} is shorter than its header says")
    return out


def _stored_at(z, info) -> int | None:
    """Where an uncompressed member's bytes begin in the zip file (after its local
    header, whose name and extra field may differ in length from the central
    directory's), or None (a compressed member: read through zipfile). Its bytes are
    checked by the record's sha256 of each array, not by the zip's CRC."""
    import struct
    import zipfile

    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        return None
    z.fp.seek(info.header_offset)
    local = z.fp.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise Discarded(f"{_member(info.filename)} has no local header")
    name, extra = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name + extra


def read_record(path, variant: Variant, wrt_shapes: dict, dtype: str):
    """`(record, {array: gradient}, {array: entry levels}, {member: array beyond the
    gradient (`_record_beyond`)})` of a record file, exactly as
    `_records` writes it for this evaluation (None where there is none; a fault's record
    with no arrays); anything else raises `Discarded`: a file that is not regular, too
    large, a zip of other members, npy headers of another dtype or shape (read before
    anything is inflated), a malformed record, digests that do not match."""
    import os
    import stat
    import zipfile

    import numpy as np

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise Discarded("not a regular file (a link, a folder or a device)")
    ex = variant.example
    expected: dict[str, tuple[np.dtype, tuple[int, ...]]] = {}
    for name, shape in wrt_shapes.items():
        kind = ex.array(name).kind
        expected[f"g_{name}"] = (
            np.dtype(COMPLEX_OF[dtype] if kind == "complex" else dtype).newbyteorder("<"),
            tuple(shape),
        )
    # the gradient arrays and, where kept, their entries' rounding levels (float64) and
    # the Hessian products (float64, twice); the outputs beyond: a record may say their
    # shapes, each bounded (`_record_beyond`)
    most = sum(_nbytes(dt, shape) + 24 * math.prod(shape) for dt, shape in expected.values())
    most += 16 * len(ex.outputs) * 2**28 if ex.outputs else 0
    if info.st_size > 2 * (most + RECORD_TEXT_MAX):
        raise Discarded("larger than any record of this example")
    try:
        with zipfile.ZipFile(path) as z:
            members = {_member(i.filename): i for i in z.infolist()}
            names = set(members)
            if "record" not in names or len(names) != len(z.infolist()):
                raise Discarded("not a weanj evaluation record")
            text = _header_checked(z, members["record"], None, None)
            record = json.loads(str(text[()]))
            check_record(record, variant, dtype)
            arrays, entries, beyond = {}, {}, {}
            if "fault" not in record:
                check_fields(record, variant)
                levels = {}  # each entry's rounding level, where the record has them
                if "noise_sha256" in record:
                    levels = {f"n_{m[2:]}": (np.dtype("<f8"), s) for m, (_, s) in expected.items()}
                more = expected_members(record, variant, dtype, wrt_shapes)
                if names != {"record", *expected, *levels, *more}:
                    raise Discarded("its arrays are not the example's gradient arrays")
                for member, (dt, shape) in expected.items():
                    arrays[member[2:]] = _header_checked(z, members[member], dt, shape)
                for member, (dt, shape) in levels.items():
                    entries[member[2:]] = _header_checked(z, members[member], dt, shape)
                for member, (dt, shape) in more.items():
                    beyond[member] = _header_checked(z, members[member], dt, shape)
            elif names != {"record"}:
                raise Discarded("a recorded fault that holds arrays")
    except zipfile.BadZipFile as e:
        raise Discarded(f"not a record ({e})") from None
    payload = {k: v for k, v in record.items() if k != "payload"}
    if record["payload"] != text_digest(canonical(payload)):
        raise Discarded("its contents do not match their recorded digest (edited?)")
    if "fault" not in record:
        _check_digests(record, arrays, entries, beyond)
    return record, arrays, entries, beyond


def _check_digests(record: dict, arrays: dict, entries: dict, beyond: dict) -> None:
    """Every array of a gradient's record against its digest, finite (levels positive)."""
    import numpy as np

    for name, a in arrays.items():
        if array_sha256(a) != record["sha256"][name]:
            raise Discarded(f"the values of {name} do not match their sha256")
        if not np.all(np.isfinite(a)):
            raise Discarded(f"the gradient of {name} is not finite")
    for name, a in entries.items():
        if array_sha256(a) != record["noise_sha256"][name]:
            raise Discarded(f"the rounding levels of {name} do not match their sha256")
        if not (np.all(np.isfinite(a)) and np.all(a >= 0)):
            raise Discarded(f"the rounding levels of {name} are not finite and positive")
    check_members(record, beyond)
