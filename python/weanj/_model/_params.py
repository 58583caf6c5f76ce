"""Typed static parameters: int, float or bool, each with its range.

A parameter is passed to a variant after the arrays, as a static argument (`jax.jit`
recompiles per value), recorded as a typed attribute of inputs and gradient files, and
settable on the command line as `--NAME V` (parsed by `Param.parse`). Values are checked
in exactly one place, `Param.check`: no silent truncation (3.7 is not an int parameter's
3), no NaN, nothing outside the range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import DefinitionError, InputError
from ._kinds import shown

# Loop counters in the kernels (lax.scan/fori_loop lengths, Julia `Int` loops) are safe up
# to int32's maximum; no int parameter may exceed it.
INT32_MAX = 2**31 - 1
# A search (`weanj fuzz`) draws an open side of a range up to this many times the default
# (an int: or default + 8; a float: down to default / OPEN_REACH too, or ±OPEN_REACH
# around a zero default).
OPEN_REACH = 4
PARAM_KINDS = ("int", "float", "bool")
# The command line's own options (`weanj run ... --timeout 30`): a parameter of that name
# could never be set as `--NAME`, so none may have one (a test holds this list against
# the parser's options).
RESERVED_NAMES = frozenset(
    {
        "dtype",
        "out",
        "inputs",
        "force",
        "timeout",
        "json",
        "plot",
        "variants",
        "sizes",
        "ns",
        "over",
        "device",
        "devices",
        "samples",
        "replace",
        "format",
        "pairs",
        "seconds",
        "fresh",
        "fd",
        "seed",
        "workers",
        "scheduler",
        "processes",
        "require",
        "traceback",
        "help",
        "version",
        "yes",
        "verbose",
        "strict",
        "order",
    }
)
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _num(value: Any) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _kind_of(value: Any) -> str | None:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    return None


@dataclass(frozen=True)
class Param:
    """A static parameter of an example (an iteration count, a viscosity, a flag).

    **Arguments:**

    - `name`: a Python identifier; also the command-line option `--<name>`.
    - `default`: the value of the shared inputs (recorded in the inputs file).
    - `kind`: `"int"`, `"float"` or `"bool"`; default: the default's type.
    - `minimum`, `maximum`: the accepted range (int: default 1 and int32's maximum, the
      loop counters' limit; float: default unbounded, always finite; bool: none).
    - `help`: one line for `--help` and `weanj list`.
    - `bench`: the value `weanj bench` uses while it sweeps the sizes (default: `default`).
    - `sweep`: the values of `weanj bench`'s memory-against-parameter records.
    """

    name: str
    default: Any
    kind: str | None = None
    minimum: Any = None
    maximum: Any = None
    help: str = ""
    bench: Any = None
    sweep: tuple = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise DefinitionError(f"parameter name {self.name!r} must be a Python identifier")
        if self.name in RESERVED_NAMES:
            raise DefinitionError(
                f"parameter name {self.name!r} is one of weanj's own command-line options "
                f"(--{self.name}); choose another name"
            )
        kind = self.kind if self.kind is not None else _kind_of(self.default)
        if kind not in PARAM_KINDS:
            raise DefinitionError(
                f"parameter {self.name}: kind must be int, float or bool (inferred from the "
                f"default), got default {shown(self.default)}"
            )
        object.__setattr__(self, "kind", kind)
        lo, hi = self.minimum, self.maximum
        if kind == "int":
            lo, hi = (1 if lo is None else lo), (INT32_MAX if hi is None else hi)
            if any(_kind_of(v) != "int" for v in (lo, hi)) or not lo <= hi <= INT32_MAX:
                raise DefinitionError(
                    f"parameter {self.name}: need int minimum <= maximum <= {INT32_MAX}, got "
                    f"{shown(lo)}, {shown(hi)}"
                )
            lo, hi = int(lo), int(hi)
        elif kind == "float":
            lo, hi = (-math.inf if lo is None else lo), (math.inf if hi is None else hi)
            if any(_kind_of(v) not in ("int", "float") for v in (lo, hi)) or not lo <= hi:
                raise DefinitionError(
                    f"parameter {self.name}: need minimum <= maximum, got {shown(lo)}, {shown(hi)}"
                )
            lo, hi = float(lo), float(hi)
        elif lo is not None or hi is not None:
            raise DefinitionError(f"parameter {self.name}: a bool parameter has no range")
        object.__setattr__(self, "minimum", lo)
        object.__setattr__(self, "maximum", hi)
        try:
            object.__setattr__(self, "default", self.check(self.default))
            object.__setattr__(self, "sweep", tuple(self.check(v) for v in self.sweep))
            if self.bench is not None:
                object.__setattr__(self, "bench", self.check(self.bench))
        except InputError as e:
            raise DefinitionError(f"parameter {self.name}: {e}") from None

    @property
    def bench_value(self) -> Any:
        return self.default if self.bench is None else self.bench

    @property
    def range_text(self) -> str:
        if self.kind == "bool":
            return "true or false"
        lo = "" if self.minimum == -math.inf else f"{_num(self.minimum)} <= "
        hi = "" if self.maximum == math.inf else f" <= {_num(self.maximum)}"
        return f"{lo}{self.kind}{hi}"

    @property
    def search_range(self) -> tuple[Any, Any]:
        """The range a search (`weanj fuzz`) draws this parameter from: the declared range,
        an open side cut where a kernel is likely to take it. An int's open top (int32's
        maximum): up to `OPEN_REACH` × the default, or default + 8. A float's open side keeps
        the default's sign and scale: [default / 4, 4 · default] for a positive default,
        mirrored for a negative one (a step size, a viscosity, a Courant number are used
        near their default and rarely change sign); a zero default says nothing of the
        scale: [−4, 4]. A bool: both values."""
        if self.kind == "bool":
            return (False, True)
        if self.kind == "int":
            lo, hi = int(self.minimum), int(self.maximum)
            if hi == INT32_MAX:
                reach = max(OPEN_REACH * int(self.default), int(self.default) + 8)
                hi = max(lo, min(hi, reach))
            return lo, hi
        d = float(self.default)
        if d > 0:
            near = (d / OPEN_REACH, d * OPEN_REACH)
        elif d < 0:
            near = (d * OPEN_REACH, d / OPEN_REACH)
        else:
            near = (-float(OPEN_REACH), float(OPEN_REACH))
        lo = float(self.minimum) if math.isfinite(self.minimum) else near[0]
        hi = float(self.maximum) if math.isfinite(self.maximum) else near[1]
        return lo, hi

    def check(self, value: Any) -> Any:
        """`value` as this parameter's type, within its range, or an `InputError`."""
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        kind = _kind_of(value)
        if self.kind == "bool":
            if kind != "bool":
                raise InputError(f"{self.name} must be true or false, got {shown(value)}")
            return bool(value)
        if self.kind == "int":
            if kind != "int":
                raise InputError(f"{self.name} must be an integer, got {shown(value)}")
            number: Any = int(value)
        else:
            if kind not in ("int", "float") or not math.isfinite(float(value)):
                raise InputError(f"{self.name} must be a finite number, got {shown(value)}")
            number = float(value)
        if number < self.minimum:
            raise InputError(
                f"{self.name} must be at least {_num(self.minimum)}, got {_num(number)}"
            )
        if number > self.maximum:
            why = " (the kernels' loop counters are int32)" if self.maximum == INT32_MAX else ""
            raise InputError(
                f"{self.name} must be at most {_num(self.maximum)}{why}, got {_num(number)}"
            )
        return number

    def parse(self, text: str) -> Any:
        """A command-line word (`--K 5`, `--nu 0.05`, `--upwind true`) as a checked value."""
        word = text.strip()
        if self.kind == "bool":
            if word.lower() in _TRUE:
                return True
            if word.lower() in _FALSE:
                return False
            raise InputError(f"--{self.name} takes true or false, got {shown(text)}")
        try:
            value: Any = int(word) if self.kind == "int" else float(word)
        except ValueError:
            what = "an integer" if self.kind == "int" else "a number"
            raise InputError(f"--{self.name} takes {what}, got {shown(text)}") from None
        return self.check(value)
