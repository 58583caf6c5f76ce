"""What a check of one variant costs, against the kernel's own `value_and_grad` (issue 60).

Run by hand from the repository root:

    python benchmarks/check_cost.py                      # n = 256 and 1024, then the re-check
    python benchmarks/check_cost.py --sizes 256 --T 20   # one size
    python benchmarks/check_cost.py --recheck-n 2048     # the re-check of two 4M-element arrays

The kernel is a user's long simulation as the issue tried it: a 2-D nonlinear heat
stencil, `T` explicit steps by `lax.scan`, two `wrt` arrays (the initial field `u0` and the
conductivity `kappa`), written into a fresh project in a temporary folder. For each size,
in fresh processes (nothing compiled, JAX's persistent compilation cache off):

- **the user's own**: `jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))` in float64: its
  first call (compilation included) and the median of 5 warm calls;
- **the check**: `weanj check --fresh --variants jax-scan` (float64 with the Taylor and
  jvp checks, and float32 against it), its wall seconds and the kernel's executions it
  counted (`check.json`'s `cost`).

Printed: the check's seconds as the user's first call plus k warm calls,
`k = (check − first) / warm` (the goal: k ≤ 12 at n = 1024 with a gradient of ≥ 1 s;
it was about 100–190 before issue 60), and as a multiple of the user's first call (issue
73's goal: ≤ 2.5 at n = 256, T = 20, where compiling is most of both); the executions per
phase, and the programs each evaluation compiled, with their seconds.

Then the **re-check** with nothing changed, at `--recheck-n` (two arrays of n² float64):
its wall seconds against the time to import JAX plus the time to read the evaluation
records once (`numpy.load` of every record member), the goal ≤ 1.5; and whether it wrote
any file under `results/` (it must not).

Timings move with the machine's load: run it idle, and read the ratios of one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

KERNEL = '''
"""A 2-D nonlinear heat stencil: T explicit steps, two wrt arrays (the benchmark's)."""
import os
import numpy as np
import jax
import jax.numpy as jnp
import weanj

N, T = int(os.environ["HEAT_N"]), int(os.environ["HEAT_T"])


def generate(seed):
    rng = np.random.default_rng(seed)
    return {"u0": rng.random((N, N)), "kappa": 0.1 + 0.05 * rng.random((N, N)),
            "uobs": rng.random((N, N))}


def step(u, kappa):
    lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u
    return u + kappa * (1 + u * u) * lap * 0.2


def heat(u0, kappa, uobs, T):
    u, _ = jax.lax.scan(lambda u, _: (step(u, kappa), None), u0, None, length=T)
    return jnp.sum((u - uobs) ** 2)


ex = weanj.register_example(weanj.Example(
    name="20-heat", arrays=("u0", "kappa", "uobs"), wrt=("u0", "kappa"),
    params=(weanj.Param("T", default=T),), generate=generate))
weanj.jax_variant(ex, "jax-scan", family="heat", loss=heat)
'''

PYPROJECT = """
[project]
name = "heat-cost"
version = "0"

[tool.weanj]
x64 = true
examples = ["heat"]
"""

USER = """
import json, statistics, sys, time
t0 = time.perf_counter()
import jax
jax.config.update("jax_enable_x64", True)
import heat
args = [heat.generate(0)[k] for k in ("u0", "kappa", "uobs")]
f = jax.jit(jax.value_and_grad(heat.heat, argnums=(0, 1)), static_argnums=3)
t1 = time.perf_counter()
jax.block_until_ready(f(*args, heat.T))
first = time.perf_counter() - t1
warm = []
for _ in range(5):
    t = time.perf_counter()
    jax.block_until_ready(f(*args, heat.T))
    warm.append(time.perf_counter() - t)
print(json.dumps({"import": t1 - t0, "first": first, "warm": statistics.median(warm)}))
"""


def _env(root: Path, n: int, steps: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "WEANJ_ROOT"}
    env.update(HEAT_N=str(n), HEAT_T=str(steps), PYTHONPATH=str(root))
    env["WEANJ_COMPILATION_CACHE"] = str(root / ".cold-cache")  # made afresh each run
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    return env


def _project(root: Path) -> None:
    (root / "heat.py").write_text(textwrap.dedent(KERNEL))
    (root / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))


def _run(argv: list[str], root: Path, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[1:])} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return seconds, done.stdout


WEANJ = [sys.executable, "-m", "weanj"]


@contextlib.contextmanager
def _fresh_project(n: int, steps: int) -> Iterator[tuple[Path, dict[str, str]]]:
    """`(root, env)` of the heat project at n in a temporary folder, its inputs made."""
    with tempfile.TemporaryDirectory(prefix="weanj-cost-") as folder:
        root = Path(folder)
        _project(root)
        env = _env(root, n, steps)
        _run([*WEANJ, "inputs", "regenerate", "20-heat"], root, env)
        yield root, env


def measure_size(n: int, steps: int) -> dict:
    """The user's own first and warm calls, and one fresh check of jax-scan, at n."""
    with _fresh_project(n, steps) as (root, env):
        _, out = _run([sys.executable, "-c", USER], root, env)
        user = json.loads(out.strip().splitlines()[-1])
        # the check, in a process of its own: its own import of JAX is timed apart
        # warm-up, not timed: the OS has JAX's files in its cache for the import timed next
        _run([sys.executable, "-c", "import jax"], root, env)
        started, _ = _run([sys.executable, "-c", "import weanj, jax"], root, env)
        check_s, _ = _run([*WEANJ, "check", "--fresh", "--variants", "jax-scan"], root, env)
        data = json.loads((root / "results" / "20-heat" / "check.json").read_text())
    cost = {g["label"]: g["cost"] for g in data["gradients"]}
    compiled = {g["label"]: g.get("compiled", {}) for g in data["gradients"] if g.get("cost")}
    spent = check_s - started  # the check beyond starting Python and importing JAX
    return {
        "n": n,
        "T": steps,
        "first": user["first"],
        "warm": user["warm"],
        "check": spent,
        "k": (spent - user["first"]) / user["warm"],
        "cost": cost,
        "compiled": compiled,
    }


def measure_recheck(n: int, steps: int) -> dict:
    """A re-check with nothing changed at n (two n² float64 arrays): seconds, against
    importing JAX plus reading the records once; the files it wrote."""
    with _fresh_project(n, steps) as (root, env):
        _run([*WEANJ, "check", "--variants", "jax-scan"], root, env)
        _run([*WEANJ, "check", "--variants", "jax-scan"], root, env)  # says "reused" once
        before = {p: p.stat().st_mtime_ns for p in (root / "results").rglob("*") if p.is_file()}
        rechecks, imports, reads = [], [], []
        read = (
            "import glob, numpy as np\n"
            "for f in glob.glob('results/20-heat/evaluations/*.npz'):\n"
            "    with np.load(f) as z: [z[k] for k in z.files]\n"
        )
        for _ in range(3):
            rechecks.append(_run([*WEANJ, "check", "--variants", "jax-scan"], root, env)[0])
            imports.append(_run([sys.executable, "-c", "import jax"], root, env)[0])
            reads.append(_run([sys.executable, "-c", read], root, env)[0])
        python = _run([sys.executable, "-c", "pass"], root, env)[0]
        after = {p: p.stat().st_mtime_ns for p in (root / "results").rglob("*") if p.is_file()}
    recheck, imported = statistics.median(rechecks), statistics.median(imports)
    # reading the records: its own process's seconds beyond starting Python
    records = max(statistics.median(reads) - python, 0.0)
    written = sorted(str(p.relative_to(root)) for p in after if after[p] != before.get(p))
    return {
        "n": n,
        "recheck": recheck,
        "import_jax": imported,
        "read_records": records,
        "ratio": recheck / (imported + records),
        "written": written,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--T", type=int, default=20, help="time steps (default 20)")
    parser.add_argument("--recheck-n", type=int, default=2048, help="0: no re-check")
    args = parser.parse_args()
    if any(n < 8 for n in args.sizes) or args.T < 1 or args.recheck_n < 0:
        print("check_cost.py: sizes must be >= 8 and --T >= 1", file=sys.stderr)
        return 2
    ok = True
    for n in args.sizes:
        m = measure_size(n, args.T)
        cost = m["cost"]
        print(
            f"n={n} T={args.T}: value_and_grad first {m['first']:.2f} s, warm {m['warm']:.3f} s; "
            f"check {m['check']:.2f} s = first + {m['k']:.1f} warm calls "
            f"= {m['check'] / m['first']:.2f} × the first call"
        )
        for label, compiled in m["compiled"].items():
            print(
                f"  {label}: {len(compiled['programs'])} program(s) compiled in "
                f"{compiled['seconds']:.2f} s ({', '.join(compiled['programs'])})"
            )
        for label, phases in cost.items():
            f = sum(p[0] for p in phases.values())
            b = sum(p[1] for p in phases.values())
            print(f"  {label}: {f} forward, {b} backward {json.dumps(phases)}")
        if m["warm"] >= 1.0 and m["k"] > 12:
            ok = False
    if args.recheck_n:
        r = measure_recheck(args.recheck_n, 2)
        print(
            f"re-check n={r['n']}: {r['recheck']:.2f} s; import jax {r['import_jax']:.2f} s + "
            f"read the records {r['read_records']:.2f} s: ratio {r['ratio']:.2f} (goal <= 1.5); "
            f"files written: {r['written'] or 'none'}"
        )
        ok = ok and r["ratio"] <= 1.5 and not r["written"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
