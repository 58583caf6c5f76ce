"""One-off check of acceptance point 1 at full size: `jax-wavefront`'s loss is bitwise
`jax-lex`'s on the shared inputs and on random inputs with n up to 257, K up to 300.

Usage (from the repository root; a few minutes on two cores):

    python benchmarks/wavefront_bitwise.py [--ns 1 2 17 64 128 255 256 257] [--Ks 1 7 100 300]

Prints one line per case and exits non-zero if any loss differs. Only losses are
compared here (the gradients agree under the tolerance policy, tests/crossval/): JAX
AD of `jax-lex` takes seconds to minutes at these sizes. The random inputs are the
example's own generator (`Sizes.generate`) seeded with `[--seed, n, K]`; the calls take
their arguments from weanj's `Inputs` (`.args("float64")`), as `weanj check` does.
"""

from __future__ import annotations

import argparse
import sys

import _common

import weanj
from weanj._model._inputs import from_arrays

EXAMPLE = "02-gauss-seidel"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ns", type=int, nargs="+", default=[1, 2, 17, 64, 128, 255, 256, 257])
    p.add_argument("--Ks", type=int, nargs="+", default=[1, 7, 100, 300])
    p.add_argument("--seed", type=int, default=20261130)
    args = p.parse_args(argv)

    lex, wave = weanj.variant(EXAMPLE, "jax-lex"), weanj.variant(EXAMPLE, "jax-wavefront")
    ex = weanj.example(EXAMPLE)
    shared = weanj.read_inputs(EXAMPLE)
    cases = [("shared inputs", shared.args("float64"))]
    for n in args.ns:
        for K in args.Ks:
            # A seed sequence per case: the same θ and uobs the script drew before it took
            # them from the generator (numpy's default_rng accepts the sequence).
            arrays = ex.sizes.generate([args.seed, n, K], n)
            cases.append((f"random n={n} K={K}", from_arrays(ex, arrays, {"K": K}).args("float64")))

    failures = 0
    for label, call in cases:
        a, b = float(lex.loss(*call)), float(wave.loss(*call))
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
    sys.exit(_common.entry(main))
