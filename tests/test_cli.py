"""The `weanj inputs` and `weanj run` commands, and how every command reports a mistake:
one line on stderr, exit code 2, no traceback."""

from __future__ import annotations

import re

import numpy as np
import pytest

import weanj
from weanj._cli import main

from .helpers import (
    assert_one_line_error,
    jacobi_loss_and_gradient,
    run_weanj,
    sha256_of,
    write_h5,
)

EXAMPLES = ("01-jacobi", "02-gauss-seidel", "03-advection", "04-tridiagonal", "05-deposition")


def _fails(capsys, argv, *fragments) -> str:
    """Run the CLI in this process; it must exit 2 with one stderr line holding `fragments`."""
    assert main(argv) == 2
    return assert_one_line_error(capsys.readouterr().err, *fragments)


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
    _fails(capsys, argv, "03-nope", *EXAMPLES)
    assert sorted(p.name for p in (project / "shared_inputs").iterdir()) == [
        f"{name}.h5" for name in EXAMPLES
    ]


def test_unknown_variant_lists_known_ones(project, capsys):
    known = weanj.variants("01-jacobi", available_only=False)
    _fails(capsys, ["run", "01-jacobi", "jax-nope"], "jax-nope", *known)


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
    assert (stored.variant, stored.family, stored.example) == ("jax-jacobi", "jacobi", "01-jacobi")
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
    assert path.name == f"jax-jacobi-inputs-{sha256_of(theta, uobs)[:12]}-K3.h5"
    stored = weanj.load_gradient("01-jacobi", "jax-jacobi", path=path, allow_stale=True)
    assert stored.params == {"K": 3} and stored.loss == pytest.approx(loss, rel=1e-12)
    assert np.abs(stored.gradient - gradient).max() <= 1e-11 * np.abs(gradient).max()


def test_mistakes_in_a_fresh_process_have_no_traceback(project):
    result = run_weanj("run", "01-jacobi", "jax-jacobi", "--K", "0", root=project)
    assert result.returncode == 2
    assert_one_line_error(result.stderr, "K must be at least 1")
    assert result.stdout == ""
