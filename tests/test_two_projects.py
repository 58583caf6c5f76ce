"""Two projects in one process keep apart (issue 61, item 2): each front end works in the
project of the folder it stands in (`_context.current`), with that project's own
registry, x64 declarations and records.

As a notebook does it: change into project A and call `weanj.check()`, into project B and
call it again, then back and forth. Both projects name their example module
`kernels.heat`; A declares `x64 = true`, B `x64 = false`. No reset function is called
between the calls: what is judged follows the current folder alone.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import weanj

from .projects import user_env

A_KERNEL = """
import numpy as np
import jax.numpy as jnp
import weanj

ex = weanj.register_example(weanj.Example(
    name="12-warm", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8)},
))
weanj.jax_variant(ex, "jax-a", family="a", loss=lambda x: jnp.sum(jnp.sin(x) ** 2))
weanj.jax_variant(ex, "jax-a2", family="a", loss=lambda x: jnp.sum(1 - jnp.cos(x) ** 2))
"""

B_KERNEL = """
import numpy as np
import jax.numpy as jnp
import weanj

ex = weanj.register_example(weanj.Example(
    name="13-cool", arrays=("y",), wrt="y",
    generate=lambda seed: {"y": np.random.default_rng(seed).standard_normal(5)},
))
weanj.jax_variant(ex, "jax-b", family="b", loss=lambda y: jnp.sum(y ** 4), dtypes=("float32",))
"""


def _project(root, kernel: str, x64: bool):
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "__init__.py").write_text("")
    (root / "kernels" / "heat.py").write_text(kernel)
    (root / "pyproject.toml").write_text(
        f'[tool.weanj]\nexamples = ["kernels.heat"]\nx64 = {str(x64).lower()}\n'
    )
    made = subprocess.run(
        [sys.executable, "-m", "weanj", "inputs", "regenerate"],
        cwd=root,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    return root


@pytest.fixture
def two(tmp_path, monkeypatch):
    """Projects A and B written; the test's process stands in neither yet. Afterwards the
    modules they imported are forgotten (the process's, not weanj's, state)."""
    a = _project(tmp_path / "a", A_KERNEL, x64=True)
    b = _project(tmp_path / "b", B_KERNEL, x64=False)
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    before = set(sys.modules)
    yield a, b
    for name in set(sys.modules) - before:
        if name == "kernels" or name.startswith("kernels."):
            sys.modules.pop(name)


def _x64_of(judgement, example: str) -> set[str]:
    return {j.info["x64"]["source"] for j in judgement[example].judgements if "x64" in j.info}


def _check_in(root, monkeypatch):
    monkeypatch.chdir(root)
    return weanj.check(say=lambda line: None)


def test_each_project_sees_only_its_own(two, monkeypatch):
    a, b = two
    first = _check_in(a, monkeypatch)
    assert list(first.examples) == ["12-warm"] and first.ok, first.lines()
    assert _x64_of(first, "12-warm") == {f"x64 = true in [tool.weanj] of {a / 'pyproject.toml'}"}
    assert (a / "results" / "12-warm" / "evaluations").is_dir()

    second = _check_in(b, monkeypatch)  # another folder, the same process, nothing reset
    assert list(second.examples) == ["13-cool"] and second.ok, second.lines()
    assert _x64_of(second, "13-cool") == {f"x64 = false in [tool.weanj] of {b / 'pyproject.toml'}"}
    assert not (b / "results" / "12-warm").exists() and not (a / "results" / "13-cool").exists()

    # back and forth: each check reuses its own records, and sees its own examples alone
    monkeypatch.chdir(a)
    assert weanj.example_names() == ["12-warm"]
    again = weanj.check(say=lambda line: None)
    assert again.verdicts() == first.verdicts()
    assert "evaluations: reused 4 of 4" in "\n".join(again.notes)  # jax-a, jax-a2, both dtypes
    monkeypatch.chdir(b)
    assert weanj.example_names() == ["13-cool"]
    with pytest.raises(weanj.UnknownNameError):
        weanj.variant("12-warm", "jax-a")
    again = weanj.check(say=lambda line: None)
    assert again.verdicts() == second.verdicts()
    assert "evaluations: reused 1 of 1" in "\n".join(again.notes)


def test_interleaved_each_call_is_in_its_folder(two, monkeypatch):
    """The projects opened in the other order, and their calls interleaved: a variant of
    A called from B's folder still runs in A's declared x64 (its own project's)."""
    a, b = two
    monkeypatch.chdir(b)
    assert weanj.example_names() == ["13-cool"]
    monkeypatch.chdir(a)
    assert weanj.example_names() == ["12-warm"]
    v = weanj.variant("12-warm", "jax-a")
    assert v.configuration("float64").x64.enabled  # A declares x64 = true
    monkeypatch.chdir(b)
    judged = weanj.check(say=lambda line: None)
    assert list(judged.examples) == ["13-cool"]
    assert judged["13-cool"].subjects["jax-b@float32"].configuration.x64.enabled is False
    monkeypatch.chdir(a)
    judged = weanj.check("12-warm", say=lambda line: None)
    assert set(judged["12-warm"].subjects) == {"jax-a", "jax-a@float32", "jax-a2", "jax-a2@float32"}


JULIA_KERNEL = """
import numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="14-port", arrays=("x",), wrt="x",
    generate=lambda seed: {{"x": np.zeros(3)}},
))
weanj.julia_variant(ex, "julia-port", family="port", file="port.jl", loss="misfit", ad={ad!r})
"""


def test_each_projects_julia_variants_are_its_own(tmp_path, monkeypatch):
    """Both projects name a Julia variant `14-port/julia-port`, differentiated by another
    AD package: `weanj list`'s gradient column and the packages that go into the Julia
    worker's environment are the current project's, back and forth (no Julia is started)."""
    from weanj._backends._julia import gradient_by
    from weanj._backends._julia_env import ad_in_use
    from weanj._registry import registered_variant

    roots = {}
    for name, ad in (("a", "forwarddiff"), ("b", "zygote")):
        root = roots[ad] = tmp_path / name
        (root / "kernels").mkdir(parents=True)
        (root / "kernels" / "__init__.py").write_text("")
        (root / "kernels" / "port.py").write_text(JULIA_KERNEL.format(ad=ad))
        (root / "kernels" / "port.jl").write_text("misfit(x) = sum(abs2, x)\n")
        (root / "pyproject.toml").write_text('[tool.weanj]\nexamples = ["kernels.port"]\n')
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    before = set(sys.modules)
    try:
        for ad, shown in (("forwarddiff", "ForwardDiff"), ("zygote", "Zygote")) * 2:
            monkeypatch.chdir(roots[ad])
            v = registered_variant("14-port", "julia-port")  # Julia is not here: unavailable
            assert v.declared.ad == ad and ad_in_use() == [ad]
            assert gradient_by(v) == shown
    finally:
        for name in set(sys.modules) - before:
            if name == "kernels" or name.startswith("kernels."):
                sys.modules.pop(name)
