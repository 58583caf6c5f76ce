"""A variant's functions held to its example's calling convention when the variant is
registered (docs/DESIGN.md §3.5): weanj calls `loss(*arrays, *params)` (and `grad` the
same way), the arrays in the example's order, then the parameters; a function that cannot
take them would otherwise fail at its first run with JAX's words (`Jitted function has
static_argnums=(2, 3), but only accepts 3 positional arguments`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._errors import DefinitionError


def check_signature(example: Any, variant: str, fn: Callable, what: str) -> None:
    """`DefinitionError` in one line where `fn` (the variant's `what`: "loss", "grad")
    cannot be called with the example's arrays and parameters, positionally, in order,
    naming the signature it needs; a function whose signature Python cannot read (a
    builtin) is taken as it is."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    names = (*example.arrays, *example.param_names)
    try:
        signature.bind(*names)
    except TypeError as e:
        shown = getattr(fn, "__name__", type(fn).__name__)
        raise DefinitionError(  # short: it follows the module's name and path
            f"{example.name} variant {variant}: {what} {shown}{signature} cannot take "
            f"{example.name}'s arguments ({', '.join(names)}): {e}"
        ) from None


def check_functions(example: Any, variant: str, functions: dict[str, Callable | None]) -> None:
    """`check_signature` of each function given (`{"loss": fn, "grad": grad}`)."""
    for what, fn in functions.items():
        if fn is not None:
            check_signature(example, variant, fn, what)
