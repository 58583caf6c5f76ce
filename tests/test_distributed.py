"""Past one machine (docs/distributed.md): `weanj check` on Dask (`--workers N`, a local
cluster; `--scheduler ADDRESS`, an existing one) judges as the in-process check judges;
a worker that dies mid-task costs that evaluation only; without the extra, one line names
it; `--processes P` runs a sharded variant under jax.distributed on P local processes.

Every address is 127.0.0.1; every process a test starts is stopped in its teardown.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .helpers import assert_one_line_error, main_in_thread, run_python, subprocess_env
from .projects import tiny_project, user_env, weanj_here, weanj_in, write_project

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parent.parent


def verdicts(root: Path) -> dict[str, dict[str, str]]:
    """`{example: {case id: verdict}}` from every `check.json` of a project, and each
    example's own verdict under `""`."""
    out = {}
    for path in sorted((root / "results").glob("*/check.json")):
        data = json.loads(path.read_text())
        cases = {"": data["verdict"]}
        for part in data.values():  # runs, pairs, checks, files, skipped, ...
            if isinstance(part, list):
                cases.update({c["case"]: c["verdict"] for c in part if "case" in c})
        out[data["example"]] = cases
    return out


def example_lines(stdout: str) -> list[str]:
    """The per-example verdict lines of `weanj check` (`  01-jacobi: ok`)."""
    return [line for line in stdout.splitlines() if re.match(r"  \d\d-[\w-]+: \S", line)]


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _arrays(path: Path) -> dict[str, bytes]:
    """The datasets of a gradient file, as bytes (what the judge reads)."""
    import h5py

    with h5py.File(path) as f:
        return {name: np.asarray(f[name]).tobytes() for name in f}


def _arrays_of_bytes(data: bytes, scratch: Path) -> dict[str, bytes]:
    scratch.write_bytes(data)
    return _arrays(scratch)


def test_workers_judge_as_in_process(tmp_path):
    """`weanj check --workers 2` on a user project: the same verdicts in every check.json,
    the same exit status and the same store gradients as the in-process check; each
    evaluation was a task on a worker (the progress lines name it). A second `--workers 2`
    check (in this process, as a fresh one runs it) reuses every record the client wrote
    and sends no task."""
    root = tiny_project(_folder(tmp_path / "tiny"))
    local = weanj_here(root, "check", "--fresh")  # in this process, as a fresh one runs it
    assert local.returncode == 0, local.stderr
    expected = verdicts(root)
    stored = {p.relative_to(root): p.read_bytes() for p in root.glob("results/*/gradients/**/*.h5")}
    shutil.rmtree(root / "results")
    spread = weanj_in(root, "check", "--workers", "2", "-v")
    assert spread.returncode == local.returncode, spread.stderr
    assert "Traceback" not in spread.stderr
    assert verdicts(root) == expected
    assert example_lines(spread.stdout) == example_lines(local.stdout) != []
    assert "local Dask cluster of 2 worker" in spread.stderr
    assert "dashboard http://127.0.0.1:" in spread.stderr
    tasks = [line for line in spread.stderr.splitlines() if line.startswith("[")]
    assert len(tasks) == 6 and all("on tcp://127.0.0.1:" in line for line in tasks), tasks
    for path, data in stored.items():  # the client wrote the same store files
        assert _arrays(root / path) == _arrays_of_bytes(data, tmp_path / "before.h5"), path
    # the records were written by the client: a second run reuses them and sends no task
    # (it starts no cluster: nothing is left to evaluate)
    again = weanj_here(root, "check", "--workers", "2", "-v")
    assert again.returncode == 0, again.stderr
    assert "Dask cluster" not in again.stderr, again.stderr
    reused = [line for line in again.stderr.splitlines() if line.startswith("[")]
    assert len(reused) == 6 and all(": reused, ok" in line for line in reused), reused
    assert verdicts(root) == expected


@pytest.mark.slow
def test_gallery_on_two_workers(project):
    """The built-in gallery: `weanj check --workers 2` gives the per-example verdicts, the
    check.json verdicts and the exit status of `weanj check` (both cold, `--fresh`)."""
    env = subprocess_env(project)
    local = run_python("-m", "weanj", "check", "--fresh", env=env, cwd=project, timeout=1800)
    expected = verdicts(project)
    assert expected and "Traceback" not in local.stderr
    spread = run_python(
        "-m", "weanj", "check", "--fresh", "--workers", "2", env=env, cwd=project, timeout=1800
    )
    assert "Traceback" not in spread.stderr, spread.stderr
    assert spread.returncode == local.returncode, spread.stdout + spread.stderr
    assert example_lines(spread.stdout) == example_lines(local.stdout)
    assert verdicts(project) == expected


def test_without_the_extra_one_line(tmp_path, monkeypatch):
    """With `distributed` not importable, `--workers` and `--scheduler` (and a project's
    `$DASK_SCHEDULER_ADDRESS`) end in one line naming the extra, exit 2, nothing run: the
    first in a fresh process, the others in this one as a fresh one runs them."""
    root = tiny_project(_folder(tmp_path / "tiny"))
    blocked = "import sys, runpy; sys.modules['distributed'] = None; sys.argv[0] = 'weanj'; "
    blocked += "runpy.run_module('weanj', run_name='__main__')"
    r = run_python("-c", blocked, "check", "--workers", "2", cwd=root, env=user_env())
    assert r.returncode == 2, r.stdout + r.stderr
    assert_one_line_error(r.stderr, "pip install 'weanj[distributed]'")
    assert not (root / "results").exists()
    monkeypatch.setitem(sys.modules, "distributed", None)
    for args, extra in (
        (["--scheduler", "tcp://127.0.0.1:1"], {}),
        ([], {"DASK_SCHEDULER_ADDRESS": "tcp://127.0.0.1:1"}),
    ):
        with monkeypatch.context() as mp:
            for name, value in extra.items():
                mp.setenv(name, value)
            r = weanj_here(root, "check", *args)
        assert r.returncode == 2, r.stdout + r.stderr
        assert_one_line_error(r.stderr, "pip install 'weanj[distributed]'")
        assert not (root / "results").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int = 2, **scheduler_env: str):
    """`dask scheduler` and `workers` `dask worker` processes on 127.0.0.1 (one thread
    each, with a nanny that restarts a worker that dies); stopped on the way out."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    env = {**os.environ, **scheduler_env}
    logs = []
    procs = []
    try:
        log = open(folder / "scheduler.log", "w")  # noqa: SIM115 - closed below
        logs.append(log)
        procs.append(
            subprocess.Popen(
                [*dask, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        )
        for i in range(workers):
            log = open(folder / f"worker-{i}.log", "w")  # noqa: SIM115 - closed below
            logs.append(log)
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "distributed.cli.dask_worker",
                        address,
                        "--nthreads",
                        "1",
                        "--host",
                        "127.0.0.1",
                        "--no-dashboard",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=user_env(WEANJ_TEST_DASK_WORKER="1"),
                    cwd=folder,
                )
            )
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


# `13-dying`: `jax-once` kills the worker process that first traces it in float64 (a
# marker file says it did), `jax-always` every Dask worker process that traces it (the
# test's workers have $WEANJ_TEST_DASK_WORKER); in a process that is no Dask worker both
# compute what `jax-ok` computes.
DYING = """\
import os
from pathlib import Path

import jax.numpy as jnp, numpy as np
import weanj

MARK = Path(__file__).with_name("died-once")

ex = weanj.register_example(weanj.Example(
    name="13-dying", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)},
))


def on_a_dask_worker():  # the test's workers are started with this variable
    return os.environ.get("WEANJ_TEST_DASK_WORKER") == "1"


@weanj.jax_variant(ex, "jax-ok", family="f")
def ok(x):
    return jnp.sum(jnp.sin(x) ** 2)


@weanj.jax_variant(ex, "jax-once", family="f")
def once(x):
    if on_a_dask_worker() and x.dtype == jnp.float64 and not MARK.exists():
        MARK.touch()
        os._exit(3)
    return jnp.sum(jnp.sin(x) ** 2)


@weanj.jax_variant(ex, "jax-always", family="f")
def always(x):
    if on_a_dask_worker() and x.dtype == jnp.float64:
        os._exit(3)
    return jnp.sum(jnp.sin(x) ** 2)
"""


@pytest.mark.slow
def test_scheduler_and_a_dying_worker(tmp_path):
    """`weanj check --scheduler tcp://127.0.0.1:PORT` against a `dask scheduler` and two
    `dask worker`s: the same verdicts as in-process; a worker that dies once costs a
    retry (the evaluation is ok, its record written), one that dies every time makes that
    evaluation `error` naming the worker; check.json is complete, no traceback."""
    root = write_project(_folder(tmp_path / "proj"), {"kernels/dying.py": DYING})
    with dask_cluster(
        tmp_path,
        DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="1",
        DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION="1.0",
    ) as address:
        r = weanj_in(root, "check", "--scheduler", address, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1, r.stdout + r.stderr
    assert (root / "kernels" / "died-once").exists()  # jax-once did kill a worker
    spread = verdicts(root)["13-dying"]
    always = spread["13-dying::f::jax-always::run"]
    assert always == "error", spread
    data = json.loads((root / "results" / "13-dying" / "check.json").read_text())
    (case,) = [c for c in data["runs"] if c["case"] == "13-dying::f::jax-always::run"]
    assert "the Dask worker tcp://127.0.0.1:" in case["reason"], case
    assert spread["13-dying::f::jax-once::run"] == "ok"
    records = root / "results" / "13-dying" / "evaluations"
    assert (records / "jax-once.npz").is_file() and not (records / "jax-always.npz").exists()
    # in-process (no Dask worker: every variant computes), every other case judged alike
    local = weanj_in(root, "check", "--fresh")
    assert local.returncode == 0, local.stderr
    here = verdicts(root)["13-dying"]
    assert set(here) == set(spread)  # check.json was complete
    differ = {case for case in here if here[case] != spread[case]}
    assert differ <= {c for c in here if "jax-always" in c} | {""}, differ


# `21-slow`: `jax-ok`, and `jax-sleeps`, which sleeps an hour; `kernels.dies` kills (SIGKILL)
# the first Dask worker process that imports it: a worker lost while the workers load the
# project, before any task.
SLEEPING = """\
import time

import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="21-slow", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)},
))


@weanj.jax_variant(ex, "jax-ok", family="f")
def ok(x):
    return jnp.sum(jnp.sin(x) ** 2)


@weanj.jax_variant(ex, "jax-sleeps", family="f", dtypes=("float64",))
def sleeps(x):
    time.sleep(3600)
    return jnp.sum(jnp.sin(x) ** 2)
"""

DIES_LOADING = """\
import multiprocessing, os, signal
from pathlib import Path

MARK = Path(__file__).with_name("died-loading")
if multiprocessing.current_process().name.startswith("Dask Worker"):
    try:
        os.close(os.open(MARK, os.O_CREAT | os.O_EXCL | os.O_WRONLY))  # the first one only
    except FileExistsError:
        pass
    else:
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_worker_lost_while_loading_and_a_call_that_never_ends(tmp_path):
    """`weanj check --workers 2` where one worker is killed (SIGKILL) while the workers
    load the project, and a variant sleeps an hour under `[tool.weanj] timeout = 20` (far
    beyond what the others take on a busy machine; with 3 s, jax-ok's compile could pass it): the
    check goes on (Dask's "Stream is closed" aborted it), the sleeping variant is
    `timeout` naming the limit and where it comes from, every other evaluation is ok."""
    root = write_project(
        _folder(tmp_path / "proj"), {"kernels/dies.py": DIES_LOADING, "kernels/slow.py": SLEEPING}
    )
    with open(root / "pyproject.toml", "a") as f:
        f.write("x64 = true\ntimeout = 20\n")
    r = weanj_in(root, "check", "--workers", "2", timeout=600)
    assert (root / "kernels" / "died-loading").exists()  # a worker was killed, loading
    assert "Traceback" not in r.stderr and "Stream is closed" not in r.stderr, r.stderr
    assert r.returncode == 1, r.stdout + r.stderr
    found = verdicts(root)["21-slow"]
    assert found["21-slow::f::jax-sleeps::run"] == "timeout", found
    assert found["21-slow::f::jax-ok::run"] == "ok", found
    assert found["21-slow::f::jax-ok@float32::run"] == "ok", found
    data = json.loads((root / "results" / "21-slow" / "check.json").read_text())
    (case,) = [c for c in data["runs"] if c["case"] == "21-slow::f::jax-sleeps::run"]
    assert "time limit of 20 s ([tool.weanj] timeout" in case["reason"], case


def test_which_executor(monkeypatch, tmp_path):
    """`--workers N` a local cluster; `--scheduler`, else `$DASK_SCHEDULER_ADDRESS`, else
    `[tool.weanj] scheduler` an existing one; `--workers 0` in this process whatever the
    project names; both flags at once, or a scheduler that is not text, one line."""
    from weanj._errors import InputError
    from weanj._pipeline.executors._dask import DaskExecutor
    from weanj._pipeline.executors._executors import InProcess, executor_for
    from weanj._project import project_config

    root = _folder(tmp_path / "p")
    (root / "pyproject.toml").write_text(
        '[tool.weanj]\nexamples = []\nscheduler = "tcp://127.0.0.1:8786"\n'
    )
    config = project_config(root)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    assert isinstance(executor_for(None, None, project_config(REPO)), InProcess)
    assert executor_for(None, None, config).address == "tcp://127.0.0.1:8786"
    assert executor_for(3, None, config).workers == 3
    assert executor_for(3, None, config).address is None
    assert isinstance(executor_for(0, None, config), InProcess)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9999")
    assert executor_for(None, None, config).address == "tcp://127.0.0.1:9999"
    chosen = executor_for(None, "tcp://127.0.0.1:1", config)
    assert isinstance(chosen, DaskExecutor) and chosen.address == "tcp://127.0.0.1:1"
    with pytest.raises(InputError, match="not both"):
        executor_for(2, "tcp://127.0.0.1:1", config)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    (root / "pyproject.toml").write_text("[tool.weanj]\nexamples = []\nscheduler = 5\n")
    with pytest.raises(InputError, match="scheduler must be a scheduler address"):
        executor_for(None, None, project_config(root))


# --- jax.distributed -----------------------------------------------------------------------


def _children(pid: int) -> dict[int, str]:
    """{pid: command line} of the processes whose parent is `pid`."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
                out[int(stat.parent.name)] = cmdline.decode(errors="replace")
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
    return out


def _weanj_here_within(argv: list[str], seconds: float, meanwhile=lambda: None):
    """`weanj ARGV` (the command line's `main`) in a thread of this process
    (`main_in_thread`), which is then the parent of the processes that `--processes P`
    starts, as a fresh `python -m weanj` would be: (its exit code, or None if it had not
    ended within `seconds`, its stdout, its stderr). `meanwhile()` is called every 50 ms
    while it runs. A worker process still running on the way out (the run did not end) is
    killed."""

    def kill_workers():
        for pid, cmdline in _children(os.getpid()).items():
            if "weanj._pipeline.executors._worker" in cmdline:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    return main_in_thread(argv, seconds, meanwhile, kill_workers)


def test_run_sharded_one_process_killed_is_an_error_naming_it(project):
    """`weanj run 01-jacobi jax-jacobi-sharded --processes 2` (in this process, as a fresh
    one runs it) with process 1 killed (SIGKILL) as soon as it exists: process 0 would
    wait for it without end (it hung past 300 s); the run ends as `error` naming process 1
    and the signal, exit 1, nothing saved, no process left."""
    killed, seen = [], set()

    def kill_process_1():
        for pid, cmdline in _children(os.getpid()).items():
            if "weanj._pipeline.executors._worker" in cmdline:
                seen.add(pid)
                if not killed and cmdline.split()[-3:-2] == ["1"]:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)

    code, out, err = _weanj_here_within(
        ["run", "01-jacobi", "jax-jacobi-sharded", "--processes", "2"], 600, kill_process_1
    )
    assert killed, err
    assert code == 1, out + err
    assert_one_line_error(
        err, "jax-jacobi-sharded under jax.distributed", f"process 1 of 2 (pid {killed[0]})",
        "was killed by SIGKILL", "nothing was saved",
    )  # fmt: skip
    assert [pid for pid in seen if Path(f"/proc/{pid}").exists()] == []  # none left
    assert not list((project / "results").glob("01-jacobi/gradients/**/jax-jacobi-sharded*"))


def test_run_sharded_on_two_processes(project, capsys):
    """`weanj run 01-jacobi jax-jacobi-sharded --processes 2` (in this process, as a fresh
    one runs it): two local processes under jax.distributed (CPU collectives), each with
    one device; the loss and gradient equal the single-process run's within the family's
    tolerance."""
    import weanj
    from weanj._cli import main
    from weanj._commands.run import run
    from weanj._judge._policy import TOLERANCES

    ex = weanj.example("01-jacobi")
    run(ex, weanj.variant(ex, "jax-jacobi-sharded"), out=project / "one.h5")  # one process, here
    code, out, err = _weanj_here_within(
        ["run", "01-jacobi", "jax-jacobi-sharded", "--processes", "2", "--out",
         str(project / "two.h5")],
        300,
    )  # fmt: skip
    assert code == 0, out + err
    assert "2 processes" in out + err
    tol = TOLERANCES["float64"]
    a = weanj.load_gradient("01-jacobi", "jax-jacobi-sharded", path=project / "one.h5")
    b = weanj.load_gradient("01-jacobi", "jax-jacobi-sharded", path=project / "two.h5")
    assert abs(a.loss - b.loss) <= tol.loss * abs(a.loss)
    (name,) = a.gradients
    ga, gb = a.gradients[name], b.gradients[name]
    assert ga.shape == gb.shape
    assert np.max(np.abs(ga - gb)) <= tol.grad * np.max(np.abs(ga))
    assert np.any(ga != 0)
    capsys.readouterr()
    plain = main(["run", "01-jacobi", "jax-jacobi", "--processes", "2"])  # here: starts none
    assert plain == 2
    assert_one_line_error(capsys.readouterr().err, "jax-jacobi is not one")


@pytest.mark.slow
def test_check_sharded_on_two_processes(project):
    """`weanj check --processes 2`: the sharded variant is evaluated under jax.distributed
    (its progress line says so), judged against its family's single-process member: ok;
    no evaluation record of it is written (a record holds a one-process evaluation)."""
    r = run_python(
        "-m", "weanj", "check", "01-jacobi", "--variants", "jax-jacobi", "jax-jacobi-sharded",
        "--dtype", "float64", "--processes", "2",
        env=subprocess_env(project), cwd=project, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "01-jacobi jax-jacobi-sharded: " in r.stderr and "(on 2 processes)" in r.stderr
    found = verdicts(project)["01-jacobi"]
    assert found["01-jacobi::jacobi::jax-jacobi~jax-jacobi-sharded"] == "ok", found
    records = project / "results" / "01-jacobi" / "evaluations"
    assert (records / "jax-jacobi.npz").is_file()
    assert not (records / "jax-jacobi-sharded.npz").exists()
