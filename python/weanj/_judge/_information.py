"""What a case's judgement says beside its verdict, for information: the x64
configuration a run computed in, the entries a gradient check's kink mask left out, the
central differences beside a gradient check, and a device pair's device and precision.

Each is a field of `CaseJudgement` (`x64`, `masked`, `fd`, `device`). `check.json`, an
evaluation record's check numbers and `--json` hold them as one mapping under the key
`info` (`information_json` writes it, `information_fields` reads it back), the keys and
values as they always were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._model._kinds import is_number
from .._x64 import X64


@dataclass(frozen=True)
class Masked:
    """The entries a gradient check's kink mask left out: `left_out` of `size`, and
    why (the example's `FDPolicy.why`)."""

    left_out: int
    size: int
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"left_out": self.left_out, "size": self.size, "why": self.why}

    @classmethod
    def from_json(cls, data: Any) -> Masked:
        """What `to_json` wrote (a `ValueError` for anything else)."""
        if not (
            isinstance(data, dict)
            and set(data) == {"left_out", "size", "why"}
            and is_number(data["left_out"])
            and is_number(data["size"])
            and isinstance(data["why"], str)
        ):
            raise ValueError("a kink mask that is not its counts and why")
        return cls(data["left_out"], data["size"], data["why"])


@dataclass(frozen=True)
class CentralDifferences:
    """Central differences beside a gradient check, as information: the relative
    `error` of the gradient against them, at the `step` and the example's `threshold`
    (`FDPolicy`)."""

    error: float
    step: float
    threshold: float

    @property
    def above(self) -> bool:
        """Whether the error is above the example's threshold."""
        return self.error > self.threshold

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "step": self.step, "threshold": self.threshold}

    @classmethod
    def from_json(cls, data: Any) -> CentralDifferences:
        """What `to_json` wrote (a `ValueError` for anything else)."""
        if not (
            isinstance(data, dict)
            and set(data) == {"error", "step", "threshold"}
            and all(is_number(x) for x in data.values())
        ):
            raise ValueError("central differences that are not three numbers")
        return cls(data["error"], data["step"], data["threshold"])


@dataclass(frozen=True)
class DeviceComparison:
    """A device pair's device run: its `kind` (`tpu`), the device as JAX describes it,
    the matmul precision in effect, whether the device is the stand-in; where the pair
    failed, the verdict of the run again at precision=highest (`highest`, where re-run)
    and the line saying whether the precision or the port is at fault."""

    kind: str
    device: str
    precision: str
    standin: bool
    highest: str | None = None
    precision_or_bug: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "device": self.device,
            "precision": self.precision,
            "standin": self.standin,
        }
        if self.highest is not None:
            out["highest"] = self.highest
        if self.precision_or_bug is not None:
            out["precision_or_bug"] = self.precision_or_bug
        return out

    @classmethod
    def from_json(cls, data: Any) -> DeviceComparison:
        """What `to_json` wrote (a `ValueError` for anything else)."""
        texts = ("kind", "device", "precision")
        optional = ("highest", "precision_or_bug")
        if not (
            isinstance(data, dict)
            and set(texts) <= set(data) <= {*texts, "standin", *optional}
            and all(isinstance(data[k], str) for k in texts)
            and isinstance(data.get("standin"), bool)
            and all(isinstance(data.get(k, ""), str) for k in optional)
        ):
            raise ValueError("a device pair's device that is not of its kind")
        return cls(*(data[k] for k in texts), data["standin"], *map(data.get, optional))


# The `CaseJudgement` fields held under `info`, in the order they are written.
INFORMATION = ("x64", "masked", "fd", "device")


def information_json(j: Any) -> dict[str, Any]:
    """A case's information as the mapping files hold under `info` (`INFORMATION`; none
    where none is known)."""
    found = {name: getattr(j, name) for name in INFORMATION}
    return {name: value.to_json() for name, value in found.items() if value is not None}


def information_fields(info: Any) -> dict[str, Any]:
    """The `CaseJudgement` fields an `info` mapping gives (what `information_json` wrote,
    or an evaluation record's check numbers; a `ValueError` for anything else)."""
    if not isinstance(info, dict) or not set(info) <= set(INFORMATION):
        raise ValueError("a case's information of a kind weanj does not write")
    read = {"masked": Masked.from_json, "fd": CentralDifferences.from_json}
    read["device"], read["x64"] = DeviceComparison.from_json, _x64
    return {name: read[name](value) for name, value in info.items()}


def _x64(data: Any) -> X64:
    if not (
        isinstance(data, dict)
        and set(data) == {"enabled", "source"}
        and isinstance(data["enabled"], bool)
        and isinstance(data["source"], str)
    ):
        raise ValueError("an x64 configuration that is not a flag and its source")
    return X64(data["enabled"], data["source"])
