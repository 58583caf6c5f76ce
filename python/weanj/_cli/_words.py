"""The words of a command line beyond its declared options: the "did you mean" of a
mistyped option, and an example's parameters given as `--NAME V`."""

from __future__ import annotations

import difflib
import re

from .._errors import InputError

_PARAM_WORD = re.compile(r"--([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?\Z")


def suggestion(flag: str, options: list[str]) -> str:
    """`; did you mean --K?` for a mistyped option: the case, a missing dash, a prefix of
    one option (never taken as that option), a typo."""
    flag = flag.split("=", 1)[0]
    by_case = [o for o in options if o.lower() in (flag.lower(), "-" + flag.lower())]
    prefixed = [o for o in options if len(flag) > 2 and o.lower().startswith(flag.lower())]
    close = by_case or (prefixed if len(prefixed) == 1 else [])
    close = close or difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def param_words(words: list[str]) -> dict[str, str] | None:
    """`{name: text}` from `--NAME V` / `--NAME=V` words, or None if they are not that."""
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        m = _PARAM_WORD.match(words[i])
        if m is None:
            return None
        name, value = m.group(1), m.group(2)
        if value is None:
            if i + 1 >= len(words):
                raise InputError(f"--{name} needs a value, e.g. --{name} 5")
            value, i = words[i + 1], i + 2
        else:
            i += 1
        if name in out:
            raise InputError(f"--{name} is given twice")
        out[name] = value
    return out
