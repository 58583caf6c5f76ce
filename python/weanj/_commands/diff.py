"""`weanj diff` and `weanj.diff()`: the store's files judged, running nothing.

The same case table and judge as `weanj check`, the variants' gradients read from their
store files instead of computed (`results/<example>/gradients/`, `gradients/float32/`),
with the recorded references and every other file of the store.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import WeanjError
from .._judge._verdict import CaseJudgement
from .._pipeline._cases import judge_plan, not_judged, read_plan
from .._pipeline._session import Session
from .._places import places
from .._registry import catalogs
from .._report._judgement import Judgement


def diff(examples: Sequence[str] | str | None = None) -> Judgement:
    """Judge every gradient file of each example (default: all) in the store.

    **Returns:** the `Judgement` that `weanj diff` prints (`--json`: its `to_json()`).
    """
    from .._arguments import names

    examples = names(examples, "examples", "diff")
    here = places()
    judgement = Judgement("diff")
    with Session() as session:
        for cat in catalogs(examples):
            try:
                p = read_plan(cat, here, live=False, checks=False)
            except WeanjError as e:
                judgement.examples[cat.name] = not_judged(cat, e)
                continue
            judgement.examples[cat.name] = judge_plan(p, session)
    judgement.dtypes = tuple(
        sorted({g.dtype for ej in judgement for g in ej.subjects.values()}, reverse=True)
    ) or ("float64",)
    return judgement


def pairs_to_draw(judgement: Judgement, *, recorded: bool = False) -> list[CaseJudgement]:
    """The pairs `--plot` draws: the failing ones and those differing at kinks; when none,
    every same-family pair (recorded references only when asked)."""
    from .._report._figures import chosen_pairs

    return [j for ej in judgement for j in chosen_pairs(ej, recorded=recorded)]
