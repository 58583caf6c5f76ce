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
- **the project's `[tool.weanj]` table** (but `scheduler` and `timeout`);
- **the device** of a run on one (`_on_device.identity`: its kind, software, stand-in or
  not); such a record keeps the precision its floors come from, and only its gradient;
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
a verdict, never a traceback. The one writer (the client) writes a record as soon as its
evaluation finishes, so an interrupted run keeps what had finished; a check computed later
is written into it at the next `flush`. Each write replaces the whole file (a temporary
file renamed over the old one): a concurrent reader sees the old record or the new one,
never half of one. They guard against accidents, stale files and mixed-up or restored caches,
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._environment import now
from ..._errors import WeanjError
from ..._io._atomic import atomic_path
from ..._io._h5 import array_sha256
from ..._judge._contract import Fault
from ..._model import DeviceProvenance, Emulated, Gradient, Inputs, Variant, provenance_key
from ..._model._cost import Cost
from ..._model._verdicts import CaseKind, Verdict
from ..._places import Places
from ..._sources import text_digest
from ..evaluation._on_device import CPU, identity, identity_of, label_of
from ._record_beyond import FIELDS, into, written
from ._record_file import read_record
from ._record_form import (
    FORMAT,
    REUSED_FAULTS,
    UNREADABLE,
    Discarded,
    add_check,
    canonical,
    device_extra,
    plain_number,
)
from ._record_key import KeyParts, why_changed

# What `_write` computes from the evaluation itself, never carried over from a record read.
_DERIVED = (
    "payload",
    "loss",
    "noise",
    "sha256",
    "noise_sha256",
    "fault",
    "levels",
    "cost",
    "extra",
    "emulated",
    *FIELDS,
)


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
    _pending: dict[tuple[str, str], dict] = field(default_factory=dict)
    _recalled: dict[tuple[str, str], dict] = field(default_factory=dict)
    _reused_found: dict[tuple[str, str], Any] = field(default_factory=dict)

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

    def __post_init__(self) -> None:
        self._key = KeyParts(self.config, self._notes)

    def parts(self, variant: Variant, inputs: Inputs, dtype: str, config=None, device=None):
        """The key's parts (`_record_key.KeyParts.parts`)."""
        return self._key.parts(variant, inputs, dtype, config, device)

    # --- recall -------------------------------------------------------------------------------

    def _path(self, variant: Variant, label: str) -> Path:
        return self.places.evaluations(variant.example.name) / f"{label}.npz"

    def recall(
        self, variant: Variant, inputs: Inputs, dtype: str, device: str = CPU
    ) -> Gradient | Fault | None:
        """The recorded evaluation, where its key is the one recomputed now from the
        project; else None (and why it is recomputed). On a device not here (or that the
        variant cannot run on), None: the evaluation says why."""
        ex = variant.example.name
        label = label_of(variant, dtype, device)
        place = identity(variant, device, dtype) if device != CPU else None
        if device != CPU and place is None:
            return None
        if self.fresh:
            self.recomputed[(ex, label)] = "asked afresh (--fresh)"
            return None
        config = variant.configuration(dtype, device)
        current = self.parts(variant, inputs, dtype, config, place)
        try:
            record, found = self._read(variant, inputs, dtype, self._path(variant, label))
            if record is not None and record["key"] != text_digest(canonical(current)):
                why = why_changed(record["parts"], current)
                if why is None:  # its parts say it holds, its key says otherwise
                    raise Discarded("its key is not the one its parts give")
                self.recomputed[(ex, label)] = why
                return None
        except (WeanjError, *UNREADABLE) as e:
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
            found = dataclasses.replace(found, configuration=config)
        else:
            found.configuration = config
            found.source, found.of = "run", variant
            found.seconds = record["seconds"]
            found.reused = self.reused[(ex, label)]
        self._reused_found[(ex, label)] = found
        return found

    def not_reused(self, variant: Variant, dtype: str, why: str) -> None:
        """A recalled evaluation the session computes again all the same (`why`: a
        record without the second order a run asks for)."""
        key = (variant.example.name, label_of(variant, dtype))
        self.reused.pop(key, None)
        self._recalled.pop(key, None)
        self._reused_found.pop(key, None)
        self.recomputed[key] = why

    def _read(self, variant: Variant, inputs: Inputs, dtype: str, path: Path):
        """`(record, Gradient or Fault)` from a record file, (None, None) where there is
        none; anything not exactly what `flush` writes for this evaluation raises
        `Discarded` (and is recomputed)."""
        found = read_record(path, variant, inputs.wrt_shapes, dtype)
        if found is None:
            return None, None
        record, arrays, entries, beyond = found
        ex = variant.example
        if "fault" in record:
            f = record["fault"]
            return record, Fault(Verdict.parse(f["verdict"]), f["what"], f["command"])
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
            noise_entries=entries,
            levels_measured=bool(record["levels"]),
            cost=Cost.from_json(record["cost"]),
            evaluated=True,
        )
        if "emulated" in record:  # a float32 run's rounding, emulated (`_levels._emulated`)
            g.emulated = Emulated.from_json(record["emulated"])
        into(g, record, beyond)  # its outputs, their Jacobian's numbers, its Hessian products
        if "extra" in record:  # a device run's device and precision
            g.device = DeviceProvenance.from_json(record["extra"])
            g.precision_level = record["extra"].get("precision_level")
        return record, g

    def recall_check(self, variant: Variant, dtype: str, kind: CaseKind, array: str) -> dict | None:
        """The recorded numbers of a gradient check of a reused evaluation, or None."""
        record = self._recalled.get((variant.example.name, label_of(variant, dtype)))
        if record is None:
            return None
        return record["checks"].get(f"{kind}::{array}")

    # --- keep ---------------------------------------------------------------------------------

    def keep(
        self,
        variant: Variant,
        inputs: Inputs,
        dtype: str,
        found: Gradient | Fault,
        checks: dict | None = None,
        device: str = CPU,
    ) -> None:
        """Record a new evaluation now, as soon as it finished (with the numbers of the
        checks that came with it, `{(kind, array): numbers}`): an interrupted run keeps
        every evaluation that had finished. A check computed later is added by
        `keep_check` and written at the next `flush`. Of a run on a device, only a
        gradient is kept (its faults may be the platform's, or its load's)."""
        if isinstance(found, Fault) and (device != CPU or found.verdict not in REUSED_FAULTS):
            return
        place = identity_of(found.device) if device != CPU else None
        parts = self.parts(variant, inputs, dtype, found.configuration, place)
        seconds = getattr(found, "seconds", None)
        label = label_of(variant, dtype, device)
        pending = self._pending[(variant.example.name, label)] = {
            "variant": variant,
            "label": label,
            "dtype": dtype,
            "found": found,
            "changed": True,
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
        for (kind, array), numbers in (checks or {}).items():
            if "timeout" not in numbers:  # a check's timeout is the judge's, never kept
                add_check(pending, kind, array, numbers)
        self._write(pending)

    def keep_check(
        self, variant: Variant, dtype: str, kind: CaseKind, array: str, numbers: dict
    ) -> None:
        """A gradient check's numbers, computed after its evaluation was recorded (or
        reused from a record that had not got them yet): written at the next `flush`."""
        pending = self._pending_of(variant, dtype)
        if pending is not None:
            add_check(pending, kind, array, numbers)

    def keep_levels(self, variant: Variant, dtype: str, g: Gradient, device: str = CPU) -> None:
        """An evaluation's rounding levels, measured after it was recorded (a comparison
        asked for them): written at the next `flush`."""
        pending = self._pending_of(variant, dtype, device)
        if pending is not None:
            pending["changed"] = True

    def _pending_of(self, variant: Variant, dtype: str, device: str = CPU) -> dict | None:
        """The record to write of an evaluation kept or reused in this session (None:
        neither, as a timeout)."""
        key = (variant.example.name, label_of(variant, dtype, device))
        pending = self._pending.get(key)
        if pending is None and key in self._recalled:  # reused: written again if it changes
            record = {k: v for k, v in self._recalled[key].items() if k not in _DERIVED}
            record["checks"] = dict(record["checks"])
            found = self._reused_found[key]
            pending = {"variant": variant, "label": key[1], "dtype": dtype, "found": found}
            pending = self._pending[key] = {**pending, "changed": False, "record": record}
        return pending

    def payload(self, variant: Variant, dtype: str) -> str | None:
        """The payload digest of this evaluation's record as it stands on disk (written or
        reused in this session; None: none), which a store file written from it carries."""
        key = (variant.example.name, label_of(variant, dtype))
        pending = self._pending.get(key)
        if pending is not None:
            return None if pending["changed"] else pending.get("payload")
        record = self._recalled.get(key)
        return None if record is None else record.get("payload")

    def flush(self) -> None:
        """Write the records whose checks changed since they were written."""
        for pending in self._pending.values():
            if pending["changed"]:
                self._write(pending)

    def _write(self, pending: dict) -> None:
        """One record, atomically (a temporary file renamed over the old one); a failure
        to write costs only the next run's reuse."""
        import numpy as np

        v, found = pending["variant"], pending["found"]
        record = dict(pending["record"])
        pending["changed"] = False
        path = self._path(v, pending["label"])
        arrays: dict[str, Any] = {}
        entries: dict[str, Any] = {}  # each entry's rounding level, where measured
        beyond: dict[str, Any] = {}  # the outputs, the Hessian products (`_record_beyond`)
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
            record["levels"] = bool(found.levels_measured)
            record["cost"] = found.cost.to_json()
            if "device" in record["parts"]:  # a device run's place and precision level
                record["extra"] = device_extra(found)
            if found.emulated is not None:
                record["emulated"] = found.emulated.to_json()
            record["sha256"] = {name: array_sha256(a) for name, a in arrays.items()}
            if set(arrays) <= set(found.noise_entries):  # (the outputs' are `written`'s)
                entries = {
                    name: np.ascontiguousarray(found.noise_entries[name], dtype="<f8")
                    for name in arrays
                }
                record["noise_sha256"] = {k: array_sha256(a) for k, a in entries.items()}
            fields, beyond = written(found)
            record.update(fields)
        try:
            record = json.loads(json.dumps(record, default=plain_number))
            record["payload"] = text_digest(canonical(record))
            pending["payload"] = record["payload"]
            with atomic_path(path, foreign="aside") as tmp:
                with open(tmp, "wb") as f:
                    text = np.array(canonical(record))
                    members = {f"g_{k}": a for k, a in arrays.items()}
                    members.update({f"n_{k}": a for k, a in entries.items()})
                    members.update(beyond)
                    np.savez(f, record=text, **members)
        except (OSError, WeanjError, TypeError, ValueError) as e:
            self._notes.append(f"note: could not write the evaluation record {path} ({e})")
