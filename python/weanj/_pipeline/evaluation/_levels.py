"""A run's rounding level: how far its loss and gradient move when every float input
moves by about one unit in the last place (docs/DESIGN.md, "Tolerance policy"); for a
float32 run also how far its variant's float64 program lands when every value in it is
rounded to float32 (`_emulation`: the rounding every perturbed run shares, which their
spread cannot show), the larger of the two. The judge's floors scale with it; a check
measures it where a comparison needs it (`Session.levels`), `weanj run` and
`weanj.evaluate` with every evaluation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._judge._contract import checked_gradients, checked_loss
from ..._judge._policy import counted_levels
from ..._model import Emulated, Gradient, Inputs
from ..._model._beyond import OUTPUT
from ..._watch import Watch
from ._calls import counter, functions_of, loss_and_grad, run_loss
from ._emulation import NARROWED, NotLookedInto, emulate
from ._on_device import HIGHEST, label_of, on_device, precision_eps

# The perturbation that measures a run's rounding level, and its seed.
_NOISE_SEED = 20261202


# How many random-sign perturbations measure a loss's rounding level: one sample may
# happen not to move a loss that cancels (or a quantised one) at all; the largest of a
# few rarely stays at zero where rounding does not. A loss that cancels to a few ulps of
# its terms takes one of a few values, and four draws can all give back the same one
# (31-kmeans at x = c: each draw leaves it unmoved with probability 0.11). Where all the
# samples leave it unmoved and `backward_level` is 0 too (the level would be 0), more
# are drawn, up to `NOISE_SAMPLES_MAX` in all, until one moves it (0.11**16 = 5e-16). Not
# where the gradient gives a level: a float64 run on a TPU (its float64 emulated) can
# leave a loss unmoved by every one-ulp draw, and each draw there takes seconds.
NOISE_SAMPLES = 4
NOISE_SAMPLES_MAX = 16
# An entry's own level (`Gradient.noise_entries`, the judge's floor at that entry where it
# is larger than its array's) is its move under the first draw; where an entry moved by
# more than ENTRY_SPREAD times its array's median (uneven rounding: an ill-conditioned
# entry), the largest of its moves under ENTRY_DRAWS draws (the first of the loss's draws,
# their gradients computed too): one draw leaves a noisy entry nearly still often enough
# (30-det: about one seed in two of a 100-draw fuzz; tests/test_floors.py) that a port
# right to its rounding would fail.
ENTRY_SPREAD = 10.0
ENTRY_DRAWS = 3


def zeros_moved(a: np.ndarray, dtype: str) -> np.ndarray:
    """Where a float32 run's input is exactly 0, the size it moves by instead of 0: its
    array's largest magnitude (1 for an array of zeros); 0 elsewhere and in float64.

    A one-ulp move of 0 is a subnormal, and ε·|x·∂L/∂x| is 0 there: a recurrence whose
    input is 0 would show no rounding at all, though each of its hundreds of steps rounds
    its constants and states (GradBench's particle at w = 0: its float32 run is right to
    1.8e-5). Moved by an ulp of its array's scale, the zero entries let the perturbed runs
    show that rounding; float64 runs keep the relative move."""
    if np.dtype(dtype) not in (np.float32, np.complex64) or not np.size(a):
        return np.zeros(np.shape(a))
    magnitude = np.abs(np.asarray(a))
    scale = float(np.max(magnitude, initial=0.0, where=np.isfinite(magnitude)))
    return np.where(magnitude == 0, scale if scale > 0 else 1.0, 0.0)


def _perturbed(inputs: Inputs, dtype: str, sample: int = 0, eps: float | None = None) -> tuple:
    """The arguments with every float (and complex) input moved by about one unit in the
    last place (of `eps`: a reduced matmul precision's on a device; a float32 run's zero
    entries by one of their array's scale, `zeros_moved`), signs seeded (one draw per
    `sample`): what measures the computation's rounding level."""
    rng = np.random.default_rng(_NOISE_SEED if sample == 0 else [_NOISE_SEED, sample])
    eps = float(np.finfo(dtype).eps) if eps is None else eps
    arrays = inputs.run_arrays(dtype)
    moved = {}
    for spec in inputs.example.specs:
        a = arrays[spec.name]
        if spec.kind in ("float", "complex"):
            signs = rng.choice(np.array([-1.0, 1.0]), size=np.shape(a))
            zeros = zeros_moved(a, dtype)
            a = (a * (1 + eps * signs) + eps * signs * zeros).astype(a.dtype)
        moved[spec.name] = a
    return inputs.example.args(moved, inputs.params)


def backward_level(inputs: Inputs, gradients: dict, dtype: str) -> float:
    """ε·Σ|x_i·∂L/∂x_i| over the wrt arrays: how far the loss moves when every input it is
    differentiated by moves by one rounding (ε relative) in the worst direction (a float32
    run's zero entries by one of their array's scale, as `_perturbed` moves them). A
    backward-stable computation's rounding error is of this size (it is the exact loss
    of inputs moved by a few ε), and it does not need the loss to be large: a determinant
    of a nearly singular matrix, whose cofactors are large, gets a floor to match."""
    eps = float(np.finfo(dtype).eps)
    arrays = inputs.run_arrays(dtype)
    total = 0.0
    for name, g in gradients.items():
        a = np.asarray(arrays[name])
        with np.errstate(invalid="ignore", over="ignore"):
            total += float(np.sum((np.abs(a) + zeros_moved(a, dtype)) * np.abs(g)))
    return eps * total


def _moves(gradients: dict, grads_t: dict) -> dict[str, np.ndarray]:
    """`{array: |g̃ − g|}` entry by entry, float64."""
    out = {}
    for name, g in gradients.items():
        wide = np.complex128 if np.iscomplexobj(g) else np.float64
        with np.errstate(invalid="ignore", over="ignore"):
            out[name] = np.abs(grads_t[name].astype(wide) - g.astype(wide)).astype(np.float64)
    return out


def _moved(arrays: dict, gradients: dict, returned: dict) -> dict[str, np.ndarray]:
    """`{array or output:NAME: |ã − a|}` of a perturbed run (its gradient, and its outputs
    as its call returned them) against the run's own `arrays`."""
    found = dict(gradients)
    found.update(
        {OUTPUT + k: np.asarray(v) for k, v in (returned.get("the outputs") or {}).items()}
    )
    return _moves(arrays, found)


def _uneven(gradients: dict, moved: dict[str, np.ndarray], dtype: str) -> bool:
    """Whether an entry moved by more than `ENTRY_SPREAD` times its array's median move
    and counts as rounding (`counted_levels`, as the judge counts it): an array whose
    rounding is uneven, whose entries' levels then take `ENTRY_DRAWS` draws."""
    for name, d in moved.items():
        if d.size and counted_levels(d, gradients[name], dtype).max() > ENTRY_SPREAD * np.median(d):
            return True
    return False


def _noise(
    fns,
    inputs: Inputs,
    loss: float,
    gradients: dict,
    ex,
    dtype: str,
    watch,
    label,
    eps=None,
    entries: dict | None = None,
    spent: Callable[[int, int], None] | None = None,
    outputs: dict | None = None,
) -> dict:
    """`{"loss": level, array: median |g̃ − g|}` ({} if a perturbed run fails or is not
    finite: the floors are then unknown, and zero). The loss's level is the largest of
    its moves under `NOISE_SAMPLES` perturbations (up to `NOISE_SAMPLES_MAX` where none
    moves it and `backward_level` is 0) and `backward_level`; a gradient's is the median
    of one perturbation's moves, not the maximum: at a kink a one-ulp move may change the
    branch, and with it a few entries by far more than rounding. `entries`, where given,
    receives each entry's own level (`Gradient.noise_entries`, float64): its move under
    the first draw, or, where an array's rounding is uneven (`_uneven`), the largest of
    its moves under `ENTRY_DRAWS` draws (one draw may happen to leave a noisy entry
    nearly still). `eps`: the unit of a reduced matmul precision in effect on a device
    (its products round there). `spent(forward, backward)` counts the kernel's runs.
    `outputs`: the run's outputs, whose levels are measured in the same calls."""
    spent = spent or (lambda forward, backward: None)
    shapes = {k: np.shape(v) for k, v in gradients.items()}
    arrays = {**gradients, **{OUTPUT + k: v for k, v in (outputs or {}).items()}}  # alike

    def moved_by(raw: Any, returned: dict) -> dict[str, np.ndarray]:
        return _moved(arrays, checked_gradients(ex, raw, dtype, shapes), returned)

    try:
        watch.step(f"perturbed run 1 of {NOISE_SAMPLES}")
        args = _perturbed(inputs, dtype, eps=eps)
        returned: dict = {}
        loss_t, raw_grad = loss_and_grad(fns, args, watch, label, dtype, returned, spent, ex)
        first = moved_by(raw_grad, returned)
        levels = dict(first)
        more_draws = entries is not None and _uneven(arrays, first, dtype)
        moves = [abs(loss_t - loss)]
        backward = backward_level(inputs, gradients, dtype)
        for sample in range(1, NOISE_SAMPLES_MAX):
            if sample >= NOISE_SAMPLES and (any(moves) or backward):
                break
            of = NOISE_SAMPLES if sample < NOISE_SAMPLES else f"at most {NOISE_SAMPLES_MAX}"
            watch.step(f"perturbed run {sample + 1} of {of}")
            more = _perturbed(inputs, dtype, sample, eps)
            if more_draws and sample < ENTRY_DRAWS:  # the gradient too, for its entries
                returned = {}
                moved, raw = loss_and_grad(fns, more, watch, label, dtype, returned, spent, ex)
                found = moved_by(raw, returned)
                levels = {k: np.fmax(levels[k], found[k]) for k in levels}
            else:
                moved = watch.run(lambda more=more: run_loss(fns)(*more), label)
                spent(1, 0)
                moved = checked_loss(moved, dtype)
            moves.append(abs(moved - loss))
    except Exception:  # the measurement is a refinement; the run itself stood
        return {}
    out = {"loss": max(*moves, backward)}
    for name, d in first.items():
        out[name] = float(np.median(d)) if d.size else 0.0
    finite = all(np.isfinite(v) for v in out.values())
    if not finite or not all(np.isfinite(d).all() for d in levels.values()):
        return {}
    if entries is not None:
        entries.update(levels)
    return out


def measure_levels(
    g: Gradient,
    inputs: Inputs,
    watch: Watch,
    *,
    device: str = "cpu",
    precision: str | None = None,
    checking: bool = False,
    phase: str = "rounding",
    says: str = "loss floor (its rounding level)",
) -> None:
    """The rounding level of an evaluation (`Gradient.noise`, `noise_entries`; on a
    device under a reduced matmul precision also that precision's, `_levels_on_device`),
    measured by perturbed runs of its variant's functions as the evaluation called them
    (`device`, `precision`, `checking` as given to `evaluate`); their runs counted in
    `g.cost` under `phase`, the heartbeat naming them `says`. Once: `g.levels_measured`
    after."""
    if g.levels_measured or g.of is None:
        return
    g.levels_measured = True
    variant, dtype = g.of, g.dtype
    where = f"{g.example.name} {label_of(variant, dtype, device, precision)}"
    try:
        built = variant.built
        fns, _ = on_device(
            functions_of(built, dtype, device, precision, checking), device, precision
        )
    except Exception:  # noqa: BLE001 - the variant ran; its levels stay unknown (0)
        g.noise = {}
        return
    args = inputs.args(dtype)
    with watch.phase(f"{where}: {says}"):
        spent = counter(g.cost, phase)
        _levels(g, inputs, (built, fns), args, watch, where, device, spent)
        if dtype in NARROWED:
            g.emulated = _emulated(g, inputs, built, watch, where, spent)


def _levels(g: Gradient, inputs: Inputs, functions: tuple, args, watch, where, device, spent):
    """The run's rounding level (`noise`); on a device under a reduced matmul precision,
    where the program has a matrix product, also that precision's level
    (`_levels_on_device`)."""
    (_, fns), ex, dtype = functions, g.example, g.dtype
    eps = precision_eps(g.device)
    if eps is None:
        g.noise = _noise(
            fns,
            inputs,
            g.loss,
            g.gradients,
            ex,
            dtype,
            watch,
            where,
            entries=g.noise_entries,
            spent=spent,
            outputs=g.outputs,
        )
    else:
        _levels_on_device(g, inputs, functions, args, watch, where, device, eps, spent)


def _levels_on_device(
    g: Gradient, inputs: Inputs, functions: tuple, args: tuple, watch, where, device, eps, spent
) -> None:
    """A run under a reduced matmul precision: its dtype's rounding level (`noise`)
    measured on the device at precision=highest (at the reduced one, a one-ulp move may
    cross a bfloat16 rounding and jump by far more), and the reduced precision's own
    level (`Gradient.precision_level`, `_judge._policy.precision_floor`), measured
    there by a perturbation of the precision's unit roundoff `eps`."""
    (built, fns), ex, dtype = functions, g.example, g.dtype
    try:
        full, _ = on_device(built, device, HIGHEST)
        returned: dict = {}
        loss_h, raw = loss_and_grad(full, args, watch, where, dtype, returned, spent, ex)
        grads_h = checked_gradients(ex, raw, dtype, inputs.wrt_shapes)
        g.noise = _noise(
            full,
            inputs,
            loss_h,
            grads_h,
            ex,
            dtype,
            watch,
            where,
            entries=g.noise_entries,
            spent=spent,
            outputs=returned.get("the outputs"),
        )
    except Exception:  # a refinement, as `_noise` itself: the floors are then unknown
        g.noise = {}
        g.noise_entries.clear()
    level = _noise(
        fns,
        inputs,
        g.loss,
        g.gradients,
        ex,
        dtype,
        watch,
        where,
        eps,
        spent=spent,
        outputs=g.outputs,
    )
    g.precision_level = level


def _emulated(g: Gradient, inputs: Inputs, built, watch, where: str, spent) -> Emulated:
    """float32's rounding of the run's variant's float64 program, emulated (`_emulation`):
    the loss's level `|L̃ − L|` and each array's (the median of `|g̃ − g|`), each folded
    into the run's `noise` (and each entry's into `noise_entries`) where larger; or why
    the program could not be looked into, the perturbed runs' level standing alone.
    Counted as two runs of the kernel forward and backward (the rounded program and the
    plain one, in one call)."""
    ex = g.example
    narrow = _widened(inputs.run_arrays(g.dtype), g.dtype)
    watch.step("float32's rounding, emulated on its float64 program")
    try:
        plain, rounded = watch.run(
            lambda: emulate(
                built.value_and_grad,
                ex.static_argnums(),
                inputs.args("float64"),
                ex.args(narrow, inputs.params),
            ),
            where,
        )
        spent(2, 2)
        shapes = inputs.wrt_shapes
        loss, moved = (checked_loss(np.asarray(out[0]), "float64") for out in (plain, rounded))
        exact, found = (
            checked_gradients(ex, out[1], "float64", shapes) for out in (plain, rounded)
        )
    except NotLookedInto as e:
        return Emulated({}, str(e))
    except Exception as e:  # noqa: BLE001 - a refinement: the perturbed runs' level stands
        return Emulated({}, f"its emulated run failed ({type(e).__name__})")
    entries = _moves(exact, found)
    levels = {"loss": abs(moved - loss)}
    levels.update({k: float(np.median(d)) if d.size else 0.0 for k, d in entries.items()})
    if not all(np.isfinite(v) for v in levels.values()):
        return Emulated({}, "its emulated run is not finite")
    g.noise = {k: max(g.noise.get(k, 0.0), v) for k, v in levels.items()}
    for k, d in entries.items():
        own = g.noise_entries.get(k)
        g.noise_entries[k] = d if own is None or np.shape(own) != d.shape else np.fmax(own, d)
    return Emulated(levels)


def _widened(arrays: dict, dtype: str) -> dict:
    """A float32 run's arrays, its float32 (complex64) ones cast to float64 (complex128):
    the float32 run's very inputs, for its float64 program."""
    wide = NARROWED[dtype]
    return {
        k: np.asarray(a).astype(wide) if np.asarray(a).dtype == np.dtype(dtype) else a
        for k, a in arrays.items()
    }
