"""`weanj check` and `weanj.check()`: run every available variant of each example on its
shared inputs (float64 and, by default, float32), save each gradient to the store, run
the gradient checks (Taylor, jvp) and judge every case of the case table, together with
the recorded references and the other files of the store.

An example whose inputs cannot be read is not judged (the others are): the command then
exits 2, having printed the others' verdicts.

The run itself is `_pipeline.engine._run.CheckRun`; this module resolves the names (the
examples, the variants, the executor) and hands it the catalogs and the options
(`_check_options.CheckOptions`, each declared once: the flags, `weanj.check()`'s keywords
and `pytest --weanj`'s options are made from the one declaration), the store writes and
the writer of `check.json` (`check_run`, which `pytest --weanj` uses too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .._check_options import DEFAULTS, CheckOptions
from .._errors import WeanjError, say
from .._judge._events import Listener
from .._judge._judgement import Judgement
from .._model import Catalog
from .._pipeline.engine._run import CheckRun
from .._pipeline.executors._executors import executor_for
from .._pipeline.records._store_writes import StoreWrites
from .._places import places
from .._registry import catalogs, project, refresh
from .._registry._names import unknown_variants
from .._report._judgement import JudgementView, Kept
from .._report._verdicts_file import CheckFiles


def devices_of(device: Sequence[str] | None, config: Any = None) -> tuple[str, ...]:
    """The devices under test: `device` (kinds `CheckOptions` checked), else
    `[tool.weanj] devices`, else the CPU alone (whatever JAX's default device is). The
    CPU always comes first: every device run is judged against its family's CPU float64
    reference."""
    asked = list(device or ()) or list(getattr(config, "devices", ()) or ())
    return ("cpu", *dict.fromkeys(d for d in asked if d != "cpu"))


def resolved_devices(
    device: Sequence[str] | None, config: Any = None
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
    say: Callable[[str], None] = say,
    **options: Any,
) -> JudgementView:
    """Run, check and judge every available variant of each example (default: all).

    **Arguments:**

    - `examples`: one example's name, or a list of them (default: every registered one).
    - `say`: where progress and notes go (default: stderr).
    - `**options`: the options of a check, each by its name (`fd=True`, `variants=[...]`,
      `dtype="float64"`, `timeout=60`, `device=["cpu", "tpu"]`, `order=2`, `save=False`,
      ...): the same options as `weanj check`'s flags and `pytest --weanj`'s, declared
      once ([the check's options](reference/options.md)); a wrong
      name or value is one line naming it. `variants`: only these variants, run and
      judged (the others' stored files are left aside). `dtype`: `"both"` (default:
      float64, then float32 against its own float64 run), `"float64"` or `"float32"`.
      `timeout`: seconds per variant's call (0: no limit; default `[tool.weanj] timeout`,
      else 600). `fresh`: recompute every evaluation. `save`: save each gradient to the
      store and write `results/EX/check.json` (default True). `require`: backend or
      variant names that must run here (default `[tool.weanj] require`). `workers`,
      `scheduler`, `processes`: where the evaluations run (a local Dask cluster of N
      workers, a Dask scheduler's address, jax.distributed processes for the sharded
      variants; docs/distributed.md). `device`: the devices under test (default
      `[tool.weanj] devices`, else the CPU alone; docs/devices.md); one named here must
      be present. `fd`: central differences beside every gradient check, as information.
      `order`: 2 checks every example at the second order too (docs/outputs.md).
      `strict`: a variant compared with nothing fails the check. `verbose`: progress per
      evaluation, not example.

    **Returns:** the `JudgementView` that `weanj check` prints: `.ok`, `.failures`,
    `judgement["EX"]` per example, and in a notebook the report's first tables.
    """
    asked = CheckOptions.of("check", **options)
    checking(examples, asked, say=say, listeners=[kept := Kept()])
    return kept.judgement


def checking(
    examples: Sequence[str] | str | None,
    options: CheckOptions = DEFAULTS,
    *,
    say: Callable[[str], None] = say,
    listeners: Sequence[Listener] = (),
) -> Judgement:
    """`check`'s run, its events to `listeners` (the front end's: `weanj check` prints
    through `--format`'s, `weanj.check()` keeps the `Judgement`); `options.strict`: a
    variant compared with nothing fails the check; **Returns:** the `Judgement`'s data
    (its exit code)."""
    from .. import _arguments as arg

    examples = arg.some(arg.names(examples, "examples", "check"), "examples", "check")
    say = arg.say_function(say, "say", "check")
    refresh(say)  # the code on disk, said through the check's own lines
    cats = restricted(catalogs(examples), options.variants)
    if not cats:  # nothing checked is not a pass
        raise WeanjError(
            f"no examples to check in {project().describe()}: its example modules register none"
        )
    every = None if examples else [c.name for c in catalogs(None)]
    run = check_run(cats, options, listeners=listeners, say=say, every_example=every)
    return run.judge()


def check_run(
    cats: list[Catalog],
    options: CheckOptions = DEFAULTS,
    *,
    listeners: Sequence[Listener] = (),
    **how: Any,
) -> CheckRun:
    """The live `CheckRun` of `weanj check` on these catalogs, its listeners registered:
    with `options.save`, the store writes and `check.json` first, then the front end's
    `listeners`; what `weanj.check()`, `weanj check` and `pytest --weanj` run (`how`:
    `CheckRun`'s `say`, `every_example`). Where the evaluations run is asked of the
    options (`workers`, `scheduler`, `processes`; none: in this process). `strict`: its
    `Judgement` fails on a variant compared with nothing."""
    from .._backends._placement import device_line

    config = project()
    devices, absent = resolved_devices(options.device, config)  # a device named: here
    executor = executor_for(options.workers, options.scheduler, config, processes=options.processes)
    run = CheckRun(
        cats, places(), options, executor, config=config, devices=devices, absent=absent, **how
    )
    run.judgement.notes.append(device_line(run.devices, run.absent))  # where the runs were
    run.judgement.strict = options.strict  # a variant compared with nothing fails
    if run.save:
        run.stream.listen(StoreWrites(run.places, run.records))
        run.stream.listen(CheckFiles(run.places))
    for listener in listeners:
        run.stream.listen(listener)
    return run
