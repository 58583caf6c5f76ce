"""Time limits and the heartbeat: a variant past `--timeout` is the verdict `timeout` and
the others go on (`run` saves nothing, `bench` measures the others, `check` judges them);
while a call lasts, a heartbeat on stderr.

No test here depends on how fast the machine is (issue 34: one failed under a load of 5-6
on 2 cores): the watch's clock is one the tests move. While a watched call of `jax-slow`
is in flight it runs 1000 s per reading, so that call passes the limit (600 s) at once,
whatever blocks it (its own trace, or JAX's lock on a trace of it still running in the
background); every other call is timed by the real clock, and 600 s is far beyond what
any of them takes, however busy the machine.
"""

from __future__ import annotations

import json
import re
import threading
import time
import types

import pytest

import weanj
from weanj import _watch
from weanj._cli import main
from weanj._watch import Watch

from .helpers import SMOOTH, assert_one_line_error, registered_smooth
from .toy_kernels import smooth_loop

LIMIT = "600"  # --timeout: only a call that moves the watch's clock past it reaches it


class _Clock:
    """`time.monotonic` for the watch: the real clock, moved forward by `jump`, and by
    1000 s at every reading while a call of jax-slow is watched (`slow` > 0)."""

    def __init__(self):
        self.offset = 0.0
        self.slow = 0

    def monotonic(self) -> float:
        if self.slow:
            self.offset += 1000.0
        return time.monotonic() + self.offset

    def jump(self, seconds: float) -> None:
        self.offset += seconds


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(_watch, "time", types.SimpleNamespace(monotonic=c.monotonic))
    real_run = Watch.run

    def run(self, fn, label):
        slow = "jax-slow" in label
        c.slow += slow
        try:
            return real_run(self, fn, label)
        finally:
            c.slow -= slow

    monkeypatch.setattr(Watch, "run", run)
    return c


_RELEASE = threading.Event()


@pytest.fixture
def slow(project, clock, monkeypatch):
    """`94-smooth` with `jax-loop` and `jax-slow`, whose trace (its first call: a compile)
    lasts until the test ends. No heartbeat: its thread would read the clock that runs
    1000 s a reading (and say a line) while the call is still being timed out."""
    monkeypatch.setattr(Watch, "_start_beating", lambda self: None)

    def slow_loss(x, y, S):
        _RELEASE.wait(120)  # while tracing
        return smooth_loop(x, y, S)

    with registered_smooth() as ex:
        weanj.jax_variant(ex, "jax-slow", family="smooth", loss=slow_loss, dtypes=("float64",))
        try:
            yield ex
        finally:
            _RELEASE.set()  # a trace left running past a timeout ends now
            for t in threading.enumerate():
                if t.name.startswith("weanj "):
                    t.join()
            _RELEASE.clear()


def test_run_past_its_timeout_is_a_timeout_and_saves_nothing(slow, project, capsys):
    code = main(["run", SMOOTH, "jax-slow", "--timeout", LIMIT])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert_one_line_error(
        err, "weanj: error: timeout: ", "jax-slow", "time limit of 600 s", "nothing was saved"
    )
    assert not (project / "results" / SMOOTH / "gradients" / "jax-slow.h5").exists()
    # The other variant, under the same limit, runs and is saved.
    assert main(["run", SMOOTH, "jax-loop", "--timeout", LIMIT]) == 0
    assert (project / "results" / SMOOTH / "gradients" / "jax-loop.h5").is_file()


def test_check_past_its_timeout_judges_the_others(slow, project):
    judgement = weanj.check(SMOOTH, dtype="float64", timeout=600, say=lambda line: None)
    ej = judgement[SMOOTH]
    runs = {j.case: j for j in ej.of_kind("run")}
    timed_out = runs[f"{SMOOTH}::smooth::jax-slow::run"]
    assert timed_out.verdict == weanj.Verdict.TIMEOUT and "time limit of 600 s" in timed_out.reason
    assert runs[f"{SMOOTH}::smooth::jax-loop::run"].verdict == weanj.Verdict.OK
    # its pair and checks are not compared; jax-loop's checks are judged as usual
    pair = ej.by_case()[f"{SMOOTH}::smooth::jax-loop~jax-slow"]
    assert pair.verdict == weanj.Verdict.SKIPPED and pair.blocked_by == "jax-slow"
    for kind in ("taylor", "jvp"):
        assert ej.by_case()[f"{SMOOTH}::smooth::jax-loop::{kind}"].verdict == weanj.Verdict.OK
        assert ej.by_case()[f"{SMOOTH}::smooth::jax-slow::{kind}"].blocked_by == "jax-slow"
    assert [j.case for j in ej.failures] == [timed_out.case] and judgement.exit_code == 1


def test_bench_past_its_timeout_goes_on_and_says_so(slow, project, capsys):
    argv = ["bench", SMOOTH, "--samples", "1", "--timeout", LIMIT]
    assert main([*argv, "--variants", "jax-slow"]) == 1  # nothing measured: no traceback
    err = capsys.readouterr().err
    assert "Traceback" not in err and "time limit of 600 s; skipping the rest" in err
    assert "nothing was written" in err.strip().splitlines()[-1]
    assert not (project / "results" / SMOOTH / "bench").exists()
    assert main([*argv, "--variants", "jax-slow", "jax-loop"]) == 0
    out, err = capsys.readouterr()
    assert "still run in the background: jax-slow" in err
    records = json.loads((project / "results" / SMOOTH / "bench" / "jax-cpu.json").read_text())
    assert [r["variant"] for r in records["records"]] == ["jax-loop"]
    assert "`jax-loop`" in out and "`jax-slow`" not in out


def test_the_heartbeat_while_a_call_lasts(clock):
    """The call ends only once three beats were heard (it used to sleep 1 s and expect
    2 to 4 beats: a busy machine can starve the watching thread for that long); each
    beat tells the seconds by the watch's clock, which the call moves by 10 s a beat."""
    said, heard = [], threading.Event()

    def say(line):
        said.append(line)
        clock.jump(10.0)
        if len(said) == 3:
            heard.set()

    watch = Watch(timeout_s=None, quiet_s=0.2, every_s=0.3, say=say)
    assert watch.run(lambda: heard.wait(120) and 42, "01-jacobi jax-loop") == 42
    assert len(said) >= 3, said
    seconds = []
    for line in said:
        m = re.fullmatch(r"  compiling or running 01-jacobi jax-loop … (\d+) s", line)
        assert m, line
        seconds.append(int(m.group(1)))
    assert seconds == sorted(seconds) and seconds[1] >= seconds[0] + 10, seconds
    # Past the limit: TimeoutError for the caller, the call left running (and said so).
    release = threading.Event()

    def lasts():
        clock.jump(1.0)
        release.wait(60)

    watch = Watch(timeout_s=0.5, quiet_s=0.1, every_s=10, say=said.append)
    with pytest.raises(TimeoutError, match="time limit of 0.5 s"):
        watch.run(lasts, "slow")
    assert watch.abandoned == ["slow"]
    release.set()
    # An error in the call is the caller's, as if called directly.
    with pytest.raises(ZeroDivisionError):
        Watch(quiet_s=0.1).run(lambda: 1 / 0, "broken")


def test_check_prints_the_heartbeat_of_a_long_compile(project, capsys, monkeypatch):
    """A compile heard from after 0.3 s: it lasts until its first beat was printed (it
    used to last 1.2 s, and a busy machine could starve the beat)."""
    from weanj._pipeline import _session

    beat = threading.Event()

    def watch(*, say, **kw):
        def heard(line):
            say(line)
            if "compiling or running" in line:
                beat.set()

        return Watch(**kw, say=heard, quiet_s=0.3, every_s=0.5)

    monkeypatch.setattr(_session, "Watch", watch)

    def long_compile(x, y, S):
        beat.wait(120)  # while tracing: until the heartbeat was heard
        return smooth_loop(x, y, S)

    with registered_smooth() as ex:
        weanj.jax_variant(ex, "jax-slow", family="smooth", loss=long_compile, dtypes=("float64",))
        code = main(["check", SMOOTH, "--dtype", "float64"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert re.search(rf"^  compiling or running {SMOOTH} jax-slow … \d+ s$", err, re.M), err
    assert json.loads((project / "results" / SMOOTH / "check.json").read_text())["verdict"] == "ok"
