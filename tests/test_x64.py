"""JAX's x64 as the user's program has it (issue 42, item 1; docs/DESIGN.md §2.2).

`jax_enable_x64` is process-global, so each case is a user project run as a user runs it
(`weanj check` in a subprocess in its folder), without the test suite's JAX_ENABLE_X64
(its inputs, numpy's arrays, are written in this process).
The module `kernels.ramp` leaves x64 off; its loss weighs x² by `jnp.arange(n) / n`, a
default-dtype array (float32 with x64 off, float64 with it on).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tomllib

from .projects import pyproject, run_in, user_env, weanj_here

RAMP = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="20-ramp", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(12)},
))

@weanj.jax_variant(ex, "jax-ramp", family="f")
def ramp(x):
    return jnp.sum(jnp.arange(x.shape[0]) / x.shape[0] * x ** 2)
"""

CAUSE = (
    "so default-dtype arrays (jnp.arange, jnp.zeros, constants made by jnp.array) are "
    "64-bit and promote a float32 computation"
)


def _project(root: Path, *, x64: bool | None) -> Path:
    (root / "kernels").mkdir()
    (root / "kernels" / "__init__.py").write_text("")
    (root / "kernels" / "ramp.py").write_text(RAMP)
    table = pyproject("kernels.ramp")
    if x64 is not None:
        table += f"x64 = {str(x64).lower()}\n"
    (root / "pyproject.toml").write_text(table)
    r = weanj_here(root, "inputs", "regenerate")  # numpy's arrays: no JAX setting involved
    assert r.returncode == 0, r.stderr
    return root


def _check(root: Path):
    env = {k: v for k, v in user_env().items() if k != "JAX_ENABLE_X64"}
    r = run_in(root, "-m", "weanj", "check", env=env)
    data = json.loads((root / "results" / "20-ramp" / "check.json").read_text())
    runs = {j["subjects"][0]: j for j in data["runs"]}
    return r, runs, data


def test_a_module_that_leaves_x64_off_computes_float64_runs_in_float32_its_fault(tmp_path):
    r, runs, data = _check(_project(tmp_path, x64=None))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    wide, narrow = runs["jax-ramp"], runs["jax-ramp@float32"]
    assert wide["verdict"] == "error"
    assert wide["reason"].startswith(
        "jax-ramp computes in float32 as configured: x64 is off (JAX's default; kernels.ramp "
        "leaves it), so its float64 inputs are truncated to float32 (the loss is float32); "
        'enable x64 in the program (jax.config.update("jax_enable_x64", True) in the module, '
        'or x64 = true in [tool.weanj]), or declare the variant float32-only (dtypes=("float32",))'
    )
    # its float32 run, as the program has it, passes: a real float32 loss
    assert narrow["verdict"] == "ok"
    assert narrow["info"]["x64"] == {
        "enabled": False,
        "source": "JAX's default; kernels.ramp leaves it",
    }
    assert "  x64 off (JAX's default; kernels.ramp leaves it): jax-ramp" in r.stdout


def test_a_project_declaring_x64_passes_in_float64_and_names_the_float32_promotion(tmp_path):
    root = _project(tmp_path, x64=True)
    r, runs, data = _check(root)
    source = f"x64 = true in [tool.weanj] of {root / 'pyproject.toml'}"
    assert runs["jax-ramp"]["verdict"] == "ok"
    assert runs["jax-ramp"]["info"]["x64"] == {"enabled": True, "source": source}
    (g,) = [g for g in data["gradients"] if g["label"] == "jax-ramp"]
    x = _inputs(root)
    n = x.size
    expected = float(np.sum(np.arange(n) / n * x**2))
    assert g["loss"] == pytest.approx(expected, rel=1e-14)  # computed in float64
    narrow = runs["jax-ramp@float32"]
    assert narrow["verdict"] == "error"
    assert narrow["reason"] == (
        f"jax-ramp returned float64 for float32 inputs (the loss): x64 is on ({source}), "
        f"{CAUSE}; give them the inputs' dtype (jnp.zeros(k, dtype=x.dtype)), or declare the "
        'variant float64-only (dtypes=("float64",))'
    )
    assert r.returncode == 1
    # the configuration is stored with the gradient, and diff (which runs nothing) shows it
    assert g["x64"] == f"x64 on ({source})"
    env = {k: v for k, v in user_env().items() if k != "JAX_ENABLE_X64"}
    diff = run_in(root, "-m", "weanj", "diff", "20-ramp", env=env)
    (row,) = [line for line in diff.stdout.splitlines() if line.startswith("  jax-ramp ")]
    assert row.endswith(f"x64 on ({source})")


def _inputs(root: Path) -> np.ndarray:
    import h5py

    with h5py.File(root / "shared_inputs" / "20-ramp.h5", "r") as f:
        return np.asarray(f["x"])


def test_weanj_declares_its_own_examples_x64_as_its_pyproject_does():
    from weanj import _x64

    repo = Path(__file__).resolve().parent.parent
    table = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["weanj"]
    assert table["x64"] is _x64.BUILTIN_X64 is True
