"""What an evaluation computed beyond the loss and gradient, kept with its `Gradient`
(docs/outputs.md): the outputs, the outputs' Jacobian's dot-product numbers and
pullbacks, the Hessian-vector products, and what they spent (`_model._cost`)."""

from __future__ import annotations

import numpy as np

from ..._model import Gradient
from ..._model._beyond import pullback_names


def beyond_into(g: Gradient, outputs: dict[str, np.ndarray], beyond: dict | None) -> None:
    """`g` with the outputs held to the contract (`_judge._contract.checked_outputs`) and
    what the evaluation's call computed beyond them (`_calls.evaluation_call`): the
    Jacobian's numbers and its pullbacks `Jᵀ·w` (of the real wrt arrays), one backward
    per output counted under `jacobian`; the Hessian-vector products, one
    forward-over-reverse execution each (a forward and a backward) counted under `hvp`."""
    g.outputs = dict(outputs)
    if not beyond:
        return
    jacobian = beyond.get("jacobian") or {}
    g.jacobian = {
        k: (None if a is None else float(a), float(b), float(s))
        for k, (a, b, s) in jacobian.items()
    }
    if g.jacobian:
        g.cost.add("jacobian", 0, len(g.example.outputs))
    pulled = beyond.get("pullback")
    if pulled:  # the same backward's results (nothing more spent)
        names = [k for k in pullback_names(g.example) if k in pulled]
        g.pullback = {k: np.asarray(pulled[k], np.float64) for k in names}
    if beyond.get("hvp") is not None:
        g.hvp = {a: np.asarray(v, np.float64) for a, v in beyond["hvp"].items()}
        g.hvp_u = {a: np.asarray(v, np.float64) for a, v in beyond["hvp_u"].items()}
        executions = 2 * len(g.hvp)
        g.cost.add("hvp", executions, executions)


def second_order_asked(g: Gradient, order: int) -> bool:
    """Whether a reused evaluation lacks what a run of this `order` needs (its
    Hessian-vector products): then it is computed again."""
    return order >= 2 and isinstance(g, Gradient) and g.hvp is None
