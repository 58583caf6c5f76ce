"""Evaluation records: an evaluation is reused when nothing it was computed from changed
(docs/DESIGN.md, "Evaluation records").

A scientist re-runs `weanj check` after every edit of a port; build tools solved this
long ago (pytest-testmon, Bazel, joblib.Memory): a result is reused when everything it was
computed from is unchanged, and recomputed the moment one thing changes. The record of an
evaluation (a variant's loss, gradient and rounding noise at one dtype, its gradient
checks' numbers, the seconds its first calls took; or its fault) is kept in
`results/<example>/evaluations/<label>.npz`: the gradient arrays, each with its sha256, and
the record itself as JSON text (numpy's own format, read with `allow_pickle=False`: no
HDF5 library to guard against, so a warm check reads dozens of records in milliseconds),
with its key: the sha256 of

- **the inputs**: their provenance key (arrays, parameters, dtype);
- **the code**: every Python file the example's module reaches by its imports, directly or
  not, inside the project (its root and `pythonpath` folders) or inside weanj's own
  package, found by reading the imports (`ast`), not by running anything; and the
  variant's own source files beyond Python (a Julia kernel); a change in one example's
  module changes only the keys of the examples that reach it;
- **the project's `[tool.weanj]` table** (but `scheduler`);
- **the versions**: weanj (and, for a checkout of weanj, a digest of its own sources),
  jax, jaxlib, numpy, and the variant's backend (`Variant.backend_version()`: Enzyme-JAX,
  kernex, Julia and its packages).

The key also binds the record to what it is of: the example's and the variant's names,
its family and dtype, the x64 setting it runs under and the gradient-check policy whose
numbers it keeps. The key is recomputed from the project as it is and compared with the
one the record holds; the record also holds `payload`, the sha256 of everything else in
it (the gradient arrays by their own sha256), checked on read. Before any array is
loaded, the zip members' npy headers are read and held to the format and the example
(names, dtype, shape, size): a small file that would inflate to gigabytes is refused
unread. Any mismatch, malformed field or wrong type discards the record: recomputed,
with one line per command (`discarded N evaluation record(s): why, e.g. label`), never
a verdict, never a traceback. Records are immutable once written (a temporary file
renamed over the old one): a concurrent reader sees the old record or the new one, never
half of one. They guard against accidents, stale files and mixed-up or restored caches,
not against someone who can edit the project's code (docs/files.md). A timeout is
never reused (it depends on the machine's load); `fresh=True` (`weanj check --fresh`)
ignores every record. What is reused is the evaluation and its checks' *numbers*: the judge
judges every case afresh from them, so a changed tolerance or rule applies at once.
Imports made at run time (`importlib.import_module`, `__import__`) are not followed: a
module reached only that way is not part of the key (docs/DESIGN.md says so).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._environment import core_versions, now
from .._errors import WeanjError
from .._io._atomic import atomic_path
from .._io._h5 import array_sha256
from .._judge._contract import Fault
from .._model import COMPLEX_OF, Gradient, Inputs, Variant, provenance_key
from .._model._verdicts import FAULTS, GRADIENT_CHECKS, CaseKind, Verdict
from .._places import Places
from .._sources import code_digest, files_digest, text_digest, weanj_sources
from ._gradchecks import CHECKS, TAYLOR_INFO

FORMAT = 2
# A variant's faults but timeouts, which depend on the load: never reused.
_REUSED_FAULTS = tuple(v for v in FAULTS if v != Verdict.TIMEOUT)
# `[tool.weanj]` keys that change where an evaluation runs, never a number of it.
NOT_IN_THE_KEY = frozenset({"scheduler"})
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


class Discarded(Exception):
    """A record that is not exactly what weanj writes for this evaluation: one line why."""


def label_of(variant: Variant, dtype: str) -> str:
    return variant.name if dtype == "float64" else f"{variant.name}@{dtype}"


def check_policy(variant: Variant) -> dict[str, Any]:
    """What decides a gradient check's numbers beside the code: each check's policy (the
    example's Taylor and central-difference policies, the jvp tolerances)."""
    policy: dict[str, Any] = {}
    for kind in GRADIENT_CHECKS:
        policy.update(CHECKS[kind].policy(variant.example))
    return policy


@dataclass
class Records:
    """The evaluation records of one project, for one session (module docstring).

    - `places`: the project's paths; `config`: its `ProjectConfig` (root, pythonpath,
      `[tool.weanj]`); `fresh`: ignore every record (still write new ones).
    """

    places: Places
    config: Any
    fresh: bool = False
    reused: dict[tuple[str, str], str] = field(default_factory=dict)  # (ex, label): when
    recomputed: dict[tuple[str, str], str] = field(default_factory=dict)  # (ex, label): why
    discarded: list[tuple[str, str]] = field(default_factory=list)  # ("ex label", why)
    _notes: list[str] = field(default_factory=list)
    _code: dict[str, str] = field(default_factory=dict)
    _pending: dict[tuple[str, str], dict] = field(default_factory=dict)
    _recalled: dict[tuple[str, str], dict] = field(default_factory=dict)
    _weanj: str = ""

    @property
    def notes(self) -> list[str]:
        """The lines to show once per command: the notes, and one line for every record
        discarded (how many, why, naming one)."""
        out = list(self._notes)
        if self.discarded:
            label, why = self.discarded[0]
            whys = {w for _, w in self.discarded}
            more = "" if len(whys) == 1 else f" (and {len(whys) - 1} other reason(s))"
            out.append(
                f"note: discarded {len(self.discarded)} evaluation record(s): {why}{more}, "
                f"e.g. {label}; recomputed"
            )
        return out

    # --- the key ----------------------------------------------------------------------------

    def _roots(self) -> tuple[Path, ...]:
        root = Path(self.config.root).resolve()
        return (root, *(Path(p).resolve() for p in self.config.pythonpath))

    def code_of(self, variant: Variant) -> str:
        """The digest of the code an example's evaluations depend on (module docstring):
        the files its module reaches inside the project; weanj's own files (a built-in
        example's too) are covered by the digest of weanj's sources, in every key."""
        module = variant.example.module
        if module not in self._code:
            now_on_disk = code_digest(module, self._roots())
            imported = variant.example.code
            if imported and imported != now_on_disk:  # the process runs the code as imported
                self._notes.append(
                    f"note: {module} (or a module it imports) changed since this process "
                    "imported it: its evaluations use the code as imported; restart the kernel, "
                    "or run `weanj check`, to check the edit"
                )
            self._code[module] = imported or now_on_disk
        extra = []
        for source in (
            Path(p).resolve() for p in getattr(variant, "sources", ())
        ):  # a folder: its Julia files
            extra.extend(sorted(source.rglob("*.jl")) if source.is_dir() else [source])
        return (
            self._code[module]
            if not extra
            else text_digest(self._code[module] + files_digest(extra, self._roots()))
        )

    def parts(self, variant: Variant, inputs: Inputs, dtype: str, config=None) -> dict[str, Any]:
        """The key's parts; of the evaluation's `Configuration`, what its backend sets."""
        config = config or variant.configuration(dtype)
        if not self._weanj:
            self._weanj = weanj_sources()
        table = self.config.table  # None where the root has no [tool.weanj] table
        if table:
            table = {k: v for k, v in table.items() if k not in NOT_IN_THE_KEY}
        table = json.dumps(table, sort_keys=True, default=str)
        return {
            "example": variant.example.name,
            "variant": variant.name,
            "family": variant.family,
            "dtype": dtype,
            "inputs": inputs.key(dtype),
            "code": self.code_of(variant),
            "config": text_digest(table),
            "versions": {**core_versions(), "weanj sources": self._weanj},
            "backend": variant.backend_version(),
            **config.key_parts(),
            "checks": text_digest(canonical(check_policy(variant))),
        }

    # --- recall -------------------------------------------------------------------------------

    def _path(self, variant: Variant, dtype: str) -> Path:
        return self.places.evaluations(variant.example.name) / f"{label_of(variant, dtype)}.npz"

    def recall(self, variant: Variant, inputs: Inputs, dtype: str) -> Gradient | Fault | None:
        """The recorded evaluation, where its key is the one recomputed now from the
        project; else None (and why it is recomputed)."""
        ex = variant.example.name
        label = label_of(variant, dtype)
        if self.fresh:
            self.recomputed[(ex, label)] = "asked afresh (--fresh)"
            return None
        config = variant.configuration(dtype)
        current = self.parts(variant, inputs, dtype, config)
        try:
            record, found = self._read(variant, inputs, dtype, self._path(variant, dtype))
            if record is not None and record["key"] != text_digest(canonical(current)):
                why = _why_changed(record["parts"], current)
                if why is None:  # its parts say it holds, its key says otherwise
                    raise Discarded("its key is not the one its parts give")
                self.recomputed[(ex, label)] = why
                return None
        except (
            Discarded,
            WeanjError,
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
        ) as e:
            why = (str(e).splitlines() or [type(e).__name__])[0][:160] or type(e).__name__
            if not isinstance(e, Discarded):
                why = f"unreadable ({why})"
            self.discarded.append((f"{ex} {label}", why))
            self.recomputed[(ex, label)] = "its record was unusable"
            return None
        if record is None:
            self.recomputed[(ex, label)] = "no earlier record"
            return None
        self.reused[(ex, label)] = record["created"]
        self._recalled[(ex, label)] = record
        if not isinstance(found, Gradient):  # what its key was recomputed with
            return dataclasses.replace(found, configuration=config)
        found.configuration = config
        found.source, found.of = "run", variant
        found.seconds = record["seconds"]
        found.extra["reused"] = self.reused[(ex, label)]
        return found

    def _read(self, variant: Variant, inputs: Inputs, dtype: str, path: Path):
        """`(record, Gradient or Fault)` from a record file, (None, None) where there is
        none; anything not exactly what `flush` writes for this evaluation raises
        `Discarded` (and is recomputed)."""
        import os
        import stat
        import zipfile

        import numpy as np

        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None, None
        if not stat.S_ISREG(info.st_mode):
            raise Discarded("not a regular file (a link, a folder or a device)")
        ex = variant.example
        expected: dict[str, tuple[np.dtype, tuple[int, ...]]] = {}
        for name, shape in inputs.wrt_shapes.items():
            kind = ex.array(name).kind
            expected[f"g_{name}"] = (
                np.dtype(COMPLEX_OF[dtype] if kind == "complex" else dtype).newbyteorder("<"),
                tuple(shape),
            )
        if info.st_size > 2 * (sum(_nbytes(*e) for e in expected.values()) + _RECORD_TEXT_MAX):
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
                arrays = {}
                if "fault" not in record:
                    if names != {"record", *expected}:
                        raise Discarded("its arrays are not the example's gradient arrays")
                    for member, (dt, shape) in expected.items():
                        arrays[member[2:]] = _header_checked(z, members[member], dt, shape)
                elif names != {"record"}:
                    raise Discarded("a recorded fault that holds arrays")
        except zipfile.BadZipFile as e:
            raise Discarded(f"not a record ({e})") from None
        payload = {k: v for k, v in record.items() if k != "payload"}
        if record["payload"] != text_digest(canonical(payload)):
            raise Discarded("its contents do not match their recorded digest (edited?)")
        if "fault" in record:
            f = record["fault"]
            return record, Fault(Verdict.parse(f["verdict"]), f["what"], f["command"])
        for name, a in arrays.items():
            if array_sha256(a) != record["sha256"][name]:
                raise Discarded(f"the values of {name} do not match their sha256")
            if not np.all(np.isfinite(a)):
                raise Discarded(f"the gradient of {name} is not finite")
        g = Gradient(
            ex,
            variant.name,
            variant.family,
            dtype,
            {name: arrays[name] for name in ex.wrt_names},
            float(record["loss"]),
            dict(inputs.params),
            inputs.digest,
            provenance_key(inputs.digest, dict(inputs.params), dtype),
            backend=variant.backend,
            backend_version=str(record["parts"]["backend"]),
            created=record["created"],
            noise={k: float(v) for k, v in record["noise"].items()},
        )
        return record, g

    def recall_check(self, variant: Variant, dtype: str, kind: CaseKind, array: str) -> dict | None:
        """The recorded numbers of a gradient check of a reused evaluation, or None."""
        record = self._recalled.get((variant.example.name, label_of(variant, dtype)))
        if record is None:
            return None
        return record["checks"].get(f"{kind}::{array}")

    # --- keep ---------------------------------------------------------------------------------

    def keep(self, variant: Variant, inputs: Inputs, dtype: str, found: Gradient | Fault) -> None:
        """Note a new evaluation; written by `flush` once its checks are known."""
        if isinstance(found, Fault) and found.verdict not in _REUSED_FAULTS:
            return
        parts = self.parts(variant, inputs, dtype, found.configuration)
        seconds = getattr(found, "seconds", None)
        self._pending[(variant.example.name, label_of(variant, dtype))] = {
            "variant": variant,
            "dtype": dtype,
            "found": found,
            "record": {
                "format": FORMAT,
                "example": variant.example.name,
                "variant": variant.name,
                "dtype": dtype,
                "key": text_digest(canonical(parts)),
                "parts": parts,
                "created": now(),
                "seconds": None if seconds is None else float(seconds),
                "checks": {},
            },
        }

    def keep_check(
        self, variant: Variant, dtype: str, kind: CaseKind, array: str, numbers: dict
    ) -> None:
        pending = self._pending.get((variant.example.name, label_of(variant, dtype)))
        if pending is not None:
            if "info" in numbers:  # what the check computed; the judge adds its own afresh
                numbers = {
                    **numbers,
                    "info": {k: v for k, v in numbers["info"].items() if k in TAYLOR_INFO},
                }
            pending["record"]["checks"][f"{kind}::{array}"] = numbers

    def flush(self) -> None:
        """Write the records noted since the last flush (atomically; a failure to write
        costs only the next run's reuse)."""
        import numpy as np

        for pending in self._pending.values():
            v, found, record = pending["variant"], pending["found"], pending["record"]
            path = self._path(v, pending["dtype"])
            arrays: dict[str, Any] = {}
            if isinstance(found, Fault):
                record["fault"] = {
                    "verdict": found.verdict,
                    "what": found.what,
                    "command": found.command,
                }
            else:
                arrays = {
                    name: np.ascontiguousarray(a, dtype=np.asarray(a).dtype.newbyteorder("<"))
                    for name, a in found.gradients.items()
                }
                record["loss"] = float(found.loss)
                record["noise"] = {k: float(x) for k, x in found.noise.items()}
                record["sha256"] = {name: array_sha256(a) for name, a in arrays.items()}
            try:
                record = json.loads(json.dumps(record, default=_plain))
                record["payload"] = text_digest(canonical(record))
                with atomic_path(path, foreign="aside") as tmp:
                    with open(tmp, "wb") as f:
                        text = np.array(canonical(record))
                        np.savez(f, record=text, **{f"g_{k}": a for k, a in arrays.items()})
            except (OSError, WeanjError, TypeError, ValueError) as e:
                self._notes.append(f"note: could not write the evaluation record {path} ({e})")
        self._pending.clear()

    def summary(self, example: str) -> tuple[dict[str, str], str | None]:
        """`({label: "reused" | "recomputed: why"}, one line)` for one example."""
        out = {
            label: f"reused (from {when})"
            for (ex, label), when in self.reused.items()
            if ex == example
        }
        out.update(
            {
                label: f"recomputed: {why}"
                for (ex, label), why in self.recomputed.items()
                if ex == example
            }
        )
        if not out:
            return out, None
        reused = sum(1 for (ex, _) in self.reused if ex == example)
        changed = {
            label: why
            for (ex, label), why in self.recomputed.items()
            if ex == example and why not in ("no earlier record",)
        }
        line = f"  evaluations: reused {reused} of {len(out)}"
        if changed:
            by_why: dict[str, list[str]] = {}
            for label, why in changed.items():  # one reason once, however many variants
                by_why.setdefault(why, []).append(label)
            shown = "; ".join(
                f"{', '.join(labels[:4])}{' …' if len(labels) > 4 else ''}: recomputed — {why}"
                for why, labels in by_why.items()
            )
            line += f" ({shown})"
        return out, line


# --- what a record must be, checked before it is believed -------------------------------------


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
        data = f.read(_nbytes(got_dtype, got_shape))
    return np.frombuffer(data, dtype=got_dtype).reshape(got_shape).copy()


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
        _require(fields == common | {"loss", "noise", "sha256"}, "its fields are not a record's")
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
        _require(_finite(record["loss"]), "its loss is not a finite number")
        noise = record["noise"]
        _require(
            isinstance(noise, dict)
            and set(noise) <= {"loss", *wrt}
            and all(_finite(x) and x >= 0 for x in noise.values()),
            "its rounding levels are malformed",
        )
        digests = record["sha256"]
        _require(
            isinstance(digests, dict)
            and set(digests) == set(wrt)
            and all(isinstance(x, str) and _SHA256.match(x) for x in digests.values()),
            "its arrays' digests are malformed",
        )
    checks = record["checks"]
    _require(isinstance(checks, dict), "its gradient checks are malformed")
    for key, numbers in checks.items():
        _check_check(key, numbers, wrt)


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
    if stored.get("x64") != current.get("x64"):
        return "jax_enable_x64 changed"
    if stored.get("checks") != current["checks"]:
        return "the gradient-check policy changed"
    if stored.get("variant") != current["variant"] or stored.get("family") != current["family"]:
        return "its name or family changed"
    if stored != current:
        return "its key changed"
    return None
