"""`weanj check` and `weanj diff`: the case table of each example, judged.

`check` evaluates every variant available here on the shared inputs (float64 and, by
default, float32), saves each gradient to the store, runs the gradient checks (Taylor,
jvp) and judges every pair, together with the recorded references and the other files
of the store. `diff` runs nothing: it judges the files of the store. Both build the
same `Plan` (`_cases`) and ask the same judge; they differ only in where a variant's
gradient comes from.

A missing or broken inputs file stops only its own example: the others are judged and
printed, and the command exits with 2 (docs/DESIGN.md, "Command line").
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ._cases import Runner, Subject, SubjectFailed, judge_plan, plan
from ._errors import WeanjError, say
from ._io._store import gradient_path, write_gradient
from ._judge._verdict import ExampleJudgement
from ._model import DTYPES, Gradient
from ._registry import example as example_named
from ._registry import example_names
from ._watch import Watch


class _Progress:
    """`[3/29] 01-jacobi jax-jacobi … 1.2 s` on stderr, one line per evaluation."""

    def __init__(self, total: int, say: Callable = say):
        self.done, self.total, self.say = 0, total, say

    def __call__(self, s: Subject, result: Gradient | SubjectFailed, seconds: float) -> None:
        self.done += 1
        status = (
            "ok" if isinstance(result, Gradient) else ("timeout" if result.timed_out else "error")
        )
        if isinstance(result, Gradient) and not result.finite:
            status = "NaN/Inf"
        self.say(f"[{self.done}/{self.total}] {s.label}: {seconds:.1f} s, {status}")


def _save(result: Gradient | SubjectFailed) -> None:
    """A live run goes to its store file (NaN/Inf kept: the judge reports them)."""
    if isinstance(result, Gradient):
        write_gradient(result, gradient_path(result.example, result.variant, dtype=result.dtype))


def check_examples(
    names: list[str] | None = None,
    *,
    dtypes: tuple[str, ...] = DTYPES,
    timeout_s: float | None = None,
    say: Callable = say,
    save: bool = True,
) -> list[ExampleJudgement]:
    """Evaluate, save and judge every available variant of each example."""
    chosen = [example_named(n) for n in (names or example_names())]  # unknown names: at once
    if not chosen:  # nothing checked is not a pass
        from ._registry import project

        raise WeanjError(
            f"no examples to check in {project().describe()}: its example modules register none"
        )
    plans, results = [], []
    for ex in chosen:
        try:
            plans.append(plan(ex, live=True, dtypes=dtypes))
        except WeanjError as e:
            plans.append(None)
            results.append(ExampleJudgement(ex, None, dtypes=dtypes, error=str(e)))
    total = sum(1 for p in plans if p for s in p.subjects.values() if s.live and s.skip is None)
    progress = _Progress(total, say)
    watch = Watch(timeout_s=timeout_s, say=say)
    judged = {}
    for ex, p in zip(chosen, plans, strict=True):
        if p is None:
            continue
        t0 = time.perf_counter()
        runner = Runner(p, watch=watch)
        for label, s in p.subjects.items():
            if s.live and s.skip is None:
                started = time.perf_counter()
                try:
                    result = runner.subject(label)
                except SubjectFailed as e:
                    result = e
                progress(s, result, time.perf_counter() - started)
                if save:
                    _save(result)
        judged[ex.name] = judge_plan(p, runner)
        judged[ex.name].seconds = time.perf_counter() - t0
    if watch.abandoned:
        say(
            f"note: {len(watch.abandoned)} call(s) that timed out still run in the background: "
            + ", ".join(watch.abandoned)
        )
    order = {ex.name: i for i, ex in enumerate(chosen)}
    results.extend(judged.values())
    return sorted(results, key=lambda ej: order[ej.name])


def diff_store(example: str) -> ExampleJudgement:
    """Judge every gradient file of an example in the store (produced and recorded)."""
    p = plan(example, live=False, checks=False)
    return judge_plan(p, Runner(p))


def record_references(names: list[str] | None = None) -> list:
    """Write each family's reference into `results/<example>/recorded/`: its first
    variant available here, on the shared inputs (`pytest --weanj --weanj-record`); an
    earlier reference is kept aside, not lost."""
    from ._io._inputs import read_inputs
    from ._io._store import check_target
    from ._registry import families, variants
    from ._run import evaluate

    written = []
    for name in names or example_names():
        inputs = read_inputs(name)
        available = set(variants(name))
        for members in families(name).values():
            runnable = [n for n in members if n in available]
            if not runnable:
                continue
            g = evaluate(name, runnable[0], inputs=inputs)
            target = check_target(
                gradient_path(name, runnable[0], recorded=True), g, inputs.key(g.dtype), force=True
            )
            written.append(write_gradient(g, target, force=True))
    return written
