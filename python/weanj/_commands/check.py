"""`weanj check` and `weanj.check()`: run every available variant of each example on its
shared inputs (float64 and, by default, float32), save each gradient to the store, run
the gradient checks (Taylor, jvp) and judge every case of the case table, together with
the recorded references and the other files of the store.

An example whose inputs cannot be read is not judged (the others are): the command then
exits 2, having printed the others' verdicts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from .._errors import InputError, WeanjError, say
from .._io import _jax_cache, _store
from .._judge._contract import Fault
from .._judge._suspects import suspects as find_suspects
from .._model import DTYPES, Catalog, Gradient
from .._pipeline._cases import Plan, judge_plan, not_judged, read_plan
from .._pipeline._executors import executor_for
from .._pipeline._records import Records
from .._places import Places, places
from .._registry import catalogs, project
from .._report._judgement import Judgement
from .._report._verdicts_file import write_check_verdicts
from .._x64 import x64_configuration

DTYPE_CHOICES = ("both", "float64", "float32")


def dtypes_of(dtype: str) -> tuple[str, ...]:
    """`--dtype`: float32 is always judged against the float64 references, so it brings
    float64 along; float64 alone leaves float32 out."""
    if dtype not in DTYPE_CHOICES:
        raise InputError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}, got {dtype!r}")
    return ("float64",) if dtype == "float64" else DTYPES


def restricted(cats: list[Catalog], variants: Sequence[str] | None) -> list[Catalog]:
    """The catalogs with only the variants named (each name must exist in one of them)."""
    if not variants:
        return cats
    wanted = set(variants)
    known = {v.name for c in cats for v in c.variants}
    unknown = sorted(wanted - known)
    if unknown:
        from .._errors import UnknownNameError, with_list

        raise UnknownNameError(
            with_list(f"unknown variant(s) {', '.join(unknown)}", "known variants", sorted(known))
        )
    return [
        replace(
            c,
            variants=tuple(v for v in c.variants if v.name in wanted),
            left_out=frozenset(v.name for v in c.variants if v.name not in wanted),
        )
        for c in cats
    ]


class _Progress:
    """`[3/29] 01-jacobi jax-jacobi: 1.2 s, ok` on stderr, one line per evaluation."""

    def __init__(self, total: int, say: Callable[[str], None]):
        self.done, self.total, self.say = 0, total, say
        self.example = ""

    def __call__(self, label: str, found: Gradient | Fault, seconds: float, reused: bool) -> None:
        self.done += 1
        status = "ok" if isinstance(found, Gradient) else found.verdict
        how = "reused" if reused else f"{seconds:.1f} s"
        self.say(f"[{self.done}/{self.total}] {self.example} {label}: {how}, {status}")


def check(
    examples: Sequence[str] | str | None = None,
    *,
    variants: Sequence[str] | None = None,
    dtype: str = "both",
    timeout: float | None = None,
    fresh: bool = False,
    say: Callable[[str], None] = say,
    save: bool = True,
    workers: int | None = None,
    scheduler: str | None = None,
    processes: int | None = None,
    require: Sequence[str] | None = None,
) -> Judgement:
    """Run, check and judge every available variant of each example (default: all).

    **Arguments:**

    - `examples`: names of the project's examples (default: every one).
    - `variants`: only these variants (default: all).
    - `dtype`: `"both"` (float64, then float32 against the float64 references),
      `"float64"` or `"float32"`.
    - `timeout`: seconds a variant's call may take (verdict `timeout`).
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
      require`); one that did not makes the check fail, naming it.

    **Returns:** the `Judgement` that `weanj check` prints: `.ok`, `.failures`,
    `judgement["EX"]` per example, and in a notebook the report's first tables.
    """
    from .. import _arguments as arg

    examples = arg.names(examples, "examples", "check")
    variants = arg.names(variants, "variants", "check")
    timeout = arg.seconds(timeout, "timeout", "check")
    fresh, save = arg.flag(fresh, "fresh", "check"), arg.flag(save, "save", "check")
    cats = restricted(catalogs(examples), variants)
    if not cats:  # nothing checked is not a pass
        raise WeanjError(
            f"no examples to check in {project().describe()}: its example modules register none"
        )
    here = places()
    executor = executor_for(workers, scheduler, project(), processes=processes)
    _jax_cache.enable()
    clock = _jax_cache.clock()
    t0 = time.perf_counter()
    dtypes = dtypes_of(dtype)
    judgement = Judgement("check", dtypes=dtypes)
    plans: dict[str, Plan | WeanjError] = {}
    for cat in cats:
        try:
            plans[cat.name] = read_plan(cat, here, live=True, dtypes=dtypes)
        except WeanjError as e:
            plans[cat.name] = e
    total = sum(
        1
        for p in plans.values()
        if isinstance(p, Plan)
        for s in p.subjects.values()
        if s.live and s.skip is None
    )
    progress = _Progress(total, say)
    records = Records(here, project(), fresh=fresh) if save else None
    with executor.session(
        plans, timeout=timeout, say=say, progress=progress, shown_path=here.shown, records=records
    ) as session:
        for cat in cats:
            p = plans[cat.name]
            if not isinstance(p, Plan):
                judgement.examples[cat.name] = not_judged(cat, p, dtypes)
                continue
            started = time.perf_counter()
            progress.example = cat.name
            ej = judge_plan(p, session)
            ej.seconds = time.perf_counter() - started
            if save:
                _save(ej, here)
                records.flush()
                ej.reuse, line = records.summary(cat.name)
                if line:
                    ej.notes.append(line)
            judgement.examples[cat.name] = ej
    if save:
        write_check_verdicts(list(judgement), here)
    judgement.seconds = time.perf_counter() - t0
    if records is not None:
        judgement.notes.extend(records.notes)
        reused, total = len(records.reused), len(records.reused) + len(records.recomputed)
        if total:
            judgement.notes.append(
                f"evaluations: reused {reused} of {total} (weanj check --fresh recomputes them all)"
            )
    required = set(project().require if require is None else require)
    judgement.did_not_run = did_not_run(cats, required)
    judgement.suspects = [(ej.name, s) for ej in judgement if ej.judged for s in find_suspects(ej)]
    if examples is None or not examples:
        from .._pipeline._stale import orphans_note

        orphans = orphans_note(here, [c.name for c in catalogs(None)])
        if orphans:
            judgement.notes.append(orphans)
    judgement.notes.append(clock.summary())
    return judgement


def _short(why: str) -> str:
    """The first clause of why a variant is unavailable (`no Julia found`)."""
    for mark in (" (", "; ", ": "):
        why = why.split(mark)[0]
    return why.strip()


def did_not_run(cats: list[Catalog], required: set[str]) -> list[tuple[str, str, bool]]:
    """`[(variant, why, required)]`: the Julia variants and family references that could
    not run here (what an `ok` leans on without them), and any variant `required` names by
    name or backend."""
    out = []
    for cat in cats:
        firsts = {members[0].name for members in cat.families().values()}
        for v in cat.variants:
            why = v.unavailable_reason()
            if why is None:
                continue
            needed = v.name in required or v.backend in required
            if needed or v.backend == "julia" or v.name in firsts:
                out.append((v.name, _short(why), needed))
    return out


def _save(ej, here: Places) -> None:
    """Each live run goes to its store file (NaN/Inf and faults are not saved: the
    verdicts say what happened)."""
    for g in ej.subjects.values():
        if g.source == "run":
            if g.of is not None and g.of.backend != "julia":  # a reused evaluation too
                g.extra.setdefault("x64", x64_configuration(g.of).describe())
            target = here.gradient(ej.name, g.variant, g.dtype)
            _store.write_gradient(g, target, here)
