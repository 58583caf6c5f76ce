"""`weanj run` as a user runs it (a subprocess), on inputs it has never seen.

On a fresh random inputs file (each example's reference module draws it: sizes,
parameters and scales), `weanj run EXAMPLE VARIANT --inputs F --<param> … --out O`
writes the loss and gradient(s) of DESIGN.md's mathematics: checked against the
example's independent reference to 1e-12 (loss) and 1e-11·max|g| per gradient array,
for one variant per family (the others are tied to it by the pair and reference tests).
A user's mistake gives one line on stderr and exit code 2, never a traceback.
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

from .cases import family_cases, reference_of


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
    module, algorithm = reference_of(example, name)
    seed = secrets.randbits(32)  # unseen by construction; reported on failure
    arrays, params = module.random_inputs(np.random.default_rng(seed))
    inputs = write_arrays(project / "unseen.h5", **arrays)
    out = project / "out" / "o.h5"
    flags = [x for k, v in params.items() for x in (f"--{k}", v)]

    r = weanj_cli("run", example, name, "--inputs", inputs, *flags, "--out", out, cwd=project)
    assert r.returncode == 0, f"seed {seed}: {r.stderr}"

    ex = weanj.example(example)
    loss_ref = module.loss(algorithm, arrays, params)
    g_ref = module.gradient(algorithm, arrays, params)
    with h5py.File(out, "r") as f:
        node = f["gradient"]
        stored = (
            {ex.wrt_names[0]: node[()]}
            if isinstance(node, h5py.Dataset)
            else {k: node[k][()] for k in node}
        )
        attrs = dict(f.attrs)
    loss = float(attrs["loss"])
    assert abs(loss - loss_ref) <= 1e-12 * abs(loss_ref), f"seed {seed}: {loss} vs {loss_ref}"
    assert sorted(stored) == sorted(g_ref), f"seed {seed}: arrays {sorted(stored)}"
    for k, g in stored.items():
        assert g.shape == g_ref[k].shape and g.dtype == np.float64, k
        rel = float(np.max(np.abs(g - g_ref[k]))) / float(np.max(np.abs(g_ref[k])))
        assert rel <= 1e-11, f"seed {seed}: {k}: max|Δg|/max|g| = {rel:.2e}"

    digest = hashlib.sha256(b"".join(arrays[a].astype("<f8").tobytes() for a in ex.arrays))
    assert attrs["inputs_sha256"] == digest.hexdigest()
    assert (attrs["variant"], attrs["example"]) == (name, example)
    assert {k: int(attrs[k]) for k in params} == params
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
