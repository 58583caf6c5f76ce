"""Ctrl-C: `weanj check` interrupted at random moments ends with 130, never by another
signal, and leaves every file whole (the store still reads and matches its digests, and
a rerun passes); `pytest --weanj` interrupted is pytest's "interrupted"; an interrupt that
a library callback swallowed still ends with 130. Run as a user runs them: fresh
processes in a user project (`projects.tiny_project`), signalled as a terminal does."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from .projects import user_env, weanj_here, weanj_in, write_project


def _popen(argv: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=cwd,
        env=user_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as a terminal's job has
    )


def _no_temporaries(root: Path) -> list[Path]:
    return sorted(p for p in (root / "results").rglob("*") if p.name.endswith(".tmp"))


def _interrupt(argv: list[str], cwd: Path, delay: float) -> tuple[float, int, str, str]:
    """`python ARGV` sent SIGINT after `delay` s, to its whole process group as a
    terminal's Ctrl-C is (the HDF5 probe process too): (delay, exit code, stdout, stderr)."""
    p = _popen(argv, cwd)
    time.sleep(delay)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    return delay, p.returncode, out, err


# `-m slow`: a check of six slots interrupted at each (the Julia worker's SIGINT test and
# test_exit_calls interrupt a check by default).
@pytest.mark.parametrize(
    "count", [pytest.param(6, marks=pytest.mark.slow), pytest.param(20, marks=pytest.mark.slow)]
)
def test_interrupts_end_with_130_and_leave_every_file_whole(tiny, count):
    """Acceptance 1 (twenty interrupts under `-m slow`, six in the fast suite). The
    delays run from 0.1 s to the length of a whole check, so that the interrupts fall
    while `weanj` imports (numpy, h5py, JAX), while the variants compile and run, and
    while gradient files are written. (The interpreter's own first ~50 ms,
    site and runpy, come before any line of weanj and keep Python's default.) Two lanes
    run side by side, in the same project: concurrent writers of one store as well."""
    argv = ["-m", "weanj", "check", "--dtype", "float64"]
    for _ in range(2):  # the second check is timed: its programs come from the cache, as later
        t0 = time.monotonic()
        first = weanj_in(tiny, *argv[2:])
        whole = time.monotonic() - t0
        assert first.returncode == 0, first.stdout + first.stderr
    rng = random.Random(24)
    delays = [rng.uniform(0.1, whole) for _ in range(count)]
    outcomes: list[tuple[float, int, str, str]] = []

    def lane(mine):
        for d in mine:
            while True:
                outcomes.append(_interrupt(argv, tiny, d))
                if outcomes[-1][1] != 0 or d <= 0.1:
                    break
                # done before the signal: the machine is quicker now than when the check
                # was timed (a busy machine makes it slower, never quicker); sooner, then
                d = max(0.1, d / 2)

    lanes = [threading.Thread(target=lane, args=(delays[k::2],)) for k in range(2)]
    for t in lanes:
        t.start()
    for t in lanes:
        t.join()
    assert len(outcomes) >= count
    for delay, code, _, err in outcomes:
        # 130 and "weanj: interrupted", or 0 where the check was done before the signal
        assert code in (0, 130), (delay, code, err[-2000:])
        assert "Traceback" not in err and "Fatal Python error" not in err, (delay, err[-2000:])
        if code == 130:
            assert err.strip().splitlines()[-1] == "weanj: interrupted", (delay, err[-500:])
    # every slot ended interrupted, however busy the machine (a check never ends in 0.1 s)
    assert sum(code == 130 for _, code, _, _ in outcomes) == count, [o[:2] for o in outcomes]
    # Every stored file opens and matches its digests: `weanj diff` reads and judges them
    # all (an unreadable or tampered one is a failing file verdict).
    r = weanj_in(tiny, "diff", "10-tiny", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    judged = json.loads(r.stdout)
    assert judged["verdict"] == "ok" and judged["failures"] == [], judged["failures"]
    files = {f["case"]: f["verdict"] for f in judged["files"]}
    assert files == {f"10-tiny::file::{label}": "ok" for label in ("jax-a", "jax-b")}
    assert _no_temporaries(tiny) == []
    r = weanj_in(tiny, *argv[2:])
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("10-tiny", "11-other"):  # the verdicts the rerun left for the report
        check = json.loads((tiny / "results" / name / "check.json").read_text())
        assert check["verdict"] == "ok" and check["ok"] and check["failures"] == []


@pytest.mark.slow  # a whole pytest --weanj session, interrupted
def test_pytest_weanj_interrupted_is_pytests_interrupted(tiny):
    """`pytest --weanj` interrupted while it judges (just after it has said what it
    collected): pytest's own "interrupted" (2), never a pass, a failure or a death by a
    signal."""
    argv = ["-m", "pytest", "--weanj", "-p", "no:cacheprovider", "-q"]
    codes = []
    for after in (0.0, 0.1, 0.3):
        p = _popen(argv, tiny)
        collected = p.stdout.readline()
        while collected and not collected.startswith("weanj: "):
            collected = p.stdout.readline()
        # 10-tiny: 4 runs (2 variants × 2 dtypes), 3 pairs, Taylor and jvp of 2 variants;
        # 11-other: 2 runs, 1 pair, Taylor and jvp
        assert collected.startswith("weanj: 16 cross-validation item(s)"), collected
        time.sleep(after)
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=120)
        codes.append(p.returncode)
        if p.returncode == 0:  # it was done already: the summary says all passed
            assert out.strip().splitlines()[-1].startswith("16 passed"), out[-2000:]
            continue
        if p.returncode == 1 and "tb_lineno - 1" in err:
            # pytest itself failing to draw the interrupt's traceback: on CPython 3.11 a
            # frame interrupted at an instruction without a line has tb_lineno None
            continue
        assert p.returncode == pytest.ExitCode.INTERRUPTED, (after, p.returncode, out, err)
        assert "KeyboardInterrupt" in out, out[-2000:]
    assert codes.count(pytest.ExitCode.INTERRUPTED) >= 2, codes


def test_an_interrupt_a_library_swallowed_still_ends_with_130(tmp_path):
    """A KeyboardInterrupt raised inside a callback that Python cannot raise from (a
    `__del__`, as XLA's garbage-collection hook) is swallowed with "Exception ignored";
    the command then ran on to exit 0. It must end with 130, and say only that."""
    script = textwrap.dedent(
        """
        import os, signal, time
        from weanj._cli import _main

        class Callback:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)  # the KeyboardInterrupt is raised here, inside __del__

        def main(argv=None):
            Callback()  # collected at once
            print("done")
            return 0

        _main.main = main
        _main.entry()
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=user_env(), capture_output=True, text=True
    )
    assert r.returncode == 130 and r.stdout == "done\n", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip() == "weanj: interrupted"


# --- finished work is kept: SIGINT and SIGTERM, in-process and on Dask ----------------------

# `20-wait`: three variants that compute at once, and `jax-wait` (float64 only), which waits
# until the file `release` exists (600 s at most): a run interrupted while it waits has
# finished exactly the other six evaluations, whatever the machine's speed.
WAITING = """\
import time
import uuid
from pathlib import Path

import jax.numpy as jnp, numpy as np
import weanj

RELEASE = Path(__file__).with_name("release")

ex = weanj.register_example(weanj.Example(
    name="20-wait", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)},
))


@weanj.jax_variant(ex, "jax-a", family="f")
def a(x):
    return jnp.sum(jnp.sin(x) ** 2)


@weanj.jax_variant(ex, "jax-b", family="f")
def b(x):
    return jnp.sum(jnp.sin(x) * jnp.sin(x))


@weanj.jax_variant(ex, "jax-c", family="f")
def c(x):
    return jnp.sum(1 - jnp.cos(x) ** 2)


@weanj.jax_variant(ex, "jax-wait", family="f", dtypes=("float64",))
def wait(x):
    RELEASE.with_name("waiting-now").touch()  # traced: it waits from here
    t0 = time.monotonic()
    while not RELEASE.exists() and time.monotonic() - t0 < 600:
        time.sleep(0.05)
    return jnp.sum(jnp.sin(x) ** 2)
"""


@pytest.fixture(scope="module")
def waiting(tmp_path_factory) -> Path:
    """The `20-wait` project (`x64 = true`), its inputs written, written once for this
    module: each test runs in its own copy (`_copy_of`), so none sees another's results."""
    root = write_project(tmp_path_factory.mktemp("waiting"), {"kernels/waiting.py": WAITING})
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + "x64 = true\n")
    return root


def _copy_of(waiting: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(waiting, tmp_path / "p"))


_FINISHED = re.compile(r"\[\d+/7\] 20-wait (\S+): [\d.]+ s, ok")
_REUSED = re.compile(r"\[\d+/7\] 20-wait (\S+): reused, ok")


def _ours(marker: str) -> list[int]:
    """The pids of the processes whose environment holds `marker` (the command's and every
    process it started: Dask's workers, jax.distributed's processes)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _none_left(marker: str) -> list[int]:
    """The processes of a command still there (polled for a while: a process being reaped
    is still listed for a moment)."""
    deadline = time.monotonic() + 60  # an upper bound on the polling only
    while (left := _ours(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.mark.parametrize(
    "signum, workers",
    [
        (signal.SIGINT, []),
        (signal.SIGTERM, []),
        (signal.SIGINT, ["--workers", "2"]),
        pytest.param(signal.SIGTERM, ["--workers", "2"], marks=pytest.mark.slow),
    ],
    ids=["sigint", "sigterm", "sigint-workers", "sigterm-workers"],
)
def test_an_interrupted_check_keeps_what_had_finished(waiting, tmp_path, signum, workers):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) or SIGTERM (what SLURM
    and PBS send at a job's time limit) while `jax-wait` waits, the six other evaluations
    finished: one line, exit 130 or 143, no traceback (the Dask workers' own included), no
    process left; the next check (in this process: what it reads is the store the
    interrupted one left) reuses exactly those six and computes the seventh."""
    root = _copy_of(waiting, tmp_path)
    marker = f"WEANJ_TEST_RUN={uuid.uuid4().hex}"
    name, value = marker.split("=")
    p = subprocess.Popen(
        [sys.executable, "-m", "weanj", "check", "-v", *workers],
        cwd=root,
        env=user_env(**{name: value}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    said, finished = [], []
    while len(finished) < 6:
        line = p.stderr.readline()
        assert line, (p.wait(), said)
        said.append(line)
        if m := _FINISHED.match(line):
            finished.append(m.group(1))
    if signum == signal.SIGINT:
        os.killpg(p.pid, signum)
    else:
        os.kill(p.pid, signum)
    out, err = p.communicate(timeout=300)
    err = "".join(said) + err
    code, line = {
        signal.SIGINT: (130, "weanj: interrupted"),
        signal.SIGTERM: (143, "weanj: terminated (SIGTERM)"),
    }[signum]
    assert p.returncode == code, (p.returncode, err[-3000:])
    assert err.strip().splitlines()[-1] == line, err[-3000:]
    assert "Traceback" not in err and "Traceback" not in out, err[-5000:]
    assert _none_left(marker) == []
    labels = [f"{v}{d}" for v in ("jax-a", "jax-b", "jax-c") for d in ("", "@float32")]
    assert sorted(finished) == sorted(labels)
    (root / "kernels" / "release").touch()
    again = weanj_here(root, "check", "-v")
    assert again.returncode == 0, again.stdout + again.stderr
    reused = [m.group(1) for m in map(_REUSED.match, again.stderr.splitlines()) if m]
    assert sorted(reused) == sorted(finished), again.stderr
    assert "evaluations: reused 6 of 7, 1 recomputed" in again.stdout, again.stdout
    # the float64 records written before their checks were judged have them now: the check
    # computed them for the reused evaluations and wrote them in
    import numpy as np

    for label in ("jax-a", "jax-b", "jax-c", "jax-wait"):
        with np.load(root / "results" / "20-wait" / "evaluations" / f"{label}.npz") as z:
            record = json.loads(str(z["record"][()]))
        assert set(record["checks"]) == {"taylor::x", "jvp::x"}, (label, record["checks"])


def test_a_sigterm_while_weanj_imports_is_one_line_and_143(tmp_path):
    """SIGTERM before the command has started (while `weanj` and its libraries import):
    noted, then the command ends as for a SIGTERM at any later moment, one line and 143,
    never a death by the signal."""
    script = textwrap.dedent(
        """
        import os, signal, sys
        sys.argv = [__file__, "list"]  # the console script: started as the program
        import weanj  # noqa: F401 - as the console script imports it, handlers held
        os.kill(os.getpid(), signal.SIGTERM)  # noted, not fatal
        from weanj._cli import _main
        _main.entry()
        """
    )
    (tmp_path / "weanj").write_text(script)
    r = subprocess.run(
        [sys.executable, str(tmp_path / "weanj")],
        cwd=tmp_path,
        env=user_env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 143, (r.returncode, r.stderr)
    assert r.stderr.strip() == "weanj: terminated (SIGTERM)", r.stderr


def test_pytest_weanj_terminated_is_pytests_interrupted(waiting, tmp_path):
    """`pytest --weanj` sent SIGTERM while `jax-wait` waits: pytest's own "interrupted"
    (2), as for Ctrl-C, never a death by the signal; the evaluations that had finished
    are recorded."""
    root = _copy_of(waiting, tmp_path)
    p = _popen(["-m", "pytest", "--weanj", "-p", "no:cacheprovider", "-q"], root)
    collected = p.stdout.readline()
    while collected and not collected.startswith("weanj: "):
        collected = p.stdout.readline()
    assert "cross-validation item(s)" in collected, collected
    records = root / "results" / "20-wait" / "evaluations"
    deadline = time.monotonic() + 300  # an upper bound on the polling only
    while len(list(records.glob("*.npz"))) < 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(p.pid, signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == pytest.ExitCode.INTERRUPTED, (p.returncode, out[-3000:], err)
    assert "KeyboardInterrupt" in out, out[-2000:]
    assert len(list(records.glob("*.npz"))) == 6


def test_a_missing_dependency_is_one_line_and_exit_2(monkeypatch, capsys):
    """`python -m weanj check` where JAX cannot be imported (a checkout on PYTHONPATH, its
    dependencies not installed): one line naming it, exit 2, no traceback."""
    from weanj._cli._main import main

    monkeypatch.setitem(sys.modules, "jax", None)  # `import jax` raises ImportError
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert "weanj needs jax" in err and "pip install -e ." in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


# --- every command ends on a signal the same way ------------------------------------------


@pytest.mark.parametrize(
    "argv, waits_after",
    [
        (("bench", "20-wait", "--samples", "1"), "20-wait jax-wait on cpu"),
        (("bisect", "20-wait", "jax-a", "jax-wait", "--inputs", "shared_inputs/20-wait.h5"), None),
        (("fuzz", "20-wait", "--pairs", "jax-a", "jax-wait", "--seed", "1"), None),
    ],
    ids=["bench", "bisect", "fuzz"],
)
def test_sigterm_ends_bench_bisect_and_fuzz_as_it_ends_check(waiting, tmp_path, argv, waits_after):
    """SIGTERM while `jax-wait` waits: exit 143, one line, no traceback, no process left,
    as `weanj check` ends (above); `weanj bench` keeps the series it had measured in full
    (jax-a, jax-b, jax-c) in its records file."""
    root = _copy_of(waiting, tmp_path)
    marker = f"WEANJ_TEST_RUN={uuid.uuid4().hex}"
    name, value = marker.split("=")
    p = subprocess.Popen(
        [sys.executable, "-m", "weanj", *argv],
        cwd=root,
        env=user_env(**{name: value}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    waiting_now = root / "kernels" / "waiting-now"
    said = []
    if waits_after is not None:  # until the command says it has reached jax-wait
        while waits_after not in "".join(said):
            line = p.stderr.readline()
            assert line, (p.wait(), said)
            said.append(line)
    else:  # until jax-wait's loss has started waiting (it says so by a file)
        deadline = time.monotonic() + 600  # an upper bound on the polling only
        while not waiting_now.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert waiting_now.exists(), (p.poll(), p.stderr.read() if p.poll() is not None else "")
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=300)
    err = "".join(said) + err
    assert p.returncode == 143, (p.returncode, err[-3000:])
    assert err.strip().splitlines()[-1] == "weanj: terminated (SIGTERM)", err[-3000:]
    assert "Traceback" not in err + out, err[-5000:]
    assert _none_left(marker) == []
    if argv[0] == "bench":
        records = json.loads((root / "results" / "20-wait" / "bench" / "jax-cpu.json").read_text())
        assert sorted({r["variant"] for r in records["records"]}) == ["jax-a", "jax-b", "jax-c"]


# A series that waits at its last size: bench has measured n = 4 and 8 when it waits at 16.
LATE_WAIT = """\
import time
from pathlib import Path

import jax.numpy as jnp, numpy as np
import weanj

HERE = Path(__file__).parent


def generate(seed, n=4):
    return {"x": np.random.default_rng(seed).standard_normal(n)}


ex = weanj.register_example(weanj.Example(
    name="21-late", arrays=("x",), wrt="x", shapes={"x": ("n",)}, generate=generate,
    sizes=weanj.Sizes(generate=generate, values=(4, 8, 16)),
))


@weanj.jax_variant(ex, "jax-late", family="f")
def late(x):
    if x.shape[0] >= 16:  # traced at n = 16: it waits from here
        (HERE / "waiting-now").touch()
        t0 = time.monotonic()
        while not (HERE / "release").exists() and time.monotonic() - t0 < 600:
            time.sleep(0.05)
    return jnp.sum(jnp.sin(x) ** 2)
"""


def test_sigterm_during_bench_keeps_the_points_measured(tmp_path):
    """SIGTERM while the one variant's series waits at its last size: exit 143, and the
    points it had measured (n = 4, 8) are in its records file, said before the end; before,
    a series interrupted anywhere kept none of its points."""
    root = write_project(tmp_path, {"kernels/late.py": LATE_WAIT})
    p = _popen(["-m", "weanj", "bench", "21-late", "--samples", "1"], root)
    waiting_now = root / "kernels" / "waiting-now"
    deadline = time.monotonic() + 600  # an upper bound on the polling only
    while not waiting_now.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert waiting_now.exists(), (p.poll(), p.stderr.read() if p.poll() is not None else "")
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 143, (p.returncode, err[-3000:])
    lines = err.strip().splitlines()
    assert lines[-1] == "weanj: terminated (SIGTERM)", err[-3000:]
    shown = "results/21-late/bench/jax-cpu.json"
    assert lines[-2] == f"kept the 2 point(s) measured before the interrupt: {shown}", err
    records = json.loads((root / shown).read_text())["records"]
    assert sorted((r["variant"], r["n"]) for r in records) == [("jax-late", 4), ("jax-late", 8)]
