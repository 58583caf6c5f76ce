"""The `weanj inputs` and `weanj run` commands, and how every command reports a mistake:
one line on stderr, exit code 2, no traceback."""

from __future__ import annotations

import re

import numpy as np
import pytest

import weanj
from weanj._cli import main

from .helpers import (
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


def test_a_mistyped_option_prints_the_usage_and_the_option_meant(project, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--dtpye", "float64"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith("usage: weanj check")
    assert err.strip().splitlines()[-1].endswith("did you mean --dtype?")
    with pytest.raises(SystemExit):
        main(["check", "--dtype", "float16"])
    assert "invalid choice: 'float16'" in capsys.readouterr().err


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
    assert "weanj 0.2.0" in r.stdout and "usage: weanj bench" in r.stdout
    assert r.stdout.strip().splitlines()[-1] == "heavy: []"
    assert (tmp_path / "examples" / "mine.py").is_file()
