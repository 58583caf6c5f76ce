"""A `Variant`'s fields checked as it is made, each mistake one `DefinitionError` line
naming the variant and the field: a declaration refused where it is written, not a
`TypeError` (or a wrong verdict) the first time the variant runs."""

from __future__ import annotations

from typing import Any

from .._errors import DefinitionError
from .._vocabulary import DTYPES
from ._kinds import shown

# What a family's name may not hold: it names cases (`EX::FAMILY::VARIANT`, pytest's ids)
# and is shown in reports (which escape markup), so no separator of a path or of a case id.
_NOT_IN_A_FAMILY = ("/", "\\", "\0", "\n", "\r", "::")


def _family_name(family: Any) -> bool:
    return (
        isinstance(family, str)
        and family == family.strip()
        and family not in ("", ".", "..")
        and ".." not in family
        and not any(mark in family for mark in _NOT_IN_A_FAMILY)
    )


def check_fields(variant: Any) -> None:
    """Refuse a `Variant` whose fields are not of their kinds: `family` a name (it names
    cases, `EX::FAMILY::VARIANT`: no path, no `..`, no separator), `backend` one
    line, `dtypes` one or more of float64 and float32 each once, `requires` a list of
    module names, `multi_device` True or False, `description` one line, `build`, `check`
    and `excludes` functions."""
    where = f"variant {variant.name}"
    if not _family_name(variant.family):
        raise DefinitionError(
            f"{where}: family must be a name (no / \\ .. :: or line break, no space around; it "
            f"names cases), got {shown(variant.family)}"
        )
    if not isinstance(variant.backend, str) or not variant.backend or "\n" in variant.backend:
        raise DefinitionError(f"{where}: backend must be a one-line string")
    _check_dtypes(where, variant.dtypes)
    requires = variant.requires
    if isinstance(requires, str) or not isinstance(requires, (list, tuple)):
        raise DefinitionError(
            f"{where}: requires must be a list of module names, got {shown(requires)}"
            + (f" (one module: requires=({requires!r},))" if isinstance(requires, str) else "")
        )
    if not all(isinstance(m, str) and m for m in requires):
        raise DefinitionError(f"{where}: requires must name modules (str), got {shown(requires)}")
    if not isinstance(variant.multi_device, bool):
        raise DefinitionError(
            f"{where}: multi_device must be True or False, got {shown(variant.multi_device)}"
        )
    if not isinstance(variant.description, str) or "\n" in variant.description.strip():
        raise DefinitionError(
            f"{where}: description must be one line of text, got {shown(variant.description)}"
        )
    for what in ("build", "check", "excludes"):
        value = getattr(variant, what)
        if not callable(value) and (value is not None or what == "build"):
            raise DefinitionError(f"{where}: {what} must be a function, got {shown(value)}")


def _check_dtypes(where: str, dtypes: Any) -> None:
    listed = (dtypes,) if isinstance(dtypes, str) else dtypes
    if (
        not isinstance(listed, (list, tuple, set, frozenset))
        or not listed
        or not all(isinstance(d, str) and d in DTYPES for d in listed)
        or len(set(listed)) != len(listed)
    ):
        raise DefinitionError(
            f"{where}: dtypes must be one or more of {', '.join(DTYPES)}, each once, got "
            f"{shown(dtypes)}"
        )
