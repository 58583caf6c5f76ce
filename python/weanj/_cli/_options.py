"""The options several `weanj` commands share, and the parser class: argparse with a wider
help layout, no abbreviations and errors in one line. `_parser` builds the commands from
them; nothing here imports the registry, JAX or the example modules.
"""

from __future__ import annotations

import argparse
import math

from .._errors import InputError
from .._vocabulary import DEVICES


class Parser(argparse.ArgumentParser):
    """argparse with a wider help layout, no abbreviations (`--t` never means `--timeout`)
    and errors in one line."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def _get_formatter(self):
        return argparse.HelpFormatter(prog=self.prog, max_help_position=30, width=100)

    def error(self, message: str):
        """One line on stderr, exit 2 (argparse's own prints the usage first)."""
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


class UsageError(InputError):
    """A command line that does not parse."""


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


# seconds, budgets
positive_float = number_type(float, lambda v: math.isfinite(v) and v > 0, "a finite number > 0")
positive_int = number_type(int, lambda v: v >= 1, "an integer >= 1")
# a seed of `weanj fuzz` (what numpy's generators take)
fuzz_seed = number_type(int, lambda v: 0 <= v < 2**32, "an integer from 0 to 2^32 - 1")
# `--workers 0`: in this process
count = number_type(int, lambda v: v >= 0, "an integer >= 0")


def time_limit(text: str) -> float:
    """A finite number >= 0 (`--timeout`: 0 is no limit); one message for any other text."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds >= 0 (0: no limit), got {text!r}"
        )
    return value


def add_processes(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--processes",
        type=positive_int,
        default=None,
        metavar="P",
        help="run the sharded (multi-device) variants under jax.distributed on P local "
        "processes (docs/distributed.md)",
    )


def add_example(p: argparse.ArgumentParser) -> None:
    p.add_argument("example", help="an example of the project (weanj list)")


def add_timeout(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--timeout",
        type=time_limit,
        default=None,
        metavar="S",
        help=f"give up on {what} after S seconds (verdict timeout; the others go on); "
        "default: [tool.weanj] timeout, else 600; 0: no limit",
    )


def add_device(p, *, several: bool = True, side: str = "") -> None:
    """`--device cpu|gpu|tpu` (repeatable where `several`): where the runs go."""
    if several:
        p.add_argument(
            "--device",
            action="append",
            choices=DEVICES,
            default=None,
            help="run on this device too, each run judged against its family's CPU float64 "
            "reference, e.g. --device cpu --device tpu (repeatable; default: "
            "[tool.weanj] devices, else the CPU, whatever JAX's default device is)",
        )
    else:
        p.add_argument(
            "--device",
            choices=DEVICES,
            default="cpu",
            help=f"JAX device kind{' of ' + side if side else ''} (default: cpu, whatever "
            "JAX's default device is)",
        )


PARAMS_HELP = "--PARAM V: any parameter of the example (weanj list EXAMPLE shows them), e.g. --K 5"


def add_executors(p: argparse.ArgumentParser) -> None:
    """Where a check's evaluations run: a Dask cluster, local or not, and jax.distributed."""
    p.add_argument(
        "--workers",
        type=count,
        default=None,
        metavar="N",
        help="evaluate on a local Dask cluster of N worker processes (0: in this process; "
        "needs weanj[distributed])",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="evaluate on the Dask cluster of this scheduler (default: $DASK_SCHEDULER_ADDRESS, "
        "else [tool.weanj] scheduler, else in this process)",
    )
    add_processes(p)


def add_format(p: argparse.ArgumentParser) -> None:
    """What a check prints on stdout: each format a listener of the run's events."""
    from .._report._outputs import FORMATS

    p.add_argument(
        "--format",
        choices=tuple(FORMATS),
        default="text",
        help="text: the tables once the check is over; jsonl: one JSON object per case as it "
        "is judged, one per example, one for the run (default: text)",
    )
