"""`weanj diff [EX [RUN...]]` and `weanj.diff()`: the store's files judged, running nothing.

The same run as `weanj check` in its store mode (`CheckRun.of_store`): the same case
table and judge, the variants' gradients read from their store files instead of computed
(`results/<example>/gradients/`, `gradients/float32/`), with the recorded references and
every other file of the store; the last check's faults and gradient checks from its
`check.json`. Runs named (as the views name them, `V@float32`) narrow the judgement to
their files and the pairs among them.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import InputError
from .._judge._contract import Fault
from .._judge._verdict import ExampleJudgement
from .._model._verdicts import FAULTS, GRADIENT_CHECKS, CaseKind, Verdict
from .._pipeline.engine._run import CheckRun
from .._places import places
from .._registry import catalogs
from .._report._judgement import JudgementView, Kept
from .._report._lines import file_name
from .._run_names import stored_labels


def diff(
    examples: Sequence[str] | str | None = None, *, runs: Sequence[str] | None = None
) -> JudgementView:
    """Judge every gradient file of each example (default: all) in the store.

    - `runs`: only these stored runs of the one example named, and the pairs of the case
      table among them, each named as the views name it (`V`, `V@float32`, a recorded
      reference `recorded/V`): `weanj diff EX V V@float32` judges V's float32 file
      against its float64 file, as `weanj check` judged them.

    **Returns:** the `JudgementView` that `weanj diff` prints (`--json`: its `to_json()`).
    """
    from .._arguments import names, some

    examples = some(names(examples, "examples", "diff"), "examples", "diff")
    cats = catalogs(examples)
    if runs and len(cats) != 1:
        raise InputError(f"diff: runs are named for one example, got {len(cats)} examples")
    kept = Kept()
    run = CheckRun.of_store(cats, places(), listeners=[kept], faults=last_faults)
    for ej in run:
        if ej.judged:
            if runs:
                only_runs(ej, stored_labels(cats[0], runs, _stored(ej)))
            ej.notes.append(checks_note(ej.name, ej.inputs))
    run.finish()
    return kept.judgement


def _stored(ej: ExampleJudgement) -> list[str]:
    """The labels of the runs the store holds for the example (judged, or only its file)."""
    files = [file_name(j) for j in ej.of_kind(CaseKind.FILE)]
    return [*ej.subjects, *ej.skipped, *ej.unavailable, *files]


def only_runs(ej: ExampleJudgement, labels: list[str]) -> None:
    """The example's judgement narrowed to the runs `labels` (`diff EX RUN...`): their
    files and the pairs among them, with a line saying so."""
    keep = set(labels)
    ej.judgements = [j for j in ej.judgements if j.subjects and set(j.subjects) <= keep]
    ej.subjects = {k: g for k, g in ej.subjects.items() if k in keep}
    ej.skipped = {k: why for k, why in ej.skipped.items() if k in keep}
    ej.unavailable = {k: why for k, why in ej.unavailable.items() if k in keep}
    pairs = ej.of_kind(CaseKind.PAIR)
    among = "" if pairs else "; no pair of the case table among them"
    ej.notes.append(f"  only the runs named: {', '.join(labels)}{among}")


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
    checks = [j for j in ((found.data or {}).get("checks") or []) if isinstance(j, dict)]
    present = {j.get("kind") for j in checks}  # a check of some examples only: where it is
    kinds = ", ".join(
        k.header for k in GRADIENT_CHECKS if not getattr(k, "optional", False) or k in present
    )
    if not found.current:
        return f"  gradient checks ({kinds}): not judged by diff; {found.note}"
    failed = [str(j.get("summary") or j.get("case")) for j in checks if j.get("failed")]
    head = f"  gradient checks ({kinds}): judged by `weanj check`, not by diff ({where})"
    if not failed:
        return f"{head}: all passed or skipped"
    return f"{head}: {len(failed)} failed: " + "; ".join(failed)
