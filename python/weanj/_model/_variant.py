"""A variant: one implementation of an example, and what it can do.

A `Variant` holds its `Example` (the object, not its name), its family, its backend and
a `build` that makes its functions on first use, so that optional backends (kernex,
Enzyme-JAX, Julia) are imported only when one of their variants runs. Its functions
check their arguments first (`Checked`, through `Example.check_call`).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._errors import DefinitionError, UnavailableError
from ._example import Example, check_name
from ._kinds import DTYPES

# Backends that are extras of weanj itself: `pip install 'weanj[<backend>]'` installs them.
EXTRAS = ("kernex", "enzyme", "julia", "plot")


class Functions(NamedTuple):
    """What a variant's `build` returns: `loss`, `grad` and, where the loss can be
    pushed forward, `jvp(*args, tangents) -> directional derivative` (None otherwise)."""

    loss: Callable
    grad: Callable
    jvp: Callable | None = None


class Checked:
    """A variant's `loss`, `grad` or `jvp`: the arguments are checked
    (`Example.check_call`), then the built function runs. Everything else (`.jitted`,
    `.lower`, ...) is the built function's; `.lower` checks the arguments too."""

    def __init__(self, example: Example, variant: str, fn: Callable, *, tangents: bool = False):
        self.example, self.variant, self.fn, self.tangents = example, variant, fn, tangents
        functools.update_wrapper(self, fn)

    def _check(self, args: tuple) -> None:
        self.example.check_call(self.variant, args[:-1] if self.tangents else args)

    def __call__(self, *args):
        self._check(args)
        return self.fn(*args)

    def __getattr__(self, name):
        attr = getattr(self.fn, name)  # AttributeError where the built function has none
        if name != "lower":
            return attr

        def lower(*args):
            self._check(args)
            return attr(*args)

        return lower


def distribution_versions(modules: tuple[str, ...]) -> str:
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
    """One implementation of an example: a name, a family, and how to build its functions.

    **Arguments:**

    - `example`: the `weanj.Example` it implements.
    - `name`, `family`: variants of one family compute the same mathematical function
      and must agree under the tolerance policy.
    - `backend`: `"jax"`, `"kernex"`, `"enzyme"`, `"julia"`, ...; names the benchmark file.
    - `build`: `() -> Functions` (or a `(loss, grad)` pair), called once on first use.
    - `requires`: importable modules the variant needs; it is unavailable without them.
    - `check`: `() -> reason or None`, an extra availability check (e.g. a Julia install).
    - `versions`: modules whose versions make up `backend_version`, or a callable.
    - `description`: one line for reports.
    - `multi_device`: the variant spans the devices of `weanj.set_devices`.
    - `dtypes`: the dtypes under test it supports (default both float64 and float32).
    - `excludes`: `(arrays, params) -> reason or None`: inputs on which the variant is
      known not to work (a known upstream bug at some sizes, say); there its cases are
      skipped with the reason, never judged.
    """

    example: Example
    name: str
    family: str
    backend: str
    build: Callable[[], Any]
    requires: tuple[str, ...] = ()
    check: Callable[[], str | None] | None = None
    versions: tuple[str, ...] | Callable[[], str] = ("jax", "jaxlib")
    description: str = ""
    multi_device: bool = False
    dtypes: tuple[str, ...] = DTYPES
    excludes: Callable[[Any, Any], str | None] | None = None
    _built: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        check_name("variant", self.name)
        if not isinstance(self.example, Example):
            raise DefinitionError(f"variant {self.name}: example must be a weanj.Example")
        for what in ("family", "backend"):
            value = getattr(self, what)
            if not isinstance(value, str) or not value or "\n" in value:
                raise DefinitionError(f"variant {self.name}: {what} must be a one-line string")
        dtypes = (self.dtypes,) if isinstance(self.dtypes, str) else tuple(self.dtypes)
        if not dtypes or not set(dtypes) <= set(DTYPES):
            raise DefinitionError(
                f"variant {self.name}: dtypes must be among {DTYPES}, got {self.dtypes!r}"
            )
        object.__setattr__(self, "dtypes", tuple(d for d in DTYPES if d in dtypes))
        object.__setattr__(self, "requires", tuple(self.requires))

    def unavailable_reason(self) -> str | None:
        """Why this variant cannot run here, or None when it can."""
        for module in self.requires:
            if importlib.util.find_spec(module) is None:
                hint = (
                    f"pip install 'weanj[{self.backend}]'"
                    if self.backend in EXTRAS
                    else f"pip install {module}"
                )
                return f"needs the Python package {module!r} ({hint})"
        return self.check() if self.check is not None else None

    def excluded(self, arrays: Any, params: Any) -> str | None:
        """Why this variant does not apply to these inputs (its `excludes`), or None."""
        if self.excludes is None:
            return None
        why = self.excludes(arrays, params)
        return None if why is None else str(why)

    def functions(self) -> Functions:
        """The checked `Functions`, built on first use."""
        if "fns" not in self._built:
            reason = self.unavailable_reason()
            if reason is not None:
                raise UnavailableError(f"variant {self.name!r} is unavailable: {reason}")
            built = self.build()
            fns = built if isinstance(built, Functions) else Functions(*built)
            ex = self.example
            self._built["fns"] = Functions(
                Checked(ex, self.name, fns.loss),
                Checked(ex, self.name, fns.grad),
                None if fns.jvp is None else Checked(ex, self.name, fns.jvp, tangents=True),
            )
        return self._built["fns"]

    @property
    def loss(self) -> Callable:
        """`loss(*arrays, *params)` -> scalar loss."""
        return self.functions().loss

    @property
    def grad(self) -> Callable:
        """`grad(*arrays, *params)` -> the gradient: an array for one `wrt` array, else a
        dict `{name: array}` in `wrt` order."""
        return self.functions().grad

    @property
    def jvp(self) -> Callable | None:
        """`jvp(*arrays, *params, tangents)` -> the directional derivative of the loss
        along `tangents` (`{wrt name: array}`), or None where the loss cannot be pushed
        forward (a Julia loss)."""
        return self.functions().jvp

    def backend_version(self) -> str:
        if callable(self.versions):
            return self.versions()
        return distribution_versions(tuple(self.versions))
