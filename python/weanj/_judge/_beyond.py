"""Outputs, their pullbacks and Hessian-vector products of two subjects, judged as a
pair's gradient is (docs/outputs.md): the same comparison under the same tolerance
policy, its floors from the runs' rounding levels, the regions where they part ways in
both index bases, a declared difference held to its declaration.

The judge compares a subject's outputs (or its pullbacks, its Hessian-vector products)
through a view of it whose arrays they are (`compared_view`): each output with its own
rounding level, no loss (the loss is the pair's gradient case's), so every rule and
every view of a pair serves them unchanged.
"""

from __future__ import annotations

import dataclasses

from .._model import Gradient
from .._model._beyond import OUTPUT
from .._model._verdicts import CaseKind
from ._verdict import CaseJudgement, judge_pair, skipped


def _of_outputs(levels: dict | None) -> dict | None:
    if levels is None:
        return None
    return {k[len(OUTPUT) :]: v for k, v in levels.items() if k.startswith(OUTPUT)}


def compared_view(g: Gradient, kind: CaseKind) -> Gradient:
    """`g` as a case of `kind` compares it: its outputs (an `output` case) or its
    Hessian-vector products along each array's jvp direction (an `hvp` case), or its
    outputs' pullbacks `Jᵀ·w` by wrt array (a `pullback` case, `uT::x`), in the place of
    its gradient arrays, with their rounding levels (the outputs': measured with the
    gradient's, `output:NAME`; the products' and pullbacks': none, the relative tolerance
    alone), and no loss; `g` itself for any other case."""
    if kind == CaseKind.OUTPUT:
        arrays, noise = dict(g.outputs), _of_outputs(g.noise) or {}
        entries, precision = _of_outputs(g.noise_entries) or {}, _of_outputs(g.precision_level)
    elif kind == CaseKind.HVP:
        arrays, noise, entries, precision = dict(g.hvp or {}), {}, {}, None
    elif kind == CaseKind.PULLBACK:
        arrays, noise, entries, precision = dict(g.pullback or {}), {}, {}, None
    else:
        return g
    if "loss" in g.noise and noise:
        noise = {**noise, "loss": g.noise["loss"]}
    return dataclasses.replace(
        g,
        gradients=arrays,
        loss=None,
        noise=noise,
        noise_entries=entries,
        precision_level=precision,
    )


def missing(g: Gradient, kind: CaseKind, name: str) -> str | None:
    """Why `g` has nothing to compare on this case (a file written without outputs, a run
    whose second order was refused), or None."""
    if kind == CaseKind.OUTPUT and name not in g.outputs:
        why = "a file written without them" if g.source != "run" else "its backend returns none"
        return f"{g.label} has no output {name} ({why})"
    if kind == CaseKind.HVP and (g.hvp is None or name not in g.hvp):
        return f"{g.label} has no Hessian-vector products (its second order was not computed)"
    if kind == CaseKind.PULLBACK and (g.pullback is None or name not in g.pullback):
        why = "its backend computes none" if g.source == "run" else "not kept in its file"
        return f"{g.label} has no pullback Jᵀw of {name.replace('::', ' by ')} ({why})"
    return None


def judge_beyond(
    case: str,
    kind: CaseKind,
    a: Gradient,
    b: Gradient,
    name: str,
    *,
    info: bool = False,
    expected: tuple = (),
    arrays=None,
    rounding: bool = True,
) -> CaseJudgement:
    """`b` against the reference `a` on one output (or one array's Hessian-vector
    product), by the pair's rule (`judge_pair`) on their views (`compared_view`). A
    declaration holds an output case where it names that output (`Expected(array="uT")`):
    one of the whole pair, or of a gradient array, is the gradient's."""
    for g in (a, b):
        why = missing(g, kind, name)
        if why is not None:
            fields = {"family": a.family, "subjects": (a.label, b.label), "array": name}
            return skipped(case, kind, f"not compared: {why}", **fields)
    held = tuple(e for e in expected if kind == CaseKind.OUTPUT and e.array == name)
    j = judge_pair(
        case,
        compared_view(a, kind),
        compared_view(b, kind),
        name,
        info=info,
        expected=held,
        arrays=arrays,
        rounding=rounding,
    )
    return dataclasses.replace(j, kind=kind)
