"""`weanj diff` and `weanj.diff()`: the store's files judged, running nothing.

The same run as `weanj check` in its store mode (`CheckRun.of_store`): the same case
table and judge, the variants' gradients read from their store files instead of computed
(`results/<example>/gradients/`, `gradients/float32/`), with the recorded references and
every other file of the store; the last check's faults and gradient checks from its
`check.json`.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._judge._contract import Fault
from .._judge._verdict import CaseJudgement
from .._model._verdicts import FAULTS, GRADIENT_CHECKS, Verdict
from .._pipeline._run import CheckRun
from .._places import places
from .._registry import catalogs
from .._report._judgement import Judgement


def diff(examples: Sequence[str] | str | None = None) -> Judgement:
    """Judge every gradient file of each example (default: all) in the store.

    **Returns:** the `Judgement` that `weanj diff` prints (`--json`: its `to_json()`).
    """
    from .._arguments import names

    examples = names(examples, "examples", "diff")
    run = CheckRun.of_store(
        catalogs(examples), places(), judgement=Judgement("diff"), faults=last_faults
    )
    for ej in run:
        if ej.judged:
            ej.notes.append(checks_note(ej.name, ej.inputs))
    return run.finish()


def last_faults(cat, inputs) -> dict[str, Fault]:
    """`{label: Fault}`: the variants whose last evaluation (by `weanj check`, on these
    inputs) was a fault; a fault saves no file, so only the check's verdicts say it."""
    from .._report._verdicts_file import read_check_verdicts

    found = read_check_verdicts(cat.name, inputs.key("float64"), places())
    if not found.current:
        return {}
    names = {v.name for v in cat.variants}
    out = {}
    for label, f in (found.data.get("faults") or {}).items():
        if not isinstance(f, dict) or label.split("@")[0] not in names:
            continue
        verdict = f.get("verdict")
        if verdict in FAULTS and isinstance(f.get("reason"), str):  # as the check judged it
            out[label] = Fault(Verdict.parse(verdict), f["reason"], str(f.get("command") or ""))
    return out


def checks_note(example: str, inputs) -> str:
    """One line: diff judges stored gradients only; where the gradient checks are, and
    which of them the last check failed."""
    from .._report._verdicts_file import read_check_verdicts

    here = places()
    found = read_check_verdicts(example, inputs.key("float64"), here)
    where = here.shown(found.path)
    kinds = ", ".join(k.header for k in GRADIENT_CHECKS)
    if not found.current:
        return f"  gradient checks ({kinds}): not judged by diff; {found.note}"
    failed = [
        str(j.get("summary") or j.get("case"))
        for j in found.data.get("checks") or []
        if isinstance(j, dict) and j.get("failed")
    ]
    head = f"  gradient checks ({kinds}): judged by `weanj check`, not by diff ({where})"
    if not failed:
        return f"{head}: all passed or skipped"
    return f"{head}: {len(failed)} failed: " + "; ".join(failed)


def pairs_to_draw(judgement: Judgement, *, recorded: bool = False) -> list[CaseJudgement]:
    """The pairs `--plot` draws: the failing ones and those differing at kinks; when none,
    every same-family pair (recorded references only when asked)."""
    from .._report._figures import chosen_pairs

    return [j for ej in judgement for j in chosen_pairs(ej, recorded=recorded)]
