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
        err,
        "weanj: error: timeout: ",
        "jax-slow",
        "time limit of 600 s (given: --timeout 600, or timeout= of the API; 0: none)",
        "nothing was saved",
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
    assert "Traceback" not in err and "time limit of 600 s" in err
    assert "(given: --timeout 600, or timeout= of the API; 0: none); skipping the rest" in err
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
    from weanj._pipeline.session import _session

    beat = threading.Event()

    def watch(*, say, **kw):
        def heard(line):
            say(line)
            if "compiling or running" in line and "jax-slow" in line:
                beat.set()  # its own beat (a sibling's slow compile may beat first)

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


# --- the default time limit (`[tool.weanj] timeout`, `--timeout`) ---------------------------


def test_a_call_without_timeout_ends_at_the_default_limit(slow, project, capsys):
    """No `--timeout`, no `[tool.weanj] timeout`: the limit is 600 s (`run`, `bench`,
    `weanj.check()`), and the timeout says so and how to change it."""
    code = main(["run", SMOOTH, "jax-slow"])
    assert code == 1
    said = "time limit of 600 s (the default, 600 s: [tool.weanj] timeout or --timeout S changes it"
    assert_one_line_error(capsys.readouterr().err, "weanj: error: timeout: ", said)
    assert main(["bench", SMOOTH, "--samples", "1", "--variants", "jax-slow"]) == 1
    assert said in capsys.readouterr().err
    judgement = weanj.check(SMOOTH, dtype="float64", say=lambda line: None)
    runs = {j.case: j for j in judgement[SMOOTH].of_kind("run")}
    timed_out = runs[f"{SMOOTH}::smooth::jax-slow::run"]
    assert timed_out.verdict == weanj.Verdict.TIMEOUT and said in timed_out.reason


def test_the_projects_time_limit_and_the_command_lines(tmp_path, monkeypatch):
    """`[tool.weanj] timeout`: absent 600 s, a number of seconds, 0 no limit, anything
    else one line naming the key; `--timeout S` (and `timeout=` of the API) wins, 0 no
    limit, a negative or non-number one line; a run takes the project's limit."""
    from weanj import _arguments as arg
    from weanj._cli._options import UsageError
    from weanj._cli._parser import parse
    from weanj._errors import InputError, ProjectError
    from weanj._pipeline.engine._run import evaluation_run
    from weanj._places import Places
    from weanj._project import DEFAULT_TIMEOUT, project_config, time_limit

    root = tmp_path / "p"
    root.mkdir()
    table = "[tool.weanj]\nexamples = []\n"
    for line, limit in (("", DEFAULT_TIMEOUT), ("timeout = 3\n", 3.0), ("timeout = 0\n", None)):
        (root / "pyproject.toml").write_text(table + line)
        config = project_config(root)
        assert config.timeout == limit
        assert time_limit(None, config) == limit
        if limit is not None:  # where it comes from, said with every timeout
            where = f"[tool.weanj] timeout in {root / 'pyproject.toml'}" if line else "the default"
            assert where in time_limit(None, config).source
            assert "given: --timeout 7" in time_limit(7, config).source
        assert time_limit(7, config) == 7.0 and time_limit(0, config) is None
        assert evaluation_run(Places(root)).timeout == limit  # the run reads the project's
        assert evaluation_run(Places(root), timeout=5).timeout == 5.0
    for bad in ("-1", '"ten"', "true", "[600]"):
        (root / "pyproject.toml").write_text(table + f"timeout = {bad}\n")
        with pytest.raises(ProjectError, match=r"\[tool.weanj\] timeout must be a number"):
            project_config(root)
    assert arg.time_limit(0, "timeout", "check") == 0.0
    assert arg.time_limit(2.5, "timeout", "check") == 2.5
    assert arg.time_limit(None, "timeout", "check") is None
    for bad in (-1, "600", True, float("nan")):
        with pytest.raises(InputError, match="seconds >= 0"):
            arg.time_limit(bad, "timeout", "check")
    monkeypatch.chdir(root)
    (root / "pyproject.toml").write_text(table)
    assert parse(["check", "--timeout", "0"])[0].timeout == 0.0
    assert parse(["check", "--timeout", "12"])[0].timeout == 12.0
    for bad in ("-1", "ten", "inf"):
        with pytest.raises(UsageError, match=r"--timeout: expected a number of seconds >= 0"):
            parse(["check", "--timeout", bad])


def test_the_time_limit_is_not_in_an_evaluations_key(tmp_path):
    """`[tool.weanj] timeout` changes how long a call may take, never a number of it: the
    records of a check are reused after the project's limit changed."""
    from .projects import tiny_project, weanj_here

    (tmp_path / "tiny").mkdir()
    root = tiny_project(tmp_path / "tiny")
    first = weanj_here(root, "check")
    assert first.returncode == 0, first.stderr
    with open(root / "pyproject.toml", "a") as f:
        f.write("timeout = 300\n")
    again = weanj_here(root, "check")
    assert again.returncode == 0, again.stderr
    assert "evaluations: reused 6 of 6 (" in again.stdout, again.stdout
