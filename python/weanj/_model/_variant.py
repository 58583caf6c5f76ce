"""A variant: one implementation of an example, and what it can do.

A `Variant` holds its `Example` (the object, not its name), its family, its backend and
a `build` that makes its functions on first use, so that optional backends (kernex,
Enzyme-JAX, Julia) are imported only when one of their variants runs. Its functions
check their arguments first (`Checked`, through `Example.check_call`).
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from .._environment import distribution_versions
from .._errors import DefinitionError, InputError, UnavailableError
from .._vocabulary import DTYPES
from ._configuration import Configuration, host_configuration
from ._example import Example
from ._expected import as_declarations
from ._names import check_name
from ._variant_fields import check_fields

# Backends that are extras of weanj itself: `pip install 'weanj[<backend>]'` installs them.
EXTRAS = ("kernex", "enzyme", "julia", "plot")


# How many of `Functions`' fields are functions of the example's arguments (`placed` is not).
CALLS = 5


class Place(Protocol):
    """A device an evaluation runs on, as `Functions.placed` yields it: what the pipeline
    reads of it (a JAX program's: `_backends._placement.JaxPlace`)."""

    @property
    def kind(self) -> str: ...  # cpu, gpu, tpu

    @property
    def description(self) -> str: ...  # "TPU v5 lite", "stand-in tpu (CPU device 1)", "cpu"

    @property
    def software(self) -> str: ...  # its platform's version ("libtpu 0.0.42.1"), or ""

    @property
    def standin(self) -> bool: ...  # the stand-in accelerator (`_backends._standin`)

    def precision(self, dtype: str, precision: str | None = None) -> tuple[str, bool]:
        """The matmul precision in effect for a `dtype` run here (`precision`: the
        evaluation's, None: the device's default), and whether it is below full precision."""
        ...


# `Functions.placed`: `placed(kind, precision)` runs a block on that device and yields it
Placed = Callable[[str, str | None], AbstractContextManager[Place]]


class Functions(NamedTuple):
    """What a variant's `build` returns: the functions weanj calls.

    - `loss`, `grad`: the loss and its gradient, each `(*arrays, *params)`.
    - `jvp(*args, tangents)`: the directional derivative, where the loss can be pushed
      forward (None otherwise).
    - `value_and_grad(*args) -> (loss, gradient)`: where a backend computes both in one
      call cheaper than in two (a Julia variant's one request, a JAX variant's one
      compiled program), else None.
    - `evaluation_loss(*args)`: the loss as the rounding level's perturbed runs call it,
      where it differs from `loss` (a JAX variant's: the loss output of the program that
      computed the evaluation, so nothing compiles again); None: `loss`.
    - `placed(kind, precision=None)`: the context that runs a call on the device of `kind`
      (`cpu`, `gpu`, `tpu`) and yields its place (`_backends._placement.placed`); None for
      functions that run on the CPU only (a Julia or plain Python variant: the CPU
      reference, no device run).
    - `checking`: the `Functions` a check's float64 CPU runs call, where the backend has
      its own (a JAX variant's one program that also pushes the loss forward, each call
      computing only what it asks: `_backends/_checking.py`), else None.
    - `evaluation(*args, tangents) -> (loss, gradient, directional)`: a check's
      evaluation in one call, where the backend has it (the check's one program,
      `_backends/_checking.py`): `tangents` `{wrt name: array}`, each array's own
      direction, and `directional` `{wrt name: derivative along that array's tangent
      alone}` (None where the loss cannot be pushed forward)."""

    loss: Callable
    grad: Callable
    jvp: Callable | None = None
    value_and_grad: Callable | None = None
    evaluation_loss: Callable | None = None
    placed: Placed | None = None
    checking: Any = None
    evaluation: Callable | None = None


class Checked:
    """A variant's `loss`, `grad` or `jvp`, called directly (a notebook, a test): its
    arguments are bound (parameters, and arrays, by keyword as well as by position),
    checked (`Example.check_call`) and validated (the example's `validate`, on concrete
    values), each refusal one `InputError` line; then the built function runs. Everything
    else (`.lower`, `.jitted`, ...) is the built function's; `.lower` binds and checks the
    arguments too. weanj's own runs call `.fn`, the built function, on inputs they checked."""

    def __init__(self, example: Example, variant: str, fn: Callable, *, tangents: bool = False):
        self.example, self.variant, self.fn, self.tangents = example, variant, fn, tangents
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<{getattr(self.fn, '__name__', 'function')} of variant {self.variant!r}>"

    def _bind(self, args: tuple, kwargs: dict) -> tuple:
        if not kwargs:
            return args
        names = (
            self.example.arrays
            + self.example.param_names
            + (("tangents",) if self.tangents else ())
        )
        if len(args) > len(names):
            raise InputError(
                f"{self.variant} takes {len(names)} arguments ({', '.join(names)}), "
                f"got {len(args)} and {len(kwargs)} by keyword"
            )
        bound = dict(zip(names, args, strict=False))
        for name, value in kwargs.items():
            if name not in names:
                raise InputError(
                    f"{self.variant} has no argument {name!r} (its arguments: {', '.join(names)})"
                )
            if name in bound:
                raise InputError(
                    f"{self.variant}: {name} is given twice (by position and by keyword)"
                )
            bound[name] = value
        missing = [n for n in names if n not in bound]
        if missing:
            raise InputError(f"{self.variant}: missing argument(s) {', '.join(missing)}")
        return tuple(bound[n] for n in names)

    def _check(self, args: tuple, *, validate: bool) -> tuple:
        """The arguments checked, with each parameter as `Param.check` types it (a 0-d
        array or a numpy integer is then a Python int: a jitted kernel takes parameters
        as static arguments, which must be hashable)."""
        arrays = args[:-1] if self.tangents else args
        self.example.check_call(self.variant, arrays)
        if validate:
            self.example.check_values(self.variant, arrays[: len(self.example.arrays)])
        n, params = len(self.example.arrays), self.example.params
        typed = tuple(p.check(v) for p, v in zip(params, args[n : n + len(params)], strict=True))
        return args[:n] + typed + args[n + len(params) :]

    def __call__(self, *args, **kwargs):
        args = self._check(self._bind(args, kwargs), validate=True)
        return self.fn(*args)

    def __getattr__(self, name):
        attr = getattr(self.fn, name)  # AttributeError where the built function has none
        if name != "lower":
            return attr

        def lower(*args, **kwargs):
            return attr(*self._check(self._bind(args, kwargs), validate=False))

        return lower


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
    - `sources`: files its code lives in beyond Python modules (a Julia kernel): part of
      what an evaluation record's key holds (docs/DESIGN.md, "Evaluation records").
    - `expected`: differences of this variant known and kept (`weanj.Expected`): judged
      as declared (docs/verdicts.md, "Declaring expectations").
    - `configure`: `(dtype, device) -> Configuration`, how its backend reads the settings
      a run computes in (JAX's x64 and matmul precision: `jax_variant` supplies it);
      default a backend with none (`configuration`).
    - `declared`: what its backend declared beyond `build`, for the backend to read back
      (a Julia variant's `JuliaKernel`: its file, function and `ad`); None for most.
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
    sources: tuple = ()
    expected: Any = field(default=(), compare=False)
    configure: Callable[[str, str], Configuration] | None = field(
        default=None, compare=False, repr=False
    )
    declared: Any = field(default=None, compare=False, repr=False)
    _built: dict = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"Variant({self.name!r}, example={self.example.name!r}, family={self.family!r})"

    def __post_init__(self):
        check_name("variant", self.name)
        if not isinstance(self.example, Example):
            raise DefinitionError(f"variant {self.name}: example must be a weanj.Example")
        check_fields(self)
        dtypes = (self.dtypes,) if isinstance(self.dtypes, str) else tuple(self.dtypes)
        object.__setattr__(self, "dtypes", tuple(d for d in DTYPES if d in dtypes))
        object.__setattr__(self, "requires", tuple(self.requires))
        declared = as_declarations(self.expected, f"variant {self.name}")
        object.__setattr__(self, "expected", tuple(d.on(self.name) for d in declared))

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

    def configuration(self, dtype: str = "float64", device: str = "cpu") -> Configuration:
        """The configuration a run of this variant in `dtype` on `device` computes in, as
        its backend reads it (docs/DESIGN.md §2.2); decided once per evaluation."""
        if self.configure is None:
            return host_configuration(dtype, device)
        return self.configure(dtype, device)

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
                *(
                    None if f is None else Checked(ex, self.name, f, tangents=f is fns.jvp)
                    for f in fns[:CALLS]
                ),
                checking=fns.checking,  # weanj's checks' own runs, called unchecked
            )
            self._built["placed"] = fns.placed  # where the functions can run (no check)
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

    @property
    def placement(self) -> Callable | None:
        """Where its functions run (`Functions.placed`) once they are built; None before
        (nothing is built to ask: a Julia worker is never started for it) and for
        functions that run on the CPU only."""
        return self._built.get("placed")

    @property
    def built(self) -> Functions:
        """The built functions themselves, unchecked: what weanj's own runs call, on
        inputs they read and checked once (`functions()` checks every call)."""
        fns = self.functions()
        return Functions(
            *(None if f is None else f.fn for f in fns[:CALLS]),
            placed=self._built.get("placed"),
            checking=fns.checking,
        )

    def backend_version(self) -> str:
        if callable(self.versions):
            return self.versions()
        return distribution_versions(tuple(self.versions))
