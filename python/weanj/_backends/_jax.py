"""JAX variants: a JAX loss, jitted with its parameters static, differentiated by JAX.

`jax_variant` registers a loss function; `jit_functions` turns a loss (and an optional
hand-written gradient) into the `Functions` of a variant: `loss`, `grad` (reverse mode,
`jax.grad` over the `wrt` arrays) and `jvp` (forward mode, `jax.jvp`, for the
forward-vs-reverse check). Every function runs in the x64 configuration of its variant's
program (`jax_configuration`, the variant's `configure`; `InX64Setting`): weanj never switches
JAX's 64-bit types on for a program that has them off, nor off for one that has them on.

Complex arrays: `jax.grad` of a real loss returns the conjugate of the steepest-ascent
direction `∂L/∂Re z + i·∂L/∂Im z`, which is what weanj stores and compares (and what
Enzyme.jl returns); `grad` conjugates JAX's answer once, here.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable
from typing import Any

from .._arguments import declared, decorated
from .._model import Configuration, Example, Functions, Variant
from .._model._signature import check_functions
from .._registry import example_of, register_variant
from .._vocabulary import DEVICES, DTYPES
from . import _beyond, _beyond_runs, _checking, _runtime


def jax_configuration(example: str, name: str, dtype: str = "float64", device: str = "cpu"):
    """The `Configuration` a JAX variant's run computes in (`Variant.configure`): its
    program's x64 (`_context.program_x64`, else the session's now) and JAX's default matmul
    precision (None: JAX's default). The one place a variant's x64 is read."""
    from .. import _x64
    from .._context import program_x64

    precision = None
    jax = sys.modules.get("jax")
    if jax is not None:
        precision = jax.config.jax_default_matmul_precision
    x64 = program_x64(example, name) or _x64.session_x64()
    return Configuration(dtype, device, x64, None if precision is None else str(precision))


class InX64Setting:
    """A `jax.jit` function run in its variant's x64 configuration (`jax_configuration`).

    `configured() -> Configuration | None` says which (None: the session's setting,
    untouched); `jax_variant` sets it. The jitted function itself is `.jitted`;
    `.lower(...)` works as on `jax.jit` functions.
    """

    def __init__(self, jitted: Callable, configured: Callable[[], Any] | None = None):
        self.jitted = jitted
        self.configured = configured
        functools.update_wrapper(self, jitted)

    def _context(self):
        import jax

        config = self.configured() if self.configured is not None else None
        if config is None or config.x64 is None:
            return contextlib.nullcontext()
        # jax.enable_x64 holds for this thread only: a call under the watch's thread sees it
        return jax.enable_x64(config.x64.enabled)

    def __call__(self, *args, **kwargs):
        with self._context():
            return self.jitted(*args, **kwargs)

    def lower(self, *args, **kwargs):
        with self._context():
            return self.jitted.lower(*args, **kwargs)


def configured_build(functions: Callable, ex: Example, name: str, *args) -> Any:
    """`functions(ex, *args)`, its `InX64Setting` functions run in variant `name`'s
    configuration (read at each call: it is known once its module has imported), and placed
    on any device JAX has (`_placement.placed`)."""
    from ._placement import placed

    built = functions(ex, *args)
    for fn in built if isinstance(built, tuple) else ():
        if isinstance(fn, InX64Setting) and fn.configured is None:
            fn.configured = functools.partial(jax_configuration, ex.name, name)
    if isinstance(built, Functions) and built.placed is None:
        built = built._replace(placed=placed)  # a JAX program runs on any device JAX has
    checking = built.checking if isinstance(built, Functions) else None
    if checking is not None and checking.placed is None:  # a check's runs' (`_checking`)
        built = built._replace(checking=checking._replace(placed=built.placed))
    return built


def stored_convention(example: Example, gradients: dict[str, Any]) -> dict[str, Any]:
    """JAX's gradients in weanj's convention: complex arrays conjugated (module docstring)."""
    import jax.numpy as jnp

    return {name: jnp.conj(g) if jnp.iscomplexobj(g) else g for name, g in gradients.items()}


def forward_mode(example: Example, loss: Callable) -> Callable:
    """`jvp(*args, tangents)`: the directional derivative of `loss` along `tangents`
    (`{wrt name: array}`) by `jax.jvp`. A loss with a `custom_vjp` inside cannot be
    pushed forward: calling it raises JAX's TypeError, which the judge reports."""
    import jax

    positions = example.wrt_positions

    def directional(*args):
        *args, tangents = args
        along = _checking.loss_along(loss, args, positions)
        primals = tuple(args[i] for i in positions)
        return jax.jvp(along, primals, tuple(tangents[n] for n in example.wrt_names))[1]

    return InX64Setting(jax.jit(directional, static_argnums=example.static_argnums()))


def jit_functions(example: Example, loss: Callable, grad: Callable | None = None) -> Functions:
    """The `Functions` of a JAX loss: `InX64Setting` `jax.jit`s with the parameters static.

    `grad` defaults to `jax.grad` of `loss` with respect to the example's `wrt` arrays;
    a custom `grad` takes the same arguments and returns what `jax.grad` would (an array
    for one `wrt`, else a dict or tuple in `wrt` order).

    weanj's own runs call `value_and_grad`, one program (`jax.value_and_grad`: the loss
    is computed inside the gradient's program anyway), and take every further loss from
    it (`evaluation_loss`): same shapes, dtypes and parameters hit the same executable.
    A check's float64 CPU runs call `checking` instead (`_checking`: one program that
    also holds the forward mode, each call computing only what it asks). `loss` and
    `grad` stay separate programs for direct calls (a notebook, `weanj bench`'s forward
    and gradient timings).

    An example that declares outputs (`Example.outputs`) has a loss that returns `(loss,
    {name: array})`, JAX's `has_aux` convention: `value_and_grad` returns `((loss,
    outputs), gradient)` as `jax.value_and_grad(..., has_aux=True)` does, `loss` and
    `grad` the loss's alone, and the check's program is `_beyond`'s.
    """
    import jax

    positions = example.wrt_positions
    declared = bool(example.outputs)
    own = _beyond_runs.with_outputs(example, loss) if declared else loss
    scalar = _beyond_runs.loss_alone(own) if declared else loss
    raw = jax.grad(scalar, argnums=positions) if grad is None else grad

    def in_convention(g):
        return example.gradient_value(stored_convention(example, example.gradients(g)))

    def gradient(*args):
        return in_convention(raw(*args))

    if grad is None:
        both = jax.value_and_grad(own, argnums=positions, has_aux=declared)

        def loss_and_gradient(*args):
            value, g = both(*args)
            return value, in_convention(g)

    else:  # a hand-written gradient: both in one program all the same

        def loss_and_gradient(*args):
            return own(*args), gradient(*args)

    static = example.static_argnums()
    one = InX64Setting(jax.jit(loss_and_gradient, static_argnums=static))
    plain = Functions(
        InX64Setting(jax.jit(scalar, static_argnums=static)),
        InX64Setting(jax.jit(gradient, static_argnums=static)),
        forward_mode(example, scalar),
        value_and_grad=one,
        evaluation_loss=loss_of(one, declared),
    )
    hand_written = gradient if grad is not None else None
    runs = check_runs(example, plain, one, (loss, own, in_convention, hand_written))
    return plain._replace(checking=runs.functions())


def check_runs(example: Example, plain: Functions, one: Any, made: tuple):
    """A check's float64 CPU runs (`_checking`), in the configuration `one` is given
    (`configured_build`), read at each call: `_beyond`'s where the example declares
    outputs or the second order, else `_checking`'s, grown to `_beyond`'s where a run
    asks for the second order (`--order 2`). `made`: `(loss, the loss as declared,
    in_convention, a hand-written gradient or None)`."""
    import jax

    loss, own, in_convention, hand_written = made
    static = example.static_argnums()

    def jitted(fns):
        return tuple(
            InX64Setting(jax.jit(fn, static_argnums=static), lambda: configuration_of(one))
            for fn in fns
        )

    def programs(order: int):
        return jitted(_beyond.beyond_program(example, own, in_convention, hand_written, order))

    def grown():
        return _beyond_runs.BeyondRuns(
            example, plain, programs, lambda *args: _beyond_runs.output_shapes(own, static, args)
        )

    if example.outputs or example.order >= 2:
        return grown()
    full, reverse = _checking.one_program(example, loss, in_convention, hand_written)
    return _checking.CheckRuns(example, plain, *jitted((full, reverse)), second_order=grown)


def configuration_of(fn: InX64Setting) -> Any:
    """The `Configuration` a `InX64Setting` function runs in (None: the session's)."""
    return fn.configured() if fn.configured is not None else None


def loss_of(value_and_grad: Callable, outputs: bool = False) -> Callable:
    """`loss(*args)`: the loss output of a `value_and_grad` program (its gradient is
    computed and dropped: a call of a compiled program costs less than compiling another);
    `outputs`: the program returns `((loss, outputs), gradient)`."""

    def evaluation_loss(*args):
        first = value_and_grad(*args)[0]
        return first[0] if outputs else first

    return evaluation_loss


class JaxRuntime(_runtime.Runtime):
    """What runs jit-compiled JAX functions (`_runtime`): results waited for with
    `jax.block_until_ready` (JAX dispatches asynchronously), inputs placed with
    `jax.device_put` (spread over `weanj.set_devices`'s devices for a multi-device
    variant), XLA's memory analysis of the compiled function, the persistent compilation
    cache's hits (`_io._jax_cache`)."""

    name = "JAX"
    compiled = True

    def runs(self, variant: Variant) -> bool:
        return hasattr(variant.built.grad, "lower")

    def runs_on(self, kind: str) -> bool:
        return kind in DEVICES

    def device(self, kind: str):
        """The JAX device of kind `"cpu"`, `"gpu"` or `"tpu"` an evaluation runs on
        (`_placement.place_of`: the stand-in where it plays that kind); none raises
        `UnavailableError` naming it."""
        from ._placement import place_of

        return place_of(kind).device

    def placement(self, device, multi_device: bool):
        """`device`, or, for a multi-device variant, replicated over the devices it spans
        (so that the inputs are not committed to one of them)."""
        if device is None or not multi_device:
            return device
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        from ._devices import chosen_devices

        return NamedSharding(
            Mesh(np.array(chosen_devices(), dtype=object), ("d",)), PartitionSpec()
        )

    def on_device(self, device):
        import jax

        return jax.default_device(device)

    def to_device(self, arrays: dict[str, Any], where, *, x64: bool = True) -> dict:
        # in the variant's x64 configuration (`x64`), as its calls run (`_x64`)
        if where is None:
            return arrays
        import jax

        with jax.enable_x64(x64):
            return {k: jax.device_put(a, where) for k, a in arrays.items()}

    def block(self, result: Any) -> Any:
        import jax

        return jax.block_until_ready(result)

    def scratch_bytes(self, fn: Callable, args: tuple) -> int | None:
        """XLA's scratch memory of the compiled `fn` (inputs and outputs excluded)."""
        if not hasattr(fn, "lower"):
            return None
        analysis = fn.lower(*args).compile().memory_analysis()
        return None if analysis is None else int(analysis.temp_size_in_bytes)

    def compile_hits(self) -> int:
        from .._io import _jax_cache

        return _jax_cache.clock().hits


JAX_RUNTIME = _runtime.register(JaxRuntime())


def first_doc_line(fn: Callable) -> str:
    doc = (getattr(fn, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def jax_variant(
    example: Example | str,
    name: str,
    *,
    family: str,
    loss: Callable | None = None,
    grad: Callable | None = None,
    backend: str = "jax",
    requires: tuple[str, ...] = (),
    description: str | Callable[[Callable], str] = "",
    multi_device: bool = False,
    dtypes: tuple[str, ...] = DTYPES,
    excludes: Callable | None = None,
    functions: Callable = jit_functions,
    expected: Any = None,
) -> Any:
    """Register a JAX loss function as a variant of `example`; a decorator when `loss`
    is not given:

        @weanj.jax_variant(ex, "jax-loop", family="smooth")
        def smooth_loop(x, y, S): ...

    The function takes the example's arrays, then its parameters, and returns the scalar
    loss; weanj `jax.jit`s it with the parameters static and differentiates it with
    `jax.grad` over the `wrt` arrays, unless `grad` is given. `backend` and `requires`
    mark variants that need an optional package (`backend="kernex",
    requires=("kernex",)`); `multi_device` one that spans `weanj.set_devices`'s devices;
    `dtypes` the dtypes it supports; `excludes(arrays, params) -> reason or None` the
    inputs it is known not to handle (skipped there, with the reason); `description`
    defaults to the first line of the function's docstring; `functions(example, loss,
    grad) -> Functions` builds it (Enzyme-JAX's variants differ only there);
    `expected` its known differences (`weanj.Expected`, one or several).
    **Returns:** as a decorator the function unchanged (siblings can reuse it); called
    with `loss=`, the registered `Variant`.
    """
    declared("jax_variant", name, loss=loss, grad=grad, requires=requires)
    ex = example_of(example)

    def register(fn: Callable) -> Variant:
        check_functions(ex, name, {"loss": fn, "grad": grad})  # one line, before any run
        described = description(fn) if callable(description) else description
        fields = dict(backend=backend, requires=tuple(requires), dtypes=dtypes, excludes=excludes)
        fields["expected"] = expected
        return register_variant(
            Variant(
                ex,
                name,
                family,
                build=functools.partial(configured_build, functions, ex, name, fn, grad),
                configure=functools.partial(jax_configuration, ex.name, name),
                versions=(*requires, "jax", "jaxlib"),
                multi_device=multi_device,
                description=described or first_doc_line(fn),
                **fields,
            )
        )

    return register_or_decorate(register, loss)


def register_or_decorate(register: Callable[[Callable], Variant], loss: Callable | None) -> Any:
    """The constructors' one calling convention: with `loss`, register it and return the
    `Variant`; without, a decorator that registers the function and returns it as it is
    (so that siblings can reuse it)."""
    if loss is not None:
        return register(loss)

    def decorate(fn: Callable) -> Callable:
        register(decorated(fn))
        return fn

    return decorate
