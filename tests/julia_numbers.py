"""Julia's numbers, transliterated into Python for the tests of weanj's Julia kernels
where no Julia runs (tests/julia_kernels.py, tests/test_julia_generic_kernels.py): numpy
float scalars (Julia's Float64 and Float32, with the same rounding), ForwardDiff's dual
numbers (`Dual`, by the rules of ForwardDiff's `src/dual.jl`), `promote_type` and
`convert` as Julia and ForwardDiff define them, and arrays indexed from 1 (`JArray`).
Nothing here is Julia, or computes a Julia result.
"""

from __future__ import annotations

import numpy as np


class DualType:
    """`Dual{Tag, V, N}`: the type of a dual number of value type `V` (a numpy float type)
    with `n` partials (one tag: one differentiation at a time)."""

    def __init__(self, value: type, n: int):
        self.value, self.n = value, n

    def __eq__(self, other):
        return isinstance(other, DualType) and (self.value, self.n) == (other.value, other.n)

    def __hash__(self):
        return hash((self.value, self.n))

    def __repr__(self):
        return f"Dual{{{self.value.__name__}, {self.n}}}"


class Dual:
    """ForwardDiff's `Dual`: the value computed by the operation on the values (a numpy
    scalar, so with Julia's rounding in its type), the partials by the derivative rules
    (ForwardDiff's `src/dual.jl` and DiffRules); comparisons compare the values."""

    def __init__(self, value, partials):
        self.v = value
        self.p = np.asarray(partials, dtype=type(value))

    @property
    def type(self) -> DualType:
        return DualType(type(self.v), self.p.size)

    def __add__(self, y):
        if isinstance(y, Dual):
            return Dual(self.v + y.v, self.p + y.p)
        return Dual(self.v + y, self.p)

    def __radd__(self, x):
        return Dual(x + self.v, self.p)

    def __sub__(self, y):
        if isinstance(y, Dual):
            return Dual(self.v - y.v, self.p - y.p)
        return Dual(self.v - y, self.p)

    def __rsub__(self, x):
        return Dual(x - self.v, -self.p)

    def __neg__(self):
        return Dual(-self.v, -self.p)

    def __mul__(self, y):
        if isinstance(y, Dual):
            return Dual(self.v * y.v, y.v * self.p + self.v * y.p)
        return Dual(self.v * y, self.p * y)

    def __rmul__(self, x):
        return Dual(x * self.v, x * self.p)

    def __truediv__(self, y):
        if isinstance(y, Dual):
            return Dual(self.v / y.v, (self.p * y.v - self.v * y.p) / (y.v * y.v))
        return Dual(self.v / y, self.p / y)

    def __rtruediv__(self, x):
        value = x / self.v
        return Dual(value, -(value / self.v) * self.p)

    def __abs__(self):
        return Dual(abs(self.v), -self.p if np.signbit(self.v) else self.p)

    def __lt__(self, y):
        return self.v < (y.v if isinstance(y, Dual) else y)

    def __le__(self, y):
        return self.v <= (y.v if isinstance(y, Dual) else y)

    def __gt__(self, y):
        return self.v > (y.v if isinstance(y, Dual) else y)

    def __ge__(self, y):
        return self.v >= (y.v if isinstance(y, Dual) else y)


def type_of(x):
    return x.type if isinstance(x, Dual) else type(x)


def value_type(T) -> type:
    return T.value if isinstance(T, DualType) else T


def promote_type(*types):
    """Julia's `promote_type` of floats, and ForwardDiff's rule for a dual and a real:
    `Dual{Tag, promote_type(V, R), N}`."""
    value = np.result_type(*(value_type(T) for T in types)).type
    duals = [T for T in types if isinstance(T, DualType)]
    return DualType(value, duals[0].n) if duals else value


def convert(T, x):
    """`T(x)` / `convert(T, x)`: a float rounded to `T`; a dual's value and partials
    converted (ForwardDiff's `convert(Dual{T,V,N}, d)`); a float as a dual has no
    partials. A dual to a float has no method (the error ForwardDiff users meet)."""
    if isinstance(T, DualType):
        if isinstance(x, Dual):
            return Dual(T.value(x.v), x.p.astype(T.value))
        return Dual(T.value(x), np.zeros(T.n, dtype=T.value))
    if isinstance(x, Dual):
        raise TypeError(f"MethodError: no method matching {T.__name__}(::Dual)")
    return T(x)


def zero(T):
    return convert(T, 0)


def accumulator_type(T):
    """julia/src/sums.jl's `accumulator_type`: `promote_type(Float64, T)`."""
    return promote_type(np.float64, T)


def square(x):
    """`x^2` (`literal_pow`): `x * x`, for a dual `Dual(v*v, 2v·p)`."""
    return x * x


def sign(x):
    if isinstance(x, Dual):
        return Dual(np.sign(x.v), np.zeros_like(x.p))
    return np.sign(x)


def minimum2(x, y):
    """`min(x, y)`: Julia's `min` of two floats returns `y` at a tie (no kink is met
    here); a dual's derivative is the chosen argument's."""
    vx, vy = (a.v if isinstance(a, Dual) else a for a in (x, y))
    return x if vx < vy else y


def floor_int(x) -> int:
    return int(np.floor(x.v if isinstance(x, Dual) else x))


class JArray:
    """A Julia `Array` of element type `T`, indexed from 1."""

    def __init__(self, data: np.ndarray, T):
        self.data, self.T = data, T

    @classmethod
    def of(cls, a: np.ndarray, T) -> JArray:
        """Julia's array of numpy's `a` (same axes, same indices plus one) in type `T`."""
        data = np.empty(a.shape, dtype=object)
        for k, x in np.ndenumerate(a):
            data[k] = convert(T, value_type(T)(x))
        return cls(data, T)

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        return self.data[tuple(i - 1 for i in index)]

    def __setitem__(self, index, x):
        index = index if isinstance(index, tuple) else (index,)
        self.data[tuple(i - 1 for i in index)] = convert(self.T, x)

    def size(self, axis: int | None = None):
        return self.data.shape if axis is None else self.data.shape[axis - 1]


def zeros(T, *shape) -> JArray:
    data = np.empty(shape, dtype=object)
    for k in np.ndindex(*shape):
        data[k] = zero(T)
    return JArray(data, T)


def similar(a: JArray, T) -> JArray:
    return JArray(np.empty(a.data.shape, dtype=object), T)


def copyto(dest: JArray, src: JArray) -> JArray:
    for k in np.ndindex(*src.data.shape):
        dest.data[k] = convert(dest.T, src.data[k])
    return dest
