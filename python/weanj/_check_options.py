"""The options of a check, each declared once (docs/DESIGN.md §8.2, "Each option declared
once"): a field of `CheckOptions` made by `option(...)` gives its default, its type, its
help, the rule its value must keep, its `weanj check` flag, its `pytest --weanj` flag and
the `[tool.weanj]` key that may give its default. `weanj check` adds its flags from here
(`add_arguments`), `pytest --weanj` its own (`add_pytest_options`), `weanj.check()` takes
the same names as keywords (`CheckOptions.of`), and the docs' table of them is made from
here (docs/hooks/weanj_docs.py); the run reads each where it is used (`run.options.fd`,
`session.options.order`).

A new option is its declaration here and its reader. Nothing here imports JAX or numpy:
the command line builds its parser from it before anything heavy loads."""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import InputError
from ._vocabulary import CHECK_DTYPES, DEVICES, DTYPES

Accepts = Callable[[Any, str, str], Any]  # (value, its name, the function) -> the value


@dataclass(frozen=True)
class Declared:
    """How one option is given (`option`): `flags` on `weanj check` (none: the API's
    alone), `argparse`'s keywords beyond the flags, help and default; `pytest`, its
    `pytest --weanj` flag (None: none there, `pytest_why` says why); `key`, the
    `[tool.weanj]` key read where it is not given; `accepts(value, name, function)`, the
    value checked (a wrong one is one `InputError` naming the function and the option)."""

    help: str
    accepts: Accepts
    flags: tuple[str, ...] = ()
    cli: Mapping[str, Any] = field(default_factory=dict)
    pytest: str | None = None
    pytest_why: str = ""
    key: str | None = None


def option(default: Any, help: str, accepts: Accepts, **how: Any) -> Any:
    """A field of `CheckOptions`, declared with everything that gives it (`Declared`)."""
    return field(default=default, metadata={"declared": Declared(help, accepts, **how)})


# --- the rules the values keep (`_arguments`, imported when a value is checked) -------------


def _flag(value: Any, name: str, function: str) -> bool:
    from ._arguments import flag

    return flag(value, name, function)


def _selection(value: Any, name: str, function: str) -> tuple[str, ...] | None:
    from ._arguments import name_list, some

    listed = some(name_list(value, name, function), name, function)
    return None if listed is None else tuple(listed)


def _names(value: Any, name: str, function: str) -> tuple[str, ...] | None:
    from ._arguments import name_list

    listed = name_list(value, name, function)
    return None if listed is None else tuple(listed)


def _devices(value: Any, name: str, function: str) -> tuple[str, ...] | None:
    from ._arguments import names

    listed = names(value, name, function)
    if listed is None:
        return None
    unknown = [d for d in listed if d not in DEVICES]
    if unknown:
        raise InputError(
            f"{name} must be one of {', '.join(DEVICES)}, got {', '.join(map(repr, unknown))}"
        )
    return tuple(listed)


def _dtype(value: Any, name: str, function: str) -> str:
    from ._arguments import one_of

    return one_of(value, CHECK_DTYPES, name, function)


def _order(value: Any, name: str, function: str) -> int:
    if isinstance(value, bool) or value not in (1, 2):
        raise InputError(f"{function}: {name} must be 1 or 2 (the second order), got {value!r}")
    return int(value)


def _time_limit(value: Any, name: str, function: str) -> float | None:
    from ._arguments import time_limit

    return time_limit(value, name, function)


def _count(minimum: int) -> Accepts:
    def accepts(value: Any, name: str, function: str) -> int | None:
        from ._arguments import count

        return count(value, name, function, minimum=minimum)

    return accepts


def _address(value: Any, name: str, function: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise InputError(f"{function}: {name} must be a scheduler's address (str), got {value!r}")
    return value


def number_type(kind: type, accepts, what: str):
    """An argparse `type=` for a number of `kind` (int or float) that `accepts(value)`:
    a text that is no such number, or one out of range, is `expected WHAT, got 'TEXT'`
    (argparse puts `argument --OPTION:` before it)."""
    noun = "an integer" if kind is int else "a number"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


def time_limit_text(text: str) -> float:
    """`--timeout S`: a finite number >= 0 (0: no limit); one message for any other text."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds >= 0 (0: no limit), got {text!r}"
        )
    return value


_IN_ITS_PROCESS = "pytest --weanj evaluates in its own process"


@dataclass(frozen=True)
class CheckOptions:
    """What a check is asked to do, one field per option (module docstring); the default
    of each is `weanj check`'s with no flag. Made by `of` (the API's keywords, each
    checked), `from_args` (`weanj check`'s namespace), `from_pytest` (pytest's config)."""

    variants: tuple[str, ...] | None = option(
        None,
        "only these variants, run and judged (the others' stored files are left aside)",
        _selection,
        flags=("--variants",),
        cli=dict(nargs="+", metavar="VARIANT"),
        pytest="--weanj-variant",
    )
    dtype: str = option(
        "both",
        "dtypes under test (default: both: float64, then float32 against its own float64 run)",
        _dtype,
        flags=("--dtype",),
        cli=dict(choices=CHECK_DTYPES),
        pytest="--weanj-dtype",
    )
    require: tuple[str, ...] | None = option(
        None,
        "fail when a variant of this backend (or this name) cannot run here, or a run on "
        "this device (--require tpu), e.g. --require julia (default: [tool.weanj] require)",
        _names,
        flags=("--require",),
        cli=dict(action="append", metavar="BACKEND"),
        pytest="--weanj-require",
        key="require",
    )
    device: tuple[str, ...] | None = option(
        None,
        "run on this device too, each run judged against its family's CPU float64 "
        "reference, e.g. --device cpu --device tpu (repeatable; default: [tool.weanj] "
        "devices, else the CPU, whatever JAX's default device is)",
        _devices,
        flags=("--device",),
        cli=dict(action="append", choices=DEVICES),
        pytest="--weanj-device",
        key="devices",
    )
    fresh: bool = option(
        False,
        "recompute every evaluation (default: reuse)",
        _flag,
        flags=("--fresh",),
        cli=dict(action="store_true"),
        pytest="--weanj-fresh",
    )
    verbose: bool = option(
        False,
        "every pair, file and evaluation too",
        _flag,
        flags=("-v", "--verbose"),
        cli=dict(action="store_true"),
        pytest_why="pytest's own -v lists every case",
    )
    fd: bool = option(
        False,
        "central differences beside every gradient check, as information (default: only "
        "beside one that is not ok)",
        _flag,
        flags=("--fd",),
        cli=dict(action="store_true"),
        pytest="--weanj-fd",
    )
    strict: bool = option(
        False,
        "fail when a variant that ran was compared with nothing (a family with one member "
        "here; default: said in the headline, exit code unchanged)",
        _flag,
        flags=("--strict",),
        cli=dict(action="store_true"),
        pytest="--weanj-strict",
    )
    order: int = option(
        1,
        "2: also each variant's Hessian-vector products, compared across variants, with the "
        "second-order Taylor test and the symmetry check (default: 1, or an example's own "
        "order=2)",
        _order,
        flags=("--order",),
        cli=dict(type=int, choices=(1, 2)),
        pytest="--weanj-order",
    )
    timeout: float | None = option(
        None,
        "give up on a variant after S seconds (verdict timeout; the others go on); default: "
        "[tool.weanj] timeout, else 600; 0: no limit",
        _time_limit,
        flags=("--timeout",),
        cli=dict(type=time_limit_text, metavar="S"),
        pytest="--weanj-timeout",
        key="timeout",
    )
    workers: int | None = option(
        None,
        "evaluate on a local Dask cluster of N worker processes (0: in this process; needs "
        "weanj[distributed])",
        _count(0),
        flags=("--workers",),
        cli=dict(type=number_type(int, lambda v: v >= 0, "an integer >= 0"), metavar="N"),
        pytest_why=_IN_ITS_PROCESS,
    )
    scheduler: str | None = option(
        None,
        "evaluate on the Dask cluster of this scheduler (default: $DASK_SCHEDULER_ADDRESS, "
        "else [tool.weanj] scheduler, else in this process)",
        _address,
        flags=("--scheduler",),
        cli=dict(metavar="ADDRESS"),
        pytest_why=_IN_ITS_PROCESS,
        key="scheduler",
    )
    processes: int | None = option(
        None,
        "run the sharded (multi-device) variants under jax.distributed on P local processes "
        "(docs/distributed.md)",
        _count(1),
        flags=("--processes",),
        cli=dict(type=number_type(int, lambda v: v >= 1, "an integer >= 1"), metavar="P"),
        pytest_why=_IN_ITS_PROCESS,
    )
    save: bool = option(
        True,
        "save each gradient to the store and write check.json (weanj check always does; "
        "pytest --weanj never)",
        _flag,
    )

    records: bool | None = option(
        None,
        "reuse the evaluation records and keep new ones (default: as save; docs/rechecking.md)",
        lambda value, name, function: None if value is None else _flag(value, name, function),
    )
    progress: bool = option(
        True,
        "a progress line per example on stderr (with verbose, per evaluation)",
        _flag,
    )

    @classmethod
    def of(cls, function: str = "check", **values: Any) -> CheckOptions:
        """The options given as keywords (`weanj.check(fd=True)`), each checked by its
        declaration's rule; an unknown keyword is a `TypeError`, as Python's own, naming
        the known ones."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:  # as Python says it of a keyword a function does not take
            raise TypeError(
                f"{function}() got an unexpected keyword argument {unknown[0]!r} (its "
                f"options: {', '.join(known)})"
            )
        return cls(**{k: declared(known[k]).accepts(v, k, function) for k, v in values.items()})

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CheckOptions:
        """`weanj check`'s options from its parsed command line (`add_arguments`)."""
        given = {f.name: getattr(args, f.name) for f in with_flags() if hasattr(args, f.name)}
        return cls.of("check", **given)

    @classmethod
    def from_pytest(cls, config: Any) -> CheckOptions:
        """`pytest --weanj`'s options (`add_pytest_options`): nothing saved to the store,
        every evaluation in pytest's process (`workers=0`), no progress lines (pytest
        reports each item)."""
        given = {f.name: config.getoption(_dest(f)) for f in for_pytest()}
        return cls.of("pytest --weanj", **given, save=False, workers=0, progress=False)

    def with_(self, function: str = "check", **changes: Any) -> CheckOptions:
        """These options with some changed, each checked."""
        known = {f.name: f for f in dataclasses.fields(self)}
        checked = {k: declared(known[k]).accepts(v, k, function) for k, v in changes.items()}
        return dataclasses.replace(self, **checked)

    @property
    def dtypes(self) -> tuple[str, ...]:
        """`dtype` as the dtypes run: float32 is judged against its own float64 run, so it
        brings float64 along; float64 alone leaves float32 out."""
        return ("float64",) if self.dtype == "float64" else DTYPES


DEFAULTS = CheckOptions()  # `weanj check` with no flag


def declared(f: dataclasses.Field) -> Declared:
    return f.metadata["declared"]


def with_flags() -> list[dataclasses.Field]:
    """The options `weanj check` takes on its command line, in their order."""
    return [f for f in dataclasses.fields(CheckOptions) if declared(f).flags]


def for_pytest() -> list[dataclasses.Field]:
    """The options `pytest --weanj` takes, in their order."""
    return [f for f in dataclasses.fields(CheckOptions) if declared(f).pytest]


def _dest(f: dataclasses.Field) -> str:
    return "weanj_option_" + f.name


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`weanj check`'s flags, one per option with flags (defaults as declared)."""
    for f in with_flags():
        d = declared(f)
        p.add_argument(*d.flags, dest=f.name, default=f.default, help=d.help, **d.cli)


def add_pytest_options(group: Any) -> None:
    """`pytest --weanj`'s flags of the same options: a repeatable flag where `weanj check`
    takes several names after one (`--weanj-variant A --weanj-variant B`), a type read
    from the text as on the command line; unset, each is the declared default."""
    for f in for_pytest():
        d = declared(f)
        keywords = dict(d.cli)
        if keywords.get("nargs") == "+":
            keywords = {k: v for k, v in keywords.items() if k != "nargs"} | {"action": "append"}
        group.addoption(d.pytest, dest=_dest(f), default=f.default, help=d.help, **keywords)


def table_rows() -> list[tuple[str, str, str, str, str, str]]:
    """Each option as `(keyword, flags, pytest flag, [tool.weanj] key, default, help)`: the
    docs' table (docs/hooks/weanj_docs.py)."""
    rows = []
    for f in dataclasses.fields(CheckOptions):
        d = declared(f)
        pytest = d.pytest or (f"— ({d.pytest_why})" if d.pytest_why else "—")
        rows.append(
            (
                f.name,
                ", ".join(d.flags) or "— (the API's)",
                pytest,
                d.key or "—",
                repr(f.default),
                d.help,
            )
        )
    return rows


# the `[tool.weanj]` keys that give an option its default (`_project` reads each, with
# the rule its value keeps there; tests/test_check_options.py holds them the same)
OPTION_KEYS = tuple(k for f in dataclasses.fields(CheckOptions) if (k := declared(f).key))
