"""One store, three front ends, one answer.

`weanj check`, `weanj diff --json` and `pytest --weanj` render the one judge's verdicts
(docs/DESIGN.md, "The judge"): on the same project and store they must give every pair,
every file and every gradient check the same verdict. A throwaway user project, run as a
user runs it (subprocesses, the project found from the current folder), holds:

- `30-kinks`, with two families: `min` (`jax-branch` and `jax-minimum`, which differ
  only at the ties x == y and are declared with `weanj.differ_at_kinks`) and `square`
  (`jax-square`, and `jax-square-off`, whose gradient is 1% too large at x[2]);
- in its store, besides what `weanj check` writes: a user's own gradient file
  (`gradients/mine-square.h5`, numpy's exact gradient), a recorded reference
  (`recorded/jax-minimum.h5`) and a stale recorded file (`recorded/jax-branch-old.h5`,
  computed on other inputs).

Julia is not needed: the declared kink pair of the built-in 03-advection has a Julia
member, so this example declares one between two JAX variants.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

import weanj
from weanj import _cases, _registry

from .planting import plant
from .projects import pytest_weanj_in, user_env, weanj_in, write_project

EX = "30-kinks"

MODULE = textwrap.dedent(
    """
    import jax.numpy as jnp
    import weanj
    from toy_kernels import away_from_ties, min_by_branches, min_by_minimum, tied_xy


    ex = weanj.register_example(weanj.Example(
        name="30-kinks",
        arrays=(weanj.Array("x", shape=("n",)), weanj.Array("y", shape=("n",))),
        wrt="x",
        generate=tied_xy,
        fd=weanj.FDPolicy(step=1e-6, mask=away_from_ties, why="ties x == y"),
    ))
    weanj.jax_variant(ex, "jax-branch", family="min", loss=min_by_branches)
    weanj.jax_variant(ex, "jax-minimum", family="min", loss=min_by_minimum)
    weanj.differ_at_kinks(ex, "jax-branch", "jax-minimum", why="min at a tie")


    @weanj.jax_variant(ex, "jax-square", family="square")
    def square(x, y):
        return jnp.sum((x - y) ** 2)


    def off_by_one_percent(x, y):
        return (2 * (x - y)).at[2].multiply(1.01)


    weanj.jax_variant(ex, "jax-square-off", family="square", grad=off_by_one_percent)(square)
    """
)

# Observes `pytest --weanj` (it decides nothing): each item's verdict and reason as the
# judge gave them, since a pass does not say whether it was `ok` or `kinks`.
OBSERVER = textwrap.dedent(
    """
    import json, os

    VERDICTS = {}


    def pytest_runtest_teardown(item):
        j = getattr(item, "judgement", None)
        if j is not None:
            VERDICTS[item.nodeid.removeprefix("weanj::")] = [str(j.verdict), j.reason]


    def pytest_sessionfinish(session):
        with open(os.environ["VERDICTS_FILE"], "w") as f:
            json.dump(VERDICTS, f)
    """
)

ROW = re.compile(
    r"^  (\S+)\s+(\S+)\s+(\S+)\s.*\s(ok|FAIL|info|kinks|NaN/Inf|timeout)(?:  \(.*\))?$"
)
FILE_LINE = re.compile(r"^  file (\S+): (\S+): (.*)$")
ITEM = re.compile(r"^weanj::(\S+) (PASSED|FAILED|SKIPPED)", re.MULTILINE)
PYTEST_OUTCOME = {"ok": "PASSED", "kinks": "PASSED", "FAIL": "FAILED", "stale": "SKIPPED"}


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """The project, its store, and what each front end says of it."""
    root = tmp_path_factory.mktemp("one-answer")
    write_project(root, {"kinky.py": MODULE, "conftest.py": OBSERVER}, regenerate=False)
    _fill_store(root)  # the inputs too

    check = weanj_in(root, "check", timeout=600)
    diff = weanj_in(root, "diff", EX, "--json", timeout=600)
    verdicts_file = tmp_path_factory.mktemp("observer") / "verdicts.json"
    env = user_env(VERDICTS_FILE=str(verdicts_file))
    tests = pytest_weanj_in(root, "-v", "-rs", env=env)
    return {
        "root": root,
        "check": check,
        "diff": diff,
        "pytest": tests,
        "observed": json.loads(verdicts_file.read_text()),
    }


def _fill_store(root: Path) -> None:
    """The inputs and the files weanj check does not write, made in this process with
    the project's module imported (and withdrawn afterwards)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        mp.syspath_prepend(str(root))
        try:
            __import__("kinky")
            weanj.write_inputs(EX)
            d = weanj.load_inputs(EX)
            minimum = weanj.evaluate(EX, "jax-minimum")
            path = weanj.gradient_path(EX, "jax-minimum", recorded=True)
            weanj.save_gradient(EX, "jax-minimum", minimum.gradient, loss=minimum.loss, path=path)
            loss = float(np.sum((d["x"] - d["y"]) ** 2))
            g = 2 * (d["x"] - d["y"])  # the exact gradient, by hand
            weanj.save_gradient(EX, "mine-square", g, loss=loss, family="square")
            old = root / "results" / EX / "recorded" / "jax-branch-old.h5"
            plant(EX, "jax-branch", np.zeros(12), path=old, inputs_sha256="ab" * 32)
        finally:
            _registry.unregister_example(EX)
            _cases.forget_evaluations()
            sys.modules.pop("kinky", None)


def _inputs(root: Path) -> dict[str, np.ndarray]:
    with h5py.File(root / "shared_inputs" / f"{EX}.h5") as f:
        return {k: f[k][()] for k in ("x", "y")}


# --- what each front end says ------------------------------------------------------------


def _check_pairs(out: str) -> dict[tuple[str, str], str]:
    table = out.split("  pairs (")[1].split("  where pairs differ")[0]
    rows = [ROW.match(line) for line in table.splitlines()[2:]]
    assert all(rows), table
    return {(m[1], m[2]): m[4] for m in rows}


def _check_files(out: str) -> tuple[dict[str, tuple[str, str]], int]:
    listed = {m[1]: (m[2], m[3]) for m in map(FILE_LINE.match, out.splitlines()) if m}
    fine = re.search(r"^  (\d+) file\(s\) of the store and recorded/ read", out, re.MULTILINE)
    return listed, int(fine[1]) if fine else 0


def _check_variant(out: str, label: str) -> list[str]:
    table = out.split("  pairs (")[0].splitlines()
    (row,) = [line for line in table if line.split()[:1] == [label]]
    return row.split()


def _pytest_items(stdout: str) -> dict[str, str]:
    return dict(ITEM.findall(stdout))


def test_every_front_end_exits_1_for_the_same_failures(answers):
    check, diff, tests = answers["check"], answers["diff"], answers["pytest"]
    assert check.returncode == 1, check.stdout + check.stderr
    assert diff.returncode == 1, diff.stderr
    assert tests.returncode == 1, tests.stdout + tests.stderr
    failed = sorted(i for i, outcome in _pytest_items(tests.stdout).items() if outcome == "FAILED")
    assert failed == [
        f"{EX}::square::jax-square-off::jvp",
        f"{EX}::square::jax-square-off::taylor",
        f"{EX}::square::jax-square-off~mine-square",
        f"{EX}::square::jax-square~jax-square-off",
        f"{EX}::square::jax-square~jax-square-off@float32",
    ]
    assert f"  {EX}: FAIL ({len(failed)} failure(s))" in check.stdout.splitlines()
    report = json.loads(diff.stdout)
    # diff runs no gradient checks: the same failures, less the two checks.
    assert sorted(report["failures"]) == sorted(
        s for s in report["failures"] if s.split(": ")[0] in failed
    )
    assert len(report["failures"]) == len(failed) - 2 and report["verdict"] == "FAIL"


def test_every_pair_gets_one_verdict(answers):
    check_pairs = _check_pairs(answers["check"].stdout)
    report = json.loads(answers["diff"].stdout)
    diff_pairs = {(p["reference"], p["other"]): p["verdict"] for p in report["pairs"]}
    items = _pytest_items(answers["pytest"].stdout)
    observed = answers["observed"]
    pytest_pairs = {}
    for case, outcome in items.items():
        subjects = case.split("::")[-1]
        if "~" in subjects and case.split("::")[1] != "file":
            a, b = subjects.split("~")
            pytest_pairs[(a, b)] = (outcome, observed[case][0])

    d = _inputs(answers["root"])
    g = 2 * (d["x"] - d["y"])
    # The premise of the float32 verdict below: 1% of g[2] is beyond 1e-4·max|g|.
    assert 0.01 * abs(g[2]) / np.abs(g).max() > 1e-4
    expected = {
        ("jax-branch", "jax-minimum"): "kinks",
        ("jax-branch", "recorded/jax-minimum"): "kinks",
        ("jax-minimum", "recorded/jax-minimum"): "ok",
        ("jax-square", "jax-square-off"): "FAIL",
        ("jax-square", "mine-square"): "ok",
        ("jax-square-off", "mine-square"): "FAIL",
        ("jax-branch", "jax-branch@float32"): "ok",
        ("jax-branch", "jax-minimum@float32"): "kinks",
        ("jax-square", "jax-square@float32"): "ok",
        ("jax-square", "jax-square-off@float32"): "FAIL",
        ("jax-branch", "jax-square"): "info",
    }
    assert diff_pairs == expected
    # pytest: one item per pair but the one across families (information, not a test).
    assert {k: v[1] for k, v in pytest_pairs.items()} == {
        k: v for k, v in expected.items() if v != "info"
    }
    assert all(outcome == PYTEST_OUTCOME[verdict] for outcome, verdict in pytest_pairs.values())
    # check's compact table: the pairs with each family's reference and whatever fails,
    # differs at kinks or compares families; each with the same verdict.
    assert check_pairs == {
        k: v for k, v in expected.items() if k != ("jax-minimum", "recorded/jax-minimum")
    }


def test_every_file_gets_one_verdict(answers):
    listed, fine = _check_files(answers["check"].stdout)
    report = json.loads(answers["diff"].stdout)
    diff_files = {
        f["case"].split("::file::")[1]: (f["verdict"], f["reason"]) for f in report["files"]
    }
    items = _pytest_items(answers["pytest"].stdout)
    observed = answers["observed"]
    pytest_files = {
        case.split("::file::")[1]: (outcome, *observed[case])
        for case, outcome in items.items()
        if "::file::" in case
    }
    # check and pytest judge the files check did not write; diff every file of the store.
    assert set(pytest_files) == {"mine-square", "recorded/jax-branch-old", "recorded/jax-minimum"}
    produced = {
        f"{v}{dtype}"
        for v in ("jax-branch", "jax-minimum", "jax-square", "jax-square-off")
        for dtype in ("", "@float32")
    }
    assert set(diff_files) == set(pytest_files) | produced
    assert all(diff_files[label][0] == "ok" for label in produced)
    stale = "recorded/jax-branch-old"
    for label, (outcome, verdict, reason) in pytest_files.items():
        assert diff_files[label] == (verdict, reason)
        assert outcome == PYTEST_OUTCOME[verdict]
        if verdict == "ok":
            assert label not in listed
        else:
            assert listed[label] == (verdict, reason)
    assert fine == sum(v[1] == "ok" for v in pytest_files.values()) == 2
    assert pytest_files[stale][1] == "stale"
    reason = pytest_files[stale][2]
    assert "inputs sha256 ababababab" in reason and "re-record it" in reason
    assert re.search(
        rf"^SKIPPED \[1\] \S+: stale: {re.escape(reason)}$", answers["pytest"].stdout, re.M
    )


def test_every_gradient_check_gets_one_verdict(answers):
    items = _pytest_items(answers["pytest"].stdout)
    observed = answers["observed"]
    for family, variant in [
        ("min", "jax-branch"),
        ("min", "jax-minimum"),
        ("square", "jax-square"),
        ("square", "jax-square-off"),
    ]:
        cells = _check_variant(answers["check"].stdout, variant)
        for kind, cell in (("taylor", cells[3]), ("jvp", cells[5])):
            case = f"{EX}::{family}::{variant}::{kind}"
            assert observed[case][0] == cell, (case, observed[case], cells)
            assert items[case] == PYTEST_OUTCOME[cell]
            assert cell == ("FAIL" if variant == "jax-square-off" else "ok")
    # Both name the masked entries and the failing array the same way.
    out = answers["check"].stdout
    assert "kink mask: 4 of 12 entries left out (ties x == y)" in out
    taylor = observed[f"{EX}::square::jax-square-off::taylor"][1]
    assert f"{EX}::square::jax-square-off::taylor: FAIL: " in out and taylor in out
