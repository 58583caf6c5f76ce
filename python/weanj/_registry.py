"""The registry of examples and variants, and the API that fills it.

Examples and variants are data: the tests, the command line, `weanj check`, the
benchmarks and the pytest plugin all iterate this registry, so adding a variant is one
decorated function beside its siblings. An `Example` names its array inputs (any shapes),
the arrays the gradient is taken with respect to (`wrt`: one or several) and its static
integer parameters; a variant's `loss` and `grad` take the arrays, then the parameters,
in the order the example lists them. Nothing here knows any particular example.

Which examples exist depends on the project (`_root.project_config`): the modules listed
in its `[tool.weanj]` table, weanj's built-ins where asked for, and installed packages'
`weanj.examples` entry points. They are imported on the first lookup, so `import weanj`
stays light (no JAX, no optional backends).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._errors import (
    DefinitionError,
    InputError,
    ProjectError,
    UnavailableError,
    UnknownNameError,
    WeanjError,
)

_EXAMPLES: dict[str, Example] = {}
_VARIANTS: dict[str, dict[str, Variant]] = {}
# {(example, frozenset({a, b})): why}: same-family pairs documented to differ at kinks.
_AT_KINKS: dict[tuple[str, frozenset], str] = {}
_loaded = False
_loading: str | None = None  # the example module being imported by `_load`

# Loop counters in the kernels (lax.scan/fori_loop lengths, Julia `Int` loops) are safe up
# to int32's maximum; no parameter may exceed it.
INT32_MAX = 2**31 - 1

# Names that become file names (inputs, store, benchmark files) and command-line words.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")

# Backends that are extras of weanj itself: `pip install 'weanj[<backend>]'` installs them.
_EXTRAS = ("kernex", "enzyme", "julia", "plot")


def _check_name(what: str, name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(".h5"):
        raise DefinitionError(
            f"{what} name {name!r} must start with a letter or digit and contain only "
            "letters, digits and . _ + - (it names files)"
        )
    return name


@dataclass(frozen=True)
class Param:
    """A static integer parameter of an example (e.g. an iteration count).

    **Arguments:**

    - `name`: a Python identifier; also the command-line option `--<name>`.
    - `default`: the value of the shared inputs (recorded in the inputs file).
    - `minimum`, `maximum`: the accepted range (at most int32's maximum, the loop
      counters' limit).
    - `help`: one line for `--help`.
    - `bench`: the value `weanj bench` uses while it sweeps the sizes (default: `default`).
    - `sweep`: the values of `weanj bench`'s memory-against-parameter records (default: none).
    """

    name: str
    default: int
    minimum: int = 1
    maximum: int = INT32_MAX
    help: str = ""
    bench: int | None = None
    sweep: tuple[int, ...] = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise DefinitionError(f"parameter name {self.name!r} must be a Python identifier")
        for key in ("default", "minimum", "maximum"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise DefinitionError(f"parameter {self.name}: {key} must be an int")
        if not (self.minimum <= self.default <= self.maximum <= INT32_MAX):
            raise DefinitionError(
                f"parameter {self.name}: need minimum <= default <= maximum <= {INT32_MAX}, got "
                f"{self.minimum}, {self.default}, {self.maximum}"
            )
        object.__setattr__(self, "sweep", tuple(int(v) for v in self.sweep))
        for value in (self.bench_value, *self.sweep):
            if not self.minimum <= value <= self.maximum:
                raise DefinitionError(
                    f"parameter {self.name}: benchmark value {value} outside "
                    f"[{self.minimum}, {self.maximum}]"
                )

    @property
    def bench_value(self) -> int:
        return int(self.default if self.bench is None else self.bench)


@dataclass(frozen=True)
class Sizes:
    """The problem size `weanj bench` sweeps (e.g. the grid size n).

    - `generate`: `(seed, size) -> {array name: array}`, the inputs at that size.
    - `values`: the default sizes of the sweep, in increasing order.
    - `name`: what the size is called in reports and records (`"n"`, `"P"`, ...).
    """

    generate: Callable[[int, int], Mapping[str, np.ndarray]]
    values: tuple[int, ...]
    name: str = "n"
    help: str = ""

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(sorted({int(v) for v in self.values})))
        if not self.values or self.values[0] < 1:
            raise DefinitionError(f"sizes {self.name}: values must be positive, got {self.values}")


@dataclass(frozen=True)
class FDPolicy:
    """How `weanj check` and `pytest --weanj` check gradients by finite differences.

    Central differences along `directions` random unit directions (seeded) with step
    `step`; a variant passes when the largest relative error is at most `threshold`.
    Several `wrt` arrays are checked one at a time, each with its own directions.

    - `mask`: `(arrays, params) -> {wrt name: bool array}` where True marks the entries
      that may be perturbed (e.g. away from a kink, where a central difference straddles
      two slopes); entries left out get a zero component in every direction. None: all.
    - `why`: one line saying what the mask leaves out and why, for the reports.
    """

    directions: int = 10
    step: float = 1e-2
    threshold: float = 1e-6
    mask: Callable[[Mapping[str, np.ndarray], Mapping[str, int]], Mapping[str, Any]] | None = None
    why: str = ""

    def __post_init__(self):
        if self.directions < 1 or not self.step > 0 or not self.threshold > 0:
            raise DefinitionError("FDPolicy needs directions >= 1, step > 0 and threshold > 0")


def _no_check(arrays: Mapping[str, np.ndarray]) -> None:
    return None


def _nothing_to_describe(arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Example:
    """One numerical kernel, its inputs and its parameters.

    **Arguments** (only the first four are required):

    - `name`: e.g. `"02-gauss-seidel"`; also the inputs file's stem.
    - `arrays`: names of the array inputs, in call order; each is a dataset of the inputs
      file (float64 on disk, any shape).
    - `wrt`: the array the gradient is taken with respect to, or a tuple of several.
    - `generate`: `seed -> {array name: array}`, deterministic: the shared inputs.
    - `params`: static integer parameters (`Param`), passed after the arrays in this order.
    - `seed`: the seed of the shared inputs.
    - `title`: one line for reports.
    - `shapes`: `{array name: dims}`, each dim an int or a symbol (a string): e.g.
      `{"pos": ("P", 2), "q": ("P",), "rhoobs": ("n", "n")}`. Arrays whose dims disagree
      (one symbol, two sizes) are refused in one line, on every call of a variant's `loss`
      and `grad` too (a few microseconds). None: no shape check.
    - `validate`: `arrays -> None`, raises `weanj.InputError` for arrays the mathematics
      does not accept (values out of range, shapes `shapes` cannot say). dtype, NaN/Inf,
      missing arrays and `shapes` are checked before it is called; it runs on inputs
      files, not on every call.
    - `describe`: `arrays -> {attribute: value}`, extra attributes of the inputs file.
    - `sizes`: the problem size `weanj bench` sweeps (`Sizes`); None: no size sweep.
    - `fd`: the finite-difference policy (`FDPolicy`).
    - `stem`: the stem shared by the Python module and the Julia file (documentation).
    """

    name: str
    arrays: tuple[str, ...]
    wrt: str | tuple[str, ...]
    generate: Callable[[int], Mapping[str, np.ndarray]]
    params: tuple[Param, ...] = ()
    seed: int = 0
    title: str = ""
    shapes: Mapping[str, tuple] | None = None
    validate: Callable[[Mapping[str, np.ndarray]], None] = _no_check
    describe: Callable[[Mapping[str, np.ndarray]], dict[str, Any]] = _nothing_to_describe
    sizes: Sizes | None = None
    fd: FDPolicy = field(default_factory=FDPolicy)
    stem: str = ""
    module: str = field(default="", compare=False)  # set when registered

    def __post_init__(self):
        _check_name("example", self.name)
        arrays = (self.arrays,) if isinstance(self.arrays, str) else tuple(self.arrays)
        if not arrays or not all(isinstance(a, str) and a.isidentifier() for a in arrays):
            raise DefinitionError(
                f"example {self.name}: arrays must be Python identifiers, got {self.arrays!r}"
            )
        if len(set(arrays)) != len(arrays):
            raise DefinitionError(f"example {self.name}: array names repeat in {arrays}")
        wrt = (self.wrt,) if isinstance(self.wrt, str) else tuple(self.wrt)
        if not wrt or len(set(wrt)) != len(wrt) or not set(wrt) <= set(arrays):
            raise DefinitionError(
                f"example {self.name}: wrt={self.wrt!r} must name one or several distinct "
                f"arrays of {arrays}"
            )
        params = (self.params,) if isinstance(self.params, Param) else tuple(self.params)
        if not all(isinstance(p, Param) for p in params):
            raise DefinitionError(f"example {self.name}: params must be weanj.Param objects")
        names = [p.name for p in params]
        if len(set(names)) != len(names) or set(names) & set(arrays):
            raise DefinitionError(
                f"example {self.name}: parameter names {names} repeat or clash with the arrays"
            )
        if not callable(self.generate):
            raise DefinitionError(f"example {self.name}: generate must be callable(seed)")
        if self.sizes is not None and not isinstance(self.sizes, Sizes):
            raise DefinitionError(f"example {self.name}: sizes must be a weanj.Sizes")
        if not isinstance(self.fd, FDPolicy):
            raise DefinitionError(f"example {self.name}: fd must be a weanj.FDPolicy")
        if self.shapes is not None:
            shapes = {k: tuple(v) for k, v in dict(self.shapes).items()}
            if set(shapes) - set(arrays) or not all(
                isinstance(d, str) or (isinstance(d, int) and d >= 0)
                for dims in shapes.values()
                for d in dims
            ):
                raise DefinitionError(
                    f"example {self.name}: shapes must map array names to tuples of ints "
                    f"and symbols, got {self.shapes!r}"
                )
            object.__setattr__(self, "shapes", shapes)
        object.__setattr__(self, "arrays", arrays)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "validate", self.validate or _no_check)
        object.__setattr__(self, "describe", self.describe or _nothing_to_describe)

    def check_shapes(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        """Refuse array shapes that do not fit the example's `shapes` (one line)."""
        if self.shapes is None:
            return
        sizes: dict[str, tuple[int, str]] = {}
        for name, dims in self.shapes.items():
            shape = tuple(shapes[name])
            spelled = "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
            if len(shape) != len(dims):
                raise InputError(f"{name} has shape {shape}; expected {spelled}")
            for d, size in zip(dims, shape, strict=True):
                if isinstance(d, int):
                    if size != d:
                        raise InputError(f"{name} has shape {shape}; expected {spelled}")
                elif d in sizes and sizes[d][0] != size:
                    first, where = sizes[d]
                    raise InputError(
                        f"{name} has shape {shape}, {where} gives {d} = {first}; expected "
                        f"{spelled} with the same {d}"
                    )
                else:
                    sizes.setdefault(d, (size, f"{name}'s shape {shape}"))

    def validate_arrays(self, arrays: Mapping[str, np.ndarray]) -> None:
        """The example's checks of its arrays: `shapes`, then `validate`."""
        self.check_shapes({k: np.shape(a) for k, a in arrays.items()})
        self.validate(arrays)

    def check_call(self, variant: str, args: tuple) -> None:
        """Cheap checks of a variant's arguments (microseconds: no value is read): their
        number, float32/float64 arrays of one dtype, `shapes`, integer parameters in range."""
        names = self.arrays + self.param_names
        if len(args) != len(names):
            raise InputError(
                f"{variant} takes {len(names)} arguments ({', '.join(names)}), got {len(args)}"
            )
        dtypes = set()
        shapes = {}
        for name, a in zip(self.arrays, args, strict=False):
            dtype = getattr(a, "dtype", None)
            shape = getattr(a, "shape", None)
            if dtype is None or shape is None:
                a = np.asarray(a)
                dtype, shape = a.dtype, a.shape
            if np.dtype(dtype) not in (np.float32, np.float64):
                raise InputError(
                    f"{variant}: {name} has dtype {dtype}; expected float64 or float32"
                )
            dtypes.add(np.dtype(dtype))
            shapes[name] = tuple(shape)
        if len(dtypes) > 1:
            raise InputError(f"{variant}: the arrays mix float32 and float64; cast them to one")
        try:
            self.check_shapes(shapes)
        except InputError as e:
            raise InputError(f"{variant}: {e}") from None
        for p, value in zip(self.params, args[len(self.arrays) :], strict=True):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise InputError(f"{variant}: {p.name} must be an integer, got {value!r}")
            if not p.minimum <= value <= p.maximum:
                raise InputError(
                    f"{variant}: {p.name} must be in [{p.minimum}, {p.maximum}], got {value}"
                )

    @property
    def wrt_names(self) -> tuple[str, ...]:
        """The arrays the gradient is taken with respect to, always as a tuple."""
        return (self.wrt,) if isinstance(self.wrt, str) else tuple(self.wrt)

    @property
    def wrt_positions(self) -> tuple[int, ...]:
        """Their positions among a variant's arguments."""
        return tuple(self.arrays.index(w) for w in self.wrt_names)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def default_params(self) -> dict[str, int]:
        return {p.name: p.default for p in self.params}

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(self.param_names) or "none"
        raise UnknownNameError(f"{self.name} has no parameter {name!r} (parameters: {known})")

    def args(self, arrays: Mapping[str, Any], params: Mapping[str, int]) -> tuple:
        """The positional arguments of a variant's `loss`/`grad`: arrays, then parameters."""
        return tuple(arrays[a] for a in self.arrays) + tuple(
            int(params[p.name]) for p in self.params
        )

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


class Checked:
    """A variant's `loss` or `grad`: the arguments are checked (`Example.check_call`),
    then the built function runs. Everything else (`.jitted`, `.lower`, ...) is the built
    function's; `.lower` checks the arguments too."""

    def __init__(self, example: Example, variant: str, fn: Callable):
        self.example, self.variant, self.fn = example, variant, fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        self.example.check_call(self.variant, args)
        return self.fn(*args)

    def __getattr__(self, name):
        attr = getattr(self.fn, name)  # AttributeError where the built function has none
        if name != "lower":
            return attr

        def lower(*args):
            self.example.check_call(self.variant, args)
            return attr(*args)

        return lower


class Precise:
    """A `jax.jit` function that runs with 64-bit types enabled.

    float64 inputs are computed in float64 whatever the user's `jax_enable_x64` setting,
    and float32 inputs in float32; the user's own JAX code is left as configured. The
    jitted function itself is `.jitted`; `.lower(...)` works as on `jax.jit` functions.
    """

    def __init__(self, jitted: Callable):
        self.jitted = jitted
        functools.update_wrapper(self, jitted)

    def __call__(self, *args, **kwargs):
        import jax

        with jax.enable_x64(True):
            return self.jitted(*args, **kwargs)

    def lower(self, *args, **kwargs):
        import jax

        with jax.enable_x64(True):
            return self.jitted.lower(*args, **kwargs)


def _distribution_versions(modules: tuple[str, ...]) -> str:
    """`"kernex 0.2.1, jax 0.10.2, ..."` for importable modules (or distribution names)."""
    parts = []
    mapping = None
    for module in modules:
        try:
            parts.append(f"{module} {importlib.metadata.version(module)}")
            continue
        except importlib.metadata.PackageNotFoundError:
            pass
        if mapping is None:
            mapping = importlib.metadata.packages_distributions()
        dist = (mapping.get(module) or [module])[0]
        try:
            parts.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    return ", ".join(parts)


@dataclass(frozen=True)
class Variant:
    """One implementation of an example: a name, a family, and how to build loss and grad.

    **Arguments:**

    - `example`, `name`, `family`: see DESIGN.md; variants of one family compute the same
      mathematical function and must agree under the tolerance policy.
    - `backend`: `"jax"`, `"kernex"`, `"enzyme"`, `"julia"`, ...; names the benchmark file.
    - `build`: `() -> (loss, grad)`, called once on first use (so optional backends are
      imported only when their variant is used).
    - `requires`: importable modules the variant needs; it is unavailable without them.
    - `check`: `() -> reason or None`, an extra availability check (e.g. a Julia install).
    - `versions`: modules/distributions whose versions make up `backend_version`, or a
      callable returning it.
    - `description`: one line for reports.
    - `multi_device`: the variant spans the devices of `weanj.set_devices` (a sharded
      program); `weanj bench --devices N` records that count for it.
    """

    example: str
    name: str
    family: str
    backend: str
    build: Callable[[], tuple[Callable, Callable]]
    requires: tuple[str, ...] = ()
    check: Callable[[], str | None] | None = None
    versions: tuple[str, ...] | Callable[[], str] = ("jax", "jaxlib")
    description: str = ""
    multi_device: bool = False
    _built: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        _check_name("variant", self.name)
        if not isinstance(self.family, str) or not self.family:
            raise DefinitionError(f"variant {self.name}: family must be a non-empty string")
        if not isinstance(self.backend, str) or not self.backend:
            raise DefinitionError(f"variant {self.name}: backend must be a non-empty string")
        object.__setattr__(self, "requires", tuple(self.requires))

    def unavailable_reason(self) -> str | None:
        """Why this variant cannot run here, or None when it can."""
        for module in self.requires:
            if importlib.util.find_spec(module) is None:
                hint = (
                    f"pip install 'weanj[{self.backend}]'"
                    if self.backend in _EXTRAS
                    else f"pip install {module}"
                )
                return f"needs the Python package {module!r} ({hint})"
        return self.check() if self.check is not None else None

    def _functions(self) -> tuple[Callable, Callable]:
        if "fns" not in self._built:
            reason = self.unavailable_reason()
            if reason is not None:
                raise UnavailableError(f"variant {self.name!r} is unavailable: {reason}")
            ex = _EXAMPLES.get(self.example) or example(self.example)
            self._built["fns"] = tuple(Checked(ex, self.name, f) for f in self.build())
        return self._built["fns"]

    @property
    def loss(self) -> Callable:
        """`loss(*arrays, *params)` -> scalar loss."""
        return self._functions()[0]

    @property
    def grad(self) -> Callable:
        """`grad(*arrays, *params)` -> the gradient: an array for one `wrt` array, else a
        dict `{name: array}` in `wrt` order."""
        return self._functions()[1]

    def backend_version(self) -> str:
        if callable(self.versions):
            return self.versions()
        return _distribution_versions(tuple(self.versions))


def _example_of(example: Example | str) -> Example:
    if isinstance(example, Example):
        return example
    if isinstance(example, str) and example in _EXAMPLES:
        return _EXAMPLES[example]
    raise DefinitionError(
        f"a variant names example {getattr(example, 'name', example)!r}, which is not "
        "registered; register the example first (weanj.register_example)"
    )


def jit_functions(example: Example, loss: Callable, grad: Callable | None = None) -> tuple:
    """`(loss, grad)` as `Precise` `jax.jit` functions with the parameters static.

    `grad` defaults to `jax.grad` of `loss` with respect to the example's `wrt` arrays;
    a custom `grad` takes the same arguments and returns an array (one `wrt`), or a dict or
    tuple in `wrt` order. Either way the result is `Example.gradient_value`'s form.
    """
    import jax

    raw = jax.grad(loss, argnums=example.wrt_positions) if grad is None else grad

    def gradient(*args):
        return example.gradient_value(example.gradients(raw(*args)))

    static = example.static_argnums()
    return (
        Precise(jax.jit(loss, static_argnums=static)),
        Precise(jax.jit(gradient, static_argnums=static)),
    )


def _first_doc_line(fn: Callable) -> str:
    doc = (getattr(fn, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def jax_variant(
    example: Example | str,
    name: str,
    *,
    family: str,
    grad: Callable | None = None,
    backend: str = "jax",
    requires: tuple[str, ...] = (),
    description: str = "",
    multi_device: bool = False,
) -> Callable[[Callable], Callable]:
    """Decorator: register a JAX loss function as a variant of `example`.

        @weanj.jax_variant(ex, "jax-loop", family="smooth")
        def smooth_loop(x, y, S): ...

    The function takes the example's arrays, then its parameters, and returns the scalar
    loss; weanj `jax.jit`s it with the parameters static and differentiates it with
    `jax.grad` over the `wrt` arrays, unless `grad` (same arguments; an array, or a dict
    or tuple in `wrt` order) is given. `backend` and `requires` mark variants that need
    an optional package (e.g. `backend="kernex", requires=("kernex",)`); `multi_device`
    one that builds its mesh from `weanj.set_devices` (a sharded program). Returns the
    function unchanged, so siblings can reuse it.
    """
    ex = _example_of(example)

    def decorate(loss: Callable) -> Callable:
        register_variant(
            Variant(
                example=ex.name,
                name=name,
                family=family,
                backend=backend,
                build=functools.partial(jit_functions, ex, loss, grad),
                requires=tuple(requires),
                versions=(*requires, "jax", "jaxlib"),
                description=description or _first_doc_line(loss),
                multi_device=multi_device,
            )
        )
        return loss

    return decorate


def register_example(example: Example) -> Example:
    """Add an example to the registry; a second example of the same name is an error."""
    if not isinstance(example, Example):
        raise DefinitionError(f"register_example takes a weanj.Example, got {type(example)}")
    previous = _EXAMPLES.get(example.name)
    if previous is not None:
        by = f" (first by module {previous.module})" if previous.module else ""
        raise DefinitionError(f"example {example.name!r} is registered twice{by}")
    if not example.module:
        object.__setattr__(example, "module", _loading or _caller_module())
    _EXAMPLES[example.name] = example
    _VARIANTS[example.name] = {}
    return example


def register_variant(variant: Variant) -> Variant:
    """Add a variant to the registry; its example must be registered, its name new."""
    if not isinstance(variant, Variant):
        raise DefinitionError(f"register_variant takes a weanj.Variant, got {type(variant)}")
    if variant.example not in _EXAMPLES:
        raise DefinitionError(
            f"variant {variant.name!r} names example {variant.example!r}, which is not "
            "registered; register the example first (weanj.register_example)"
        )
    table = _VARIANTS[variant.example]
    if variant.name in table:
        raise DefinitionError(f"variant {variant.name!r} of {variant.example} is registered twice")
    table[variant.name] = variant
    return variant


def unregister_example(name: str) -> None:
    """Remove an example and its variants (for tests and notebooks that redefine one)."""
    _EXAMPLES.pop(name, None)
    _VARIANTS.pop(name, None)
    for key in [k for k in _AT_KINKS if k[0] == name]:
        del _AT_KINKS[key]


def differ_at_kinks(example: Example | str, a: str, b: str, *, why: str) -> None:
    """Declare that variants `a` and `b` (one family) may differ at the example's kinks.

    A pair of ports that differentiates a kink by different conventions (Julia's `min`
    and JAX's `jnp.minimum` at a tie) computes the same function but not the same
    gradient there. Declared, the pair must still agree under the tolerance policy on
    every entry its example's `FDPolicy.mask` keeps (away from kinks); where it differs
    only at the kinks, `weanj diff`/`check` and `pytest --weanj` report the verdict
    `kinks` with the count and places (not a failure) and `why`.
    """
    ex = _example_of(example)
    if ex.fd.mask is None:
        raise DefinitionError(f"{ex.name}: differ_at_kinks needs an FDPolicy mask (the kinks)")
    table = _VARIANTS[ex.name]
    for name in (a, b):
        if name not in table:
            raise DefinitionError(f"differ_at_kinks: {name!r} is not a variant of {ex.name}")
    if table[a].family != table[b].family:
        raise DefinitionError(f"differ_at_kinks: {a} and {b} are not of one family")
    _AT_KINKS[(ex.name, frozenset((a, b)))] = why


def kink_difference(example_name: str, a: str, b: str) -> str | None:
    """Why `a` and `b` may differ at the kinks of the example, or None (not declared)."""
    return _AT_KINKS.get((example_name, frozenset((a, b))))


def _caller_module() -> str:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("weanj._"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def _import_example_module(module: str, where: str) -> None:
    """Import one module that registers examples; any failure is one line naming it, and
    whatever it registered before failing is taken back."""
    global _loading
    before = {name: dict(table) for name, table in _VARIANTS.items()}
    _loading = module
    try:
        importlib.import_module(module)
    except BaseException as e:
        for name in set(_EXAMPLES) - set(before):
            unregister_example(name)
        for key in [k for k in _AT_KINKS if k[0] in before and k[0] not in _EXAMPLES]:
            del _AT_KINKS[key]
        for name, table in before.items():
            _VARIANTS[name] = table
        if not isinstance(e, Exception):
            raise
        if isinstance(e, ModuleNotFoundError) and e.name and module.startswith(e.name):
            raise ProjectError(
                f"cannot import example module {module!r} listed in {where}: no module "
                f"named {e.name!r} (is it importable from the project root?)"
            ) from None
        first = (str(e).strip().splitlines() or [""])[0]
        what = first if isinstance(e, WeanjError) else f"{type(e).__name__}: {first}"
        raise ProjectError(f"example module {module!r} ({where}): {what}") from None
    finally:
        _loading = None


def _load() -> None:
    """Import the project's example modules once per process (see the module docstring)."""
    global _loaded
    if _loaded:
        return
    from ._root import project_config

    config = project_config()
    modules: list[tuple[str, str]] = []
    if config.builtin:
        from .examples import BUILTIN

        modules += [(m, "weanj's built-in examples") for m in BUILTIN]
    if config.pyproject is not None:
        root = str(config.root)
        if root not in sys.path:
            sys.path.insert(0, root)  # the project's modules import from its root
        modules += [(m, f"[tool.weanj] of {config.pyproject}") for m in config.examples]
    seen = set()
    for module, where in modules:
        if module not in seen:
            seen.add(module)
            _import_example_module(module, where)
    if config.entry_points:
        for ep in importlib.metadata.entry_points(group="weanj.examples"):
            if ep.value not in seen:
                seen.add(ep.value)
                _import_example_module(
                    ep.value.partition(":")[0], f"entry point {ep.name!r} of group weanj.examples"
                )
    _loaded = True


def example_names() -> list[str]:
    """The names of all examples of the current project."""
    _load()
    return sorted(_EXAMPLES)


def example(name: str) -> Example:
    """The `Example` called `name`; unknown names raise an error listing the known ones."""
    _load()
    try:
        return _EXAMPLES[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(_EXAMPLES)) or "none (see [tool.weanj] in pyproject.toml)"
        raise UnknownNameError(f"unknown example {name!r}; known examples: {known}") from None


def variants(example_name: str, *, available_only: bool = True) -> list[str]:
    """Names of the variants of an example that can run here (all with `available_only=False`)."""
    table = _VARIANTS[example(example_name).name]
    return [
        name for name, v in table.items() if not available_only or v.unavailable_reason() is None
    ]


def unavailable_variants(example_name: str) -> dict[str, str]:
    """`{variant name: reason}` for the variants of an example that cannot run here."""
    table = _VARIANTS[example(example_name).name]
    reasons = {name: v.unavailable_reason() for name, v in table.items()}
    return {name: reason for name, reason in reasons.items() if reason is not None}


def variant(example_name: str, name: str) -> Variant:
    """The `Variant` `name` of an example, with `.loss` and `.grad`.

    Unknown names raise an error listing the known ones; a registered variant whose
    backend is missing here raises `UnavailableError` saying what to install.
    """
    table = _VARIANTS[example(example_name).name]
    try:
        v = table[name]
    except (KeyError, TypeError):
        raise UnknownNameError(
            f"unknown variant {name!r} of {example_name}; known variants: {', '.join(table)}"
        ) from None
    reason = v.unavailable_reason()
    if reason is not None:
        raise UnavailableError(f"variant {name!r} is unavailable here: {reason}")
    return v


def find_variant(example_name: str, name: str) -> Variant | None:
    """The registered variant or None, whether or not it is available here."""
    return _VARIANTS[example(example_name).name].get(name)


def families(example_name: str) -> dict[str, list[str]]:
    """`{family: [variant names]}` over all registered variants of an example."""
    out: dict[str, list[str]] = {}
    for name, v in _VARIANTS[example(example_name).name].items():
        out.setdefault(v.family, []).append(name)
    return out
