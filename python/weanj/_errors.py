"""User-facing errors.

Every error a user can cause (bad names, bad files, bad arrays, missing optional
dependencies) is a `WeanjError`. The command line prints its message as one line on
stderr and exits with `exit_code`; a traceback means a bug in weanj, not in the input.
"""

from __future__ import annotations

import sys


class WeanjError(Exception):
    """An error caused by the user's input or environment, reported in one line."""

    exit_code = 2


class UnknownNameError(WeanjError, KeyError):
    """Unknown example or variant; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class InputError(WeanjError, ValueError):
    """Arrays or parameters that the mathematics does not accept (shape, dtype, NaN, K < 1)."""


class InputFileError(WeanjError, OSError):
    """A missing, unreadable, truncated or tampered inputs file."""


class StaleGradientError(WeanjError):
    """A stored gradient computed on other inputs than the current ones."""


class UnavailableError(WeanjError):
    """A variant whose backend (kernex, Enzyme-JAX, Julia, a GPU) is not available here."""


class ExcludedError(UnavailableError):
    """A variant declared not to apply to these inputs (`excludes=`), saying why: a known
    upstream bug, a size its algorithm does not handle. Judged `skipped`, never a pass."""


class VariantError(WeanjError):
    """A variant at fault (verdict `error`, `NaN/Inf` or `timeout`) where one result was
    asked for (`weanj run`, `weanj.evaluate`): one line saying what, with the command that
    reproduces it. Exit code 1, like the verdict."""

    exit_code = 1


class ProjectError(WeanjError):
    """A project's `[tool.weanj]` table or one of its example modules is broken."""


class DefinitionError(WeanjError, ValueError):
    """An example or variant defined wrongly (a duplicate name, a variant of an unknown
    example, `wrt` naming no array, ...); raised when it is registered."""


# The first line of a message stays short; a list that would make it long goes below.
FIRST_LINE = 200


def wrapped(message: str) -> str:
    """`message` with a first line of at most ~200 characters: a longer one is broken at
    its last "; " that fits (else its last ": ", else its last space) past the first 80
    characters, the rest going to the next line, indented (a long path can push any
    sentence past the width)."""
    first, sep, rest = message.partition("\n")
    if len(first) <= FIRST_LINE:
        return message
    for mark in ("; ", ": ", " "):  # never right after a short head ("weanj: warning:")
        cut = first.rfind(mark, 0, FIRST_LINE)
        if cut >= FIRST_LINE * 2 // 5:
            return f"{first[: cut + len(mark.rstrip())]}\n  {first[cut + len(mark) :]}{sep}{rest}"
    return message


def say(message: str, end: str = "\n") -> None:
    """A line of progress or a note, on stderr and at once (stdout holds the result)."""
    print(message, file=sys.stderr, end=end, flush=True)


def error_text(message: str) -> str:
    """What the command line prints for an error: `weanj: error: ` and the message,
    `wrapped`. Every command's error goes through here."""
    return f"weanj: error: {wrapped(message)}"


def with_list(head: str, label: str, items) -> str:
    """`head; label: a, b, c` when that fits on one line of ~200 characters, else the list
    on the next line (`head` then `  label: a, b, c`)."""
    listed = ", ".join(str(i) for i in items) or "none"
    line = f"{head}; {label}: {listed}"
    return line if len(line) <= FIRST_LINE else f"{head}\n  {label}: {listed}"
