"""What an evaluation record must be, checked before it is believed (docs/DESIGN.md §8.4;
`_records` reads and writes them): its format, its fields and their types, its gradient
checks' numbers exactly as each check writes them, and its arrays' npy headers, read
before anything is inflated."""

from __future__ import annotations

import json
import math
from typing import Any

from ..._io._gradient_files import SHA256_HEX
from ..._model import Emulated, Gradient, Variant
from ..._model._beyond import OUTPUT
from ..._model._cost import Cost
from ..._model._kinds import is_number
from ..._model._provenance import DEVICE_KEYS, DeviceProvenance
from ..._model._verdicts import FAULTS, GRADIENT_CHECKS, Verdict
from ..checks._check_taylor import TAYLOR_INFO
from ..checks._gradchecks import CHECKS

FORMAT = 3  # 3: the rounding levels gathered on demand (`levels`), the kernel's runs (`cost`)
# A variant's faults but timeouts, which depend on the load: never reused.
REUSED_FAULTS = tuple(v for v in FAULTS if v != Verdict.TIMEOUT)
RECORD_TEXT_MAX = 16 * 2**20  # bytes of the record's JSON text (a record is a few kB)


def canonical(data: Any) -> str:
    """The one JSON text of a record's data that its digests are taken over."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def plain_number(value: Any) -> Any:
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


def add_check(pending: dict, kind: str, array: str, numbers: dict) -> None:
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

# The keys of a device run's record's `extra` (`device_extra`: `_on_device.describe`,
# `_evaluate._levels`): the device it ran on and the precision its floors come from.
DEVICE_EXTRA = (*DEVICE_KEYS, "precision_level")


def device_extra(g: Gradient) -> dict[str, Any]:
    """A device run's `extra` in its record: where it ran and the matmul precision in
    effect (`Gradient.device`), and that precision's rounding levels."""
    out: dict[str, Any] = {} if g.device is None else g.device.to_json()
    if g.precision_level is not None:
        out["precision_level"] = dict(g.precision_level)
    return out


def _finite(x: Any) -> bool:
    return is_number(x) and math.isfinite(x)


def _require(ok: bool, why: str) -> None:
    if not ok:
        raise Discarded(why)


# The fields every record has; a gradient's record adds its numbers, a fault's its fault.
_COMMON = {"format", "example", "variant", "dtype", "key", "parts", "created", "seconds"}
_COMMON |= {"checks", "payload"}
_GRADIENT = {"loss", "noise", "sha256", "levels", "cost"}
# what a gradient's record keeps beyond it, where there is some (`_record_beyond`)
_BEYOND = {"outputs", "jacobian", "hvp", "pullback"}


def check_record(record: Any, variant: Variant, dtype: str) -> None:
    """Every field of a record of the form and type `flush` writes, for this variant and
    dtype, or `Discarded`."""
    _require(
        isinstance(record, dict) and record.get("format") == FORMAT,
        "not a weanj evaluation record of this format",
    )
    fields = set(record)
    if "fault" in record:
        _require(fields == _COMMON | {"fault"}, "its fields are not a record's")
    else:
        device = {"extra"} if "extra" in record else set()  # a device run's
        levels = {"noise_sha256"} if "noise_sha256" in record else set()  # entries' levels
        levels |= {"emulated"} if "emulated" in record else set()  # float32's, emulated
        beyond = fields & _BEYOND  # held to their form by `_record_beyond.check_fields`
        _require(
            fields == _COMMON | _GRADIENT | device | levels | beyond,
            "its fields are not a record's",
        )
    _check_identity(record, variant, dtype)
    wrt = variant.example.wrt_names
    if "fault" in record:
        f = record["fault"]
        _require(
            isinstance(f, dict)
            and set(f) == {"verdict", "what", "command"}
            and all(isinstance(x, str) for x in f.values()),
            "its fault is malformed",
        )
        _require(f["verdict"] in REUSED_FAULTS, "not a reusable fault")
    else:
        _check_numbers(record, wrt, variant.example.outputs)
    has_device = "device" in record["parts"]
    _require(("extra" in record) == has_device, "its device is not the one its key names")
    if "extra" in record:
        _check_extra(record["extra"], wrt)
    checks = record["checks"]
    _require(isinstance(checks, dict), "its gradient checks are malformed")
    for key, numbers in checks.items():
        _check_check(key, numbers, wrt)


def _check_identity(record: dict, variant: Variant, dtype: str) -> None:
    """What a record is of (example, variant, dtype), its key, payload, parts and times."""
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
            isinstance(record[name], str) and bool(SHA256_HEX.match(record[name])),
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


def _check_numbers(record: dict, wrt: tuple[str, ...], outputs: tuple[str, ...] = ()) -> None:
    """A gradient's record: its loss, rounding levels (the outputs' too, `output:NAME`),
    cost and arrays' digests."""
    _require(_finite(record["loss"]), "its loss is not a finite number")
    _require(isinstance(record["levels"], bool), "whether its levels were measured is unsaid")
    try:
        Cost.from_json(record["cost"])
    except ValueError as e:
        raise Discarded(f"its cost is malformed ({e})") from None
    noise = record["noise"]
    _require(
        isinstance(noise, dict)
        and set(noise) <= {"loss", *wrt, *(OUTPUT + o for o in outputs)}
        and all(_finite(x) and x >= 0 for x in noise.values()),
        "its rounding levels are malformed",
    )
    if "emulated" in record:
        try:
            emulated = Emulated.from_json(record["emulated"])
        except ValueError as e:
            raise Discarded(f"its emulated rounding is malformed ({e})") from None
        _require(set(emulated.levels) <= {"loss", *wrt}, "its emulated rounding is malformed")
    for field in ("sha256", "noise_sha256"):
        digests = record.get(field, {} if field == "noise_sha256" else None)
        _require(
            isinstance(digests, dict)
            and set(digests) == (set(wrt) if field in record else set())
            and all(isinstance(x, str) and SHA256_HEX.match(x) for x in digests.values()),
            "its arrays' digests are malformed",
        )


def _check_extra(extra: Any, wrt: tuple[str, ...]) -> None:
    """A device run's `extra`, exactly as `device_extra` keeps it."""
    bad = "its device's description is malformed"
    _require(isinstance(extra, dict) and set(extra) <= set(DEVICE_EXTRA), bad)
    try:
        DeviceProvenance.from_json(extra)
    except ValueError:
        raise Discarded(bad) from None
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
