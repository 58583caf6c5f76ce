"""What a variant's evaluation runs in: dtype, device, and its backend's numeric settings.

A `Configuration` is decided once per evaluation by the variant's backend
(`Variant.configuration`, docs/DESIGN.md §2.2) and read from there by everything that
depends on it: the evaluation's fault lines, the record's key, the run's JSON and views,
bench. A backend without JAX's 64-bit switch (Julia, plain Python, numpy) has `x64` None,
and nothing of JAX's configuration is applied to or said about its runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._x64 import X64


def run_label(name: str, dtype: str, device: str = "cpu") -> str:
    """How every view names a run: `jax-lex`, `jax-lex@float32`, `jax-lex@tpu`,
    `jax-lex@float32@tpu` (the default dtype and device are not written)."""
    label = name if dtype == "float64" else f"{name}@{dtype}"
    return label if device == "cpu" else f"{label}@{device}"


@dataclass(frozen=True)
class Configuration:
    """A run's configuration: `dtype` under test, `device` kind, JAX's `x64` (None: the
    backend has no such switch) and JAX's default matmul `precision` (None: JAX's default,
    or a backend without one)."""

    dtype: str = "float64"
    device: str = "cpu"
    x64: X64 | None = None
    precision: str | None = None

    def label(self, variant_name: str) -> str:
        return run_label(variant_name, self.dtype, self.device)

    def describe(self) -> str:
        """The backend's settings as the views say them (`x64 on (source)`; "" where the
        backend has none)."""
        parts = [] if self.x64 is None else [self.x64.describe()]
        if self.precision is not None:
            parts.append(f"matmul precision {self.precision}")
        return ", ".join(parts)

    def key_parts(self) -> dict[str, Any]:
        """What of it an evaluation record's key holds beyond the dtype (already in the
        inputs' key): only what is set, so that a backend without x64 keys none."""
        parts: dict[str, Any] = {}
        if self.x64 is not None:
            parts["x64"] = self.x64.enabled  # as the variant runs (not where from)
        if self.precision is not None:
            parts["precision"] = self.precision
        if self.device != "cpu":
            parts["device"] = self.device
        return parts

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dtype": self.dtype, "device": self.device}
        if self.x64 is not None:
            out["x64"] = self.x64.to_json()
        if self.precision is not None:
            out["precision"] = self.precision
        return out


def host_configuration(dtype: str = "float64", device: str = "cpu") -> Configuration:
    """The configuration of a backend with no settings of its own (Julia, plain Python)."""
    return Configuration(dtype, device)
