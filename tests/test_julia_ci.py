"""The CI workflow for machines with Julia (.github/workflows/julia.yml), which cannot run
here: it must be a valid GitHub Actions workflow (checked against GitHub's workflow schema
as vendored by check-jsonschema, offline), run what the Julia side needs on the Julia
versions the bridge supports, and grant julia-actions/cache what it needs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from weanj._backends import _julia_find

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
