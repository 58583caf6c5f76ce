"""One-off check of acceptance point 1 at full size: `jax-wavefront`'s loss is bitwise
`jax-lex`'s on the shared inputs and on random inputs with n up to 257, K up to 300.

Usage (from the repository root; a few minutes on two cores):

    python benchmarks/wavefront_bitwise.py [--ns 1 2 17 64 128 255 256 257] [--Ks 1 7 100 300]

Prints one line per case and exits non-zero if any loss differs. Only losses are
compared here (the gradients agree under the tolerance policy, tests/crossval/): JAX
AD of `jax-lex` takes seconds to minutes at these sizes.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import weanj

EXAMPLE = "02-gauss-seidel"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ns", type=int, nargs="+", default=[1, 2, 17, 64, 128, 255, 256, 257])
    p.add_argument("--Ks", type=int, nargs="+", default=[1, 7, 100, 300])
    p.add_argument("--seed", type=int, default=20261130)
    args = p.parse_args(argv)

    lex, wave = weanj.variant(EXAMPLE, "jax-lex"), weanj.variant(EXAMPLE, "jax-wavefront")
    d = weanj.load_inputs(EXAMPLE)
    cases = [("shared inputs", d["theta"], d["uobs"], d["K"])]
    for n in args.ns:
        for K in args.Ks:
            rng = np.random.default_rng([args.seed, n, K])
            theta, uobs = rng.standard_normal((n, n)), 0.01 * rng.standard_normal((n, n))
            cases.append((f"random n={n} K={K}", theta, uobs, K))

    failures = 0
    for label, theta, uobs, K in cases:
        a, b = float(lex.loss(theta, uobs, K)), float(wave.loss(theta, uobs, K))
        same = a == b
        failures += not same
        print(
            f"{label:<24} jax-lex {a!r:<22} jax-wavefront {b!r:<22} "
            f"{'bitwise equal' if same else f'DIFFER by {weanj.ulp_distance(a, b)} ulp'}",
            flush=True,
        )
    print(f"{len(cases) - failures}/{len(cases)} bitwise equal")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
