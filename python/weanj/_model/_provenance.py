"""Where a gradient was computed, beyond its inputs and configuration: the device a run
ran on and the matmul precision in effect there, the evaluation record it was reused
from, the processes it ran across.

Each is a field of `Gradient` (`device`, `precision_level`, `reused`, `x64`,
`distributed`, `attributes`). Files hold them as one flat mapping under the key `extra`
(an evaluation record's, `check.json`'s subjects'): `provenance_json` writes it,
`provenance_fields` reads it back, the keys and values as they always were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._kinds import is_number

# the keys of a device run's provenance, in the order they are written
DEVICE_KEYS = (
    "device",
    "device_kind",
    "device_software",
    "precision",
    "precision_reduced",
    "standin",
)


@dataclass(frozen=True)
class DeviceProvenance:
    """A run on a device (not the CPU): where it ran and the matmul precision in effect.

    `label` is the device as the run's label carries it (`tpu`; `tpu@highest` for the
    precision-or-bug re-run); `description` the device's kind as JAX describes it
    ("TPU v5 lite", "stand-in tpu (CPU device 1)"); `software` its platform's version
    ("" where unknown); `precision` the matmul precision in effect, `precision_reduced`
    whether it is below full precision; `standin` whether the device is the stand-in
    (`_backends._standin`)."""

    label: str
    description: str
    precision: str
    precision_reduced: bool
    software: str = ""
    standin: bool = False

    def to_json(self) -> dict[str, Any]:
        """The flat mapping files hold (`DEVICE_KEYS`; no software where unknown, no
        `standin` for a real device)."""
        out: dict[str, Any] = {"device": self.label, "device_kind": self.description}
        if self.software:
            out["device_software"] = self.software
        out["precision"] = self.precision
        out["precision_reduced"] = self.precision_reduced
        if self.standin:
            out["standin"] = True
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DeviceProvenance:
        """What `to_json` wrote (a `ValueError` for anything else)."""
        texts = ("device", "device_kind", "precision")
        if not all(isinstance(data.get(k), str) for k in texts):
            raise ValueError("a device run whose device or precision is not text")
        if not isinstance(data.get("precision_reduced"), bool):
            raise ValueError("a device run whose precision_reduced is not a flag")
        software, standin = data.get("device_software", ""), data.get("standin", False)
        if not isinstance(software, str) or not isinstance(standin, bool):
            raise ValueError("a device run whose software or stand-in is not of its kind")
        return cls(
            data["device"],
            data["device_kind"],
            data["precision"],
            data["precision_reduced"],
            software,
            standin,
        )


@dataclass(frozen=True)
class Distributed:
    """An evaluation run under jax.distributed: its `processes` and the `devices` across
    them (`weanj run --processes`, docs/distributed.md)."""

    processes: int
    devices: int


# the keys `provenance_json` writes beside a device run's
_OTHER_KEYS = ("reused", "x64", "processes", "devices", "precision_level")


def provenance_json(g: Any) -> dict[str, Any]:
    """A gradient's provenance as the flat mapping files hold under `extra`: its device
    run's (`DEVICE_KEYS`), the time of the record it was reused from (`reused`), a file's
    further attributes, the JAX x64 configuration it ran in (`x64`), its processes
    (`processes`, `devices`) and the reduced precision's rounding levels
    (`precision_level`)."""
    out: dict[str, Any] = {} if g.device is None else g.device.to_json()
    if g.reused is not None:
        out["reused"] = g.reused
    out.update(g.attributes)
    if g.x64 is not None:
        out["x64"] = g.x64
    if g.distributed is not None:
        out["processes"] = g.distributed.processes
        out["devices"] = g.distributed.devices
    if g.precision_level is not None:
        out["precision_level"] = dict(g.precision_level)
    return out


def provenance_fields(extra: dict[str, Any]) -> dict[str, Any]:
    """The `Gradient` fields a flat `extra` mapping gives (what `provenance_json` wrote;
    a `ValueError` where a key weanj writes holds a value of another kind); keys weanj
    does not write are kept as they are, in `attributes`."""
    fields: dict[str, Any] = {}
    if "device" in extra:
        fields["device"] = DeviceProvenance.from_json(extra)
    for key in ("reused", "x64"):
        if key in extra:
            if not isinstance(extra[key], str):
                raise ValueError(f"a gradient whose {key} is not text")
            fields[key] = extra[key]
    if "processes" in extra or "devices" in extra:
        counts = (extra.get("processes"), extra.get("devices"))
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in counts):
            raise ValueError("a gradient whose processes or devices are not counts")
        fields["distributed"] = Distributed(*counts)
    level = extra.get("precision_level")
    if level is not None:
        if not isinstance(level, dict) or not all(is_number(v) for v in level.values()):
            raise ValueError("a gradient whose precision_level is not numbers")
        fields["precision_level"] = dict(level)
    known = {*DEVICE_KEYS, *_OTHER_KEYS}
    fields["attributes"] = {k: v for k, v in extra.items() if k not in known}
    return fields
