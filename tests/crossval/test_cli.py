"""`weanj run` as a user runs it (a subprocess), on inputs it has never seen.

Acceptance 2: on a fresh random inputs file, `weanj run EXAMPLE VARIANT --inputs F --K 13
--out O` writes the loss and gradient of DESIGN.md's mathematics (checked against the
numpy reference to 1e-11 relative). Acceptance 3: a user's mistake gives one line on
stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import subprocess
import sys

import h5py
import numpy as np
import pytest

import weanj

from . import reference
from .cases import algorithm_of, family_cases

N_UNSEEN, K_UNSEEN = 9, 13


def weanj_cli(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "WEANJ_ROOT": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "weanj", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def write_arrays(path, **arrays):
    """A bare HDF5 file with just the datasets, as a user would write one."""
    with h5py.File(path, "w") as f:
        for name, a in arrays.items():
            f.create_dataset(name, data=a)
    return path


@pytest.mark.parametrize(("example", "name"), family_cases())
def test_run_on_unseen_inputs_matches_reference(example, name, project):
    seed = secrets.randbits(32)  # unseen by construction; reported on failure
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((N_UNSEEN, N_UNSEEN)) * rng.uniform(0.1, 10)
    uobs = rng.standard_normal((N_UNSEEN, N_UNSEEN)) * rng.uniform(1e-3, 1e-1)
    inputs = write_arrays(project / "unseen.h5", theta=theta, uobs=uobs)
    out = project / "out" / "o.h5"

    r = weanj_cli(
        "run", example, name, "--inputs", inputs, "--K", K_UNSEEN, "--out", out, cwd=project
    )
    assert r.returncode == 0, f"seed {seed}: {r.stderr}"

    algorithm = algorithm_of(example, name)
    loss_ref = reference.loss(algorithm, theta, uobs, K_UNSEEN)
    g_ref = reference.adjoint_gradient(algorithm, theta, uobs, K_UNSEEN)
    with h5py.File(out, "r") as f:
        g = f["gradient"][()]
        attrs = dict(f.attrs)
    loss = float(attrs["loss"])
    assert abs(loss - loss_ref) <= 1e-11 * abs(loss_ref), f"seed {seed}: {loss} vs {loss_ref}"
    assert g.shape == g_ref.shape and g.dtype == np.float64
    rel = float(np.max(np.abs(g - g_ref))) / float(np.max(np.abs(g_ref)))
    assert rel <= 1e-11, f"seed {seed}: max|Δg|/max|g| = {rel:.2e}"

    digest = hashlib.sha256(theta.astype("<f8").tobytes() + uobs.astype("<f8").tobytes())
    assert attrs["inputs_sha256"] == digest.hexdigest()
    assert (attrs["variant"], attrs["example"], int(attrs["K"])) == (name, example, K_UNSEEN)
    assert attrs["dtype"] == "float64"
    # What it prints is what it wrote.
    printed = re.search(r"loss = (\S+)", r.stdout)
    assert printed and float(printed.group(1)) == pytest.approx(loss, rel=1e-14)
    # --out means the store is left alone.
    assert not (project / "results" / example / "gradients").exists()


def _mistakes():
    example = "02-gauss-seidel"
    name = weanj.variants(example)[0]
    return [
        pytest.param(
            ["run", example, "no-such-variant"],
            weanj.variants(example, available_only=False),
            id="unknown-variant",
        ),
        pytest.param(["run", example, name, "--K", "0"], ["K", "at least 1"], id="K-below-1"),
        pytest.param(
            ["run", example, name, "--inputs", "{mismatched}"],
            ["(5, 5)", "(4, 4)"],
            id="mismatched-shapes",
        ),
    ]


@pytest.mark.parametrize(("args", "mentions"), _mistakes())
def test_mistake_is_one_line_and_exit_2(args, mentions, project):
    mismatched = write_arrays(
        project / "mismatched.h5", theta=np.zeros((5, 5)), uobs=np.zeros((4, 4))
    )
    args = [a.replace("{mismatched}", str(mismatched)) for a in args]
    r = weanj_cli(*args, cwd=project)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for word in mentions:  # the line says what is wrong (and lists the known names)
        assert word in lines[0], lines[0]
    assert not (project / "results" / "02-gauss-seidel" / "gradients").exists()
