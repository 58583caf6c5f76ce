"""`weanj check`: runs variants, saves, fd-checks, diffs and judges.

To stay fast, each test restricts the check to one cheap variant (`jax-rb`) by patching
the registry lookups `weanj._check` uses; the full run is `weanj check` itself.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import weanj
import weanj._check as check_module
from weanj._cli import main

EX = "02-gauss-seidel"
ONLY = "jax-rb"


@pytest.fixture
def one_variant(project, monkeypatch):
    """A project whose check runs only `jax-rb`, with one pretend-unavailable variant."""
    for recorded in (project / "results").glob("*/recorded"):
        shutil.rmtree(recorded)
    monkeypatch.setattr(check_module, "variants", lambda name: [ONLY])
    monkeypatch.setattr(
        check_module,
        "unavailable_variants",
        lambda name: {"julia-rb": "needs a Julia installation"},
    )
    return project


def _check(capsys, *names):
    code = main(["check", *names])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_runs_saves_fd_checks_and_reports(one_variant, capsys):
    code, out, err = _check(capsys, EX)
    assert code == 0, out + err
    d = weanj.load_inputs(EX)
    stored = weanj.load_gradient(EX, ONLY)  # saved, fresh, with provenance
    v = weanj.variant(EX, ONLY)
    assert stored.loss == float(v.loss(d["theta"], d["uobs"], d["K"]))
    np.testing.assert_array_equal(
        stored.gradient, np.asarray(v.grad(d["theta"], d["uobs"], d["K"]))
    )
    row = next(line for line in out.splitlines() if line.split()[:1] == [ONLY])
    assert f"{stored.loss:.15e}" in row and row.split()[4] == "ok"
    assert float(row.split()[3]) <= weanj.example(EX).fd.threshold
    assert "skipped julia-rb: needs a Julia installation" in out
    assert out.splitlines()[-1].startswith("overall: ok")
    assert f"[1/1] {EX} {ONLY} ..." in err


def test_wrong_gradient_fails_the_fd_check(one_variant, capsys, monkeypatch):
    real = check_module.evaluate

    def doubled(*args, **kwargs):
        ev = real(*args, **kwargs)
        ev.gradients = {name: 2 * g for name, g in ev.gradients.items()}
        return ev

    monkeypatch.setattr(check_module, "evaluate", doubled)
    code, out, _ = _check(capsys, EX)
    assert code == 1
    row = next(line for line in out.splitlines() if line.split()[:1] == [ONLY])
    # The losses are quadratic, so central differences are exact: |D - 2D| / |2D| = 1/2.
    assert float(row.split()[3]) == pytest.approx(0.5, abs=1e-6) and row.split()[4] == "FAIL"
    assert out.splitlines()[-1].startswith("overall: FAIL")


def test_disagreeing_recorded_reference_fails_the_check(one_variant, capsys):
    d = weanj.load_inputs(EX)
    g = np.asarray(weanj.variant(EX, ONLY).grad(d["theta"], d["uobs"], d["K"]))
    off = g.copy()
    off[10, 20] += 1e-9 * np.abs(g).max()
    weanj.save_gradient(EX, ONLY, off, path=weanj.gradient_path(EX, ONLY, recorded=True))
    code, out, _ = _check(capsys, EX)
    assert code == 1
    line = next(line for line in out.splitlines() if line.strip().startswith("FAIL rb:"))
    assert "recorded/jax-rb" in line and "(10, 20)" in line and "(11, 21)" in line


def test_recorded_reference_on_other_inputs_is_skipped(one_variant, capsys):
    weanj.save_gradient(
        EX,
        ONLY,
        np.zeros(weanj.load_inputs(EX)["theta"].shape),
        inputs_sha256="e" * 64,
        path=weanj.gradient_path(EX, ONLY, recorded=True),
    )
    code, out, _ = _check(capsys, EX)
    assert code == 0
    assert "skipped recorded/jax-rb: recorded on other inputs (sha256 eeeeeeeeeeee" in out


def test_a_broken_variant_is_reported_and_the_others_still_run(one_variant, capsys, monkeypatch):
    monkeypatch.setattr(check_module, "variants", lambda name: ["jax-lex", ONLY])
    real = check_module.evaluate

    def broken(example_name, variant_name, **kwargs):
        if variant_name == "jax-lex":
            raise RuntimeError("lowering failed")
        return real(example_name, variant_name, **kwargs)

    monkeypatch.setattr(check_module, "evaluate", broken)
    code, out, _ = _check(capsys, EX)
    assert code == 1
    assert "jax-lex" in out and "ERROR RuntimeError: lowering failed" in out
    assert next(line for line in out.splitlines() if line.split()[:1] == [ONLY]).split()[4] == "ok"


def test_unknown_example_is_one_line_before_any_work(one_variant, capsys):
    code, out, err = _check(capsys, "03-nope")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "02-gauss-seidel" in err  # lists the known examples


def test_compact_table_shows_pairs_with_the_family_reference(one_variant, capsys):
    d = weanj.load_inputs(EX)
    g = np.asarray(weanj.variant(EX, ONLY).grad(d["theta"], d["uobs"], d["K"]))
    for stem in ("gpu-a", "gpu-b"):
        path = weanj.gradient_path(EX, stem, recorded=True)
        weanj.save_gradient(EX, stem, g, family="rb", path=path)
    code, out, _ = _check(capsys, EX)
    rows = [line.split()[:2] for line in out.splitlines() if " recorded/" in line]
    assert code == 0
    # Not the non-reference pair gpu-a vs gpu-b: `weanj diff` shows every pair.
    assert rows == [["jax-rb", "recorded/gpu-a"], ["jax-rb", "recorded/gpu-b"]]
