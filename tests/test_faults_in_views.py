"""A variant's fault in every view, and where a port raised (issue 42, items 3 and 7).

A user project run as a user runs it: `41-faults` holds a correct variant, one whose
float32 run comes back float64 (a default-dtype `jnp.arange(n) / n` under x64, declared
on), and one that raises TypeError in a helper of the project's own module (an edge slice
one element short). `weanj check` names each once; `weanj diff`, which judges the store
and runs nothing, lists the same faults (a fault saves no file) with their pairs not
compared, and says where the gradient checks are; the exception names its file and line,
and `weanj run --traceback` prints the whole traceback. A failing run is a subprocess (its
exit status, its stderr); the other commands run in this process as a fresh one runs them
(`projects.weanj_here`).
"""

from __future__ import annotations

import json

import pytest

from .projects import weanj_here, weanj_in, write_project

FAULTS = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="41-faults", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8)}))

@weanj.jax_variant(ex, "jax-plain", family="f")
def plain(x):
    return jnp.sum(jnp.arange(8.0, dtype=x.dtype) / 8 * x**2)

@weanj.jax_variant(ex, "jax-ramp", family="f")
def ramp(x):
    return jnp.sum(jnp.arange(x.shape[0]) / x.shape[0] * x**2)


def _edges(x):
    return x[1:] + x[:-2]


@weanj.jax_variant(ex, "jax-edges", family="f")
def edges(x):
    return jnp.sum(_edges(x) ** 2)
"""

LINE = FAULTS.splitlines().index("    return x[1:] + x[:-2]") + 1
RAISED = (
    "jax-edges raised TypeError: add got incompatible shapes for broadcasting: (7,), (6,). "
    f"(at kernels/faults.py:{LINE})"
)


def _unwrapped(stderr: str) -> str:
    """A message as one line (the command line wraps a long one at spaces)."""
    return " ".join(line.strip() for line in stderr.strip().splitlines())


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    root = write_project(tmp_path_factory.mktemp("faults"), {"kernels/faults.py": FAULTS})
    check = weanj_here(root, "check")
    diff = weanj_here(root, "diff", "41-faults")
    diff_json = weanj_here(root, "diff", "41-faults", "--json")
    return root, check, diff, json.loads(diff_json.stdout)


def test_check_names_the_file_and_line_where_a_port_raised(faults):
    root, check, _, _ = faults
    assert check.returncode == 1
    assert f"    jax-edges (float64, float32): error: {RAISED} (reproduce: " in check.stdout
    run = weanj_in(root, "run", "41-faults", "jax-edges")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert _unwrapped(run.stderr) == (
        f"weanj: error: {RAISED} (reproduce: `weanj run 41-faults jax-edges`); nothing was "
        "saved (--traceback prints the whole traceback)"
    )
    whole = weanj_here(root, "run", "41-faults", "jax-edges", "--traceback")
    assert whole.returncode == 1
    assert "Traceback (most recent call last)" in whole.stderr
    assert f'kernels/faults.py", line {LINE}, in _edges' in whole.stderr
    assert f"weanj: error: {RAISED}" in _unwrapped(whole.stderr)  # then its one line


def test_diff_lists_every_fault_of_the_last_check_with_its_pairs_not_compared(faults):
    root, check, diff, data = faults
    checked = json.loads((root / "results" / "41-faults" / "check.json").read_text())
    assert set(checked["faults"]) == {"jax-ramp@float32", "jax-edges", "jax-edges@float32"}
    assert not (root / "results" / "41-faults" / "gradients" / "float32" / "jax-ramp.h5").exists()
    # the same lines as check's, from the store's point of view
    assert diff.returncode == 1
    for who, f in (("jax-edges (float64, float32)", checked["faults"]["jax-edges"]),):
        assert f"    {who}: error: {f['reason']} (reproduce: `{f['command']}`)" in diff.stdout
    promoted = checked["faults"]["jax-ramp@float32"]
    assert "default-dtype arrays (jnp.arange" in promoted["reason"]
    assert f"    jax-ramp@float32: error: {promoted['reason']}" in diff.stdout
    assert {label: f["reason"] for label, f in data["faults"].items()} == {
        label: f["reason"] for label, f in checked["faults"].items()
    }
    blocked = {j["blocked_by"] for j in data["skipped"] if j.get("blocked_by")}
    # jax-edges@float32 is judged against its own float64 run, at fault too: that names it
    assert blocked == {"jax-ramp@float32", "jax-edges"}
    assert "  not compared: " in diff.stdout
    # diff runs no gradient check: it says so, and where the last check's are
    assert (
        "  gradient checks (Taylor, jvp): judged by `weanj check`, not by diff "
        "(results/41-faults/check.json): all passed or skipped"
    ) in diff.stdout


def test_the_report_and_pytest_weanj_list_the_same_faults(faults):
    from .projects import pytest_weanj_in

    root, _, _, _ = faults
    report = weanj_here(root, "report")
    assert report.returncode == 0, report.stderr
    page = (root / "results" / "report.html").read_text()
    assert "jax-ramp@float32" in page
    assert "returned float64 for float32 inputs (the loss): x64 is on" in page
    assert f"(at kernels/faults.py:{LINE})" in page
    tests = pytest_weanj_in(root, "-rf", "-q", "-p", "no:randomly")
    assert tests.returncode == 1
    failed = [line for line in tests.stdout.splitlines() if line.startswith("FAILED ")]
    assert any("41-faults::f::jax-ramp@float32::run" in line for line in failed), tests.stdout
    assert any("41-faults::f::jax-edges::run" in line for line in failed), tests.stdout
    assert f"(at kernels/faults.py:{LINE})" in tests.stdout
