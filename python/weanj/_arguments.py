"""The Python API's argument checks: a wrong type or value in a call of `weanj.check()`,
`weanj.diff()`, `weanj.evaluate()`, `weanj.taylor_test()`, ... is one `InputError` line
naming the function, the argument and what it accepts, as the command line's errors are,
never an exception from deep inside (`'int' object is not iterable`).

Names themselves (an unknown example or variant) are the registry's to refuse: it lists
the known ones. What a name may look like (a list where a list is asked, each name once,
none empty) is refused here. The checks that declarations (`weanj.jax_variant`, ...) make
raise `DefinitionError` (`error=`), the calls' `InputError`: both one line, exit 2.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._errors import InputError, WeanjError
from ._model._kinds import shown


def refused(
    function: str, what: str, accepts: str, value: Any, error: type[WeanjError] = InputError
) -> WeanjError:
    """The one line every check here raises: the function, its argument, what the
    argument accepts and what it got."""
    return error(f"{function}: {what} must be {accepts}, got {shown(value)}")


def _each_once(listed: list, what: str, function: str, error: type[WeanjError]) -> list:
    """`listed` if no name in it is empty or given twice (a duplicate is a slip: a name
    meant and not written), else one line naming it."""
    seen: set[str] = set()
    for item in listed:
        name = getattr(item, "name", item)
        if name == "" or (isinstance(name, str) and not name.strip()):
            raise error(f"{function}: {what} holds an empty name, got {shown(listed)}")
        if name in seen:
            raise error(f"{function}: {what} names {name!r} twice; name each once")
        seen.add(name)
    return listed


def names(value: Any, what: str, function: str) -> list[str] | None:
    """None, one name (a `str`, or a `weanj.Example`), or a list or tuple of them, each
    once and none empty: as a list (None stays)."""
    from ._model import Example

    if value is None:
        return None
    if isinstance(value, (str, Example)):
        return _each_once([value], what, function, InputError)
    if isinstance(value, Sequence) and all(isinstance(v, (str, Example)) for v in value):
        return _each_once(list(value), what, function, InputError)
    raise refused(function, what, "a name (str) or a list of names", value)


def name_list(
    value: Any, what: str, function: str, error: type[WeanjError] = InputError
) -> list[str] | None:
    """None, or a list or tuple of names (`str`), each once and none empty. One name
    alone is refused: a text where a list is asked (`variants="jax-a"`) says nothing of
    whether a list was meant, and read letter by letter it would name other things."""
    if value is None:
        return None
    if isinstance(value, str):
        raise error(
            f"{function}: {what} must be a list of names, got the text {shown(value)} "
            f"(one name: {what}=[{shown(value)}])"
        )
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return _each_once(list(value), what, function, error)
    raise refused(function, what, "a list of names (str)", value, error)


def some(listed: list | None, what: str, function: str) -> list | None:
    """A selection (`variants=`, `examples=`) that selects something: None (every one) or a
    list of one name or more. An empty list is refused: it would read as "none", and
    judging every one instead would pass a check of nothing chosen."""
    if listed is not None and not listed:
        raise InputError(
            f"{function}: {what}=[] selects nothing; name one or more, or leave {what} out "
            "(None) to take every one"
        )
    return listed


def one_of(
    value: Any,
    choices: Sequence[str],
    what: str,
    function: str,
    error: type[WeanjError] = InputError,
) -> str:
    """One of `choices` (a text; a list or a dict is refused as such, never looked up)."""
    if isinstance(value, str) and value in choices:
        return value
    raise refused(function, what, f"one of {', '.join(map(repr, choices))}", value, error)


def count(value: Any, what: str, function: str, minimum: int = 0) -> int | None:
    """None, or an integer >= `minimum` (not a bool, not a text)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value >= minimum:
            return int(value)
    raise refused(function, what, f"an integer >= {minimum}", value)


def real(value: Any, what: str, function: str, *, positive: bool = False) -> float | None:
    """None, or a finite real number (> 0 where `positive`)."""
    if value is None:
        return None
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    ):
        if math.isfinite(value) and (value > 0 or not positive):
            return float(value)
    raise refused(function, what, "a finite number > 0" if positive else "a finite number", value)


def function_or_none(
    value: Any,
    what: str,
    function: str,
    accepts: str = "a function",
    error: type[WeanjError] = InputError,
) -> Any:
    """None, or something callable."""
    if value is None or callable(value):
        return value
    raise refused(function, what, f"None or {accepts}", value, error)


def a_function(value: Any, what: str, function: str, accepts: str = "a function") -> Any:
    """Something callable (not None)."""
    if callable(value):
        return value
    raise refused(function, what, accepts, value)


def dtype(value: Any, function: str, what: str = "dtype") -> str:
    """A dtype under test, `"float64"` or `"float32"` (a numpy dtype spelling too), as
    its name."""
    from ._model import check_dtype

    try:
        return check_dtype(value)
    except InputError:
        raise refused(function, what, "'float64' or 'float32'", value) from None


def in_path(value: Any, what: str, function: str, accepts: str = "a file path") -> Any:
    """None, or a path (`str` or `pathlib.Path`) holding no NUL byte, as given."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise refused(function, what, f"{accepts} (str or Path)", value)
    text = os.fsdecode(value)
    if "\0" in text:
        raise InputError(
            f"{function}: {what} {shown(text)} contains a NUL byte; no file name holds one"
        )
    return value


def example_name(value: Any, function: str, what: str = "example") -> Any:
    """An example's name (`str`) or a `weanj.Example`, as given."""
    from ._model import Example

    if isinstance(value, (str, Example)):
        return value
    raise refused(function, what, "an example's name (str) or a weanj.Example", value)


def variant_name(value: Any, function: str, what: str = "variant") -> Any:
    """A variant's name (`str`) or a `Variant`, as given."""
    from ._model import Variant

    if isinstance(value, (str, Variant)):
        return value
    raise refused(function, what, "a variant's name (str) or a variant", value)


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
    raise refused(function, what, "a number of seconds > 0", value)


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
    raise refused(function, what, "True or False", value)


def mapping(
    value: Any, what: str, function: str, accepts: str = "a dict of parameter names and values"
) -> Mapping | None:
    """None, or a dict (of parameters, say)."""
    if value is None or isinstance(value, Mapping):
        return value
    raise refused(function, what, accepts, value)


def function_of_x(value: Any, what: str, function: str) -> Any:
    if callable(value):
        return value
    raise refused(function, what, "a function of the array (x -> loss)", value)


def numbers(value: Any, what: str, function: str) -> np.ndarray:
    """An array of real or complex numbers (a list of them, a numpy or JAX array)."""
    try:
        a = np.asarray(value)
    except Exception:
        a = None
    if a is None or a.dtype.kind not in "iufc" or isinstance(value, (str, bytes)):
        raise refused(function, what, "an array of numbers (numpy or JAX)", value)
    return a


def seed(value: Any, what: str = "seed", function: str = "generate_inputs") -> int | None:
    """None, or an integer >= 0 (what numpy's generators accept)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value >= 0:
            return int(value)
    raise refused(function, what, "an integer >= 0", value)


def out_path(value: Any, what: str, function: str) -> Any:
    """None, or a file name (a `str` or a `pathlib.Path`; `"-"` where the function
    writes to standard output)."""
    import os

    if value is None or (isinstance(value, (str, os.PathLike)) and str(value).strip()):
        return value
    raise refused(function, what, "a file name (str or pathlib.Path)", value)


def say_function(value: Any, what: str, function: str) -> Any:
    """A function of one line of text (`print`, a logger's method)."""
    if callable(value):
        return value
    raise refused(function, what, "a function taking one line of text (e.g. print)", value)


def variant_file_name(value: Any, function: str) -> str:
    """A variant's name that can name its store file (`check_name`), or one `InputError`
    line naming the function."""
    from ._model import check_name

    try:
        return check_name("variant", value)
    except WeanjError as e:
        raise InputError(f"{function}: {e}") from None


def declared(function: str, name: Any, *, requires: Any = (), **functions: Any) -> str:
    """The name of a variant a constructor declares (`weanj.jax_variant(ex, NAME, ...)`),
    its functions (`loss=`, `grad=`: None or a function) and the modules it `requires` (a
    list of names), each mistake one `DefinitionError` line naming the constructor:
    checked at the call, also where the constructor is a decorator that registers nothing
    yet."""
    from ._errors import DefinitionError
    from ._model import check_name

    if callable(name) and not isinstance(name, str):
        raise DefinitionError(
            f"{function}: name must be a variant's name (str, e.g. 'jax-loop'), got the "
            f"function {getattr(name, '__name__', shown(name))}; the function is loss= (or "
            f"decorate it: @weanj.{function}(ex, 'jax-...', family=...))"
        )
    try:
        check_name("variant", name)
    except DefinitionError as e:
        raise DefinitionError(f"{function}: {e}") from None
    for what, value in functions.items():
        function_or_none(value, what, f"{function} {name!r}", "a function", DefinitionError)
    name_list(requires, "requires", f"{function} {name!r}", DefinitionError)
    return name


def decorated(fn: Any) -> Any:
    """What a variant constructor used as a decorator is applied to: the loss, a function."""
    from ._errors import DefinitionError

    if callable(fn):
        return fn
    raise DefinitionError(
        f"a variant constructor used as a decorator (@weanj.jax_variant(...)) is applied to "
        f"the loss, a function; got {shown(fn)}"
    )


# A Julia function's name, possibly inside a module: `smooth_loss`, `Smooth.smooth_loss`.
JULIA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_!]*(\.[A-Za-z_][A-Za-z0-9_!]*)*$")


def declared_julia(name: Any, loss: Any, file: Any, runtime_activity: Any) -> str:
    """`weanj.julia_variant`'s name, `loss` (a Julia function's name), `file` (None or a
    path) and `runtime_activity` (True or False), each mistake one `DefinitionError` line;
    its `ad=`, `gradient=`, `function=` and `package=` are its backend's to check."""
    from ._errors import DefinitionError

    declared("julia_variant", name)
    where = f"julia_variant {name!r}"
    if not isinstance(loss, str) or not JULIA_NAME.match(loss):
        raise refused(where, "loss", "a Julia function's name (str)", loss, DefinitionError)
    if file is not None and (not isinstance(file, (str, os.PathLike)) or not str(file).strip()):
        raise refused(
            where, "file", "None or a Julia file's path (str or Path)", file, DefinitionError
        )
    if not isinstance(runtime_activity, bool):
        raise refused(where, "runtime_activity", "True or False", runtime_activity, DefinitionError)
    return name
