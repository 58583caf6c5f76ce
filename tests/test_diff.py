"""`weanj diff`: the pair table, the refusal of stale gradients, NaN/Inf, JSON and plots.

Most gradients here are small synthetic arrays saved with `save_gradient(..., family=...)`;
the planted-disagreement test uses one real `jax-lex` gradient, computed once per module.
"""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest

import weanj
from weanj._cli import main

from .helpers import assert_one_line_error

EX = "02-gauss-seidel"


def _strict_json(text: str):
    """Parse JSON as other languages would: NaN/Infinity are not JSON."""

    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _ulp(a: float, b: float) -> int:
    """ULP distance of two float64 numbers of the same sign (their bit patterns are ordered)."""
    assert np.sign(a) == np.sign(b)
    return abs(int(np.float64(a).view(np.int64)) - int(np.float64(b).view(np.int64)))


@pytest.fixture
def store(project):
    """A project root whose store starts empty (no recorded references either)."""
    for recorded in (project / "results").glob("*/recorded"):
        shutil.rmtree(recorded)
    return project


@pytest.fixture(scope="module")
def jax_lex():
    """`jax-lex` on the shared inputs (the `project` fixture copies the same inputs)."""
    return weanj.evaluate(EX, "jax-lex")


def _shape():
    return weanj.load_inputs(EX)["theta"].shape


def _random(seed: int, scale: float = 1.0) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal(_shape())


def _run(capsys, *argv):
    code = main(["diff", EX, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _pair(report: dict, reference: str, other: str) -> dict:
    found = [p for p in report["pairs"] if (p["reference"], p["other"]) == (reference, other)]
    assert len(found) == 1, report["pairs"]
    return found[0]


def test_planted_disagreement_is_named_in_both_conventions(store, jax_lex, capsys):
    g = jax_lex.gradient
    planted = g.copy()
    planted[3, 5] += 1e-6 * np.max(np.abs(g))
    jax_lex.save()
    weanj.save_gradient(EX, "jax-lex-planted", planted, loss=jax_lex.loss, family="lex")

    code, out, err = _run(capsys)
    assert code == 1, out + err
    fail_lines = [line for line in out.splitlines() if "FAIL" in line and "planted" in line]
    assert fail_lines and all("(3, 5)" in line and "(4, 6)" in line for line in fail_lines)

    code, out, _ = _run(capsys, "--json")
    assert code == 1
    pair = _pair(_strict_json(out), "jax-lex", "jax-lex-planted")
    assert pair["verdict"] == "FAIL" and pair["same_family"]
    assert pair["worst"] == [3, 5] and pair["worst_julia"] == [4, 6]
    assert pair["max_abs"] == abs(planted[3, 5] - g[3, 5])
    assert pair["max_rel"] == pytest.approx(1e-6, rel=1e-9)
    assert pair["ulp"] == _ulp(g[3, 5], planted[3, 5])
    assert pair["loss_abs"] == 0.0


def test_pair_table_same_family_agrees_other_family_is_info(store, capsys):
    g_ref = _random(0)
    g_close = g_ref * (1 + 1e-13)  # within 1e-11·max|g_ref|
    g_rb = _random(1, scale=3.0)
    weanj.save_gradient(EX, "jax-lex", g_ref, loss=2.0)
    weanj.save_gradient(EX, "mine-lex", g_close, loss=2.0 * (1 + 1e-14), family="lex")
    weanj.save_gradient(EX, "jax-rb", g_rb, loss=3.0)

    code, out, _ = _run(capsys)
    assert code == 0, out
    rows = {tuple(line.split()[:2]): line for line in out.splitlines() if line.startswith("  ")}
    same = rows[("jax-lex", "mine-lex")]
    delta = np.abs(g_close - g_ref)
    worst = np.unravel_index(np.argmax(delta), delta.shape)
    assert f"{delta.max():.2e}" in same
    assert f"{delta.max() / np.abs(g_ref).max():.2e}" in same
    assert f"({worst[0]}, {worst[1]})" in same and f"({worst[0] + 1}, {worst[1] + 1})" in same
    assert same.split()[-1] == "ok"
    assert "info" in rows[("jax-lex", "jax-rb")]
    assert out.splitlines()[-1].strip().startswith("verdict: ok")


def test_reference_is_the_first_registered_variant_and_scales_rel(store, capsys):
    # "aaa-mine" sorts first, but the family's registered variant is the reference, and
    # the relative error is taken against the reference's max|g|, not the other's.
    g_ref = _random(2)
    g_mine = 10 * g_ref
    weanj.save_gradient(EX, "aaa-mine", g_mine, family="lex")
    weanj.save_gradient(EX, "jax-lex", g_ref)

    code, out, _ = _run(capsys, "--json")
    assert code == 1
    pair = _pair(_strict_json(out), "jax-lex", "aaa-mine")
    assert pair["max_rel"] == pytest.approx(np.abs(g_mine - g_ref).max() / np.abs(g_ref).max())
    assert pair["loss_rel"] is None  # no losses saved: not compared


def test_json_output_lists_gradients_pairs_and_verdict(store, capsys):
    g = _random(3)
    weanj.save_gradient(EX, "jax-lex", g, loss=1.5)
    weanj.save_gradient(EX, "mine-lex", g, loss=1.5 + 1e-9, family="lex")

    code, out, _ = _run(capsys, "--json")
    report = _strict_json(out)
    assert code == 1 and report["ok"] is False
    assert report["example"] == EX and report["params"] == {"K": weanj.load_inputs(EX)["K"]}
    assert report["inputs_sha256"] == weanj.load_inputs(EX)["sha256"]
    assert [(e["label"], e["family"]) for e in report["gradients"]] == [
        ("jax-lex", "lex"),
        ("mine-lex", "lex"),
    ]
    pair = _pair(report, "jax-lex", "mine-lex")
    # Identical gradients, losses 1e-9 apart: the loss alone fails (1e-12·|L| allowed).
    assert pair["max_abs"] == 0.0 and pair["ulp"] == 0 and pair["worst"] is None
    assert pair["loss_abs"] == pytest.approx(1e-9, rel=1e-6)
    assert pair["loss_rel"] == pytest.approx(1e-9 / 1.5, rel=1e-6)
    assert pair["verdict"] == "FAIL"
    assert pair["tolerance"] == {"grad": 1e-11, "loss": 1e-12}
    assert len(report["failures"]) == 1 and "mine-lex" in report["failures"][0]


@pytest.mark.parametrize("what", ["inputs_sha256", "K", "shape"])
def test_refuses_gradients_of_other_inputs_and_names_them(store, capsys, what):
    weanj.save_gradient(EX, "jax-lex", _random(4))
    d = weanj.load_inputs(EX)
    if what == "inputs_sha256":
        weanj.save_gradient(EX, "jax-rb", _random(5), inputs_sha256="0" * 64)
        expected = ["jax-rb.h5", "inputs sha256 000000000000", f"`weanj run {EX} jax-rb`"]
    elif what == "K":
        weanj.save_gradient(EX, "jax-rb", _random(5), params={"K": d["K"] + 1})
        expected = ["jax-rb.h5", f"K={d['K'] + 1} vs K={d['K']}", f"`weanj run {EX} jax-rb`"]
    else:
        weanj.save_gradient(EX, "mine-rb", np.ones((4, 4)), family="rb", inputs_sha256=d["sha256"])
        expected = ["mine-rb.h5", "shape (4, 4)", "recompute it on the current inputs"]

    code, out, err = _run(capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "refusing to compare" in err and "jax-lex.h5" not in err
    for text in expected:
        assert text in err


def test_stale_recorded_reference_says_rerecord(store, capsys):
    weanj.save_gradient(EX, "jax-lex", _random(6))
    path = weanj.gradient_path(EX, "jax-lex", recorded=True)
    weanj.save_gradient(EX, "jax-lex", _random(6), inputs_sha256="f" * 64, path=path)
    code, _, err = _run(capsys)
    assert code == 2 and str(path) in err and "re-record it" in err


def test_nan_gradient_is_a_failure_even_alone_in_its_family(store, capsys):
    g = _random(7)
    bad = _random(8)
    bad[2, 9] = np.nan
    bad[5, 1] = np.inf
    weanj.save_gradient(EX, "jax-lex", g, loss=1.0)
    weanj.save_gradient(EX, "jax-rb", bad, loss=1.0, allow_nonfinite=True)

    code, out, _ = _run(capsys)
    assert code == 1
    line = next(line for line in out.splitlines() if "FAIL jax-rb" in line)
    assert "2 NaN/Inf value(s)" in line and "(2, 9)" in line and "(3, 10)" in line

    code, out, _ = _run(capsys, "--json")
    report = _strict_json(out)
    rb = next(e for e in report["gradients"] if e["label"] == "jax-rb")
    assert rb["nonfinite"] is True and rb["nonfinite_count"] == 2
    pair = _pair(report, "jax-lex", "jax-rb")
    assert pair["verdict"] == "NaN/Inf" and pair["max_abs"] is None
    assert pair["worst"] == [2, 9] and pair["ulp"] is None


def test_nan_loss_is_a_failure(store, capsys):
    weanj.save_gradient(EX, "jax-lex", _random(9), loss=float("nan"), allow_nonfinite=True)
    code, out, _ = _run(capsys)
    assert code == 1 and "FAIL jax-lex: the loss is nan" in out


def test_recorded_reference_takes_part(store, capsys):
    g = _random(10)
    off = g.copy()
    off[0, 63] *= 1 + 1e-8
    weanj.save_gradient(EX, "jax-lex", g)
    weanj.save_gradient(
        EX,
        "julia-lex",
        off,
        family="lex",
        backend="julia",
        path=weanj.gradient_path(EX, "julia-lex", recorded=True),
    )
    code, out, _ = _run(capsys, "--json")
    pair = _pair(_strict_json(out), "jax-lex", "recorded/julia-lex")
    assert code == 1 and pair["worst"] == [0, 63] and pair["worst_julia"] == [1, 64]


def test_single_gradient_and_empty_store(store, capsys):
    code, out, err = _run(capsys)
    assert code == 2 and out == "" and f"weanj check {EX}" in err
    weanj.save_gradient(EX, "jax-lex", _random(11))
    code, out, _ = _run(capsys)
    assert code == 0 and "only one gradient" in out


def test_plot_writes_heat_maps_of_failing_pairs_only(store, capsys):
    image = pytest.importorskip("matplotlib.image", reason="--plot needs matplotlib")
    g = _random(12)
    off = g.copy()
    off[7, 3] += 1e-3
    weanj.save_gradient(EX, "jax-lex", g)
    weanj.save_gradient(EX, "mine-lex", g * (1 + 1e-14), family="lex")  # agrees
    weanj.save_gradient(EX, "off-lex", off, family="lex")  # fails
    code, _, _ = _run(capsys, "--plot")
    folder = store / "results" / EX / "diff"
    assert code == 1
    assert sorted(p.name for p in folder.glob("*.png")) == [
        "jax-lex-vs-off-lex.png",
        "mine-lex-vs-off-lex.png",
    ]
    assert image.imread(folder / "jax-lex-vs-off-lex.png").ndim == 3


def test_plot_without_failures_maps_same_family_pairs(store, capsys):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    g = _random(13)
    weanj.save_gradient(EX, "jax-lex", g)
    weanj.save_gradient(EX, "mine-lex", g * (1 + 1e-14), family="lex")
    weanj.save_gradient(EX, "jax-rb", _random(14))
    code, _, _ = _run(capsys, "--plot")
    assert code == 0
    assert [p.name for p in (store / "results" / EX / "diff").glob("*.png")] == [
        "jax-lex-vs-mine-lex.png"
    ]


def test_plot_without_matplotlib_is_one_line(store, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if absent
    weanj.save_gradient(EX, "jax-lex", _random(15))
    code, out, err = _run(capsys, "--plot")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "pip install 'weanj[plot]'" in err


# --- stale means stale; a recorded file must be what it says (issue 17) -----------------


def test_all_gradients_stale_is_refused(store, capsys):
    old = "0" * 64  # as if computed on earlier shared inputs
    weanj.save_gradient(EX, "jax-lex", _random(20), inputs_sha256=old)
    weanj.save_gradient(EX, "jax-rb", _random(21), inputs_sha256=old)
    code, out, err = _run(capsys)
    assert code == 2 and out == ""
    line = assert_one_line_error(
        err, "refusing to compare every gradient", "jax-lex.h5", "jax-rb.h5"
    )
    assert f"`weanj run {EX} jax-lex`" in line and f"`weanj run {EX} jax-rb`" in line
    assert "inputs sha256 000000000000" in line


def test_all_gradients_at_another_K_is_refused(store, capsys):
    K = weanj.load_inputs(EX)["K"]
    weanj.save_gradient(EX, "jax-lex", _random(22), params={"K": K + 1})
    code, _, err = _run(capsys)
    assert code == 2
    assert_one_line_error(err, f"K={K + 1} vs K={K}", f"`weanj run {EX} jax-lex`")


def test_missing_shared_inputs_cannot_judge_staleness(store, capsys):
    weanj.save_gradient(EX, "jax-lex", _random(23))
    (store / "shared_inputs" / f"{EX}.h5").unlink()
    code, _, err = _run(capsys)
    assert code == 2
    assert_one_line_error(err, "does not exist", f"weanj inputs regenerate {EX}")


def test_recorded_reference_with_a_wrong_family_is_refused(store, capsys):
    import h5py

    g = _random(24)
    weanj.save_gradient(EX, "jax-lex", g)
    path = weanj.gradient_path(EX, "jax-rb", recorded=True)
    weanj.save_gradient(EX, "jax-rb", 5 * g, path=path)
    with h5py.File(path, "r+") as f:
        f.attrs["family"] = "lex"  # would turn a gross disagreement into "info"... or hide it
    code, out, err = _run(capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, str(path), "registered in family 'rb'", "re-record it")


def test_a_flipped_byte_in_a_stored_gradient_is_detected(store, capsys):
    import h5py

    weanj.save_gradient(EX, "jax-lex", _random(25))
    path = weanj.save_gradient(EX, "jax-wavefront", _random(25))
    with h5py.File(path, "r") as f:
        offset = f["gradient"].id.get_offset()
    data = bytearray(path.read_bytes())
    data[offset + 7] ^= 0x80  # the sign of the first element
    path.write_bytes(bytes(data))
    code, out, err = _run(capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, str(path), "do not match their recorded sha256")


def test_runs_apart_are_not_read(store, capsys):
    weanj.save_gradient(EX, "jax-lex", _random(26))
    runs = store / "results" / EX / "runs"
    weanj.save_gradient(EX, "jax-lex", _random(27), params={"K": 3}, path=runs / "jax-lex-K3.h5")
    code, out, _ = _run(capsys)
    assert code == 0 and "only one gradient" in out
