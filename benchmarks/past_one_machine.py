"""Past one machine (issue 44): the cold gallery check in-process against `--workers N`,
and a scaling note from measured per-task costs.

    python benchmarks/past_one_machine.py [--workers 2] [--examples EX ...] [--json FILE]

1. **Cold check, twice.** The built-in gallery in a temporary project (a copy of
   `shared_inputs/` and the recorded references), each run with its own empty
   compilation cache and `--fresh` (nothing reused): `weanj check` in-process, then
   `weanj check --workers N` (a local Dask cluster, its start-up included). Printed: both
   wall times, their ratio (the issue's target: ≤ 0.7 at N = 2 on two idle cores) and
   the compilation seconds each run reports (the workers' summed); the CPU seconds each
   run spent (its processes', Dask's workers included) over its wall time, the cores it
   kept busy; and the machine's own speed-up of N CPU-bound processes against one, so
   that `in-process cores / speed-up` is the best ratio this machine allows.
2. **Per-task costs**, measured on a local cluster of N workers: the bytes of a task
   (its arguments as Dask pickles them) and of the inputs (sent once per worker); the
   scheduler's overhead per task (a batch of empty tasks, wall / count, Dask's own
   figure of its per-task cost); and, from the in-process run, the seconds per
   evaluation (cold, its checks included) and the compilation share.
3. **The estimate** for 100 kernels × 4 sizes × 2 dtypes (800 evaluations) on 1, 8 and
   64 workers: `start + ceil(800 / W) · t_eval + 800 · t_sched + W · inputs / bandwidth`,
   with `t_eval` the in-process wall time per evaluation (its gradient checks and
   judging included, compilation cold), `t_sched` the measured overhead per task,
   the inputs' bytes sent once per worker and an assumed 1 GB/s network.

Nothing here is a test: the timings depend on the machine and its load; say both with
the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (\S+) (\S+): ([\d.]+) s, (\S+)")
COMPILATION = re.compile(r"^compilation ([\d.]+) s")


def project_copy(folder: Path) -> Path:
    """A gallery project in `folder`: the shared inputs and recorded references."""
    shutil.copytree(REPO / "shared_inputs", folder / "shared_inputs")
    for recorded in (REPO / "results").glob("*/recorded"):
        shutil.copytree(recorded, folder / recorded.relative_to(REPO))
    return folder


def cold_check(folder: Path, extra: list[str], examples: list[str]) -> dict:
    """One cold `weanj check --fresh` in its own project copy and compilation cache."""
    root = project_copy(folder)
    env = {
        **os.environ,
        "WEANJ_ROOT": str(root),
        "WEANJ_COMPILATION_CACHE": str(folder / "cache"),
        "PYTHONPATH": str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "weanj", "check", "--fresh", *examples, *extra],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the run and every process it waited for (Dask's workers included)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tasks = [m for line in r.stderr.splitlines() if (m := PROGRESS.match(line))]
    compiled = [m for line in r.stdout.splitlines() if (m := COMPILATION.match(line))]
    return {
        "command": " ".join(["weanj", "check", "--fresh", *examples, *extra]),
        "exit": r.returncode,
        "wall_s": wall,
        "cpu_s": cpu,
        "compilation_s": float(compiled[-1].group(1)) if compiled else None,
        "evaluations": len(tasks),
        "evaluation_s": [float(m.group(5)) for m in tasks],
        "verdicts": [line for line in r.stdout.splitlines() if re.match(r"^  \S+: \S", line)],
        "stderr_tail": r.stderr.splitlines()[-3:],
    }


def _burn(n: int) -> float:
    t0 = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i
    return time.perf_counter() - t0


def machine_speedup(processes: int, n: int = 20_000_000) -> float:
    """What `processes` CPU-bound processes get done at once against one (pure Python,
    the median of three tries): the most any number of workers can gain on this machine.
    A VM's cores are often less than independent."""
    import multiprocessing
    import statistics

    tries = []
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        for _ in range(3):
            one = _burn(n)
            t0 = time.perf_counter()
            pool.map(_burn, [n] * processes)
            tries.append(processes * one / (time.perf_counter() - t0))
    return statistics.median(tries)


def per_task_costs(workers: int) -> dict:
    """Task bytes, inputs bytes and the scheduler's overhead per task, measured."""
    sys.path.insert(0, str(REPO / "python"))
    import distributed

    import weanj
    from weanj._io._inputs import read_inputs
    from weanj._pipeline.executors._dask import worker_setup
    from weanj._pipeline.executors._processes import inputs_payload
    from weanj._places import places
    from weanj._registry import catalogs, project

    inputs_bytes = []
    for cat in catalogs():
        inputs = read_inputs(cat.example, places())
        inputs_bytes.append(len(pickle.dumps(inputs_payload(inputs))))
    setup = worker_setup(project())
    task = (setup, "0" * 64, "01-jacobi", "jax-jacobi", "float64", None)
    task_bytes = len(pickle.dumps(task))
    del weanj
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.submit(abs, 1, pure=False).result()  # warm
        count = 500
        t0 = time.perf_counter()
        futures = [client.submit(abs, -i, pure=False) for i in range(count)]
        client.gather(futures)
        per_task = (time.perf_counter() - t0) / count
    return {
        "task_bytes": task_bytes,
        "inputs_bytes_per_example": inputs_bytes,
        "scheduler_s_per_task": per_task,
    }


def estimate(t_eval: float, t_sched: float, inputs_bytes: int, start: float) -> dict:
    """Wall seconds of 800 evaluations on 1, 8 and 64 workers (module docstring)."""
    n = 100 * 4 * 2
    bandwidth = 1e9
    return {
        w: start + math.ceil(n / w) * t_eval + n * t_sched + w * inputs_bytes / bandwidth
        for w in (1, 8, 64)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--examples", nargs="*", default=[], metavar="EX")
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args(argv)
    if args.workers < 1:
        print("benchmarks/past_one_machine.py: --workers must be >= 1", file=sys.stderr)
        return 2
    out: dict = {"cpu_count": os.cpu_count(), "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="weanj-bench-distributed-") as scratch:
        here = cold_check(Path(scratch) / "in-process", [], args.examples)
        spread = cold_check(
            Path(scratch) / "workers", ["--workers", str(args.workers)], args.examples
        )
        os.environ["WEANJ_ROOT"] = str(project_copy(Path(scratch) / "costs"))
        costs = per_task_costs(args.workers)
    out.update({"in_process": here, "workers": spread, "costs": costs})
    out["load_after"] = os.getloadavg()
    ratio = spread["wall_s"] / here["wall_s"]
    same = here["verdicts"] == spread["verdicts"] and here["exit"] == spread["exit"]
    print(f"machine: {os.cpu_count()} cores, load average before {out['load_before'][0]:.1f}")
    for name, run in (("in-process", here), (f"--workers {args.workers}", spread)):
        print(
            f"{name:>12}: {run['wall_s']:.1f} s wall, compilation {run['compilation_s']} s, "
            f"{run['evaluations']} evaluations, exit {run['exit']}"
        )
    print(f"ratio (--workers {args.workers} / in-process): {ratio:.2f} (target <= 0.7)")
    print(f"same verdicts and exit status: {same}")
    speedup = machine_speedup(min(args.workers, os.cpu_count() or 1))
    used = here["cpu_s"] / here["wall_s"]
    out["machine_speedup"], out["in_process_cores"] = speedup, used
    print(
        f"cores: the in-process run keeps {used:.2f} of them busy on average (CPU / wall); "
        f"{min(args.workers, os.cpu_count() or 1)} CPU-bound processes here get "
        f"{speedup:.2f}x of one done at once, so the best ratio this machine allows is about "
        f"{used / speedup:.2f}"
    )
    # one evaluation with its gradient checks and judging, as one process does them
    t_eval = here["wall_s"] / max(here["evaluations"], 1)
    share = (here["compilation_s"] or 0.0) / here["wall_s"]
    inputs = max(costs["inputs_bytes_per_example"])
    print(
        f"per task: {costs['task_bytes']} B of arguments; inputs {inputs} B per example, once "
        f"per worker; scheduler {1e3 * costs['scheduler_s_per_task']:.2f} ms per task; "
        f"evaluation {t_eval:.2f} s (cold, checks included), "
        f"compilation {100 * min(share, 1):.0f} % of it"
    )
    start = max(spread["wall_s"] - sum(spread["evaluation_s"]) / args.workers, 0.0)
    guess = estimate(t_eval, costs["scheduler_s_per_task"], inputs, start)
    out["estimate_800"] = guess
    print(
        "100 kernels x 4 sizes x 2 dtypes (800 evaluations): "
        + ", ".join(f"{w} worker(s) ~{s / 60:.1f} min" for w, s in guess.items())
    )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
