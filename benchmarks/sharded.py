"""Benchmark of issue 18: per-device memory of the sharded Poisson variants.

For `jax-jacobi-sharded` and `jax-rb-sharded` (`weanj/examples/_sharded.py`) on 1, 2, 4
and 8 devices, and for their single-device siblings `jax-jacobi` and `jax-rb`, at n, K
(default 512, 20), float64, prints from `weanj bench`'s measurement
(`weanj._commands.bench.bench(..., devices=N)`: the example's inputs at n, seed 1) XLA's
per-device scratch memory of the compiled gradient and the forward/gradient times; beside
`bench`, on the same inputs, XLA's plan of the compiled gradient's arguments and of the
loss's scratch (`.lower(...).compile().memory_analysis()`, inputs uncommitted so that
the argument bytes are each device's share), whether each sharded loss is bitwise the
single-device one, and the acceptance ratio (sharded gradient temp on 8 devices over
the single-device variant's gradient temp; target ≤ 1/4).

The devices are simulated CPU devices: the script runs itself in a subprocess with
`XLA_FLAGS=--xla_force_host_platform_device_count=<max devices>` (the flag must be set
before JAX starts), and `bench(devices=N)` restricts the variants to the first N, as
`weanj bench --devices N` does. Simulated devices share the host's cores and memory:
the memory figures are what XLA plans per device; the times say nothing about real
multi-device speed. Exits 1 if a ratio is above 1/4 or a loss differs.

Usage (from the repository root):

    python benchmarks/sharded.py [--n 512] [--K 20] [--devices 1 2 4 8] [--samples 5]
                                 [--quiet] [--json FILE] [--save]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import _common  # imports no JAX: the child starts it, after XLA_FLAGS is set

PAIRS = [  # (example, single-device variant, its sharded sibling)
    ("01-jacobi", "jax-jacobi", "jax-jacobi-sharded"),
    ("02-gauss-seidel", "jax-rb", "jax-rb-sharded"),
]
TARGET = 0.25


def plan(example: str, name: str, arrays, K: int) -> dict:
    """The loss's value and XLA's per-device plan of the compiled gradient's arguments
    and the loss's scratch, for the current device selection. The inputs go in
    uncommitted (numpy), so that XLA chooses their sharding: `bench` replicates them,
    which would count every device's copy of the whole θ and uobs as its arguments."""
    import weanj
    from weanj._backends._runtime import runtime_of
    from weanj._pipeline.bench import _measure as measure

    ex, v = weanj.example(example), weanj.variant(example, name)
    args, _ = measure.call_args(ex, arrays, {"K": K}, "float64", None, runtime_of(v))
    grad = v.grad.lower(*args).compile().memory_analysis()
    loss = v.loss.lower(*args).compile().memory_analysis()
    return {
        "loss": float(v.loss(*args)),
        "grad_args_bytes": int(grad.argument_size_in_bytes),
        "loss_temp_bytes": int(loss.temp_size_in_bytes),
    }


def child(args: argparse.Namespace) -> None:
    import jax

    import weanj
    from weanj._backends._devices import using_devices
    from weanj._pipeline.bench import _measure as measure

    run = _common.Session(args)
    _common.jax_device(run.device)  # no GPU: one line and exit 2, not a traceback
    simulated = " (simulated)" if run.device == "cpu" else ""
    _common.header(
        f"{len(jax.devices(run.device))} {run.device} devices{simulated}, n = {args.n}, "
        f"K = {args.K}, float64",
        run.device,
    )
    point = {"sizes": [args.n], "params": {"K": args.K}, "samples": args.samples}
    rows, ratios, json_records = [], [], []
    for example, single, sharded in PAIRS:
        arrays = measure.generator_for(weanj.example(example), {})(args.n)
        (ref,) = run.bench(example, [single], **point)
        ref_plan = plan(example, single, arrays, args.K)
        rows.append((ref, ref_plan, ""))
        for devices in args.devices:
            (r,) = run.bench(example, [sharded], devices=devices, **point)
            with using_devices(devices, run.device):
                r_plan = plan(example, sharded, arrays, args.K)
            bitwise = "yes" if r_plan["loss"].hex() == ref_plan["loss"].hex() else "NO"
            rows.append((r, r_plan, bitwise))
            if devices == 8:
                ratios.append((sharded, single, r["peak_mem_bytes"] / ref["peak_mem_bytes"]))
    for r, p, bitwise in rows:
        json_records.append({**r, **p, "loss_bitwise_single_device": bitwise or None})

    mib = 2.0**20
    print(
        "\n| variant | devices | gradient temp [MiB] | gradient args [MiB] | loss temp [MiB]"
        " | loss bitwise single-device | forward [ms] | gradient [ms] |"
    )
    print("| --- | ---: | ---: | ---: | ---: | :---: | ---: | ---: |")
    for r, p, bitwise in rows:
        print(
            f"| `{r['variant']}` | {r['devices']} | {r['peak_mem_bytes'] / mib:.3f}"
            f" | {p['grad_args_bytes'] / mib:.3f} | {p['loss_temp_bytes'] / mib:.3f}"
            f" | {bitwise or '–'} | {1e3 * r['forward_s']:.1f} | {1e3 * r['grad_s']:.1f} |"
        )
    print()
    met = [
        _common.acceptance(
            f"{sharded_name} gradient temp on 8 devices / {single_name}'s", ratio, TARGET
        )
        for sharded_name, single_name, ratio in ratios
    ]
    if 8 not in args.devices:
        print("  (the acceptance point is at 8 devices: --devices ... 8)")
    exact = all(bitwise != "NO" for *_, bitwise in rows)
    print(f"losses bitwise equal to the single-device variants': {'all' if exact else 'NOT ALL'}")
    run.finish(args, json_records)
    if not exact or not all(met):
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--K", type=int, default=20)
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    _common.add_options(parser)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    env = dict(os.environ)
    env["XLA_FLAGS"] = " ".join(
        [env.get("XLA_FLAGS", ""), f"--xla_force_host_platform_device_count={max(args.devices)}"]
    ).strip()
    command = [sys.executable, __file__, "--child", *sys.argv[1:]]
    sys.exit(subprocess.run(command, env=env, check=False).returncode)


if __name__ == "__main__":
    sys.exit(_common.entry(main))
