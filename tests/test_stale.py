"""Stale results and `--variants` (issue 42, items 4 and 7).

A user project run as a user runs it (in its folder: the first check a subprocess, the
later commands in this process as a fresh process would run them, `projects.weanj_here`):
`40-three` holds two correct variants of one family and a wrong third (`jax-wrong`, its
loss 1.001 times theirs). `--variants` limits what is judged, not only what runs; deleting a variant
leaves its files unjudged, with one line saying so, and `weanj clean` removes them (never a
user's own gradient file, nor a committed reference).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from .projects import run_here, weanj_here, weanj_in, write_project

THREE = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="40-three", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8)}))

@weanj.jax_variant(ex, "jax-a", family="f")
def a(x):
    return jnp.sum(jnp.sin(x) ** 2)

@weanj.jax_variant(ex, "jax-b", family="f")
def b(x):
    return jnp.sum(1 - jnp.cos(x) ** 2)
"""

WRONG = """
@weanj.jax_variant(ex, "jax-wrong", family="f")
def wrong(x):
    return jnp.sum(jnp.sin(x) ** 2) * 1.001
"""

EXPERIMENT = """\
import numpy as np, weanj
x = weanj.read_inputs("40-three").arrays["x"]
weanj.save_gradient("40-three", "my-experiment", 2 * np.sin(x) * np.cos(x),
                    loss=float(np.sum(np.sin(x) ** 2)), family="f")
"""


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    root = write_project(tmp_path_factory.mktemp("three"), {"kernels/three.py": THREE + WRONG})
    first = weanj_in(root, "check")
    return root, first


def _verdicts(root) -> dict[str, str]:
    data = json.loads((root / "results" / "40-three" / "check.json").read_text())
    return {j["case"]: j["verdict"] for j in data["pairs"] + data["runs"]}


def test_variants_limit_what_is_judged_on_a_store_holding_a_wrong_third(three):
    root, first = three
    assert first.returncode == 1, first.stdout
    assert _verdicts(root)["40-three::f::jax-a~jax-wrong"] == "FAIL"
    only = weanj_here(root, "check", "--variants", "jax-a", "jax-b")
    assert only.returncode == 0, only.stdout + only.stderr
    judged = _verdicts(root)
    assert judged and set(judged.values()) == {"ok"}
    assert not [case for case in judged if "jax-wrong" in case]


def test_a_deleted_variant_is_never_judged_said_once_and_cleaned(three):
    root, _ = three
    store = root / "results" / "40-three" / "gradients"
    stale = [store / "jax-wrong.h5", store / "float32" / "jax-wrong.h5"]
    assert all(p.is_file() for p in stale)
    experiment = run_here(root, EXPERIMENT)
    assert experiment.returncode == 0, experiment.stderr
    (root / "kernels" / "three.py").write_text(THREE)  # the wrong port deleted
    note = (
        "  ignored 2 file(s) of variants no longer registered (jax-wrong, jax-wrong@float32) "
        "in results/40-three/gradients, results/40-three/gradients/float32; "
        "`weanj clean 40-three --yes` removes them"
    )
    check = weanj_here(root, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.splitlines().count(note) == 1
    assert not [case for case in _verdicts(root) if "jax-wrong" in case]
    # the user's own file is judged (a subject like any other), not ignored
    assert _verdicts(root)["40-three::f::jax-a~my-experiment"] == "ok"
    diff = weanj_here(root, "diff", "40-three")
    assert diff.stdout.splitlines().count(note) == 1 and "jax-wrong " not in diff.stdout
    records = root / "results" / "40-three" / "evaluations"
    stale += [records / "jax-wrong.npz", records / "jax-wrong@float32.npz"]
    assert all(p.is_file() for p in stale)
    dry = weanj_here(root, "clean")  # without --yes: a list, nothing removed
    assert dry.returncode == 0 and dry.stdout.startswith("weanj clean: would remove 4 file(s)")
    assert all(p.is_file() for p in stale)
    done = weanj_here(root, "clean", "--yes")
    assert done.returncode == 0, done.stderr
    assert "  results/40-three/gradients/jax-wrong.h5  (40-three: jax-wrong, a variant no " in (
        done.stdout
    )
    assert not any(p.exists() for p in stale)
    assert (store / "my-experiment.h5").is_file() and (store / "jax-a.h5").is_file()
    assert (records / "jax-a.npz").is_file() and (records / "jax-b@float32.npz").is_file()
    again = weanj_here(root, "check")
    assert "ignored" not in again.stdout and again.returncode == 0


def test_an_example_no_longer_registered_is_named_once_and_cleaned(three, tmp_path):
    """`99-gone`'s results as a check of it left them (its module since dropped), with a
    committed reference beside them: the note names it once, clean removes what its runs
    wrote and keeps the reference (tests/test_clean.py: what is never removed)."""
    root, _ = three
    gone = root / "results" / "99-gone"
    (gone / "recorded").mkdir(parents=True)
    other = write_project(tmp_path, {"kernels/gone.py": THREE.replace("40-three", "99-gone")})
    ran = weanj_here(other, "check")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shutil.copytree(other / "results" / "99-gone" / "gradients", gone / "gradients")
    source = gone / "gradients" / "jax-a.h5"
    (gone / "recorded" / "jax-a.h5").write_bytes(source.read_bytes())
    check = weanj_here(root, "check")
    line = (
        "ignored the results of 1 example(s) no longer registered (results/99-gone); "
        "`weanj clean --yes` removes their gradients, evaluations and check.json"
    )
    assert check.stdout.splitlines().count(line) == 1
    done = weanj_here(root, "clean", "--yes")
    assert (
        "  results/99-gone/gradients/jax-a.h5  (99-gone: an example no longer registered)"
        in done.stdout
    )
    assert "  results/99-gone/gradients/  (left empty)" in done.stdout
    assert not (gone / "gradients").exists()
    recorded = (gone / "recorded" / "jax-a.h5").read_bytes()  # a committed reference stays
    assert recorded == (other / "results/99-gone/gradients/jax-a.h5").read_bytes()


SAVE = """\
import numpy as np, weanj
x = np.linspace(-1.0, 1.0, 8)
print(weanj.save_inputs("40-three", {"x": x}))
"""


def test_inputs_written_from_given_arrays_are_judged_like_generated_ones(three):
    from .helpers import inputs_sha256

    root, _ = three
    r = run_here(root, SAVE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("shared_inputs/40-three.h5")
    check = weanj_here(root, "check", "40-three")
    assert check.returncode == 0, check.stdout + check.stderr
    data = json.loads((root / "results" / "40-three" / "check.json").read_text())
    x = np.linspace(-1.0, 1.0, 8)
    assert data["inputs_sha256"] == inputs_sha256({"x": x})
    (g,) = [g for g in data["gradients"] if g["label"] == "jax-a"]
    assert g["loss"] == pytest.approx(float(np.sum(np.sin(x) ** 2)), rel=1e-14)
    refused = run_here(root, SAVE.replace('{"x": x}', '{"y": x}'))  # not its array
    assert refused.returncode == 1 and "weanj._errors.InputError" in refused.stderr
