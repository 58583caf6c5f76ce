"""`weanj check --format jsonl` (issue 61): one JSON object per case, as it is judged.

The project has a fast variant and a slow one whose every call waits until a gate file
exists. The test reads the check's stdout line by line as it comes and opens the gate
only once it has read the first case: a check that held its lines until the end would
leave the slow variant waiting until its own give-up (it then says so in a file), and the
first line would come after the last evaluation. No wall clock decides: the gate does.
"""

from __future__ import annotations

import json
import subprocess
import sys

from .projects import user_env, write_project

KERNELS = """
import os, time
from pathlib import Path
import numpy as np
import jax
import jax.numpy as jnp
import weanj

GATE = Path(os.environ["GATE"])
ex = weanj.register_example(weanj.Example(
    name="13-gated", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)},
))


def _wait():
    for _ in range(int(os.environ.get("GATE_TENTHS", "1200"))):  # two minutes at most
        if GATE.exists():
            return
        time.sleep(0.1)
    GATE.with_suffix(".gave-up").touch()  # nobody opened it: say so, and open it
    GATE.touch()


def _waiting(x):
    jax.debug.callback(_wait)
    return jnp.sum(jnp.sin(x) ** 2)


weanj.jax_variant(ex, "jax-fast", family="f", loss=lambda x: jnp.sum(jnp.sin(x) ** 2))
weanj.jax_variant(ex, "jax-slow", family="f", loss=_waiting)
"""


def test_the_first_case_is_said_before_the_last_evaluation_finishes(tmp_path):
    gate = tmp_path / "gate"
    (tmp_path / "project").mkdir()
    root = write_project(tmp_path / "project", {"kernels/gated.py": KERNELS}, regenerate=False)
    env = user_env(GATE=str(gate), PYTHONUNBUFFERED="1")
    made = subprocess.run(
        [sys.executable, "-m", "weanj", "inputs", "regenerate"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    lines = []
    with subprocess.Popen(
        [sys.executable, "-m", "weanj", "check", "--format", "jsonl", "--dtype", "float64"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            for line in proc.stdout:
                lines.append(json.loads(line))
                if lines[-1]["event"] == "case":
                    gate.touch()  # the first case is read: the slow variant may go on
            err = proc.stderr.read()
            proc.wait(timeout=300)
        finally:
            proc.kill()
    assert proc.returncode == 0, err
    assert not gate.with_suffix(".gave-up").exists(), "the first case came only at the end"
    events = [x["event"] for x in lines]
    assert events[0] == "case" and events[-2:] == ["example", "run"]
    cases = [x for x in lines if x["event"] == "case"]
    assert cases[0]["case"] == "13-gated::f::jax-fast::run" and cases[0]["verdict"] == "ok"
    assert {x["case"] for x in cases} >= {
        "13-gated::f::jax-slow::run",
        "13-gated::f::jax-fast~jax-slow",
        "13-gated::f::jax-slow::taylor",
    }
    assert all(x["example"] == "13-gated" for x in cases)
    assert lines[-1]["verdict"] == "ok" and lines[-1]["headline"].startswith("overall: ok")
