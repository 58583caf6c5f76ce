"""Benchmark of issue 18: per-device memory of the sharded Poisson variants.

For `jax-jacobi-sharded` and `jax-rb-sharded` (`weanj/examples/_sharded.py`) on 1, 2, 4
and 8 devices, and for their single-device siblings `jax-jacobi` and `jax-rb`, at n, K
(default 512, 20), float64, prints XLA's per-device memory of the compiled gradient and
loss (`.lower(...).compile().memory_analysis()`: temp, i.e. scratch, and argument
bytes), the acceptance ratio (sharded gradient temp on 8 devices over the single-device
variant's gradient temp; target ≤ 1/4), whether each sharded loss is bitwise the
single-device one on random inputs, and forward/gradient times.

The devices are simulated CPU devices: the script runs itself in a subprocess with
`XLA_FLAGS=--xla_force_host_platform_device_count=<max devices>` (the flag must be set
before JAX starts) and restricts the variants to the first N with
`weanj.set_devices(N)`, as `weanj bench --devices N` does. Simulated devices share
the host's cores and memory: the memory figures are what XLA plans per device; the
times say nothing about real multi-device speed.

Usage (from the repository root):

    python benchmarks/sharded.py [--n 512] [--K 20] [--devices 1 2 4 8] [--samples 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys


def child(n: int, K: int, device_counts: list[int], samples: int) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import weanj
    from weanj.examples import _sharded, gauss_seidel, jacobi

    print(
        f"jax {jax.__version__}, {jax.device_count()} {jax.devices()[0].platform} devices"
        f" (simulated), n = {n}, K = {K}, float64",
        flush=True,
    )
    pairs = [
        ("jax-jacobi", jacobi.jacobi_loss, "jax-jacobi-sharded", _sharded.jacobi_sharded_loss),
        ("jax-rb", gauss_seidel.rb_loss, "jax-rb-sharded", _sharded.rb_sharded_loss),
    ]
    rng = np.random.default_rng(18)
    with jax.enable_x64(True):  # as weanj's Precise wrapper runs every variant
        theta = jnp.asarray(rng.standard_normal((n, n)))
        uobs = jnp.asarray(0.01 * rng.standard_normal((n, n)))

        def measure(fn):
            loss = jax.jit(fn, static_argnums=2).lower(theta, uobs, K).compile()
            grad = jax.jit(jax.grad(fn), static_argnums=2).lower(theta, uobs, K).compile()
            value = float(loss(theta, uobs))
            jax.block_until_ready(grad(theta, uobs))
            loss_s = weanj.time_median(
                lambda: loss(theta, uobs), sync=jax.block_until_ready, samples=samples
            )
            grad_s = weanj.time_median(
                lambda: grad(theta, uobs), sync=jax.block_until_ready, samples=samples
            )
            return dict(
                loss=value,
                grad_temp=grad.memory_analysis().temp_size_in_bytes,
                grad_args=grad.memory_analysis().argument_size_in_bytes,
                loss_temp=loss.memory_analysis().temp_size_in_bytes,
                forward_ms=1e3 * loss_s,
                grad_ms=1e3 * grad_s,
            )

        rows, ratios = [], []
        for single_name, single, sharded_name, sharded in pairs:
            weanj.set_devices(None)
            ref = measure(single)
            rows.append((single_name, 1, ref, ""))
            for count in device_counts:
                weanj.set_devices(count)
                r = measure(sharded)
                bitwise = "yes" if r["loss"].hex() == ref["loss"].hex() else "NO"
                rows.append((sharded_name, count, r, bitwise))
                if count == 8:
                    ratios.append((sharded_name, single_name, r["grad_temp"] / ref["grad_temp"]))
        weanj.set_devices(None)

    mib = 2.0**20
    print(
        "\n| variant | devices | gradient temp [MiB] | gradient args [MiB] | loss temp [MiB]"
        " | loss bitwise single-device | forward [ms] | gradient [ms] |"
    )
    print("| --- | ---: | ---: | ---: | ---: | :---: | ---: | ---: |")
    for name, count, r, bitwise in rows:
        print(
            f"| `{name}` | {count} | {r['grad_temp'] / mib:.3f} | {r['grad_args'] / mib:.3f}"
            f" | {r['loss_temp'] / mib:.3f} | {bitwise or '–'} | {r['forward_ms']:.1f}"
            f" | {r['grad_ms']:.1f} |"
        )
    print()
    for sharded_name, single_name, ratio in ratios:
        verdict = "ok" if ratio <= 0.25 else "ABOVE TARGET"
        print(
            f"{sharded_name} gradient temp on 8 devices / {single_name}'s:"
            f" {ratio:.3f} (target <= 0.25: {verdict})"
        )
    exact = all(bitwise != "NO" for *_, bitwise in rows)
    print(f"losses bitwise equal to the single-device variants': {'all' if exact else 'NOT ALL'}")
    if not exact or any(ratio > 0.25 for *_, ratio in ratios):
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--K", type=int, default=20)
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.n, args.K, args.devices, args.samples)
        return
    env = dict(os.environ)
    env["XLA_FLAGS"] = " ".join(
        [env.get("XLA_FLAGS", ""), f"--xla_force_host_platform_device_count={max(args.devices)}"]
    ).strip()
    command = [sys.executable, __file__, "--child", *sys.argv[1:]]
    sys.exit(subprocess.run(command, env=env, check=False).returncode)


if __name__ == "__main__":
    main()
