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


def _add_param_options(parser: argparse.ArgumentParser) -> None:
    """One `--NAME` option per static parameter of any example (e.g. `--K`)."""
    from ._registry import example, example_names

    seen = set()
    for name in example_names():
        for p in example(name).params:
            if p.name not in seen:
                seen.add(p.name)
                parser.add_argument(
                    f"--{p.name}",
                    type=int,
                    default=None,
                    help=f"{p.help} (default: the inputs file's)",
                )


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
    params = {p.name: getattr(args, p.name, None) for p in ex.params}
    # No progress line before `evaluate`: a mistake it finds must be the only stderr line.
    ev = evaluate(ex.name, args.variant, inputs=args.inputs, params=params, dtype=args.dtype)
    if not (np.isfinite(ev.loss) and np.all(np.isfinite(ev.gradient))):
        raise InputError(f"{args.variant} produced NaN/Inf on these inputs; nothing was saved")
    path = ev.save(args.out)
    shown = " ".join(f"{k}={v}" for k, v in ev.params.items())
    print(
        f"{ex.name} {ev.variant} {shown} {ev.dtype}: loss = {ev.loss:.15e}  "
        f"‖∇loss‖ = {float(np.linalg.norm(ev.gradient)):.6e}  ({ev.seconds:.2f} s)"
    )
    print(f"saved {path}")
    return 0


def _delegate(module: str):
    """Commands whose logic lives in their own module, imported only when used."""

    def run(args: argparse.Namespace) -> int:
        return importlib.import_module(f"weanj.{module}").command(args)

    return run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="weanj",
        description="Cross-validate Julia reference kernels and their JAX ports.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("inputs", help="regenerate or verify the shared HDF5 inputs")
    p.add_argument("action", choices=["regenerate", "verify"])
    p.add_argument("examples", nargs="*", metavar="EXAMPLE", help="default: all")
    p.set_defaults(func=cmd_inputs)

    p = sub.add_parser("run", help="loss and gradient of one variant, saved to the store")
    p.add_argument("example")
    p.add_argument("variant")
    p.add_argument("--inputs", metavar="FILE", help="an HDF5 file with the example's arrays")
    _add_param_options(p)
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
    p.add_argument("--ns", nargs="+", type=int, metavar="N", help="grid sizes")
    p.add_argument("--K", type=int, default=None, help="iterations (default 100)")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument(
        "--budget-s",
        type=float,
        default=5.0,
        help="stop a variant's sweep once its gradient takes longer (seconds)",
    )
    p.add_argument("--samples", type=int, default=None, help="timing samples per point")
    p.add_argument(
        "--memory-Ks",
        nargs="*",
        type=int,
        metavar="K",
        default=None,
        help="Ks of the memory-against-K records at the middle n (default 10 100 1000; none: skip)",
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
