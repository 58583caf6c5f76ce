"""The lockstep interpreter of `_emulation`: a jaxpr evaluated twice at once, as it is and
with every floating value rounded to float32's precision as it is made, on
`(plain, rounded)` pairs of values (docs/reference/tolerance.md, "float32's rounding,
emulated").

Every value that is not floating, and every floating one that is a decision (a sign, a
floor, a ceiling, a rounding to integer, a remainder's quotient), is the plain run's in
both: the rounded run follows the float64 program's path (its branches, masks, indices
and trip counts), so it measures rounding, never a kink, and ends where the plain run
ends. Calls (`jit`, `checkpoint`, `custom_jvp_call`, `custom_vjp_call`, ...) are
interpreted inline; `scan`, `while_loop`, `cond` and `shard_map` rebuilt around the
interpreted bodies; any other primitive bound on the plain values and on the rounded
ones, its floating outputs rounded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# float32's significand, stored bits; the exponent's bits are float64's (range kept)
MANTISSA_BITS = 23
EXPONENT_BITS = 11
# the wide dtypes, whose values are rounded
WIDE = ("float64", "complex128")
# float-valued primitives whose value is a decision (a step of a staircase, a sign): the
# rounded run takes the plain run's, as it takes every comparison's (`interpret`)
DECISIONS = frozenset({"sign", "floor", "ceil", "round"})
# primitives that call one jaxpr on their operands: interpreted inline, rounded inside
CALLS = {
    "jit": "jaxpr",
    "pjit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "remat2": "jaxpr",
    "checkpoint": "jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
}


def rounding() -> Callable[[Any], Any]:
    """`narrow(x)`: a float64 (complex128) value rounded to float32's precision, its range
    kept; any other value as it is."""
    import jax.numpy as jnp
    from jax import lax

    def narrow(x):
        dtype = np.dtype(getattr(x, "dtype", np.result_type(x)))
        if dtype == np.float64:
            return lax.reduce_precision(jnp.asarray(x), EXPONENT_BITS, MANTISSA_BITS)
        if dtype == np.complex128:
            z = jnp.asarray(x)
            return lax.complex(narrow(jnp.real(z)), narrow(jnp.imag(z)))
        return x

    return narrow


def _floating(x) -> bool:
    return np.dtype(x.dtype).name in WIDE


def interpret(jaxpr, consts: Sequence, args: Sequence, narrow: Callable) -> list:
    """`jaxpr` evaluated twice in lockstep on `(plain, rounded)` pairs: as it is, and with
    each floating value rounded by `narrow` as it is made (constants, literals, every
    equation's outputs; the arguments as given). Every other value (a comparison, an
    index, a count) is the plain run's in both, so the rounded run takes the plain run's
    branches, masks, indices and trip counts: it measures rounding, never a kink, and
    ends where the plain run ends."""
    from jax.extend.core import Literal

    env: dict = {}

    def read(v):
        return (v.val, narrow(v.val)) if isinstance(v, Literal) else env[v]

    env.update(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))
    for eqn in jaxpr.eqns:
        outs = _apply(eqn, [read(v) for v in eqn.invars], narrow)
        env.update(zip(eqn.outvars, outs, strict=True))
    return [read(v) for v in jaxpr.outvars]


def _closed(value) -> tuple[Any, Sequence]:
    """`(jaxpr, consts)` of a closed or open jaxpr."""
    return (value.jaxpr, value.consts) if hasattr(value, "consts") else (value, ())


def _inner(value, narrow: Callable) -> Callable[[list], list]:
    """A closed or open jaxpr as a function of `(plain, rounded)` pairs (`interpret`)."""
    jaxpr, consts = _closed(value)
    pairs = [(c, narrow(c)) for c in consts]
    return lambda args: interpret(jaxpr, pairs, list(args), narrow)


def _apply(eqn, invals: list, narrow: Callable) -> list:
    """One equation on `(plain, rounded)` pairs: a call, `scan`, `while` or `cond` with
    its inner jaxprs interpreted alike; any other primitive bound on the plain values and
    on the rounded ones (the plain ones where a value is not floating), its floating
    outputs rounded."""
    name, params = eqn.primitive.name, eqn.params
    if name in CALLS and CALLS[name] in params:
        return _inner(params[CALLS[name]], narrow)(invals)
    if name in CONTROL:
        return CONTROL[name](params, invals, narrow)

    def bind(args):
        # as `jax.core.eval_jaxpr` binds (an older JAX also hands back sub-functions)
        found = eqn.primitive.get_bind_params(params)
        subfuns, bind_params = found if isinstance(found, tuple) else ((), found)
        with eqn.ctx.manager:
            out = eqn.primitive.bind(*subfuns, *args, **bind_params)
        return list(out) if eqn.primitive.multiple_results else [out]

    plain = bind([p for p, _ in invals])
    if name in DECISIONS or not any(_floating(v.aval) for v in eqn.outvars):
        return [(p, p) for p in plain]
    if name == "rem":  # x − y·trunc(x/y), the quotient the plain run's
        from jax import lax

        (x, x_r), (y, y_r) = invals
        quotient = lax.round((x - plain[0]) / y)
        return [(plain[0], narrow(x_r - narrow(y_r * quotient)))]
    rounded = bind([r for _, r in invals])
    return [(p, narrow(r) if _floating(p) else p) for p, r in zip(plain, rounded, strict=True)]


def _scan(params: dict, invals: list, narrow: Callable) -> list:
    from jax import lax

    consts_n, carry_n = params["num_consts"], params["num_carry"]
    body = _inner(params["jaxpr"], narrow)
    consts, init = invals[:consts_n], invals[consts_n : consts_n + carry_n]
    xs = invals[consts_n + carry_n :]

    def step(carry, x):
        outs = body([*consts, *carry, *x])
        return outs[:carry_n], outs[carry_n:]

    length, reverse, unroll = params["length"], params["reverse"], params.get("unroll", 1)
    carry, ys = lax.scan(step, init, xs, length=length, reverse=reverse, unroll=unroll)
    return [*carry, *ys]


def _while(params: dict, invals: list, narrow: Callable) -> list:
    """A `while` whose trip count is the plain run's (`interpret`): an iteration stopped
    at a float64 tolerance stops for the rounded run too."""
    from jax import lax

    cond_n, body_n = params["cond_nconsts"], params["body_nconsts"]
    cond, body = _inner(params["cond_jaxpr"], narrow), _inner(params["body_jaxpr"], narrow)
    of_cond, of_body = invals[:cond_n], invals[cond_n : cond_n + body_n]
    init = invals[cond_n + body_n :]

    def going(carry):
        return cond([*of_cond, *carry])[0][0]  # the plain run's decision

    return list(lax.while_loop(going, lambda carry: body([*of_body, *carry]), list(init)))


def _cond(params: dict, invals: list, narrow: Callable) -> list:
    """A `cond` whose branch is the plain run's (`interpret`)."""
    from jax import lax

    (index, _), *operands = invals
    branches = [_inner(b, narrow) for b in params["branches"]]
    return list(lax.switch(index, [lambda *ops, b=b: b(ops) for b in branches], *operands))


def _shard_map(params: dict, invals: list, narrow: Callable) -> list:
    """A `shard_map` whose body is interpreted on each shard alike, each pair of values
    sharded as its value is."""
    import jax

    body = _inner(params["jaxpr"], narrow)
    mapped = jax.shard_map(
        lambda *pairs: tuple(tuple(pair) for pair in body(pairs)),
        mesh=params["mesh"],
        in_specs=tuple((spec, spec) for spec in params["in_specs"]),
        out_specs=tuple((spec, spec) for spec in params["out_specs"]),
        axis_names=params["newly_manual_axes"],
        check_vma=params["check_vma"],
    )
    return [tuple(pair) for pair in mapped(*(tuple(pair) for pair in invals))]


CONTROL = {"scan": _scan, "while": _while, "cond": _cond, "shard_map": _shard_map}
