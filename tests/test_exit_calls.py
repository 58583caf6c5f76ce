"""`sys.exit`, `os._exit`, `SystemExit` and `KeyboardInterrupt` in a user's code: at an
example module's import, one error naming the module (with what it registered taken
back); while a variant is evaluated, that variant's `error` (it used to end `weanj check`
with 0); a project whose modules register nothing checks nothing (exit 2)."""

from __future__ import annotations

import json
import os

import pytest

from .helpers import assert_one_line_error
from .projects import import_failure, weanj_here, weanj_in

EXITS = {
    "sys-exit-0": ("import sys\nsys.exit(0)\n", "called sys.exit(0) on import"),
    "os-exit-0": ("import os\nos._exit(0)\n", "called os._exit(0) on import"),
    # `raise SystemExit` is sys.exit(None) (exit status 0), said as such since the redesign
    "systemexit": ("raise SystemExit\n", "called sys.exit(None) on import"),
    "keyboardinterrupt": ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt on import"),
}


@pytest.mark.parametrize("what", sorted(EXITS))
def test_a_module_that_exits_at_import_is_an_error_naming_it(tmp_path, monkeypatch, what):
    body, words = EXITS[what]
    module = "exits_" + what.replace("-", "_")
    assert words in import_failure(tmp_path, monkeypatch, module, body)
    assert os._exit.__module__ in ("posix", "nt")  # the real os._exit is back


def test_check_of_a_project_whose_modules_exit_or_register_nothing(tmp_path):
    """In a user's project: `os._exit(0)` at import is exit 2 naming the module (not a
    silent 0), and modules that register no example check nothing: exit 2 too."""
    (tmp_path / "pyproject.toml").write_text('[tool.weanj]\nexamples = ["kernels"]\n')
    (tmp_path / "kernels.py").write_text("import os\nos._exit(0)\n")
    r = weanj_in(tmp_path, "check")
    assert r.returncode == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "example module 'kernels'", "called os._exit(0) on import")
    (tmp_path / "kernels.py").write_text("x = 1  # registers nothing\n")
    r = weanj_here(tmp_path, "check")  # in this process (nothing exits), as a fresh one runs it
    assert r.returncode == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "no examples to check in project", str(tmp_path))


EXITING_VARIANTS = """\
import os, sys
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="12-exits", arrays=("a",), wrt="a",
    generate=lambda seed: {"a": np.random.default_rng(seed).standard_normal(4)},
))

@weanj.jax_variant(ex, "jax-good", family="f")
def good(a):
    return jnp.sum(a ** 2)

@weanj.jax_variant(ex, "jax-sys-exit", family="f")
def sys_exit(a):
    sys.exit(0)

@weanj.jax_variant(ex, "jax-os-exit", family="f")
def os_exit(a):
    os._exit(0)
"""


def _line(text: str) -> int:
    """The line of `kernels.py` (EXITING_VARIANTS) that holds `text`: where it exits."""
    return EXITING_VARIANTS.splitlines().index(text) + 1


def test_a_variant_that_exits_while_evaluated_is_its_error_not_a_pass(tmp_path):
    """`sys.exit(0)` or `os._exit(0)` in a loss used to end `weanj check` with 0. Each is
    now that variant's `error` (one `run` case, with the command that reproduces it); the
    pairs with it are not compared, and the good variant is judged as usual."""
    (tmp_path / "pyproject.toml").write_text('[tool.weanj]\nexamples = ["kernels"]\n')
    (tmp_path / "kernels.py").write_text(EXITING_VARIANTS)
    assert weanj_here(tmp_path, "inputs", "regenerate").returncode == 0  # nothing evaluated
    r = weanj_in(tmp_path, "check", "--dtype", "float64")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    judged = json.loads((tmp_path / "results" / "12-exits" / "check.json").read_text())
    assert {j["case"]: j["verdict"] for j in judged["runs"]} == {
        "12-exits::f::jax-good::run": "ok",
        "12-exits::f::jax-sys-exit::run": "error",
        "12-exits::f::jax-os-exit::run": "error",
    }
    assert judged["faults"] == {
        "jax-sys-exit": {
            "verdict": "error",
            "reason": "jax-sys-exit raised CalledExit: 12-exits jax-sys-exit called sys.exit(0) "
            f"(at kernels.py:{_line('    sys.exit(0)')})",
            "command": "weanj run 12-exits jax-sys-exit",
        },
        "jax-os-exit": {
            "verdict": "error",
            "reason": "jax-os-exit raised CalledExit: os._exit(0) was called "
            f"(at kernels.py:{_line('    os._exit(0)')})",
            "command": "weanj run 12-exits jax-os-exit",
        },
    }
    checks = {j["case"]: j["verdict"] for j in judged["checks"]}
    assert checks["12-exits::f::jax-good::taylor"] == checks["12-exits::f::jax-good::jvp"] == "ok"
    blocked = {j["case"]: j.get("blocked_by") for j in judged["skipped"]}
    assert blocked["12-exits::f::jax-good~jax-sys-exit"] == "jax-sys-exit"
    assert blocked["12-exits::f::jax-good~jax-os-exit"] == "jax-os-exit"
    assert judged["verdict"] == "error" and len(judged["failures"]) == 2
    assert not (tmp_path / "results" / "12-exits" / "gradients" / "jax-sys-exit.h5").exists()
