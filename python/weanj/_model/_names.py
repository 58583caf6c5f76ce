"""The one rule that says which names an example or a variant may have."""

from __future__ import annotations

import difflib
import re
from typing import Any

from .._errors import DefinitionError

# Names that become file names (inputs, store, benchmark files) and command-line words.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}\Z")


def check_name(what: str, name: Any) -> str:
    """`name` if it is a safe example or variant name, else a `DefinitionError`."""
    if not isinstance(name, str) or not NAME.match(name) or name.endswith(".h5"):
        raise DefinitionError(
            f"{what} name {name!r} must start with a letter or digit and contain only "
            "letters, digits and . _ + - (at most 100; it names files)"
        )
    return name


def closest(name: Any, known) -> str | None:
    """The known name `name` most likely meant (the same but for case first, else
    difflib's closest), or None: the "did you mean" of every mistyped name (a variant, an
    example, a family of one)."""
    if not isinstance(name, str):
        return None
    close = [k for k in known if k.lower() == name.lower()]
    close = close or difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return close[0] if close else None
