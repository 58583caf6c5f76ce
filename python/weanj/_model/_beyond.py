"""What an example may declare beyond its loss and gradient (docs/outputs.md): named
forward outputs, and the second order.

- **Outputs** (`Example(outputs=("uT",))`): each variant's loss returns `(loss, {"uT":
  array})`, JAX's `has_aux` convention, and a Julia kernel returns its outputs beside its
  loss. They come out of the evaluation's own call and are judged like gradients, each
  output elementwise (case kind `output`).
- **The second order** (`Example(order=2)`, or `weanj check --order 2`): each variant's
  Hessian-vector product along each `wrt` array's seeded direction, compared across
  variants (case kind `hvp`), with its second-order Taylor test and the symmetry check.

Each `wrt` array is judged on its own evidence, as the first-order checks judge it: the
Hessian-vector product of an array is its own block, `H_aa·v_a` (the array moves along
its direction, the others stay), which is what DifferentiationInterface's `hvp` computes
with the other arrays as constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import DefinitionError
from ._names import NAME

ORDERS = (1, 2)
# how `Gradient.noise` and `noise_entries` name an output's rounding level beside the
# gradient arrays' (`Example` keeps outputs and arrays apart by name; a prefix keeps them
# apart in every record and file all the same)
OUTPUT = "output:"


def checked_outputs(example: str, outputs: Any, arrays: Sequence[str]) -> tuple[str, ...]:
    """`outputs` as a tuple of distinct names (each a safe name, none an array's: a case
    id and a record member carry it), or a `DefinitionError` naming the example."""
    found = (outputs,) if isinstance(outputs, str) else outputs
    try:
        found = tuple(found)
    except TypeError:
        found = (outputs,)
    bad = [o for o in found if not isinstance(o, str) or not NAME.match(o) or "::" in o]
    if bad or len(set(found)) != len(found):
        raise DefinitionError(
            f"example {example}: outputs must be distinct names (letters, digits and . _ + -), "
            f"got {outputs!r}"
        )
    clash = sorted(set(found) & set(arrays))
    if clash:
        raise DefinitionError(
            f"example {example}: output {clash[0]!r} has the name of an array; name it "
            f"apart (an output is what the kernel computes, e.g. {clash[0]}T)"
        )
    return found


def checked_order(example: str, order: Any, complex_wrt: Sequence[str]) -> int:
    """`order` (1 or 2), or a `DefinitionError`; the second order is the real arrays'."""
    if isinstance(order, bool) or order not in ORDERS:
        raise DefinitionError(f"example {example}: order must be 1 or 2, got {order!r}")
    if order == 2 and complex_wrt:
        raise DefinitionError(
            f"example {example}: order=2 differentiates real arrays only; {complex_wrt[0]} "
            "is complex"
        )
    return int(order)


def order_of(example: Any, asked: int = 1) -> int:
    """The order a run checks an example at: its own, or the run's (`--order 2`) where
    higher; a complex `wrt` array keeps the first order."""
    own = getattr(example, "order", 1)
    if asked > own and any(example.array(a).kind == "complex" for a in example.wrt_names):
        return own
    return max(own, asked)


def applies(kind: Any, example: Any, order: int) -> bool:
    """Whether a gradient check of `kind` is one of the example's at this run's `order`
    (`order_of`): the second-order checks at order 2, the dot-product test where the
    example declares outputs, every other check always."""
    from ._verdicts import CaseKind

    if kind in (CaseKind.TAYLOR2, CaseKind.SYMMETRY):
        return order_of(example, order) >= 2
    if kind == CaseKind.DOT:
        return bool(example.outputs)
    return True


def pullback_names(example: Any) -> list[str]:
    """The names of an example's pullbacks, `OUTPUT::ARRAY` per output and real `wrt`
    array (`Gradient.pullback`'s keys, a `pullback` case's): `Jᵀ·w`, the output's seeded
    weight pulled back to the array. A complex array has none (its cotangent's convention
    is a backend's own)."""
    real = [a for a in example.wrt_names if example.array(a).kind != "complex"]
    return [f"{o}::{a}" for o in getattr(example, "outputs", ()) for a in real]


def split_evaluated(example: Any, first: Any) -> tuple[Any, dict[str, Any]]:
    """`(loss, outputs)` from what a backend's evaluation returned first: the loss itself,
    or, for an example that declares outputs, the pair `(loss, {name: array})` (JAX's
    `has_aux` convention); `(loss, None)` from a backend that computes no outputs (then
    None). A pair that is not that is returned as it is, with no outputs, for the
    contract to refuse (`_judge._contract`)."""
    if not getattr(example, "outputs", ()):
        return first, {}
    if isinstance(first, (tuple, list)) and len(first) == 2 and isinstance(first[1], dict):
        return first[0], dict(first[1])
    if isinstance(first, (tuple, list)) and len(first) == 2 and first[1] is None:
        return first[0], None  # a backend that computes no outputs (a `functions=` of its own)
    return first, {}
