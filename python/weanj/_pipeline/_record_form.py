"""What an evaluation record must be, checked before it is believed (docs/DESIGN.md §8.4;
`_records` reads and writes them): its format, its fields and their types, its gradient
checks' numbers exactly as each check writes them, and its arrays' npy headers, read
before anything is inflated."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .._io._h5 import array_sha256
from .._model import COMPLEX_OF, Variant
from .._model._cost import Cost
from .._model._verdicts import FAULTS, GRADIENT_CHECKS, Verdict
from .._sources import text_digest
from ._gradchecks import CHECKS, TAYLOR_INFO

FORMAT = 3  # 3: the rounding levels gathered on demand (`levels`), the kernel's runs (`cost`)
# A variant's faults but timeouts, which depend on the load: never reused.
_REUSED_FAULTS = tuple(v for v in FAULTS if v != Verdict.TIMEOUT)
_RECORD_TEXT_MAX = 16 * 2**20  # bytes of the record's JSON text (a record is a few kB)
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


def canonical(data: Any) -> str:
    """The one JSON text of a record's data that its digests are taken over."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers (anything else cannot be recorded)."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot record a {type(value).__name__}")


def check_policy(variant: Variant) -> dict[str, Any]:
    """What decides a gradient check's numbers beside the code: each check's policy (the
    example's Taylor and central-difference policies, the jvp tolerances)."""
    policy: dict[str, Any] = {}
    for kind in GRADIENT_CHECKS:
        policy.update(CHECKS[kind].policy(variant.example))
    return policy


def _add_check(pending: dict, kind: str, array: str, numbers: dict) -> None:
    """A check's numbers into a record to write (marked changed where they are new)."""
    if "info" in numbers:  # what the check computed; the judge adds its own afresh
        numbers = {
            **numbers,
            "info": {k: v for k, v in numbers["info"].items() if k in TAYLOR_INFO},
        }
    checks = pending["record"]["checks"]
    if checks.get(f"{kind}::{array}") != numbers:
        checks[f"{kind}::{array}"] = numbers
        pending["changed"] = True


class Discarded(Exception):
    """A record that is not exactly what weanj writes for this evaluation: one line why."""


# What reading a record may raise: each discards it (recomputed, with one line why).
UNREADABLE = (
    Discarded,
    OSError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    OverflowError,
    RecursionError,
    EOFError,
    MemoryError,
)

# What a device run's record keeps of its gradient's `extra` (`_on_device.describe`,
# `_evaluate._levels`): the device it ran on and the precision its floors come from.
DEVICE_EXTRA = (
    "device",
    "device_kind",
    "device_software",
    "precision",
    "precision_reduced",
    "precision_level",
    "standin",
)


def device_extra(extra: dict[str, Any]) -> dict[str, Any]:
    return {k: extra[k] for k in DEVICE_EXTRA if k in extra}


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
            if got_dtype.kind != "U" or got_shape != () or got_dtype.itemsize > _RECORD_TEXT_MAX:
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


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _finite(x: Any) -> bool:
    return _is_number(x) and math.isfinite(x)


def _require(ok: bool, why: str) -> None:
    if not ok:
        raise Discarded(why)


def _check_record(record: Any, variant: Variant, dtype: str) -> None:
    """Every field of a record of the form and type `flush` writes, for this variant and
    dtype, or `Discarded`."""
    _require(
        isinstance(record, dict) and record.get("format") == FORMAT,
        "not a weanj evaluation record of this format",
    )
    common = {
        "format",
        "example",
        "variant",
        "dtype",
        "key",
        "parts",
        "created",
        "seconds",
        "checks",
        "payload",
    }
    fields = set(record)
    if "fault" in record:
        _require(fields == common | {"fault"}, "its fields are not a record's")
    else:
        device = {"extra"} if "extra" in record else set()  # a device run's
        levels = {"noise_sha256"} if "noise_sha256" in record else set()  # entries' levels
        _require(
            fields == common | {"loss", "noise", "sha256", "levels", "cost"} | device | levels,
            "its fields are not a record's",
        )
    _require(
        record["example"] == variant.example.name,
        f"it records another example ({str(record['example'])[:40]})",
    )
    _require(
        record["variant"] == variant.name,
        f"it records another variant ({str(record['variant'])[:40]})",
    )
    _require(record["dtype"] == dtype, f"it records another dtype ({str(record['dtype'])[:20]})")
    for name in ("key", "payload"):
        _require(
            isinstance(record[name], str) and bool(_SHA256.match(record[name])),
            f"its {name} is not a sha256",
        )
    parts = record["parts"]
    _require(
        isinstance(parts, dict)
        and isinstance(parts.get("backend"), str)
        and isinstance(parts.get("versions"), dict),
        "its key's parts are malformed",
    )
    _require(isinstance(record["created"], str), "its time of creation is not a text")
    s = record["seconds"]
    _require(s is None or (_finite(s) and s >= 0), "its seconds are not a number")
    wrt = variant.example.wrt_names
    if "fault" in record:
        f = record["fault"]
        _require(
            isinstance(f, dict)
            and set(f) == {"verdict", "what", "command"}
            and all(isinstance(x, str) for x in f.values()),
            "its fault is malformed",
        )
        _require(f["verdict"] in _REUSED_FAULTS, "not a reusable fault")
    else:
        _check_numbers(record, wrt)
    _require(("extra" in record) == ("device" in parts), "its device is not the one its key names")
    if "extra" in record:
        _check_extra(record["extra"], wrt)
    checks = record["checks"]
    _require(isinstance(checks, dict), "its gradient checks are malformed")
    for key, numbers in checks.items():
        _check_check(key, numbers, wrt)


def _check_numbers(record: dict, wrt: tuple[str, ...]) -> None:
    """A gradient's record: its loss, rounding levels, cost and arrays' digests."""
    _require(_finite(record["loss"]), "its loss is not a finite number")
    _require(isinstance(record["levels"], bool), "whether its levels were measured is unsaid")
    try:
        Cost.from_json(record["cost"])
    except ValueError as e:
        raise Discarded(f"its cost is malformed ({e})") from None
    noise = record["noise"]
    _require(
        isinstance(noise, dict)
        and set(noise) <= {"loss", *wrt}
        and all(_finite(x) and x >= 0 for x in noise.values()),
        "its rounding levels are malformed",
    )
    for field in ("sha256", "noise_sha256"):
        digests = record.get(field, {} if field == "noise_sha256" else None)
        _require(
            isinstance(digests, dict)
            and set(digests) == (set(wrt) if field in record else set())
            and all(isinstance(x, str) and _SHA256.match(x) for x in digests.values()),
            "its arrays' digests are malformed",
        )


def _check_extra(extra: Any, wrt: tuple[str, ...]) -> None:
    """A device run's `extra`, exactly as `device_extra` keeps it."""
    bad = "its device's description is malformed"
    _require(isinstance(extra, dict) and set(extra) <= set(DEVICE_EXTRA), bad)
    _require({"device", "device_kind", "precision", "precision_reduced"} <= set(extra), bad)
    texts = ("device", "device_kind", "device_software", "precision")
    _require(all(isinstance(extra[k], str) for k in texts if k in extra), bad)
    flags = ("precision_reduced", "standin")
    _require(all(isinstance(extra[k], bool) for k in flags if k in extra), bad)
    level = extra.get("precision_level", {})
    _require(
        isinstance(level, dict)
        and set(level) <= {"loss", *wrt}
        and all(_finite(x) and x >= 0 for x in level.values()),
        bad,
    )


def _check_check(key: Any, numbers: Any, wrt: tuple[str, ...]) -> None:
    """One gradient check's numbers, exactly as the check (`_gradchecks.CHECKS`) writes
    them."""
    kind, _, array = str(key).partition("::")
    bad = f"its {kind or 'gradient'} check numbers are malformed"
    check = CHECKS.get(kind)
    _require(check is not None and array in wrt and isinstance(numbers, dict), bad)
    if check.may_skip and set(numbers) == {"skipped"}:
        _require(isinstance(numbers["skipped"], str), bad)
        return
    _require(check.beside(numbers), bad)
    parse = check.result.from_json
    result = numbers["result"]
    _require(isinstance(result, dict), bad)
    try:  # exactly what `to_json` writes: read back and written again, the same text
        again = parse(result).to_json()
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise Discarded(bad) from e
    _require(canonical(again) == canonical(result), bad)
    _require(result.get("array") == array, bad)


def read_record(path, variant: Variant, wrt_shapes: dict, dtype: str):
    """`(record, {array: gradient}, {array: entry levels})` of a record file, exactly as
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
    # the gradient arrays and, where kept, their entries' rounding levels (float64)
    most = sum(_nbytes(dt, shape) + 8 * math.prod(shape) for dt, shape in expected.values())
    if info.st_size > 2 * (most + _RECORD_TEXT_MAX):
        raise Discarded("larger than any record of this example")
    try:
        with zipfile.ZipFile(path) as z:
            members = {_member(i.filename): i for i in z.infolist()}
            names = set(members)
            if "record" not in names or len(names) != len(z.infolist()):
                raise Discarded("not a weanj evaluation record")
            text = _header_checked(z, members["record"], None, None)
            record = json.loads(str(text[()]))
            _check_record(record, variant, dtype)
            arrays, entries = {}, {}
            if "fault" not in record:
                levels = {}  # each entry's rounding level, where the record has them
                if "noise_sha256" in record:
                    levels = {f"n_{m[2:]}": (np.dtype("<f8"), s) for m, (_, s) in expected.items()}
                if names != {"record", *expected, *levels}:
                    raise Discarded("its arrays are not the example's gradient arrays")
                for member, (dt, shape) in expected.items():
                    arrays[member[2:]] = _header_checked(z, members[member], dt, shape)
                for member, (dt, shape) in levels.items():
                    entries[member[2:]] = _header_checked(z, members[member], dt, shape)
            elif names != {"record"}:
                raise Discarded("a recorded fault that holds arrays")
    except zipfile.BadZipFile as e:
        raise Discarded(f"not a record ({e})") from None
    payload = {k: v for k, v in record.items() if k != "payload"}
    if record["payload"] != text_digest(canonical(payload)):
        raise Discarded("its contents do not match their recorded digest (edited?)")
    if "fault" not in record:
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
    return record, arrays, entries


def _why_changed(stored: dict, current: dict) -> str | None:
    """Why a record does not hold for the current evaluation (None: its parts say it does)."""
    if stored.get("inputs") != current["inputs"]:
        return "the inputs changed (arrays, parameters or dtype)"
    if stored.get("code") != current["code"]:
        return "its example's module, or a module it imports, changed"
    if stored.get("config") != current["config"]:
        return "[tool.weanj] changed"
    old, new = stored.get("versions", {}), current["versions"]
    for name in sorted(new):
        if old.get(name) != new[name]:
            if name == "weanj sources":
                return "weanj's own sources changed"
            return f"{name} changed ({old.get(name)} → {new[name]})"
    if stored.get("backend") != current["backend"]:
        return f"its backend changed ({current['backend']})"
    if any(stored.get(k) != current.get(k) for k in ("device_kind", "device_software", "standin")):
        return f"the device changed (now {current.get('device_kind')})"
    if stored.get("x64") != current.get("x64"):
        return "jax_enable_x64 changed"
    if stored.get("checks") != current["checks"]:
        return "the gradient-check policy changed"
    if stored.get("variant") != current["variant"] or stored.get("family") != current["family"]:
        return "its name or family changed"
    if stored != current:
        return "its key changed"
    return None
