"""A run of a variant: the variant in one dtype on one device, named as every view names it
(`jax-lex`, `jax-lex@float32`, `jax-lex@tpu`, `jax-lex@float32@tpu`: `run_label`).

What `weanj bisect` and `weanj fuzz` judge is a pair of runs, so that a name a view prints
(`V~V@float32`, `REF~V@tpu`) can be followed: the front door reads the names back into
`VariantRun`s (`weanj._run_names`), and everything below receives these objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import InputError
from .._vocabulary import DTYPES
from ._configuration import run_label
from ._variant import Variant


@dataclass(frozen=True)
class VariantRun:
    """`variant` evaluated in `dtype` (one it declares) on `device` (a JAX device kind)."""

    variant: Variant
    dtype: str = "float64"
    device: str = "cpu"

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.dtype not in self.variant.dtypes:
            raise InputError(
                f"{self.variant.name} does not run in {self.dtype}: it declares "
                f"{', '.join(self.variant.dtypes)} only"
            )

    @property
    def label(self) -> str:
        """How every view names the run (`jax-lex@float32@tpu`)."""
        return run_label(self.variant.name, self.dtype, self.device)

    @property
    def family(self) -> str:
        return self.variant.family

    def __repr__(self) -> str:
        return f"VariantRun({self.label!r})"
