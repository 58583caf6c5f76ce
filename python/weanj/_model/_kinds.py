"""Typed arrays: the kind of values an example's array holds, its shape, and the rules
that turn a value into what an inputs file stores and what a variant receives.

Four kinds (docs/DESIGN.md, "The typed model"):

- `float`: real numbers in the dtype under test. Stored as float64; a run in float32
  casts them. These are the arrays most kernels differentiate.
- `complex`: complex numbers, stored as complex128, cast to complex64 in a float32 run.
- `int`: integers kept exactly as generated (int64 unless the array declares `dtype`),
  e.g. an edge list or a cell index. `index=True` marks 0-based indices into another
  array: Python sees the stored values, Julia receives them plus one.
- `bool`: masks and flags, stored as HDF5 booleans.

Only float and complex arrays are differentiable. Nothing here imports JAX or h5py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import DefinitionError, InputError
from .._vocabulary import DTYPES

ARRAY_KINDS = ("float", "complex", "int", "bool")  # what an array of an example holds
COMPLEX_OF = {"float64": "complex128", "float32": "complex64"}
FLOAT_OF = {"complex128": "float64", "complex64": "float32"}


def check_dtype(dtype: Any) -> str:
    """A dtype under test as its name, or an `InputError` naming the choices."""
    name = getattr(np.dtype(dtype), "name", None) if _is_dtype(dtype) else None
    if name not in DTYPES:
        raise InputError(f"dtype must be float64 or float32, got {shown(dtype)}")
    return name


def _is_dtype(value: Any) -> bool:
    try:
        np.dtype(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool)


def is_number(x: Any) -> bool:
    """An int or float as a JSON file holds a number (not a flag)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def shown(value: Any, limit: int = 40) -> str:
    """`repr(value)` on one short line (arrays and long strings are cut)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def spelled_shape(dims: tuple) -> str:
    """`("P", 2)` as `(P, 2)`, `("n",)` as `(n,)`, `()` as `()`."""
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


@dataclass(frozen=True)
class Array:
    """One array input of an example.

    **Arguments:**

    - `name`: a Python identifier; the dataset's name in the inputs file.
    - `kind`: `"float"` (default), `"complex"`, `"int"` or `"bool"`.
    - `shape`: a tuple of ints and symbols (strings), e.g. `("P", 2)`; `()` is a 0-d
      array; None accepts any shape. A symbol takes one size across all arrays.
    - `index`: for int arrays holding 0-based indices: the Julia side receives them
      1-based (plus one); Python and JAX see them as stored. Say what they index, so that
      values out of range are refused (JAX would clamp or wrap them silently, Julia throw):
      a size symbol (`index="n"`: 0 ≤ v < n) or an array's axis (`index=("rho", 0)`);
      `index=True` refuses negative values only.
    - `dtype`: for int arrays, the one integer dtype accepted (e.g. `"int32"`); None
      accepts any integer dtype and keeps it.
    """

    name: str
    kind: str = "float"
    shape: tuple | None = None
    index: bool | str | tuple = False
    dtype: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise DefinitionError(f"array name {self.name!r} must be a Python identifier")
        if self.kind not in ARRAY_KINDS:
            raise DefinitionError(
                f"array {self.name}: kind must be one of {', '.join(ARRAY_KINDS)}, "
                f"got {self.kind!r}"
            )
        if self.shape is not None:
            dims = (self.shape,) if isinstance(self.shape, (str, int)) else tuple(self.shape)
            if not all(
                (isinstance(d, str) and d.isidentifier())
                or (isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0)
                for d in dims
            ):
                raise DefinitionError(
                    f"array {self.name}: shape must be a tuple of ints >= 0 and symbols, "
                    f"got {self.shape!r}"
                )
            object.__setattr__(
                self, "shape", tuple(d if isinstance(d, str) else int(d) for d in dims)
            )
        if self.index is not False and self.kind != "int":
            raise DefinitionError(f"array {self.name}: index={self.index!r} needs kind='int'")
        if isinstance(self.index, list):
            object.__setattr__(self, "index", tuple(self.index))
        target = self.index
        shaped = (
            isinstance(target, bool)
            or (isinstance(target, str) and target.isidentifier())
            or (
                isinstance(target, tuple)
                and len(target) == 2
                and isinstance(target[0], str)
                and isinstance(target[1], int)
                and not isinstance(target[1], bool)
                and target[1] >= 0
            )
        )
        if not shaped:
            raise DefinitionError(
                f"array {self.name}: index must be True, a size symbol ('n') or an array's axis "
                f"(('rho', 0)), got {self.index!r}"
            )
        if self.dtype is not None:
            if (
                self.kind != "int"
                or not _is_dtype(self.dtype)
                or np.dtype(self.dtype).kind not in "iu"
            ):
                raise DefinitionError(
                    f"array {self.name}: dtype= names the integer dtype of an int array, "
                    f"got {self.dtype!r} for a {self.kind} array"
                )
            object.__setattr__(self, "dtype", np.dtype(self.dtype).name)

    @property
    def differentiable(self) -> bool:
        return self.kind in ("float", "complex")

    def describe(self) -> str:
        """`x: float (n, n)` for listings."""
        shape = "" if self.shape is None else " " + spelled_shape(self.shape)
        extra = ""
        if self.index is True:
            extra = " index"
        elif isinstance(self.index, str):
            extra = f" index into {self.index}"
        elif self.index:
            extra = f" index into {self.index[0]} axis {self.index[1]}"
        kind = self.dtype if self.dtype else self.kind
        return f"{self.name}: {kind}{extra}{shape}"

    # --- values ------------------------------------------------------------------------

    def _accepts(self, dt: np.dtype) -> bool:
        if self.kind == "float":
            return dt.kind == "f"
        if self.kind == "complex":
            return dt.kind in "fc"
        if self.kind == "int":
            return dt.kind in "iu" and (self.dtype is None or dt.name == self.dtype)
        return dt.kind == "b"

    def _expected(self) -> str:
        if self.kind == "int":
            return self.dtype or "an integer dtype"
        return {"float": "a float dtype", "complex": "a complex dtype", "bool": "bool"}[self.kind]

    def stored(self, value: Any, what: str) -> np.ndarray:
        """`value` as the inputs file stores it (float64, complex128, the integer dtype,
        bool), or an `InputError`: a value of another kind is never cast silently (a
        complex value for a float array would lose its imaginary part)."""
        a = as_array(value, f"{what}: {self.name}")
        if not self._accepts(a.dtype):
            hint = _kind_hint(a.dtype)
            raise InputError(
                f"{what}: {self.name} has dtype {a.dtype}, but the example declares it "
                f"{self.kind} ({self._expected()}){hint}"
            )
        if self.kind == "float":
            a = a.astype(np.float64, copy=False)
        elif self.kind == "complex":
            a = a.astype(np.complex128, copy=False)
        elif not a.dtype.isnative:  # big-endian integers: the same values, in this machine's order
            a = a.astype(a.dtype.newbyteorder("="))
        check_finite(a, f"{what}: {self.name}")
        return np.asarray(a, order="C")  # not ascontiguousarray: it makes a 0-d array 1-d

    def for_run(self, stored: np.ndarray, dtype: str) -> np.ndarray:
        """A stored array as a variant receives it in a run in `dtype`."""
        if self.kind == "float":
            return stored.astype(dtype, copy=False)
        if self.kind == "complex":
            return stored.astype(COMPLEX_OF[dtype], copy=False)
        return stored

    def index_bound(self, arrays: Any, sizes: Any) -> tuple[int | None, str]:
        """`(bound, what)`: the values of an index array must lie in `0 … bound − 1` (None:
        no upper bound declared)."""
        if self.index is True:
            return None, "an index"
        if isinstance(self.index, str):
            return sizes.get(self.index), f"an index into size {self.index}"
        name, axis = self.index
        shape = np.shape(arrays[name])
        return (shape[axis] if axis < len(shape) else None), f"an index into {name} axis {axis}"

    def check_index(self, a: np.ndarray, bound: int | None, what: str) -> None:
        """An `InputError` naming the first value of the index array `a` outside its range,
        its place and value in both index conventions."""
        if a.size == 0:
            return
        bad = a < 0 if bound is None else (a < 0) | (a >= bound)
        if not bad.any():
            return
        first = tuple(int(i) for i in np.argwhere(bad)[0]) if a.ndim else ()
        value = int(a[first])
        allowed = "≥ 0" if bound is None else f"in 0 … {bound - 1} (Julia: 1 … {bound})"
        raise InputError(
            f"{self.name} holds {value} (Julia: {value + 1}) at {index_text(first)}, "
            f"outside its range as {what}: {allowed}; JAX would clamp or wrap it, Julia throw"
        )

    def call_dtype(self, dt: np.dtype, variant: str) -> str | None:
        """The dtype under test that an argument of this array implies (None for int
        and bool arrays), or an `InputError` when the argument has the wrong kind."""
        if self.kind == "float" and dt.name in DTYPES:
            return dt.name
        if self.kind == "complex" and dt.name in FLOAT_OF:
            return FLOAT_OF[dt.name]
        if self.kind in ("int", "bool") and self._accepts(dt):
            return None
        if self.kind == "float":
            expected = "float64 or float32"
        elif self.kind == "complex":
            expected = "complex128 or complex64"
        else:
            expected = self._expected()
        raise InputError(f"{variant}: {self.name} has dtype {dt}; expected {expected}")


def _kind_hint(dt: np.dtype) -> str:
    if dt.kind == "c":
        return "; declare it weanj.Array(name, kind='complex') to keep complex values"
    if dt.kind in "iu":
        return "; declare it weanj.Array(name, kind='int') to keep integers"
    if dt.kind == "b":
        return "; declare it weanj.Array(name, kind='bool')"
    return ""


def as_array(value: Any, what: str) -> np.ndarray:
    """A numpy view of an array-like with a numeric or boolean dtype, or an `InputError`."""
    if isinstance(value, (list, tuple, str, bytes, dict)) or value is None:
        raise InputError(f"{what} must be an array (numpy or JAX), got {type(value).__name__}")
    try:
        a = np.asarray(value)
    except Exception as e:  # objects numpy cannot convert
        raise InputError(f"{what} is not an array ({type(e).__name__})") from None
    if a.dtype.kind not in "biufc":
        raise InputError(f"{what} has dtype {a.dtype}; expected numbers or booleans")
    return a


def first_nonfinite(a: np.ndarray) -> tuple[int, ...] | None:
    """The first (C order) index of a NaN/Inf in `a`, or None."""
    if a.dtype.kind not in "fc":
        return None
    bad = ~np.isfinite(a)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.argwhere(bad)[0]) if a.ndim else ()


def index_text(idx: tuple[int, ...]) -> str:
    """`numpy (3, 5) / Julia (4, 6)`: an element in both index conventions."""
    numpy_i = "(" + ", ".join(str(i) for i in idx) + ")"
    julia_i = "(" + ", ".join(str(i + 1) for i in idx) + ")"
    return f"numpy {numpy_i} / Julia {julia_i}"


def check_finite(a: np.ndarray, what: str) -> None:
    """An `InputError` naming the count and the first NaN/Inf of `a` (both index bases)."""
    first = first_nonfinite(a)
    if first is not None:
        count = int(a.size - np.count_nonzero(np.isfinite(a)))
        raise InputError(f"{what} has {count} NaN/Inf value(s), the first at {index_text(first)}")
