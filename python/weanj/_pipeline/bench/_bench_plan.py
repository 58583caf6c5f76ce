"""What `weanj bench` measures, before anything runs: its points (`BenchPoint`, one variant at
a dtype, a size, parameters and values of symbolic dimensions; `bench_points`, a variant's
series) and its options checked in one line each before any work (`checked_options`:
sizes within reach of memory, the sweeps over a parameter or a dimension, the budget)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._errors import InputError
from ..._model import Example, Inputs
from ..._vocabulary import DEVICES, listed
from . import _measure as measure

DEFAULT_BUDGET_S = 5.0
DEFAULT = object()  # "the example's own default" for `memory_over`


@dataclass(frozen=True)
class BenchPoint:
    """One benchmark measurement: a variant at a dtype, a size, parameters and values of
    symbolic dimensions; `timed` False for scratch memory only (compiled, never run)."""

    variant: str
    dtype: str
    sweep: str  # the size's name, or the parameter or dimension swept
    size: int | None
    params: tuple[tuple[str, Any], ...]
    dims: tuple[tuple[str, int], ...] = ()
    timed: bool = True


def bench_points(
    ex: Example,
    variant: str,
    *,
    sizes: list[int | None],
    params: dict[str, Any],
    dtype: str,
    over: tuple[str, tuple] | None = None,
    memory_over: tuple[str, tuple] | None = None,
) -> list[list[BenchPoint]]:
    """The series of one variant: over the sizes, then (at the middle size) `over` a
    parameter or a dimension (timed) and `memory_over` one (compiled only)."""
    size_name = ex.sizes.name if ex.sizes is not None else "size"
    point = tuple(params.items())
    series = [[BenchPoint(variant, dtype, size_name, s, point) for s in sizes]]
    middle = sizes[len(sizes) // 2]
    for spec, timed in ((over, True), (memory_over, False)):
        if spec is None:
            continue
        name, values = spec
        run = []
        for value in values:
            if name in ex.param_names:
                changed = tuple({**params, name: value}.items())
                run.append(BenchPoint(variant, dtype, name, middle, changed, timed=timed))
            else:
                dims = ((name, int(value)),)
                run.append(BenchPoint(variant, dtype, name, middle, point, dims, timed=timed))
        series.append(run)
    return series


def _sweep_spec(ex: Example, what: str, spec) -> tuple[str, tuple] | None:
    """`(name, values)` checked against the example's parameters and dimensions."""
    if spec is None:
        return None
    name, values = spec
    if not values:
        raise InputError(f"{what} {name} needs at least one value")
    if name in ex.param_names:
        p = ex.param(name)
        return name, tuple(
            sorted({p.check(p.parse(str(x)) if isinstance(x, str) else x) for x in values})
        )
    if name in ex.symbols:
        checked = []
        for x in values:
            try:
                value = int(x)
            except (TypeError, ValueError):
                raise InputError(f"{what} {name}: a dimension takes integers, got {x!r}") from None
            if value < 1:
                raise InputError(f"{what} {name}: a dimension must be at least 1, got {value}")
            checked.append(value)
        return name, tuple(sorted(set(checked)))
    known = [*ex.param_names, *ex.symbols]
    raise InputError(
        f"{what}: {ex.name} has no parameter or dimension "
        f"{name} (it has: {', '.join(known) or 'none'})"
    )


def _sweep_sizes(
    ex: Example, sizes: Sequence[int] | None, shared: Inputs | None
) -> list[int | None]:
    """The sizes of the sweep (the example's by default), refused in one line before any
    allocation when their inputs would not fit in memory."""
    if ex.sizes is None:
        if sizes:
            raise InputError(f"example {ex.name} declares no sizes to sweep (weanj.Sizes)")
        return [None]
    chosen = sorted({int(s) for s in (sizes or ex.sizes.values)})
    if chosen[0] < 1:
        raise InputError(f"sizes ({ex.sizes.name}) must be at least 1, got {chosen}")
    measure.check_reachable(
        ex, ex.sizes.name, chosen, measure.generator_for(ex, {}, shared), shared
    )
    return chosen


def _sweeps(ex: Example, over, memory_over, shared: Inputs | None) -> tuple:
    """`over` and `memory_over` checked (`memory_over` default: the first parameter with a
    `Param.sweep`); a dimension no generator takes is refused before any work."""
    over = _sweep_spec(ex, "--over", over)
    if memory_over is DEFAULT:
        swept = [p for p in ex.params if p.sweep]
        memory_over = (swept[0].name, swept[0].sweep) if swept else None
    memory_over = _sweep_spec(ex, "--memory-over", memory_over)
    for spec in (over, memory_over):
        if spec is not None and spec[0] not in ex.param_names:
            measure.generator_for(ex, {spec[0]: spec[1][0]}, shared)
    return over, memory_over


def checked_options(
    ex: Example,
    device: str,
    sizes: Sequence[int] | None,
    params: dict[str, Any] | None,
    samples: int | None,
    devices: int | None,
    budget_s: float,
    over: Any,
    memory_over: Any,
    shared: Inputs | None,
) -> tuple[list[int], dict[str, Any], Any, Any]:
    """`bench`'s options checked before any work: (sizes, the size sweep's parameters,
    over, memory_over); a dimension's values out of reach are refused here too."""
    if device not in DEVICES:
        raise InputError(f"device must be {listed(DEVICES)}, got {device!r}")
    sweep_sizes = _sweep_sizes(ex, sizes, shared)
    for what, value in (("samples", samples), ("devices", devices)):
        if value is not None and value < 1:
            raise InputError(f"{what} must be at least 1, got {value}")
    if not (budget_s > 0 and budget_s != float("inf")):
        raise InputError(f"the budget must be a finite number of seconds > 0, got {budget_s}")
    given = {k: v for k, v in (params or {}).items() if v is not None}
    point = ex.check_params({p.name: given.get(p.name, p.bench_value) for p in ex.params})
    over, memory_over = _sweeps(ex, over, memory_over, shared)
    for spec in (over, memory_over):  # a dimension's values out of reach: refused before any work
        if spec is not None and spec[0] not in ex.param_names:
            middle = sweep_sizes[len(sweep_sizes) // 2]  # where bench_points sweeps it
            measure.check_reachable(
                ex,
                spec[0],
                list(spec[1]),
                lambda d, name=spec[0], at=middle: measure.generator_for(ex, {name: d}, shared)(at),
                shared,
            )
    return sweep_sizes, point, over, memory_over
