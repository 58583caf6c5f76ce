"""`weanj check` and `weanj.check()`: run every available variant of each example on its
shared inputs (float64 and, by default, float32), save each gradient to the store, run
the gradient checks (Taylor, jvp) and judge every case of the case table, together with
the recorded references and the other files of the store.

An example whose inputs cannot be read is not judged (the others are): the command then
exits 2, having printed the others' verdicts.

The run itself is `_pipeline.engine._run.CheckRun`; this module resolves the names (examples,
variants, `--dtype`, the executor) and hands it the `Judgement` and the writer of
`check.json` (`check_run`, which `pytest --weanj` uses too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .._errors import InputError, WeanjError, say
from .._judge._events import Listener
from .._judge._judgement import Judgement
from .._model import DTYPES, Catalog
from .._pipeline.engine._run import CheckRun
from .._pipeline.executors._executors import executor_for
from .._pipeline.records._store_writes import StoreWrites
from .._places import places
from .._registry import catalogs, project, refresh
from .._registry._names import unknown_variants
from .._report._judgement import JudgementView, Kept
from .._report._verdicts_file import CheckFiles
from .._vocabulary import CHECK_DTYPES, DEVICES


def dtypes_of(dtype: str) -> tuple[str, ...]:
    """`--dtype`: float32 is always judged against its own float64 run, so it brings
    float64 along; float64 alone leaves float32 out."""
    from .._arguments import one_of

    one_of(dtype, CHECK_DTYPES, "dtype", "check")
    return ("float64",) if dtype == "float64" else DTYPES


def devices_of(device: Sequence[str] | str | None, config=None) -> tuple[str, ...]:
    """The devices under test: `device` (one kind or several), else `[tool.weanj]
    devices`, else the CPU alone (whatever JAX's default device is). The CPU always
    comes first: every device run is judged against its family's CPU float64 reference."""
    from .._arguments import names

    asked = names(device, "device", "check") or []
    if not asked and config is not None:
        asked = list(getattr(config, "devices", ()) or ())
    unknown = [d for d in asked if d not in DEVICES]
    if unknown:
        raise InputError(
            f"device must be one of {', '.join(DEVICES)}, got {', '.join(map(repr, unknown))}"
        )
    return ("cpu", *dict.fromkeys(d for d in asked if d != "cpu"))


def resolved_devices(
    device: Sequence[str] | str | None, config=None
) -> tuple[tuple[str, ...], dict[str, str]]:
    """`(the devices under test, {kind: why} of those absent here)`. A device the caller
    names (`--device`, `device=`) must be present: absent, it is one line (exit 2) before
    any work, as for `weanj run`; one `[tool.weanj] devices` names is left out, said once
    and in the headline ("tpu: not run"), a failure only where required."""
    from .._backends._placement import place_of, present
    from .._errors import UnavailableError

    devices = devices_of(device, config)
    absent: dict[str, str] = {}
    for kind in devices[1:]:
        if device:
            present(kind)
            continue
        try:
            place_of(kind)
        except UnavailableError as e:
            absent[kind] = str(e)
    return tuple(d for d in devices if d not in absent), absent


def restricted(cats: list[Catalog], variants: Sequence[str] | None) -> list[Catalog]:
    """The catalogs with only the variants named (each name must exist in one of them)."""
    if not variants:
        return cats
    wanted = set(variants)
    known = {v.name for c in cats for v in c.variants}
    unknown = sorted(wanted - known)
    if unknown:
        raise unknown_variants(unknown, sorted(known))
    return [
        replace(
            c,
            variants=tuple(v for v in c.variants if v.name in wanted),
            left_out=frozenset(v.name for v in c.variants if v.name not in wanted),
        )
        for c in cats
    ]


def check(
    examples: Sequence[str] | str | None = None,
    *,
    variants: list[str] | tuple[str, ...] | None = None,
    dtype: str = "both",
    timeout: float | None = None,
    fresh: bool = False,
    say: Callable[[str], None] = say,
    save: bool = True,
    workers: int | None = None,
    scheduler: str | None = None,
    processes: int | None = None,
    require: Sequence[str] | None = None,
    device: Sequence[str] | str | None = None,
    fd: bool = False,
    verbose: bool = False,
    order: int = 1,
) -> JudgementView:
    """Run, check and judge every available variant of each example (default: all).

    **Arguments:**

    - `examples`: names of the project's examples, or one name (default: every one).
    - `variants`: a list of the variants to run and judge (default: all), each once.
    - `dtype`: `"both"` (float64, then float32 against its own float64 run),
      `"float64"` or `"float32"`.
    - `timeout`: seconds a variant's call may take (verdict `timeout`; default: the
      project's `[tool.weanj] timeout`, else 600; 0: no limit).
    - `fresh`: recompute every evaluation; by default one whose inputs, code and versions
      did not change since it was recorded is reused (docs/DESIGN.md, "Evaluation
      records"), and the judge judges it afresh.
    - `say`: where progress goes (stderr by default).
    - `save`: write each gradient to the store and the verdicts to
      `results/<example>/check.json` (what `weanj diff` and `weanj report` read).
    - `workers`: evaluate on a local Dask cluster of this many worker processes (0: in
      this process); `scheduler`: on the Dask cluster at this address (default: the
      project's, `$DASK_SCHEDULER_ADDRESS` or `[tool.weanj] scheduler`, else in this
      process). Needs `weanj[distributed]`; docs/distributed.md.
    - `processes`: evaluate the sharded (multi-device) variants under `jax.distributed`
      on this many local processes.
    - `require`: backends or variant names that must run (default: `[tool.weanj]
      require`); one that did not makes the check fail, naming it; a device kind
      (`"tpu"`): every run there must run (a platform limit then fails).
    - `device`: `"tpu"`, `"gpu"` or a list (`["cpu", "tpu"]`): each variant also runs
      there, judged against its family's CPU float64 reference (default: `[tool.weanj]
      devices`, else the CPU alone, whatever JAX's default device is; docs/devices.md);
      one named here must be present. `verbose`: progress per evaluation, not example.
    - `fd`: central differences beside every gradient check, as information (by default
      only beside one that is not ok: docs/gradient-checks.md); `order`: 2 checks every
      example at the second order too (docs/outputs.md; default 1, or an example's own).

    **Returns:** the `JudgementView` that `weanj check` prints: `.ok`, `.failures`,
    `judgement["EX"]` per example, and in a notebook the report's first tables.
    """
    # what is checked, where it runs, and what is said and kept of it
    checked = dict(variants=variants, dtype=dtype, require=require, fd=fd, order=order)
    where = dict(workers=workers, scheduler=scheduler, processes=processes, device=device)
    said = dict(timeout=timeout, fresh=fresh, say=say, save=save, verbose=verbose)
    checking(examples, **checked, **where, **said, listeners=[kept := Kept()])
    return kept.judgement


def checking(
    examples: Sequence[str] | str | None = None,
    *,
    variants: list[str] | tuple[str, ...] | None = None,
    dtype: str = "both",
    timeout: float | None = None,
    fresh: bool = False,
    say: Callable[[str], None] = say,
    save: bool = True,
    workers: int | None = None,
    scheduler: str | None = None,
    processes: int | None = None,
    require: Sequence[str] | None = None,
    device: Sequence[str] | str | None = None,
    fd: bool = False,
    verbose: bool = False,
    strict: bool = False,
    listeners: Sequence[Listener] = (),
    order: int = 1,
) -> Judgement:
    """`check`'s run, its events to `listeners` (the front end's: `weanj check` prints
    through `--format`'s, `weanj.check()` keeps the `Judgement`), each argument of
    `check` checked first; `strict` (`weanj check --strict`): a variant compared with
    nothing fails the check; **Returns:** the `Judgement`'s data (its exit code)."""
    from .. import _arguments as arg

    examples = arg.some(arg.names(examples, "examples", "check"), "examples", "check")
    variants = arg.some(arg.name_list(variants, "variants", "check"), "variants", "check")
    timeout = arg.time_limit(timeout, "timeout", "check")
    fresh, save = arg.flag(fresh, "fresh", "check"), arg.flag(save, "save", "check")
    fd, verbose = arg.flag(fd, "fd", "check"), arg.flag(verbose, "verbose", "check")
    say = arg.say_function(say, "say", "check")
    require = arg.name_list(require, "require", "check")
    refresh(say)  # the code on disk, said through the check's own lines
    cats = restricted(catalogs(examples), variants)
    if not cats:  # nothing checked is not a pass
        raise WeanjError(
            f"no examples to check in {project().describe()}: its example modules register none"
        )
    devices, absent = resolved_devices(device, project())  # a device named must be here
    every = None if examples else [c.name for c in catalogs(None)]
    how = dict(timeout=timeout, fresh=fresh, say=say, save=save, require=require, fd=fd)
    how["strict"] = arg.flag(strict, "strict", "check")
    if isinstance(order, bool) or order not in (1, 2):
        raise InputError(f"check: order must be 1 or 2 (the second order), got {order!r}")
    how["order"] = int(order)
    how.update(devices=devices, absent=absent, verbose=verbose, every_example=every)
    executor = _executor(workers, scheduler, processes)
    dtypes = dtypes_of(dtype)
    return check_run(cats, dtypes=dtypes, executor=executor, listeners=listeners, **how).judge()


def _executor(workers: Any, scheduler: Any, processes: Any):
    """The executor `weanj.check()`'s arguments ask for, each checked first."""
    from .. import _arguments as arg

    workers = arg.count(workers, "workers", "check", minimum=0)
    processes = arg.count(processes, "processes", "check", minimum=1)
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise InputError(f"check: scheduler must be a scheduler's address (str), got {scheduler!r}")
    return executor_for(workers, scheduler, project(), processes=processes)


def check_run(
    cats: list[Catalog], *, listeners: Sequence[Listener] = (), **options: Any
) -> CheckRun:
    """The live `CheckRun` of `weanj check` on these catalogs, its listeners registered:
    with `save`, the store writes and `check.json` first, then the front end's
    `listeners`; what `weanj.check()`, `weanj check` and `pytest --weanj` run. `strict`
    among the options: its `Judgement` fails on a variant compared with nothing."""
    from .._backends._placement import device_line

    devices = options.setdefault("devices", ("cpu",))
    absent = options.get("absent") or {}
    strict = options.pop("strict", False)
    here = places()
    run = CheckRun(cats, here, config=project(), **options)
    run.judgement.notes.append(device_line(devices, absent))  # where the runs were, once
    run.judgement.strict = strict  # a variant compared with nothing fails (`--strict`)
    if run.save:
        run.stream.listen(StoreWrites(here, run.records))
        run.stream.listen(CheckFiles(here))
    for listener in listeners:
        run.stream.listen(listener)
    return run
