"""The `weanj` command line.

Every command reports a user's mistake (unknown name, bad file, bad array, missing
backend) as one line on stderr and exit code 2, never a traceback. Commands that judge
(`diff`, `check`) exit 1 when a same-family pair disagrees.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys

import numpy as np

from ._errors import InputError, WeanjError


def _param_help() -> dict[str, str]:
    """`{parameter name: help}` over the parameters of every example of the project."""
    from ._registry import example, example_names

    out: dict[str, str] = {}
    for name in example_names():
        for p in example(name).params:
            out.setdefault(p.name, f"{p.help or 'parameter'} (of {name}")
            if name not in out[p.name]:
                out[p.name] += f", {name}"
    return {k: v + ")" for k, v in out.items()}


def _add_param_options(parser: argparse.ArgumentParser, default_help: str) -> None:
    """One `--NAME` option per static parameter of any example of the project (`--K`, ...)."""
    for name, text in _param_help().items():
        parser.add_argument(
            f"--{name}", type=int, default=None, metavar=name, help=f"{text}; {default_help}"
        )


def param_options(args: argparse.Namespace, example_name: str) -> dict[str, int | None]:
    """The example's parameters given on the command line; one given that the example does
    not have is a mistake, not silently ignored."""
    from ._registry import example

    ex = example(example_name)
    for name in _param_help():
        if getattr(args, name, None) is not None and name not in ex.param_names:
            known = ", ".join(f"--{p}" for p in ex.param_names) or "none"
            raise InputError(f"{ex.name} has no parameter {name} (its parameters: {known})")
    return {p: getattr(args, p, None) for p in ex.param_names}


def cmd_inputs(args: argparse.Namespace) -> int:
    from ._inputs import verify_inputs, write_inputs
    from ._registry import example, example_names

    names = [example(n).name for n in args.examples] if args.examples else example_names()
    if args.action == "regenerate":
        for name in names:
            print(f"wrote {write_inputs(name)}")
        return 0
    failed = 0
    for _name, ok, message in verify_inputs(names):
        print(("ok    " if ok else "FAIL  ") + message, file=sys.stdout if ok else sys.stderr)
        failed += not ok
    return 2 if failed else 0


def cmd_run(args: argparse.Namespace) -> int:
    from ._registry import example
    from ._run import check_out_path, evaluate

    ex = example(args.example)
    params = param_options(args, ex.name)
    check_out_path(args.out)  # a place no gradient may go is refused before the variant runs
    # No progress line before `evaluate`: a mistake it finds must be the only stderr line.
    ev = evaluate(ex.name, args.variant, inputs=args.inputs, params=params, dtype=args.dtype)
    if not ev.finite:
        raise InputError(f"{args.variant} produced NaN/Inf on these inputs; nothing was saved")
    path = ev.save(args.out)
    shown = "".join(f"{k}={v} " for k, v in ev.params.items())
    norms = "  ".join(
        f"‖∂L/∂{name}‖ = {float(np.linalg.norm(g)):.6e}" for name, g in ev.gradients.items()
    )
    print(
        f"{ex.name} {ev.variant} {shown}{ev.dtype}: loss = {ev.loss:.15e}  {norms}  "
        f"({ev.seconds:.2f} s)"
    )
    print(f"saved {path}")
    if args.out is None and ev.apart_note():
        print(ev.apart_note())
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from ._registry import example, example_names, families, unavailable_variants
    from ._root import project_config

    config = project_config()
    names = [example(n).name for n in args.examples] if args.examples else example_names()
    print(f"project {config.root} ({config.where})")
    for name in names:
        ex = example(name)
        params = ", ".join(f"{p.name}={p.default}" for p in ex.params) or "no parameters"
        print(f"{name}: {ex.title}" if ex.title else name)
        print(f"  arrays {', '.join(ex.arrays)}; gradient wrt {', '.join(ex.wrt_names)}; {params}")
        missing = unavailable_variants(name)
        for family, members in families(name).items():
            print(f"  family {family}:")
            for member in members:
                why = missing.get(member)
                print(f"    {member:<24} {'available' if why is None else 'unavailable: ' + why}")
    return 0


def _delegate(module: str):
    """Commands whose logic lives in their own module, imported only when used."""

    def run(args: argparse.Namespace) -> int:
        return importlib.import_module(f"weanj.{module}").command(args)

    return run


class _Parser(argparse.ArgumentParser):
    """argparse, with the defaults of options shown in `--help` where they have one."""

    def _get_formatter(self):
        return argparse.HelpFormatter(prog=self.prog, max_help_position=30, width=100)


def _suggestion(parser: argparse.ArgumentParser, unknown: str) -> str:
    """`; did you mean --K?` for a mistyped option (case, a missing dash, a typo)."""
    flag = unknown.split("=", 1)[0]
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    by_case = [o for o in options if o.lower() == flag.lower() or o.lower() == "-" + flag.lower()]
    close = by_case or difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="weanj",
        description="Cross-validate Julia reference kernels and their JAX ports.",
    )
    parser.add_argument("--version", action="version", version=f"weanj {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    p = sub.add_parser("list", help="the project's examples, variants, families, availability")
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("new", help="scaffold a new example in the current project")
    p.add_argument("name", metavar="NAME", help="the example's name, e.g. 11-mine")
    p.set_defaults(func=_delegate("_scaffold"))

    p = sub.add_parser("inputs", help="regenerate or verify the shared HDF5 inputs")
    p.add_argument("action", choices=["regenerate", "verify"])
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    p.set_defaults(func=cmd_inputs)

    p = sub.add_parser("run", help="loss and gradient of one variant, saved to the store")
    p.add_argument("example", help="an example of the project (weanj list)")
    p.add_argument("variant", help="one of its variants (weanj list EXAMPLE)")
    p.add_argument(
        "--inputs",
        metavar="FILE",
        help="an HDF5 file with the example's arrays (default: its shared inputs)",
    )
    _add_param_options(p, "default: the inputs file's")
    p.add_argument(
        "--dtype",
        choices=["float64", "float32"],
        default="float64",
        help="cast the inputs to this dtype (default: float64)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="write the gradient file here (default: the store, results/EXAMPLE/gradients/)",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("diff", help="compare the stored gradients of an example pairwise")
    p.add_argument("example", help="an example of the project (weanj list)")
    p.add_argument("--json", action="store_true", help="the report as JSON on stdout")
    p.add_argument(
        "--plot",
        action="store_true",
        help="PNGs of |Δ| in results/EXAMPLE/diff/ (failing pairs, else same-family ones)",
    )
    p.set_defaults(func=_delegate("_diff"))

    p = sub.add_parser("check", help="run every available variant, fd-check and diff them")
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    p.set_defaults(func=_delegate("_check"))

    p = sub.add_parser("bench", help="time forward and gradient, compile time and memory")
    p.add_argument("example", help="an example of the project (weanj list)")
    p.add_argument("--variants", nargs="+", metavar="VARIANT", help="default: all available")
    p.add_argument(
        "--sizes",
        "--ns",
        nargs="+",
        type=int,
        metavar="SIZE",
        help="problem sizes to sweep, e.g. the grid size n (default: the example's)",
    )
    _add_param_options(p, "value while the sizes are swept (default: the example's)")
    p.add_argument(
        "--over",
        nargs="+",
        metavar="PARAM V",
        help="also time against a parameter at the middle size, e.g. --over T 10 20 40",
    )
    p.add_argument(
        "--memory-over",
        nargs="*",
        metavar="PARAM V",
        help="scratch memory against a parameter (compiled only) at the middle size, e.g. "
        "--memory-over K 10 100 1000 (default: the example's; no values: none)",
    )
    p.add_argument(
        "--memory-Ks",
        nargs="*",
        type=int,
        metavar="K",
        default=None,
        help="the same as --memory-over K ... (no values: none)",
    )
    p.add_argument(
        "--dtype", choices=["float64", "float32"], default="float64", help="default: float64"
    )
    p.add_argument(
        "--device", choices=["cpu", "gpu"], default="cpu", help="JAX device kind (default: cpu)"
    )
    p.add_argument(
        "--devices",
        type=int,
        default=None,
        metavar="N",
        help="devices the sharded variants span (default: all of --device's kind; CPU: "
        "simulate N with XLA_FLAGS=--xla_force_host_platform_device_count=N)",
    )
    p.add_argument(
        "--budget-s",
        type=float,
        default=5.0,
        help="stop a variant's sweep once its gradient takes longer (seconds; default 5)",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=None,
        help="timing samples per point (default 10, 3 from size 512, fewer within the budget)",
    )
    p.set_defaults(func=_delegate("_bench"))

    p = sub.add_parser("plot", help="PNG figures from the stored benchmark results")
    p.add_argument("example", help="an example of the project (weanj list)")
    p.set_defaults(func=_delegate("_plot"))
    return parser


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """Parse; an unknown option is reported by the subcommand's parser (its usage), with
    the option it probably meant."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        command = sub.choices[args.command]
        command.error(
            f"unrecognized arguments: {' '.join(extras)}" + _suggestion(command, extras[0])
        )
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parse(argv)
        return int(args.func(args) or 0)
    except WeanjError as e:
        print(f"weanj: error: {e}", file=sys.stderr)
        return e.exit_code
    except OSError as e:  # a file system refusal at the edge: one line, not a traceback
        where = f" ({e.filename})" if e.filename else ""
        print(f"weanj: error: {e.strerror or e}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("weanj: interrupted", file=sys.stderr)
        return 130
