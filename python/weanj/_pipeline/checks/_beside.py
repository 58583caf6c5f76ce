"""What every gradient check of a variant keeps beside its result: its numbers in the
evaluation record (recalled where reused, kept where computed), and central differences
beside a check that is not ok (or `--fd`), as information (docs/DESIGN.md §9.3).
"""

from __future__ import annotations

from ..._judge._information import CentralDifferences, information_fields
from ..._model import Gradient, Inputs
from ..._model._verdicts import CaseKind, Verdict
from ..session._runs import loss_along
from ._remainders import counted, fd_check

# How the checks gather their evidence, in a check's record key (2: each wrt array on its
# own; a record of the shared evidence before is recomputed, not reused)
EVIDENCE = 2


def recall(session, g: Gradient, kind: CaseKind, array: str) -> dict | None:
    """The numbers an evaluation record keeps of `g`'s check of `array`, or None."""
    records = getattr(session, "records", None)
    return None if records is None else records.recall_check(g.of, g.dtype, kind, array)


def keep(session, g: Gradient, kind: CaseKind, array: str, numbers: dict) -> None:
    """`g`'s check of `array`'s numbers into its evaluation record (where one is kept)."""
    records = getattr(session, "records", None)
    if records is not None:
        records.keep_check(g.of, g.dtype, kind, array, numbers)


def with_fd(session, inputs: Inputs, g: Gradient, array: str, j) -> bool:
    """Central differences beside a check that is not ok, or where asked (`--fd`, read in
    `Session.options`), as information (`fd_information`); **Returns** whether they were
    added now."""
    failed = j.verdict.failing and j.verdict != Verdict.TIMEOUT  # its numbers say not ok
    if j.fd is not None or not (session.options.fd or failed):
        return False
    if g.of is None or g.of.unavailable_reason() is not None:
        return False
    j.fd = fd_information(session, inputs, g, array)
    return True


def fd_information(session, inputs: Inputs, g: Gradient, array: str) -> CentralDifferences:
    """Central differences of `g`'s `array` under the example's `FDPolicy`, inside its
    kink mask, as information beside a check that is not ok (or where asked: `--fd`);
    computed once per session, its losses counted under `fd`."""

    def compute() -> CentralDifferences:
        ex = inputs.example
        mask = session.masks(ex, inputs)[array]
        fd = ex.fd
        loss = loss_along(session, g.of, inputs, array, g.cost, "fd")
        x = inputs.run_arrays("float64")[array]
        with session.phase(f"{ex.name} {g.variant}: escalated: central differences of {array}"):
            each = counted(loss, session.step, f"loss {{}} of {2 * fd.directions}")
            inside = None if mask.all() else mask
            error = fd_check(each, x, g.gradients[array], n=fd.directions, h=fd.step, mask=inside)
        return CentralDifferences(error, fd.step, fd.threshold)

    return session.once(("fd", id(g), array), compute)


def information_beside(numbers: dict, allowed: set[str]) -> bool:
    """A check record's numbers: its result, and beside it an `info` mapping of the kinds
    `allowed`, each as the judge writes it (`_judge._information`)."""
    if set(numbers) != {"result", "info"} or not isinstance(numbers["info"], dict):
        return False
    if not set(numbers["info"]) <= allowed:
        return False
    try:
        information_fields(numbers["info"])
    except ValueError:
        return False
    return True
