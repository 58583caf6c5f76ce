"""`weanj check`: runs every variant (float64 and float32), saves, checks the gradients
(Taylor, jvp), judges every pair and file, and reports.

To stay fast, the tests check a small example registered here, `93-smooth`: a periodic
1-D smoothing applied S times, `L(x) = Σ (MˢX − y)²`, whose gradient `2 Mˢ(Mˢx − y)`
numpy computes by hand (M is symmetric). Variants are added per test.
"""

from __future__ import annotations

import time

import jax
import numpy as np
import pytest

import weanj
from weanj import _cases, _registry
from weanj._check import check_examples
from weanj._cli import main
from weanj._judge._gradcheck import jvp_direction

from .listing import assert_error_with_list
from .planting import plant
from .toy_kernels import random_xy, smooth_loop, smooth_reference, smooth_scan, xy_example

NAME = "93-smooth"
MISSING = "weanj_no_such_package"


def generate(seed):
    return random_xy(seed, 24)


@pytest.fixture
def example(project):
    """`93-smooth` with two correct variants and one that cannot run here; the store
    starts empty, and no evaluation of an earlier test is reused."""
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
    _cases.forget_evaluations()


def _check(capsys, *argv):
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


def test_check_runs_saves_checks_and_reports(example, capsys):
    code, out, err = _check(capsys, NAME)
    assert code == 0, out + err
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

    cells = _row(out, "jax-loop")
    assert cells[1] == "smooth" and cells[2] == f"{stored.loss:.15e}"
    # The loss is quadratic: the Taylor remainder is exactly h²·|Mˢdx|², rate 2.
    assert cells[3] == "ok" and 1.95 <= float(cells[4]) <= 2.05
    assert cells[5] == "ok" and float(cells[6]) <= 1e-12
    f32_rel = (
        np.abs(single.gradient.astype(np.float64) - stored.gradient).max()
        / np.abs(stored.gradient).max()
    )
    assert cells[7] == "ok" and cells[8] == f"{f32_rel:.1e}"
    assert _row(out, "jax-scan")[3] == "ok"
    assert f"skipped jax-missing, jax-missing@float32: needs the Python package {MISSING!r}" in out
    assert _pair_row(out, "jax-loop", "jax-scan").split()[-1] == "ok"
    assert _pair_row(out, "jax-loop", "jax-scan@float32").split()[-1] == "ok"
    assert f"  {NAME}: ok" in out
    # 2 runnable variants × 2 dtypes; skipped: jax-missing's 3 pairs and 2 checks.
    assert _overall(out).startswith(
        "overall: ok — 1 example(s), 4 run(s) in float64 and float32, 5 case(s) skipped"
    )
    assert "[1/4] jax-loop: " in err and "[4/4] jax-scan@float32: " in err


def test_a_wrong_gradient_fails_the_taylor_and_jvp_checks(example, capsys):
    """The central-difference check is information now: the Taylor test (first-order
    remainders instead of second-order) and forward mode (jvp ≠ ⟨g, dx⟩) decide."""

    def doubled(x, y, S):
        return 2 * jax.grad(smooth_loop)(x, y, S)

    weanj.jax_variant(example, "jax-double", family="smooth", loss=smooth_loop, grad=doubled)
    code, out, _ = _check(capsys, NAME)
    assert code == 1
    cells = _row(out, "jax-double")
    assert cells[3] == "FAIL" and 0.9 <= float(cells[4]) <= 1.2 and cells[5] == "FAIL"
    assert _overall(out).startswith("overall: FAIL")
    assert f"{NAME}::smooth::jax-double::taylor: FAIL" in out
    assert "the gradient of x is not the loss's derivative" in out

    (ej,) = check_examples([NAME], save=False)
    by_case = ej.by_case()
    x, y, S = _inputs()
    _, g = smooth_reference(x, y, S)
    dx = jvp_direction(example, "x", x, None)
    jvp = by_case[f"{NAME}::smooth::jax-double::jvp"]
    assert jvp.verdict == "FAIL" and jvp.directional.by == "jax-double"
    # forward mode gives ⟨g, dx⟩, the variant claims ⟨2g, dx⟩
    assert jvp.directional.forward == pytest.approx(float(g @ dx), rel=1e-12)
    expected = abs(float(g @ dx)) / float(np.sum(np.abs(2 * g) * np.abs(dx)))
    assert jvp.directional.error == pytest.approx(expected, rel=1e-9)
    taylor = by_case[f"{NAME}::smooth::jax-double::taylor"]
    assert all(0.9 <= r <= 1.2 for rates in taylor.taylor.asymptotic for r in rates)
    pair = by_case[f"{NAME}::smooth::jax-loop~jax-double"]
    assert pair.verdict == "FAIL" and pair.comparison.differing == 24
    assert pair.comparison.max_rel == pytest.approx(1.0, rel=1e-12)
    for case in (f"{NAME}::smooth::jax-loop::taylor", f"{NAME}::smooth::jax-loop::jvp"):
        assert by_case[case].verdict == "ok"
    # Central differences still say it, as information beside the Taylor verdict.
    assert taylor.info["fd"]["error"] == pytest.approx(0.5, abs=1e-6)


def test_disagreeing_recorded_reference_fails_the_check(example, capsys):
    x, y, S = _inputs()
    loss, g = smooth_reference(x, y, S)
    off = g.copy()
    off[10] += 1e-9 * np.abs(g).max()
    path = weanj.gradient_path(NAME, "jax-loop", recorded=True)
    weanj.save_gradient(NAME, "jax-loop", off, loss=loss, path=path)
    code, out, _ = _check(capsys, NAME)
    assert code == 1
    for reference_variant in ("jax-loop", "jax-scan"):
        row = _pair_row(out, reference_variant, "recorded/jax-loop")
        assert row.split()[-1] == "FAIL" and "(10)" in row and "(11)" in row
    assert "1 element(s) in numpy (10:10) / Julia (11:11)" in out
    (ej,) = check_examples([NAME], save=False)
    verdict = ej.by_case()[f"{NAME}::smooth::jax-loop~recorded/jax-loop"]
    assert verdict.comparison.max_rel == pytest.approx(1e-9, rel=1e-3)
    assert ej.by_case()[f"{NAME}::file::recorded/jax-loop"].verdict == "ok"


def test_recorded_reference_on_other_inputs_is_stale_and_not_compared(example, capsys):
    x, _, _ = _inputs()
    path = weanj.gradient_path(NAME, "jax-loop", recorded=True)
    plant(NAME, "jax-loop", np.zeros_like(x), path=path, inputs_sha256="e" * 64)
    code, out, _ = _check(capsys, NAME)
    assert code == 0, out
    (line,) = [x for x in out.splitlines() if "file recorded/jax-loop:" in x]
    assert "stale: inputs sha256 eeeeeeeeeeee" in line and "re-record it" in line
    assert "recorded/jax-loop" not in out.replace(line, "")


def test_a_broken_variant_is_reported_and_the_others_still_run(example, capsys):
    def broken(x, y, S):
        raise RuntimeError("lowering failed")

    weanj.jax_variant(example, "jax-broken", family="smooth", loss=broken)
    code, out, _ = _check(capsys, NAME)
    assert code == 1
    row = " ".join(_row(out, "jax-broken"))
    assert row.startswith("jax-broken ERROR RuntimeError: lowering failed")
    assert f"`weanj run {NAME} jax-broken`" in row
    assert _row(out, "jax-loop")[3] == "ok" and _row(out, "jax-scan")[3] == "ok"
    assert _pair_row(out, "jax-loop", "jax-scan").split()[-1] == "ok"
    assert _pair_row(out, "jax-loop", "jax-broken").split()[-1] == "FAIL"


def test_a_variant_past_the_timeout_is_a_timeout_and_the_others_go_on(example, capsys):
    def slow(x, y, S):
        time.sleep(2.0)  # while tracing: the first call takes this long
        return smooth_loop(x, y, S)

    weanj.jax_variant(example, "jax-slow", family="smooth", loss=slow, dtypes=("float64",))
    code, out, err = _check(capsys, NAME, "--timeout", "0.5")
    assert code == 1
    row = " ".join(_row(out, "jax-slow"))
    assert row.startswith("jax-slow timeout") and "time limit of 0.5 s" in row
    assert _pair_row(out, "jax-loop", "jax-slow").split()[-1] == "timeout"
    assert _row(out, "jax-loop")[3] == "ok"
    assert "still run in the background: " in err and "jax-slow" in err
    time.sleep(2.0)  # let the abandoned trace finish before the example is unregistered


def test_dtype_float64_checks_float64_only_and_says_so(example, capsys):
    code, out, _ = _check(capsys, NAME, "--dtype", "float64")
    assert code == 0
    assert not (weanj.gradient_path(NAME, "jax-loop", dtype="float32")).exists()
    assert weanj.gradient_path(NAME, "jax-loop").is_file()
    assert _row(out, "jax-loop")[7] == "—"  # no float32 column
    assert "@float32" not in out
    assert _overall(out).startswith("overall: ok — 1 example(s), 2 run(s) in float64,")
    assert "float32 not checked (weanj check --dtype both)" in _overall(out)


def test_unreadable_inputs_stop_only_their_example(example, project, capsys):
    (project / "shared_inputs" / "01-jacobi.h5").write_bytes(b"garbage")
    code, out, err = _check(capsys, "01-jacobi", NAME)
    assert code == 2, out + err
    lines = out.splitlines()
    assert lines[0].startswith("== 01-jacobi: not judged: ") and "01-jacobi.h5" in lines[0]
    assert "weanj inputs regenerate 01-jacobi" in lines[0]
    assert "  01-jacobi: FAIL" in lines and f"  {NAME}: ok" in lines
    assert _overall(out).startswith("overall: FAIL") and "failed: 01-jacobi" in _overall(out)


def test_unknown_example_is_one_line_before_any_work(example, capsys):
    code, out, err = _check(capsys, "03-nope")
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
    code, out, _ = _check(capsys, NAME)
    rows = [
        r.split()[:2]
        for r in out.splitlines()
        if r.split()[1:2] and r.split()[1].startswith("recorded/")
    ]
    assert code == 0
    # Not the non-reference pairs (gpu-a vs gpu-b, jax-scan vs gpu-a): `weanj diff` shows them.
    assert rows == [["jax-loop", "recorded/gpu-a"], ["jax-loop", "recorded/gpu-b"]]
    assert main(["diff", NAME]) == 0
    diff = capsys.readouterr().out
    assert _pair_row(diff, "recorded/gpu-a", "recorded/gpu-b").split()[-1] == "ok"
    assert _pair_row(diff, "jax-scan", "recorded/gpu-a").split()[-1] == "ok"
