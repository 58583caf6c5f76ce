"""`weanj fuzz` keeps its word (#51): `--seconds S` ends the command within S and one
evaluation, no call starts once S is spent, and no call is left running when it returns
(no "still run in the background"); when most draws give NaN/Inf in every variant alike
(an explicit heat step drawn past its stability limit), fuzz says so in one line naming
the parameter and pointing at `weanj.Param(minimum=, maximum=)`.

No wall-clock figure is asserted: the budget is counted on a clock the test injects
(`fuzz(clock=...)`), which each evaluation of the stand-in variants moves on by 2 s (the
evaluation runs for real, through the session's watch, as every evaluation does); what is
asserted is the evaluations started after the budget (none), the simulated time at
return, and the threads and child processes left (counted).
"""

from __future__ import annotations

import os
import re
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._commands import fuzz as fuzz_command
from weanj._pipeline import _session

SLOW = "93-fuzz-slow"
CALL_S = 2.0  # what each evaluation of the stand-in variants takes on the injected clock


def _children() -> set[int]:
    """This process's child processes, from /proc (none where /proc is missing)."""
    found = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task") if os.path.isdir("/proc") else ():
        path = f"/proc/{os.getpid()}/task/{task}/children"
        if os.path.exists(path):
            with open(path) as f:
                found.update(int(p) for p in f.read().split())
    return found


@pytest.fixture
def slow_pair(project, monkeypatch):
    """Two agreeing JAX ports, each evaluation of which takes `CALL_S` seconds of the
    injected clock (`clock.read`); `clock.evaluations`: (started, ended) of each."""
    import jax.numpy as jnp

    clock = SimpleNamespace(now=0.0, evaluations=[])
    clock.read = lambda: clock.now
    evaluate = _session.evaluate

    def slow(*args, **kwargs):
        started = clock.now
        try:
            return evaluate(*args, **kwargs)
        finally:
            clock.now += CALL_S
            clock.evaluations.append((started, clock.now))

    monkeypatch.setattr(_session, "evaluate", slow)

    def generate(seed, n=6):
        return {"x": np.random.default_rng(seed).standard_normal(n)}

    ex = weanj.register_example(
        weanj.Example(
            name=SLOW,
            arrays=("x",),
            wrt="x",
            shapes={"x": ("n",)},
            params=(weanj.Param("T", default=3, minimum=2, maximum=4),),
            generate=generate,
            sizes=weanj.Sizes(generate=generate, values=(6,)),
        )
    )
    weanj.jax_variant(ex, "jax-a", family="q", loss=lambda x, T: jnp.sum(x**2) * T)
    weanj.jax_variant(ex, "jax-b", family="q", loss=lambda x, T: T * jnp.sum(x * x))
    weanj.write_inputs(SLOW)
    yield clock
    _registry.unregister_example(SLOW)


def test_seconds_ends_within_the_budget_and_one_evaluation_leaving_no_call(slow_pair, capsys):
    """#51's acceptance: `weanj fuzz --seconds 5` with evaluations of 2 s each."""
    clock = slow_pair
    evaluations = clock.evaluations
    threads, children = set(threading.enumerate()), _children()
    done = fuzz_command.fuzz(
        _registry.catalog(SLOW), seconds=5, max_examples=1000, clock=clock.read
    )
    out, err = capsys.readouterr()
    budget = 5.0
    assert done.out_of_time and done.exit_code == 0, out
    assert len(evaluations) >= 2, out
    # no evaluation starts once the budget is spent (the one in flight is waited for)
    assert [s for s, _ in evaluations if s >= budget] == [], evaluations
    # so the run ends within the budget and one evaluation (its longest)
    assert clock.now <= budget + CALL_S, (clock.now, evaluations)
    assert clock.now > budget  # the evaluation in flight at the budget was waited for
    # no call left running: no thread, no process, nothing said to run in the background
    assert set(threading.enumerate()) <= threads, threading.enumerate()
    assert _children() <= children
    assert "in the background" not in out + err
    summary = out.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"fuzz {SLOW}: ok — {done.draws} draw\(s\) in {clock.now:.0f} s \(stopped at the time "
        r"limit\); 0 of 1 pair\(s\) disagree",
        summary,
    ), summary
