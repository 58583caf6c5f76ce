"""One case table, one judge: every front end gives the same verdict for the same case.

`weanj check`, `weanj diff --json`, `pytest --weanj`, `weanj bisect`, `weanj fuzz` and
`weanj report` render the one judge's verdicts on the one case table (issue 30,
acceptance 4): on the same project, store and inputs they give every pair, every file,
every gradient check and every run the same verdict, under the same case id. They are
compared as data: `Judgement.verdicts()` (check), the JSON (diff), the judgement each
pytest item carries (observed by a conftest of the project), the `PairOutcome`s of
`Bisected` and `Fuzzed`, and what the report renders (`Report.pages`: the judgement of
the check, read back from the check file). pytest runs as a user runs it (a subprocess in
the project folder); the other front ends are called in this process, the project loaded as its
registry loads it (`projects.loaded`), `weanj diff --json` through the command line's own
`main`.

One throwaway user project holds every example of this module (these three, and
`40-declared` and `45-one-run` below); `pytest --weanj` judges them all in one run, once
the front ends called in this process have written what they write, and each test reads
the items of its own examples:

- `30-kinks`: family `min` (`jax-branch`, `jax-minimum`: they differ only at the ties
  x == y, declared with `weanj.differ_at_kinks`) and family `square` (`jax-square`, and
  `jax-square-off`, whose gradient is 1% too large at x[2]); in its store besides what
  check writes: a user's own gradient file (`gradients/mine-square.h5`, numpy's exact
  gradient), a recorded reference (`recorded/jax-minimum.h5`) and a stale recorded file
  (`recorded/jax-branch-old.h5`, computed on other inputs);
- `31-cancel` (issue 31, acceptance 1 and 2): a k-means-style cost on points that are
  their own centroids, written as |a|² + |b|² − 2ab (`jax-expanded`, which cancels terms
  of order 1 down to ~1e-15) and as (a − b)² (`jax-squared`, exactly 0.0), so that their
  losses are 0.0 and ~2e-15 and their gradients all zeros; `jax-squared-off` plants a
  loss difference of 1e-9, `jax-grad-off` a gradient difference of 1e-9 where the
  reference gradient is all zeros;
- `32-steps` (issue 30, acceptance 3): 50 explicit diffusion steps (`T`, default 50), by
  a loop and by a scan, and `jax-steps-late`, wrong only from time step 31 on.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import Verdict, _registry, _run_names
from weanj._cli import main
from weanj._commands.bisect import bisect
from weanj._commands.fuzz import fuzz
from weanj._places import places
from weanj._report._lines import summary

from .planting import plant
from .projects import loaded, pytest_weanj_in, user_env, write_project

KINKS, CANCEL, STEPS = "30-kinks", "31-cancel", "32-steps"
EXAMPLES = (KINKS, CANCEL, STEPS)

KINKS_MODULE = textwrap.dedent(
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

CANCEL_MODULE = textwrap.dedent(
    """
    import jax.numpy as jnp
    import numpy as np
    import weanj


    def centred(seed):
        # Points of order 1, each its own centroid: the cost is 0, its gradient all zeros.
        points = np.random.default_rng(seed).standard_normal((16, 3))
        return {"points": points, "centroids": points.copy()}


    ex = weanj.register_example(weanj.Example(
        name="31-cancel",
        arrays=(weanj.Array("points", shape=("n", "d")),
                weanj.Array("centroids", shape=("n", "d"))),
        wrt="centroids",
        generate=centred,
    ))
    # float64 only: in float32 the expanded form cancels to ~1e-6, which the float32
    # policy (1e-5 of a reference loss of 0) cannot tell from a difference.
    ONLY = ("float64",)


    def expanded(points, centroids):  # |a|² + |b|² − 2ab, as k-means costs are often written
        return jnp.sum(jnp.sum(points**2, 1) + jnp.sum(centroids**2, 1)
                       - 2 * jnp.sum(points * centroids, 1))


    def squared(points, centroids):
        return jnp.sum((points - centroids) ** 2)


    weanj.jax_variant(ex, "jax-expanded", family="kmeans", loss=expanded, dtypes=ONLY)
    weanj.jax_variant(ex, "jax-squared", family="kmeans", loss=squared, dtypes=ONLY)


    @weanj.jax_variant(ex, "jax-squared-off", family="kmeans", dtypes=ONLY)
    def squared_off(points, centroids):  # a planted loss difference of 1e-9
        return squared(points, centroids) + 1e-9


    def nudged(points, centroids):  # a planted gradient difference of 1e-9 where g = 0
        return (2 * (centroids - points)).at[0, 0].add(1e-9)


    weanj.jax_variant(ex, "jax-grad-off", family="kmeans", loss=squared, grad=nudged, dtypes=ONLY)
    """
)

STEPS_MODULE = textwrap.dedent(
    """
    import jax
    import jax.numpy as jnp
    import numpy as np
    import weanj


    def generate(seed):
        rng = np.random.default_rng(seed)
        return {"u0": rng.standard_normal(16), "target": rng.standard_normal(16)}


    ex = weanj.register_example(weanj.Example(
        name="32-steps", arrays=("u0", "target"), wrt="u0",
        params=(weanj.Param("T", 50, minimum=1, maximum=100),), generate=generate,
    ))


    def diffusion(u, c=0.1):
        return u + c * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1))


    @weanj.jax_variant(ex, "jax-steps-loop", family="steps")
    def loop(u0, target, T):  # (a Python loop of 50 steps compiles for minutes on CPU)
        return jnp.sum((jax.lax.fori_loop(0, T, lambda t, u: diffusion(u), u0) - target) ** 2)


    @weanj.jax_variant(ex, "jax-steps-scan", family="steps")
    def scan(u0, target, T):
        u, _ = jax.lax.scan(lambda u, _: (diffusion(u), None), u0, None, length=T)
        return jnp.sum((u - target) ** 2)


    @weanj.jax_variant(ex, "jax-steps-late", family="steps")
    def late(u0, target, T):  # wrong from time step 31 on (t = 30, 0-based): c = 0.101
        step = lambda t, u: diffusion(u, jnp.where(t >= 30, 0.101, 0.1).astype(u.dtype))
        return jnp.sum((jax.lax.fori_loop(0, T, step, u0) - target) ** 2)
    """
)

# Observes `pytest --weanj` (it decides nothing): each item's verdict and reason as the
# judge gave them, since a pass does not say whether it was `ok` or `kinks`; the run that
# judged it; and the x64 configuration a run item carries.
OBSERVER = textwrap.dedent(
    """
    import json, os

    VERDICTS, RUNS, X64 = {}, set(), {}


    def pytest_runtest_teardown(item):
        from weanj._pytest_plugin import _RUN

        j = getattr(item, "judgement", None)
        if j is not None:
            case = item.nodeid.removeprefix("weanj::")
            VERDICTS[case] = [str(j.verdict), j.reason]
            run = item.config.stash[_RUN]
            RUNS.add(f"{type(run).__module__}.{type(run).__qualname__} {id(run)}")
            if "x64" in dict(item.user_properties):
                X64[case] = dict(item.user_properties)["x64"]


    def pytest_sessionfinish(session):
        with open(os.environ["VERDICTS_FILE"], "w") as f:
            json.dump({"verdicts": VERDICTS, "runs": sorted(RUNS), "x64": X64}, f)
    """
)

MODULES = ("fe_kinks", "fe_cancel", "fe_steps")
ITEM = re.compile(r"^weanj::(\S+) (PASSED|FAILED|SKIPPED)", re.MULTILINE)
PYTEST_OUTCOME = {
    "ok": "PASSED",
    "kinks": "PASSED",
    "FAIL": "FAILED",
    "error": "FAILED",
    "NaN/Inf": "FAILED",
    "stale": "SKIPPED",
    "skipped": "SKIPPED",
    "unavailable": "SKIPPED",
}


def _case(example: str, family: str, what: str) -> str:
    return f"{example}::{family}::{what}"


# The verdict of every pair, derived by hand (the premises are asserted below).
PAIRS = {
    _case(KINKS, "min", "jax-branch~jax-minimum"): "kinks",
    _case(KINKS, "min", "jax-branch~recorded/jax-minimum"): "kinks",
    _case(KINKS, "min", "jax-minimum~recorded/jax-minimum"): "ok",
    _case(KINKS, "square", "jax-square~jax-square-off"): "FAIL",
    _case(KINKS, "square", "jax-square~mine-square"): "ok",
    _case(KINKS, "square", "jax-square-off~mine-square"): "FAIL",
    # each float32 run against its own float64 run: precision alone, so the port 1% off
    # in float64 is its family pair's FAIL, once, and its float32 run is ok
    _case(KINKS, "min", "jax-branch~jax-branch@float32"): "ok",
    _case(KINKS, "min", "jax-minimum~jax-minimum@float32"): "ok",
    _case(KINKS, "square", "jax-square~jax-square@float32"): "ok",
    _case(KINKS, "square", "jax-square-off~jax-square-off@float32"): "ok",
    _case(KINKS, "info", "jax-branch~jax-square"): "info",
    _case(CANCEL, "kmeans", "jax-expanded~jax-squared"): "ok",
    _case(CANCEL, "kmeans", "jax-expanded~jax-squared-off"): "FAIL",
    _case(CANCEL, "kmeans", "jax-expanded~jax-grad-off"): "FAIL",
    _case(CANCEL, "kmeans", "jax-squared~jax-squared-off"): "FAIL",
    _case(CANCEL, "kmeans", "jax-squared~jax-grad-off"): "FAIL",
    _case(CANCEL, "kmeans", "jax-squared-off~jax-grad-off"): "FAIL",
    _case(STEPS, "steps", "jax-steps-loop~jax-steps-scan"): "ok",
    _case(STEPS, "steps", "jax-steps-loop~jax-steps-late"): "FAIL",
    _case(STEPS, "steps", "jax-steps-scan~jax-steps-late"): "FAIL",
    _case(STEPS, "steps", "jax-steps-loop~jax-steps-loop@float32"): "ok",
    _case(STEPS, "steps", "jax-steps-scan~jax-steps-scan@float32"): "ok",
    _case(STEPS, "steps", "jax-steps-late~jax-steps-late@float32"): "ok",
}
# The failing gradient checks: the gradient 1% off, and the one 1e-9 off where g = 0.
FAILING_CHECKS = {
    _case(KINKS, "square", f"jax-square-off::{kind}") for kind in ("taylor", "jvp")
} | {_case(CANCEL, "kmeans", f"jax-grad-off::{kind}") for kind in ("taylor", "jvp")}
# The pairs of registered float64 variants (what bisect and fuzz judge).
VARIANT_PAIRS = {
    case: verdict
    for case, verdict in PAIRS.items()
    if "recorded/" not in case
    and "mine-" not in case
    and "@" not in case
    and "::info::" not in case
}


@pytest.fixture(scope="module")
def fronts_here(project):
    """The store of 30-kinks, 31-cancel and 32-steps, and what each front end called in this
    process says of them."""
    root = project
    quiet = lambda line: None  # noqa: E731
    with loaded(root, *MODULES):
        for name in EXAMPLES:
            weanj.write_inputs(name)
        _fill_store(root)
        check = weanj.check(list(EXAMPLES), say=quiet)  # writes the store and check.json
        diff = {name: _cli_json("diff", name, "--json") for name in EXAMPLES}
        report = weanj.report(list(EXAMPLES), out=root / "report.md")
        bisected = {}
        for case in VARIANT_PAIRS:
            example, _, pair = case.split("::")
            a, b = pair.split("~")
            shared = places().inputs(example)
            cat = _registry.catalog(example)  # the names resolved as the command line does
            va, vb = _run_names.same_family_pair(cat, a, b, "bisect")
            bisected[case] = bisect(cat, va, vb, inputs=shared, say=quiet)
        fuzzed = {
            name: fuzz(_registry.catalog(name), max_examples=1, say=quiet) for name in EXAMPLES
        }
        premises = _premises()
    return {
        "root": root,
        "check": check,
        "diff": diff,
        "report": report,
        "bisect": bisected,
        "fuzz": fuzzed,
        "premises": premises,
    }


@pytest.fixture(scope="module")
def fronts(fronts_here, users_pytest):
    """The project, its store, and what each front end says of it (`pytest --weanj`: the
    items of these three examples, in the one run of the project)."""
    tests, observed = users_pytest
    mine = {c: v for c, v in observed["verdicts"].items() if _of(c, EXAMPLES)}
    return {**fronts_here, "pytest": tests, "observed": mine}


def _of(case: str, examples) -> bool:
    """Whether the case id is of one of the `examples`."""
    return case.split("::")[0] in examples


def _cli_json(*argv) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    data = json.loads(out.getvalue())
    data["exit_code"] = code
    return data


def _fill_store(root: Path) -> None:
    """The files `weanj check` does not write (the project loaded in this process)."""
    d = weanj.load_inputs(KINKS)
    minimum = weanj.evaluate(KINKS, "jax-minimum")
    path = weanj.gradient_path(KINKS, "jax-minimum", recorded=True)
    weanj.save_gradient(KINKS, "jax-minimum", minimum.gradient, loss=minimum.loss, path=path)
    loss = float(np.sum((d["x"] - d["y"]) ** 2))
    g = 2 * (d["x"] - d["y"])  # the exact gradient, by hand
    weanj.save_gradient(KINKS, "mine-square", g, loss=loss, family="square")
    old = root / "results" / KINKS / "recorded" / "jax-branch-old.h5"
    plant(KINKS, "jax-branch", np.zeros(12), path=old, inputs_sha256="ab" * 32)


def _premises() -> dict:
    """The numbers the hand-derived verdicts rest on, computed apart from the judge."""
    d = weanj.load_inputs(KINKS)
    out = {"kinks_g": 2 * (d["x"] - d["y"])}
    c = weanj.load_inputs(CANCEL)
    out["cancel"] = c
    s = weanj.load_inputs(STEPS)
    loop, late = (weanj.variant(STEPS, name) for name in ("jax-steps-loop", "jax-steps-late"))
    out["steps"] = {
        T: (float(loop.loss(s["u0"], s["target"], T)), float(late.loss(s["u0"], s["target"], T)))
        for T in (30, 31)
    }
    return out


# --- what each front end says ------------------------------------------------------------


def _check_table(fronts, name: str) -> dict[tuple[str, str], str]:
    """`{(ref, other): verdict}` of the rows of check's pair table of one example."""
    out = "\n".join(fronts["check"].lines())
    block = out.split(f"== {name} ")[1].split("\n== ")[0]
    table = block.split("  pairs (")[1].split("  where pairs differ")[0].splitlines()[2:]
    rows = {}
    for row in table:
        words = row.split()
        rows[(words[0], words[1])] = words[-1] if not row.endswith(")") else "info"
    return rows


def _pytest_items(stdout: str) -> dict[str, str]:
    """`{case: outcome}` of the items of 30-kinks, 31-cancel and 32-steps (the run judges
    the project's other examples too)."""
    return {case: outcome for case, outcome in ITEM.findall(stdout) if _of(case, EXAMPLES)}


def _check(fronts) -> dict[str, str]:
    return fronts["check"].verdicts()


def _diff(fronts) -> dict[str, str]:
    """Every case `weanj diff --json` lists (pairs, files; diff runs nothing)."""
    out = {}
    for data in fronts["diff"].values():
        for j in data["pairs"] + data["files"] + data["skipped"]:
            out[j["case"]] = j["verdict"]
    return out


def _pytest(fronts) -> dict[str, tuple[str, str | None]]:
    """`{case: (outcome, the judgement's verdict or None where skipped at collection)}`."""
    observed = fronts["observed"]
    return {
        case: (outcome, observed.get(case, [None])[0])
        for case, outcome in _pytest_items(fronts["pytest"].stdout).items()
    }


def _report(fronts) -> dict[str, str]:
    """What the report rendered per case: the last check's judgement, read back from its
    check file (shown while current)."""
    out = {}
    for page in fronts["report"].pages:
        assert page.ej is not None, page.state
        out.update({j.case: str(j.verdict) for j in page.ej.judgements})
    return out


def _bisect(fronts) -> dict[str, str]:
    return {j.case: str(j.verdict) for b in fronts["bisect"].values() for j in b.outcome.judgements}


def _fuzz_failing(fronts) -> dict[str, str]:
    return {
        j.case: str(j.verdict)
        for fz in fronts["fuzz"].values()
        for finding in fz.findings
        for outcome in finding.draw.failing.values()
        for j in outcome.judgements
    }


# --- the tests ------------------------------------------------------------------------------


def test_every_pair_gets_one_verdict_in_every_front_end(fronts):
    premises = fronts["premises"]
    g = premises["kinks_g"]
    # The premise of 30-kinks' float32 verdict: 1% of g[2] is beyond 1e-4·max|g|.
    assert 0.01 * abs(g[2]) / np.abs(g).max() > 1e-4
    # The premise of 32-steps: the late variant agrees up to step 30, not from step 31 on.
    (loop30, late30), (loop31, late31) = premises["steps"][30], premises["steps"][31]
    assert abs(late30 - loop30) <= 1e-14 * abs(loop30) and abs(late31 - loop31) > 1e-6 * abs(loop31)

    check = {c: v for c, v in _check(fronts).items() if c in PAIRS}
    assert check == PAIRS
    # check's compact table: the pairs with each family's reference and whatever fails,
    # differs at kinks or compares families; each with the same verdict.
    assert _check_table(fronts, KINKS) == {
        tuple(c.split("::")[2].split("~")): v
        for c, v in PAIRS.items()
        if c.startswith(KINKS) and c != _case(KINKS, "min", "jax-minimum~recorded/jax-minimum")
    }
    diff = _diff(fronts)
    assert {c: diff[c] for c in PAIRS} == PAIRS
    assert {c: v for c, v in _report(fronts).items() if c in PAIRS} == PAIRS
    # pytest: one item per pair but the ones across families (information, not a test).
    tests = _pytest(fronts)
    assert {c: tests[c][1] for c in tests if c in PAIRS} == {
        c: v for c, v in PAIRS.items() if v != "info"
    }
    assert all(tests[c][0] == PYTEST_OUTCOME[v] for c, v in PAIRS.items() if v != "info")
    # bisect on the shared inputs: every pair of registered variants, the same verdicts.
    assert _bisect(fronts) == VARIANT_PAIRS
    assert all(
        b.exit_code == (1 if VARIANT_PAIRS[c] == "FAIL" else 0) for c, b in fronts["bisect"].items()
    )
    # fuzz's first draw is the shared inputs: every failing pair reported there, at once,
    # with check's verdict and case id; every other pair it searched agreed there.
    failing = {c: v for c, v in VARIANT_PAIRS.items() if v == "FAIL"}
    assert _fuzz_failing(fronts) == failing
    for name, fz in fronts["fuzz"].items():
        assert fz.draws == 1 and all(f.how == "shared inputs" for f in fz.findings)
        searched = {_case(name, a.family, f"{a.label}~{b.label}") for a, b in fz.pairs}
        assert searched == {c for c in VARIANT_PAIRS if c.startswith(f"{name}::")}
        agreed = {
            _case(name, a.family, f"{a.label}~{b.label}")
            for a, b in fz.pairs
            if (a.label, b.label) not in fz.failed_pairs
        }
        assert {c: VARIANT_PAIRS[c] for c in agreed} == {
            c: v for c, v in VARIANT_PAIRS.items() if c.startswith(f"{name}::") and v != "FAIL"
        }


def test_every_front_end_fails_the_same_cases(fronts):
    expected = {c for c, v in PAIRS.items() if v == "FAIL"} | FAILING_CHECKS
    check = fronts["check"]
    assert check.exit_code == 1 and {j.case for j in check.failures} == expected
    tests = fronts["pytest"]
    assert tests.returncode == 1, tests.stdout + tests.stderr
    assert {c for c, (outcome, _) in _pytest(fronts).items() if outcome == "FAILED"} == expected
    # diff runs no gradient checks: the same failures, less the checks.
    assert {c for c, v in _diff(fronts).items() if Verdict(v).failing} == expected - FAILING_CHECKS
    assert {fronts["diff"][name]["exit_code"] for name in EXAMPLES} == {1}
    assert [data["verdict"] for data in fronts["diff"].values()] == ["FAIL"] * 3
    for name, data in fronts["diff"].items():
        mine = {c for c in expected - FAILING_CHECKS if c.startswith(f"{name}::")}
        assert sorted(data["failures"]) == sorted(
            j["summary"] for j in data["pairs"] if j["case"] in mine
        )
    # check's text says as many.
    lines = fronts["check"].lines()
    for name in EXAMPLES:
        count = len([c for c in expected if c.startswith(f"{name}::")])
        assert f"  {name}: FAIL ({count} failure(s))" in lines
    # The report: every failing case is linked from its first table, and nothing else.
    report = fronts["report"]
    assert report.verdict == "FAIL"
    linked = {case for page in report.pages for f in page.failures for _, case in f.links}
    assert linked == expected
    assert {c for c, v in _report(fronts).items() if Verdict(v).failing} == expected


def test_every_file_gets_one_verdict(fronts):
    diff = {
        j["case"].split("::file::")[1]: (j["verdict"], j["reason"])
        for data in fronts["diff"].values()
        for j in data["files"]
    }
    check = {
        j.case.split("::file::")[1]: (str(j.verdict), j.reason)
        for ej in fronts["check"]
        for j in ej.of_kind("file")
    }
    tests = {
        c.split("::file::")[1]: (outcome, *fronts["observed"][c])
        for c, outcome in _pytest_items(fronts["pytest"].stdout).items()
        if "::file::" in c
    }
    # check and pytest judge the files check does not write; diff every file of the store.
    assert (
        set(tests)
        == set(check)
        == {"mine-square", "recorded/jax-branch-old", "recorded/jax-minimum"}
    )
    produced = {
        f"{v}{dtype}"
        for v in ("jax-branch", "jax-minimum", "jax-square", "jax-square-off")
        + ("jax-steps-loop", "jax-steps-scan", "jax-steps-late")
        for dtype in ("", "@float32")
    } | {"jax-expanded", "jax-squared", "jax-squared-off", "jax-grad-off"}
    assert set(diff) == set(tests) | produced
    assert all(diff[label][0] == "ok" for label in produced)
    report = {
        j.case.split("::file::")[1]: (str(j.verdict), j.reason)
        for page in fronts["report"].pages
        for j in page.ej.of_kind("file")
    }
    assert report == check  # the report renders check's judgement (read back), no other
    for label, (outcome, verdict, reason) in tests.items():
        assert diff[label] == check[label] == (verdict, reason)
        assert outcome == PYTEST_OUTCOME[verdict]
    stale = tests["recorded/jax-branch-old"]
    assert stale[1] == "stale" and "inputs sha256 ababababab" in stale[2]
    assert "re-record it" in stale[2]
    assert re.search(
        rf"^SKIPPED \[1\] \S+: stale: {re.escape(stale[2])}$", fronts["pytest"].stdout, re.M
    )
    assert tests["mine-square"][1] == tests["recorded/jax-minimum"][1] == "ok"
    # check's text: the files that are not ok, each on its line; the others counted.
    out = "\n".join(fronts["check"].lines())
    block = out.split(f"== {KINKS} ")[1].split("\n== ")[0]
    listed = re.findall(r"^  file (\S+): (\S+): (.*)$", block, re.M)
    assert listed == [("recorded/jax-branch-old", "stale", stale[2])]
    assert "  2 file(s) of the store and recorded/ read, current and finite" in block


def test_every_gradient_check_and_run_gets_one_verdict(fronts):
    check = {
        c: v for c, v in _check(fronts).items() if c.split("::")[-1] in ("taylor", "jvp", "run")
    }
    expected = {
        c: ("FAIL" if c in FAILING_CHECKS else "ok") for c in check if not c.endswith("::run")
    }
    # 31-cancel runs in float64 only: its float32 runs are `skipped`, saying why.
    for c in check:
        if c.endswith("::run"):
            expected[c] = "skipped" if c.startswith(CANCEL) and "@float32" in c else "ok"
    assert check == expected
    assert len([c for c in check if c.endswith("::taylor")]) == 4 + 4 + 3
    tests = _pytest(fronts)
    for case, verdict in check.items():
        outcome, observed = tests[case]
        assert outcome == PYTEST_OUTCOME[verdict] and observed in (verdict, None), case
        assert observed is not None or verdict == "skipped"  # skipped at collection
    report = _report(fronts)
    assert {c: report[c] for c in check} == check
    # A correct loss that cancels terms of order 1 passes the Taylor test: its remainders
    # are resolved above its own rounding noise, not above 64 ulp of its ~1e-15 value.
    expanded = fronts["check"][CANCEL].by_case()[_case(CANCEL, "kmeans", "jax-expanded::taylor")]
    rates = [r for rs in expanded.taylor.asymptotic for r in rs]
    assert rates and all(1.9 <= r <= 2.1 for r in rates)
    # check and the report name the masked entries and the failing array the same way.
    out = "\n".join(fronts["check"].lines())
    for family, variant in [
        ("min", "jax-branch"),
        ("min", "jax-minimum"),
        ("square", "jax-square"),
        ("square", "jax-square-off"),
    ]:
        (row,) = [r.split() for r in out.splitlines() if r.split()[:2] == [variant, family]]
        for kind, cell in (("taylor", row[3]), ("jvp", row[5])):
            assert cell == check[_case(KINKS, family, f"{variant}::{kind}")], (variant, row)
    assert "kink mask: 4 of 12 entries left out (ties x == y)" in out
    taylor = fronts["check"][KINKS].by_case()[_case(KINKS, "square", "jax-square-off::taylor")]
    assert "the gradient of x is not the loss's derivative" in taylor.reason
    assert f"{taylor.case}: FAIL: " in out and taylor.reason in out
    assert fronts["observed"][taylor.case] == ["FAIL", taylor.reason]


def test_a_loss_cancelling_to_rounding_agrees_and_a_planted_1e_9_fails(fronts):
    """Issue 31, acceptance 1: losses 0.0 and ~2e-15 of terms of order 1 agree; the same
    pair with a loss difference of 1e-9 fails (in every front end: the test above)."""
    c = fronts["premises"]["cancel"]
    terms = float(np.sum(c["points"] ** 2) + np.sum(c["centroids"] ** 2))
    assert terms > 10  # terms of order 1 (48 of them), summed and cancelled
    ej = fronts["check"][CANCEL]
    expanded, squared = ej.subjects["jax-expanded"], ej.subjects["jax-squared"]
    assert squared.loss == 0.0 and 0 < abs(expanded.loss) < 1e-14
    by_case = ej.by_case()
    pair = by_case[_case(CANCEL, "kmeans", "jax-expanded~jax-squared")].comparison
    # The relative rule alone fails it (|ΔL|/|L_ref| = 1); the floor, 100 times the
    # expanded form's own rounding noise, accepts it; the gradients are equal zeros.
    assert pair.loss_abs == abs(expanded.loss) and pair.loss_rel == 1.0
    assert pair.loss_floor == 100 * expanded.noise["loss"] >= pair.loss_abs
    assert pair.max_abs == 0.0 and pair.agree
    for other in ("jax-expanded", "jax-squared"):
        planted = by_case[_case(CANCEL, "kmeans", f"{other}~jax-squared-off")].comparison
        assert planted.loss_abs == pytest.approx(1e-9, rel=1e-5) and planted.max_abs == 0.0
        assert planted.loss_floor < 1e-12 and not planted.agree
    # diff says the same from the store files (the noise is stored with them).
    data = fronts["diff"][CANCEL]
    pairs = {p["case"]: p for p in data["pairs"]}
    ok = pairs[_case(CANCEL, "kmeans", "jax-expanded~jax-squared")]
    assert ok["loss_floor"] == pair.loss_floor and ok["loss_abs"] == pair.loss_abs
    planted = pairs[_case(CANCEL, "kmeans", "jax-squared~jax-squared-off")]
    assert planted["summary"] == (
        f"{planted['case']}: FAIL: bitwise equal; |ΔL| = 1.00e-09 (the reference loss is 0; "
        f"noise floor {planted['loss_floor']:.2e})"
    )


def test_an_all_zero_reference_gradient_is_judged_in_absolute_terms(fronts):
    """Issue 31, acceptance 2: a reference gradient of zeros gives an absolute statement,
    never NaN/Inf; a pair differing there fails with the absolute max|Δ|."""
    ej = fronts["check"][CANCEL]
    assert not np.any(ej.subjects["jax-expanded"].gradients["centroids"])
    statement = "reference is all zeros; max|Δ| = 1.00e-09"
    data = {p["case"]: p for p in fronts["diff"][CANCEL]["pairs"]}
    for ref in ("jax-expanded", "jax-squared"):
        case = _case(CANCEL, "kmeans", f"{ref}~jax-grad-off")
        c = ej.by_case()[case].comparison
        assert c.reference_zero and c.max_rel is None and c.max_abs == 1e-9
        assert c.worst == (0, 0) and c.differing == 1
        j = data[case]
        assert (j["verdict"], j["reference_zero"], j["max_rel"], j["max_abs"]) == (
            "FAIL",
            True,
            None,
            1e-9,
        )
        assert statement in j["summary"] and "NaN" not in j["summary"]
        assert j["regions"][0]["worst_abs"] == 1e-9 and j["regions"][0]["worst_rel"] is None
    # The pair that agrees there is told in the same terms: bitwise equal, no NaN/Inf.
    agreeing = data[_case(CANCEL, "kmeans", "jax-expanded~jax-squared")]
    assert agreeing["reference_zero"] and agreeing["max_rel"] == 0.0
    assert "NaN" not in agreeing["summary"]
    # The text views: check's failure list and the failing pytest item say it the same way.
    out = "\n".join(fronts["check"].lines())
    section = out.split(f"== {CANCEL}")[1].split(f"== {STEPS}")[0]
    assert statement in section and "NaN" not in section
    stdout = fronts["pytest"].stdout
    assert f"{_case(CANCEL, 'kmeans', 'jax-squared~jax-grad-off')}: FAIL: {statement}" in stdout
    # The report: its first table names the suspect with the same absolute statement,
    # against the family's trusted group (the two that agree), as the judge names it.
    (page,) = [p for p in fronts["report"].pages if p.name == CANCEL]
    (row,) = [f for f in page.failures if f.subject == "jax-grad-off" and "differs" in f.what]
    assert row.what.startswith("FAIL: differs from jax-expanded, jax-squared, ")
    assert statement in row.what and row.what.endswith("at numpy (0, 0)")
    assert "NaN" not in row.what


def test_a_variant_wrong_from_step_31_is_found_by_fuzz_at_once_with_checks_pair_id(fronts):
    """Issue 30, acceptance 3: T = 50 by default; the late variant parts ways at step 31.
    fuzz's first draw (the shared inputs with the default parameters) reports it, under
    the case ids that check fails."""
    fz = fronts["fuzz"][STEPS]
    assert fz.exit_code == 1 and fz.draws == 1
    (finding,) = fz.findings
    assert finding.how == "shared inputs" and dict(finding.draw.case.inputs.params) == {"T": 50}
    found = {j.case: str(j.verdict) for o in finding.draw.failing.values() for j in o.judgements}
    expected = {
        _case(STEPS, "steps", "jax-steps-loop~jax-steps-late"): "FAIL",
        _case(STEPS, "steps", "jax-steps-scan~jax-steps-late"): "FAIL",
    }
    assert found == expected
    assert {c: _check(fronts)[c] for c in expected} == expected
    assert sorted(fz.failed_pairs) == [
        ("jax-steps-loop", "jax-steps-late"),
        ("jax-steps-scan", "jax-steps-late"),
    ]
    assert fz.lines[-1].startswith(f"fuzz {STEPS}: FAIL — 1 draw(s)")
    assert fz.lines[-1].endswith(
        "2 of 3 pair(s) disagree: jax-steps-loop~jax-steps-late, jax-steps-scan~jax-steps-late"
    )


# --- declared expectations (issue 40) ---------------------------------------------------------
# `40-declared`, the project's fourth example: five families, each a reference `jax-F-ref`
# (L = Σ (x − y)²) and a variant `jax-F` declared with `weanj.Expected` to differ from it.
# The variant adds one planted term a[i]², so ∂L/∂a[i] grows by 2·a[i] and nothing else
# moves (its gradient is its loss's derivative: its Taylor and jvp checks pass):
#
# - `declared`: x[2] planted, declared at x[2] with a bound above the difference: expected;
# - `agrees`: nothing planted, the same declaration: unexpectedly ok (x), ok (y);
# - `bounded`: x[2] planted, declared with a bound below the difference: FAIL, naming both;
# - `array`: y[2] planted, declared in x: x unexpectedly ok, y FAIL naming y and x[2];
# - `region`: x[5] planted, declared in x[0:3]: FAIL naming x[5] and x[0:3].

DECLARED = "40-declared"
DECLARED_MODULE = textwrap.dedent(
    """
    import jax.numpy as jnp
    import numpy as np
    import weanj


    def generate(seed):  # x far from y: every planted term is far beyond the tolerance
        rng = np.random.default_rng(seed)
        return {"x": rng.uniform(1, 2, 8), "y": rng.uniform(-1, 0, 8)}


    ex = weanj.register_example(weanj.Example(
        name="40-declared", arrays=("x", "y"), wrt=("x", "y"), generate=generate,
    ))
    ONLY = ("float64",)


    def base(x, y):
        return jnp.sum((x - y) ** 2)


    def planted(array, i):
        def loss(x, y):
            return base(x, y) + (x if array == "x" else y)[i] ** 2

        return loss


    def at(**where):
        return weanj.Expected(reason="a planted term", array="x", **where)


    CASES = {
        "declared": (planted("x", 2), at(elements=[2], bound=10.0)),
        "agrees": (base, at(elements=[2])),
        "bounded": (planted("x", 2), at(elements=[2], bound=1e-3)),
        "array": (planted("y", 2), at(elements=[2])),
        "region": (planted("x", 5), at(region=np.s_[0:3])),
    }
    for family, (loss, declared) in CASES.items():
        weanj.jax_variant(ex, f"jax-{family}-ref", family=family, loss=base, dtypes=ONLY)
        weanj.jax_variant(
            ex, f"jax-{family}", family=family, loss=loss, dtypes=ONLY, expected=declared
        )
    """
)


def _declared_case(family: str, array: str) -> str:
    return f"{DECLARED}::{family}::jax-{family}-ref~jax-{family}::{array}"


# Every declared pair's verdict, per array, derived from the plants above.
DECLARED_PAIRS = {
    _declared_case("declared", "x"): "expected",
    _declared_case("declared", "y"): "ok",
    _declared_case("agrees", "x"): "unexpectedly ok",
    _declared_case("agrees", "y"): "ok",
    _declared_case("bounded", "x"): "FAIL",
    _declared_case("bounded", "y"): "ok",
    _declared_case("array", "x"): "unexpectedly ok",
    _declared_case("array", "y"): "FAIL",
    _declared_case("region", "x"): "FAIL",
    _declared_case("region", "y"): "ok",
}
DECLARED_ITEM = re.compile(r"^weanj::(\S+) (PASSED|FAILED|SKIPPED|XFAIL)", re.MULTILINE)
DECLARED_OUTCOME = {
    "ok": "PASSED",
    "expected": "XFAIL",
    "unexpectedly ok": "FAILED",
    "FAIL": "FAILED",
}


@pytest.fixture(scope="module")
def declared_here(project):
    """The example of declared differences, and what each front end called in this process
    says of it."""
    root = project
    quiet = lambda line: None  # noqa: E731
    with loaded(root, "fe_declared"):
        weanj.write_inputs(DECLARED)
        inputs = weanj.load_inputs(DECLARED)
        api = weanj.check(DECLARED, say=quiet)  # weanj.check(), as in a notebook
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["check", DECLARED, "-v"])
        cli = (code, out.getvalue())
        diff = _cli_json("diff", DECLARED, "--json")
        report = weanj.report(DECLARED, out=root / "report.html")
    return {
        "inputs": inputs,
        "api": api,
        "cli": cli,
        "diff": diff,
        "report": report,
        "html": (root / "report.html").read_text(),
    }


@pytest.fixture(scope="module")
def declared(declared_here, users_pytest):
    """The example of declared differences, and what each front end says of it
    (`pytest --weanj`: its items, in the one run of the project)."""
    tests, observed = users_pytest
    mine = {c: v for c, v in observed["verdicts"].items() if _of(c, (DECLARED,))}
    return {**declared_here, "pytest": tests, "observed": mine}


def test_declared_differences_get_one_verdict_in_every_front_end(declared):
    api = declared["api"]
    assert {c: v for c, v in api.verdicts().items() if c in DECLARED_PAIRS} == DECLARED_PAIRS
    code, text = declared["cli"]
    assert code == 1  # unexpectedly ok and the departures fail
    diff = {j["case"]: j["verdict"] for j in declared["diff"]["pairs"]}
    assert {c: diff[c] for c in DECLARED_PAIRS} == DECLARED_PAIRS
    assert declared["diff"]["exit_code"] == 1
    page = declared["report"].pages[0]
    assert {j.case: str(j.verdict) for j in page.ej.judgements if j.case in DECLARED_PAIRS} == (
        DECLARED_PAIRS
    )
    # pytest --weanj: expected is an xfail, unexpectedly ok a strict XPASS (a failure).
    tests = declared["pytest"]
    outcomes = dict(DECLARED_ITEM.findall(tests.stdout))
    assert {c: outcomes[c] for c in DECLARED_PAIRS} == {
        c: DECLARED_OUTCOME[v] for c, v in DECLARED_PAIRS.items()
    }, tests.stdout
    observed = declared["observed"]
    assert {c: observed[c][0] for c in DECLARED_PAIRS} == DECLARED_PAIRS
    assert tests.stdout.count("[XPASS(strict)]") >= 2, tests.stdout
    assert f"XFAIL weanj::{_declared_case('declared', 'x')} - expected: a planted term" in (
        tests.stdout
    )
    # Only what departs from its declaration fails: no gradient check, no run.
    failing = {j.case for j in api.failures}
    assert failing == {c for c, v in DECLARED_PAIRS.items() if Verdict(v).failing}


def test_the_expected_difference_passes_and_is_named_with_its_reason(declared):
    api, (_, text) = declared["api"], declared["cli"]
    j = api[DECLARED].by_case()[_declared_case("declared", "x")]
    assert j.verdict == Verdict.EXPECTED and not j.failed
    assert j.reason == "a planted term" and j.declared == "x[2]"
    assert re.search(r"^  jax-declared-ref\s+jax-declared\s+x\s.*expected$", text, re.MULTILINE)
    assert "    jax-declared vs its family (x[2], 1 case(s)): a planted term" in text
    assert "40-declared: FAIL (5 failure(s), 1 expected difference)" in text
    pair = next(
        p for p in declared["diff"]["pairs"] if p["case"] == _declared_case("declared", "x")
    )
    assert pair["expected"]["reason"] == "a planted term" and pair["expected"]["where"] == "x[2]"
    assert pair["departure"] is None
    assert [e["cases"] for e in declared["diff"]["expected"]] == [[_declared_case("declared", "x")]]
    # the report: a colour and a column of its own, with the reason
    html = declared["html"]
    assert '<td class="expected">expected</td>' in html
    assert "x[2], at most 10·max|g_ref|: a planted term" in html
    # a notebook shows the same
    notebook = api._repr_html_()
    assert "expected" in notebook and "a planted term" in notebook
    assert "1 expected difference" in repr(api)


def test_a_departure_from_the_declaration_fails_saying_how(declared):
    by_case = declared["api"][DECLARED].by_case()
    x, y = declared["inputs"]["x"], declared["inputs"]["y"]
    # the measured difference, apart from the judge: 2·x[2] over max|2(x − y)|
    measured = abs(x[2]) / np.max(np.abs(x - y))
    assert measured > 1e-3 and measured < 10.0  # the premises of `bounded` and `declared`
    bounded = by_case[_declared_case("bounded", "x")]
    assert bounded.verdict == Verdict.FAIL
    assert bounded.departure == "differs in x by more than the declared bound 0.001·max|g_ref|"
    assert bounded.comparison.max_rel == pytest.approx(measured, rel=1e-9)  # said once, there
    assert summary(bounded).count(f"{measured:.2e}") == 1
    agrees = by_case[_declared_case("agrees", "x")]
    assert agrees.verdict == Verdict.UNEXPECTEDLY_OK
    assert agrees.reason.startswith("declared FAIL (a planted term), but x agrees")
    array = by_case[_declared_case("array", "y")]
    assert array.verdict == Verdict.FAIL
    assert array.departure == "differs in y, where the declaration names x[2]"
    region = by_case[_declared_case("region", "x")]
    assert region.verdict == Verdict.FAIL
    assert region.departure.startswith(
        "differs outside x[0:3]: 1 other element(s) of x, the worst x[5]"
    )
    # the same words in every front end
    diff = {j["case"]: j for j in declared["diff"]["pairs"]}
    for j in (bounded, array, region):
        assert diff[j.case]["departure"] == j.departure
        assert j.departure in declared["pytest"].stdout
        assert j.departure in declared["cli"][1]


# --- one run under every front end (issue 43, item 1) -----------------------------------------
# `45-one-run`, the project's fifth example, as a user's project looks when something is wrong:
# family `sq`: `jax-ref` (L = Σ (x − y)², float64 and float32: the float32 pair), `jax-off`
# (its gradient 1% too large at x[2]: FAIL) and `jax-broken` (raises: error); family `planted`:
# `jax-planted-ref` and `jax-planted`, which adds x[2]² and declares it with `weanj.Expected`.
# Every front end (`weanj.check()`, `weanj check`, `weanj.diff()`, `weanj diff --json`,
# `weanj.evaluate()`, `weanj run`, `pytest --weanj`) is watched making its `CheckRun`: each
# makes exactly one, and what they say agrees.

ONE_RUN = "45-one-run"
ONE_RUN_MODULE = textwrap.dedent(
    """
    import jax.numpy as jnp
    import numpy as np
    import weanj


    def generate(seed):  # x far from y: a 1% plant is far beyond the tolerance
        rng = np.random.default_rng(seed)
        return {"x": rng.uniform(1, 2, 8), "y": rng.uniform(-1, 0, 8)}


    ex = weanj.register_example(weanj.Example(
        name="45-one-run", arrays=("x", "y"), wrt="x", generate=generate,
    ))
    ONLY = ("float64",)


    def base(x, y):
        return jnp.sum((x - y) ** 2)


    def off(x, y):
        return (2 * (x - y)).at[2].multiply(1.01)


    def broken(x, y):
        raise ValueError("a broken port")


    def planted(x, y):
        return base(x, y) + x[2] ** 2


    weanj.jax_variant(ex, "jax-ref", family="sq", loss=base)
    weanj.jax_variant(ex, "jax-off", family="sq", loss=base, grad=off, dtypes=ONLY)
    weanj.jax_variant(ex, "jax-broken", family="sq", loss=broken, dtypes=ONLY)
    weanj.jax_variant(ex, "jax-planted-ref", family="planted", loss=base, dtypes=ONLY)
    weanj.jax_variant(
        ex, "jax-planted", family="planted", loss=planted, dtypes=ONLY,
        expected=weanj.Expected(reason="a planted term", array="x", elements=[2], bound=10.0),
    )
    """
)


def _one(what: str) -> str:
    return f"{ONE_RUN}::{what}"


# The verdicts, derived by hand from the plants above.
ONE_RUN_CASES = {
    _one("sq::jax-ref::run"): "ok",
    _one("sq::jax-ref@float32::run"): "ok",
    _one("sq::jax-off::run"): "ok",
    _one("sq::jax-broken::run"): "error",
    _one("sq::jax-ref~jax-off"): "FAIL",
    _one("sq::jax-ref~jax-broken"): "skipped",
    _one("sq::jax-off~jax-broken"): "skipped",
    _one("sq::jax-ref~jax-ref@float32"): "ok",
    _one("sq::jax-off::taylor"): "FAIL",
    _one("sq::jax-off::jvp"): "FAIL",
    _one("sq::jax-ref::taylor"): "ok",
    _one("planted::jax-planted-ref~jax-planted"): "expected",
    _one("planted::jax-planted::taylor"): "ok",
    _one("info::jax-ref~jax-planted-ref"): "info",
}
ONE_RUN_OUTCOME = {
    "ok": "PASSED",
    "FAIL": "FAILED",
    "error": "FAILED",
    "skipped": "SKIPPED",
    "expected": "XFAIL",
}


@pytest.fixture(scope="module")
def one_run_here(project):
    """The example, and the run of it of every front end called in this process: the
    `CheckRun`s each made (watched by wrapping `CheckRun._open`, which the live run's and
    the store run's constructors both call), and what each returned or printed."""
    from weanj._pipeline.engine import _run

    root = project
    quiet = lambda line: None  # noqa: E731
    made: list = []
    opened = _run.CheckRun._open

    def watched(self, *args, **kwargs):
        opened(self, *args, **kwargs)
        made.append(self)

    def runs_of(call):
        """What `call()` returns, and the runs it made."""
        start = len(made)
        found = call()
        return found, made[start:]

    out: dict = {}
    with pytest.MonkeyPatch.context() as mp, loaded(root, "fe_one_run"):
        mp.setattr(_run.CheckRun, "_open", watched)
        weanj.write_inputs(ONE_RUN)
        out["api"] = runs_of(lambda: weanj.check(ONE_RUN, say=quiet))
        out["cli"] = runs_of(lambda: _cli_text("check", ONE_RUN))
        out["diff"] = runs_of(lambda: weanj.diff(ONE_RUN))
        out["diff_json"] = runs_of(lambda: _cli_json("diff", ONE_RUN, "--json"))
        out["evaluate"] = runs_of(lambda: weanj.evaluate(ONE_RUN, "jax-ref"))
        out["evaluate32"] = runs_of(lambda: weanj.evaluate(ONE_RUN, "jax-ref", dtype="float32"))
        out["broken"] = runs_of(lambda: _raised(lambda: weanj.evaluate(ONE_RUN, "jax-broken")))
        out["run"] = runs_of(lambda: _cli_text("run", ONE_RUN, "jax-broken"))
    return out


@pytest.fixture(scope="module")
def one_run(one_run_here, users_pytest):
    """The example, and every front end's run of it (`pytest --weanj`: the one run of the
    project, what its session judged of this example's items and the runs it judged by)."""
    tests, observed = users_pytest
    mine = {
        "verdicts": {c: v for c, (v, _) in observed["verdicts"].items() if _of(c, (ONE_RUN,))},
        "runs": observed["runs"],
        "x64": {c: x for c, x in observed["x64"].items() if _of(c, (ONE_RUN,))},
    }
    return {**one_run_here, "pytest": (tests, mine)}


def _cli_text(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _raised(call) -> Exception:
    try:
        call()
    except Exception as e:  # what the API raises is the result here
        return e
    raise AssertionError("no exception")


def test_every_front_end_judges_through_one_run(one_run):
    from weanj._pipeline.engine._run import CheckRun

    for front in ("api", "cli", "diff", "diff_json", "evaluate", "broken", "run"):
        _, runs = one_run[front]
        assert len(runs) == 1 and type(runs[0]) is CheckRun, front
    # check (API and command line) a live run that saves; diff the store run.
    for front in ("api", "cli"):
        (run,) = one_run[front][1]
        assert run.live and run.save and [c.name for c in run.catalogs] == [ONE_RUN]
    for front in ("diff", "diff_json"):
        (run,) = one_run[front][1]
        assert not run.live and not run.save and run.records is None
    # evaluate and run: one evaluation, no example judged, nothing kept.
    for front in ("evaluate", "broken", "run"):
        (run,) = one_run[front][1]
        assert run.catalogs == [] and run.records is None and not run.save
    # pytest --weanj: every item judged by the one CheckRun its session made.
    _, observed = one_run["pytest"]
    (made,) = observed["runs"]
    assert made.startswith("weanj._pipeline.engine._run.CheckRun ")
    # each run item carries the x64 configuration its run computed in (DESIGN §2.2): on,
    # as in check (in the user's folder it comes from the environment the tests set)
    from weanj._report._text import x64_lines

    api, _ = one_run["api"]
    (printed,) = x64_lines(api[ONE_RUN])
    x64 = observed["x64"]
    assert _one("sq::jax-ref::run") in x64 and all(c.endswith("::run") for c in x64)
    assert printed.strip().startswith("x64 on (")
    assert set(x64.values()) == {
        "x64 on (JAX_ENABLE_X64=1 in the environment; fe_one_run leaves it)"
    }


def test_the_front_ends_of_one_run_agree(one_run):
    api, (api_run,) = one_run["api"]
    (code, text, _), (cli_run,) = one_run["cli"]
    check = api.verdicts()
    assert {c: check[c] for c in ONE_RUN_CASES} == ONE_RUN_CASES
    assert cli_run.judgement.verdicts() == check and code == 1 == api.exit_code
    # what the API returns is the run's judgement, with its views (the same examples)
    assert api.examples is api_run.judgement.examples and list(api) == [api_run.judgement[ONE_RUN]]
    assert f"{_one('sq::jax-ref~jax-off')}: FAIL" in text
    # diff: the store check wrote judged again, the same verdict for every case it has
    # (no gradient checks: those are check's), the broken variant's fault from check.json.
    diff, _ = one_run["diff"]
    data, _ = one_run["diff_json"]
    listed = {j["case"]: j["verdict"] for k in ("runs", "pairs", "skipped") for j in data[k]}
    stored = diff.verdicts()
    # (the float32 pairs of float64-only variants are check's alone: no file, no fault)
    pairs = {c for c in check if "~" in c and "@float32" not in c}
    pairs.add(_one("sq::jax-ref~jax-ref@float32"))
    assert pairs <= set(stored) and pairs <= set(listed)
    both = (set(stored) | set(listed)) & set(check)
    assert both >= pairs | {_one("sq::jax-broken::run")}
    assert (
        {c: stored[c] for c in both} == {c: listed[c] for c in both} == {c: check[c] for c in both}
    )
    assert data["exit_code"] == 1 == diff.exit_code
    # pytest --weanj: every case but the one across families is an item, with check's verdict.
    tests, observed = one_run["pytest"]
    # (the items of this example: the run judges the project's other examples too)
    items = {c: o for c, o in DECLARED_ITEM.findall(tests.stdout) if _of(c, (ONE_RUN,))}
    tested = {c: v for c, v in check.items() if "::info::" not in c}
    judged = observed["verdicts"]  # (an item skipped at collection is judged by no one)
    assert set(items) == set(tested) and judged == {c: check[c] for c in judged}
    assert set(judged) >= set(ONE_RUN_CASES) - {_one("info::jax-ref~jax-planted-ref")}
    assert {tested[c] for c in set(tested) - set(judged)} == {"skipped"}
    assert {c: items[c] for c in ONE_RUN_CASES if c in tested} == {
        c: ONE_RUN_OUTCOME[v] for c, v in ONE_RUN_CASES.items() if c in tested
    }, tests.stdout
    assert tests.returncode == 1
    # evaluate and check computed the same numbers (the same evaluation, in both dtypes).
    for front, label in (("evaluate", "jax-ref"), ("evaluate32", "jax-ref@float32")):
        g, _ = one_run[front]
        checked = api[ONE_RUN].subjects[label]
        assert g.key == checked.key and g.loss == checked.loss
        assert np.array_equal(g.gradients["x"], checked.gradients["x"])
    # The broken variant: the same one line in check's run case, evaluate's error and run's.
    reason = api[ONE_RUN].by_case()[_one("sq::jax-broken::run")].reason
    assert "a broken port" in reason
    error, _ = one_run["broken"]
    assert isinstance(error, weanj.VariantError) and "a broken port" in str(error)
    (run_code, run_out, run_err), _ = one_run["run"]
    assert run_code == 1 and run_out == "" and "a broken port" in run_err
    assert str(error).splitlines()[0] in run_err


# --- the project, and the one `pytest --weanj` run of it ----------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The throwaway user project of all five examples, and the observer of its
    `pytest --weanj` (its inputs are written where each example's front ends run)."""
    root = tmp_path_factory.mktemp("front-ends")
    files = {
        "fe_kinks.py": KINKS_MODULE,
        "fe_cancel.py": CANCEL_MODULE,
        "fe_steps.py": STEPS_MODULE,
        "fe_declared.py": DECLARED_MODULE,
        "fe_one_run.py": ONE_RUN_MODULE,
        "conftest.py": OBSERVER,
    }
    return write_project(root, files, regenerate=False)


@pytest.fixture(scope="module")
def users_pytest(project, fronts_here, declared_here, one_run_here, tmp_path_factory):
    """`pytest --weanj` of the whole project as a user runs it (a subprocess in its folder),
    once every front end called in this process has written what it writes (the store,
    recorded/ and the user's own file): the finished process, and what the observer saw
    (`{"verdicts": {case: [verdict, reason]}, "runs": [...], "x64": {case: ...}}`)."""
    verdicts_file = tmp_path_factory.mktemp("observer") / "verdicts.json"
    tests = pytest_weanj_in(project, "-v", "-rsx", env=user_env(VERDICTS_FILE=str(verdicts_file)))
    return tests, json.loads(verdicts_file.read_text())
