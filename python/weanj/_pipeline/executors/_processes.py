"""A sharded variant under `jax.distributed`: one evaluation on P local processes
(`weanj run EX V --processes P`, `weanj check --processes P`; docs/distributed.md).

A multi-device variant (`multi_device=True`, e.g. `jax-jacobi-sharded`) spans the
devices `weanj.set_devices` selects, by default every device JAX sees. Past one host,
JAX sees the devices of every process of a `jax.distributed` cluster; this module makes
one on this machine: P processes of `python -m weanj._pipeline.executors._worker`, each calling
`jax.distributed.initialize(coordinator_address="127.0.0.1:PORT", num_processes=P,
process_id=i)` (process 0 is the coordinator) on the CPU backend, whose collectives
across processes are gloo's (`jax_cpu_collectives_implementation`, gloo by default in
jax 0.10). Every process loads the project, reads the same inputs and runs the same
evaluation (`_evaluate.evaluate`: loss, gradient, contract checks, rounding noise),
the SPMD way: the inputs are host-local numpy arrays, replicated; a gradient sharded
over the processes' devices is all-gathered (`multihost_utils.process_allgather`) before
it is checked, so every process holds the whole of it. Process 0 hands the result back
through a file in a temporary folder; the parent alone writes the store.

Under SLURM, a script that `srun` starts on every task calls `jax.distributed.initialize()`
with no arguments (JAX reads the coordinator, the process count and the id from SLURM's
environment) and then `weanj._pipeline.executors._worker.evaluate_here`, or the variant itself
(docs/distributed.md).
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..._errors import InputError
from ..._judge._contract import Fault, fault_of
from ..._model import Gradient, Inputs, Variant
from ..evaluation._evaluate import reproduce_command

COLLECTIVES = "gloo"  # the CPU backend's collectives across processes


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the coordinator's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_sharded(variant: Variant) -> None:
    """`--processes` is for multi-device variants; one line otherwise."""
    if not variant.multi_device:
        raise InputError(
            f"--processes runs a sharded (multi_device) variant across processes; "
            f"{variant.name} is not one"
        )


def evaluate_across(
    variant: Variant,
    inputs: Inputs,
    dtype: str,
    processes: int,
    *,
    root: Path | str,
    timeout: float | None = None,
    shown_path=str,
) -> Gradient | Fault:
    """The variant's evaluation on `processes` local processes under jax.distributed (the
    module docstring), as `_evaluate.evaluate` returns it: the `Gradient` (its `distributed`
    says the processes), or the fault; a process that fails is this evaluation's `error`."""
    command = reproduce_command(variant, inputs, dtype, shown_path) + f" --processes {processes}"
    root = str(Path(root).resolve())
    with tempfile.TemporaryDirectory(prefix="weanj-processes-") as scratch:
        request = Path(scratch) / "request.pickle"
        result = Path(scratch) / "result.pickle"
        _write_request(request, variant, inputs, dtype, processes, root=root, timeout=timeout)
        port = free_port()
        env = {**os.environ, "WEANJ_ROOT": root}
        logs = [Path(scratch) / f"process-{i}.log" for i in range(processes)]
        procs = []
        try:
            for i in range(processes):
                worker = [f"127.0.0.1:{port}", str(processes), str(i), str(request), str(result)]
                procs.append(_start_process(worker, logs[i], env=env, root=root))
            limit = None if timeout is None else 4 * timeout + 120  # start-up, four calls
            ended = _watch(procs, limit)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        if ended is None:
            what = f"{variant.name} on {processes} processes took longer than {limit:g} s"
            return fault_of(TimeoutError(what), what, command)
        if ended or not result.is_file():
            i, code = ended[0] if ended else (0, procs[0].returncode)
            last = _last_line(logs[i])
            what = (
                f"{variant.name} under jax.distributed: process {i} of {processes} (pid "
                f"{procs[i].pid}) {_how_it_ended(code)}" + (f" ({last})" if last else "")
            )
            return fault_of(ChildProcessError(what), what, command)
        with open(result, "rb") as f:
            found = pickle.load(f)
    if isinstance(found, Gradient):
        found.example, found.of = variant.example, variant
    return found


def _write_request(
    path: Path,
    variant: Variant,
    inputs: Inputs,
    dtype: str,
    processes: int,
    *,
    root: str,
    timeout: float | None,
) -> None:
    """The request every process reads (`_worker`): what to evaluate, on what."""
    with open(path, "wb") as f:
        pickle.dump(
            {
                "root": root,
                "example": variant.example.name,
                "variant": variant.name,
                "dtype": dtype,
                "timeout": timeout,
                "inputs": inputs_payload(inputs),
                "processes": processes,
            },
            f,
        )


def _start_process(
    worker: list[str], log_path: Path, *, env: dict[str, str], root: str
) -> subprocess.Popen:
    """One process of the evaluation (`python -m weanj._pipeline.executors._worker`, its
    arguments `worker`: the coordinator, the count, its index, the request and result files), its
    output into `log_path`."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "weanj._pipeline.executors._worker", *worker],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=root,
        )


# How long the others may take to end on their own once one process failed (they fail
# too, their collective broken, or wait in it forever), and how often the processes are
# looked at.
_GRACE_S = 3.0
_POLL_S = 0.1


def _watch(procs: list[subprocess.Popen], limit: float | None) -> list[tuple[int, int]] | None:
    """Wait for every process of a cluster, watching them all: **Returns** `[(index,
    code)]` of the processes that failed, the first failure first (the others are killed
    within `_GRACE_S` of it, since a process whose peer died waits in a collective, or
    for it to join, without end); `[]` when every one ended well; None past `limit`."""
    start = time.monotonic()
    failed: list[tuple[int, int]] = []
    first = None
    while True:
        codes = [p.poll() for p in procs]
        for i, code in enumerate(codes):
            if code not in (None, 0) and all(j != i for j, _ in failed):
                failed.append((i, code))
                first = time.monotonic() if first is None else first
        if all(code is not None for code in codes):
            return failed
        now = time.monotonic()
        if first is not None and now - first >= _GRACE_S:
            return failed  # the rest are killed by the caller
        if limit is not None and now - start >= limit:
            return None
        time.sleep(_POLL_S)


def _how_it_ended(code: int) -> str:
    """`exited with code 3`, `was killed by SIGKILL`."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _last_line(log: Path) -> str:
    try:
        lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    useful = [x for x in lines if not x.startswith("[Gloo]")]
    return (useful or [""])[-1].strip()[:200]


def inputs_payload(inputs: Inputs) -> dict:
    """An example's inputs as plain data (the worker rebuilds them with its own example)."""
    return {
        "example": inputs.example.name,
        "arrays": {k: inputs.arrays[k] for k in inputs.arrays},
        "params": dict(inputs.params),
        "digest": inputs.digest,
        "path": None if inputs.path is None else str(inputs.path),
        "shared": inputs.shared,
        "attrs": dict(inputs.attrs),
        "legacy": inputs.legacy,
    }
