"""Names that can be followed: every run a view prints (`V@float32`, `V@tpu`,
`V@float32@tpu`) is taken by `weanj bisect`, `weanj fuzz --pairs` and `weanj diff`, as
that variant in that dtype, on that device; `bisect` and `fuzz` take `--dtype`.

The example smooths x S times (default 6); `jax-coarse` is a port with a float32-only bug:
its float32 run rounds the iterate to bfloat16 after each sweep from the fourth on, its
float64 run is the others'. So every float64 pair agrees, and `weanj check` fails the
float32 pair `jax-coarse~jax-coarse@float32`: `fuzz` (float64) says ok there, `fuzz
--dtype float32` fails it on the shared inputs as check does, under the same case id and
with the same numbers, and `bisect jax-coarse jax-coarse@float32` finds S = 4. Where
the bug starts is checked independently of weanj, by a numpy emulation of the port.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._cli import main
from weanj._model._verdicts import CaseKind

from .helpers import assert_one_line_error
from .toy_kernels import (
    COARSE_FROM,
    random_xy,
    smooth_coarse_late,
    smooth_loop,
    smooth_reference,
    smooth_scan,
    xy_example,
)

EX = "95-coarse"
PAIR32 = f"{EX}::s::jax-coarse~jax-coarse@float32"


@pytest.fixture
def coarse(project):
    """The example, registered in this process, its shared inputs written (n = 16, S = 6)."""
    ex = weanj.register_example(
        xy_example(
            EX,
            shapes={"x": ("n",), "y": ("n",)},
            params=(weanj.Param("S", default=6, maximum=12),),
            generate=lambda seed: random_xy(seed, 16),
        )
    )
    weanj.jax_variant(ex, "jax-loop", family="s", loss=smooth_loop)
    weanj.jax_variant(ex, "jax-scan", family="s", loss=smooth_scan)
    weanj.jax_variant(ex, "jax-coarse", family="s", loss=smooth_coarse_late)
    weanj.jax_variant(
        ex, "jax-wide", family="s", loss=smooth_loop, dtypes=("float64",)
    )  # float64 only
    weanj.write_inputs(EX)
    yield ex
    _registry.unregister_example(EX)


def _coarse_numpy(x, y, S):
    """`smooth_coarse_late` in float32 by hand (numpy, ml_dtypes' bfloat16): the forward
    sweeps with the rounding, then the adjoint, through which a rounding passes as the
    identity (what differentiating `astype` gives)."""
    x, y = x.astype(np.float32), y.astype(np.float32)

    def M(v):
        return (np.roll(v, 1) + 2 * v + np.roll(v, -1)) / np.float32(4)

    for s in range(1, S + 1):
        x = M(x)
        if s >= COARSE_FROM:
            x = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    g = 2 * (x - y)
    for _ in range(S):
        g = M(g)
    return g


def test_where_the_float32_bug_starts_independently_of_weanj(coarse):
    """The premise: against the float64 gradient, the emulated float32 port is within
    float32's rounding up to S = 3 and beyond the float32 tolerance (1e-4) from S = 4."""
    shared = weanj.load_inputs(EX)
    for S in range(1, 8):
        _, exact = smooth_reference(shared["x"], shared["y"], S)
        rel = np.max(np.abs(_coarse_numpy(shared["x"], shared["y"], S) - exact)) / np.max(
            np.abs(exact)
        )
        assert (rel > 1e-4) if S >= COARSE_FROM else (rel < 1e-6), (S, rel)


def test_fuzz_in_float32_fails_where_check_fails_with_checks_numbers(coarse, capsys):
    judgement = weanj.check(EX, say=lambda s: None)
    by_case = judgement[EX].by_case()
    assert by_case[PAIR32].verdict == weanj.Verdict.FAIL
    float64_pairs = [j for j in judgement[EX].of_kind(CaseKind.PAIR) if "@" not in j.case]
    assert float64_pairs and all(j.verdict == weanj.Verdict.OK for j in float64_pairs)
    # the end of check names the float32 run, and a bisect that takes its name
    (suspect,) = [x for x in judgement.lines() if x.startswith(f"  {EX} family s: ")]
    assert suspect.startswith(f"  {EX} family s: jax-coarse@float32 (FAIL vs jax-coarse: x)")
    assert suspect.endswith(f"`weanj bisect {EX} jax-coarse jax-coarse@float32`"), suspect

    # float64 (the default): the pairs check passes; nothing to find
    assert main(["fuzz", EX, "--seed", "1", "--max-examples", "2"]) == 0
    capsys.readouterr()

    assert main(["fuzz", EX, "--dtype", "float32", "--seed", "1", "--max-examples", "2"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"fuzz {EX}: jax-loop~jax-loop@float32, jax-scan~jax-scan@float32, "
        "jax-coarse~jax-coarse@float32"
    ), out
    assert "  skipped jax-wide@float32: jax-wide supports float64 only" in out
    assert (
        "  draw 1: n = 16, S = 6, the shared inputs: jax-coarse~jax-coarse@float32 disagree" in out
    )
    line = next(x for x in out.splitlines() if x.strip().startswith(f"{PAIR32}: FAIL"))
    # the same judge as check's: the same numbers, under the float32 tolerance
    c = by_case[PAIR32].comparison
    assert f"max|Δ|/max|g_ref| = {c.max_rel:.2e} (tolerance 0.0001)" in line, (line, c.max_rel)
    shown = re.search(r"case written to (\S+)", out).group(1)
    assert f"weanj run {EX} jax-coarse --dtype float32 --inputs {shown}" in out
    assert f"weanj bisect {EX} jax-coarse jax-coarse@float32 --inputs {shown}" in out

    # the pair named as the views name it: the same finding
    argv = ["fuzz", EX, "--pairs", "jax-coarse", "jax-coarse@float32", "--dtype", "float32"]
    assert main([*argv, "--seed", "1", "--max-examples", "2"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"fuzz {EX}: jax-coarse~jax-coarse@float32", out
    assert f"{PAIR32}: FAIL: max|Δ|/max|g_ref| = {c.max_rel:.2e} (tolerance 0.0001)" in out
    assert "--pairs jax-coarse jax-coarse@float32 --seed" not in out  # seeded: no replay line


def test_bisect_follows_the_float32_run(coarse, capsys, project):
    assert main(["bisect", EX, "jax-coarse", "jax-coarse@float32"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"bisect {EX}: jax-coarse vs jax-coarse@float32 (s) on the shared inputs (n = 16, S = 6)"
    ), out
    tried = re.findall(r"^  S = (\d+): (\w+)", out, re.MULTILINE)
    assert tried == [(str(s), "ok" if s < COARSE_FROM else "FAIL") for s in range(1, 9)], out
    assert f"first disagreement at S = {COARSE_FROM} (S = 3 agrees; S tried: 1…8):" in out
    assert f"{PAIR32}: FAIL" in out and "(tolerance 0.0001)" in out
    case = project / "results" / EX / "cases" / "bisect-jax-coarse-jax-coarse@float32-S4.h5"
    assert case.is_file(), out
    shown = f"results/{EX}/cases/{case.name}"
    assert f"  weanj run {EX} jax-coarse --dtype float32 --inputs {shown}" in out
    assert f"  weanj bisect {EX} jax-coarse jax-coarse@float32 --inputs {shown}" in out
    # its reproduce line judges the pair on the case alone: the same verdict
    assert main(["bisect", EX, "jax-coarse", "jax-coarse@float32", "--inputs", str(case)]) == 1
    assert f"{PAIR32}: FAIL" in capsys.readouterr().out


def test_bisect_with_dtype_runs_both_ports_in_it(coarse, capsys):
    """`A B --dtype float32`: both sides in float32 (the names give no dtype)."""
    assert main(["bisect", EX, "jax-loop", "jax-coarse", "--dtype", "float32"]) == 1
    out = capsys.readouterr().out
    assert "jax-loop@float32 vs jax-coarse@float32 (s)" in out.splitlines()[0], out
    assert f"first disagreement at S = {COARSE_FROM} (S = 3 agrees; S tried: 1…8):" in out
    assert f"{EX}::s::jax-loop@float32~jax-coarse@float32: FAIL" in out
    # in float64 (the default) the two agree at every S tried
    assert main(["bisect", EX, "jax-loop", "jax-coarse", "--S", "12"]) == 0
    out = capsys.readouterr().out
    assert "jax-loop and jax-coarse agree at every S tried (S = 1…8, 12); the 3 value(s)" in out


def test_diff_follows_the_stored_runs_named(coarse, capsys):
    judgement = weanj.check(EX, say=lambda s: None)
    c = judgement[EX].by_case()[PAIR32].comparison
    assert main(["diff", EX, "jax-coarse", "jax-coarse@float32"]) == 1
    out = capsys.readouterr().out
    pairs = re.findall(r"^  (jax-\S+) +(jax-\S+) +x +", out, re.MULTILINE)
    assert pairs == [("jax-coarse", "jax-coarse@float32")], out
    assert f"{c.max_rel:.2e}" in out
    assert "only the runs named: jax-coarse, jax-coarse@float32" in out
    # two float64 runs: their pair, ok
    assert main(["diff", EX, "jax-loop", "jax-scan"]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^  (jax-\S+) +(jax-\S+) +x +", out, re.MULTILINE) == [
        ("jax-loop", "jax-scan")
    ]


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (("bisect", EX, "jax-loop", "jax-loop@float16"), "@float16 is not a dtype"),
        (("bisect", EX, "jax-loop", "jax-wide@float32"), "jax-wide does not run in float32"),
        (("bisect", EX, "jax-loop", "jax-loop", "--dtype", "float32"), "two different"),
        (("bisect", EX, "jax-loop@float32", "jax-loop@float32"), "two different"),
        (("bisect", EX, "jax-loop", "jax-scan@gpu", "--device", "tpu"), "runs on gpu"),
        (("bisect", EX, "jax-loop", "jax-nope@float32"), "unknown variant 'jax-nope@float32'"),
        (("fuzz", EX, "--pairs", "jax-loop", "jax-loop@float16"), "@float16 is not a dtype"),
        # a flag the names contradict is refused, never dropped (both sides ran in float64)
        (
            ("bisect", EX, "jax-loop@float64", "jax-coarse", "--dtype", "float32"),
            "--dtype float32 contradicts jax-loop@float64 (a bare name beside it runs in float64)",
        ),
        (
            ("fuzz", EX, "--pairs", "jax-loop", "jax-coarse@float64", "--dtype", "float32"),
            "name each run's dtype (jax-loop@float32) or leave --dtype out",
        ),
        (("diff", EX, "jax-loop@tpu"), "the store holds CPU runs only"),
        (("diff", EX, "jax-coarse@float32"), "no stored run jax-coarse@float32"),
    ],
)
def test_a_name_that_names_no_run_is_one_line(coarse, capsys, argv, fragment):
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    head, *listed = err.strip().splitlines()  # a list of known names may follow
    assert not out and all(line.startswith("  ") for line in listed), (out, err)
    assert_one_line_error(head, fragment)


def test_a_run_on_a_device_absent_here_is_an_error_not_an_agreement(coarse, capsys, monkeypatch):
    """`A B@tpu` where no TPU is: B cannot run, which no input would change: one line,
    exit 2, never `ok` at every value tried."""
    monkeypatch.delenv("WEANJ_STANDIN_DEVICE", raising=False)
    assert main(["bisect", EX, "jax-loop", "jax-scan@tpu"]) == 2
    out, err = capsys.readouterr()
    assert_one_line_error(err.strip(), "jax-scan@tpu cannot run here")
    assert "agree" not in out


# --- nothing to search -----------------------------------------------------------------------

FLAT = "95-flat"


@pytest.fixture
def flat(project):
    """An example with no int parameter and no declared Sizes: nothing for bisect to go over."""
    import jax.numpy as jnp

    ex = weanj.register_example(xy_example(FLAT, generate=lambda seed: random_xy(seed, 5)))
    weanj.jax_variant(ex, "jax-sq", family="q", loss=lambda x, y: jnp.sum((x - y) ** 2))
    weanj.jax_variant(
        ex, "jax-expanded", family="q", loss=lambda x, y: jnp.sum(x * x - 2 * x * y + y * y)
    )
    weanj.write_inputs(FLAT)
    yield ex
    _registry.unregister_example(FLAT)


def test_bisect_with_nothing_to_search_says_so_in_one_line(flat, capsys, project):
    assert main(["bisect", FLAT, "jax-sq", "jax-expanded"]) == 2
    out, err = capsys.readouterr()
    assert not out, out  # no `ok` for the shared inputs: nothing was searched
    assert_one_line_error(
        err.strip(),
        f"bisect {FLAT}: nothing to search: it has no int parameter and declares no Sizes",
        f"weanj bisect {FLAT} jax-sq jax-expanded --inputs FILE",
    )
    assert not (project / "results" / FLAT / "cases").exists()
    # `--inputs` still judges the pair on one file
    shared = Path(project) / "shared_inputs" / f"{FLAT}.h5"
    assert main(["bisect", FLAT, "jax-sq", "jax-expanded", "--inputs", str(shared)]) == 0
    out = capsys.readouterr().out
    assert f"jax-sq vs jax-expanded (q) on shared_inputs/{FLAT}.h5 (x (5,), y (5,)): ok" in out


def test_the_replay_command_names_the_runs_and_the_dtype(coarse):
    """An unseeded run's replay line: its pairs by their runs' names, or the `--dtype` and
    `--device` of the default pairs; each line parses as the command line it is."""
    from weanj._cli._parser import parse
    from weanj._pipeline.search._fuzz_draws import replay_command
    from weanj._run_names import chosen_pairs

    cat = _registry.catalog(EX)
    pairs = chosen_pairs(cat, [("jax-loop", "jax-coarse")], "--pairs", dtype="float32")
    assert [(a.label, b.label) for a, b in pairs] == [("jax-loop@float32", "jax-coarse@float32")]
    named = replay_command(coarse, 7, pairs)
    assert named == f"weanj fuzz {EX} --pairs jax-loop@float32 jax-coarse@float32 --seed 7"
    default = replay_command(coarse, 7, None, 10, dtype="float32", device="tpu")
    assert default == f"weanj fuzz {EX} --dtype float32 --device tpu --max-examples 10 --seed 7"
    for line in (named, default):
        args, _ = parse(line.split()[1:])
        assert args.command == "fuzz" and args.seed == 7
