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


def _refused(function: str, what: str, accepts: str, value: Any) -> InputError:
    """The one line every check here raises: the function, its argument, what the
    argument accepts and what it got."""
    return InputError(f"{function}: {what} must be {accepts}, got {shown(value)}")


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
    raise _refused(function, what, "a name (str) or a list of names", value)


def example_name(value: Any, function: str, what: str = "example") -> Any:
    """An example's name (`str`) or a `weanj.Example`, as given."""
    from ._model import Example

    if isinstance(value, (str, Example)):
        return value
    raise _refused(function, what, "an example's name (str) or a weanj.Example", value)


def variant_name(value: Any, function: str, what: str = "variant") -> Any:
    """A variant's name (`str`) or a `Variant`, as given."""
    from ._model import Variant

    if isinstance(value, (str, Variant)):
        return value
    raise _refused(function, what, "a variant's name (str) or a variant", value)


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
    raise _refused(function, what, "a number of seconds > 0", value)


def time_limit(value: Any, what: str, function: str) -> float | None:
    """None (the project's time limit), or a number of seconds >= 0 (0: no limit)."""
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )
    if number and value == 0:
        return 0.0
    if value is None or (number and value > 0 and not math.isnan(value)):
        return seconds(value, what, function)
    raise InputError(
        f"{function}: {what} must be a number of seconds >= 0 (0: no limit), got {shown(value)}"
    )


def flag(value: Any, what: str, function: str) -> bool:
    """True or False (not a text, not a number)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise _refused(function, what, "True or False", value)


def mapping(value: Any, what: str, function: str) -> Mapping | None:
    """None, or a dict (of parameters, say)."""
    if value is None or isinstance(value, Mapping):
        return value
    raise _refused(function, what, "a dict of parameter names and values", value)


def function_of_x(value: Any, what: str, function: str) -> Any:
    if callable(value):
        return value
    raise _refused(function, what, "a function of the array (x -> loss)", value)


def numbers(value: Any, what: str, function: str) -> np.ndarray:
    """An array of real or complex numbers (a list of them, a numpy or JAX array)."""
    try:
        a = np.asarray(value)
    except Exception:
        a = None
    if a is None or a.dtype.kind not in "iufc" or isinstance(value, (str, bytes)):
        raise _refused(function, what, "an array of numbers (numpy or JAX)", value)
    return a


def seed(value: Any, what: str = "seed", function: str = "generate_inputs") -> int | None:
    """None, or an integer >= 0 (what numpy's generators accept)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value >= 0:
            return int(value)
    raise _refused(function, what, "an integer >= 0", value)


def out_path(value: Any, what: str, function: str) -> Any:
    """None, or a file name (a `str` or a `pathlib.Path`; `"-"` where the function
    writes to standard output)."""
    import os

    if value is None or (isinstance(value, (str, os.PathLike)) and str(value).strip()):
        return value
    raise _refused(function, what, "a file name (str or pathlib.Path)", value)


def say_function(value: Any, what: str, function: str) -> Any:
    """A function of one line of text (`print`, a logger's method)."""
    if callable(value):
        return value
    raise _refused(function, what, "a function taking one line of text (e.g. print)", value)
