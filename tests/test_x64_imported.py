"""A project's declared x64 holds however its module is imported (issue 53), and a backend
without JAX's x64 gets none of it (issue 48, item 1; docs/DESIGN.md §2.2).

Each case is a user project outside the repository run in fresh processes (x64 is process
state): `weanj check` on the command line, and scripts that import the project's module
themselves, before or after `import weanj`, as a notebook does (one fresh process per
import order); one is a real notebook run by nbclient. The module `kernels.ramp` weighs x²
by `jnp.arange(n) / n`, a default-dtype array: float32 with x64 off, float64 with it on, so
the dtype and the digits of its loss say which configuration it ran in. Each import order
is a case of its own; the x64 = false project and its `weanj check` are made once for all of
them (`declared_off`).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from .projects import pyproject, pytest_weanj_in, run_in, user_env, weanj_here

RAMP = """\
import jax.numpy as jnp, numpy as np
import weanj
{preamble}
ex = weanj.register_example(weanj.Example(
    name="20-ramp", arrays=("x",), wrt="x",
    generate=lambda seed: {{"x": np.random.default_rng(seed).standard_normal(12)}},
))

@weanj.jax_variant(ex, "jax-ramp", family="f", dtypes={dtypes})
def ramp(x):
    return jnp.sum(jnp.arange(x.shape[0]) / x.shape[0] * x ** 2)
"""

# A script as a notebook runs it: the project's module imported by the user (IMPORTS), its
# variant called directly, then the check of the whole project; one JSON line out.
SCRIPT = """\
import json, numpy as np
{imports}
x = np.random.default_rng(7).standard_normal(12).astype("{dtype}")
v = weanj.variant("20-ramp", "jax-ramp")
loss, grad = np.asarray(v.loss(x)), np.asarray(v.grad(x))
data = weanj.check(save=False, fresh=True, say=lambda line: None).to_json()["examples"][0]
print(json.dumps({{
    "loss": [loss.dtype.name, float(loss)], "grad": grad.dtype.name,
    "runs": {{r["subjects"][0]: [r["verdict"], r.get("info", {{}}).get("x64")]
             for r in data["runs"]}},
}}))
"""

ORDERS = {
    "module, then weanj": "import kernels.ramp\nimport weanj",
    "both on one line, the module first": "import kernels.ramp, weanj",
    "weanj, then module": "import weanj\nimport kernels.ramp",
}

# The import orders as parametrized cases. Python runs `import a, b` as `import a` then
# `import b` (the same instructions), so the one-line order is the first order again: with
# `-m slow`; the real notebook below imports that way (`import kernels.ramp, weanj`).
ORDER_CASES = [
    "module, then weanj",
    # slow: the same imports, in the same order, as the "module, then weanj" case
    pytest.param("both on one line, the module first", marks=pytest.mark.slow),
    "weanj, then module",
]


def _project(root: Path, *, x64: bool, preamble: str = "", dtypes=("float64", "float32")) -> Path:
    (root / "kernels").mkdir()
    (root / "kernels" / "__init__.py").write_text("")
    text = RAMP.format(preamble=preamble, dtypes=tuple(dtypes))
    (root / "kernels" / "ramp.py").write_text(text)
    table = pyproject("kernels.ramp") + f"x64 = {str(x64).lower()}\n"
    (root / "pyproject.toml").write_text(table)
    r = weanj_here(root, "inputs", "regenerate")  # numpy's arrays: no JAX setting involved
    assert r.returncode == 0, r.stderr
    return root


def _env(x64: str | None) -> dict[str, str]:
    """The user's environment, its `$JAX_ENABLE_X64` set to `x64` (None: unset)."""
    env = {k: v for k, v in user_env().items() if k != "JAX_ENABLE_X64"}
    return env if x64 is None else {**env, "JAX_ENABLE_X64": x64}


def _cli(root: Path, env: dict[str, str]) -> dict[str, list]:
    """`weanj check` on the command line: each run's verdict and x64, from check.json."""
    r = run_in(root, "-m", "weanj", "check", env=env)
    assert "Traceback" not in r.stderr, r.stderr
    data = json.loads((root / "results" / "20-ramp" / "check.json").read_text())
    return {j["subjects"][0]: [j["verdict"], j.get("info", {}).get("x64")] for j in data["runs"]}


def _script(root: Path, imports: str, dtype: str, env: dict[str, str]) -> dict:
    r = run_in(root, "-c", SCRIPT.format(imports=imports, dtype=dtype), env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _ramp_loss(dtype: str) -> float:
    """The loss of SCRIPT's x computed by numpy in `dtype` throughout."""
    x = np.random.default_rng(7).standard_normal(12).astype(dtype)
    n = x.size
    w = (np.arange(n, dtype=dtype) / np.asarray(n, dtype=dtype)).astype(dtype)
    return float(np.sum(w * x * x, dtype=dtype))


def _declared(root: Path, on: bool) -> dict:
    """The x64 of every run of a project declaring `x64 = on` in `root`."""
    word = str(on).lower()
    return {"enabled": on, "source": f"x64 = {word} in [tool.weanj] of {root / 'pyproject.toml'}"}


def _declared_on_runs(root: Path) -> dict[str, list]:
    """`weanj check` of the x64 = true project (JAX's default in the process): as issue 42
    has it, float64 passes, float32 is promoted by the 64-bit arange."""
    declared = _declared(root, True)
    return {"jax-ramp": ["ok", declared], "jax-ramp@float32": ["error", declared]}


@pytest.mark.parametrize("order", ORDER_CASES)
def test_a_declared_x64_holds_whoever_imports_the_module_first(tmp_path, order):
    """x64 = true, the process at JAX's default (off): whichever import comes first, the
    variant computes in float64 (its loss's dtype and digits), and `weanj.check()` judges
    the project as `weanj check` does (`_declared_on_runs`)."""
    root = _project(tmp_path, x64=True)
    env = _env(None)  # JAX's default, off: only the declaration turns x64 on
    wide = _ramp_loss("float64")
    assert abs(wide - _ramp_loss("float32")) > 1e-9 * abs(wide)  # the digits tell them apart
    got = _script(root, ORDERS[order], "float64", env)
    assert got["loss"][0] == got["grad"] == "float64"
    assert got["loss"][1] == pytest.approx(wide, rel=1e-13)
    assert got["runs"] == _declared_on_runs(root)  # weanj.check() judges as `weanj check` does


# slow: the same `weanj check` on the command line (this module, x64 = true, the process at
# JAX's default; the same verdicts, the same x64) is held by tests/test_x64.py's
# test_a_project_declaring_x64_passes_in_float64_and_names_the_float32_promotion
@pytest.mark.slow
def test_weanj_check_on_the_command_line_holds_a_declared_x64(tmp_path):
    """`weanj check` of the x64 = true project, the process at JAX's default: the runs
    that test_a_declared_x64_holds_whoever_imports_the_module_first expects of
    `weanj.check()`."""
    root = _project(tmp_path, x64=True)
    assert _cli(root, _env(None)) == _declared_on_runs(root)


def test_pytest_weanj_holds_the_declaration_when_a_conftest_imports_the_module_first(tmp_path):
    root = _project(tmp_path, x64=True)
    (root / "conftest.py").write_text("import kernels.ramp  # before weanj loads the project\n")
    r = pytest_weanj_in(root, "-rA", "-q", env=_env(None))
    lines = r.stdout.splitlines()
    assert "PASSED weanj::20-ramp::f::jax-ramp::run" in lines, r.stdout
    (failed,) = [line for line in lines if line.startswith("FAILED ")]
    assert failed.startswith("FAILED weanj::20-ramp::f::jax-ramp@float32::run")  # promoted
    source = f"x64 = true in [tool.weanj] of {root / 'pyproject.toml'}"
    assert f"x64 on ({source})" in lines  # each run item's report section


@pytest.fixture(scope="module")
def declared_off(tmp_path_factory) -> tuple[Path, dict[str, list]]:
    """The float32 program whose project declares x64 = false, and its `weanj check` on
    the command line (each run's verdict and x64) in a process that starts with x64 on
    (`$JAX_ENABLE_X64=1`): one command, which every import order's case compares with
    (their scripts write nothing into the project: `save=False`)."""
    root = _project(tmp_path_factory.mktemp("declared-off"), x64=False, dtypes=("float32",))
    return root, _cli(root, _env("1"))


@pytest.mark.parametrize("order", ORDER_CASES)
def test_a_declared_x64_off_holds_for_a_float32_program_imported_first(declared_off, order):
    """x64 = false, the process started with x64 on: `weanj check` skips the float64 run
    and passes the float32 one, in the declared configuration; whichever import comes
    first, no float64 appears, and `weanj.check()` judges as `weanj check` does."""
    root, cli = declared_off
    env = _env("1")  # the process starts with x64 on: only the declaration turns it off
    declared = _declared(root, False)
    assert cli == {"jax-ramp": ["skipped", declared], "jax-ramp@float32": ["ok", declared]}
    narrow = _ramp_loss("float32")
    got = _script(root, ORDERS[order], "float32", env)
    assert got["loss"][0] == got["grad"] == "float32"  # no float64 appears
    assert got["loss"][1] == pytest.approx(narrow, rel=1e-6)
    assert got["runs"] == cli


def test_a_module_that_sets_x64_contrary_to_the_declaration_is_named_with_it(tmp_path):
    """The module turns x64 on itself; the project declares it off. The declaration holds
    in either import order, and the x64 line names both, once, the same in both (what
    importing the module alone does, `python -c "import kernels.ramp"`)."""
    preamble = 'import jax\njax.config.update("jax_enable_x64", True)\n'
    root = _project(tmp_path, x64=False, preamble=preamble, dtypes=("float32",))
    env = _env(None)
    declared = f"x64 = false in [tool.weanj] of {root / 'pyproject.toml'}"
    r = run_in(root, "-m", "weanj", "check", env=env)
    line = f"  x64 off ({declared}; it holds over kernels.ramp, which turns it on at import)"
    assert f"{line}: jax-ramp" in r.stdout.splitlines(), r.stdout
    first = _script(root, ORDERS["module, then weanj"], "float32", env)
    assert first["loss"][0] == "float32"
    assert first["runs"]["jax-ramp@float32"] == [
        "ok",
        {
            "enabled": False,
            "source": f"{declared}; it holds over kernels.ramp, which turns it on at import",
        },
    ]


# --- a backend without JAX's x64 (issue 48) ---------------------------------------------------

NUMPY_BACKEND = """\
import numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="21-square", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(12)},
))


def build():
    def loss(x):  # numpy's own types: the weight in the inputs' dtype, whatever JAX says
        w = (np.arange(x.shape[0]) / x.shape[0]).astype(x.dtype)
        return np.sum(w * x * x)

    def grad(x):
        return 2 * (np.arange(x.shape[0]) / x.shape[0]).astype(x.dtype) * x

    return loss, grad


weanj.register_variant(weanj.Variant(ex, "np-square", "f", "numpy", build, versions=("numpy",)))


@weanj.jax_variant(ex, "jax-square", family="f")
def jax_square(x):
    import jax.numpy as jnp

    return jnp.sum(jnp.arange(x.shape[0]) / x.shape[0] * x * x)
"""

NUMPY_SCRIPT = """\
import hashlib, json, numpy as np
from pathlib import Path
import weanj
from weanj import _registry
from weanj._io._inputs import read_inputs
from weanj._pipeline.records._records import Records
from weanj._places import Places
from weanj._project import project_config

cat = _registry.catalog("21-square")
v = cat.find("np-square")
here = Places(Path.cwd())
inputs = read_inputs(cat.example, here)
judgement = weanj.check(save=False, fresh=True, say=lambda line: None)
data = judgement.to_json()["examples"][0]
x = np.random.default_rng(3).standard_normal(12)
out = {"configuration": [v.configuration(d).to_json() for d in ("float64", "float32")]}
out["key"] = Records(here, project_config(Path.cwd())).parts(v, inputs, "float64")
out["info"] = {r["subjects"][0]: r.get("info", {}) for r in data["runs"]}
out["verdicts"] = {r["subjects"][0]: r["verdict"] for r in data["runs"]}
out["x64 lines"] = [line for line in judgement.lines() if "x64" in line]
out["numbers"] = [
    hashlib.sha256(np.asarray(f(x.astype(d))).tobytes()).hexdigest()
    for d in ("float64", "float32") for f in (v.loss, v.grad)
]
out["losses"] = {g["label"]: g["loss"] for g in data["gradients"] if g["label"].startswith("np-")}
print(json.dumps(out))
"""


def test_a_backend_without_jax_gets_no_jax_configuration(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("")
    (tmp_path / "kernels" / "square.py").write_text(NUMPY_BACKEND)
    (tmp_path / "pyproject.toml").write_text(pyproject("kernels.square"))
    r = weanj_here(tmp_path, "inputs", "regenerate")
    assert r.returncode == 0, r.stderr
    seen = {}
    for x64 in ("0", "1"):
        r = run_in(tmp_path, "-c", NUMPY_SCRIPT, env=_env(x64))
        assert r.returncode == 0, r.stderr
        seen[x64] = json.loads(r.stdout.strip().splitlines()[-1])
        got = seen[x64]
        assert got["configuration"] == [
            {"dtype": "float64", "device": "cpu"},  # no x64, no precision: none applies
            {"dtype": "float32", "device": "cpu"},
        ]
        assert "x64" not in got["key"] and got["key"]["variant"] == "np-square"
        assert got["info"]["np-square"] == got["info"]["np-square@float32"] == {}
        assert got["verdicts"]["np-square"] == got["verdicts"]["np-square@float32"] == "ok"
        # the JAX sibling is configured (its x64 line), the numpy variant is named in none
        assert got["info"]["jax-square"]["x64"]["enabled"] is (x64 == "1")
        assert got["x64 lines"] and all("np-square" not in line for line in got["x64 lines"])
    off, on = seen["0"], seen["1"]
    assert off["numbers"] == on["numbers"]  # bit for bit, whatever JAX's setting
    assert off["losses"] == on["losses"] and len(off["losses"]) == 2
    assert off["key"] == on["key"]  # one record serves both processes


# --- a real notebook (nbclient) ---------------------------------------------------------------

NOTEBOOK_CELLS = [
    "import numpy as np\nimport kernels.ramp, weanj  # the user's own module first",
    "x = np.random.default_rng(7).standard_normal(12)\n"
    "loss = np.asarray(weanj.variant('20-ramp', 'jax-ramp').loss(x))\n"
    "print(loss.dtype.name, repr(float(loss)))",
    "j = weanj.check(dtype='float64', save=False, fresh=True)\nprint(j.ok)",
]


@pytest.mark.skipif(
    importlib.util.find_spec("nbclient") is None or importlib.util.find_spec("ipykernel") is None,
    reason="needs nbclient and ipykernel (pip install -e '.[docs]')",
)
def test_a_notebook_that_imports_its_module_first_computes_in_float64(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    root = _project(tmp_path, x64=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in NOTEBOOK_CELLS])
    for key, value in _env(None).items():  # the kernel inherits it: JAX's default, off
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("JAX_ENABLE_X64", raising=False)
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    NotebookClient(
        nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(root)}}
    ).execute()

    def printed(i: int) -> list[str]:
        out = nb.cells[i].outputs
        return "".join(o.text for o in out if o.get("name") == "stdout").split()

    dtype, value = printed(1)
    assert dtype == "float64" and float(value) == pytest.approx(_ramp_loss("float64"), rel=1e-13)
    assert printed(2) == ["True"]  # as on the command line: the float64 run passes


# --- the configuration object itself ----------------------------------------------------------


def test_a_configuration_names_its_run_as_every_view_does():
    from weanj import _x64
    from weanj._model import Configuration
    from weanj._pipeline.evaluation._on_device import label_of

    on = _x64.X64(True, "x64 = true in [tool.weanj] of /p/pyproject.toml")
    for dtype, device, label in [
        ("float64", "cpu", "jax-a"),
        ("float32", "cpu", "jax-a@float32"),
        ("float64", "tpu", "jax-a@tpu"),
        ("float32", "tpu", "jax-a@float32@tpu"),
    ]:
        config = Configuration(dtype, device, on)
        assert config.label("jax-a") == label_of("jax-a", dtype, device) == label
    config = Configuration("float32", "cpu", on)
    assert config.describe() == on.describe() == f"x64 on ({on.source})"
    assert config.key_parts() == {"x64": True}
    assert Configuration("float64").key_parts() == {} and Configuration().describe() == ""
    assert Configuration("float64", "cpu", on, "highest").key_parts() == {
        "x64": True,
        "precision": "highest",
    }
