"""The Python API's argument checks: a wrong type or value in a call of `weanj.check()`,
`weanj.diff()`, `weanj.evaluate()`, `weanj.taylor_test()`, ... is one `InputError` line
naming the function, the argument and what it accepts, as the command line's errors are,
never an exception from deep inside (`'int' object is not iterable`).

Names themselves (an unknown example or variant) are the registry's to refuse: it lists
the known ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._errors import InputError
from ._model._kinds import shown


def names(value: Any, what: str, function: str) -> list[str] | None:
    """None, one name (a `str`, or a `weanj.Example`), or a list or tuple of them: as a
    list (None stays)."""
    from ._model import Example

    if value is None:
        return None
    if isinstance(value, (str, Example)):
        return [value]
    if isinstance(value, Sequence) and all(isinstance(v, (str, Example)) for v in value):
        return list(value)
    raise InputError(
        f"{function}: {what} must be a name (str) or a list of names, got {shown(value)}"
    )


def example_name(value: Any, function: str, what: str = "example") -> Any:
    """An example's name (`str`) or a `weanj.Example`, as given."""
    from ._model import Example

    if isinstance(value, (str, Example)):
        return value
    raise InputError(
        f"{function}: {what} must be an example's name (str) or a weanj.Example, got {shown(value)}"
    )


def variant_name(value: Any, function: str, what: str = "variant") -> Any:
    """A variant's name (`str`) or a `Variant`, as given."""
    from ._model import Variant

    if isinstance(value, (str, Variant)):
        return value
    raise InputError(
        f"{function}: {what} must be a variant's name (str) or a variant, got {shown(value)}"
    )


def seconds(value: Any, what: str, function: str) -> float | None:
    """None, or a number of seconds > 0."""
    if value is None:
        return None
    if (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and value > 0
        and not math.isnan(value)
    ):
        return float(value)
    raise InputError(f"{function}: {what} must be a number of seconds > 0, got {shown(value)}")


def flag(value: Any, what: str, function: str) -> bool:
    """True or False (not a text, not a number)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InputError(f"{function}: {what} must be True or False, got {shown(value)}")


def mapping(value: Any, what: str, function: str) -> Mapping | None:
    """None, or a dict (of parameters, say)."""
    if value is None or isinstance(value, Mapping):
        return value
    raise InputError(
        f"{function}: {what} must be a dict of parameter names and values, got {shown(value)}"
    )


def function_of_x(value: Any, what: str, function: str) -> Any:
    if callable(value):
        return value
    raise InputError(
        f"{function}: {what} must be a function of the array (x -> loss), got {shown(value)}"
    )


def numbers(value: Any, what: str, function: str) -> np.ndarray:
    """An array of real or complex numbers (a list of them, a numpy or JAX array)."""
    try:
        a = np.asarray(value)
    except Exception:
        a = None
    if a is None or a.dtype.kind not in "iufc" or isinstance(value, (str, bytes)):
        raise InputError(
            f"{function}: {what} must be an array of numbers (numpy or JAX), got {shown(value)}"
        )
    return a


def seed(value: Any, what: str = "seed", function: str = "generate_inputs") -> int | None:
    """None, or an integer >= 0 (what numpy's generators accept)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value >= 0:
            return int(value)
    raise InputError(f"{function}: {what} must be an integer >= 0, got {shown(value)}")


def out_path(value: Any, what: str, function: str) -> Any:
    """None, or a file name (a `str` or a `pathlib.Path`; `"-"` where the function
    writes to standard output)."""
    import os

    if value is None or (isinstance(value, (str, os.PathLike)) and str(value).strip()):
        return value
    raise InputError(
        f"{function}: {what} must be a file name (str or pathlib.Path), got {shown(value)}"
    )


def say_function(value: Any, what: str, function: str) -> Any:
    """A function of one line of text (`print`, a logger's method)."""
    if callable(value):
        return value
    raise InputError(
        f"{function}: {what} must be a function taking one line of text (e.g. print), "
        f"got {shown(value)}"
    )
