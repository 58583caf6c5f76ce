"""Benchmark of issue 13 (03-advection): reverse-mode memory and time of rematerialisation.

Prints, float64, from one run of `weanj bench`'s measurement (`weanj._commands.bench.bench`):

1. XLA's scratch memory (`memory_analysis().temp_size_in_bytes` of the compiled gradient,
   nothing run) of `jax-muscl` and `jax-muscl-checkpoint` at n (default 128) for
   T = 10, 100, 1000, and the ratio at T = 1000 (target ≤ 0.10);
2. forward and gradient times of both at T = 200 (medians of `--samples` calls, the
   forward's first, then the gradient's), and the ratio of the gradient times
   (target ≤ 2).

Usage (from the repository root):

    python benchmarks/advection.py [--n 128] [--T 200] [--memory-T 1000] [--samples 10]
                                   [--variants jax-muscl jax-muscl-checkpoint ...]
                                   [--device cpu|gpu] [--quiet] [--json FILE] [--save]

Other variants of the example (`kernex-muscl`, `jax-muscl-enzyme`, `jax-muscl-minmax`)
can be added with `--variants`; the two of the acceptance point always run. The inputs
are the example's own generator at size n, seed 1 (`weanj bench`'s): random fields,
rough velocities.
"""

from __future__ import annotations

import argparse
import sys

import _common

EXAMPLE = "03-advection"
PLAIN, REMAT = "jax-muscl", "jax-muscl-checkpoint"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--T", type=int, default=200, help="steps for the timings")
    parser.add_argument("--memory-T", type=int, default=1000, help="steps for the memory ratio")
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--variants", nargs="*", default=[])
    _common.add_options(parser)
    args = parser.parse_args(argv)

    names = [PLAIN, REMAT] + [v for v in args.variants if v not in (PLAIN, REMAT)]
    memory_T = tuple(sorted({10, 100, args.memory_T}))
    run = _common.Session(args)
    _common.header(f"03-advection, n = {args.n}, float64", run.device)
    records = run.bench(
        EXAMPLE,
        names,
        sizes=[args.n],
        params={"T": args.T},
        samples=args.samples,
        memory_over=("T", memory_T),
    )

    print("\nXLA temp memory of the gradient [MB] (compiled, not run):")
    memory = _common.memory(records, "T", n=args.n)
    print(f"  {'variant':<22}" + "".join(f"{'T = ' + str(T):>14}" for T in memory_T))
    for name in names:
        if name in memory:
            row = memory[name]
            print(f"  {name:<22}" + "".join(f"{row[T] / 1e6:>14.2f}" for T in memory_T))
    _common.needed(memory, [REMAT, PLAIN], "memory sweep")
    _common.acceptance(
        f"{REMAT} / {PLAIN} at T = {args.memory_T}",
        _common.ratio(memory[REMAT][args.memory_T], memory[PLAIN][args.memory_T]),
        0.10,
    )

    times = _common.needed(
        _common.timed(records, sweep="n", n=args.n, T=args.T), [REMAT, PLAIN], "timing"
    )
    print(f"\nmedian times at T = {args.T} ({args.samples} samples each):")
    _common.table(EXAMPLE, list(times.values()))
    _common.acceptance(
        f"{REMAT} / {PLAIN} gradient time",
        _common.ratio(times[REMAT]["grad_s"], times[PLAIN]["grad_s"]),
        2,
    )
    run.finish(args)


if __name__ == "__main__":
    sys.exit(_common.entry(main))
