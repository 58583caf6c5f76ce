"""A variant at fault is one verdict, `error`, the same in every front end; weanj's own
runs are in the dtype under test (issue 30, acceptance 2; issue 31, acceptance 3).

A user project outside the repository, run as a user runs it (`weanj check` and `pytest
--weanj` in subprocesses in its folder), holds `10-smooth` with two correct variants and
five that break the variant contract: one raises inside `jit`; one's custom gradient has
the wrong shape; one returns a vector loss; one casts to float32 inside (wrong for float64
inputs); one casts to float64 inside (wrong for float32 inputs). A sixth lives in a module
of its own that turns `jax_enable_x64` on while importing, so that its module-level
constants are float64 and promote a float32 run. Each is named once, with what is wrong
and the command that reproduces it; its pairs are not compared; `weanj run` of it exits 1
with the same line and saves nothing; the correct variants' float32 runs are real float32
runs.
"""

from __future__ import annotations

import json
import re
import textwrap

import h5py
import numpy as np
import pytest

import weanj
from weanj import Verdict
from weanj._cli import main

from .helpers import assert_one_line_error
from .projects import loaded, pytest_weanj_in, user_env, weanj_here, write_project

EX = "10-smooth"
CORRECT = ("jax-loop", "jax-scan")

SMOOTH = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    import weanj

    ex = weanj.register_example(weanj.Example(
        name="10-smooth", arrays=("x", "y"), wrt="x",
        params=(weanj.Param("S", default=3),),
        generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(64),
                               "y": np.random.default_rng(seed + 1).standard_normal(64)},
    ))


    def _smooth(x, S):
        for _ in range(S):
            x = 0.25 * jnp.roll(x, 1) + 0.5 * x + 0.25 * jnp.roll(x, -1)
        return x


    @weanj.jax_variant(ex, "jax-loop", family="smooth")
    def smooth_loop(x, y, S):
        return jnp.sum((_smooth(x, S) - y) ** 2)


    @weanj.jax_variant(ex, "jax-scan", family="smooth")
    def smooth_scan(x, y, S):
        def step(c, _):
            return 0.25 * jnp.roll(c, 1) + 0.5 * c + 0.25 * jnp.roll(c, -1), None
        c, _ = jax.lax.scan(step, x, None, length=S)
        return jnp.sum((c - y) ** 2)


    @weanj.jax_variant(ex, "jax-raises", family="smooth")
    def raises(x, y, S):
        raise ValueError("boom inside jit")


    def _short_grad(x, y, S):
        return jax.grad(smooth_loop)(x, y, S)[:-1]


    weanj.jax_variant(ex, "jax-short-grad", family="smooth", loss=smooth_loop, grad=_short_grad)


    @weanj.jax_variant(ex, "jax-vector-loss", family="smooth")
    def vector_loss(x, y, S):
        return (_smooth(x, S) - y) ** 2


    @weanj.jax_variant(ex, "jax-float32-inside", family="smooth")
    def float32_inside(x, y, S):
        return jnp.sum((_smooth(x.astype(jnp.float32), S) - y.astype(jnp.float32)) ** 2)


    @weanj.jax_variant(ex, "jax-float64-out", family="smooth")
    def float64_out(x, y, S):
        return jnp.sum((_smooth(x.astype(jnp.float64), S) - y.astype(jnp.float64)) ** 2)
    """
)

# A module that turns float64 on globally while importing (as some third-party modules
# do): its constants, made then, are float64 and promote everything they touch.
WIDE = textwrap.dedent(
    """
    import jax
    jax.config.update("jax_enable_x64", True)

    import jax.numpy as jnp
    import weanj

    WEIGHTS = jnp.array([0.25, 0.5, 0.25])  # float64: made while x64 is on


    @weanj.jax_variant("10-smooth", "jax-x64-module", family="smooth")
    def weighted(x, y, S):
        for _ in range(S):
            x = WEIGHTS[0] * jnp.roll(x, 1) + WEIGHTS[1] * x + WEIGHTS[2] * jnp.roll(x, -1)
        return jnp.sum((x - y) ** 2)
    """
)

OBSERVER = textwrap.dedent(
    """
    import json, os

    VERDICTS = {}


    def pytest_runtest_logreport(report):
        if report.nodeid.startswith("weanj::") and (report.when == "call" or report.skipped):
            VERDICTS[report.nodeid.removeprefix("weanj::")] = report.outcome


    def pytest_runtest_teardown(item):
        j = getattr(item, "judgement", None)
        if j is not None:
            VERDICTS[item.nodeid.removeprefix("weanj::") + " judged"] = [str(j.verdict), j.reason]


    def pytest_sessionfinish(session):
        with open(os.environ["VERDICTS_FILE"], "w") as f:
            json.dump(VERDICTS, f)
    """
)

MODULES = ("contract_kernels.smooth", "contract_kernels.wide")

# {label: (what is wrong, the command that reproduces it)}: every run at fault.
SAYS = {
    # the innermost line of the project's own code, relative to where the command runs
    "raises": "jax-raises raised ValueError: boom inside jit (at contract_kernels/smooth.py:{})",
    "short": "jax-short-grad returned a gradient of x of shape (63,); its input has shape (64,)",
    "vector": "jax-vector-loss returned a loss of shape (64,), not a scalar",
    "narrow": "returned float32 for float64 inputs (the loss): something casts to float32 inside",
}
# A float32 run promoted to float64 under x64 names the configuration, where it comes from
# (the test suite's JAX_ENABLE_X64=1, tests/conftest.py) and the cause.
X64_ON = "x64 is on (JAX_ENABLE_X64=1 in the environment; contract_kernels.{} leaves it)"
PROMOTED = (
    "returned float64 for float32 inputs (the loss): {}, so default-dtype arrays (jnp.arange, "
    "jnp.zeros, constants made by jnp.array) are 64-bit and promote a float32 computation; "
    "give them the inputs' dtype (jnp.zeros(k, dtype=x.dtype)), or declare the variant "
    'float64-only (dtypes=("float64",))'
)
SAYS["raises"] = SAYS["raises"].format(
    SMOOTH.splitlines().index('    raise ValueError("boom inside jit")') + 1
)
SAYS["wide"] = PROMOTED.format(X64_ON.format("smooth"))
SAYS["wide module"] = PROMOTED.format(X64_ON.format("wide"))
FAULTS = {
    "jax-raises": (SAYS["raises"], f"weanj run {EX} jax-raises"),
    "jax-raises@float32": (SAYS["raises"], f"weanj run {EX} jax-raises --dtype float32"),
    "jax-short-grad": (SAYS["short"], f"weanj run {EX} jax-short-grad"),
    "jax-short-grad@float32": (SAYS["short"], f"weanj run {EX} jax-short-grad --dtype float32"),
    "jax-vector-loss": (SAYS["vector"], f"weanj run {EX} jax-vector-loss"),
    "jax-vector-loss@float32": (SAYS["vector"], f"weanj run {EX} jax-vector-loss --dtype float32"),
    "jax-float32-inside": (
        f"jax-float32-inside {SAYS['narrow']}",
        f"weanj run {EX} jax-float32-inside",
    ),
    "jax-float64-out@float32": (
        f"jax-float64-out {SAYS['wide']}",
        f"weanj run {EX} jax-float64-out --dtype float32",
    ),
    "jax-x64-module@float32": (
        f"jax-x64-module {SAYS['wide module']}",
        f"weanj run {EX} jax-x64-module --dtype float32",
    ),
}
# One row per variant at fault in the failure list: a float32 run at fault as its
# float64 run is folded into that row.
ROWS = {
    "jax-raises (float64, float32)": FAULTS["jax-raises"],
    "jax-short-grad (float64, float32)": FAULTS["jax-short-grad"],
    "jax-vector-loss (float64, float32)": FAULTS["jax-vector-loss"],
    "jax-float32-inside": FAULTS["jax-float32-inside"],
    "jax-float64-out@float32": FAULTS["jax-float64-out@float32"],
    "jax-x64-module@float32": FAULTS["jax-x64-module@float32"],
}


def _any_source(line: str) -> str:
    """The line with the x64 source, and the folder of a raising line, left out."""
    line = re.sub(r"\(at \S*contract_kernels/", "(at contract_kernels/", line)
    return re.sub(r"x64 is on \([^)]*\)", "x64 is on (…)", line)


def _fault_text(what: str, command: str) -> str:
    return f"{what} (reproduce: `{command}`)"


def _run_id(label: str) -> str:
    return f"{EX}::smooth::{label}::run"


@pytest.fixture(scope="module")
def contract(tmp_path_factory):
    root = tmp_path_factory.mktemp("contract")
    files = {
        "contract_kernels/smooth.py": SMOOTH,
        "contract_kernels/wide.py": WIDE,
        "conftest.py": OBSERVER,
    }
    write_project(root, files, regenerate=False)
    with loaded(root, *MODULES):
        weanj.write_inputs(EX)
        check = weanj_here(root, "check", "-v")  # as a fresh process runs it; every pair
        verdicts_file = tmp_path_factory.mktemp("observer") / "verdicts.json"
        tests = pytest_weanj_in(root, "-rs", env=user_env(VERDICTS_FILE=str(verdicts_file)))
        report = weanj.report([EX], out=root / "report.md")
        yield {
            "root": root,
            "check": check,
            "check.json": json.loads((root / "results" / EX / "check.json").read_text()),
            "pytest": tests,
            "observed": json.loads(verdicts_file.read_text()),
            "report": report,
        }


def _failure_rows(stdout: str) -> list[str]:
    block = stdout.split("  failures:\n")[1].split(f"\n  {EX}: FAIL")[0]
    return [line.strip() for line in block.splitlines()]


def test_check_names_each_broken_variant_once_and_judges_the_others(contract):
    check = contract["check"]
    assert check.returncode == 1, check.stdout + check.stderr
    assert "Traceback" not in check.stdout + check.stderr
    # The failure list: one row per broken variant, saying what is wrong and how to
    # reproduce it, and nothing else.
    assert _failure_rows(check.stdout) == [
        f"{who}: error: {_fault_text(*fault)}" for who, fault in ROWS.items()
    ]
    data = contract["check.json"]
    assert {
        label: (f["verdict"], f["reason"], f["command"]) for label, f in data["faults"].items()
    } == {label: ("error", what, command) for label, (what, command) in FAULTS.items()}
    runs = {j["case"]: j["verdict"] for j in data["runs"]}
    labels = [
        f"{v}{d}"
        for v in (
            "jax-loop",
            "jax-scan",
            "jax-raises",
            "jax-short-grad",
            "jax-vector-loss",
            "jax-float32-inside",
            "jax-float64-out",
            "jax-x64-module",
        )
        for d in ("", "@float32")
    ]
    assert runs == {_run_id(label): "error" if label in FAULTS else "ok" for label in labels}
    # The correct pair agrees; no pair or check of a variant at fault is compared (they
    # are "not compared", listed once), and whatever runs of the broken ones are sound
    # (a float64 run that returned float64) are judged as usual; a float32 run is judged
    # against its own float64 run, so where that one is at fault (jax-float32-inside) the
    # float32 case is not compared, naming the float64 run.
    pairs = {j["case"]: j["verdict"] for j in data["pairs"]}
    assert pairs[f"{EX}::smooth::jax-loop~jax-scan"] == "ok"
    assert set(pairs.values()) == {"ok"}
    judged = {s for j in data["pairs"] for s in j["subjects"]}
    assert judged.isdisjoint(FAULTS)
    assert {"jax-float64-out", "jax-x64-module"} <= judged
    assert "jax-float32-inside@float32" not in judged
    blocked = [j for j in data["skipped"] if j.get("blocked_by")]
    own = {label for label in FAULTS if label.split("@")[0] in FAULTS and "@" in label}
    assert {j["blocked_by"] for j in blocked} == set(FAULTS) - own
    float32_inside = f"{EX}::smooth::jax-float32-inside~jax-float32-inside@float32"
    assert {j["case"]: j["blocked_by"] for j in blocked}[float32_inside] == "jax-float32-inside"
    assert all(
        j["reason"].startswith(f"not compared: {j['blocked_by']} is in error") for j in blocked
    )
    assert all(j["verdict"] == "ok" for j in data["checks"] if j["subjects"][0] not in FAULTS)
    assert f"  not compared: {len(blocked)} case(s) with " in check.stdout
    # The variants table: each broken variant's row says its fault; the correct ones agree
    # with their family.
    for who in ("jax-raises", "jax-short-grad", "jax-vector-loss", "jax-float32-inside"):
        table = check.stdout.split("  pairs (")[0].splitlines()
        (row,) = [line for line in table if line.split()[:1] == [who]]
        assert row.split(None, 2)[2] == f"error: {FAULTS[who][0]}"
    # A module that turns float64 on while importing runs as it leaves it (no warning, no
    # setting put back), and the table says which configuration each variant ran in.
    assert "warning: example module" not in check.stderr
    assert f"  {X64_ON.format('wide').replace('is ', '', 1)}: jax-x64-module" in check.stdout


def test_weanj_run_of_a_broken_variant_exits_1_with_the_same_line_and_saves_nothing(
    contract, capsys
):
    results = contract["root"] / "results"

    def files():
        return {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()}

    for label, (what, command) in FAULTS.items():
        if (
            label.startswith("jax-raises@")
            or label.startswith("jax-short-grad@")
            or (label.startswith("jax-vector-loss@"))
        ):
            continue  # the float64 run says it: one `weanj run` per broken variant
        before = files()
        argv = command.split()[1:]
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 1 and out == "", (label, out, err)
        message = assert_one_line_error(err)
        hint = " (--traceback prints the whole traceback)" if " raised " in what else ""
        expected = f"weanj: error: {_fault_text(what, command)}; nothing was saved{hint}"
        # in this process the project's modules load into the checkout's registry, whose
        # pyproject.toml declares x64 = true: the same line, naming that source
        assert _any_source(message) == _any_source(expected)
        assert files() == before, label  # nothing saved, nothing touched


def test_pytest_and_report_give_checks_verdicts(contract):
    data = contract["check.json"]
    check = {
        j["case"]: j["verdict"]
        for kind in ("runs", "pairs", "checks", "skipped", "files")
        for j in data[kind]
    }
    observed = contract["observed"]
    tests = contract["pytest"]
    assert tests.returncode == 1, tests.stdout + tests.stderr
    assert "Traceback" not in tests.stdout
    outcome = {"ok": "passed", "error": "failed", "skipped": "skipped"}
    items = {case: o for case, o in observed.items() if not case.endswith(" judged")}
    assert items == {case: outcome[v] for case, v in check.items()}
    for case, verdict in check.items():
        judged = observed.get(f"{case} judged")
        assert judged is None or judged[0] == verdict, case
    # Each failing run item's message is the fault's line.
    for label, (what, command) in FAULTS.items():
        assert f"{_run_id(label)}: error: {_fault_text(what, command)}" in tests.stdout
    assert sorted(c for c, o in items.items() if o == "failed") == sorted(map(_run_id, FAULTS))

    # The report (check's judgement read back): the same faults, one row each in its first
    # table, and every pair compared agreeing (none with a run at fault: not compared).
    (page,) = contract["report"].pages
    assert contract["report"].verdict == "FAIL" and page.ej is not None
    assert {f.subject: f.what for f in page.failures} == {
        label: f"error: {_fault_text(*FAULTS[label])}"
        for label in (
            "jax-raises",
            "jax-short-grad",
            "jax-vector-loss",
            "jax-float32-inside",
            "jax-float64-out@float32",
            "jax-x64-module@float32",
        )
    }
    rows = {row.variant: row for row in page.rows}
    for name in ("jax-raises", "jax-short-grad", "jax-vector-loss", "jax-float32-inside"):
        assert (rows[name].verdict, rows[name].note) == ("error", _fault_text(*FAULTS[name]))
    for name in ("jax-float64-out", "jax-x64-module"):
        assert rows[name].float32.verdict == "error"
        assert rows[name].float32.title == _fault_text(*FAULTS[f"{name}@float32"])
        assert Verdict(rows[name].verdict).failing
    assert {r.variant: r.verdict for r in page.rows if r.variant in CORRECT} == {
        "jax-loop": "ok",
        "jax-scan": "ok",
    }
    compared = [j for j in page.ej.of_kind("pair") if j.verdict != Verdict.SKIPPED]
    assert {str(j.verdict) for j in compared} == {"ok"}
    judged = [j for j in page.ej.judgements if j.kind != "run" and j.verdict != Verdict.SKIPPED]
    assert not {s for j in judged for s in j.subjects} & set(FAULTS)


def test_float32_runs_are_real_float32_runs(contract):
    """The correct variants' float32 runs computed in float32 (the module that turned
    float64 on globally did not make them float64 runs): their store files hold float32
    gradients and a float32 loss, and these differ from the float64 run's rounded to
    float32 (a float64 computation cast at the end would equal them)."""
    store = contract["root"] / "results" / EX / "gradients"
    for name in CORRECT:
        with (
            h5py.File(store / "float32" / f"{name}.h5", "r") as f32,
            h5py.File(store / f"{name}.h5", "r") as f64,
        ):
            assert f32.attrs["dtype"] == "float32" and f64.attrs["dtype"] == "float64"
            g32, g64 = f32["gradient"][()], f64["gradient"][()]
            loss32, loss64 = float(f32.attrs["loss"]), float(f64.attrs["loss"])
        assert g32.dtype == np.float32 and g64.dtype == np.float64
        assert float(np.float32(loss32)) == loss32  # a float32 number
        assert np.float32(loss64) != np.float32(loss32)
        assert np.any(g32 != g64.astype(np.float32))
        assert abs(loss32 - loss64) <= 1e-5 * abs(loss64)
        assert np.abs(g32 - g64).max() <= 1e-4 * np.abs(g64).max()
    # The variants at fault in float32 saved nothing there; the sound runs did.
    assert sorted(p.name for p in (store / "float32").iterdir()) == [
        "jax-float32-inside.h5",
        "jax-loop.h5",
        "jax-scan.h5",
    ]
    assert sorted(p.name for p in store.glob("*.h5")) == [
        "jax-float64-out.h5",
        "jax-loop.h5",
        "jax-scan.h5",
        "jax-x64-module.h5",
    ]
