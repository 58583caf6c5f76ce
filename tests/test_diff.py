"""`weanj diff`: the store judged through the case table, in text and JSON, and pictures.

Every same-family pair of float64 store files is judged, each float32 file against its
family's float64 reference, different families for information; every file gets its own
verdict (ok, stale with the command that recomputes it, NaN/Inf, FAIL when unreadable,
mislabelled or of the wrong shape). A stale file is reported and left out of the pairs;
it does not stop the example. Most gradients are small synthetic arrays saved with
`save_gradient(..., family=...)`; the planted-disagreement test uses one real `jax-lex`
gradient, computed once per module.
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
from .planting import plant

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


def _random(seed: int, scale: float = 1.0, dtype=np.float64) -> np.ndarray:
    return (scale * np.random.default_rng(seed).standard_normal(_shape())).astype(dtype)


def _run(capsys, *argv):
    code = main(["diff", EX, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys) -> tuple[int, dict]:
    code, out, _ = _run(capsys, "--json")
    return code, _strict_json(out)


def _pair(report: dict, reference: str, other: str) -> dict:
    found = [p for p in report["pairs"] if (p["reference"], p["other"]) == (reference, other)]
    assert len(found) == 1, report["pairs"]
    return found[0]


def _files(report: dict) -> dict[str, dict]:
    return {f["case"].split("::file::")[1]: f for f in report["files"]}


def _row(out: str, reference: str, other: str) -> str:
    (row,) = [line for line in out.splitlines() if line.split()[:2] == [reference, other]]
    return row


def test_planted_disagreement_is_named_in_both_conventions(store, jax_lex, capsys):
    g = jax_lex.gradient
    planted = g.copy()
    planted[3, 5] += 1e-6 * np.max(np.abs(g))
    weanj.save_gradient(EX, "jax-lex", g, loss=jax_lex.loss)
    weanj.save_gradient(EX, "jax-lex-planted", planted, loss=jax_lex.loss, family="lex")

    code, out, err = _run(capsys)
    assert code == 1, out + err
    row = _row(out, "jax-lex", "jax-lex-planted")
    assert row.split()[-1] == "FAIL" and "(3, 5)" in row and "(4, 6)" in row
    assert "1 element(s) in numpy slice [3:4, 5:6] / Julia range [4:4, 6:6]" in out
    assert f"  {EX}: FAIL (1 failure(s))" in out.splitlines()

    code, report = _json(capsys)
    assert code == 1 and report["verdict"] == "FAIL" and report["ok"] is False
    pair = _pair(report, "jax-lex", "jax-lex-planted")
    assert pair["case"] == f"{EX}::lex::jax-lex~jax-lex-planted"
    assert pair["verdict"] == "FAIL" and pair["same_family"] and pair["array"] == "theta"
    assert pair["worst"] == [3, 5] and pair["worst_julia"] == [4, 6]
    assert pair["max_abs"] == abs(planted[3, 5] - g[3, 5])
    assert pair["max_rel"] == pytest.approx(1e-6, rel=1e-9)
    assert pair["ulp"] == _ulp(g[3, 5], planted[3, 5])
    assert pair["loss_abs"] == 0.0
    assert pair["differing"] == 1 and pair["differing_at"] == [[3, 5]]
    (region,) = pair["regions"]
    assert region["count"] == 1
    assert region["numpy"] == {"lo": [3, 5], "hi": [3, 5], "worst": [3, 5]}
    assert region["julia"] == {"lo": [4, 6], "hi": [4, 6], "worst": [4, 6]}
    assert report["failures"] == [pair["summary"]]


def test_failing_entries_are_grouped_into_connected_regions(store, capsys):
    g = _random(30)
    off = g.copy()
    scale = np.abs(g).max()
    off[10:12, 20:23] += 1e-7 * scale  # a 2×3 block
    off[12, 23] += 1e-5 * scale  # touches the block's corner: the same region, its worst
    off[40, 7] += 1e-8 * scale  # apart from it
    weanj.save_gradient(EX, "jax-lex", g)
    weanj.save_gradient(EX, "off-lex", off, family="lex")
    code, report = _json(capsys)
    pair = _pair(report, "jax-lex", "off-lex")
    assert code == 1 and pair["differing"] == 8 and pair["region_count"] == 2
    block, single = pair["regions"]  # largest first
    assert block["count"] == 7 and block["numpy"] == {
        "lo": [10, 20],
        "hi": [12, 23],
        "worst": [12, 23],
    }
    assert block["julia"] == {"lo": [11, 21], "hi": [13, 24], "worst": [13, 24]}
    assert block["worst_rel"] == pytest.approx(1e-5, rel=1e-6)
    assert single["count"] == 1 and single["numpy"]["lo"] == single["numpy"]["hi"] == [40, 7]
    _, out, _ = _run(capsys)
    assert (
        "7 element(s) in numpy slice [10:13, 20:24] / Julia range [11:13, 21:24], worst 1.00e-05"
        in out
    )
    assert "1 element(s) in numpy slice [40:41, 7:8] / Julia range [41:41, 8:8]" in out


def test_pair_table_same_family_agrees_other_family_is_info(store, capsys):
    g_ref = _random(0)
    g_close = g_ref * (1 + 1e-13)  # within 1e-11·max|g_ref|
    g_rb = _random(1, scale=3.0)
    weanj.save_gradient(EX, "jax-lex", g_ref, loss=2.0)
    weanj.save_gradient(EX, "mine-lex", g_close, loss=2.0 * (1 + 1e-14), family="lex")
    weanj.save_gradient(EX, "jax-rb", g_rb, loss=3.0)

    code, out, _ = _run(capsys)
    assert code == 0, out
    same = _row(out, "jax-lex", "mine-lex")
    delta = np.abs(g_close - g_ref)
    worst = np.unravel_index(np.argmax(delta), delta.shape)
    assert f"{delta.max():.2e}" in same
    assert f"{delta.max() / np.abs(g_ref).max():.2e}" in same
    assert f"({worst[0]}, {worst[1]})" in same and f"({worst[0] + 1}, {worst[1] + 1})" in same
    assert same.split()[-1] == "ok"
    other = _row(out, "jax-lex", "jax-rb")
    assert "info  (lex vs rb)" in other
    # jax-rb is the one file of its family in the store: compared with nothing, said so
    alone = "family rb has one member here, jax-rb: nothing to compare it with"
    assert f"  {EX}: ok — {alone}" in out.splitlines()

    code, report = _json(capsys)
    info = _pair(report, "jax-lex", "jax-rb")
    assert code == 0 and info["verdict"] == "info" and info["same_family"] is False
    assert info["case"] == f"{EX}::info::jax-lex~jax-rb" and info["family"] == "lex vs rb"
    assert info["max_rel"] == pytest.approx(np.abs(g_rb - g_ref).max() / np.abs(g_ref).max())
    assert info["failed"] is False


def test_reference_is_the_first_registered_variant_and_scales_rel(store, capsys):
    # "aaa-mine" sorts first, but the family's registered variant is the reference, and
    # the relative error is taken against the reference's max|g|, not the other's.
    g_ref = _random(2)
    g_mine = 10 * g_ref
    weanj.save_gradient(EX, "aaa-mine", g_mine, family="lex")
    weanj.save_gradient(EX, "jax-lex", g_ref)

    code, report = _json(capsys)
    assert code == 1
    pair = _pair(report, "jax-lex", "aaa-mine")
    assert pair["max_rel"] == pytest.approx(np.abs(g_mine - g_ref).max() / np.abs(g_ref).max())
    assert pair["loss_rel"] is None  # no losses saved: not compared


def test_json_output_lists_gradients_pairs_files_and_verdict(store, capsys):
    g = _random(3)
    weanj.save_gradient(EX, "jax-lex", g, loss=1.5)
    weanj.save_gradient(EX, "mine-lex", g, loss=1.5 + 1e-9, family="lex")

    code, report = _json(capsys)
    d = weanj.load_inputs(EX)
    assert code == 1 and report["ok"] is False and report["verdict"] == "FAIL"
    assert report["example"] == EX and report["params"] == {"K": d["K"]}
    assert report["inputs_sha256"] == d["sha256"]
    assert [(e["label"], e["family"], e["dtype"]) for e in report["gradients"]] == [
        ("jax-lex", "lex", "float64"),
        ("mine-lex", "lex", "float64"),
    ]
    pair = _pair(report, "jax-lex", "mine-lex")
    # Identical gradients, losses 1e-9 apart: the loss alone fails (1e-12·|L| allowed).
    assert pair["max_abs"] == 0.0 and pair["ulp"] == 0 and pair["worst"] is None
    assert pair["loss_abs"] == pytest.approx(1e-9, rel=1e-6)
    assert pair["loss_rel"] == pytest.approx(1e-9 / 1.5, rel=1e-6)
    assert pair["verdict"] == "FAIL"
    assert pair["tolerance"] == {"grad": 1e-11, "loss": 1e-12}
    assert len(report["failures"]) == 1 and "mine-lex" in report["failures"][0]
    # diff runs nothing: no gradient checks; every file has its own verdict.
    assert report["checks"] == []
    assert {label: f["verdict"] for label, f in _files(report).items()} == {
        "jax-lex": "ok",
        "mine-lex": "ok",
    }


def test_float32_files_are_judged_against_their_own_float64_files(store, capsys):
    g = _random(31)
    close = (g * (1 + 3e-5)).astype(np.float32)  # within 1e-4·max|g_ref|
    far = g.astype(np.float32)
    far[8, 9] += 1e-3 * np.abs(g).max()
    weanj.save_gradient(EX, "jax-lex", g, loss=1.0)
    weanj.save_gradient(EX, "jax-wavefront", g, loss=1.0)
    weanj.save_gradient(EX, "jax-wavefront", close, loss=1.0 + 1e-6)
    weanj.save_gradient(EX, "jax-lex", far, loss=1.0)
    float32 = store / "results" / EX / "gradients" / "float32"
    assert sorted(p.name for p in float32.iterdir()) == ["jax-lex.h5", "jax-wavefront.h5"]

    code, report = _json(capsys)
    assert code == 1
    # Each float32 file against its own variant's float64 file only (precision alone):
    # not against the other float64 member, nor against each other.
    assert [(p["reference"], p["other"]) for p in report["pairs"] if p["dtype"] == "float32"] == [
        ("jax-lex", "jax-lex@float32"),
        ("jax-wavefront", "jax-wavefront@float32"),
    ]
    wrong = _pair(report, "jax-lex", "jax-lex@float32")
    assert wrong["case"] == f"{EX}::lex::jax-lex~jax-lex@float32"
    assert wrong["verdict"] == "FAIL" and wrong["tolerance"] == {"grad": 1e-4, "loss": 1e-5}
    assert wrong["worst"] == [8, 9] and wrong["differing"] == 1
    assert wrong["max_rel"] == pytest.approx(1e-3, rel=1e-3)
    fine = _pair(report, "jax-wavefront", "jax-wavefront@float32")
    assert fine["verdict"] == "ok" and fine["max_rel"] == pytest.approx(3e-5, rel=1e-2)
    assert fine["loss_rel"] == pytest.approx(1e-6, rel=1e-3)
    assert _pair(report, "jax-lex", "jax-wavefront")["max_abs"] == 0.0
    assert {"jax-lex@float32", "jax-wavefront@float32"} <= set(_files(report))


@pytest.mark.parametrize("what", ["inputs_sha256", "K", "float32"])
def test_a_stale_file_is_reported_with_its_command_and_left_out(store, capsys, what):
    d = weanj.load_inputs(EX)
    weanj.save_gradient(EX, "jax-lex", _random(4))
    weanj.save_gradient(EX, "mine-lex", _random(4), family="lex")
    folder = store / "results" / EX / "gradients"
    if what == "inputs_sha256":
        plant(EX, "jax-rb", _random(5), path=folder / "jax-rb.h5", inputs_sha256="0" * 64)
        label = "jax-rb"
        expected = ["inputs sha256 000000000000", f"`weanj run {EX} jax-rb`"]
    elif what == "K":
        plant(EX, "jax-rb", _random(5), path=folder / "jax-rb.h5", params={"K": d["K"] + 1})
        label = "jax-rb"
        expected = [f"K={d['K'] + 1} vs K={d['K']}", f"`weanj run {EX} jax-rb`"]
    else:
        path = folder / "float32" / "jax-wavefront.h5"
        plant(EX, "jax-wavefront", _random(5, dtype=np.float32), path=path, params={"K": 3})
        label = "jax-wavefront@float32"
        expected = [f"K=3 vs K={d['K']}", f"`weanj run {EX} jax-wavefront --dtype float32`"]

    code, out, err = _run(capsys)
    assert code == 0, out + err  # stale is not a failure: reported, never compared
    (line,) = [x for x in out.splitlines() if x.strip().startswith(f"file {label}:")]
    assert line.strip().startswith(f"file {label}: stale: ")
    for text in expected:
        assert text in line
    assert label not in {w for row in out.splitlines() for w in row.split()[:2]}
    assert _row(out, "jax-lex", "mine-lex").split()[-1] == "ok"  # the others still compared

    code, report = _json(capsys)
    files = _files(report)
    assert files[label]["verdict"] == "stale" and files[label]["failed"] is False
    assert all(label not in p["subjects"] for p in report["pairs"])
    assert label not in [e["label"] for e in report["gradients"]]
    assert [(p["reference"], p["other"]) for p in report["pairs"]] == [("jax-lex", "mine-lex")]


def test_a_file_of_the_wrong_shape_fails_and_is_left_out(store, capsys):
    d = weanj.load_inputs(EX)
    weanj.save_gradient(EX, "jax-lex", _random(4))
    weanj.save_gradient(EX, "mine-rb", np.ones((4, 4)), family="rb", inputs_sha256=d["sha256"])
    code, out, _ = _run(capsys)
    assert code == 1
    assert "file mine-rb: FAIL: theta has shape (4, 4), but the inputs' theta has (64, 64)" in out
    code, report = _json(capsys)
    assert _files(report)["mine-rb"]["verdict"] == "FAIL" and report["pairs"] == []


def test_stale_recorded_reference_says_rerecord(store, capsys):
    weanj.save_gradient(EX, "jax-lex", _random(6))
    path = weanj.gradient_path(EX, "jax-lex", recorded=True)
    plant(EX, "jax-lex", _random(6), path=path, inputs_sha256="f" * 64)
    code, report = _json(capsys)
    assert code == 0 and report["verdict"] == "ok"
    file = _files(report)["recorded/jax-lex"]
    assert file["verdict"] == "stale" and file["failed"] is False
    assert "inputs sha256 ffffffffffff" in file["reason"] and "re-record it" in file["reason"]
    assert report["pairs"] == []
    code, out, _ = _run(capsys)
    assert code == 0
    (line,) = [x for x in out.splitlines() if "file recorded/jax-lex:" in x]
    assert line == f"  file recorded/jax-lex: stale: {file['reason']}"
    assert "recorded/jax-lex" not in out.replace(line, "")


def test_every_file_stale_is_reported_not_refused(store, capsys):
    old = "0" * 64  # as if computed on earlier shared inputs
    folder = store / "results" / EX / "gradients"
    plant(EX, "jax-lex", _random(20), path=folder / "jax-lex.h5", inputs_sha256=old)
    plant(EX, "jax-rb", _random(21), path=folder / "jax-rb.h5", inputs_sha256=old)
    code, out, err = _run(capsys)
    assert code == 0 and err == ""
    for variant in ("jax-lex", "jax-rb"):
        (line,) = [x for x in out.splitlines() if x.strip().startswith(f"file {variant}:")]
        assert "stale: inputs sha256 000000000000" in line
        assert f"`weanj run {EX} {variant}`" in line
    code, report = _json(capsys)
    assert report["pairs"] == [] and report["gradients"] == [] and report["verdict"] == "ok"
    assert [f["verdict"] for f in report["files"]] == ["stale", "stale"]


def test_nan_gradient_is_a_failure_even_alone_in_its_family(store, capsys):
    g = _random(7)
    bad = _random(8)
    bad[2, 9] = np.nan
    bad[5, 1] = np.inf
    weanj.save_gradient(EX, "jax-lex", g, loss=1.0)
    weanj.save_gradient(EX, "jax-rb", bad, loss=1.0, allow_nonfinite=True)

    code, out, _ = _run(capsys)
    assert code == 1
    (line,) = [x for x in out.splitlines() if x.strip().startswith("file jax-rb:")]
    assert "NaN/Inf: 2 NaN/Inf value(s)" in line and "(2, 9)" in line and "(3, 10)" in line

    code, report = _json(capsys)
    rb = next(e for e in report["gradients"] if e["label"] == "jax-rb")
    assert rb["nonfinite"] is True and rb["nonfinite_count"] == 2
    assert _files(report)["jax-rb"]["verdict"] == "NaN/Inf"
    pair = _pair(report, "jax-lex", "jax-rb")
    assert pair["verdict"] == "NaN/Inf" and pair["max_abs"] is None
    assert pair["worst"] == [2, 9] and pair["ulp"] is None


def test_nan_loss_is_a_failure(store, capsys):
    weanj.save_gradient(EX, "jax-lex", _random(9), loss=float("nan"), allow_nonfinite=True)
    code, report = _json(capsys)
    file = _files(report)["jax-lex"]
    assert code == 1 and report["verdict"] == "NaN/Inf" and file["failed"] is True
    assert (file["verdict"], file["reason"]) == ("NaN/Inf", "the loss is nan")
    code, out, _ = _run(capsys)
    assert code == 1 and "file jax-lex: NaN/Inf: the loss is nan" in out


def test_recorded_reference_takes_part(store, capsys):
    g = _random(10)
    off = g.copy()
    off[0, 63] *= 1 + 1e-8
    weanj.save_gradient(EX, "jax-lex", g)
    # A Julia variant's reference, as the Julia worker records it (`save_gradient` refuses
    # to write a file that says backend julia): planted in the store's format.
    plant(EX, "julia-lex", off, path=weanj.gradient_path(EX, "julia-lex", recorded=True))
    code, report = _json(capsys)
    pair = _pair(report, "jax-lex", "recorded/julia-lex")
    assert pair["case"] == f"{EX}::lex::jax-lex~recorded/julia-lex"
    assert code == 1 and pair["worst"] == [0, 63] and pair["worst_julia"] == [1, 64]
    assert _files(report)["recorded/julia-lex"]["verdict"] == "ok"


def test_single_gradient_and_empty_store(store, capsys):
    code, out, err = _run(capsys)
    assert code == 2 and out == "" and f"weanj check {EX}" in err
    weanj.save_gradient(EX, "jax-lex", _random(11))
    code, report = _json(capsys)
    assert code == 0 and report["verdict"] == "ok" and report["pairs"] == []
    assert [(f["case"], f["verdict"]) for f in report["files"]] == [(f"{EX}::file::jax-lex", "ok")]
    code, out, _ = _run(capsys)
    assert code == 0 and "pairs" not in out
    assert "1 file(s) of the store and recorded/ read, current and finite" in out


def test_plot_writes_heat_maps_of_failing_pairs_only(store, capsys):
    image = pytest.importorskip("matplotlib.image", reason="--plot needs matplotlib")
    g = _random(12)
    off = g.copy()
    off[7, 3] += 1e-3
    weanj.save_gradient(EX, "jax-lex", g)
    weanj.save_gradient(EX, "mine-lex", g * (1 + 1e-14), family="lex")  # agrees
    weanj.save_gradient(EX, "off-lex", off, family="lex")  # fails
    code, _, err = _run(capsys, "--plot")
    folder = store / "results" / EX / "diff"
    assert code == 1
    assert sorted(p.name for p in folder.glob("*.png")) == [
        "jax-lex-vs-off-lex-theta.png",
        "mine-lex-vs-off-lex-theta.png",
    ]
    assert image.imread(folder / "jax-lex-vs-off-lex-theta.png").ndim == 3
    assert f"wrote {folder / 'jax-lex-vs-off-lex-theta.png'}" in err
    # --json lists the pictures it drew.
    code, out, _ = _run(capsys, "--json", "--plot")
    assert sorted(_strict_json(out)["plots"]) == sorted(str(p) for p in folder.glob("*.png"))


def test_plot_without_failures_maps_same_family_pairs(store, capsys):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    g = _random(13)
    weanj.save_gradient(EX, "jax-lex", g)
    weanj.save_gradient(EX, "mine-lex", g * (1 + 1e-14), family="lex")
    weanj.save_gradient(EX, "same-lex", g, family="lex")  # bitwise equal: nothing to draw
    weanj.save_gradient(EX, "jax-rb", _random(14))  # another family: information only
    path = weanj.gradient_path(EX, "julia-lex", recorded=True)
    plant(EX, "julia-lex", g * (1 - 1e-14), path=path)  # as the Julia worker records it
    folder = store / "results" / EX / "diff"
    code, _, err = _run(capsys, "--plot")
    assert code == 0
    assert sorted(p.name for p in folder.glob("*.png")) == [
        "jax-lex-vs-mine-lex-theta.png",
        "mine-lex-vs-same-lex-theta.png",
    ]
    assert "plot jax-lex vs same-lex (theta): bitwise equal: no picture" in err
    # Pairs with a recorded reference only when asked; earlier pictures are removed first.
    code, _, _ = _run(capsys, "--plot", "--plot-recorded")
    names = sorted(p.name for p in folder.glob("*.png"))
    assert code == 0 and "jax-lex-vs-recorded_julia-lex-theta.png" in names
    assert len(names) == 5  # the two above and the three pairs with recorded/julia-lex


def test_plot_without_matplotlib_is_one_line(store, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if absent
    weanj.save_gradient(EX, "jax-lex", _random(15))
    code, out, err = _run(capsys, "--plot")
    assert code == 2 and out == ""
    assert_one_line_error(err, "pip install 'weanj[plot]'")


# --- a file must be what it says; unreadable files are verdicts, not refusals --------------


def test_missing_shared_inputs_cannot_judge_staleness(store, capsys):
    weanj.save_gradient(EX, "jax-lex", _random(23))
    (store / "shared_inputs" / f"{EX}.h5").unlink()
    code, out, err = _run(capsys)
    assert code == 2
    # Not judged (not FAIL): said on stdout where the verdict would be, and once on stderr.
    message = assert_one_line_error(err, "does not exist", f"weanj inputs regenerate {EX}")
    assert message.startswith(f"weanj: {EX} not judged: ")
    assert out.splitlines() == [f"== {EX}: not judged: {message.split(' not judged: ', 1)[1]}"]
    code, out, _ = _run(capsys, "--json")
    report = _strict_json(out)
    assert code == 2 and report["verdict"] == "not judged" and report["ok"] is False
    assert "does not exist" in report["error"] and report["pairs"] == report["files"] == []


def test_recorded_reference_with_a_wrong_family_fails(store, capsys):
    import h5py

    g = _random(24)
    weanj.save_gradient(EX, "jax-lex", g)
    weanj.save_gradient(EX, "mine-lex", g, family="lex")
    path = weanj.gradient_path(EX, "jax-rb", recorded=True)
    weanj.save_gradient(EX, "jax-rb", 5 * g, path=path)
    with h5py.File(path, "r+") as f:
        f.attrs["family"] = "lex"  # would turn a gross disagreement into "info"... or hide it
    code, report = _json(capsys)
    assert code == 1
    file = _files(report)["recorded/jax-rb"]
    assert file["verdict"] == "FAIL" and str(path) in file["reason"]
    assert "registered in family 'rb'" in file["reason"] and "re-record it" in file["reason"]
    assert report["failures"] == [file["summary"]]
    assert [(p["reference"], p["other"], p["verdict"]) for p in report["pairs"]] == [
        ("jax-lex", "mine-lex", "ok")  # the rest still judged; the bad file left out
    ]
    code, out, _ = _run(capsys)
    (line,) = [x for x in out.splitlines() if "file recorded/jax-rb:" in x]
    assert code == 1 and line == f"  file recorded/jax-rb: FAIL: {file['reason']}"


def test_a_file_holding_another_variant_is_mislabelled(store, capsys):
    g = _random(28)
    weanj.save_gradient(EX, "jax-lex", g)
    # jax-lex's gradient under jax-wavefront's store name: it must not pass for jax-wavefront.
    plant(EX, "jax-lex", 2 * g, path=weanj.gradient_path(EX, "jax-wavefront"))
    code, report = _json(capsys)
    file = _files(report)["jax-wavefront"]
    assert code == 1 and file["verdict"] == "FAIL"
    assert "holds a gradient of jax-lex, not of jax-wavefront" in file["reason"]
    assert report["pairs"] == []


def test_a_flipped_byte_in_a_stored_gradient_is_detected(store, capsys):
    import h5py

    weanj.save_gradient(EX, "jax-lex", _random(25))
    path = weanj.save_gradient(EX, "jax-wavefront", _random(25))
    with h5py.File(path, "r") as f:
        offset = f["gradient"].id.get_offset()
    data = bytearray(path.read_bytes())
    data[offset + 7] ^= 0x80  # the sign of the first element
    path.write_bytes(bytes(data))
    code, report = _json(capsys)
    file = _files(report)["jax-wavefront"]
    assert code == 1 and file["verdict"] == "FAIL"
    assert str(path) in file["reason"] and "do not match their recorded sha256" in file["reason"]
    assert _files(report)["jax-lex"]["verdict"] == "ok"
    assert [e["label"] for e in report["gradients"]] == ["jax-lex"]


def test_runs_apart_are_not_read(store, capsys):
    weanj.save_gradient(EX, "jax-lex", _random(26))
    runs = store / "results" / EX / "runs"
    weanj.save_gradient(EX, "jax-lex", _random(27), params={"K": 3}, path=runs / "jax-lex-K3.h5")
    assert (runs / "jax-lex-K3.h5").is_file()
    code, report = _json(capsys)
    assert code == 0 and [f["case"] for f in report["files"]] == [f"{EX}::file::jax-lex"]
    assert report["pairs"] == [] and [e["label"] for e in report["gradients"]] == ["jax-lex"]
