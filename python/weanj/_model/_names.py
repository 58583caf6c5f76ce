"""The one rule that says which names an example or a variant may have."""

from __future__ import annotations

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
