"""What bounds a check with a Julia worker that stops answering, and a stand-in command
that cannot be split (issue 64, item 3; issue 63, item 6), where no Julia runs.

- A worker that hangs in its first request: the variant's float64 evaluation ends at the
  time limit (`timeout`); its float32 evaluation is `timeout` at once, the variant not
  asked again, so the check waits one limit per variant; the lines name where the limit
  is set (`[tool.weanj] timeout`, `--timeout`, `$WEANJ_JULIA_TIMEOUT_S`). Shown by what
  the stand-in saw (one worker, one request), not by a clock.
- A worker that hangs at start: one start, both evaluations `timeout`, the second saying
  the worker is not started again.
- `$WEANJ_JULIA_WORKER` with an unbalanced quote: `weanj check` says so in one line and
  exits 2.

Nothing here is Julia, and nothing here is saved as a Julia result.
"""

from __future__ import annotations

import pytest

from weanj._backends import _julia_client, _julia_stand_in

from .julia_helpers import one_line
from .projects import run_in, user_env, write_project
from .test_julia_worker import TINY, check_json, nothing_left, pids_of, stand_in_worker

BOTH = TINY.replace('dtypes=("float64",)', 'dtypes=("float64", "float32")')
assert BOTH != TINY


def both_dtypes_project(root):
    files = {"tiny.py": BOTH, "julia/smooth.jl": "# a stand-in reads no Julia\n"}
    return write_project(root, files)


def check_with(root, worker: str, pids=None, timeout_s: str = "3"):
    env = {_julia_stand_in.WORKER_VARIABLE: worker, _julia_client.TIMEOUT_VARIABLE: timeout_s}
    if pids is not None:
        env["WEANJ_TEST_PIDS"] = str(pids)
    return run_in(root, "-m", "weanj", "check", "--dtype", "both", env=user_env(**env))


def julia_faults(root) -> dict:
    faults = check_json(root)["faults"]
    return {k: v for k, v in faults.items() if k.startswith("julia-smooth")}


@pytest.mark.parametrize(
    "mode, first, then",
    [
        (
            "hang",
            "still computing julia-smooth's loss and gradient after 3 s",
            "julia-smooth is not asked again: the Julia worker was still computing",
        ),
        pytest.param(
            "hang-at-start",
            "the Julia worker was still starting after 3 s",
            "not started again in this process",
            marks=pytest.mark.slow,  # the hang in a request is the acceptance's case
        ),
    ],
)
def test_a_worker_that_hangs_costs_one_limit_for_every_dtype(tmp_path, mode, first, then):
    root = both_dtypes_project(tmp_path)
    pids = tmp_path / "pids.jsonl"
    done = check_with(root, stand_in_worker(mode), pids)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    faults = julia_faults(root)
    assert set(faults) == {"julia-smooth", "julia-smooth@float32"}, faults
    assert all(f["verdict"] == "timeout" for f in faults.values()), faults
    reasons = [
        one_line(f["reason"]) for f in (faults["julia-smooth"], faults["julia-smooth@float32"])
    ]
    assert first in reasons[0]
    assert then in reasons[1]
    for reason in reasons:  # where the limits are set
        assert "[tool.weanj] timeout or --timeout" in reason
        assert "$WEANJ_JULIA_TIMEOUT_S" in reason
    seen = pids_of(pids)
    assert len(seen["worker"]) == 1  # never started again
    assert len(seen.get("handling", [])) == (1 if mode == "hang" else 0)  # nor asked again
    assert nothing_left(pids) == []


def test_an_unbalanced_quote_in_the_stand_in_command_is_one_line(tmp_path):
    """Issue 63, item 6: the command is split while the records are keyed (before any
    worker starts); a value a shell cannot split is one line, exit 2, no traceback."""
    root = both_dtypes_project(tmp_path)
    done = check_with(root, '"unbalanced')
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("weanj: error: ")]
    assert line == (
        'weanj: error: WEANJ_JULIA_WORKER="unbalanced is not a command a shell can split (No '
        "closing quotation): quote it as a POSIX shell does, or unset WEANJ_JULIA_WORKER to "
        "run Julia itself"
    )
