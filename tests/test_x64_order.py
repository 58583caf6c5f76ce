"""One x64 rule whatever the import order (issue 62, item 3; docs/DESIGN.md §2.2): a
module's variants run with the x64 that importing that module alone leaves, `python -c
"import M; import jax; print(jax.config.jax_enable_x64)"`, and the output credits the
module whose own code set it.

The project (undeclared x64, the process at JAX's default): `examples.heat` turns x64 on
and registers `jax-heat`; `examples.faults` imports heat and registers `jax-faults` (of its
own example) and `jax-heat-faults` (of heat's example: credited to faults, its registrar,
not to heat); `examples.cool` imports faults (so heat), then turns x64 off, and registers
`jax-cool`.
Each order of `examples` (`weanj check` on the command line) and each import order of a
script that imports the modules before weanj loads the project (as a notebook's first cell
does, `weanj.check()`) gives every run the same x64, with the same source.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .projects import run_in, user_env, weanj_here

HEAT = """\
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="30-heat", arrays=("u",), wrt="u",
    generate=lambda seed: {"u": np.random.default_rng(seed).standard_normal(6)}))


@weanj.jax_variant(ex, "jax-heat", family="h")
def heat(u):
    return jnp.sum(u ** 2)
"""

FAULTS = """\
import jax.numpy as jnp, numpy as np
import weanj
from examples import heat

ex = weanj.register_example(weanj.Example(
    name="31-faults", arrays=("v",), wrt="v",
    generate=lambda seed: {"v": np.random.default_rng(seed).standard_normal(5)}))


@weanj.jax_variant(ex, "jax-faults", family="f")
def faults(v):
    return jnp.sum(v ** 3)


weanj.jax_variant(heat.ex, "jax-heat-faults", family="h", loss=heat.heat)
"""

COOL = """\
from examples import faults
import jax
jax.config.update("jax_enable_x64", False)
import weanj

weanj.jax_variant(faults.ex, "jax-cool", family="f", loss=lambda v: (v ** 3).sum())
"""

MODULES = {"heat": HEAT, "faults": FAULTS, "cool": COOL}
ORDERS = [("heat", "faults", "cool"), ("cool", "faults", "heat")]

# the variants of each module (its registrar), and what importing it alone leaves
REGISTERED_BY = {
    "jax-heat": "heat",
    "jax-heat-faults": "faults",
    "jax-faults": "faults",
    "jax-cool": "cool",
}
SOURCES = {
    "heat": "examples.heat turns it on at import",
    "faults": "examples.heat turns it on at import; examples.faults imports it",
    "cool": "examples.cool turns it off at import",
}

NOTEBOOK = """\
import json
{imports}
import weanj
j = weanj.check(dtype="float64", save=False, fresh=True, say=lambda line: None)
runs = {{r["subjects"][0]: r["info"]["x64"] for e in j.to_json()["examples"] for r in e["runs"]}}
print(json.dumps(runs))
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in user_env().items() if k != "JAX_ENABLE_X64"}


def _write(root: Path, order: tuple[str, ...]) -> None:
    listed = ", ".join(f'"examples.{m}"' for m in order)
    (root / "pyproject.toml").write_text(f"[tool.weanj]\nexamples = [{listed}]\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("x64-order")
    (root / "examples").mkdir()
    (root / "examples" / "__init__.py").write_text("")
    for name, text in MODULES.items():
        (root / "examples" / f"{name}.py").write_text(text)
    _write(root, ORDERS[0])
    r = weanj_here(root, "inputs", "regenerate")
    assert r.returncode == 0, r.stderr
    return root


@pytest.fixture(scope="module")
def alone(project) -> dict[str, bool]:
    """`python -c "import M; import jax; print(jax.config.jax_enable_x64)"` per module."""
    out = {}
    for name in MODULES:
        code = f"import examples.{name}; import jax; print(jax.config.jax_enable_x64)"
        r = run_in(project, "-c", code, env=_env())
        assert r.returncode == 0, r.stderr
        out[name] = {"True": True, "False": False}[r.stdout.strip()]
    return out


def _expected(alone: dict[str, bool]) -> dict[str, dict]:
    return {
        variant: {"enabled": alone[module], "source": SOURCES[module]}
        for variant, module in REGISTERED_BY.items()
    }


def test_what_each_module_alone_leaves(alone):
    """The premise, from fresh interpreters alone: heat and faults (through heat) leave
    x64 on, cool turns it off after importing them."""
    assert alone == {"heat": True, "faults": True, "cool": False}


@pytest.mark.parametrize("order", ORDERS, ids=["heat-first", "cool-first"])
def test_each_order_of_examples_gives_each_module_what_it_leaves_alone(project, alone, order):
    _write(project, order)
    r = run_in(project, "-m", "weanj", "check", "--dtype", "float64", "--fresh", env=_env())
    assert "Traceback" not in r.stderr, r.stderr
    runs = {}
    for example in ("30-heat", "31-faults"):
        data = json.loads((project / "results" / example / "check.json").read_text())
        runs.update({j["subjects"][0]: j["info"]["x64"] for j in data["runs"]})
    assert runs == _expected(alone)
    # the record of the registry's own imports told every module: no fresh interpreter asked
    assert not (project / ".weanj-cache" / "x64").exists()
    word = {True: "on", False: "off"}
    line = f"  x64 {word[alone['faults']]} ({SOURCES['faults']}): jax-faults"
    assert line in r.stdout.splitlines(), r.stdout


@pytest.mark.parametrize("order", ORDERS, ids=["heat-first", "cool-first"])
def test_a_notebook_that_imports_the_modules_first_in_either_order(project, alone, order):
    _write(project, ORDERS[0])
    imports = "\n".join(f"import examples.{m}" for m in order)
    r = run_in(project, "-c", NOTEBOOK.format(imports=imports), env=_env())
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == _expected(alone)
    # modules imported before weanj loaded the project: a fresh interpreter asked, and kept
    kept = sorted(p.name.split("-")[0] for p in (project / ".weanj-cache" / "x64").iterdir())
    assert kept == ["examples.cool", "examples.faults", "examples.heat"]
