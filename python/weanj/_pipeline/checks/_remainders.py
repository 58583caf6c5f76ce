"""The Taylor remainder test and central differences of any loss (docs/DESIGN.md §9.1,
§9.3): the numbers of a check, for a variant's loss (`_check_taylor`, which judges them)
or for any function a notebook passes to `weanj.taylor_test` and `weanj.fd_check`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..._errors import InputError
from ..._judge._directions import inner, random_direction
from ..._judge._remainder import TaylorDirection
from ..._judge._taylor import TaylorResult
from ..._model import TaylorPolicy
from ._taylor_walk import Floor, Grid, both_ways, walk

# --- the Taylor remainder test -----------------------------------------------------------


def first_step(policy: TaylorPolicy, x: np.ndarray, keep: np.ndarray) -> float:
    """The first step: the policy's, else 1e-2·‖x‖ over the entries that move (1e-2·√N
    where those are all zero): about one percent of the array."""
    if policy.h0 is not None:
        return float(policy.h0)
    norm = float(np.sqrt(np.sum(np.abs(x[keep]) ** 2)))
    return 1e-2 * (norm if norm > 0 else math.sqrt(int(keep.sum())))


def taylor(
    loss: Callable[[np.ndarray], float],
    x: np.ndarray,
    g: np.ndarray,
    policy: TaylorPolicy,
    *,
    array: str = "",
    mask: np.ndarray | None = None,
    walk_every_step: bool = False,
) -> TaylorResult:
    """The remainders of `loss` (a function of one array, the others fixed) at `x` with
    claimed gradient `g`, along `policy.directions` seeded directions inside `mask`
    (`taylor_arrays` of the one array; each direction both ways). `walk_every_step`: every
    step halved from h0 down to rounding level both ways, no estimate (what the estimate
    is measured against: benchmarks/detection.py)."""
    x = np.asarray(x)
    found = taylor_arrays(
        lambda xs: loss(xs.get(array, x)),
        {array: x},
        {array: np.asarray(g)},
        {array: policy},
        {array: mask},
        walk_every_step=walk_every_step,
    )
    return found[array]


def taylor_arrays(
    loss: Callable[[dict[str, np.ndarray]], float],
    xs: dict[str, np.ndarray],
    gs: dict[str, np.ndarray],
    policies: dict[str, TaylorPolicy],
    masks: dict[str, np.ndarray | None],
    *,
    floor: float = 0.0,
    escalate: Callable[[], float] | None = None,
    progress: Callable[[str], None] | None = None,
    walk_every_step: bool = False,
) -> dict[str, TaylorResult]:
    """The Taylor test of each of several arrays on its own evidence: each array moves
    alone (`loss({array: x})` replaces that array, the others stay at x), along its own
    seeded directions (the ones its test alone takes), each both ways (+dx, −dx: two
    directions of its result), so that no other array's curvature enters its remainders
    nor its error another's. They share the loss at x and the
    rounding floor (the loss's measured level, once: `escalate`), neither of which holds
    any array's contribution. An array its mask leaves nothing of is not moved (its
    result: no direction)."""
    tell = progress if progress is not None else (lambda where: None)
    tell("the loss at x")
    base = float(loss({}))
    level = Floor(floor, escalate)
    out = {}
    for name in xs:
        x, policy = np.asarray(xs[name]), policies[name]
        keep = np.ones(np.shape(x), bool) if masks.get(name) is None else np.asarray(masks[name])
        size = int(np.size(x))
        if not keep.any():
            out[name] = TaylorResult(name, policy, 0.0, (), size, size)
            continue
        h0 = first_step(policy, x, keep)
        rng = np.random.default_rng(policy.seed)
        directions, walked, start = [], False, 0
        for d in range(policy.directions):
            dx = h0 * random_direction(rng, x, None if masks.get(name) is None else keep)
            where = f"direction {d + 1} of {policy.directions}, step h0/2^{{}}"
            plus = Grid(
                lambda t, dx=dx, x=x, name=name: loss({name: x + t * dx}),
                base,
                inner(np.asarray(gs[name]), dx),
                1.0,
                policy.max_steps,
                lambda how, k, where=where: tell(how + where.format(k)),
            )
            if walk_every_step:
                back = plus.reversed(plus.tell)
                ways, went = (walk(plus, level.value), walk(back, level.value)), True
            else:
                ways, went, start = both_ways(plus, level, policy.rate, start)
            directions.extend(in_units(way, h0) for way in ways)
            walked = walked or went
        left_out = size - int(keep.sum())
        scale = first_step(TaylorPolicy(), x, keep)
        out[name] = TaylorResult(name, policy, h0, tuple(directions), left_out, size, walked, scale)
    return out


def in_units(d: TaylorDirection, h0: float) -> TaylorDirection:
    """A direction walked in t (the step relative to h0), in an array's own steps h =
    t·h0 (its slope per unit h: the remainders are the same)."""
    return TaylorDirection(
        tuple(t * h0 for t in d.steps),
        d.remainders,
        d.rounding,
        nonfinite=d.nonfinite,
        slope=d.slope / h0,
        second=tuple((t * h0, v, rho) for t, v, rho in d.second),
        behind=None if d.behind is None else (d.behind[0] * h0, *d.behind[1:]),
    )


def counted(loss: Callable, tell: Callable[[str], None], where: str) -> Callable:
    """`loss`, telling before each call which it is: `where` with the call's number in
    place of `{}` (`loss 3 of 20`)."""
    made = 0

    def telling(x):
        nonlocal made
        made += 1
        tell(where.format(made))
        return loss(x)

    return telling


# --- central differences (information; the seed notebook's call) ---------------------------


def _as_arrays(x: Any) -> dict:
    """`{name: array}` (float64, or complex128 for complex values) from an array or a
    dict of arrays (several `wrt` arrays)."""

    def widen(v):
        v = np.asarray(v)
        return v.astype(np.complex128 if np.iscomplexobj(v) else np.float64)

    if isinstance(x, Mapping):
        return {k: widen(v) for k, v in x.items()}
    return {"": widen(x)}


def _rebuild(template: Any, arrays: dict) -> Any:
    return arrays[""] if not isinstance(template, Mapping) else dict(arrays)


def _check_fd_arguments(f: Any, n: Any, h: Any, seed: Any) -> None:
    """Each argument of `fd_check` of its kind, or an `InputError` naming it."""
    if not callable(f):
        raise InputError(f"fd_check: f must be a function, got {type(f).__name__}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"fd_check: n must be an integer >= 1 (directions), got {n!r}")
    if isinstance(h, bool) or not isinstance(h, (int, float, np.floating, np.integer)):
        raise InputError(f"fd_check: h must be a number > 0 (the step), got {h!r}")
    if not (math.isfinite(float(h)) and h > 0):
        raise InputError(f"fd_check: h must be a finite number > 0 (the step), got {h!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"fd_check: seed must be an integer >= 0, got {seed!r}")


def _scalar(value: Any) -> float:
    """What `f` returned, as a float, or an `InputError` (fd_check needs a scalar)."""
    a = np.asarray(value)
    if a.ndim != 0 or a.dtype.kind not in "fiu":
        raise InputError(
            f"fd_check: f must return a real scalar, got an array of shape {a.shape} ({a.dtype})"
        )
    return float(a)


def fd_check(
    f: Callable[[Any], float],
    x: Any,
    g: Any,
    n: int = 10,
    h: float = 1e-2,
    seed: int = 0,
    mask: Any = None,
) -> float:
    """Largest relative error of `g` against central differences of `f` along `n` directions.

    **Arguments:**

    - `f`: scalar function of an array shaped like `x` (e.g. a loss with other inputs
      fixed), or of a dict of arrays when `x` is one (several gradient arrays).
    - `x`: the point; `g`: the claimed gradient `∇f(x)`, shaped like `x`.
    - `n`: number of random directions (unit-norm, standard normal, seeded by `seed`);
      with a dict, each direction has components in every array at once.
    - `h`: step; the central difference `(f(x+hv) - f(x-hv)) / 2h` is exact for
      quadratics, so a large `h` keeps rounding error small there; for other losses its
      truncation error is O(h²) (the Taylor test needs no step: `weanj check`).
    - `mask`: booleans shaped like `x` (a dict for a dict): only the True entries are
      perturbed, e.g. to keep central differences off a kink. None: all of them.

    **Returns:** `max_k |D_k - ⟨g, v_k⟩| / max(|⟨g, v_k⟩|, |D_k|)` (0 where both vanish).
    """
    _check_fd_arguments(f, n, h, seed)
    xs, gs = _as_arrays(x), _as_arrays(g)
    # InputError (a ValueError): a caller's mistake, reported in one line by the CLI.
    if set(gs) != set(xs):
        raise InputError(f"gradient arrays {sorted(gs)} differ from x's {sorted(xs)}")
    for k in xs:
        if gs[k].shape != xs[k].shape:
            label = f"{k}: " if k else ""
            raise InputError(
                f"{label}gradient shape {gs[k].shape} differs from x shape {xs[k].shape}"
            )
    masks = {k: np.ones(a.shape, bool) for k, a in xs.items()}
    if mask is not None:
        given = mask if isinstance(mask, Mapping) else {"": mask}
        for k, m in given.items():
            if k not in xs or np.shape(m) != xs[k].shape:
                raise InputError(f"fd_check: mask {k!r} does not match x")
            masks[k] = np.asarray(m, bool)
    if not any(m.any() for m in masks.values()):
        raise InputError("fd_check: the mask leaves no entry to perturb")
    with _precision_of(next(iter(xs.values()))):
        return _fd_worst(f, x, xs, gs, masks, n, h, seed)


def _fd_worst(f, x, xs, gs, masks, n, h, seed) -> float:
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        v = {}
        for k, a in xs.items():
            d = rng.standard_normal(a.shape)
            if np.iscomplexobj(a):
                d = d + 1j * rng.standard_normal(a.shape)
            v[k] = d * masks[k]
        norm = float(np.sqrt(sum(np.sum(np.abs(d) ** 2) for d in v.values())))
        v = {k: d / norm for k, d in v.items()}
        plus = _rebuild(x, {k: xs[k] + h * v[k] for k in xs})
        minus = _rebuild(x, {k: xs[k] - h * v[k] for k in xs})
        fd = (_scalar(f(plus)) - _scalar(f(minus))) / (2 * h)
        ad = sum(inner(gs[k], v[k]) for k in xs)
        if not (np.isfinite(fd) and np.isfinite(ad)):
            return float("inf")
        scale = max(abs(fd), abs(ad))
        worst = max(worst, abs(fd - ad) / scale if scale > 0 else 0.0)
    return worst


def taylor_test(
    loss: Callable[[Any], float],
    x: Any,
    g: Any,
    *,
    h0: float | None = None,
    directions: int = 2,
    rate: float = 1.8,
    seed: int = 0,
    mask: Any = None,
) -> TaylorResult:
    """The Taylor remainder test of a claimed gradient `g` of `loss` at `x`, for any
    function (pyadjoint's `taylor_test` is the model).

    Along `directions` seeded unit directions dx, the remainder `|L(x + h dx) − L(x) −
    h⟨g, dx⟩|` is computed for h = h0, h0/2, ... until it reaches rounding level; it falls
    as h² (rate 2) when `g` is the gradient, as h (rate 1) when it is not.

    **Arguments:**

    - `loss`: a scalar function of one array (the other inputs fixed).
    - `x`, `g`: the point and the claimed gradient (same shape; complex arrays in weanj's
      convention `∂L/∂Re z + i·∂L/∂Im z`).
    - `h0`: the first step (default 1e-2·‖x‖); `directions`, `seed`: the directions;
      `rate`: the bound the rates must reach; `mask`: booleans, only True entries move.

    **Returns:** a `TaylorResult`: `.rates` (per direction), `.asymptotic` (the rates at the
    smallest resolved steps), `.passes` (the judge's rule), and every step and remainder.
    """
    from ... import _arguments as arg

    loss = arg.function_of_x(loss, "loss", "taylor_test")
    x, g = arg.numbers(x, "x", "taylor_test"), arg.numbers(g, "g", "taylor_test")
    if x.shape != g.shape:
        raise InputError(f"taylor_test: g has shape {g.shape}, x has {x.shape}")
    for what, value in (("directions", directions), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InputError(f"taylor_test: {what} must be an integer >= 0, got {value!r}")
    h0, rate = (
        arg.real(h0, "h0", "taylor_test", positive=True),
        arg.real(rate, "rate", "taylor_test"),
    )
    try:
        policy = TaylorPolicy(h0=h0, directions=int(directions), rate=rate, seed=int(seed))
    except Exception as e:
        raise InputError(f"taylor_test: {e}") from None
    if mask is not None and np.shape(mask) != x.shape:
        raise InputError(f"taylor_test: mask has shape {np.shape(mask)}, x has {x.shape}")
    with _precision_of(x):
        return taylor(loss, x, g, policy, mask=mask)


def _precision_of(x: np.ndarray):
    """JAX's 64-bit types on for float64 (complex128) points, as weanj's runs have them: a
    plain JAX loss would otherwise compute in float32, and a correct gradient's remainders
    would stop at float32's rounding (rates 1, a false failure)."""
    import contextlib
    import sys

    jax = sys.modules.get("jax")
    if jax is None or np.asarray(x).dtype not in (np.float64, np.complex128):
        return contextlib.nullcontext()
    return jax.enable_x64(True)
