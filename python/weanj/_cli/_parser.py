"""The `weanj` argument parser. It imports nothing of the registry, JAX or the example
modules, so `--help`, `--version` and `new` start at once: a parameter option
(`--K 5`, `--nu 0.05`) is collected as text here and checked against the example's
`Param` by the command that receives it.
"""

from __future__ import annotations

import argparse

from .._check_options import add_arguments
from .._vocabulary import DTYPES
from ._options import (
    PARAMS_HELP,
    Parser,
    add_device,
    add_example,
    add_format,
    add_processes,
    add_timeout,
    positive_float,
    positive_int,
)
from ._search_parsers import bisect_parser, fuzz_parser
from ._words import param_words, suggestion


def _run(sub) -> None:
    p = sub.add_parser(
        "run", help="loss and gradient of one variant, saved to the store", epilog=PARAMS_HELP
    )
    add_example(p)
    p.add_argument("variant", help="one of its variants (weanj list EXAMPLE)")
    p.add_argument(
        "--inputs",
        metavar="FILE",
        help="an HDF5 file with the example's arrays (default: its shared inputs)",
    )
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float64",
        help="dtype under test (default: float64)",
    )
    p.add_argument(
        "--out", metavar="FILE", help="write the gradient file here (default: the store, or runs/)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace a recorded reference (the old one is kept aside), or an --out file "
        "weanj did not write (never a .py module)",
    )
    add_processes(p)
    add_device(p, several=False)
    p.add_argument(
        "--traceback",
        action="store_true",
        help="where the variant raises, print its whole traceback (stderr)",
    )
    add_timeout(p, "the variant")


def _check(sub) -> None:
    p = sub.add_parser(
        "check", help="run every available variant, check its gradients and judge every pair"
    )
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    add_arguments(p)  # every option of a check, as declared (`_check_options`)
    add_format(p)


def _diff(sub) -> None:
    p = sub.add_parser("diff", help="judge the stored gradients of an example pairwise")
    add_example(p)
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="only these stored runs and the pairs among them, named as the views name "
        "them (V, V@float32, recorded/V); default: all",
    )
    p.add_argument("--json", action="store_true", help="the judgement as JSON on stdout")
    p.add_argument("--plot", action="store_true", help="pictures of |Δ| in results/EXAMPLE/diff/")
    p.add_argument(
        "--plot-recorded",
        action="store_true",
        help="with --plot: also every pair with a recorded reference",
    )


def _bench(sub) -> None:
    p = sub.add_parser(
        "bench", help="time forward and gradient, compile time and memory", epilog=PARAMS_HELP
    )
    add_example(p)
    p.add_argument("--variants", nargs="+", metavar="VARIANT", help="default: all available")
    p.add_argument(
        "--sizes",
        "--ns",
        nargs="+",
        type=positive_int,
        metavar="SIZE",
        help="problem sizes to sweep (default: the example's)",
    )
    p.add_argument(
        "--over",
        nargs="+",
        metavar="NAME V",
        help="also time against a parameter or a shape's "
        "dimension at the middle size, e.g. --over T 10 20 40",
    )
    p.add_argument(
        "--memory-over",
        nargs="*",
        metavar="NAME V",
        help="scratch memory against a parameter or dimension "
        "(compiled only), e.g. --memory-over K 10 100 1000 "
        "(default: the example's; no values: none)",
    )
    p.add_argument(
        "--memory-Ks",
        nargs="*",
        type=positive_int,
        metavar="K",
        default=None,
        help="the same as --memory-over K ... (no values: none)",
    )
    p.add_argument("--dtype", choices=DTYPES, default="float64", help="default: float64")
    add_device(p, several=False)
    p.add_argument(
        "--devices",
        type=positive_int,
        default=None,
        metavar="N",
        help="devices the sharded variants span",
    )
    p.add_argument(
        "--budget-s",
        type=positive_float,
        default=5.0,
        help="stop a variant's sweep once its gradient takes longer (seconds; default 5)",
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        default=None,
        help="timing samples per point (default 10, 3 from size 512)",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace the earlier records of the variants measured",
    )
    add_timeout(p, "a variant's point")


def build_parser() -> argparse.ArgumentParser:
    from .._environment import __version__

    parser = Parser(
        prog="weanj", description="Cross-validate Julia reference kernels and their JAX ports."
    )
    parser.add_argument("--version", action="version", version=f"weanj {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )

    p = sub.add_parser("list", help="the project's examples, variants, families, availability")
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    p = sub.add_parser("new", help="scaffold a new example in the current project")
    p.add_argument("name", metavar="NAME", help="the example's name, e.g. 11-mine")
    p = sub.add_parser("inputs", help="regenerate or verify the shared HDF5 inputs")
    p.add_argument("action", choices=["regenerate", "verify"])
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    _run(sub)
    _diff(sub)
    _check(sub)
    _bench(sub)
    p = sub.add_parser("plot", help="PNG figures from the stored benchmark results")
    add_example(p)
    _report(sub)
    bisect_parser(sub)
    fuzz_parser(sub)
    p = sub.add_parser(
        "clean",
        help="list (and with --yes remove) the results weanj wrote for variants and examples "
        "no longer registered",
    )
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    p.add_argument(
        "--yes",
        action="store_true",
        help="remove what it lists (without it, only listed; CI=true in the environment counts "
        "as --yes)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="only list what would go (the default; also under CI=true)",
    )
    return parser


def _report(sub) -> None:
    p = sub.add_parser(
        "report", help="one self-contained page of every verdict and benchmark (runs nothing)"
    )
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    p.add_argument(
        "--out", metavar="FILE", help="where to write it (default: results/report.html or .md)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the --out file even if weanj did not write it (never a .py module)",
    )
    p.add_argument(
        "--format", choices=["html", "md"], default=None, help="default: from --out, else html"
    )


TAKES_PARAMS = {"run", "bench", "bisect"}


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    """The long options a (sub)command takes."""
    return [o for a in parser._actions for o in a.option_strings if o.startswith("--")]


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, str]]:
    """The parsed options and the parameter words (`{name: text}`). An unknown option
    is reported by the subcommand's parser, with the option it probably meant."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices[args.command]
    params = param_words(extras) if args.command in TAKES_PARAMS else None
    if extras and params is None:
        command.error(
            f"unrecognized arguments: {' '.join(extras)}"
            + suggestion(extras[0], options_of(command))
        )
    args.options = options_of(command)
    return args, params or {}
