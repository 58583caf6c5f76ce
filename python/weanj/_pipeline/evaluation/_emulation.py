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

from ._lockstep import interpret, rounding

# the dtypes whose runs the emulation measures, and the wide dtype of each one's program
NARROWED = {"float32": "float64", "complex64": "complex128"}
# float64's unit roundoff over float32's: to first order, float64's rounding of a program
# is float32's (emulated) times this
FLOAT64_SHARE = 2.0**-29
# JAX's own primitives that run code JAX cannot look into
FOREIGN = frozenset({"pure_callback", "io_callback", "ffi_call", "call_exported"})
# higher-order primitives whose body (the kernel itself, mapped over devices) the
# emulation does not follow; any other it does not know (a linear solve, whose inner
# jaxprs are the library solves it calls; a scatter's or a reduction's combiner) it runs
# whole, its outputs rounded, as it runs `lu` or `triangular_solve`
UNFOLLOWED = frozenset({"xla_pmap", "pmap"})


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
    names = {eqn.primitive.name for eqn in _equations(closed.jaxpr)}
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
        narrow = rounding()
        consts = [(c, narrow(c)) for c in closed.consts]
        pairs = list(zip(plain_args, narrow_args, strict=True))
        outs = interpret(closed.jaxpr, consts, pairs, narrow)
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


def float64_level(value_and_grad: Any, static_argnums: Sequence[int], args: tuple) -> float:
    """The loss's rounding level in float64 at `args`: float32's rounding emulated on the
    float64 program at those very inputs (`emulate`), scaled by float64's unit roundoff
    over float32's (`FLOAT64_SHARE`). What the Taylor test's floor needs of a long
    recurrence, whose rounding a one-ulp move of the inputs leaves where it was (the
    perturbed runs' spread is then far short of it, and rounding noise in the remainders
    reads as a rate below 2). `NotLookedInto` where the program cannot be looked into."""
    plain, rounded = emulate(value_and_grad, static_argnums, args, args)
    return abs(float(np.asarray(rounded[0])) - float(np.asarray(plain[0]))) * FLOAT64_SHARE
