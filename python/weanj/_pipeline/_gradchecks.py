"""The gradient checks, run: the Taylor remainder test, forward against reverse and
central differences (docs/DESIGN.md, "Gradient checks").

`CHECKS` is the one table of the case table's gradient checks (`GRADIENT_CHECKS`, the
`CaseKind` members with `is_check`): per check, how a variant's gradient is checked and
judged, the policy numbers its evaluation record is keyed on, and what its record's
numbers must be. The case table, the workers and the records dispatch through it.

These call a loss (the variant's, through the session's watch, or any function a
notebook passes to `weanj.taylor_test` and `weanj.fd_check`; `weanj.jvp_check`, which
pushes a JAX function forward, is the JAX backend's, `_backends._jax`); the
numbers they collect are judged by the rules of `_judge` (`TaylorResult.passes`,
`DirectionalResult.passes`), the same for every kernel and every front end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError
from .._judge import _verdict as judge
from .._judge._compare import NOISE_MULTIPLE, TOLERANCES, Tolerance
from .._judge._taylor import (
    AT_ROUNDING,
    OWN_JVP_TOLERANCE,
    RESOLVED,
    ROUNDING,
    DirectionalResult,
    TaylorDirection,
    TaylorResult,
    inner,
    jvp_direction,
    random_direction,
)
from .._model import Catalog, Example, Gradient, Inputs, TaylorPolicy
from .._model._verdicts import CaseKind

# --- the Taylor remainder test -----------------------------------------------------------


def taylor(
    loss: Callable[[np.ndarray], float],
    x: np.ndarray,
    g: np.ndarray,
    policy: TaylorPolicy,
    *,
    array: str = "",
    mask: np.ndarray | None = None,
    noise: float = 0.0,
) -> TaylorResult:
    """The remainders of `loss` (a function of one array, the others fixed) at `x` with
    claimed gradient `g`, along `policy.directions` seeded directions inside `mask`.
    `noise`: the loss's own rounding noise (`Gradient.noise["loss"]`), a floor under the
    rounding level of every remainder: a loss that cancels terms of order 1 down to ~0 is
    noisy far above `ROUNDING` times its value (the same floor as the judge's loss floor)."""
    x = np.asarray(x)
    g = np.asarray(g)
    keep = np.ones(x.shape, bool) if mask is None else np.asarray(mask, bool)
    if not keep.any():
        return TaylorResult(array, policy, 0.0, (), int(x.size), int(x.size))
    if policy.h0 is not None:
        h0 = float(policy.h0)
    else:
        norm = float(np.sqrt(np.sum(np.abs(x[keep]) ** 2)))
        h0 = 1e-2 * (norm if norm > 0 else math.sqrt(int(keep.sum())))
    rng = np.random.default_rng(policy.seed)
    base = float(loss(x))
    directions = []
    for _ in range(policy.directions):
        dx = random_direction(rng, x, None if mask is None else keep)
        directions.append(
            _one_direction(loss, x, dx, inner(g, dx), base, h0, policy.max_steps, noise)
        )
    return TaylorResult(array, policy, h0, tuple(directions), int(x.size - keep.sum()), int(x.size))


def _one_direction(loss, x, dx, slope, base, h0, max_steps, noise=0.0) -> TaylorDirection:
    steps, remainders, rounding = [], [], []
    h = h0
    quiet = 0  # consecutive remainders at rounding level
    if not (math.isfinite(base) and math.isfinite(slope)):
        return TaylorDirection((), (), (), nonfinite=True, slope=slope)
    for _ in range(max_steps):
        value = float(loss(x + h * dx))
        if not math.isfinite(value):
            return TaylorDirection(
                tuple(steps), tuple(remainders), tuple(rounding), nonfinite=True, slope=slope
            )
        r = abs(value - base - h * slope)
        rho = max(ROUNDING * max(abs(base), abs(value), abs(h * slope)), noise)
        steps.append(h)
        remainders.append(r)
        rounding.append(rho)
        # One remainder at rounding level may be a wrong gradient's two terms cancelling:
        # r = |h²C − h·ε| crosses zero once, then falls as h; only AT_ROUNDING in a row
        # mean the remainders are noise from here on.
        quiet = quiet + 1 if r <= RESOLVED * rho else 0
        if quiet == AT_ROUNDING:
            break
        h /= 2
    return TaylorDirection(tuple(steps), tuple(remainders), tuple(rounding), slope=slope)


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
    from .. import _arguments as arg

    loss = arg.function_of_x(loss, "loss", "taylor_test")
    x, g = arg.numbers(x, "x", "taylor_test"), arg.numbers(g, "g", "taylor_test")
    if x.shape != g.shape:
        raise InputError(f"taylor_test: g has shape {g.shape}, x has {x.shape}")
    for what, value in (("directions", directions), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InputError(f"taylor_test: {what} must be an integer >= 0, got {value!r}")
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


# --- the checks of one variant's gradient, as judgements -------------------------------------


def _recorded(session, g: Gradient, kind: CaseKind, array: str) -> dict | None:
    records = getattr(session, "records", None)
    return None if records is None else records.recall_check(g.of, g.dtype, kind, array)


def _keep(session, g: Gradient, kind: CaseKind, array: str, numbers: dict) -> None:
    records = getattr(session, "records", None)
    if records is not None:
        records.keep_check(g.of, g.dtype, kind, array, numbers)


def taylor_judgement(session, case: str, inputs: Inputs, g: Gradient, array: str, **what: Any):
    """The Taylor test of `g`'s `array` (the example's policy, inside its kink mask), and
    the central-difference error as information; from an evaluation record's numbers where
    the evaluation was reused (the judge decides afresh)."""
    recorded = _recorded(session, g, CaseKind.TAYLOR, array)
    if recorded is not None:
        j = judge.judge_taylor(case, TaylorResult.from_json(recorded["result"]), **what)
        j.info.update(recorded.get("info", {}))
        return j
    ex = inputs.example
    mask = session.masks(ex, inputs)[array]
    keep = None if mask.all() else mask
    loss = session.loss_along(g.of, inputs, array)
    x = inputs.run_arrays("float64")[array]
    noise = float(g.noise.get("loss", 0.0))
    result = taylor(
        loss, x, g.gradients[array], ex.taylor_for(array), array=array, mask=keep, noise=noise
    )
    j = judge.judge_taylor(case, result, **what)
    if result.directions:
        error = fd_check(loss, x, g.gradients[array], n=ex.fd.directions, h=ex.fd.step, mask=keep)
        j.info["fd"] = {"error": error, "step": ex.fd.step, "threshold": ex.fd.threshold}
    if result.left_out:
        j.info["masked"] = {"left_out": result.left_out, "size": result.size, "why": ex.fd.why}
    _keep(session, g, CaseKind.TAYLOR, array, {"result": result.to_json(), "info": j.info})
    return j


def _jvp_floor(g: Gradient, array: str, dx: np.ndarray, scale: float) -> float:
    """The relative tolerance below which forward and reverse mode cannot be told apart:
    the gradient's rounding level (`Gradient.noise`, as the pairs' floor) carried along
    `dx`, `NOISE_MULTIPLE·level·Σ|dx_i| / Σ|g_i dx_i|`; and a tolerance the example
    declares for the family (its `grad`)."""
    declared = g.example.declared_tolerance(g.family)
    floor = declared.grad if isinstance(declared, Tolerance) else 0.0
    level = float(g.noise.get(array, 0.0)) if g.noise else 0.0
    if scale > 0 and level > 0:
        floor = max(floor, NOISE_MULTIPLE * level * float(np.sum(np.abs(dx))) / scale)
    return floor


def jvp_judgement(
    session, case: str, catalog: Catalog, inputs: Inputs, g: Gradient, array: str, **what: Any
):
    """`jvp(L)(x; dx)` against `⟨g, dx⟩`: by the variant's own forward mode (1e-12), else
    by the first member of its family that has one (the family tolerance); from an
    evaluation record's numbers where the evaluation was reused."""
    recorded = _recorded(session, g, CaseKind.JVP, array)
    if recorded is not None:
        if "skipped" in recorded:
            return judge.skipped(case, CaseKind.JVP, recorded["skipped"], array=array, **what)
        result = DirectionalResult.from_json(recorded["result"])
        return judge.judge_directional(case, result, **what)
    ex = inputs.example
    mask = session.masks(ex, inputs)[array]
    x = inputs.run_arrays("float64")[array]
    dx = jvp_direction(ex, array, x, None if mask.all() else mask)
    reverse = inner(g.gradients[array], dx)
    scale = float(np.sum(np.abs(g.gradients[array]) * np.abs(dx)))
    family = catalog.families().get(g.family, [])
    order = [g.of] + [v for v in family if v is not g.of]
    why = {}
    for v in order:
        try:
            forward = session.forward(v, inputs, array, dx)
        except TimeoutError:
            raise
        except Exception as e:
            why[v.name] = (str(e).strip().splitlines() or [type(e).__name__])[0][:120]
            continue
        tol = max(
            OWN_JVP_TOLERANCE if v is g.of else TOLERANCES["float64"].grad,
            _jvp_floor(g, array, dx, scale),
        )
        result = DirectionalResult(array, v.name, forward, reverse, scale, tol)
        _keep(session, g, CaseKind.JVP, array, {"result": result.to_json()})
        return judge.judge_directional(case, result, **what)
    own = why.get(g.variant, "no forward mode")
    reason = (
        f"neither {g.variant} ({own}) nor a member of family {g.family} can be pushed forward "
        "by jax.jvp"
    )
    _keep(session, g, CaseKind.JVP, array, {"skipped": reason})
    return judge.skipped(case, CaseKind.JVP, reason, array=array, **what)


# --- the table of the checks ------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


TAYLOR_INFO = ("fd", "masked")  # what a Taylor check's record keeps beside its result


def _taylor_case(session, case: str, catalog: Catalog, inputs: Inputs, g: Gradient, array, **what):
    return taylor_judgement(session, case, inputs, g, array, **what)


def _taylor_policy(ex: Example) -> dict[str, Any]:
    """The example's Taylor and central-difference policies (the record's key)."""
    taylor = {}
    for name in ex.wrt_names:
        p = ex.taylor_for(name)
        taylor[name] = [p.h0, p.directions, p.rate, p.max_steps, p.seed]
    fd = ex.fd
    return {
        CaseKind.TAYLOR: taylor,
        "fd": [fd.directions, fd.step, fd.threshold, fd.mask is not None, fd.why],
    }


def _taylor_beside(numbers: dict) -> bool:
    """A Taylor record's numbers beside its result: the central differences and the
    masked entries, as `taylor_judgement` keeps them."""
    if set(numbers) != {"result", "info"} or not isinstance(numbers["info"], dict):
        return False
    info = numbers["info"]
    if not set(info) <= set(TAYLOR_INFO):
        return False
    if "fd" in info:
        fd = info["fd"]
        if not (
            isinstance(fd, dict)
            and set(fd) == {"error", "step", "threshold"}
            and all(_is_number(x) for x in fd.values())
        ):
            return False
    if "masked" in info:
        m = info["masked"]
        if not (
            isinstance(m, dict)
            and set(m) == {"left_out", "size", "why"}
            and _is_number(m["left_out"])
            and _is_number(m["size"])
            and isinstance(m["why"], str)
        ):
            return False
    return True


def _jvp_policy(ex: Example) -> dict[str, Any]:
    """The jvp tolerances: the variant's own forward mode, a sibling's (the record's key)."""
    return {CaseKind.JVP: [OWN_JVP_TOLERANCE, TOLERANCES["float64"].grad]}


@dataclass(frozen=True)
class GradientCheck:
    """One gradient check of the case table (a `CaseKind` with `is_check`):

    - `judgement(session, case, catalog, inputs, g, array, **what)`: the check of `g`'s
      `array`, judged (from an evaluation record's numbers where there are some);
    - `policy(example)`: the entries of the evaluation record's check policy it adds
      (`_records.check_policy`: a change of one recomputes the evaluation);
    - `result`: the class of the numbers it records (`from_json`, `to_json`);
    - `beside(numbers)`: whether a record's numbers beside `result` are what it writes;
    - `may_skip`: its record may hold only why it was skipped (`{"skipped": why}`).
    """

    kind: CaseKind
    judgement: Callable[..., judge.CaseJudgement]
    policy: Callable[[Example], dict[str, Any]]
    result: type
    beside: Callable[[dict], bool]
    may_skip: bool = False


# one per member of `GRADIENT_CHECKS`, in its order (tests/test_kinds.py holds them equal)
CHECKS: dict[CaseKind, GradientCheck] = {
    CaseKind.TAYLOR: GradientCheck(
        CaseKind.TAYLOR, _taylor_case, _taylor_policy, TaylorResult, _taylor_beside
    ),
    CaseKind.JVP: GradientCheck(
        CaseKind.JVP,
        jvp_judgement,
        _jvp_policy,
        DirectionalResult,
        lambda numbers: set(numbers) == {"result"},
        may_skip=True,
    ),
}
