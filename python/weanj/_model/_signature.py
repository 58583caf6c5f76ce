"""A variant's functions held to its example's calling convention when the variant is
registered (docs/DESIGN.md §3.5): weanj calls `loss(*arrays, *params)` (and `grad` the
same way), the arrays in the example's order, then the parameters; a function that cannot
take them would otherwise fail at its first run with JAX's words (`Jitted function has
static_argnums=(2, 3), but only accepts 3 positional arguments`), and one whose parameters
name the example's arrays in another order (`def loss(k, u0)` for arrays `("u0", "k")`)
would run on swapped arrays and fail as a wrong port, with no word of why."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._errors import DefinitionError


def check_signature(example: Any, variant: str, fn: Callable, what: str) -> None:
    """`DefinitionError` in one line where `fn` (the variant's `what`: "loss", "grad")
    cannot be called with the example's arrays and parameters, positionally, in order,
    or where its parameters name them otherwise (`misnamed`), naming the signature it
    needs; a function whose signature Python cannot read (a builtin) is taken as it is."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    names = (*example.arrays, *example.param_names)
    shown = getattr(fn, "__name__", type(fn).__name__)
    try:
        signature.bind(*names)
    except TypeError as e:
        raise DefinitionError(  # short: it follows the module's name and path
            f"{example.name} variant {variant}: {what} {shown}{signature} cannot take "
            f"{example.name}'s arguments ({', '.join(names)}): {e}"
        ) from None
    wrong = misnamed(example, signature)
    if wrong:  # the order first: a module's error line is cut at 160 characters
        raise DefinitionError(
            f"{example.name} variant {variant}: {what} {shown}{signature} gets "
            f"{example.name}'s arguments by position, in the order ({', '.join(names)}): "
            f"{wrong}"
        )


def misnamed(example: Any, signature: inspect.Signature) -> str:
    """What is clearly wrong with the names of the parameters a positional call fills
    (`k in u0's place, u0 in k's place`), or "": an array's place holding another
    name, or a parameter's place holding a name of the example's other arrays or
    parameters (swapped). What cannot be read is taken as it is: positional-only
    parameters and everything from `*args` on (a wrapper's `*args, **kwargs`, a partial
    whose keywords made the rest keyword-only)."""
    arrays, params = tuple(example.arrays), tuple(example.param_names)
    placed = []
    for p in signature.parameters.values():
        if p.kind is p.POSITIONAL_ONLY:
            placed.append(None)  # anonymous to a caller: its name says nothing
        elif p.kind is p.POSITIONAL_OR_KEYWORD:
            placed.append(p.name)
        else:
            break
    wrong = []
    for i, (have, want) in enumerate(zip(placed, (*arrays, *params), strict=False)):
        if have is None or have == want:
            continue
        if i < len(arrays) or have in arrays or have in params:
            wrong.append(f"{have} in {want}'s place")
    return ", ".join(wrong)


def check_functions(example: Any, variant: str, functions: dict[str, Callable | None]) -> None:
    """`check_signature` of each function given (`{"loss": fn, "grad": grad}`)."""
    for what, fn in functions.items():
        if fn is not None:
            check_signature(example, variant, fn, what)
