"""The `weanj` command line.

Every command reports a user's mistake (unknown name, bad file, bad array, missing
backend) as one line on stderr and exit code 2, never a traceback. Commands that judge
(`diff`, `check`) exit 1 when a same-family pair disagrees.
"""

from __future__ import annotations

import argparse
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
    from ._run import evaluate

    ex = example(args.example)
    params = param_options(args, ex.name)
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


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="weanj",
        description="Cross-validate Julia reference kernels and their JAX ports.",
    )
    parser.add_argument("--version", action="version", version=f"weanj {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    p.add_argument("example")
    p.add_argument("variant")
    p.add_argument("--inputs", metavar="FILE", help="an HDF5 file with the example's arrays")
    _add_param_options(p, "default: the inputs file's")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument("--out", metavar="FILE", help="write here instead of the store")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("diff", help="compare the stored gradients of an example pairwise")
    p.add_argument("example")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--plot", action="store_true", help="PNG heat maps of |Δ|")
    p.set_defaults(func=_delegate("_diff"))

    p = sub.add_parser("check", help="run every available variant, fd-check and diff them")
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    p.set_defaults(func=_delegate("_check"))

    p = sub.add_parser("bench", help="time forward and gradient, compile time and memory")
    p.add_argument("example")
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
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
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
    p.add_argument("example")
    p.set_defaults(func=_delegate("_plot"))
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except WeanjError as e:
        print(f"weanj: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("weanj: interrupted", file=sys.stderr)
        return 130
