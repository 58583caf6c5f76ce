"""Benchmark of issue #6: the wavefront lexicographic sweeps and the discrete adjoints.

Prints, from one run (medians of `weanj.time_median`), the numbers of the acceptance
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
                                 [--json FILE]

`jax-lex`'s gradient takes seconds per call at n = 256, hence its own (small) number of
samples. Runs on JAX's default device; `--json` also writes the records (the seed
notebook's fields) to FILE.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import weanj

# (example, variant); the plain ones are the references the ratios are taken against.
VARIANTS = [
    ("02-gauss-seidel", "jax-lex"),
    ("02-gauss-seidel", "jax-wavefront"),
    ("02-gauss-seidel", "jax-rb"),
    ("02-gauss-seidel", "jax-rb-adjoint"),
    ("01-jacobi", "jax-jacobi"),
    ("01-jacobi", "jax-jacobi-adjoint"),
]
ADJOINTS = {
    "jax-wavefront": "jax-lex",
    "jax-rb-adjoint": "jax-rb",
    "jax-jacobi-adjoint": "jax-jacobi",
}


def inputs(n: int, seed: int = 1):
    """θ ~ N(0, 1) and observations of the size of a solution, as float64 device arrays."""
    rng = np.random.default_rng(seed)
    with jax.enable_x64(True):
        return (
            jnp.asarray(rng.standard_normal((n, n))),
            jnp.asarray(0.01 * rng.standard_normal((n, n))),
        )


def temp_bytes(fn, *args) -> int:
    """XLA's scratch memory for the compiled function (excludes inputs and outputs)."""
    return int(fn.lower(*args).compile().memory_analysis().temp_size_in_bytes)


def time_variant(example, name, theta, uobs, K, samples, grad_samples):
    v = weanj.variant(example, name)
    t0 = time.perf_counter()
    jax.block_until_ready(v.grad(theta, uobs, K))  # compiles
    compile_s = time.perf_counter() - t0
    forward_s = weanj.time_median(
        lambda: v.loss(theta, uobs, K), sync=jax.block_until_ready, samples=samples
    )
    grad_s = weanj.time_median(
        lambda: v.grad(theta, uobs, K), sync=jax.block_until_ready, samples=grad_samples, warmup=0
    )
    n = theta.shape[0]
    return dict(
        dtype="Float64",
        variant=name,
        N=n * n,
        n=n,
        K=K,
        forward_s=forward_s,
        grad_s=grad_s,
        compile_s=compile_s,
        peak_mem_bytes=temp_bytes(v.grad, theta, uobs, K),
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--K", type=int, default=100)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--lex-grad-samples", type=int, default=3)
    p.add_argument("--mem-n", type=int, default=128)
    p.add_argument("--json", default=None, help="also write the records to this file")
    args = p.parse_args(argv)

    print(
        f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}, "
        f"float64, n = {args.n}, K = {args.K}"
    )
    theta, uobs = inputs(args.n)
    records = {}
    for example, name in VARIANTS:
        grad_samples = args.lex_grad_samples if name == "jax-lex" else args.samples
        r = time_variant(example, name, theta, uobs, args.K, args.samples, grad_samples)
        records[name] = r
        print(
            f"  {name:<20} forward {1e3 * r['forward_s']:10.3f} ms   "
            f"gradient {1e3 * r['grad_s']:10.3f} ms   grad/forward "
            f"{r['grad_s'] / r['forward_s']:6.2f}   compile {r['compile_s']:6.2f} s"
        )

    lex, wave = records["jax-lex"], records["jax-wavefront"]
    print("acceptance 2:")
    print(
        f"  jax-lex gradient / jax-wavefront gradient = "
        f"{lex['grad_s'] / wave['grad_s']:.1f}   (target >= 10)"
    )
    print(
        f"  jax-wavefront forward / jax-lex forward   = "
        f"{wave['forward_s'] / lex['forward_s']:.3f} (target <= 0.6)"
    )
    print("acceptance 3 (gradient / forward, target <= 2.5):")
    for name in ADJOINTS:
        print(f"  {name:<20} {records[name]['grad_s'] / records[name]['forward_s']:.2f}")

    print(f"acceptance 4 (XLA temp bytes of the gradient, n = {args.mem_n}; target <= 1.1):")
    mt, mu = inputs(args.mem_n)
    mem_records = []
    for example, name in VARIANTS:
        grad = weanj.variant(example, name).grad
        small, large = temp_bytes(grad, mt, mu, 10), temp_bytes(grad, mt, mu, 1000)
        tag = "" if name in ADJOINTS else "   (JAX AD, for comparison)"
        print(
            f"  {name:<20} K=10 {small:>10d}   K=1000 {large:>10d}   ratio {large / small:.3f}{tag}"
        )
        for K, b in ((10, small), (1000, large)):
            mem_records.append(
                dict(
                    dtype="Float64",
                    variant=name,
                    N=args.mem_n**2,
                    n=args.mem_n,
                    K=K,
                    forward_s=None,
                    grad_s=None,
                    compile_s=None,
                    peak_mem_bytes=b,
                )
            )

    if args.json:
        payload = {
            "environment": weanj.environment(jax.devices()[0].platform),
            "records": list(records.values()) + mem_records,
        }
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2, default=float)
            f.write("\n")


if __name__ == "__main__":
    main()
