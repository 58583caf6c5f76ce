"""The local Dask cluster's workers run XLA on one thread each (`--workers N` with N ≥ the
cores): the flag is added to the user's `XLA_FLAGS` without losing any of them."""

from __future__ import annotations

import os
import subprocess
import sys

from weanj._pipeline._executors import single_threaded_xla


def test_the_one_thread_flag_comes_after_the_users_flags(monkeypatch):
    monkeypatch.delenv("WEANJ_WORKER_THREADS", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    env = single_threaded_xla()
    assert env == {
        "XLA_FLAGS": "--xla_force_host_platform_device_count=4 --xla_cpu_multi_thread_eigen=false"
    }
    monkeypatch.delenv("XLA_FLAGS")
    assert single_threaded_xla() == {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}


def test_a_user_who_sets_the_eigen_pool_or_asks_for_all_threads_is_left_alone(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")
    assert single_threaded_xla() == {}
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv("WEANJ_WORKER_THREADS", "all")
    assert single_threaded_xla() == {}


def test_xla_still_reads_the_device_count_a_worker_is_given(monkeypatch):
    """XLA stops reading XLA_FLAGS at a token that is no flag: the worker's environment
    must keep every flag readable (here: 4 simulated devices, read by XLA itself)."""
    monkeypatch.delenv("WEANJ_WORKER_THREADS", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    env = {**os.environ, "JAX_PLATFORMS": "cpu", **single_threaded_xla()}
    out = subprocess.run(
        [sys.executable, "-c", "import jax; print(len(jax.devices()))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split()[-1] == "4"
