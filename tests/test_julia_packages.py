"""A user's own Julia package as the reference, its gradients by several AD packages and
by hand, and a kernel that writes its inputs (issue #50, items 2-5), tested where no
Julia runs: weanj's own worker program on the stand-in juliacall
(`tests/stand_ins/juliacall`), which answers as each AD would from the numpy kernels
below and records what crossed. Nothing here computes or claims a Julia result.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj._backends import _julia, _julia_client, _julia_env, _julia_process, _julia_stand_in
from weanj._errors import DefinitionError, ProjectError, UnavailableError
from weanj._project import project_config

from . import julia_helpers
from .julia_helpers import commands_here, one_line
from .projects import run_in, user_env, weanj_here, write_project

new_example = julia_helpers.new_example
REPO = Path(__file__).resolve().parent.parent
STAND_INS = REPO / "tests" / "stand_ins"
REAL_WORKER = shlex.join([sys.executable, str(_julia_client.WORKER_SCRIPT)])

PORTS = """\
import numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="22-ports", arrays=("x", "y"), wrt="x", params=(weanj.Param("S", default=3),),
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8),
                           "y": np.random.default_rng(seed + 1).standard_normal(8)},
))
mine = dict(family="ports", package="MyPorts", dtypes=("float64",))
weanj.julia_variant(ex, "julia-enzyme", loss="MyPorts.misfit", **mine)
weanj.julia_variant(ex, "julia-forwarddiff", loss="MyPorts.misfit", ad="forwarddiff", **mine)
weanj.julia_variant(ex, "julia-adjoint", loss="MyPorts.misfit",
                    gradient="MyPorts.misfit_adjoint", **mine)
weanj.julia_variant(ex, "julia-zygote", loss="MyPorts.misfit", ad="zygote", **mine)
weanj.julia_variant(ex, "julia-writes", loss="MyPorts.misfit_writes", **mine)
weanj.julia_variant(ex, "julia-loose", family="loose", file="julia/loose.jl",
                    loss="misfit", dtypes=("float64",))
"""

# What the stand-in juliacall computes for the package and the loose file: Σ (Mˢx − y)²
# and its gradient 2 Mˢ(Mˢx − y) (M symmetric), in numpy; Zygote refuses the kernel as
# Zygote refuses code that writes arrays; `misfit_writes` writes its input y.
KERNELS = """
import numpy as np

def smoothed(v, S):
    for _ in range(S):
        v = (np.roll(v, 1) + 2 * v + np.roll(v, -1)) / 4
    return v

def misfit(x, y, S):
    return x.dtype.type(np.sum((smoothed(x, S) - y) ** 2))

def gradients(x, y, S):
    return [misfit_adjoint(x, y, S), None]

def misfit_adjoint(x, y, S):
    return (2 * smoothed(smoothed(x, S) - y, S)).astype(x.dtype)

def misfit_writes(x, y, S):
    y[0] += 1.0
    return misfit(x, y, S)

ZYGOTE = "Mutating arrays is not supported -- called setindex!(Vector{Float64}, ...)"
KERNELS = {
    "package MyPorts": {
        "misfit": (misfit, gradients, {"zygote": ZYGOTE}),
        "misfit_adjoint": misfit_adjoint,
        "misfit_writes": (misfit_writes, gradients),
    },
    "loose.jl": {"misfit": (misfit, gradients)},
}
"""

ENVIRONMENT = {
    "Project.toml": (
        'name = "MyPorts"\nuuid = "5d1b5b8e-6a2f-4f0e-9d55-1b4a1b0c7e11"\nversion = "0.1.0"\n'
    ),
    "Manifest.toml": (
        "# This file is machine-generated - editing it directly is not advised\n\n"
        'julia_version = "1.11.5"\nmanifest_format = "2.0"\n'
        'project_hash = "da39a3ee5e6b4b0d3255bfef95601890afd80709"\n\n[deps]\n'
    ),
    "src/MyPorts.jl": (
        'module MyPorts\ninclude("smooth.jl")\n'
        "misfit(x, y, S) = sum(abs2, smoothed(x, S) .- y)\n"
        "misfit_adjoint(x, y, S) = 2 .* smoothed(smoothed(x, S) .- y, S)\n"
        "misfit_writes(x, y, S) = (y[1] += 1; misfit(x, y, S))\nend\n"
    ),
    "src/smooth.jl": "smoothed(v, S) = v  # read by no Julia here\n",
}


def ports_project(root: Path) -> tuple[Path, dict[str, str], Path, Path]:
    """The user project: its example module, a loose Julia file, and its own Julia
    environment `julia/MyPorts` (the package MyPorts, dev'ed in place) named by
    `[tool.weanj.julia] project`; the environment of its commands; the stand-in's record;
    the environment folder."""
    env_folder = root / "julia" / "MyPorts"
    files = {"ports.py": PORTS, "julia/loose.jl": "misfit(x, y, S) = 0.0  # stand-in\n"}
    files.update({f"julia/MyPorts/{k}": v for k, v in ENVIRONMENT.items()})
    write_project(root, files, regenerate=False)
    with (root / "pyproject.toml").open("a") as f:
        f.write('\n[tool.weanj.julia]\nproject = "julia/MyPorts"\n')
    done = weanj_here(root, "inputs", "regenerate")
    assert done.returncode == 0, done.stderr
    kernels = root / "stand_in_kernels.py"
    kernels.write_text(KERNELS)
    record = root / "record.jsonl"
    path = [str(STAND_INS), str(REPO / "python"), os.environ.get("PYTHONPATH", "")]
    env = user_env(
        **{
            _julia_stand_in.WORKER_VARIABLE: REAL_WORKER,
            "PYTHONPATH": os.pathsep.join(p for p in path if p),
            "WEANJ_TEST_RECORD": str(record),
            "WEANJ_TEST_USER_KERNELS": str(kernels),
        }
    )
    return root, env, record, env_folder


def recorded(record: Path, kind: str) -> list[dict]:
    if not record.exists():
        return []
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    return [e for e in entries if e["call"] == kind]


def file_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def progress(output: str, label: str) -> str:
    """How `weanj check -v` said it got an evaluation: `reused` or its seconds."""
    (line,) = [x for x in output.splitlines() if f"22-ports {label}:" in x]
    return line.split(f"22-ports {label}:")[1].split(",")[0].strip()


def check_json(root: Path) -> dict:
    return json.loads((root / "results" / "22-ports" / "check.json").read_text())


JUDGED = ["julia-enzyme", "julia-forwarddiff", "julia-adjoint"]


def test_a_users_package_is_the_reference_of_three_gradients_and_its_environment_is_kept(
    tmp_path,
):
    """Issue #50's acceptance, with the stand-in: the package in its own environment is
    loaded (`using MyPorts`) after the environment is stacked; Enzyme, ForwardDiff (through
    DifferentiationInterface) and the hand-written adjoint are judged against each other
    (three pairs, ok); Zygote refusing the kernel and the kernel writing its input y are
    each their variant's `error`, one line naming the cause; a second check reuses every
    Julia record and starts no worker; an edit of one file of the package recomputes
    exactly the package's variants; the user's environment is byte-identical."""
    root, env, record, env_folder = ports_project(tmp_path)
    before = file_hashes(env_folder)

    # the first and the third check in this process, as a fresh one runs them (the worker a
    # process of its own either way); the second a fresh process: what it reuses is what the
    # first left on disk
    with commands_here(env):
        first = weanj_here(root, "check", "-v")
    output = first.stdout + first.stderr
    assert first.returncode == 1, output  # the two errors
    assert "Traceback" not in output
    (stack,) = recorded(record, "stack")
    assert stack["environment"] == str(env_folder)
    judged = check_json(root)
    pairs = {tuple(sorted(p["subjects"])): p["verdict"] for p in judged["pairs"]}
    assert {k: v for k, v in pairs.items() if set(k) <= set(JUDGED)} == {
        ("julia-adjoint", "julia-enzyme"): "ok",
        ("julia-adjoint", "julia-forwarddiff"): "ok",
        ("julia-enzyme", "julia-forwarddiff"): "ok",
    }
    faults = judged["faults"]
    writes = one_line(faults["julia-writes"]["reason"])
    assert "MyPorts.misfit_writes wrote its input y (not differentiated)" in writes
    zygote = one_line(faults["julia-zygote"]["reason"])
    assert "Zygote (ad='zygote') cannot differentiate MyPorts.misfit, which writes" in zygote
    assert {c["ad"] for c in recorded(record, "ad_loss_and_gradient")} == {
        "forwarddiff",
        "zygote",
    }
    assert recorded(record, "handwritten_loss_and_gradient")
    assert set(faults) == {"julia-writes", "julia-zygote"}

    again = run_in(root, "-m", "weanj", "check", "-v", env=env)
    assert again.returncode == 1, again.stdout + again.stderr
    assert len(recorded(record, "start")) == 1  # every Julia record reused: no worker
    labels = [*JUDGED, "julia-loose"]
    assert all(progress(again.stderr, label) == "reused" for label in labels)

    with (env_folder / "src" / "smooth.jl").open("a") as f:
        f.write("# an edit\n")
    with commands_here(env):
        edited = weanj_here(root, "check", "-v")
    assert edited.returncode == 1, edited.stdout + edited.stderr
    assert len(recorded(record, "start")) == 2
    assert [progress(edited.stderr, label) == "reused" for label in labels] == [
        False,
        False,
        False,
        True,
    ]
    after = file_hashes(env_folder)
    after.pop("src/smooth.jl")
    before.pop("src/smooth.jl")
    assert after == before  # weanj wrote nothing into the user's environment

    # `weanj list` and `weanj diff` start no worker (what a variant computes with is known
    # before one starts): run in this process, as a fresh one runs them
    with commands_here(env):
        listed = weanj_here(root, "list").stdout
        diff = weanj_here(root, "diff", "22-ports").stdout
    assert len(recorded(record, "start")) == 2  # neither started a worker
    assert "julia-forwarddiff        (gradient: ForwardDiff) available" in listed
    assert "julia-adjoint            (gradient: hand-written) available" in listed
    assert "julia-enzyme             (gradient: Enzyme) available" in listed
    (line,) = [
        x for x in diff.splitlines() if x.split()[:3] == ["julia-forwarddiff", "ports", "float64"]
    ]
    assert "gradient: ForwardDiff (not resolved yet) through DifferentiationInterface" in line
    assert f"MyPorts from {env_folder}" in line
    (line,) = [
        x for x in diff.splitlines() if x.split()[:3] == ["julia-adjoint", "ports", "float64"]
    ]
    assert "gradient: hand-written MyPorts.misfit_adjoint" in line


# --- one line for each mistake ---------------------------------------------------------


def small(new_example):
    return new_example(
        "23-small",
        arrays=("x", "y"),
        wrt="x",
        generate=lambda seed: {"x": np.ones(3), "y": np.zeros(3)},
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"ad": "tapenade"}, "ad must be one of 'enzyme', 'forwarddiff', 'mooncake'"),
        ({"ad": "zygote", "gradient": "adj"}, "give one of them"),
        ({"ad": "forwarddiff", "function": "const"}, "are Enzyme's options, not forwarddiff's"),
        ({"gradient": "adj", "runtime_activity": True}, "Enzyme's options"),
        ({"gradient": "not a name"}, "gradient must name a Julia function"),
        ({"package": "My-Ports"}, "package must be a Julia package's name"),
        ({"package": "MyPorts", "file": "a.jl"}, "file= or package=, not both"),
    ],
)
def test_julia_variant_mistakes_are_one_line(new_example, options, message):
    ex = small(new_example)
    with pytest.raises(DefinitionError) as caught:
        weanj.julia_variant(ex, "julia-x", family="f", loss="loss", **options)
    assert message in one_line(str(caught.value))


def test_a_package_variant_without_an_environment_says_what_to_add(
    new_example, tmp_path, monkeypatch
):
    (tmp_path / "pyproject.toml").write_text("[tool.weanj]\nexamples = []\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    monkeypatch.setenv(_julia_stand_in.WORKER_VARIABLE, REAL_WORKER)
    ex = small(new_example)
    v = weanj.julia_variant(ex, "julia-p", family="f", loss="MyPorts.misfit", package="MyPorts")
    assert "needs [tool.weanj.julia] project" in one_line(v.unavailable_reason())
    with (tmp_path / "pyproject.toml").open("a") as f:
        f.write('\n[tool.weanj.julia]\nproject = "env"\n')
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "Project.toml").write_text('name = "Other"\n')
    assert "has no Manifest.toml" in one_line(v.unavailable_reason())
    (tmp_path / "env" / "Manifest.toml").write_text('manifest_format = "2.0"\n')
    assert "does not hold MyPorts" in one_line(v.unavailable_reason())


@pytest.mark.parametrize(
    "table, message",
    [
        ("[tool.weanj.julia]\nproject = 3\n", "project must be the path of a Julia environment"),
        ('[tool.weanj.julia]\nprojects = "env"\n', "takes one key"),
    ],
)
def test_the_julia_table_is_checked(tmp_path, table, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.weanj]\nexamples = []\n\n{table}")
    with pytest.raises(ProjectError) as caught:
        project_config(tmp_path)
    assert message in one_line(str(caught.value))


def test_only_the_ad_packages_a_project_uses_join_the_environment(new_example, tmp_path):
    """juliapkg's requirements name ForwardDiff once a variant uses it, with weanj's bound,
    and no other AD package (Enzyme is weanj's own; DI and ADTypes come with WeanJ)."""
    sources = REPO / "julia"
    written = _julia_env.write_requirements(tmp_path, tmp_path / "cache", sources)
    packages = json.loads((written / "juliapkg.json").read_text())["packages"]
    assert set(packages) == {"WeanJ"}
    ex = small(new_example)
    weanj.julia_variant(ex, "julia-fd", family="f", loss="loss", file="a.jl", ad="forwarddiff")
    written = _julia_env.write_requirements(tmp_path, tmp_path / "cache", sources)
    packages = json.loads((written / "juliapkg.json").read_text())["packages"]
    assert packages["ForwardDiff"] == {
        "uuid": "f6369f11-7733-5829-9624-2563aa707210",
        "version": "0.10.36, 1",
    }
    assert set(packages) == {"WeanJ", "ForwardDiff"}


def test_the_worker_log_is_never_written_through_a_link(tmp_path, monkeypatch):
    """A `worker.log` that is a symbolic link to a file elsewhere: the worker does not
    start, one line says why, and the file it points at is byte-identical."""
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's own notes\n")
    root = tmp_path / "project"
    folder = _julia_process.work_folder(root)
    folder.mkdir(parents=True)
    (folder / "worker.log").symlink_to(outside)
    monkeypatch.setitem(_julia_process._LOG, "started", False)
    with pytest.raises(UnavailableError) as caught:
        _julia_process.open_log(folder, root)
    assert "is a symbolic link" in one_line(str(caught.value))
    assert outside.read_text() == "the user's own notes\n"
    # a julia folder that is itself a link out of the project
    linked = tmp_path / "linked"
    (linked / ".weanj-cache").mkdir(parents=True)
    (linked / ".weanj-cache" / "julia").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(UnavailableError) as caught:
        _julia_process.open_log(_julia_process.work_folder(linked), linked)
    assert "lies outside the project" in one_line(str(caught.value))
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_what_a_variant_computes_with_is_in_its_backend_version(new_example, monkeypatch):
    """The AD package and DifferentiationInterface, with the versions their Manifests hold
    (none yet here), or the hand-written function, follow the worker's identity."""
    monkeypatch.setenv(_julia_stand_in.WORKER_VARIABLE, REAL_WORKER)
    ex = small(new_example)
    fd = weanj.julia_variant(ex, "julia-fd", family="f", loss="l", file="a.jl", ad="mooncake")
    by_hand = weanj.julia_variant(ex, "julia-h", family="f", loss="l", file="a.jl", gradient="g")
    assert fd.backend_version().startswith(_julia_env.identity())
    assert "gradient: Mooncake (not resolved yet) through DifferentiationInterface" in (
        fd.backend_version()
    )
    assert by_hand.backend_version().endswith("gradient: hand-written g")
    assert _julia.gradient_by(fd) == "Mooncake" and _julia.gradient_by(by_hand) == "hand-written"


@pytest.mark.parametrize(
    "variable, value, variant, message",
    [
        (
            "WEANJ_TEST_NO_AD",
            "ForwardDiff",
            "julia-forwarddiff",
            "ad='forwarddiff' needs the Julia package ForwardDiff, which does not load",
        ),
        (
            "WEANJ_TEST_NO_PACKAGE",
            "MyPorts",
            "julia-enzyme",
            "the Julia package MyPorts does not load",
        ),
    ],
)
def test_an_ad_package_or_a_users_package_that_does_not_load_is_one_line(
    tmp_path, variable, value, variant, message
):
    """`weanj run` of a variant whose AD package, or the user's package, does not load in
    the worker: exit 2, one error line naming the package and the log, no traceback (run
    in this process as a fresh one runs it; the worker is a process of its own)."""
    root, env, _, _ = ports_project(tmp_path)
    with commands_here({**env, variable: value}):
        done = weanj_here(root, "run", "22-ports", variant)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    # the one message, as the command line wraps it for the terminal
    (line,) = [x for x in output.replace("\n  ", " ").splitlines() if message in x]
    assert line.startswith("weanj: error: ")
    assert "(log: " in line and "worker.log" in output
