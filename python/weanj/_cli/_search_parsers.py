"""The parsers of the searches: `weanj bisect` and `weanj fuzz` (where two variants part
ways, and on which input). Like the rest of the command line's parser, they import
nothing of the registry or JAX."""

from __future__ import annotations

from .._vocabulary import DTYPES
from ._options import (
    PARAMS_HELP,
    add_device,
    add_example,
    add_timeout,
    fuzz_seed,
    positive_float,
    positive_int,
)


def bisect_parser(sub) -> None:
    p = sub.add_parser(
        "bisect",
        help="the smallest iteration count and problem size at which two variants part ways",
        epilog=PARAMS_HELP,
    )
    add_example(p)
    p.add_argument(
        "a", metavar="A", help="a variant (the reference), or a run of one as the views name it"
    )
    p.add_argument(
        "b",
        metavar="B",
        help="another variant of its family, or a run (V@float32: V's float32 run; V@tpu)",
    )
    p.add_argument(
        "--over",
        metavar="PARAM",
        help="an int parameter or the size to search (default: the first int parameter)",
    )
    p.add_argument(
        "--inputs",
        metavar="FILE",
        help="judge A and B on this inputs file alone (a case bisect or fuzz wrote)",
    )
    _pair_dtype(p)
    add_timeout(p, "one evaluation")
    add_device(p, several=False, side="B (A, the reference, on the CPU)")


def _pair_dtype(p) -> None:
    """`--dtype` of `bisect` and `fuzz`: the dtype of pairs whose names give none."""
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default=None,  # given or not: a name's own dtype that it contradicts is refused
        help="run both sides in this dtype where the names give none (default: float64); "
        "V V@float32 is V's float32 run against its float64 run, judged in float32",
    )


def fuzz_parser(sub) -> None:
    p = sub.add_parser(
        "fuzz", help="differential testing of same-family pairs on drawn inputs, with shrinking"
    )
    add_example(p)
    p.add_argument(
        "--pairs",
        nargs=2,
        action="append",
        metavar=("A", "B"),
        help="only these pairs (repeatable); a run is named as the views name it "
        "(V@float32, V@tpu)",
    )
    p.add_argument(
        "--max-examples", type=positive_int, default=None, metavar="N", help="draws (default 100)"
    )
    p.add_argument(
        "--seconds",
        type=positive_float,
        default=None,
        metavar="S",
        help="stop after S seconds of drawing and judging, compilation not counted "
        "(default 60; with --seed, no limit)",
    )
    p.add_argument(
        "--seed",
        type=fuzz_seed,
        default=None,
        metavar="S",
        help="draw from this seed (default: one drawn and shown); the same seed, the same "
        "draws and report (no database read or kept)",
    )
    _pair_dtype(p)
    add_timeout(p, "one evaluation")
    add_device(p, several=False, side="B (A, the reference, on the CPU)")


# Commands whose extra `--NAME V` words are the example's parameters.
