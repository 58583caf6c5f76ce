"""What a user reads is what ran (issue 62, item 1; docs/DESIGN.md §8.2, "Coverage in every
headline"): a partial check never reads as a full one, a device named and absent is one
line, a device the project lists and absent is "not run" in the headline (said once, a
failure only where required, each cause once), Julia variants have no device runs, and a
Julia worker that refuses to start is in the headline.

`15-cover` (family `f`): `jax-a`, `jax-b`, `jax-c`, three correct ports of `L = Σ x²·y`,
run as a user runs them (in this process, without the stand-in: this machine has no TPU).
"""

from __future__ import annotations

import json

import pytest

from .projects import weanj_here, write_project

COVER = """\
import jax
import jax.numpy as jnp
import numpy as np
import weanj

jax.config.update("jax_enable_x64", True)

ex = weanj.register_example(weanj.Example(
    name="15-cover", arrays=("x", "y"), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8),
                           "y": np.random.default_rng(seed + 1).standard_normal(8)}))

weanj.jax_variant(ex, "jax-a", family="f", loss=lambda x, y: jnp.sum(x * x * y))
weanj.jax_variant(ex, "jax-b", family="f", loss=lambda x, y: jnp.sum(x**2 * y))
weanj.jax_variant(ex, "jax-c", family="f", loss=lambda x, y: jnp.dot(x * x, y))
"""

NO_TPU = "no TPU visible to JAX here (jax.devices('tpu') is empty)"


@pytest.fixture
def cover(tmp_path, monkeypatch):
    monkeypatch.delenv("WEANJ_STANDIN_DEVICE", raising=False)  # no TPU here, not even a stand-in
    return write_project(tmp_path, {"kernels/cover.py": COVER})


def _overall(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("overall: ")]
    return line


def test_a_check_of_some_variants_and_its_report_say_partial(cover):
    r = weanj_here(cover, "check", "--variants", "jax-a", "--dtype", "float64")
    assert r.returncode == 0, r.stdout + r.stderr
    # jax-a, alone in the check, is compared with nothing: said first (`--strict` fails it)
    assert _overall(r.stdout).startswith(
        "overall: ok — compared with nothing: 15-cover jax-a (family f: one member here); "
        "partial: 1 of 3 variants judged (2 outside --variants) — 1 example(s)"
    )
    page = weanj_here(cover, "report", "--out", "page.md")
    assert page.returncode == 0, page.stderr
    head = (cover / "page.md").read_text().splitlines()[:3]
    assert head[0] == "# weanj report: partial"
    assert head[2].startswith(
        "**overall: partial** — partial: 1 of 3 variants judged (jax-b, jax-c not in the last "
        "check: weanj check judges them); compared with nothing: 15-cover jax-a"
    )
    # the whole check judges all three: the report of it is a full one
    assert weanj_here(cover, "check", "--dtype", "float64").returncode == 0
    assert weanj_here(cover, "report", "--out", "page.md").returncode == 0
    assert (cover / "page.md").read_text().splitlines()[0] == "# weanj report: ok"


def test_the_json_of_a_partial_check_says_what_it_left_out(cover):
    from .projects import run_here

    code = (
        "import json, weanj\n"
        "j = weanj.check(variants=['jax-b'], dtype='float64', save=False, say=lambda l: None)\n"
        "print(json.dumps(j.to_json()))\n"
    )
    r = run_here(cover, code)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout.strip().splitlines()[-1])
    assert data["coverage"] == {
        "partial": True,
        "variants": 3,
        "judged": 1,
        "left_out": ["jax-a", "jax-c"],
        "devices_not_run": {},
    }
    assert data["verdict"] == "ok" and "partial: 1 of 3 variants judged" in data["headline"]


def test_a_notebooks_headline_says_partial(cover):
    from .projects import run_here

    code = (
        "import weanj\n"
        "j = weanj.check(variants=['jax-b'], dtype='float64', save=False, say=lambda l: None)\n"
        "print(j._repr_html_().split('</p>')[0])\n"
    )
    r = run_here(cover, code)
    assert r.returncode == 0, r.stderr
    head = r.stdout.strip().splitlines()[-1]
    assert "<b>weanj check</b>" in head
    assert head.endswith(
        "— compared with nothing: 15-cover jax-b (family f: one member here); "
        "partial: 1 of 3 variants judged (2 outside --variants)"
    ), head


def test_pytest_weanj_says_a_listed_device_was_not_run(cover):
    from .projects import pytest_weanj_in, user_env

    _devices(cover, "cpu", "tpu")
    env = {k: v for k, v in user_env().items() if k != "WEANJ_STANDIN_DEVICE"}
    r = pytest_weanj_in(cover, "-q", "-k", "jax-a", env=env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "weanj: not judged here: tpu: not run (no TPU visible to JAX here)" in r.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ("check", "--device", "tpu"),
        ("fuzz", "15-cover", "--device", "tpu", "--max-examples", "1", "--seed", "1"),
        ("bisect", "15-cover", "jax-a", "jax-b", "--device", "tpu"),
    ],
    ids=["check", "fuzz", "bisect"],
)
def test_a_device_named_and_absent_is_one_line_and_exit_2(cover, argv):
    r = weanj_here(cover, *argv)
    assert r.returncode == 2, r.stdout + r.stderr
    named = "jax-b@tpu cannot run here" if argv[0] == "bisect" else "--device tpu"  # its run
    assert r.stderr.strip().splitlines() == [
        f"weanj: error: {named}: {NO_TPU}; on a TPU VM: pip install -U 'jax[tpu]'"
    ]
    assert "[1/" not in r.stdout + r.stderr  # nothing ran


def _devices(root, *kinds: str) -> None:
    text = (root / "pyproject.toml").read_text()
    listed = ", ".join(f'"{k}"' for k in kinds)
    (root / "pyproject.toml").write_text(text + f"devices = [{listed}]\n")


def test_a_listed_device_absent_is_not_run_in_the_headline_said_once(cover):
    _devices(cover, "cpu", "tpu")
    r = weanj_here(cover, "check", "--dtype", "float64")
    assert r.returncode == 0, r.stdout + r.stderr
    overall = _overall(r.stdout)
    assert overall.startswith("overall: ok — tpu: not run (no TPU visible to JAX here) — 1 ex")
    said = [line for line in r.stderr.splitlines() if "tpu" in line]
    assert said == [
        f"tpu: not run: {NO_TPU}; on a TPU VM: pip install -U 'jax[tpu]' "
        "([tool.weanj] devices names it)"
    ]
    assert "@tpu" not in r.stdout + r.stderr  # no run of it listed, none failed
    data = json.loads((cover / "results" / "15-cover" / "check.json").read_text())
    assert not [c for c in data["runs"] if "@tpu" in c["case"]]


def test_a_listed_device_absent_and_required_fails_saying_it_once(cover):
    _devices(cover, "cpu", "tpu")
    r = weanj_here(cover, "check", "--dtype", "float64", "--require", "tpu")
    assert r.returncode == 1, r.stdout + r.stderr
    overall = _overall(r.stdout)
    assert overall.startswith(
        "overall: FAIL — required but not run: tpu did not run (no TPU visible to JAX here) — 1 "
    ), overall
    assert overall.count("no TPU") == 1 and len(overall) < 250


# --- on a device: the stand-in tpu (a fresh process: its XLA flag is set before JAX starts) ---

JULIA_TOO = (
    COVER
    + """
weanj.julia_variant(ex, "julia-a", family="f", file="julia/a.jl", loss="a_loss")
"""
)


def test_a_julia_variant_has_no_device_run(tmp_path):
    from .projects import run_in
    from .test_devices import standin_env

    root = write_project(tmp_path, {"kernels/cover.py": JULIA_TOO, "julia/a.jl": "# none\n"})
    argv = ("-m", "weanj", "check", "--device", "tpu", "--dtype", "float64")
    r = run_in(root, *argv, env=standin_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    data = json.loads((root / "results" / "15-cover" / "check.json").read_text())
    cases = [c["case"] for c in data["runs"] + data["pairs"] + data["skipped"]]
    assert "15-cover::f::jax-a@tpu::run" in cases  # the JAX ports run there
    assert not [c for c in cases if "julia-a@" in c], cases
    assert "julia-a@tpu" not in r.stdout + r.stderr
    assert (
        "  no device run for julia-a: not a JAX program, it runs on the CPU only (the CPU "
        "reference)" in r.stdout.splitlines()
    )


# --- a Julia worker that refuses to start -------------------------------------------------

JULIA_FIRST = COVER.replace(
    'weanj.jax_variant(ex, "jax-a"',
    'weanj.julia_variant(ex, "julia-ref", family="f", file="julia/ref.jl", loss="ref_loss")\n'
    'weanj.jax_variant(ex, "jax-a"',
)


def test_a_julia_worker_that_refuses_to_start_is_in_the_headline(tmp_path):
    """The family's reference is a Julia variant; the worker starts (a stand-in of
    juliacall) and refuses the Julia it finds: the Julia variant is unavailable, found so
    during the run, and the headline says the check leaned on JAX alone; under
    `--require julia` it fails."""
    import os

    from weanj._backends import _julia_stand_in

    from .conftest import REPO
    from .projects import run_in, user_env
    from .test_julia_worker import REAL_WORKER, STAND_INS

    files = {"kernels/cover.py": JULIA_FIRST, "julia/ref.jl": "# a stand-in reads no Julia\n"}
    root = write_project(tmp_path, files)
    path = [str(STAND_INS), str(REPO / "python"), os.environ.get("PYTHONPATH", "")]
    env = user_env(
        **{
            _julia_stand_in.WORKER_VARIABLE: REAL_WORKER,
            "PYTHONPATH": os.pathsep.join(p for p in path if p),
            "WEANJ_TEST_JULIA_VERSION": "1.14.0-DEV",  # the stand-in juliacall's Julia
        }
    )
    r = run_in(root, "-m", "weanj", "check", "--dtype", "float64", env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    data = json.loads((root / "results" / "15-cover" / "check.json").read_text())
    why = data["unavailable"]["julia-ref"]
    assert "juliacall runs Julia 1.14.0-DEV" in why
    overall = _overall(r.stdout)
    assert overall.startswith("overall: ok — JAX only: julia-ref did not run ("), overall
    argv = ("-m", "weanj", "check", "--dtype", "float64", "--require", "julia")
    required = run_in(root, *argv, env=env)
    assert required.returncode == 1, required.stdout[-3000:]
    assert _overall(required.stdout).startswith(
        "overall: FAIL — required but not run: julia-ref did not run ("
    )


def test_an_unknown_standin_device_is_one_line(cover, monkeypatch):
    monkeypatch.setenv("WEANJ_STANDIN_DEVICE", "quantum")
    r = weanj_here(cover, "check", "--dtype", "float64")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        "weanj: error: WEANJ_STANDIN_DEVICE='quantum': the stand-in plays tpu or gpu (unset "
        "the variable for none)"
    ]
