"""weanj where scientists work: a notebook, in a fresh Jupyter kernel started by nbclient,
in a user project kept outside the repository. `weanj.check()` returns the judgement the
command line prints; the cell shows it as HTML (the verdict table naming the wrong variant
and its array) and as a short text; `weanj.taylor_test` gives rates near 2 and 1.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from .projects import user_env, write_project

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("nbclient") is None or importlib.util.find_spec("ipykernel") is None,
    reason="needs nbclient and ipykernel (pip install -e '.[docs]')",
)

# Two correct ports of a smoothing and one that pads with zeros where the loop wraps around.
KERNEL = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="31-ring", arrays=("u", "obs"), wrt="u", params=(weanj.Param("S", default=2),),
    generate=lambda seed: {"u": np.random.default_rng(seed).standard_normal(16),
                           "obs": np.random.default_rng(seed + 1).standard_normal(16)},
))


def _roll(u, S):
    for _ in range(S):
        u = 0.25 * jnp.roll(u, 1) + 0.5 * u + 0.25 * jnp.roll(u, -1)
    return u


@weanj.jax_variant(ex, "jax-roll", family="ring")
def roll(u, obs, S):
    return jnp.sum((_roll(u, S) - obs) ** 2)


@weanj.jax_variant(ex, "jax-roll-again", family="ring")
def roll_again(u, obs, S):
    return jnp.sum(jnp.square(_roll(u, S) - obs))


@weanj.jax_variant(ex, "jax-pad", family="ring")
def pad(u, obs, S):
    for _ in range(S):  # zeros beyond the ends: the ring is broken
        p = jnp.pad(u, 1)
        u = 0.25 * p[:-2] + 0.5 * u + 0.25 * p[2:]
    return jnp.sum((u - obs) ** 2)
"""

CELLS = [
    "import weanj\njudgement = weanj.check(dtype='float64')\njudgement",
    "print(judgement.ok, sorted({j.case for j in judgement.failures}))",
    # a nonlinear function, its true gradient and a wrong one (a factor off on one term)
    "import numpy as np, jax.numpy as jnp\n"
    "x = np.random.default_rng(1).standard_normal(40)\n"
    "loss = lambda v: jnp.sum(jnp.tanh(v) ** 2 * jnp.cos(v))\n"
    "t = np.tanh(x)\n"
    "right = 2 * t * (1 - t**2) * np.cos(x) - t**2 * np.sin(x)\n"
    "wrong = 2 * t * (1 - t**2) * np.cos(x) - 1.01 * t**2 * np.sin(x)\n"
    "good, bad = weanj.taylor_test(loss, x, right), weanj.taylor_test(loss, x, wrong)\n"
    "print(min(min(r) for r in good.asymptotic), max(max(r) for r in bad.asymptotic),"
    " good.passes, bad.passes)",
]


def test_a_notebook_gets_the_judgement_as_html_and_short_text(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    root = write_project(tmp_path, {"kernels/ring.py": KERNEL})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    for key, value in user_env().items():  # the kernel inherits the environment, no $WEANJ_ROOT
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    NotebookClient(
        nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(root)}}
    ).execute()
    shown = next(o for o in nb.cells[0].outputs if o.output_type == "execute_result")
    html, text = shown.data["text/html"], shown.data["text/plain"]
    # the verdict table names the wrong variant and its array, and the pictures are inline
    assert "<script" not in html and "http" not in html.replace("http-equiv", "")
    row = re.search(r"<tr><td><code>31-ring</code></td>.*?</tr>", html, re.S).group(0)
    assert ">FAIL<" in row
    assert "jax-pad" in row and "array <code>u</code>" in row
    assert "FAIL vs 2 of 2" in html  # the suspect, in the variants' table
    assert html.count("data:image/png;base64,") >= 1
    assert len(text.splitlines()) < 40 and text.startswith("<weanj check: FAIL")
    # the same judgement as data
    printed = "".join(o.text for o in nb.cells[1].outputs if o.output_type == "stream")
    assert printed.startswith("False ") and "jax-pad" in printed
    assert all("jax-roll~jax-roll-again" not in case for case in re.findall(r"'([^']+)'", printed))
    # the Taylor test of any function: rates near 2 for the true gradient, near 1 for a wrong one
    numbers = "".join(o.text for o in nb.cells[2].outputs if o.output_type == "stream").split()
    assert float(numbers[0]) > 1.9 and float(numbers[1]) < 1.1, numbers
    assert numbers[2:] == ["True", "False"]
