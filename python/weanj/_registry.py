"""The registry of examples and variants.

Examples and variants are data: the tests, the command line, `weanj check` and the
benchmarks all iterate this registry, so adding a variant is one `register_variant`
call beside its siblings in `weanj/examples/<stem>.py`.

Nothing here knows the Poisson examples' `(theta, uobs, K)`: an `Example` names its
array inputs, the array the gradient is taken with respect to, and its static integer
parameters; a variant's `loss` and `grad` take the arrays then the parameters, in the
order the example lists them.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._errors import UnavailableError, UnknownNameError

# Example modules register themselves on import; they are imported on the first lookup
# so that `import weanj` stays light (no JAX, no optional backends).
_EXAMPLE_MODULES = ("weanj.examples.jacobi", "weanj.examples.gauss_seidel")
_EXAMPLES: dict[str, Example] = {}
_VARIANTS: dict[str, dict[str, Variant]] = {}
_loaded = False


@dataclass(frozen=True)
class Param:
    """A static integer parameter of an example (e.g. the iteration count `K`)."""

    name: str
    default: int
    minimum: int = 1
    help: str = ""


@dataclass(frozen=True)
class Example:
    """One numerical kernel, its inputs and its parameters.

    **Arguments:**

    - `name`: the example's name, e.g. `"02-gauss-seidel"` (also the inputs file's stem).
    - `stem`: the module stem shared by `weanj/examples/<stem>.py` and `julia/<stem>.jl`.
    - `title`: one line for reports.
    - `arrays`: names of the array inputs, in call order; each is a dataset of the inputs file.
    - `wrt`: the array input the gradient is taken with respect to.
    - `params`: static integer parameters, passed after the arrays in this order.
    - `seed`: the seed of the shared inputs.
    - `generate`: `seed -> {array name: float64 array}`, deterministic.
    - `validate`: raises `InputError` for arrays the mathematics does not accept.
    - `describe`: `arrays -> {attribute: value}` extra attributes for the inputs file (e.g. `n`).
    - `sized`: `(seed, n) -> arrays` at problem size `n`, for the benchmark sweeps over `n`
      (None: the example has no size to sweep).
    """

    name: str
    stem: str
    title: str
    arrays: tuple[str, ...]
    wrt: str
    params: tuple[Param, ...]
    seed: int
    generate: Callable[[int], dict[str, np.ndarray]]
    validate: Callable[[Mapping[str, np.ndarray]], None]
    describe: Callable[[Mapping[str, np.ndarray]], dict[str, Any]] = lambda arrays: {}
    sized: Callable[[int, int], dict[str, np.ndarray]] | None = None

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def default_params(self) -> dict[str, int]:
        return {p.name: p.default for p in self.params}

    def args(self, arrays: Mapping[str, Any], params: Mapping[str, int]) -> tuple:
        """The positional arguments of a variant's `loss`/`grad`: arrays, then parameters."""
        return tuple(arrays[a] for a in self.arrays) + tuple(
            int(params[p.name]) for p in self.params
        )

    def static_argnums(self) -> tuple[int, ...]:
        """Positions of the static parameters in `args` (for `jax.jit`)."""
        return tuple(range(len(self.arrays), len(self.arrays) + len(self.params)))


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


def _distribution_versions(names: tuple[str, ...]) -> str:
    parts = []
    for dist in names:
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
    - `backend`: `"jax"`, `"kernex"`, `"enzyme"` or `"julia"`; names the benchmark file.
    - `build`: `() -> (loss, grad)`, called once on first use (so optional backends are
      imported only when their variant is used).
    - `requires`: importable modules the variant needs; it is unavailable without them.
    - `check`: `() -> reason or None`, an extra availability check (e.g. a Julia install).
    - `versions`: distributions whose versions make up `backend_version`, or a callable.
    - `description`: one line for reports.
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
    _built: dict = field(default_factory=dict, repr=False, compare=False)

    def unavailable_reason(self) -> str | None:
        """Why this variant cannot run here, or None when it can."""
        for module in self.requires:
            if importlib.util.find_spec(module) is None:
                return f"needs the Python package {module!r} (pip install 'weanj[{self.backend}]')"
        return self.check() if self.check is not None else None

    def _functions(self) -> tuple[Callable, Callable]:
        if "fns" not in self._built:
            reason = self.unavailable_reason()
            if reason is not None:
                raise UnavailableError(f"variant {self.name!r} is unavailable: {reason}")
            self._built["fns"] = self.build()
        return self._built["fns"]

    @property
    def loss(self) -> Callable:
        """`loss(*arrays, *params)` -> scalar loss."""
        return self._functions()[0]

    @property
    def grad(self) -> Callable:
        """`grad(*arrays, *params)` -> gradient with respect to `Example.wrt`."""
        return self._functions()[1]

    def backend_version(self) -> str:
        if callable(self.versions):
            return self.versions()
        return _distribution_versions(self.versions)


def jax_variant(loss: Callable, grad: Callable | None = None, *, static_argnums) -> tuple:
    """`(loss, grad)` as `Precise` `jax.jit` functions; `grad` defaults to `jax.grad(loss)`."""
    import jax

    grad = jax.grad(loss) if grad is None else grad
    return (
        Precise(jax.jit(loss, static_argnums=static_argnums)),
        Precise(jax.jit(grad, static_argnums=static_argnums)),
    )


def register_example(example: Example) -> Example:
    _EXAMPLES[example.name] = example
    _VARIANTS.setdefault(example.name, {})
    return example


def register_variant(variant: Variant) -> Variant:
    if variant.example not in _EXAMPLES:
        raise ValueError(f"register example {variant.example!r} before its variants")
    _VARIANTS[variant.example][variant.name] = variant
    return variant


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in _EXAMPLE_MODULES:
            importlib.import_module(module)


def example_names() -> list[str]:
    """The names of all examples."""
    _load()
    return sorted(_EXAMPLES)


def example(name: str) -> Example:
    """The `Example` called `name`; unknown names raise an error listing the known ones."""
    _load()
    try:
        return _EXAMPLES[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown example {name!r}; known examples: {', '.join(sorted(_EXAMPLES))}"
        ) from None


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
    except KeyError:
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
