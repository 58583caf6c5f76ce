"""Evaluating a variant: its loss and gradient on some inputs, under the time limit,
held to the contract of what a variant returns (`_judge._contract`).

`evaluate` never raises for what the variant does: it returns the `Gradient` (with its
provenance, the seconds the first calls took and the rounding level of the computation)
or the variant's `Fault`, with one line saying what and the command that reproduces it.
Only weanj's own mistakes raise.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from .. import _x64
from .._errors import ExcludedError, UnavailableError, WeanjError
from .._judge._contract import (
    Breach,
    Fault,
    checked_gradients,
    checked_loss,
    fault_of,
    numbers_fault,
)
from .._judge._policy import counted_levels
from .._model import Configuration, Gradient, Inputs, Variant, run_label
from .._watch import Watch
from ._on_device import (
    HIGHEST,
    device_label,
    matmul_free,
    on_device,
    platform_fault_line,
    precision_eps,
)
from ._on_device import describe as describe_device

# The perturbation that measures a run's rounding level, and its seed.
_NOISE_SEED = 20261202


def label_of(
    variant: Variant | str, dtype: str, device: str = "cpu", precision: str | None = None
) -> str:
    """How every view names a run: `jax-lex`, `jax-lex@float32`, `jax-lex@float32@tpu`
    (`Configuration.label`; `@highest` for the precision-or-bug re-run)."""
    name = variant if isinstance(variant, str) else variant.name
    return device_label(run_label(name, dtype), device, precision)


def configuration_of(
    found: Any, variant: Variant | None, dtype: str, device: str = "cpu"
) -> Configuration | None:
    """The configuration a subject was computed in: its evaluation's (`evaluate`, a
    record's recall), else (a file, a skip decided before any run) its variant's now."""
    config = getattr(found, "configuration", None)
    if config is None and variant is not None:
        return variant.configuration(dtype, device)
    return config


def _word(value: Any) -> str:
    """A parameter value as the command line spells it."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def reproduce_command(
    variant: Variant, inputs: Inputs, dtype: str, shown_path=str, device: str = "cpu"
) -> str:
    """The `weanj run` that recomputes this evaluation (the shared inputs, or the inputs
    file it was read from, with the parameters that differ)."""
    words = ["weanj", "run", variant.example.name, variant.name]
    if dtype != "float64":
        words += ["--dtype", dtype]
    if device != "cpu":
        words += ["--device", device]
    if not inputs.shared:
        if inputs.path is not None:
            words += ["--inputs", shown_path(inputs.path)]
        stored = dict(inputs.attrs)
        for name, value in inputs.params.items():
            if stored.get(name) != value or inputs.path is None:
                words += [f"--{name}", _word(value)]
    return " ".join(words)


def first_line(e: BaseException) -> str:
    """An exception as one line: weanj's own message, else its type and first line."""
    text = (str(e).strip().splitlines() or [""])[0][:300]
    if isinstance(e, WeanjError):
        return text or type(e).__name__
    return f"raised {type(e).__name__}" + (f": {text}" if text else "")


# How many random-sign perturbations measure a loss's rounding level: one sample may
# happen not to move a loss that cancels (or a quantised one) at all; the largest of a
# few rarely stays at zero where rounding does not. Rarely is not never: a loss that
# cancels to a few ulps of its terms takes one of a few values, and four draws can all
# give back the same one (31-kmeans with x = c, n = 5: each draw leaves it unmoved with
# probability 0.11, all four did, and its gradient is 0 there: its level was 0). Where all
# the samples leave it unmoved and `backward_level` is 0 too (the level would be 0), more
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
# (30-det, one draw: a 100-draw fuzz found such an entry in one seed of two; three draws:
# tests/test_floors.py) that a port right to its rounding failed.
ENTRY_SPREAD = 10.0
ENTRY_DRAWS = 3


def _library_folders() -> tuple[str, ...]:
    """Folders of code that is not the project's: the standard library, installed
    packages, weanj itself."""
    import sysconfig
    from pathlib import Path

    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(str(Path(__file__).resolve().parent.parent))  # weanj's package
    return tuple(str(Path(p).resolve()) + os.sep for p in paths if p)


def raised_at(e: BaseException) -> str:
    """` (at kernels/heat.py:17)`: the innermost frame of the exception's traceback in the
    project's own code (not the standard library, an installed package or weanj), its
    path relative to the current folder where it lies inside; "" where there is none."""
    from pathlib import Path

    skip = _library_folders()
    chain: list[BaseException] = []
    while e is not None and e not in chain:  # the cause first: `sys.exit` inside a kernel
        chain.insert(0, e)
        e = e.__cause__ or e.__context__
    found = None
    for exc in chain:
        tb = exc.__traceback__
        while tb is not None:
            name = tb.tb_frame.f_code.co_filename
            if not name.startswith("<"):
                path = str(Path(name).resolve())
                if not path.startswith(skip):
                    found = (path, tb.tb_lineno)
            tb = tb.tb_next
        if found is not None:
            break
    if found is None:
        return ""
    path, line = found
    try:
        path = str(Path(path).relative_to(Path.cwd().resolve()))
    except ValueError:
        pass
    return f" (at {path}:{line})"


def _perturbed(inputs: Inputs, dtype: str, sample: int = 0, eps: float | None = None) -> tuple:
    """The arguments with every float (and complex) input moved by about one unit in the
    last place (of `eps`: a reduced matmul precision's on a device), signs seeded (one
    draw per `sample`): what measures the computation's rounding level."""
    rng = np.random.default_rng(_NOISE_SEED if sample == 0 else [_NOISE_SEED, sample])
    eps = float(np.finfo(dtype).eps) if eps is None else eps
    arrays = inputs.run_arrays(dtype)
    moved = {}
    for spec in inputs.example.specs:
        a = arrays[spec.name]
        if spec.kind in ("float", "complex"):
            signs = rng.choice(np.array([-1.0, 1.0]), size=np.shape(a))
            a = (a * (1 + eps * signs)).astype(a.dtype)
        moved[spec.name] = a
    return inputs.example.args(moved, inputs.params)


def for_checks(built: Any, checking: bool) -> Any:
    """The functions a float64 CPU run calls: in a check (`checking`), where the backend
    has its own for a check's runs, those (`Functions.checking`: one program for the
    evaluation, its loss floor, the Taylor steps and the jvp, each call computing only
    what it asks), else `built` itself."""
    own = getattr(built, "checking", None)
    return own if checking and own is not None else built


def run_loss(fns) -> Any:
    """The loss as weanj's own runs call it beyond the evaluation's first call (the
    rounding level, the Taylor test's steps): from the program that computed the
    evaluation where the backend has one (`Functions.evaluation_loss`: nothing compiles
    again), else the variant's `loss`."""
    return fns.evaluation_loss if fns.evaluation_loss is not None else fns.loss


def _loss_and_grad(
    fns, args: tuple, watch: Watch, label: str, dtype: str, returned: dict | None = None
) -> tuple[Any, Any]:
    """The loss (held to the contract) and the raw gradient: one watched call where the
    backend computes both at once (`Functions.value_and_grad`: a Julia variant's one
    request, a JAX variant's one compiled program), else the loss, checked before the
    gradient is asked for. `returned` keeps what came back, for the fault line of a run
    at odds with its x64 configuration."""
    returned = {} if returned is None else returned
    if fns.value_and_grad is not None:
        try:
            both = watch.run(lambda: fns.value_and_grad(*args), label)
        except TypeError:
            # JAX refuses to differentiate a loss that is not a real scalar: the loss
            # alone says which contract it breaks (`checked_loss`), as it would first
            returned["the loss"] = watch.run(lambda: fns.loss(*args), label)
            checked_loss(returned["the loss"], dtype)
            raise
        returned["the loss"] = both[0]
        loss = checked_loss(both[0], dtype)  # the loss's breach first, as if called first
        returned["the gradient"] = both[1]
        return loss, both[1]
    returned["the loss"] = watch.run(lambda: fns.loss(*args), label)
    loss = checked_loss(returned["the loss"], dtype)
    returned["the gradient"] = raw_grad = watch.run(lambda: fns.grad(*args), label)
    return loss, raw_grad


def backward_level(inputs: Inputs, gradients: dict, dtype: str) -> float:
    """ε·Σ|x_i·∂L/∂x_i| over the wrt arrays: how far the loss moves when every input it is
    differentiated by moves by one rounding (ε relative) in the worst direction. A
    backward-stable computation's rounding error is of this size (it is the exact loss
    of inputs moved by a few ε), and it does not need the loss to be large: a determinant
    of a nearly singular matrix, whose cofactors are large, gets a floor to match."""
    eps = float(np.finfo(dtype).eps)
    arrays = inputs.run_arrays(dtype)
    total = 0.0
    for name, g in gradients.items():
        with np.errstate(invalid="ignore", over="ignore"):
            total += float(np.sum(np.abs(np.asarray(arrays[name])) * np.abs(g)))
    return eps * total


def _moves(gradients: dict, grads_t: dict) -> dict[str, np.ndarray]:
    """`{array: |g̃ − g|}` entry by entry, float64."""
    out = {}
    for name, g in gradients.items():
        wide = np.complex128 if np.iscomplexobj(g) else np.float64
        with np.errstate(invalid="ignore", over="ignore"):
            out[name] = np.abs(grads_t[name].astype(wide) - g.astype(wide)).astype(np.float64)
    return out


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
    (its products round there)."""
    shapes = {k: np.shape(v) for k, v in gradients.items()}
    try:
        watch.step(f"perturbed run 1 of {NOISE_SAMPLES}")
        args = _perturbed(inputs, dtype, eps=eps)
        loss_t, raw_grad = _loss_and_grad(fns, args, watch, label, dtype)
        first = _moves(gradients, checked_gradients(ex, raw_grad, dtype, shapes))
        levels = dict(first)
        more_draws = entries is not None and _uneven(gradients, first, dtype)
        moves = [abs(loss_t - loss)]
        backward = backward_level(inputs, gradients, dtype)
        for sample in range(1, NOISE_SAMPLES_MAX):
            if sample >= NOISE_SAMPLES and (any(moves) or backward):
                break
            of = NOISE_SAMPLES if sample < NOISE_SAMPLES else f"at most {NOISE_SAMPLES_MAX}"
            watch.step(f"perturbed run {sample + 1} of {of}")
            more = _perturbed(inputs, dtype, sample, eps)
            if more_draws and sample < ENTRY_DRAWS:  # the gradient too, for its entries
                moved, raw = _loss_and_grad(fns, more, watch, label, dtype)  # loss checked
                found = _moves(gradients, checked_gradients(ex, raw, dtype, shapes))
                levels = {k: np.fmax(levels[k], found[k]) for k in levels}
            else:
                moved = watch.run(lambda more=more: run_loss(fns)(*more), label)
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


def _dtype_name(value: Any) -> str:
    """The dtype of what a loss or grad returned (its first array), or ""."""
    if isinstance(value, dict):
        value = next(iter(value.values()), None)
    elif isinstance(value, (tuple, list)):
        value = value[0] if value else None
    try:
        return np.asarray(value).dtype.name
    except Exception:
        return ""


def _x64_line(variant: Variant, config: Configuration, returned: dict[str, Any]) -> str | None:
    """The fault line of a run whose dtype follows from its program's x64 configuration
    (`_x64.fault_line`): a float64 run computed in float32 with x64 off, a float32 run
    promoted to 64 bits with it on. None for any other breach, and for a backend without
    JAX's x64 (`config.x64` None)."""
    if config.x64 is None:
        return None
    for what, value in reversed(returned.items()):  # the last call made is the one at fault
        found = _x64.fault_line(variant.name, config.x64, _dtype_name(value), config.dtype, what)
        if found is not None:
            return found
    return None


def evaluate(
    variant: Variant,
    inputs: Inputs,
    dtype: str,
    watch: Watch,
    *,
    shown_path=str,
    device: str = "cpu",
    precision: str | None = None,
    checking: bool = False,
) -> Gradient | Fault:
    """The loss and gradient of `variant` on `inputs` in `dtype`, or its fault; either
    carries the `Configuration` it was computed in, decided here once: on `device` (every
    call placed there, `_on_device`), with matmul `precision` (None: the one in effect;
    `"highest"`: the precision-or-bug re-run). `checking`: gradient checks will follow, so a
    float64 CPU run calls what the backend has for a check's runs (`for_checks`)."""
    ex = variant.example
    config = variant.configuration(dtype, device)
    if precision is not None:
        config = dataclasses.replace(config, precision=precision)
    label = label_of(variant, dtype, device, precision)
    command = reproduce_command(variant, inputs, dtype, shown_path, device)

    def fault(happened: BaseException, what: str = "") -> Fault:
        """What happened, reported to the judge, which gives the verdict (`fault_of`),
        with the configuration the run was in."""
        return dataclasses.replace(fault_of(happened, what, command), configuration=config)

    why = variant.unavailable_reason()
    if why is not None:
        return fault(UnavailableError(why))
    if dtype not in variant.dtypes:
        return fault(ExcludedError(f"{variant.name} supports {', '.join(variant.dtypes)} only"))
    excluded = variant.excluded(inputs.arrays, inputs.params)
    if excluded is not None:
        return fault(ExcludedError(f"{variant.name} does not apply to these inputs: {excluded}"))
    args = inputs.args(dtype)
    where = f"{ex.name} {label}"
    returned: dict[str, Any] = {}
    place = None
    try:
        with watch.phase(f"compiling or running {where}"):
            built = variant.built  # builds on first use: an optional backend may refuse here
            checked = dtype == "float64" and device == "cpu" and precision is None
            built = for_checks(built, checking and checked)
            fns, place = on_device(built, device, precision)
            t0 = time.perf_counter()
            loss, raw_grad = _loss_and_grad(fns, args, watch, where, dtype, returned)
            seconds = time.perf_counter() - t0
        gradients = checked_gradients(ex, raw_grad, dtype, inputs.wrt_shapes)
    except TimeoutError as e:
        limit = platform_fault_line(e, device, place)  # on a device: a platform limit
        return fault(e) if limit is None else fault(UnavailableError(limit), limit)
    except (ExcludedError, UnavailableError) as e:
        return fault(e, first_line(e))
    except Breach as e:
        return fault(e, _x64_line(variant, config, returned) or f"{variant.name} {e}")
    except Exception as e:  # the variant's own exception: its error, never the command's end
        limit = platform_fault_line(e, device, place)  # or what the device cannot run
        if limit is not None:
            return fault(UnavailableError(limit), limit)
        return fault(e, f"{variant.name} {first_line(e)}{raised_at(e)}")
    g = _gradient(variant, inputs, config, gradients, loss, seconds)
    describe_device(g, place, config, precision)
    nonfinite = numbers_fault(g, command)  # the numbers, judged
    if nonfinite is not None:
        return dataclasses.replace(nonfinite, configuration=config)
    with watch.phase(f"{where}: loss floor (its rounding level)"):
        _levels(g, inputs, (built, fns), args, watch, where, device, precision)
    if config.x64 is not None:
        g.extra["x64"] = config.x64.describe()  # stored with the gradient
    return g


def _levels(g: Gradient, inputs: Inputs, functions: tuple, args, watch, where, device, precision):
    """The run's rounding level (`noise`); on a device under a reduced matmul precision,
    where the program has a matrix product, also that precision's level
    (`_levels_on_device`)."""
    (built, fns), ex, dtype = functions, g.example, g.dtype
    if g.extra.get("precision_reduced") and matmul_free(built, args, device, precision):
        g.extra["precision_reduced"] = False  # no matrix product: nothing rounds coarser
        g.extra["precision"] += " (no matrix product in this program)"
    eps = precision_eps({"reduced": g.extra.get("precision_reduced"), **g.extra})
    if eps is None:
        g.noise = _noise(
            fns, inputs, g.loss, g.gradients, ex, dtype, watch, where, entries=g.noise_entries
        )
    else:
        _levels_on_device(g, inputs, functions, args, watch, where, device, eps)


def _levels_on_device(
    g: Gradient, inputs: Inputs, functions: tuple, args: tuple, watch, where, device, eps
) -> None:
    """A run under a reduced matmul precision: its dtype's rounding level (`noise`)
    measured on the device at precision=highest (at the reduced one, a one-ulp move may
    cross a bfloat16 rounding and jump by far more), and the reduced precision's own
    level (`extra["precision_level"]`, `_judge._policy.precision_floor`), measured
    there by a perturbation of the precision's unit roundoff `eps`."""
    (built, fns), ex, dtype = functions, g.example, g.dtype
    try:
        full, _ = on_device(built, device, HIGHEST)
        loss_h, raw = _loss_and_grad(full, args, watch, where, dtype)
        grads_h = checked_gradients(ex, raw, dtype, inputs.wrt_shapes)
        g.noise = _noise(
            full, inputs, loss_h, grads_h, ex, dtype, watch, where, entries=g.noise_entries
        )
    except Exception:  # a refinement, as `_noise` itself: the floors are then unknown
        g.noise = {}
        g.noise_entries.clear()
    level = _noise(fns, inputs, g.loss, g.gradients, ex, dtype, watch, where, eps)
    g.extra["precision_level"] = level


def _gradient(
    variant: Variant, inputs: Inputs, config: Configuration, gradients, loss, seconds
) -> Gradient:
    dtype = config.dtype
    return Gradient(
        variant.example,
        variant.name,
        variant.family,
        dtype,
        gradients,
        loss,
        dict(inputs.params),
        inputs.digest,
        inputs.key(dtype),
        backend=variant.backend,
        backend_version=variant.backend_version(),
        source="run",
        seconds=seconds,
        of=variant,
        configuration=config,
    )
