"""The x64 fault line names the run's other faults too (issue 62, item 3; docs/DESIGN.md
§8.3): a program with x64 off computes its float64 run in float32, and a loss that is also
not a scalar, a gradient of the wrong shape or NaN is said in the same line, not hidden
until x64 is fixed.

`kernels.narrow` turns x64 off at import (what importing it alone leaves: its variants run
so in this process too, whose x64 is on), and registers four ports of `L = Σ x²`: a correct
one (its line is the x64 line alone), one whose loss is a vector, one whose hand-written
gradient drops the last entry, one whose loss is NaN.
"""

from __future__ import annotations

import json

import pytest

from .projects import weanj_here, write_project

NARROW = """\
import jax
import jax.numpy as jnp
import numpy as np
import weanj

jax.config.update("jax_enable_x64", False)

ex = weanj.register_example(weanj.Example(
    name="54-narrow", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).uniform(0.5, 1.5, 6)}))


def square(x):
    return jnp.sum(x**2)


weanj.jax_variant(ex, "jax-right", family="f", loss=square)
weanj.jax_variant(ex, "jax-vector", family="f", loss=lambda x: x**2)
weanj.jax_variant(ex, "jax-short", family="f", loss=square, grad=lambda x: 2 * x[:-1])
weanj.jax_variant(ex, "jax-nan", family="f", loss=lambda x: jnp.sum(x**2) * jnp.nan)
"""

HEAD = (
    "{v} computes in float32 as configured: x64 is off (kernels.narrow turns it off at "
    "import), so its float64 inputs are truncated to float32 (the loss is float32); enable "
    'x64 in the program (jax.config.update("jax_enable_x64", True) in the module, or x64 = '
    'true in [tool.weanj]), or declare the variant float32-only (dtypes=("float32",))'
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    root = write_project(tmp_path_factory.mktemp("narrow"), {"kernels/narrow.py": NARROW})
    r = weanj_here(root, "check", "--dtype", "float64")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    data = json.loads((root / "results" / "54-narrow" / "check.json").read_text())
    return {j["subjects"][0]: j for j in data["runs"]}


def test_the_correct_port_is_named_for_its_x64_alone(runs):
    assert runs["jax-right"]["verdict"] == "error"
    assert runs["jax-right"]["reason"] == HEAD.format(v="jax-right")


@pytest.mark.parametrize(
    ("variant", "also"),
    [
        ("jax-vector", "returned a loss of shape (6,), not a scalar"),
        ("jax-short", "returned a gradient of x of shape (5,); its input has shape (6,)"),
        ("jax-nan", "returned a loss that is not finite (nan)"),
    ],
)
def test_every_other_fault_is_in_the_same_line(runs, variant, also):
    run = runs[variant]
    assert run["verdict"] == "error"
    assert run["reason"].startswith(f"{HEAD.format(v=variant)}; it also {also}"), run["reason"]
