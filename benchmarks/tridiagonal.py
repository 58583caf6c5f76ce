"""Benchmark of issue #14: every 04-tridiagonal variant at one size, in one run.

Prints, float64 at m = n (default 1024), for every variant available here except Julia
ones, from one run of `weanj bench`'s measurement (`weanj._commands.bench.bench`): forward (loss)
time, gradient time (all four arrays), gradient / forward, the first gradient call
(compilation included) and the XLA temp memory of the compiled gradient
(`grad.lower(*args).compile().memory_analysis().temp_size_in_bytes`); then the
acceptance points of issue 14, each from this run:

- `jax-thomas-adjoint` gradient / its forward (target <= 2.5);
- `jax-thomas-adjoint` gradient / `jax-thomas`'s JAX-AD gradient (target <= 0.6);
- `jax-thomas-adjoint` temp memory / `jax-thomas`'s (target <= 0.5).

Usage (from the repository root):

    python benchmarks/tridiagonal.py [--n 1024] [--samples 10] [--variants ...]
                                     [--device cpu|gpu] [--quiet] [--json FILE] [--save]

Medians over `--samples` calls after the first (compiling) gradient call, the forward's
first, then the gradient's. The inputs are the example's own generator at m = n, seed 1
(`weanj bench`'s).
"""

from __future__ import annotations

import argparse
import sys

import _common

import weanj

EXAMPLE = "04-tridiagonal"
ADJOINT, PLAIN = "jax-thomas-adjoint", "jax-thomas"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024, help="m = n (default 1024)")
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument(
        "--variants",
        nargs="+",
        default=None,
        help="default: every available variant except Julia ones",
    )
    _common.add_options(parser)
    args = parser.parse_args(argv)

    names = args.variants or [
        name for name in weanj.variants(EXAMPLE) if weanj.variant(EXAMPLE, name).backend != "julia"
    ]
    run = _common.Session(args)
    _common.header(f"04-tridiagonal, m = n = {args.n}, float64, {args.samples} samples", run.device)
    records = _common.timed(
        run.bench(EXAMPLE, names, sizes=[args.n], samples=args.samples), n=args.n
    )
    _common.table(EXAMPLE, list(records.values()))
    if ADJOINT in records and PLAIN in records:
        adj, plain = records[ADJOINT], records[PLAIN]
        _common.acceptance(
            f"{ADJOINT} gradient / its forward", _common.ratio(adj["grad_s"], adj["forward_s"]), 2.5
        )
        _common.acceptance(
            f"{ADJOINT} gradient / {PLAIN} gradient",
            _common.ratio(adj["grad_s"], plain["grad_s"]),
            0.6,
        )
        _common.acceptance(
            f"{ADJOINT} temp / {PLAIN} temp",
            _common.ratio(adj["peak_mem_bytes"], plain["peak_mem_bytes"]),
            0.5,
        )
    run.finish(args)
    return 0


if __name__ == "__main__":
    sys.exit(_common.entry(main))
