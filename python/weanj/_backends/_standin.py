"""The stand-in accelerator: a second CPU device presented to weanj as a TPU or a GPU, so
that the device dimension is tested where no accelerator is (CI, a laptop).

`WEANJ_STANDIN_DEVICE=tpu` (or `gpu`), with two CPU devices
(`XLA_FLAGS=--xla_force_host_platform_device_count=2`, set before JAX starts), makes
`--device tpu` resolve to CPU device 1, described as "stand-in tpu (CPU device 1)" in
every output: a stand-in result is never presented as a TPU's. It has what makes an
accelerator's runs differ from the CPU's:

- **its own matmul precision**: its default is one bfloat16 pass for float32 matrix
  products, as a TPU's (JAX's `BF16_BF16_F32` algorithm). The CPU's XLA ignores the
  algorithm, so the stand-in teaches the CPU lowering of `dot_general` to honour it
  (float32 operands rounded to bfloat16, products summed in float32). The algorithm is
  in the traced program and `jax_default_matmul_precision` in JAX's jit key, so a CPU
  run (no algorithm) is never served a stand-in program, nor the reverse; a CPU program
  that names `BF16_BF16_F32` itself gets what it asked for.
- **one platform limit**: a `pmax`/`pmin` of a float64 value on the stand-in device
  raises XLA's `UNIMPLEMENTED` with the text a TPU v5e gave (jax 0.10.2, libtpu
  0.0.42.1). The device is JAX's default device while the program lowers, and
  `jax_default_device` is in the jit key: the same program on CPU device 0 lowers as
  always.

The rules are installed once, on first use of the stand-in, in this process only.
"""

from __future__ import annotations

import functools
import os

from .._vocabulary import ACCELERATORS

ENV = "WEANJ_STANDIN_DEVICE"
# the matmul precision a stand-in run has by default (a TPU's float32 default)
DEFAULT_PRECISION = "BF16_BF16_F32"
_installed = False


def standin_kind() -> str | None:
    """The kind the stand-in plays (`$WEANJ_STANDIN_DEVICE`), or None; any other value is
    one line (`InputError`): a typo must not quietly leave the stand-in out."""
    kind = os.environ.get(ENV, "").strip().lower()
    if kind and kind not in ACCELERATORS:
        from .._errors import InputError

        raise InputError(
            f"{ENV}={os.environ[ENV]!r}: the stand-in plays {' or '.join(ACCELERATORS)} (unset the "
            "variable for none)"
        )
    return kind or None


def standin_device():
    """CPU device 1, the stand-in; `UnavailableError` where JAX sees one CPU device."""
    import jax

    from .._errors import UnavailableError

    cpus = jax.devices("cpu")
    if len(cpus) < 2:
        raise UnavailableError(
            f"the stand-in {standin_kind()} is CPU device 1, and JAX sees one CPU device: set "
            "XLA_FLAGS=--xla_force_host_platform_device_count=2 before JAX starts"
        )
    install()
    return cpus[1]


def is_standin(device) -> bool:
    """Whether `device` is the stand-in (CPU device 1 while the stand-in plays)."""
    return (
        standin_kind() is not None
        and getattr(device, "platform", None) == "cpu"
        and getattr(device, "id", None) == 1
    )


def _on_standin() -> bool:
    from jax._src import config

    return is_standin(config.default_device.value)


# The text a TPU v5e gave for a float64 pmax (the platform-limit table is tested with it).
UNIMPLEMENTED_TEXT = (
    "UNIMPLEMENTED: Supported lowering only of Sum all reduce, original computation: "
    "%region_1.2 ({op}.2: {dtype}[], {op}.3: {dtype}[]) -> {dtype}[] {{\n"
    '  %{op}.2 = {dtype}[] parameter(0), metadata={{op_name="{op}"}}\n'
    "  ROOT %max.1 = {dtype}[] maximum(%{op}.2, %{op}.3)\n}} (weanj's stand-in {kind})"
)


def _all_reduce_rule(op: str, generic, ctx, *args, **params):
    import numpy as np

    dtype = ctx.avals_in[0].dtype if ctx.avals_in else None
    if _on_standin() and dtype is not None and np.dtype(dtype) == np.float64:
        from jax.errors import JaxRuntimeError

        raise JaxRuntimeError(UNIMPLEMENTED_TEXT.format(op=op, dtype="f64", kind=standin_kind()))
    return generic(ctx, *args, **params)


def _to_bfloat16(x):
    """float32 `x` rounded to the nearest bfloat16 (ties to even), kept as float32."""
    import jax
    import jax.numpy as jnp

    u = jax.lax.bitcast_convert_type(x, jnp.uint32)
    odd = (u >> 16) & jnp.uint32(1)
    u = (u + jnp.uint32(0x7FFF) + odd) & jnp.uint32(0xFFFF0000)
    return jax.lax.bitcast_convert_type(u, jnp.float32)


def _dot_rule(generic, ctx, lhs, rhs, *, precision, **params):
    import numpy as np
    from jax._src.interpreters import mlir
    from jax._src.lax import lax as lax_internal

    bf16 = precision == lax_internal.DotAlgorithmPreset.BF16_BF16_F32
    avals = ctx.avals_in
    if bf16 and not all(np.dtype(a.dtype) == np.float32 for a in avals):
        return generic(ctx, lhs, rhs, precision=None, **params)  # 32-bit products only
    if bf16:
        # bit arithmetic, not a convert pair: XLA may drop f32 -> bf16 -> f32 (excess
        # precision allowed), which would leave the stand-in exact
        lhs, rhs = (
            mlir.lower_fun(_to_bfloat16, multiple_results=False)(
                ctx.replace(avals_in=[aval], avals_out=[aval]), x
            )[0]
            for x, aval in ((lhs, avals[0]), (rhs, avals[1]))
        )
        precision = None  # the operands now carry the algorithm's rounding
    return generic(ctx, lhs, rhs, precision=precision, **params)


def install() -> None:
    """The stand-in's CPU lowering rules (module docstring), once per process."""
    global _installed
    if _installed:
        return
    from jax._src.interpreters import mlir
    from jax._src.lax import lax as lax_internal
    from jax._src.lax import parallel

    dot = lax_internal.dot_general_p
    generic_dot = mlir._platform_specific_lowerings["cpu"].get(dot) or mlir._lowerings[dot]
    mlir.register_lowering(dot, functools.partial(_dot_rule, generic_dot.rule), platform="cpu")
    for op, prim in (("pmax", parallel.pmax_p), ("pmin", parallel.pmin_p)):
        generic = mlir._platform_specific_lowerings["cpu"].get(prim) or mlir._lowerings[prim]
        mlir.register_lowering(
            prim, functools.partial(_all_reduce_rule, op, generic.rule), platform="cpu"
        )
    _installed = True
