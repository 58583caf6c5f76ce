"""Which family members may lend their forward mode to a variant that has none (a
`custom_vjp`, an Enzyme-JAX variant), for its jvp check (docs/DESIGN.md §9.2).

A borrowed forward mode is only as good as its lender: a member that computes another
function (a float32 computation inside a float64 program, a wrong port) pushes forward
its own derivative, and the borrower's correct gradient would fail against it. So the
lenders are chosen by the rule that chooses whom the judge trusts in a failing family
(`_judge._suspects.trusted_group`): the family's float64 members that ran, joined where
their pairs agree on every gradient array, the largest group (on a tie the one holding
the family's first member that ran) trusted. A member outside it, or at fault, lends
nothing, and the jvp check says which were left aside and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..._judge._contract import Fault
from ..._judge._suspects import agrees, trusted_group
from ..._model import Catalog, Gradient, Inputs, Variant
from ._pair_rule import judge_pair_of


class LeftToTheClient(Exception):
    """A check a Dask worker leaves to the client (it is computed there, in-process)."""


AT_FAULT = "at fault (its gradient differs from the family's trusted members)"


@dataclass
class Lenders:
    """The members that may lend their forward mode (family order), and `{name: why}`
    of those left aside."""

    members: list[Variant] = field(default_factory=list)
    aside: dict[str, str] = field(default_factory=dict)


def lenders(session: Any, catalog: Catalog, inputs: Inputs, borrower: Variant) -> Lenders:
    """The members of `borrower`'s family that may lend it their forward mode (module
    docstring): its float64 CPU runs in this session, their pairs judged as the case
    table judges them (with the family's declarations). A session that may not evaluate
    the family (a Dask worker's) raises `LeftToTheClient`: the client, which has the
    family's runs, checks it."""
    if not getattr(session, "family_here", True):
        raise LeftToTheClient(f"the lender of {borrower.name}'s forward mode")
    family = catalog.families().get(borrower.family, [])
    ran: dict[str, Gradient] = {}
    found = Lenders()
    for v in family:
        if v.unavailable_reason() is not None:
            continue
        outcome = session.outcome(v, inputs, "float64")
        if isinstance(outcome, Fault):
            if v is not borrower:
                found.aside[v.name] = f"at fault ({outcome.verdict})"
            continue
        ran[v.name] = outcome
    names = list(ran)
    joined = [
        (a, b)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if _agree_everywhere(session, catalog, inputs, ran[a], ran[b])
    ]
    trusted = trusted_group(names, joined)
    for v in family:
        if v is borrower or v.name not in ran:
            continue
        if v.name in trusted:
            found.members.append(v)
        else:
            found.aside[v.name] = AT_FAULT
    return found


def _agree_everywhere(
    session: Any, catalog: Catalog, inputs: Inputs, a: Gradient, b: Gradient
) -> bool:
    """Whether two members' gradients agree on every gradient array (the pair rule)."""
    for array in catalog.example.wrt_names:
        j = judge_pair_of(catalog, inputs, "", a, b, array, session, declared=True)
        if not agrees(j):
            return False
    return True


def pushed(session, catalog, inputs, g, tangents):
    """`(variant, {array: jvp along its tangent})` by the variant's own forward mode, else
    by the first member of its family that may lend one (`lenders`: a member the same
    check judges at fault lends none), or why none can (naming each member left aside):
    what the jvp check of a run's arrays pushes forward (`_check_jvp`); what it runs is
    counted into `g.cost` (nothing where the evaluations' own calls computed it)."""
    why: dict[str, str] = {}
    found = _forward_by(session, inputs, tangents, g.cost, [g.of], why)
    if found is None:
        # once per borrower and inputs: each of its arrays may ask again (`_check_jvp`)
        key = ("lenders", id(g.of), inputs.key("float64"))
        lent = session.once(key, lambda: lenders(session, catalog, inputs, g.of))
        why.update(lent.aside)
        found = _forward_by(session, inputs, tangents, g.cost, lent.members, why)
    if found is not None:
        return found
    own = why.pop(g.variant, "no forward mode")
    others = "; ".join(f"{name}: {text}" for name, text in why.items())
    return (
        f"neither {g.variant} ({own}) nor a member of family {g.family} not at fault can be "
        "pushed forward by jax.jvp" + (f" ({others})" if others else "")
    )


def _forward_by(session, inputs, tangents, cost, candidates, why: dict):
    """`(variant, {array: jvp})` of the first candidate that can push the loss forward along
    `tangents`, or None; why each one before it could not goes into `why`."""
    for v in candidates:
        try:
            return v, session.forward(v, inputs, tangents, cost)
        except TimeoutError:
            raise
        except Exception as e:
            why[v.name] = (str(e).strip().splitlines() or [type(e).__name__])[0][:120]
    return None
