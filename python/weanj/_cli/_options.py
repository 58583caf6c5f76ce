"""The options several `weanj` commands share, and the parser class: argparse with a wider
help layout, no abbreviations and errors in one line. `_parser` builds the commands from
them; nothing here imports the registry, JAX or the example modules.
"""

from __future__ import annotations

import argparse
import math

from .._check_options import number_type, time_limit_text
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


# seconds, budgets
positive_float = number_type(float, lambda v: math.isfinite(v) and v > 0, "a finite number > 0")
positive_int = number_type(int, lambda v: v >= 1, "an integer >= 1")
# a seed of `weanj fuzz` (what numpy's generators take)
fuzz_seed = number_type(int, lambda v: 0 <= v < 2**32, "an integer from 0 to 2^32 - 1")


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
        type=time_limit_text,
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
