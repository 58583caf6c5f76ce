"""An example: one numerical kernel, its typed arrays and parameters, and the policies
that check its gradients (`_policies`). Also the one place where arguments are checked.

Every path by which values reach a kernel goes through `Example.check_call` (a
variant's `loss`/`grad`, JAX or Julia: microseconds, no value read),
`Example.check_arrays` (a generator's output, an inputs file: values read, NaN/Inf
refused, then the example's `validate`) and `Example.check_params` (`Param.check` for
each). Nothing here knows the registry, JAX or HDF5.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import DefinitionError, InputError
from .._vocabulary import DTYPES
from ._beyond import checked_order, checked_outputs
from ._expected import as_declarations
from ._kinds import Array, as_array, spelled_shape
from ._names import check_name
from ._params import Param
from ._policies import FDPolicy, Sizes, TaylorPolicy


def _no_check(arrays: Mapping[str, np.ndarray]) -> None:
    return None


def _nothing_to_describe(arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Example:
    """One numerical kernel, its inputs and its parameters.

    **Arguments** (only the first four are required):

    - `name`: e.g. `"02-gauss-seidel"`; also the inputs file's stem.
    - `arrays`: the array inputs in call order: names (float arrays) or `weanj.Array`s.
    - `wrt`: the array the gradient is taken with respect to, or a tuple of several
      (float or complex arrays).
    - `generate`: `seed -> {array name: array}`, deterministic: the shared inputs.
    - `params`: static parameters (`weanj.Param`), passed after the arrays in this order.
    - `seed`, `title`: the shared inputs' seed; one line for reports.
    - `shapes`: `{array name: dims}` (ints and symbols), merged into the arrays' shapes.
    - `validate`: `arrays -> None`, raises `weanj.InputError` for arrays the mathematics
      refuses; runs on generated arrays and inputs files (not on every call).
    - `describe`: `arrays -> {attribute: value}`, extra attributes of the inputs file.
    - `sizes`: the problem size `weanj bench` sweeps (`weanj.Sizes`).
    - `fd`: central differences and the kink mask (`weanj.FDPolicy`).
    - `taylor`: the Taylor test (`weanj.TaylorPolicy`), one for every array or a dict
      `{wrt name: TaylorPolicy}` (arrays not named take the default).
    - `stem`: the stem shared by the Python module and the Julia file.
    - `expected`: known differences between its variants (`weanj.Expected`, each naming
      its variant), judged as declared (docs/verdicts.md, "Declaring expectations").
    - `tolerance`: a declared `weanj.Tolerance(loss=, grad=, why=)` for mathematics that
      needs more than the default (relative; the larger of it and the dtype's default
      applies, and every view shows it); `family_tolerance`: `{family: Tolerance}`, for
      one family only.
    - `outputs`: named forward outputs (`("uT",)`): each variant's loss returns `(loss,
      {"uT": array})`, judged like gradients; `order`: 2 adds the Hessian-vector
      products and their checks (docs/outputs.md).
    """

    name: str
    arrays: tuple[str, ...]
    wrt: str | tuple[str, ...]
    generate: Callable[[int], Mapping[str, Any]]
    params: tuple[Param, ...] = ()
    seed: int = 0
    title: str = ""
    shapes: Mapping[str, tuple] | None = None
    validate: Callable[[Mapping[str, np.ndarray]], None] = _no_check
    describe: Callable[[Mapping[str, np.ndarray]], dict[str, Any]] = _nothing_to_describe
    sizes: Sizes | None = None
    fd: FDPolicy = field(default_factory=FDPolicy)
    taylor: TaylorPolicy | Mapping[str, TaylorPolicy] = field(default_factory=TaylorPolicy)
    stem: str = ""
    expected: Any = field(default=(), compare=False)
    module: str = field(default="", compare=False)  # set when registered
    code: str = field(default="", compare=False, repr=False)  # its code's digest, as imported
    specs: tuple[Array, ...] = field(default=(), init=False, repr=False, compare=False)
    tolerance: Any = None  # a declared weanj.Tolerance (docs/verdicts.md)
    family_tolerance: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    order: int = 1

    def __repr__(self) -> str:
        params = ", ".join(f"{p.name}={p.default!r}" for p in self.params)
        return (
            f"Example({self.name!r}, arrays={self.arrays!r}, wrt={self.wrt!r}"
            + (f", params=({params})" if params else "")
            + ")"
        )

    def __post_init__(self):
        check_name("example", self.name)
        for declared in (self.tolerance, *dict(self.family_tolerance).values()):
            if declared is not None and not all(
                isinstance(getattr(declared, k, None), (int, float)) for k in ("loss", "grad")
            ):
                raise DefinitionError(
                    f"example {self.name}: a declared tolerance must be a weanj.Tolerance("
                    f"loss=, grad=, why=), got {declared!r}"
                )
        object.__setattr__(self, "specs", _array_specs(self))
        object.__setattr__(self, "arrays", tuple(a.name for a in self.specs))
        wrt = (self.wrt,) if isinstance(self.wrt, str) else tuple(self.wrt)
        if not wrt or len(set(wrt)) != len(wrt) or not set(wrt) <= set(self.arrays):
            raise DefinitionError(
                f"example {self.name}: wrt={self.wrt!r} must name one or several distinct "
                f"arrays of {self.arrays}"
            )
        for spec in self.specs:
            target = spec.index
            if isinstance(target, str) and target not in self.symbols:
                raise DefinitionError(
                    f"example {self.name}: {spec.name} indexes size {target!r}, which no array's "
                    f"shape has (sizes: {', '.join(self.symbols) or 'none'})"
                )
            if isinstance(target, tuple) and target[0] not in self.arrays:
                raise DefinitionError(
                    f"example {self.name}: {spec.name} indexes array {target[0]!r}, which "
                    f"{self.name} does not have"
                )
        for name in wrt:
            if not self.array(name).differentiable:
                raise DefinitionError(
                    f"example {self.name}: wrt names {name}, a {self.array(name).kind} array; "
                    "only float and complex arrays are differentiable"
                )
        params = (self.params,) if isinstance(self.params, Param) else tuple(self.params)
        if not all(isinstance(p, Param) for p in params):
            raise DefinitionError(f"example {self.name}: params must be weanj.Param objects")
        names = [p.name for p in params]
        if len(set(names)) != len(names) or set(names) & set(self.arrays):
            raise DefinitionError(
                f"example {self.name}: parameter names {names} repeat or clash with arrays"
            )
        taylor = self.taylor
        policies = taylor.values() if isinstance(taylor, Mapping) else (taylor,)
        if not all(isinstance(t, TaylorPolicy) for t in policies) or (
            isinstance(taylor, Mapping) and not set(taylor) <= set(wrt)
        ):
            raise DefinitionError(
                f"example {self.name}: taylor must be a weanj.TaylorPolicy or a dict of them "
                f"keyed by wrt arrays {wrt}"
            )
        if not isinstance(self.fd, FDPolicy):
            raise DefinitionError(f"example {self.name}: fd must be a weanj.FDPolicy")
        object.__setattr__(self, "wrt", wrt[0] if len(wrt) == 1 else wrt)
        complex_wrt = [a for a in wrt if self.array(a).kind == "complex"]
        object.__setattr__(self, "outputs", checked_outputs(self.name, self.outputs, self.arrays))
        object.__setattr__(self, "order", checked_order(self.name, self.order, complex_wrt))
        declared = as_declarations(self.expected, f"example {self.name}")
        if any(d.variant is None for d in declared):
            raise DefinitionError(
                f"example {self.name}: each of its expected= names its variant "
                "(weanj.Expected('jax-a', reason=...))"
            )
        object.__setattr__(self, "expected", declared)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "validate", self.validate or _no_check)
        object.__setattr__(self, "describe", self.describe or _nothing_to_describe)

    # --- names and positions -------------------------------------------------------

    def array(self, name: str) -> Array:
        for a in self.specs:
            if a.name == name:
                return a
        raise InputError(f"{self.name} has no array {name!r} (arrays: {', '.join(self.arrays)})")

    @property
    def wrt_names(self) -> tuple[str, ...]:
        """The arrays the gradient is taken with respect to, always as a tuple."""
        return (self.wrt,) if isinstance(self.wrt, str) else tuple(self.wrt)

    @property
    def wrt_positions(self) -> tuple[int, ...]:
        return tuple(self.arrays.index(w) for w in self.wrt_names)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def default_params(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    @property
    def symbols(self) -> tuple[str, ...]:
        """The symbolic dimensions of the arrays' shapes, in order of appearance."""
        out: list[str] = []
        for a in self.specs:
            for d in a.shape or ():
                if isinstance(d, str) and d not in out:
                    out.append(d)
        return tuple(out)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(self.param_names) or "none"
        raise InputError(f"{self.name} has no parameter {name!r} (parameters: {known})")

    def declared_tolerance(self, family: str) -> Any:
        """The tolerance declared for `family` (its own, else the example's), or None."""
        return self.family_tolerance.get(family, self.tolerance)

    def taylor_for(self, array: str) -> TaylorPolicy:
        if isinstance(self.taylor, Mapping):
            return self.taylor.get(array, TaylorPolicy())
        return self.taylor

    def args(self, arrays: Mapping[str, Any], params: Mapping[str, Any]) -> tuple:
        """The positional arguments of a variant's `loss`/`grad`: arrays, then parameters."""
        return tuple(arrays[a] for a in self.arrays) + tuple(params[p.name] for p in self.params)

    def static_argnums(self) -> tuple[int, ...]:
        """Positions of the static parameters in `args` (for `jax.jit`)."""
        return tuple(range(len(self.arrays), len(self.arrays) + len(self.params)))

    def gradients(self, g: Any) -> dict[str, Any]:
        """`{wrt name: array}` from what a `grad` returns: one array (one `wrt`), or a dict
        or a sequence in `wrt` order (several)."""
        names = self.wrt_names
        if isinstance(g, Mapping):
            if set(g) != set(names):
                raise InputError(
                    f"{self.name}: a gradient must have the arrays {names}, got {tuple(g)}"
                )
            return {name: g[name] for name in names}
        if isinstance(g, (tuple, list)):
            if len(g) != len(names):
                raise InputError(
                    f"{self.name}: a gradient must have {len(names)} arrays {names}, got {len(g)}"
                )
            return dict(zip(names, g, strict=True))
        if len(names) != 1:
            raise InputError(
                f"{self.name}: the gradient is taken with respect to {names}; expected a dict"
            )
        return {names[0]: g}

    def gradient_value(self, gradients: Mapping[str, Any]) -> Any:
        """What `grad` returns: the array itself for one `wrt`, else the dict."""
        if len(self.wrt_names) == 1:
            return gradients[self.wrt_names[0]]
        return {name: gradients[name] for name in self.wrt_names}

    # --- the checks ------------------------------------------------------------------

    def check_shapes(self, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
        """The sizes of the symbolic dimensions, or an `InputError` (one line) for shapes
        that do not fit the arrays' declared shapes."""
        sizes: dict[str, tuple[int, str]] = {}
        for spec in self.specs:
            if spec.shape is None:
                continue
            shape, dims = tuple(shapes[spec.name]), spec.shape
            spelled = spelled_shape(dims)
            if len(shape) != len(dims):
                raise InputError(f"{spec.name} has shape {shape}; expected {spelled}")
            for d, size in zip(dims, shape, strict=True):
                if isinstance(d, int):
                    if size != d:
                        raise InputError(f"{spec.name} has shape {shape}; expected {spelled}")
                elif d in sizes and sizes[d][0] != size:
                    first, where = sizes[d]
                    raise InputError(
                        f"{spec.name} has shape {shape}, {where} gives {d} = {first}; expected "
                        f"{spelled} with the same {d}"
                    )
                else:
                    sizes.setdefault(d, (size, f"{spec.name}'s shape {shape}"))
        return {d: size for d, (size, _) in sizes.items()}

    def check_call(self, variant: str, args: tuple) -> str:
        """Cheap checks of a variant's arguments (no value is read): their number, each
        array's kind and dtype (float arrays of one dtype under test), shapes, no empty
        arrays, parameters in range. **Returns** the dtype under test."""
        names = self.arrays + self.param_names
        if len(args) != len(names):
            raise InputError(
                f"{variant} takes {len(names)} arguments ({', '.join(names)}), got {len(args)}"
            )
        dtypes, shapes = set(), {}
        for spec, a in zip(self.specs, args, strict=False):
            dtype, shape = getattr(a, "dtype", None), getattr(a, "shape", None)
            if dtype is None or shape is None:
                a = as_array(a, f"{variant}: {spec.name}")
                dtype, shape = a.dtype, a.shape
            implied = spec.call_dtype(np.dtype(dtype), variant)
            if implied is not None:
                dtypes.add(implied)
            shapes[spec.name] = tuple(shape)
            if 0 in shapes[spec.name] and 0 not in (spec.shape or ()):
                raise InputError(f"{variant}: {spec.name} is empty (shape {shapes[spec.name]})")
        if len(dtypes) > 1:
            raise InputError(f"{variant}: the arrays mix float32 and float64; cast them to one")
        try:
            self.check_shapes(shapes)
            for p, value in zip(self.params, args[len(self.arrays) :], strict=True):
                p.check(value)
        except InputError as e:
            raise InputError(f"{variant}: {e}") from None
        return dtypes.pop() if dtypes else DTYPES[0]

    def check_indices(self, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> None:
        """Every index array's values within what it indexes (`Array.index`)."""
        for spec in self.specs:
            if spec.index is not False:
                bound, target = spec.index_bound(arrays, sizes)
                spec.check_index(np.asarray(arrays[spec.name]), bound, target)

    def _check_all(self, arrays: Mapping[str, np.ndarray], who: str) -> None:
        """Shapes, index values and the example's `validate`, in that order, on arrays
        with values; a refusal is one `InputError` line naming `who`."""
        try:
            sizes = self.check_shapes({k: a.shape for k, a in arrays.items()})
            self.check_indices(arrays, sizes)
            self.validate(arrays)
        except InputError as e:
            raise InputError(f"{who}: {e}") from None

    def check_values(self, variant: str, arrays: tuple) -> None:
        """The example's `validate` on a direct call's arrays (`Variant.loss(...)` in a
        notebook), as one `InputError` line; skipped inside a trace (no values to read)."""
        try:
            values = {a.name: np.asarray(x) for a, x in zip(self.specs, arrays, strict=True)}
        except Exception:  # a tracer (the call is being traced by jit, grad, vmap): no values
            return
        self._check_all(values, variant)

    def check_arrays(self, arrays: Mapping[str, Any], what: str) -> dict[str, np.ndarray]:
        """The arrays as an inputs file stores them (each of its declared kind, finite),
        after `shapes` and the example's `validate`; or an `InputError` naming `what`."""
        missing = [a for a in self.arrays if a not in arrays]
        if missing:
            raise InputError(
                f"{what}: missing array(s) {', '.join(missing)} (expected {', '.join(self.arrays)})"
            )
        out = {spec.name: spec.stored(arrays[spec.name], what) for spec in self.specs}
        self._check_all(out, what)
        return out

    def check_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The parameters, typed and in range (`Param.check`); missing ones take their
        default; unknown names are an `InputError`."""
        unknown = sorted(set(params) - set(self.param_names))
        if unknown:
            known = ", ".join(self.param_names) or "none"
            raise InputError(f"{self.name} has no parameter {unknown[0]} (its parameters: {known})")
        return {p.name: p.check(params.get(p.name, p.default)) for p in self.params}

    def for_run(self, arrays: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
        """Stored arrays as a variant receives them in a run in `dtype`."""
        return {spec.name: spec.for_run(arrays[spec.name], dtype) for spec in self.specs}


def _array_specs(ex: Example) -> tuple[Array, ...]:
    """The example's arrays as `Array`s, with `shapes` merged in."""
    given = (ex.arrays,) if isinstance(ex.arrays, (str, Array)) else tuple(ex.arrays)
    specs = []
    for a in given:
        if isinstance(a, str):
            a = Array(a)
        elif not isinstance(a, Array):
            raise DefinitionError(
                f"example {ex.name}: arrays must be names or weanj.Array objects, got {a!r}"
            )
        specs.append(a)
    names = [a.name for a in specs]
    if not specs or len(set(names)) != len(names):
        raise DefinitionError(f"example {ex.name}: array names must be distinct, got {names}")
    if ex.shapes is not None:
        shapes = dict(ex.shapes)
        if set(shapes) - set(names):
            raise DefinitionError(
                f"example {ex.name}: shapes names arrays {sorted(set(shapes) - set(names))} "
                f"that are not among {names}"
            )
        for i, a in enumerate(specs):
            if a.name in shapes:
                if a.shape is not None and tuple(a.shape) != tuple(shapes[a.name]):
                    raise DefinitionError(
                        f"example {ex.name}: {a.name} has shape {a.shape} and shapes says "
                        f"{shapes[a.name]}"
                    )
                specs[i] = Array(a.name, a.kind, tuple(shapes[a.name]), a.index, a.dtype)
    return tuple(specs)
