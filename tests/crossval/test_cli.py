"""`weanj run` as a user runs it (the command line's `main`, in this process; one mistake
in a fresh process), on inputs it has never seen.

On a fresh random inputs file (each example's reference module draws it: sizes,
parameters and scales), `weanj run EXAMPLE VARIANT --inputs F --<param> … --out O`
writes the loss and gradient(s) of docs/DESIGN.md's mathematics: checked against the
example's independent reference to 1e-12 (loss) and 1e-11·max|g| per gradient array,
for one variant per family (the others are tied to it by the pair and reference tests);
the fast suite runs one per example, `pytest -m slow` the other families.
A user's mistake gives one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import re
import secrets
import subprocess

import h5py
import numpy as np
import pytest

import weanj

from ..helpers import inputs_sha256, provenance_key, run_weanj, weanj_main, write_h5
from .cases import family_cases, first_of_each_example, reference_of


def weanj_cli(*args, cwd, here: bool = False) -> subprocess.CompletedProcess:
    """`python -m weanj ARGS` in the project `cwd`, as its root; with `here`, in this
    process (`weanj_main`)."""
    if here:
        return weanj_main(*args, root=cwd, cwd=cwd)
    return run_weanj(*args, root=cwd, cwd=cwd, timeout=300)


# 03, 04 and 05 run `weanj run` on unseen inputs in their own files too: here with -m slow.
OWN_RUN_TESTS = ("03-advection", "04-tridiagonal", "05-deposition")


@pytest.mark.parametrize(
    ("example", "name"),
    [
        pytest.param(*c.values, id=c.id, marks=[*c.marks, pytest.mark.slow])
        if c.values[0] in OWN_RUN_TESTS
        else c
        for c in first_of_each_example(family_cases())
    ],
)
def test_run_on_unseen_inputs_matches_reference(example, name, project):
    module, algorithm = reference_of(example, name)
    seed = secrets.randbits(32)  # unseen by construction; reported on failure
    arrays, params = module.random_inputs(np.random.default_rng(seed))
    inputs = write_h5(project / "unseen.h5", **arrays)
    out = project / "out" / "o.h5"
    flags = [x for k, v in params.items() for x in (f"--{k}", v)]

    r = weanj_cli(
        "run", example, name, "--inputs", inputs, *flags, "--out", out, cwd=project, here=True
    )
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

    # Provenance from the definitions (docs/DESIGN.md), not by asking weanj: the format-2
    # inputs digest of the file's arrays (stored float64), and the key of that digest,
    # the parameters and the dtype.
    digest = inputs_sha256([(a, np.asarray(arrays[a], np.float64)) for a in ex.arrays])
    assert attrs["inputs_sha256"] == digest
    assert attrs["key"] == provenance_key(digest, params, "float64")
    assert int(attrs["format"]) == 2
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
            ["unknown variant 'no-such-variant'", example],
            weanj.variants(example, available_only=False),
            id="unknown-variant",
        ),
        pytest.param(["run", example, name, "--K", "0"], ["K", "at least 1"], None, id="K-below-1"),
        pytest.param(
            ["run", example, name, "--inputs", "{mismatched}"],
            ["(5, 5)", "(4, 4)"],
            None,
            id="mismatched-shapes",
        ),
    ]


@pytest.mark.parametrize(("args", "mentions", "known"), _mistakes())
def test_mistake_is_one_line_and_exit_2(args, mentions, known, project):
    # One line saying what is wrong (at most ~200 characters); a list of the known names
    # that would make it longer goes on one line below it (`weanj._errors.with_list`).
    mismatched = write_h5(project / "mismatched.h5", theta=np.zeros((5, 5)), uobs=np.zeros((4, 4)))
    args = [a.replace("{mismatched}", str(mismatched)) for a in args]
    # the first mistake in a fresh process, as a user meets it; the others in this one
    r = weanj_cli(*args, cwd=project, here=args[2] != "no-such-variant")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 or (known is not None and len(lines) == 2), r.stderr
    assert len(lines[0]) <= 200 + len("weanj: error: "), lines[0]
    for word in mentions:  # the first line says what is wrong
        assert word in lines[0], lines[0]
    if known is not None:  # and the message lists every known name
        listed = f"known variants: {', '.join(known)}"
        assert listed in lines[0] if len(lines) == 1 else lines[1].strip() == listed, r.stderr
    assert not (project / "results" / "02-gauss-seidel" / "gradients").exists()
