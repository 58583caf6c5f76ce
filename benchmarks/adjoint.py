"""Benchmark of issue #6: the wavefront lexicographic sweeps and the discrete adjoints.

Prints, from one run of `weanj bench`'s measurement (`weanj._commands.bench.bench`: the
example's inputs at size n, seed 1; first call; medians of the forward and gradient
times; XLA's scratch memory of the compiled gradient), the numbers of the acceptance
points, float64:

1. forward (loss) and gradient times at n, K (default 256, 100) of `jax-lex`,
   `jax-wavefront`, `jax-rb`, `jax-rb-adjoint`, `jax-jacobi`, `jax-jacobi-adjoint`;
2. `jax-lex` gradient / `jax-wavefront` gradient (target ≥ 10) and `jax-wavefront`
   forward / `jax-lex` forward (target ≤ 0.6);
3. gradient / forward for the three adjoint gradients (target ≤ 2.5);
4. XLA temp memory of the three adjoint gradients at K = 1000 over K = 10, n = 128
   (target ≤ 1.1), with JAX AD of the plain variants beside them.

Usage (from the repository root):

    python benchmarks/adjoint.py [--n 256] [--K 100] [--samples 10] [--lex-grad-samples 3]
                                 [--mem-n 128] [--device cpu|gpu] [--quiet]
                                 [--json FILE] [--save]

`jax-lex`'s gradient takes seconds per call at n = 256, hence its own (small) number of
samples (forward and gradient alike: one `bench` call takes one count). The memory
points at `--mem-n` are compiled only; `bench` also times that size once at K = 10.
`--json` writes the records to FILE, `--save` merges them into
`results/<example>/bench/` as `weanj bench` does.
"""

from __future__ import annotations

import argparse
import sys

import _common

# (example, variant); the plain ones are the references the ratios are taken against.
VARIANTS = {
    "02-gauss-seidel": ["jax-lex", "jax-wavefront", "jax-rb", "jax-rb-adjoint"],
    "01-jacobi": ["jax-jacobi", "jax-jacobi-adjoint"],
}
ADJOINTS = {
    "jax-wavefront": "jax-lex",
    "jax-rb-adjoint": "jax-rb",
    "jax-jacobi-adjoint": "jax-jacobi",
}
MEMORY_K = (10, 1000)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--K", type=int, default=100)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--lex-grad-samples", type=int, default=3)
    p.add_argument("--mem-n", type=int, default=128)
    _common.add_options(p)
    args = p.parse_args(argv)

    run = _common.Session(args)
    _common.header(f"float64, n = {args.n}, K = {args.K}", run.device)
    # The memory points are compiled only, at the middle (here: the only) size of a
    # sweep; at another n than the timings', bench times that size too, once at K = 10.
    memory_over = ("K", MEMORY_K) if args.mem_n == args.n else None
    for example, names in VARIANTS.items():
        for name in names:
            samples = args.lex_grad_samples if name == "jax-lex" else args.samples
            run.bench(
                example,
                [name],
                sizes=[args.n],
                params={"K": args.K},
                samples=samples,
                memory_over=memory_over,
            )
        if memory_over is None:
            run.bench(
                example,
                names,
                sizes=[args.mem_n],
                params={"K": MEMORY_K[0]},
                samples=1,
                memory_over=("K", MEMORY_K),
            )
    for example in VARIANTS:
        _common.table(
            example,
            [
                r
                for r in run.records
                if r["example"] == example and r["n"] == args.n and r["K"] == args.K
            ],
        )
    records = _common.timed(run.records, sweep="n", n=args.n, K=args.K)
    _common.needed(records, ["jax-lex", "jax-wavefront", *ADJOINTS], f"timing at n = {args.n}")

    lex, wave = records["jax-lex"], records["jax-wavefront"]
    print("acceptance 2:")
    _common.acceptance(
        "jax-lex gradient / jax-wavefront gradient",
        _common.ratio(lex["grad_s"], wave["grad_s"]),
        10,
        at_least=True,
    )
    _common.acceptance(
        "jax-wavefront forward / jax-lex forward",
        _common.ratio(wave["forward_s"], lex["forward_s"]),
        0.6,
    )
    print("acceptance 3 (gradient / forward):")
    for name in ADJOINTS:
        r = records[name]
        _common.acceptance(name, _common.ratio(r["grad_s"], r["forward_s"]), 2.5)

    print(f"acceptance 4 (XLA temp bytes of the gradient, n = {args.mem_n}):")
    temp = _common.memory(run.records, "K", n=args.mem_n)
    small, large = MEMORY_K
    for names in VARIANTS.values():
        for name in names:
            row = temp[name]
            tag = "" if name in ADJOINTS else "   (JAX AD, for comparison)"
            print(
                f"  {name:<20} K={small} {row[small]:>10d}   K={large} {row[large]:>10d}   "
                f"ratio {row[large] / row[small]:.3f}{tag}"
            )
    for name in ADJOINTS:
        row = temp[name]
        growth = _common.ratio(row[large], row[small])
        _common.acceptance(f"{name} K={large} / K={small}", growth, 1.1)
    run.finish(args)


if __name__ == "__main__":
    sys.exit(_common.entry(main))
