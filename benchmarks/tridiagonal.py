"""Benchmark of issue #14: every 04-tridiagonal variant at one size, in one run.

Prints, float64 at m = n (default 1024), for every JAX-based variant available here:
forward (loss) time, gradient time (all four arrays), gradient / forward, and the XLA
temp memory of the compiled gradient (`grad.lower(*args).compile().memory_analysis()
.temp_size_in_bytes`); then the acceptance points of issue 14, each from this run:

- `jax-thomas-adjoint` gradient / its forward (target <= 2.5);
- `jax-thomas-adjoint` gradient / `jax-thomas`'s JAX-AD gradient (target <= 0.6);
- `jax-thomas-adjoint` temp memory / `jax-thomas`'s (target <= 0.5).

Usage (from the repository root):

    python benchmarks/tridiagonal.py [--n 1024] [--samples 10] [--variants ...] [--json FILE]

Medians over `--samples` calls after one warm-up call, forward and gradient calls
alternating (compilation excluded; the first call's time, compilation included, is
printed as `first call`). Runs on JAX's default
device. Julia variants are left out: this script times JAX programs only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp

import weanj

EXAMPLE = "04-tridiagonal"
ADJOINT, PLAIN = "jax-thomas-adjoint", "jax-thomas"


def inputs(n: int, seed: int = 4):
    """The example's own generator at m = n, as float64 device arrays in call order."""
    ex = weanj.example(EXAMPLE)
    arrays = ex.sizes.generate(seed, n)
    with jax.enable_x64(True):
        return tuple(jnp.asarray(arrays[name]) for name in ex.arrays)


def measure(name: str, args, samples: int) -> dict:
    """Medians of `samples` forward and gradient calls, taken alternately (one forward, one
    gradient, ...) so that both see the same load on a shared machine; the ratio of the
    two is what the acceptance points compare."""
    v = weanj.variant(EXAMPLE, name)
    t0 = time.perf_counter()
    jax.block_until_ready(v.loss(*args))
    jax.block_until_ready(v.grad(*args))
    first = time.perf_counter() - t0
    forward, grad = [], []
    for _ in range(samples):
        forward.append(weanj.time_median(lambda: v.loss(*args), jax.block_until_ready, 1, 0))
        grad.append(weanj.time_median(lambda: v.grad(*args), jax.block_until_ready, 1, 0))
    memory = v.grad.lower(*args).compile().memory_analysis()
    return {
        "variant": name,
        "forward_s": statistics.median(forward),
        "grad_s": statistics.median(grad),
        "first_call_s": first,
        "temp_bytes": int(memory.temp_size_in_bytes),
    }


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
    parser.add_argument("--json", default=None, help="also write the records to this file")
    args = parser.parse_args(argv)

    names = args.variants or [
        name for name in weanj.variants(EXAMPLE) if weanj.variant(EXAMPLE, name).backend != "julia"
    ]
    data = inputs(args.n)
    device = jax.devices()[0]
    print(
        f"04-tridiagonal, m = n = {args.n}, float64, {device.platform} ({device.device_kind}), "
        f"jax {jax.__version__}, {args.samples} samples"
    )
    print(
        f"{'variant':<22} {'forward [ms]':>12} {'gradient [ms]':>13} {'grad/fwd':>8} "
        f"{'temp [MiB]':>10} {'first call [s]':>14}"
    )
    records = []
    for name in names:
        r = measure(name, data, args.samples)
        records.append(r)
        print(
            f"{name:<22} {1e3 * r['forward_s']:>12.2f} {1e3 * r['grad_s']:>13.2f} "
            f"{r['grad_s'] / r['forward_s']:>8.2f} {r['temp_bytes'] / 2**20:>10.1f} "
            f"{r['first_call_s']:>14.2f}",
            flush=True,
        )
    by = {r["variant"]: r for r in records}
    if ADJOINT in by and PLAIN in by:
        adj, plain = by[ADJOINT], by[PLAIN]
        print()
        print(
            f"{ADJOINT} gradient / its forward:        {adj['grad_s'] / adj['forward_s']:.2f}"
            "  (target <= 2.5)"
        )
        print(
            f"{ADJOINT} gradient / {PLAIN} gradient: {adj['grad_s'] / plain['grad_s']:.2f}"
            "  (target <= 0.6)"
        )
        print(
            f"{ADJOINT} temp / {PLAIN} temp:         "
            f"{adj['temp_bytes'] / plain['temp_bytes']:.2f}  (target <= 0.5)"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "n": args.n,
                    "m": args.n,
                    "dtype": "float64",
                    "environment": weanj.environment(),
                    "records": records,
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
