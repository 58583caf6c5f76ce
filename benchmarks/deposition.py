"""Benchmark of issue 15: the cloud-in-cell variants of 05-deposition, with a compiled loop
as the floor.

Prints, from one run (medians of `weanj.time_median`), at P particles on an n×n grid
(default P = 2²⁰, n = 256: 16 particles per cell), float64, uniform random positions:

1. for every `cic` variant available here: forward (loss) and gradient times, the first
   gradient call (compilation included), and XLA's temp memory of the compiled loss and
   gradient;
2. the same loss and its hand-written gradient as Numba loops (the compiled floor: what
   a tuned serial loop costs), if Numba is importable; skipped with a message if not.
   Numba is not a dependency of weanj: `pip install numba` to get this row;
3. the acceptance point: gradient / forward of `jax-scatter` and `jax-segment-sum`
   (target ≤ 2.5).

Usage (from the repository root):

    python benchmarks/deposition.py [--P 1048576] [--n 256] [--samples 10] [--json FILE]

Runs on JAX's default device; `--json` also writes the records (the seed notebook's
fields, with N = P) to FILE.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import weanj
from weanj.examples import deposition as dep

EXAMPLE = "05-deposition"
RATIO_TARGETS = ("jax-scatter", "jax-segment-sum")


def temp_bytes(fn, *args) -> int:
    """XLA's scratch memory for the compiled function (excludes inputs and outputs)."""
    return int(fn.lower(*args).compile().memory_analysis().temp_size_in_bytes)


def record(name, P, n, forward_s, grad_s, compile_s, loss_mem, grad_mem):
    return dict(
        dtype="Float64",
        variant=name,
        N=P,
        P=P,
        n=n,
        K=None,
        forward_s=forward_s,
        grad_s=grad_s,
        compile_s=compile_s,
        peak_mem_bytes=grad_mem,
        loss_temp_bytes=loss_mem,
    )


def time_variant(name, arrays, samples):
    v = weanj.variant(EXAMPLE, name)
    args = weanj.example(EXAMPLE).args(arrays, {})
    t0 = time.perf_counter()
    jax.block_until_ready(v.grad(*args))  # compiles
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(v.loss(*args))
    forward_s = weanj.time_median(
        lambda: v.loss(*args), sync=jax.block_until_ready, samples=samples
    )
    grad_s = weanj.time_median(lambda: v.grad(*args), sync=jax.block_until_ready, samples=samples)
    P, n = arrays["pos"].shape[0], arrays["rhoobs"].shape[0]
    return record(
        name,
        P,
        n,
        forward_s,
        grad_s,
        compile_s,
        temp_bytes(v.loss, *args),
        temp_bytes(v.grad, *args),
    )


def numba_floor():
    """The loss and its hand-derived gradient (tests/crossval/reference_deposition.py) as
    Numba loops, or None with the reason."""
    try:
        import numba
    except ImportError:
        return None, "Numba is not installed (pip install numba): no compiled-loop floor"

    @numba.njit(cache=False)
    def deposit(pos, q, n):
        rho = np.zeros((n, n))
        for p in range(pos.shape[0]):
            gx = pos[p, 0] * n - 0.5
            gy = pos[p, 1] * n - 0.5
            fx0, fy0 = np.floor(gx), np.floor(gy)
            fx, fy = gx - fx0, gy - fy0
            i0, j0 = int(fx0) % n, int(fy0) % n  # Numba keeps Python's floor mod
            i1, j1 = (i0 + 1) % n, (j0 + 1) % n
            rho[i0, j0] += q[p] * ((1 - fx) * (1 - fy))
            rho[i1, j0] += q[p] * (fx * (1 - fy))
            rho[i0, j1] += q[p] * ((1 - fx) * fy)
            rho[i1, j1] += q[p] * (fx * fy)
        return rho

    @numba.njit(cache=False)
    def loss(pos, q, rhoobs):
        rho = deposit(pos, q, rhoobs.shape[0])
        s = 0.0
        for i in range(rho.shape[0]):
            for j in range(rho.shape[1]):
                s += (rho[i, j] - rhoobs[i, j]) ** 2
        return s

    @numba.njit(cache=False)
    def grad(pos, q, rhoobs):
        n = rhoobs.shape[0]
        r = 2.0 * (deposit(pos, q, n) - rhoobs)
        gpos, gq = np.zeros_like(pos), np.zeros_like(q)
        for p in range(pos.shape[0]):
            gx = pos[p, 0] * n - 0.5
            gy = pos[p, 1] * n - 0.5
            fx0, fy0 = np.floor(gx), np.floor(gy)
            fx, fy = gx - fx0, gy - fy0
            i0, j0 = int(fx0) % n, int(fy0) % n
            i1, j1 = (i0 + 1) % n, (j0 + 1) % n
            r00, r10, r01, r11 = r[i0, j0], r[i1, j0], r[i0, j1], r[i1, j1]
            gq[p] = (
                (1 - fx) * (1 - fy) * r00
                + fx * (1 - fy) * r10
                + (1 - fx) * fy * r01
                + fx * fy * r11
            )
            gpos[p, 0] = n * q[p] * ((1 - fy) * (r10 - r00) + fy * (r11 - r01))
            gpos[p, 1] = n * q[p] * ((1 - fx) * (r01 - r00) + fx * (r11 - r10))
        return gpos, gq

    return (loss, grad, numba.__version__), None


def time_numba(fns, arrays, samples, reference):
    loss, grad, version = fns
    pos, q, rhoobs = arrays["pos"], arrays["q"], arrays["rhoobs"]
    t0 = time.perf_counter()
    gpos, gq = grad(pos, q, rhoobs)  # compiles (deposit and grad)
    value = loss(pos, q, rhoobs)
    compile_s = time.perf_counter() - t0
    # The floor must compute the same thing: checked against jax-segment-sum's numbers.
    ref_loss, ref_grad = reference
    assert abs(value - ref_loss) <= 1e-12 * abs(ref_loss), (value, ref_loss)
    for g, name in ((gpos, "pos"), (gq, "q")):
        assert np.max(np.abs(g - ref_grad[name])) <= 1e-11 * np.max(np.abs(ref_grad[name]))
    forward_s = weanj.time_median(lambda: loss(pos, q, rhoobs), samples=samples)
    grad_s = weanj.time_median(lambda: grad(pos, q, rhoobs), samples=samples)
    P, n = pos.shape[0], rhoobs.shape[0]
    return record(f"numba-loop ({version})", P, n, forward_s, grad_s, compile_s, None, None)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--P", type=int, default=2**20)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--json", default=None, help="also write the records to this file")
    args = p.parse_args(argv)

    print(
        f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}, float64, "
        f"P = {args.P}, n = {args.n} ({args.P / args.n**2:g} particles per cell)"
    )
    arrays = dep.generate(args.seed, args.P, args.n, kinks=False)
    weanj.example(EXAMPLE).validate(arrays)
    with jax.enable_x64(True):
        arrays = {k: jnp.asarray(a) for k, a in arrays.items()}
    names = [n for n in weanj.families(EXAMPLE)["cic"] if n in weanj.variants(EXAMPLE)]
    for name, why in weanj.unavailable_variants(EXAMPLE).items():
        print(f"  skipped {name}: {why}")

    header = (
        f"  {'variant':<24} {'forward ms':>11} {'gradient ms':>12} {'grad/fwd':>9} "
        f"{'1st grad s':>11} {'temp MB loss':>13} {'temp MB grad':>13}"
    )
    print(header)
    records = {}

    def show(r):
        mb = [
            f"{b / 2**20:13.1f}" if b is not None else f"{'—':>13}"
            for b in (r["loss_temp_bytes"], r["peak_mem_bytes"])
        ]
        print(
            f"  {r['variant']:<24} {1e3 * r['forward_s']:11.2f} {1e3 * r['grad_s']:12.2f} "
            f"{r['grad_s'] / r['forward_s']:9.2f} {r['compile_s']:11.2f} {mb[0]} {mb[1]}"
        )

    for name in names:
        records[name] = time_variant(name, arrays, args.samples)
        show(records[name])

    fns, why = numba_floor()
    if fns is None:
        print(f"  skipped the compiled loop: {why}")
    else:
        plain = {k: np.asarray(a) for k, a in arrays.items()}
        v = weanj.variant(EXAMPLE, "jax-segment-sum")
        a = weanj.example(EXAMPLE).args(arrays, {})
        reference = (float(v.loss(*a)), {k: np.asarray(g) for k, g in v.grad(*a).items()})
        r = time_numba(fns, plain, args.samples, reference)
        records[r["variant"]] = r
        show(r)

    print("acceptance 4 (gradient / forward, target <= 2.5):")
    for name in RATIO_TARGETS:
        if name in records:
            ratio = records[name]["grad_s"] / records[name]["forward_s"]
            print(f"  {name:<20} {ratio:.2f}  {'ok' if ratio <= 2.5 else 'ABOVE TARGET'}")

    if args.json:
        payload = {
            "environment": weanj.environment(jax.devices()[0].platform),
            "records": list(records.values()),
        }
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2, default=float)
            f.write("\n")


if __name__ == "__main__":
    main()
