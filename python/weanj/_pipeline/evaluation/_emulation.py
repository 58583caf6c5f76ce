"""float32's rounding of a JAX program, emulated: the variant's own float64 program run
with every floating value rounded to float32's precision (docs/reference/tolerance.md,
"float32's rounding, emulated").

**Why.** A float32 run is judged against its own float64 run, with a floor of
`NOISE_MULTIPLE` times its rounding level (`_judge/_policy.py`). The level measured by
perturbing the inputs by an ulp (`_levels._noise`) is the spread of a few float32 runs, and
a spread misses what every run shares. Over a long recurrence the rounding of the early
steps is the same in every perturbed run (their states differ by less than an ulp there),
and a steep slope carries it to the end: GradBench's particle (419 Euler steps at
w = −0.278, ∂L/∂w = −60) keeps 2.9 digits in float32, numpy's float32 as JAX's, while
its perturbed runs do not move it at all (10 − w absorbs a one-ulp move of w) and
ε·|w·∂L/∂w| is six hundred times smaller. The level has to contain float32's rounding
itself.

**How, and why this way.** Three ways to measure it were weighed:

- *A first-order bound*, ε·Σ_k |v_k·∂L/∂v_k| over every intermediate v_k: it does hold
  the bias, but as a worst case it adds every rounding with the same sign; its slack
  over what rounding does grows with the number of operations (√n for independent
  roundings: a thousand on a million-operation stencil), so a hundred times it no longer
  tells float32's rounding from a float16 accumulation's (2¹³ times coarser) without a
  factor tuned per kernel. It needs a reverse pass through every primitive (no
  `while_loop`, no forward-mode-only port) and, for the gradient's levels, one more
  per gradient entry.
- *Stochastic rounding of the intermediates*: its spread holds the random part of
  rounding, which the perturbed runs already measure; it is unbiased by design, so it
  misses exactly the bias in question (√n short on a recurrence of n steps).
- *Round to nearest, emulated* (this module): the float64 program, traced from the
  variant's own jitted function, evaluated twice in lockstep, as it is and with each
  primitive's floating output rounded to float32's 24-bit significand
  (`lax.reduce_precision`, round to nearest even; its inputs, literals and constants
  too). For +, −, ×, ÷ and √ that is float32's own result (float64 holds more than twice
  float32's digits, so rounding its exact result again is correct rounding). One
  deterministic run whose rounding is float32's, bias and all: how far its loss and
  gradient land from the plain run's is the size of the error a float32 run of this
  computation makes here. It is a measurement, not a bound, so the judge's one margin
  (`NOISE_MULTIPLE`) keeps its meaning; forward only, so it runs through `while_loop`,
  `cond`, `scan`, nested and forward-mode AD; one compilation, and two executions of the
  kernel forward and backward in one call.

**Rounding, never a kink.** Every value that is not floating (a comparison, a mask, an
index, a branch taken, a loop's trip count), and every floating one that is a decision (a
sign, a floor, a ceiling, a rounding to integer; a remainder's quotient), is the plain
run's in both: the rounded run takes the float64 program's path, so a rounding that would
flip a branch measures the rounding, not the jump (a kink stays the kink judgement's),
and a loop that stops at a float64 tolerance stops for the rounded run too.

**What it still catches.** The program emulated is the float64 one: code a port runs in
float32 only (a float16 accumulation, a cast) is not in it, and is measured against
float32's rounding alone (a float16 accumulation is 2¹³ times coarser than float32, far
past `NOISE_MULTIPLE`). The emulation keeps float64's exponent range: it rounds
precision, never range, so a float32 overflow or underflow (a missing max-shift in a
softmax or logsumexp) is never counted as rounding; a float32 run that overflows is
`NaN/Inf`, and one that loses a value to underflow differs by more than any level.

**What it cannot look into.** A variant whose functions are not a `jax.jit` program
(a Julia variant, plain Python), a program that calls code outside JAX (a callback, an
FFI call, an exported module, Enzyme-JAX's `enzyme_primal`: any primitive JAX itself does
not define), one mapped by `pmap`, or one with x64 off (no float64 program to round):
`NotLookedInto`, saying which; its level is then the perturbed runs' alone, as before.
A `shard_map` is followed shard by shard. A reduction or a matrix product counts as one
rounding of its result, where float32 rounds each partial sum; a primitive whose inside
is a library call (`lu`, `triangular_solve`, a sort) as one rounding of its outputs; a
higher-order primitive this module does not know (a linear solve, a scatter's combiner)
is run whole and its outputs rounded. Each makes the level smaller, never larger, than
float32's: the random part it misses is what the perturbed runs measure.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# float32's significand, stored bits; the exponent's bits are float64's (range kept)
MANTISSA_BITS = 23
EXPONENT_BITS = 11
# the dtypes whose runs the emulation measures, and the wide dtype of each one's program
NARROWED = {"float32": "float64", "complex64": "complex128"}
# JAX's own primitives that run code JAX cannot look into
FOREIGN = frozenset({"pure_callback", "io_callback", "ffi_call", "call_exported"})
# higher-order primitives whose body (the kernel itself, mapped over devices) the
# emulation does not follow; any other it does not know (a linear solve, whose inner
# jaxprs are the library solves it calls; a scatter's or a reduction's combiner) it runs
# whole, its outputs rounded, as it runs `lu` or `triangular_solve`
UNFOLLOWED = frozenset({"xla_pmap", "pmap"})
# float-valued primitives whose value is a decision (a step of a staircase, a sign): the
# rounded run takes the plain run's, as it takes every comparison's (`_interpret`)
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


class NotLookedInto(Exception):
    """A program whose float32 rounding cannot be emulated; the message says why."""


# Each jitted function's emulated program, per static parameters and argument shapes:
# traced and compiled once, as JAX compiles the function itself (fuzz measures a run's
# level at every draw it escalates). Weak: it lives as long as the variant's program does.
_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def emulate(value_and_grad: Any, static_argnums: Sequence[int], wide: tuple, narrow: tuple):
    """`(plain, rounded)`: the outputs of `value_and_grad`'s float64 program (a `jax.jit`
    function, run in its own x64 configuration) at `wide`, and of the same program with
    every intermediate rounded to float32's precision at `narrow` (the float32 run's
    inputs, in the wide dtype); one compiled program, on the CPU. `NotLookedInto` where
    the program cannot be looked into (module docstring)."""
    jitted = getattr(value_and_grad, "jitted", value_and_grad)
    if not callable(getattr(jitted, "trace", None)):
        raise NotLookedInto("its functions are not a jax.jit program")
    import jax

    static = set(static_argnums)
    flat = [
        jax.tree_util.tree_leaves([a for i, a in enumerate(args) if i not in static])
        for args in (wide, narrow)
    ]
    key = (
        tuple(a for i, a in enumerate(wide) if i in static),
        tuple((np.shape(a), np.asarray(a).dtype.str) for a in flat[0]),
    )
    context = getattr(value_and_grad, "_context", contextlib.nullcontext)
    with context(), jax.default_device(jax.devices("cpu")[0]):
        known = _PROGRAMS.setdefault(jitted, {})
        if key not in known:
            try:
                known[key] = _program(jitted, wide)
            except NotLookedInto as e:
                known[key] = e
        program = known[key]
        if isinstance(program, NotLookedInto):
            raise program
        return program(*flat)


def _program(jitted: Any, wide: tuple) -> Callable:
    """`program(wide_leaves, narrow_leaves) -> (plain, rounded)` of `jitted` traced at
    `wide`, compiled once (`emulate`)."""
    import jax

    traced = jitted.trace(*wide)
    closed = traced.jaxpr
    if not any(np.dtype(a.dtype).name in NARROWED.values() for a in closed.in_avals):
        raise NotLookedInto("its program has no float64 values (x64 is off there)")
    own = _own_primitives()
    names = {eqn.primitive.name: eqn for eqn in _equations(closed.jaxpr)}
    foreign = sorted(name for name in names if name not in own)
    if foreign:
        raise NotLookedInto(
            f"its program calls {', '.join(foreign)}, whose arithmetic weanj cannot look into"
        )
    unfollowed = sorted(name for name in names if name in UNFOLLOWED)
    if unfollowed:
        raise NotLookedInto(
            f"its program runs {', '.join(unfollowed)}, whose inside the emulation does not follow"
        )

    @jax.jit
    def both(plain_args, narrow_args):
        narrow = _rounding()
        consts = [(c, narrow(c)) for c in closed.consts]
        pairs = list(zip(plain_args, narrow_args, strict=True))
        outs = _interpret(closed.jaxpr, consts, pairs, narrow)
        return [plain for plain, _ in outs], [rounded for _, rounded in outs]

    def program(plain_args, narrow_args):
        outs = both(plain_args, narrow_args)
        return tuple(jax.tree_util.tree_unflatten(traced.out_tree, out) for out in outs)

    return program


def _own_primitives() -> frozenset[str]:
    """The names of the primitives JAX's own modules define (those loaded now)."""
    from jax.extend.core import Primitive

    own = set()
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] == "jax" and module is not None:
            own.update(v.name for v in list(vars(module).values()) if isinstance(v, Primitive))
    return frozenset(own - FOREIGN)


def _equations(jaxpr):
    """Every equation of `jaxpr` and of every jaxpr inside it."""
    for eqn in jaxpr.eqns:
        yield eqn
        for inner in _inner_jaxprs(eqn.params):
            yield from _equations(inner)


def _inner_jaxprs(params: dict):
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns"):
                yield inner


def _rounding() -> Callable[[Any], Any]:
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
    return np.dtype(x.dtype).name in NARROWED.values()


def _interpret(jaxpr, consts: Sequence, args: Sequence, narrow: Callable) -> list:
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
    """A closed or open jaxpr as a function of `(plain, rounded)` pairs (`_interpret`)."""
    jaxpr, consts = _closed(value)
    pairs = [(c, narrow(c)) for c in consts]
    return lambda args: _interpret(jaxpr, pairs, list(args), narrow)


def _apply(eqn, invals: list, narrow: Callable) -> list:
    """One equation on `(plain, rounded)` pairs: a call, `scan`, `while` or `cond` with
    its inner jaxprs interpreted alike; any other primitive bound on the plain values and
    on the rounded ones (the plain ones where a value is not floating), its floating
    outputs rounded."""
    name, params = eqn.primitive.name, eqn.params
    if name in CALLS and CALLS[name] in params:
        return _inner(params[CALLS[name]], narrow)(invals)
    if name in _CONTROL:
        return _CONTROL[name](params, invals, narrow)

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
    """A `while` whose trip count is the plain run's (`_interpret`): an iteration stopped
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
    """A `cond` whose branch is the plain run's (`_interpret`)."""
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


_CONTROL = {"scan": _scan, "while": _while, "cond": _cond, "shard_map": _shard_map}
