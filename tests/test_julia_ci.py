"""The CI workflow for machines with Julia (.github/workflows/julia.yml), which cannot run
here: it must be a valid GitHub Actions workflow (checked against GitHub's workflow schema
as vendored by check-jsonschema, offline), run what the Julia side needs on the Julia
versions the bridge supports, including the user project of `julia/example` (a Julia
package of its own as the reference, two AD packages, a hand-written gradient), and grant
julia-actions/cache what it needs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from weanj._backends import _julia_find, _julia_stand_in

from .projects import run_in, user_env

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "julia.yml"


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install 'weanj[test]')")
    return found


def test_the_workflow_is_valid_for_github_actions():
    checker = _tool("check-jsonschema")
    done = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_runs_the_julia_side_on_the_supported_versions():
    yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml comes with check-jsonschema")
    workflow = yaml.YAML(typ="safe").load(WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    assert job["runs-on"].startswith("ubuntu")
    supported = {f"{major}.{minor}" for major, minor in _julia_find.SUPPORTED_MINORS}
    assert set(job["strategy"]["matrix"]["julia"]) == supported
    # every minor version of the supported range, 1.10 to 1.13
    first, below = _julia_find.MINIMUM, _julia_find.BELOW
    assert supported == {f"1.{minor}" for minor in range(first[1], below[1])}
    uses = {step["uses"].split("@")[0]: step for step in job["steps"] if "uses" in step}
    # Python 3.11 from uv's own builds, which carry OpenSSL 3.5: Julia 1.12 and later need
    # it in the Python that embeds them (weanj refuses them otherwise), and the runner's
    # Pythons link Ubuntu's OpenSSL 3.0.
    setup_uv = uses["astral-sh/setup-uv"]["with"]
    assert setup_uv["python-version"] == "3.11" and setup_uv["activate-environment"] == "true"
    assert job["env"]["UV_PYTHON_PREFERENCE"] == "only-managed"
    assert "actions/setup-python" not in uses
    assert uses["julia-actions/setup-julia"]["with"]["version"] == "${{ matrix.julia }}"
    # The worker's log comes back with the report, wherever the job stopped.
    uploaded = uses["actions/upload-artifact"]
    assert ".weanj-cache/julia/worker.log" in uploaded["with"]["path"]
    assert uploaded["if"] == "always()" and uploaded["with"]["include-hidden-files"] is True
    commands = [step["run"] for step in job["steps"] if "run" in step]
    expected = [
        'pip install -e ".[all]"',
        "fatou lint julia/",
        "julia --project=julia -e 'using Pkg; Pkg.instantiate(); Pkg.test()'",  # type checks too
        "weanj run 01-jacobi julia-jacobi",  # the Julia worker's first start
        "python -m pytest -m julia -rs",
        "weanj check",
    ]
    at = 0
    for fragment in expected:  # present, in this order
        found = [i for i in range(at, len(commands)) if fragment in commands[i]]
        assert found, f"no step runs {fragment!r} (after step {at})"
        at = found[0]


def test_the_workflow_lets_the_cache_prune_its_entries_and_nothing_more():
    """julia-actions/cache deletes this branch's older cache entries through the GitHub
    API, which needs `actions: write` (its action.yml: the `token` input, the
    `delete-old-caches` post step); the checkout needs `contents: read`; nothing else."""
    yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml comes with check-jsonschema")
    workflow = yaml.YAML(typ="safe").load(WORKFLOW.read_text())
    assert workflow["permissions"] == {"contents": "read", "actions": "write"}
    (job,) = workflow["jobs"].values()
    assert "permissions" not in job  # the workflow's, not widened per job
    steps = [step.get("uses", "").split("@")[0] for step in job["steps"]]
    assert "julia-actions/cache" in steps
    # The cache comes after setup-julia (it reads the depot path Julia sets) and before
    # anything that installs Julia packages.
    at = steps.index("julia-actions/cache")
    assert steps.index("julia-actions/setup-julia") < at
    first_julia = next(
        i for i, step in enumerate(job["steps"]) if "julia --project" in step.get("run", "")
    )
    assert at < first_julia


EXAMPLE = REPO / "julia" / "example"


def test_the_workflow_runs_the_user_project_with_its_own_package():
    """After the gallery (and whatever it found), the example project: the user's own
    instantiation of their environment, then weanj, then the environment's files checked
    unchanged; its worker's log comes back too."""
    yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml comes with check-jsonschema")
    workflow = yaml.YAML(typ="safe").load(WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    (step,) = [s for s in job["steps"] if s.get("working-directory") == "julia/example"]
    assert step["if"] == "success() || failure()"
    lines = [line.strip() for line in step["run"].splitlines()]
    assert lines[0] == "julia --project=MyPorts -e 'using Pkg; Pkg.instantiate()'"
    assert lines[1].startswith("sha256sum MyPorts/Project.toml MyPorts/Manifest.toml >")
    assert lines[2:6] == ["weanj inputs regenerate", "weanj list", "weanj check", "weanj check"]
    assert lines[6].startswith("sha256sum --check")
    uses = {s["uses"].split("@")[0]: s for s in job["steps"] if "uses" in s}
    path = uses["actions/upload-artifact"]["with"]["path"]
    assert "julia/example/.weanj-cache/julia/worker.log" in path


def test_the_example_project_declares_three_julia_gradients_of_its_package(tmp_path):
    """julia/example, copied out of the repository with the Manifest its user would
    instantiate: `weanj list` (with a stand-in worker configured, so that Julia counts as
    available) shows the package's three Julia variants and how each gets its gradient."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    (root / "MyPorts" / "Manifest.toml").write_text('manifest_format = "2.0"\n\n[deps]\n')
    env = user_env(**{_julia_stand_in.WORKER_VARIABLE: "stand-in-never-started"})
    done = run_in(root, "-m", "weanj", "list", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    for name, how in [
        ("julia-ports", "Enzyme"),
        ("julia-ports-forwarddiff", "ForwardDiff"),
        ("julia-ports-adjoint", "hand-written"),
    ]:
        assert f"{name:<24} (gradient: {how}) available" in done.stdout
    assert f"{'jax-ports':<24} available" in done.stdout
