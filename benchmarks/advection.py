"""Benchmark of issue 13 (03-advection): reverse-mode memory and time of rematerialisation.

Prints, float64, on JAX's default device, from one run:

1. XLA's scratch memory (`memory_analysis().temp_size_in_bytes` of the compiled gradient,
   nothing run) of `jax-muscl` and `jax-muscl-checkpoint` at n (default 128) for
   T = 10, 100, 1000, and the ratio at T = 1000 (target ≤ 0.10);
2. forward and gradient times of both at T = 200 (medians over interleaved rounds, each
   sample one `weanj.time_median` call), and the ratio of the gradient times (target ≤ 2).

Usage (from the repository root):

    python benchmarks/advection.py [--n 128] [--T 200] [--memory-T 1000] [--samples 10]
                                   [--variants jax-muscl jax-muscl-checkpoint ...]
                                   [--json FILE]

Other variants of the example (`kernex-muscl`, `jax-muscl-enzyme`, `jax-muscl-minmax`)
can be added with `--variants`; the two of the acceptance point always run. The inputs
are the example's own generator at size n (seed 0): random fields, rough velocities.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp

import weanj

EXAMPLE = "03-advection"
PLAIN, REMAT = "jax-muscl", "jax-muscl-checkpoint"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--T", type=int, default=200, help="steps for the timings")
    parser.add_argument("--memory-T", type=int, default=1000, help="steps for the memory ratio")
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--variants", nargs="*", default=[])
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()

    ex = weanj.example(EXAMPLE)
    arrays = ex.sizes.generate(0, args.n)
    with jax.enable_x64(True):
        inputs = [jnp.asarray(arrays[name]) for name in ex.arrays]
    names = [PLAIN, REMAT] + [v for v in args.variants if v not in (PLAIN, REMAT)]
    records = []

    print(f"03-advection, n = {args.n}, float64, {jax.default_backend()}")
    print("\nXLA temp memory of the gradient [MB] (compiled, not run):")
    memory = {}
    Ts = sorted({10, 100, args.memory_T})
    print(f"  {'variant':<22}" + "".join(f"{'T = ' + str(T):>14}" for T in Ts))
    for name in names:
        grad = weanj.variant(EXAMPLE, name).grad
        row = {T: grad.lower(*inputs, T).compile().memory_analysis().temp_size_in_bytes for T in Ts}
        memory[name] = row
        print(f"  {name:<22}" + "".join(f"{row[T] / 1e6:>14.2f}" for T in Ts))
        for T, temp in row.items():
            records.append({"variant": name, "n": args.n, "T": T, "temp_bytes": temp})
    ratio_memory = memory[REMAT][args.memory_T] / memory[PLAIN][args.memory_T]
    print(f"  {REMAT} / {PLAIN} at T = {args.memory_T}: {ratio_memory:.3f} (target <= 0.10)")

    # Interleaved: one sample of every variant, then the next round, so that load changes
    # on a shared machine hit all variants alike; the medians are over the rounds.
    print(f"\nmedian times at T = {args.T} [ms] ({args.samples} interleaved rounds):")
    print(f"  {'variant':<22}{'compile grad [s]':>18}{'forward':>12}{'gradient':>12}")
    variants = {name: weanj.variant(EXAMPLE, name) for name in names}
    compile_s = {}
    for name, v in variants.items():
        t0 = time.perf_counter()
        jax.block_until_ready(v.grad(*inputs, args.T))
        compile_s[name] = time.perf_counter() - t0
        jax.block_until_ready(v.loss(*inputs, args.T))
    samples = {name: {"forward": [], "gradient": []} for name in names}
    for _ in range(args.samples):
        for name, v in variants.items():
            for kind, fn in (("forward", v.loss), ("gradient", v.grad)):
                samples[name][kind].append(
                    weanj.time_median(
                        lambda fn=fn: fn(*inputs, args.T),
                        sync=jax.block_until_ready,
                        samples=1,
                        warmup=0,
                    )
                )
    times = {}
    for name in names:
        forward = statistics.median(samples[name]["forward"])
        gradient = statistics.median(samples[name]["gradient"])
        times[name] = gradient
        print(f"  {name:<22}{compile_s[name]:>18.2f}{forward * 1e3:>12.1f}{gradient * 1e3:>12.1f}")
        records.append(
            {
                "variant": name,
                "n": args.n,
                "T": args.T,
                "dtype": "float64",
                "forward_s": forward,
                "grad_s": gradient,
                "compile_s": compile_s[name],
            }
        )
    ratio_time = times[REMAT] / times[PLAIN]
    print(f"  {REMAT} / {PLAIN} gradient time: {ratio_time:.2f} (target <= 2)")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"environment": weanj.environment(jax.default_backend()), "records": records},
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
