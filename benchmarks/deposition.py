"""Benchmark of issue 15: the cloud-in-cell variants of 05-deposition, with a compiled loop
as the floor.

Prints, from one run of `weanj bench`'s measurement (`weanj._commands.bench.bench`: the
example's inputs at P particles, seed 1, uniform random positions on an n×n grid with
n = √(P/16), i.e. 16 particles per cell; default P = 2²⁰, n = 256), float64:

1. for every `cic` variant available here: forward (loss) and gradient times, the first
   gradient call (compilation included), and XLA's temp memory of the compiled gradient
   and (beside `bench`, same inputs) of the compiled loss;
2. the same loss and its hand-written gradient as Numba loops (the compiled floor: what
   a tuned serial loop costs) on the same inputs, checked against `jax-segment-sum` to
   1e-12 / 1e-11 before they are timed, if Numba is importable; skipped with a message
   if not. Numba is not a dependency of weanj: `pip install numba` to get this row;
3. the acceptance point: gradient / forward of `jax-scatter` and `jax-segment-sum`
   (target ≤ 2.5).

Usage (from the repository root):

    python benchmarks/deposition.py [--P 1048576] [--samples 10] [--device cpu|gpu]
                                    [--quiet] [--json FILE] [--save]

`--json` writes the records (each with the loss's `loss_temp_bytes`, and the Numba row)
to FILE; `--save` merges `bench`'s records into `results/05-deposition/bench/`
as `weanj bench` does (not the Numba row: it is no variant of the example).
"""

from __future__ import annotations

import argparse
import sys
import time

import _common
import numpy as np

import weanj
from weanj._backends._runtime import runtime_of
from weanj._model._inputs import from_arrays
from weanj._pipeline.bench import _measure as measure

EXAMPLE = "05-deposition"
RATIO_TARGETS = ("jax-scatter", "jax-segment-sum")


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


def time_numba(fns, arrays, samples, reference) -> dict:
    """The Numba loop's record, in `bench`'s fields; its own timing loop
    (`weanj.time_median`), since it is no variant `bench` could time."""
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
    P, n = pos.shape[0], rhoobs.shape[0]
    return {
        "variant": f"numba-loop ({version})",
        "device": "cpu",
        "dtype": "float64",
        "N": pos.size + q.size,
        "P": P,
        "n": n,
        "forward_s": weanj.time_median(lambda: loss(pos, q, rhoobs), samples=samples),
        "grad_s": weanj.time_median(lambda: grad(pos, q, rhoobs), samples=samples),
        "compile_s": compile_s,
        "peak_mem_bytes": None,
        "loss_temp_bytes": None,
        "timed": True,
    }


def loss_temp_bytes(name: str, arrays, device: str) -> int | None:
    """XLA's scratch memory of the compiled loss on the inputs `bench` measured, placed as
    `bench` places them (None for a variant that is not JAX-compiled)."""
    ex, v = weanj.example(EXAMPLE), weanj.variant(EXAMPLE, name)
    if not hasattr(v.loss, "lower"):
        return None
    runtime = runtime_of(v)
    where = runtime.placement(runtime.device(device), v.multi_device)
    args, _ = measure.call_args(ex, arrays, {}, "float64", where, runtime)
    return runtime.scratch_bytes(v.loss, args)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--P", type=int, default=2**20)
    p.add_argument("--samples", type=int, default=10)
    _common.add_options(p)
    args = p.parse_args(argv)

    ex = weanj.example(EXAMPLE)
    run = _common.Session(args)
    # bench's own inputs at this size (the example's Sizes, bench's seed)
    arrays = measure.generator_for(ex, {})(args.P)
    n = arrays["rhoobs"].shape[0]
    _common.header(
        f"05-deposition, float64, P = {args.P}, n = {n} ({args.P / n**2:g} particles per cell)",
        run.device,
    )
    names = [name for name in weanj.families(EXAMPLE)["cic"] if name in weanj.variants(EXAMPLE)]
    for name, why in weanj.unavailable_variants(EXAMPLE).items():
        print(f"  skipped {name}: {why}")
    records = _common.timed(
        run.bench(EXAMPLE, names, sizes=[args.P], samples=args.samples), P=args.P
    )
    # Kept beside bench's records, not in them: a field of its own would make a saved
    # record another series than `weanj bench`'s (`_io._bench.merge` merges by series).
    loss_temp = {name: loss_temp_bytes(name, arrays, run.device) for name in records}

    extra = []
    fns, why = numba_floor()
    if fns is None:
        print(f"  skipped the compiled loop: {why}")
    else:
        inputs = from_arrays(ex, arrays)
        v = weanj.variant(EXAMPLE, "jax-segment-sum")
        call = inputs.args("float64")
        reference = (float(v.loss(*call)), {k: np.asarray(g) for k, g in v.grad(*call).items()})
        extra.append(time_numba(fns, inputs.run_arrays("float64"), args.samples, reference))

    _common.table(EXAMPLE, [*records.values(), *extra])
    print("XLA temp memory [MiB], compiled loss / gradient:")
    for name, r in records.items():
        shown = [
            "—" if b is None else f"{b / 2**20:.1f}" for b in (loss_temp[name], r["peak_mem_bytes"])
        ]
        print(f"  {name:<20} {shown[0]} / {shown[1]}")

    print("acceptance 4 (gradient / forward):")
    for name in RATIO_TARGETS:
        if name in records:
            r = records[name]
            _common.acceptance(name, _common.ratio(r["grad_s"], r["forward_s"]), 2.5)
    run.finish(
        args, [{**r, "loss_temp_bytes": loss_temp.get(r["variant"])} for r in run.records] + extra
    )


if __name__ == "__main__":
    sys.exit(_common.entry(main))
