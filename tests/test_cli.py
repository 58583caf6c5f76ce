"""The `weanj inputs` and `weanj run` commands, and how every command reports a mistake:
one line on stderr, exit code 2, no traceback."""

from __future__ import annotations

import re

import numpy as np
import pytest

import weanj
from weanj._cli import main

from .helpers import (
    FIRST_LINE,
    PYTHON,
    assert_one_line_error,
    inputs_sha256,
    jacobi_loss_and_gradient,
    run_weanj,
    subprocess_env,
    write_h5,
)
from .listing import assert_error_with_list

EXAMPLES = (
    "01-jacobi",
    "02-gauss-seidel",
    "03-advection",
    "04-tridiagonal",
    "05-deposition",
    "06-signed-grid",
)
EX = "01-jacobi"


def _fails(capsys, argv, *fragments) -> str:
    """Run the CLI in this process; it must exit 2 with one stderr line holding `fragments`."""
    assert main(argv) == 2
    return assert_one_line_error(capsys.readouterr().err, *fragments)


def _fails_with_list(capsys, argv, fragments, heading, names) -> str:
    """Exit 2, one line holding `fragments` and the list `heading: names`."""
    assert main(argv) == 2
    return assert_error_with_list(capsys.readouterr().err, fragments, heading, names)


@pytest.mark.parametrize(
    "argv",
    [
        ["inputs", "verify", "03-nope"],
        ["inputs", "regenerate", "03-nope"],
        ["run", "03-nope", "jax-jacobi"],
    ],
    ids=["verify", "regenerate", "run"],
)
def test_unknown_example_lists_known_ones(project, capsys, argv):
    _fails_with_list(capsys, argv, ["unknown example '03-nope'"], "known examples", EXAMPLES)
    assert sorted(p.name for p in (project / "shared_inputs").iterdir()) == [
        f"{name}.h5" for name in EXAMPLES
    ]


def test_unknown_variant_lists_known_ones(project, capsys):
    known = weanj.variants("01-jacobi", available_only=False)
    _fails_with_list(
        capsys, ["run", "01-jacobi", "jax-nope"], ["jax-nope"], "known variants", known
    )


@pytest.mark.parametrize("K", ["0", "-3"])
def test_run_rejects_K_below_one(project, capsys, K):
    _fails(capsys, ["run", "01-jacobi", "jax-jacobi", "--K", K], f"K must be at least 1, got {K}")
    assert not (project / "results" / "01-jacobi" / "gradients").exists()


def test_run_rejects_bad_inputs_files(project, capsys, tmp_path):
    rng = np.random.default_rng(0)
    square = rng.standard_normal((6, 6))
    mismatched = write_h5(tmp_path / "mismatched.h5", theta=square, uobs=square[:5, :5])
    _fails(
        capsys,
        ["run", "01-jacobi", "jax-jacobi", "--inputs", str(mismatched)],
        str(mismatched),
        "uobs has shape (5, 5)",
        "(6, 6)",
    )
    integers = write_h5(tmp_path / "int.h5", theta=np.ones((6, 6), dtype=np.int64), uobs=square)
    _fails(
        capsys,
        ["run", "01-jacobi", "jax-jacobi", "--inputs", str(integers)],
        "theta has dtype int64",
    )
    nan = square.copy()
    nan[2, 3] = np.nan
    nonfinite = write_h5(tmp_path / "nan.h5", theta=square, uobs=nan)
    _fails(
        capsys, ["run", "01-jacobi", "jax-jacobi", "--inputs", str(nonfinite)], "uobs has 1 NaN/Inf"
    )
    _fails(
        capsys,
        ["run", "01-jacobi", "jax-jacobi", "--inputs", str(tmp_path / "absent.h5")],
        "does not exist",
    )
    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    _fails(capsys, ["run", "01-jacobi", "jax-jacobi", "--inputs", str(garbage)], "cannot read")
    assert not (project / "results" / "01-jacobi" / "gradients").exists()


def test_run_reports_a_corrupt_shared_file(project, capsys):
    (project / "shared_inputs" / "01-jacobi.h5").write_bytes(b"garbage")
    _fails(capsys, ["run", "01-jacobi", "jax-jacobi"], "weanj inputs regenerate 01-jacobi")


def test_run_writes_a_readable_gradient(project, capsys, tmp_path):
    out = tmp_path / "O.h5"
    assert main(["run", "01-jacobi", "jax-jacobi", "--out", str(out)]) == 0
    stdout = capsys.readouterr().out

    d = weanj.load_inputs("01-jacobi")
    loss, gradient = jacobi_loss_and_gradient(d["theta"], d["uobs"], d["K"])
    stored = weanj.load_gradient("01-jacobi", "jax-jacobi", path=out)
    assert stored.path == out
    assert (stored.variant, stored.family, stored.example.name) == (
        "jax-jacobi",
        "jacobi",
        "01-jacobi",
    )
    assert stored.params == {"K": d["K"]} and stored.dtype == "float64"
    assert stored.inputs_sha256 == d["sha256"]
    assert stored.loss == pytest.approx(loss, rel=1e-12)
    scale = np.abs(gradient).max()
    assert np.abs(stored.gradient - gradient).max() <= 1e-11 * scale
    printed = float(re.search(r"loss = (\S+)", stdout).group(1))
    assert printed == pytest.approx(loss, rel=1e-12)
    assert f"saved {out}" in stdout
    # --out writes there only, not into the store.
    assert not (project / "results" / "01-jacobi" / "gradients").exists()


def test_run_with_own_inputs_and_K(project, capsys, tmp_path):
    rng = np.random.default_rng(4)
    theta, uobs = rng.standard_normal((8, 8)), 0.01 * rng.standard_normal((8, 8))
    inputs = write_h5(tmp_path / "mine.h5", theta=theta, uobs=uobs)
    assert main(["run", "01-jacobi", "jax-jacobi", "--inputs", str(inputs), "--K", "3"]) == 0
    capsys.readouterr()
    loss, gradient = jacobi_loss_and_gradient(theta, uobs, 3)
    # Computed on other inputs than the shared ones: kept apart from the store, in runs/.
    assert not (project / "results" / "01-jacobi" / "gradients").exists()
    (path,) = (project / "results" / "01-jacobi" / "runs").glob("jax-jacobi-*.h5")
    digest = inputs_sha256({"theta": theta, "uobs": uobs})
    assert path.name == f"jax-jacobi-inputs-{digest[:12]}-K3.h5"
    stored = weanj.load_gradient("01-jacobi", "jax-jacobi", path=path, allow_stale=True)
    assert stored.params == {"K": 3} and stored.loss == pytest.approx(loss, rel=1e-12)
    assert np.abs(stored.gradient - gradient).max() <= 1e-11 * np.abs(gradient).max()


def test_mistakes_in_a_fresh_process_have_no_traceback(project):
    result = run_weanj("run", "01-jacobi", "jax-jacobi", "--K", "0", root=project)
    assert result.returncode == 2
    assert_one_line_error(result.stderr, "K must be at least 1")
    assert result.stdout == ""


@pytest.mark.parametrize("word", ["--k", "--KK", "--K_"])
def test_a_mistyped_parameter_names_the_one_meant(project, capsys, word):
    line = _fails(
        capsys,
        ["run", "01-jacobi", "jax-jacobi", word, "3"],
        f"01-jacobi has no parameter {word[2:]}",
    )
    assert "did you mean --K?" in line


def test_parameters_are_typed_on_the_command_line(project, capsys):
    # An int parameter takes no 2.5 (nor 3.0: no silent truncation).
    _fails(
        capsys, ["run", "01-jacobi", "jax-jacobi", "--K", "2.5"], "--K takes an integer, got '2.5'"
    )
    _fails(capsys, ["run", "01-jacobi", "jax-jacobi", "--K", "3.0"], "--K takes an integer")
    _fails(capsys, ["run", "01-jacobi", "jax-jacobi", "--K"], "--K needs a value")
    _fails(capsys, ["run", "01-jacobi", "jax-jacobi", "--K", "3", "--K", "4"], "--K is given twice")
    assert not (project / "results" / "01-jacobi" / "gradients").exists()


def test_a_mistyped_option_is_one_line_naming_the_option_meant(project, capsys):
    """Was argparse's usage block and exit 2 (SystemExit); now one line like every other
    mistake (`_parser.Parser.error`), still exit 2, with the option meant."""
    line = _fails(capsys, ["check", "--dtpye", "float64"], "weanj check: unrecognized arguments")
    assert "--dtpye" in line and line.endswith("did you mean --dtype? (see weanj check --help)")
    assert "usage:" not in line
    line = _fails(capsys, ["check", "--dtype", "float16"], "argument --dtype: invalid choice")
    assert "'float16' (choose from 'float64', 'float32', 'both')" in line
    _fails(capsys, ["nope"], "argument COMMAND: invalid choice: 'nope'")
    _fails(capsys, [], "the following arguments are required: COMMAND")
    assert not (project / "results" / "01-jacobi" / "gradients").exists()


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            ["bench", "01-jacobi", "--budget-s", "inf"],
            "argument --budget-s: expected a finite number > 0, got 'inf'",
        ),
        (
            ["bench", "01-jacobi", "--samples", "0"],
            "argument --samples: expected an integer >= 1, got '0'",
        ),
        (
            ["check", "--timeout", "-1"],
            "argument --timeout: expected a number of seconds >= 0 (0: no limit), got '-1'",
        ),
        (
            ["run", "01-jacobi", "jax-jacobi", "--timeout", "inf"],
            "argument --timeout: expected a number of seconds >= 0 (0: no limit), got 'inf'",
        ),
    ],
    ids=["budget-inf", "samples-0", "check-timeout-negative", "run-timeout-inf"],
)
def test_absurd_option_values_are_refused_by_the_parser(project, capsys, argv, words):
    """(from test_faults) Was SystemExit(2) with the usage first; now main's exit 2 and
    the one line."""
    line = _fails(capsys, argv, words)
    assert line.endswith(f"{words} (see weanj {argv[0]} --help)")


# `--help`, `--version` and `new` answer before any JAX or example module is imported.
_LIGHT = """
import sys
from weanj._cli import main
for argv in (["--help"], ["--version"], ["check", "--help"], ["bench", "--help"]):
    try:
        main(argv)
    except SystemExit as e:
        assert e.code == 0, (argv, e.code)
assert main(["new", "11-mine"]) == 0
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "jaxlib", "matplotlib")
               or m.startswith("weanj.examples"))
print("heavy:", heavy)
"""


def test_help_version_and_new_import_no_jax(tmp_path):
    import subprocess

    r = subprocess.run(
        [PYTHON, "-c", _LIGHT],
        cwd=tmp_path,
        env={k: v for k, v in subprocess_env().items() if k != "WEANJ_ROOT"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert f"weanj {weanj.__version__}\n" in r.stdout and "usage: weanj bench" in r.stdout
    assert r.stdout.strip().splitlines()[-1] == "heavy: []"
    assert (tmp_path / "examples" / "mine.py").is_file()


# --- no option is ever taken by a prefix (issue 34) --------------------------------------------

RD = "96-rd"


def _rd_loss(x, y, T, D):
    import jax.numpy as jnp

    return D * T * jnp.sum(x**2) + jnp.sum(x * y)


@pytest.fixture
def rd(project):
    """`96-rd` with the parameters of issue 34's example: T (steps) and D (a diffusivity),
    whose lower-case prefixes `--t` and `--d` argparse used to read as `--timeout` and
    `--dtype`."""
    from weanj import _registry

    ex = weanj.register_example(
        weanj.Example(
            name=RD,
            arrays=(weanj.Array("x", shape=("n",)), weanj.Array("y", shape=("n",))),
            wrt="x",
            params=(weanj.Param("T", 50), weanj.Param("D", 0.1, minimum=0.0)),
            generate=lambda seed: {
                "x": np.random.default_rng(seed).standard_normal(6),
                "y": np.random.default_rng(seed + 1).standard_normal(6),
            },
        )
    )
    weanj.jax_variant(ex, "jax-rd", family="rd", loss=_rd_loss)
    weanj.write_inputs(RD)
    yield ex
    _registry.unregister_example(RD)


@pytest.mark.parametrize(
    "words, meant",
    [(["--t", "30"], "--T"), (["--d", "0.3"], "--D"), (["--t=30"], "--T"), (["--d=0.3"], "--D")],
    ids=["t", "d", "t=", "d="],
)
def test_a_lower_case_parameter_is_refused_naming_the_parameter(rd, project, capsys, words, meant):
    """Issue 34, acceptance 1: `weanj run 11-rd jax-scan --t 30` ran with T = 50, as
    `--timeout 30`, saved the result and exited 0."""
    word = words[0].split("=")[0]
    line = _fails(capsys, ["run", RD, "jax-rd", *words], f"{RD} has no parameter {word[2:]} ")
    assert f"did you mean {meant}?" in line
    assert not (project / "results" / RD).exists()  # nothing ran, nothing saved
    # The parameter itself, spelled as declared: run, and recorded in the file.
    assert main(["run", RD, "jax-rd", meant, words[-1].split("=")[-1]]) == 0
    out = capsys.readouterr().out
    (path,) = (project / "results" / RD / "runs").glob("jax-rd-*.h5")
    assert f"saved {path}" in out
    stored = weanj.load_gradient(RD, "jax-rd", path=path, allow_stale=True)
    expected = {"T": 30, "D": 0.1} if meant == "--T" else {"T": 50, "D": 0.3}
    assert stored.params == expected
    x, y = (weanj.load_inputs(RD)[k] for k in ("x", "y"))
    loss = expected["D"] * expected["T"] * np.sum(x**2) + np.sum(x * y)
    assert stored.loss == pytest.approx(loss, rel=1e-14)


# Positional words each command needs, so that only the option word can be refused.
_POSITIONALS = {
    "": ["list"],  # weanj's own options go before the command
    "list": [],
    "new": ["11-new"],
    "inputs": ["verify"],
    "run": ["01-jacobi", "jax-jacobi"],
    "diff": ["01-jacobi"],
    "check": [],
    "bench": ["01-jacobi"],
    "plot": ["01-jacobi"],
    "report": [],
    "bisect": ["01-jacobi", "jax-jacobi", "jax-jacobi-adjoint"],
    "fuzz": ["01-jacobi"],
    "clean": ["01-jacobi"],
}
# A value each option would accept, so that taking the prefix for it would run the command.
_VALUES = {
    "--variants": ["jax-jacobi"],
    "--over": ["K", "3"],
    "--memory-over": ["K", "3"],
    "--pairs": ["jax-jacobi", "jax-jacobi-adjoint"],
    "--inputs": ["mine.h5"],
    "--out": ["out.h5"],
}


def _every_prefix():
    """`(command, option, prefix, value words)` for every proper prefix (at least one
    letter after `--`) of every long option of weanj and of each subcommand, except the
    prefixes that are options themselves (`--device` of `--devices`)."""
    import argparse

    from weanj._cli._parser import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for command, p in [("", parser), *sub.choices.items()]:
        actions = {o: a for a in p._actions for o in a.option_strings if o.startswith("--")}
        for option, action in actions.items():
            if action.nargs == 0:  # a flag: --force, --json, --help
                value = []
            elif action.choices:
                value = [str(next(iter(action.choices)))]
            else:
                value = _VALUES.get(option, ["1"])
            for k in range(3, len(option)):
                if option[:k] not in actions:
                    yield command, option, option[:k], value


def test_no_option_of_any_command_is_taken_by_a_prefix(
    project, capsys, monkeypatch, tmp_path_factory
):
    """Issue 34, acceptance 1: every proper prefix of every long option of every
    subcommand (from the parser itself), as `--pre V` and as `--pre=V`, is refused in one
    line naming it, exit 2, and nothing runs or is written."""
    here = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(here)  # `weanj new` would write here
    before = sorted(project.rglob("*"))
    options: dict[str, set[str]] = {}
    for command, option, _, _ in _every_prefix():
        options.setdefault(command, set()).add(option)

    def unambiguous(command, prefix):
        return len([o for o in options[command] if o.startswith(prefix)]) == 1

    tried = set()
    for command, option, prefix, value in _every_prefix():
        head = [command, *_POSITIONALS[command]] if command else _POSITIONALS[command]
        for words in ([prefix, *value], [f"{prefix}={value[0]}" if value else f"{prefix}=1"]):
            argv = [*head, *words] if command else [*words, *head]
            try:
                code = main(argv)
            except SystemExit as e:  # --help or --version taken by a prefix
                code = ("SystemExit", e.code)
            out, err = capsys.readouterr()
            assert code == 2 and out == "", (argv, code, out)
            line = assert_one_line_error(err, prefix)
            if command and len(prefix) > 3 and unambiguous(command, prefix):
                # a flag's prefix alone, where parameters may follow, is a parameter word
                # without its value: refused as such
                flag_alone = words == [prefix] and f"{prefix} needs a value" in line
                assert f"did you mean {option}?" in line or flag_alone, (argv, line)
        tried.add((command, option))
    # every subcommand's options were walked, weanj's own too
    assert {c for c, _ in tried} == set(_POSITIONALS)
    assert {("run", "--timeout"), ("check", "--dtype"), ("", "--version")} <= tried
    assert sorted(project.rglob("*")) == before and list(here.iterdir()) == []


# --- every kind of mistake: a short first line -------------------------------------------------


def _error_lines(capsys, argv) -> tuple[int, list[str]]:
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, err.strip().splitlines()


def test_every_error_has_a_short_first_line(project, capsys, tmp_path):
    """One of each kind of error the command line gives, the list (if any) below it."""
    nan = tmp_path / "nan.h5"
    theta = np.ones((4, 4))
    theta[1, 2] = np.nan
    write_h5(nan, theta=theta, uobs=np.ones((4, 4)))
    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(b"not HDF5" * 100)
    other = project / "shared_inputs" / "02-gauss-seidel.h5"
    stale = weanj.save_gradient(
        EX,
        "jax-jacobi",
        np.ones((64, 64)),
        params={"K": 3},
        path=project / "results" / EX / "runs" / "x.h5",
    )
    run = ["run", EX, "jax-jacobi"]
    cases = [
        (["check", "no-such-example"], "unknown example 'no-such-example'"),
        (["run", EX, "no-such-variant"], "unknown variant 'no-such-variant' of 01-jacobi"),
        ([*run, "--Q", "3"], "01-jacobi has no parameter Q"),
        ([*run, "--K", "0"], "K must be at least 1, got 0"),
        ([*run, "--K", "3.5"], "--K takes an integer, got '3.5'"),
        ([*run, "--inputs", str(garbage)], f"cannot read inputs file {garbage}"),
        ([*run, "--inputs", str(tmp_path / "missing.h5")], "does not exist"),
        (
            [*run, "--inputs", str(nan)],
            "theta has 1 NaN/Inf value(s), the first at numpy (1, 2) / Julia (2, 3)",
        ),
        (
            [*run, "--inputs", str(other)],
            f"inputs file {other} is for example '02-gauss-seidel', not 01-jacobi",
        ),
        (["run", EX, "julia-jacobi"], "variant 'julia-jacobi' is unavailable here"),
        (["bench", EX, "--over", "Q", "1"], "has no parameter or dimension Q"),
        ([*run, "--out", str(project / "results" / "x.h5")], "weanj writes only"),
    ]
    for argv, words in cases:
        code, lines = _error_lines(capsys, argv)
        assert code == 2, (argv, lines)
        at = next(i for i, line in enumerate(lines) if line.startswith("weanj: error: "))
        first, below = lines[at], [line for line in lines[at + 1 :] if line.startswith("  ")]
        # a long path may push the rest of the sentence to an indented next line
        message = " ".join([first, *(line.strip() for line in below)])
        assert words in message, (words, message)
        assert len(first) <= FIRST_LINE, (len(first), first)
    # the notebook's stale file: the keys' details below a short first line
    with pytest.raises(weanj.StaleGradientError) as info:
        weanj.load_gradient(EX, "jax-jacobi", path=stale)
    first, *rest = str(info.value).splitlines()
    assert len(first) <= 200 and "recompute it with `weanj run 01-jacobi jax-jacobi`" in first
    assert rest and "K=3" in rest[0] and "K=20" in rest[0]
