"""`weanj check`: runs every variant (float64 and float32), saves, checks the gradients
(Taylor, jvp), judges every case of the case table and reports.

To stay fast, the tests check a small example registered here, `93-smooth`: a periodic
1-D smoothing applied S times, `L(x) = Σ (MˢX − y)²`, whose gradient `2 Mˢ(Mˢx − y)`
numpy computes by hand (M is symmetric). Variants are added per test.

The verdicts are read from the `Judgement` that `weanj.check()` returns (the function
`weanj check` runs and prints); the text (`Judgement.lines()`, what the command prints)
is asserted where it is the subject: the variants table with its family-agreement
column, the compact pair table, the failure list, the overall line. Tests of the command
line's own behaviour (options, exit status, stderr) call its `main`.
"""

from __future__ import annotations

import threading

import jax
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._cli import main
from weanj._judge._jvp import jvp_direction
from weanj._watch import Watch

from .listing import assert_error_with_list
from .planting import plant
from .test_timeouts import clock  # noqa: F401 - the watch's clock, a fixture
from .toy_kernels import random_xy, smooth_loop, smooth_reference, smooth_scan, xy_example

NAME = "93-smooth"
MISSING = "weanj_no_such_package"


def generate(seed):
    return random_xy(seed, 24)


@pytest.fixture
def example(project):
    """`93-smooth` with two correct variants and one that cannot run here; the store
    starts empty (each `weanj.check()` evaluates afresh, in its own session)."""
    for recorded in (project / "results").glob("*/recorded"):
        for f in recorded.iterdir():
            f.unlink()
    shapes = {"x": ("n",), "y": ("n",)}
    params = (weanj.Param("S", 3),)
    ex = weanj.register_example(xy_example(NAME, shapes=shapes, params=params, generate=generate))
    weanj.jax_variant(ex, "jax-loop", family="smooth", loss=smooth_loop)
    weanj.jax_variant(ex, "jax-scan", family="smooth", loss=smooth_scan)
    weanj.jax_variant(ex, "jax-missing", family="smooth", loss=smooth_loop, requires=(MISSING,))
    weanj.write_inputs(NAME)
    yield ex
    _registry.unregister_example(NAME)


def _check(capsys, *names, **options):
    """`weanj.check(names)`: the judgement, its text as `weanj check` prints it, and
    what went to stderr (the progress lines)."""
    judgement = weanj.check(list(names) or None, **options)
    err = capsys.readouterr().err
    return judgement, "\n".join(judgement.lines()), err


def _cli(capsys, *argv):
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _row(out: str, label: str) -> list[str]:
    """The cells of a variant's row in the variants table (above the pair table)."""
    table = out.split("  pairs (")[0].splitlines()
    (row,) = [line for line in table if line.split()[:1] == [label]]
    return row.split()


def _overall(out: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith("overall: ")]
    return line


def _pair_row(out: str, reference: str, other: str) -> str:
    (row,) = [line for line in out.splitlines() if line.split()[:2] == [reference, other]]
    return row


def _inputs():
    d = weanj.load_inputs(NAME)
    return d["x"], d["y"], d["S"]


def _case(name: str) -> str:
    return f"{NAME}::smooth::{name}"


def test_check_runs_saves_checks_and_reports(example, capsys):
    judgement, out, err = _check(capsys, NAME)
    assert judgement.exit_code == 0 and judgement.ok, out + err
    ej = judgement[NAME]
    verdicts = judgement.verdicts()
    x, y, S = _inputs()
    loss, g = smooth_reference(x, y, S)
    v = weanj.variant(NAME, "jax-loop")
    stored = weanj.load_gradient(NAME, "jax-loop")  # saved, fresh, with provenance
    assert stored.loss == float(v.loss(x, y, S)) and abs(stored.loss - loss) <= 1e-12 * loss
    np.testing.assert_array_equal(stored.gradient, np.asarray(v.grad(x, y, S)))
    assert np.abs(stored.gradient - g).max() <= 1e-11 * np.abs(g).max()
    single = weanj.load_gradient(NAME, "jax-loop", dtype="float32")
    assert single.dtype == "float32" and single.gradient.dtype == np.float32
    assert np.abs(single.gradient - g).max() <= 1e-4 * np.abs(g).max()

    by_case = ej.by_case()
    for name in ("jax-loop", "jax-scan"):
        # The loss is quadratic: the Taylor remainder is exactly h²·|Mˢdx|², rate 2.
        taylor = by_case[_case(f"{name}::taylor")]
        rates = [r for rs in taylor.taylor.asymptotic for r in rs]
        assert taylor.verdict == "ok" and rates and all(1.95 <= r <= 2.05 for r in rates)
        jvp = by_case[_case(f"{name}::jvp")]
        assert jvp.verdict == "ok" and jvp.jvp.error <= 1e-12
    f32_rel = (
        np.abs(single.gradient.astype(np.float64) - stored.gradient).max()
        / np.abs(stored.gradient).max()
    )
    f32 = by_case[_case("jax-loop~jax-loop@float32")]
    assert f32.verdict == "ok" and f32.comparison.dtype == "float32"
    assert f32.comparison.max_rel == pytest.approx(f32_rel, rel=1e-12)
    assert verdicts[_case("jax-loop~jax-scan")] == "ok"
    assert verdicts[_case("jax-scan~jax-scan@float32")] == "ok"  # against its own float64
    # The variant that cannot run here: its runs `unavailable`, its cases skipped saying why.
    why = f"needs the Python package {MISSING!r}"
    assert set(ej.unavailable) == {"jax-missing", "jax-missing@float32"}
    assert all(text.startswith(why) for text in ej.unavailable.values())
    assert (
        verdicts[_case("jax-missing::run")]
        == verdicts[_case("jax-missing@float32::run")]
        == ("unavailable")
    )
    missing = (
        "jax-loop~jax-missing",
        "jax-scan~jax-missing",
        "jax-missing~jax-missing@float32",
        "jax-missing::taylor",
        "jax-missing::jvp",
    )
    for case in missing:
        assert verdicts[_case(case)] == "skipped" and by_case[_case(case)].reason.startswith(why)
    # 2 runnable variants × 2 dtypes; 7 cases not judged: jax-missing's 2 runs
    # (unavailable), its 3 pairs and 2 checks (skipped).
    assert sum(v in ("skipped", "unavailable") for v in verdicts.values()) == 7

    # The text view: the variants table with the numbers above, the overall line.
    cells = _row(out, "jax-loop")
    assert cells[1] == "smooth" and cells[2] == f"{stored.loss:.15e}"
    smallest = min(r for rs in by_case[_case("jax-loop::taylor")].taylor.asymptotic for r in rs)
    assert cells[3:5] == ["ok", f"{smallest:.2f}"]
    assert cells[5] == "ok" and float(cells[6]) <= 1e-12
    assert cells[7] == "ok" and cells[8] == f"{f32_rel:.1e}"
    assert cells[9:11] == ["ok", "×1"]  # family agreement: with jax-scan
    assert _row(out, "jax-scan")[3] == "ok"
    assert f"  unavailable jax-missing, jax-missing@float32: {why}" in out
    assert _pair_row(out, "jax-loop", "jax-scan").split()[-1] == "ok"
    assert _pair_row(out, "jax-scan", "jax-scan@float32").split()[-1] == "ok"
    assert f"  {NAME}: ok" in out.splitlines()
    assert _overall(out).startswith(
        "overall: ok — 1 example(s), 4 run(s) in float64 and float32, "
        f"7 case(s) not run: {why}"  # the reason of each, said once
    )
    assert (
        err.splitlines()
        == [  # one progress line per example; -v: one per evaluation
            line for line in err.splitlines() if line.startswith(f"[1/1] {NAME}: 4 evaluation(s), ")
        ]
        != []
    )
    _, verbose = _check(capsys, NAME, verbose=True)[1:]
    assert f"[1/4] {NAME} jax-loop: " in verbose and f"[4/4] {NAME} jax-scan@float32: " in verbose


def test_a_wrong_gradient_fails_the_taylor_and_jvp_checks(example, capsys):
    """The central-difference check is information now: the Taylor test (first-order
    remainders instead of second-order) and forward mode (jvp ≠ ⟨g, dx⟩) decide."""

    def doubled(x, y, S):
        return 2 * jax.grad(smooth_loop)(x, y, S)

    weanj.jax_variant(example, "jax-double", family="smooth", loss=smooth_loop, grad=doubled)
    judgement, out, _ = _check(capsys, NAME, save=False)
    assert judgement.exit_code == 1
    by_case = judgement[NAME].by_case()
    x, y, S = _inputs()
    _, g = smooth_reference(x, y, S)
    dx = jvp_direction(example, "x", x, None)
    jvp = by_case[_case("jax-double::jvp")]
    assert jvp.verdict == "FAIL" and jvp.jvp.by == "jax-double"
    # forward mode gives ⟨g, dx⟩, the variant claims ⟨2g, dx⟩
    assert jvp.jvp.forward == pytest.approx(float(g @ dx), rel=1e-12)
    expected = abs(float(g @ dx)) / float(np.sum(np.abs(2 * g) * np.abs(dx)))
    assert jvp.jvp.error == pytest.approx(expected, rel=1e-9)
    taylor = by_case[_case("jax-double::taylor")]
    assert taylor.verdict == "FAIL"
    assert all(0.9 <= r <= 1.2 for rates in taylor.taylor.asymptotic for r in rates)
    assert "the gradient of x is not the loss's derivative" in taylor.reason
    for other in ("jax-loop", "jax-scan"):
        pair = by_case[_case(f"{other}~jax-double")]
        assert pair.verdict == "FAIL" and pair.comparison.differing == 24
        assert pair.comparison.max_rel == pytest.approx(1.0, rel=1e-12)
        for kind in ("taylor", "jvp"):
            assert by_case[_case(f"{other}::{kind}")].verdict == "ok"
    # Central differences still say it, as information beside the Taylor verdict.
    assert taylor.info["fd"]["error"] == pytest.approx(0.5, abs=1e-6)

    # The text view: the row of the wrong variant, its family-agreement cell naming it
    # (it fails against both others, they only against it), the failure list.
    cells = _row(out, "jax-double")
    assert cells[3] == "FAIL" and 0.9 <= float(cells[4]) <= 1.2 and cells[5] == "FAIL"
    assert " FAIL vs 2 of 2 " in " ".join(cells)
    assert " ok ×1; FAIL vs " in " ".join(_row(out, "jax-loop"))
    assert _overall(out).startswith("overall: FAIL")
    assert f"{NAME}::smooth::jax-double::taylor: FAIL" in out
    assert "the gradient of x is not the loss's derivative" in out


def test_disagreeing_recorded_reference_fails_the_check(example, capsys):
    x, y, S = _inputs()
    loss, g = smooth_reference(x, y, S)
    off = g.copy()
    off[10] += 1e-9 * np.abs(g).max()
    path = weanj.gradient_path(NAME, "jax-loop", recorded=True)
    weanj.save_gradient(NAME, "jax-loop", off, loss=loss, path=path)
    judgement, out, _ = _check(capsys, NAME)
    assert judgement.exit_code == 1
    ej = judgement[NAME]
    by_case = ej.by_case()
    for reference_variant in ("jax-loop", "jax-scan"):
        pair = by_case[_case(f"{reference_variant}~recorded/jax-loop")]
        c = pair.comparison
        assert pair.verdict == "FAIL" and c.worst == (10,) and c.worst_julia == (11,)
        assert c.differing == 1 and c.differing_at == ((10,),)
        ((region),) = c.regions
        assert (region.count, region.lo, region.hi) == (1, (10,), (10,))
        row = _pair_row(out, reference_variant, "recorded/jax-loop")
        assert row.split()[-1] == "FAIL" and "(10)" in row and "(11)" in row
    assert "1 element(s) in numpy slice [10:11] / Julia range [11:11]" in out
    verdict = by_case[_case("jax-loop~recorded/jax-loop")]
    assert verdict.comparison.max_rel == pytest.approx(1e-9, rel=1e-3)
    assert by_case[f"{NAME}::file::recorded/jax-loop"].verdict == "ok"
    assert {j.case for j in ej.failures} == {
        _case("jax-loop~recorded/jax-loop"),
        _case("jax-scan~recorded/jax-loop"),
    }


def test_recorded_reference_on_other_inputs_is_stale_and_not_compared(example, capsys):
    x, _, _ = _inputs()
    path = weanj.gradient_path(NAME, "jax-loop", recorded=True)
    plant(NAME, "jax-loop", np.zeros_like(x), path=path, inputs_sha256="e" * 64)
    judgement, out, _ = _check(capsys, NAME)
    assert judgement.exit_code == 0, out
    ej = judgement[NAME]
    file = ej.by_case()[f"{NAME}::file::recorded/jax-loop"]
    assert file.verdict == "stale" and not file.failed
    assert "inputs sha256 eeeeeeeeeeee" in file.reason and "re-record it" in file.reason
    assert not [j for j in ej.judgements if "recorded/jax-loop" in j.subjects and j.kind != "file"]
    (line,) = [x for x in out.splitlines() if "file recorded/jax-loop:" in x]
    assert f"stale: {file.reason}" in line
    assert "recorded/jax-loop" not in out.replace(line, "")


def test_a_broken_variant_is_one_error_and_the_others_still_run(example, capsys):
    def broken(x, y, S):
        raise RuntimeError("lowering failed")

    weanj.jax_variant(example, "jax-broken", family="smooth", loss=broken)
    judgement, out, _ = _check(capsys, NAME)
    assert judgement.exit_code == 1
    ej = judgement[NAME]
    by_case = ej.by_case()
    # The variant's fault is its `run` case, in each dtype, with the command that
    # reproduces it; nothing of it was saved.
    # with the innermost line of the project's own code that raised (here, this file)
    line = broken.__code__.co_firstlineno + 1
    what = f"jax-broken raised RuntimeError: lowering failed (at tests/test_check.py:{line})"
    for dtype, flag in (("", ""), ("@float32", " --dtype float32")):
        run = by_case[_case(f"jax-broken{dtype}::run")]
        assert (run.verdict, run.reason) == ("error", what)
        assert run.command == f"weanj run {NAME} jax-broken{flag}"
        assert not weanj.gradient_path(NAME, "jax-broken", dtype=dtype[1:] or "float64").exists()
    assert set(ej.faults) == {"jax-broken", "jax-broken@float32"}
    assert {j.kind for j in ej.failures} == {"run"}  # its pairs are no failures
    # Its pairs and checks are not compared (was: FAIL against every other member).
    blocked = [j for j in ej.judgements if j.blocked_by]
    assert {j.case for j in blocked} == {
        _case("jax-loop~jax-broken"),
        _case("jax-scan~jax-broken"),
        _case("jax-broken~jax-broken@float32"),
        _case("jax-broken::taylor"),
        _case("jax-broken::jvp"),
    }
    assert all(j.verdict == "skipped" for j in blocked)
    # The others are judged as usual.
    for case in ("jax-loop::taylor", "jax-scan::taylor", "jax-loop~jax-scan"):
        assert by_case[_case(case)].verdict == "ok"

    # The text view: one row in the variants table, one in the failure list, the pairs
    # listed once as not compared.
    row = " ".join(_row(out, "jax-broken"))
    assert row == f"jax-broken smooth error: {what}"
    failures = out.split("  failures:\n")[1].split(f"\n  {NAME}: FAIL")[0].splitlines()
    assert failures == [
        f"    jax-broken (float64, float32): error: {what} (reproduce: `weanj run {NAME} "
        "jax-broken`)"
    ]
    # (its float32 pair is with its own float64 run, at fault too: that one names it)
    assert "  not compared: 5 case(s) with jax-broken (at fault, above)" in out
    assert "jax-broken" not in out.split("  pairs (")[1].split("  failures:")[0]
    assert _row(out, "jax-loop")[3] == "ok" and _row(out, "jax-scan")[3] == "ok"
    assert _pair_row(out, "jax-loop", "jax-scan").split()[-1] == "ok"


@pytest.mark.usefixtures("clock")
def test_a_variant_past_the_timeout_is_a_timeout_and_the_others_go_on(example, capsys, monkeypatch):
    """`clock` (test_timeouts'): while jax-slow's call is watched, the watch's clock runs
    1000 s a reading, so that call passes the limit of 600 s at once, and no other call
    can, however busy the machine (with a real limit of 0.5 s, jax-loop's own compile
    passed it under load)."""
    monkeypatch.setattr(Watch, "_start_beating", lambda self: None)  # it reads that clock
    release = threading.Event()

    def slow(x, y, S):
        release.wait(120)  # while tracing: until the test is done with it
        return smooth_loop(x, y, S)

    weanj.jax_variant(example, "jax-slow", family="smooth", loss=slow, dtypes=("float64",))
    try:
        judgement, out, err = _check(capsys, NAME, timeout=600)
    finally:
        release.set()  # the abandoned trace ends, before the example is unregistered
        for t in threading.enumerate():
            if t.name.startswith("weanj ") and t is not threading.current_thread():
                t.join()
    assert judgement.exit_code == 1
    by_case = judgement[NAME].by_case()
    run = by_case[_case("jax-slow::run")]
    assert run.verdict == "timeout" and "time limit of 600 s" in run.reason
    assert run.command == f"weanj run {NAME} jax-slow"
    # Its pair is not compared (was: a `timeout` pair).
    pair = by_case[_case("jax-loop~jax-slow")]
    assert pair.verdict == "skipped" and pair.blocked_by == "jax-slow"
    assert by_case[_case("jax-loop::taylor")].verdict == "ok"
    assert judgement[NAME].skipped == {"jax-slow@float32": "jax-slow supports float64 only"}
    assert " ".join(_row(out, "jax-slow")).startswith(f"jax-slow smooth timeout: {run.reason}")
    assert "still run in the background: " in err and "jax-slow" in err


def test_dtype_float64_checks_float64_only_and_says_so(example, capsys):
    code, out, _ = _cli(capsys, NAME, "--dtype", "float64")
    assert code == 0
    assert not (weanj.gradient_path(NAME, "jax-loop", dtype="float32")).exists()
    assert weanj.gradient_path(NAME, "jax-loop").is_file()
    assert _row(out, "jax-loop")[7] == "—"  # no float32 column
    assert "@float32" not in out
    assert _overall(out).startswith("overall: ok — 1 example(s), 2 run(s) in float64,")
    assert "float32 not checked (weanj check --dtype both)" in _overall(out)


def test_unreadable_inputs_leave_their_example_not_judged(example, project, capsys):
    (project / "shared_inputs" / "01-jacobi.h5").write_bytes(b"garbage")
    code, out, err = _cli(capsys, "01-jacobi", NAME)
    assert code == 2, out + err
    lines = out.splitlines()
    assert lines[0].startswith("== 01-jacobi: not judged: ") and "01-jacobi.h5" in lines[0]
    assert "weanj inputs regenerate 01-jacobi" in lines[0]
    # Not judged is not FAIL: no verdict line for it; the other example is judged.
    assert "  01-jacobi: FAIL" not in lines and f"  {NAME}: ok" in lines
    overall = _overall(out)
    assert overall.startswith("overall: not judged") and "not judged: 01-jacobi" in overall
    assert "failed:" not in overall
    # The error, once on stderr, besides the progress lines.
    (said,) = [line for line in err.splitlines() if "not judged" in line]
    assert said.startswith("weanj: 01-jacobi not judged: ") and "01-jacobi.h5" in said


def test_unknown_example_is_one_line_before_any_work(example, capsys):
    code, out, err = _cli(capsys, "03-nope")
    assert code == 2 and out == ""
    known = weanj.example_names()
    assert NAME in known
    assert_error_with_list(err, ["unknown example '03-nope'"], "known examples", known)


def test_compact_table_shows_pairs_with_the_family_reference(example, capsys):
    x, y, S = _inputs()
    loss, g = smooth_reference(x, y, S)
    for stem in ("gpu-a", "gpu-b"):
        path = weanj.gradient_path(NAME, stem, recorded=True)
        weanj.save_gradient(NAME, stem, g, loss=loss, family="smooth", path=path)
    judgement, out, _ = _check(capsys, NAME)
    rows = [
        r.split()[:2]
        for r in out.splitlines()
        if r.split()[1:2] and r.split()[1].startswith("recorded/")
    ]
    assert judgement.exit_code == 0
    # Not the non-reference pairs (gpu-a vs gpu-b, jax-scan vs gpu-a): `weanj diff` shows them.
    assert rows == [["jax-loop", "recorded/gpu-a"], ["jax-loop", "recorded/gpu-b"]]
    verdicts = judgement.verdicts()
    assert verdicts[_case("recorded/gpu-a~recorded/gpu-b")] == "ok"
    assert verdicts[_case("jax-scan~recorded/gpu-a")] == "ok"
    assert main(["diff", NAME]) == 0
    diff = capsys.readouterr().out
    assert _pair_row(diff, "recorded/gpu-a", "recorded/gpu-b").split()[-1] == "ok"
    assert _pair_row(diff, "jax-scan", "recorded/gpu-a").split()[-1] == "ok"
