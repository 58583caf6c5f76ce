"""`weanj bench`: the record schema, the budget stop, merging reruns, and the errors.

Only the file format and the sweep logic are asserted here; the timings themselves
belong to benchmarks, not to pass/fail tests.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import time

import jax
import numpy as np
import pytest

from weanj import _bench
from weanj._cli import main
from weanj._timing import record_fields

from .helpers import PYTHON, subprocess_env

ENVIRONMENT_FIELDS = (
    "jax",
    "jaxlib",
    "device_kind",
    "cpu_model",
    "cpu_count",
    "date",
    "git_revision",
    "backend_version",
)


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("weanj: error:"), err
    return err


def test_record_schema(project, capsys):
    rc = main(
        [
            "bench",
            "01-jacobi",
            "--variants",
            "jax-jacobi",
            "--ns",
            "16",
            "8",
            "--K",
            "3",
            "--samples",
            "1",
            "--memory-Ks",
            "2",
            "5",
        ]
    )
    assert rc == 0
    out, err = capsys.readouterr()
    assert "n=8" in err and "n=16" in err  # progress, on stderr
    path = project / "results" / "01-jacobi" / "bench" / "jax-cpu.json"
    assert f"wrote {path}" in out
    payload = json.loads(path.read_text())
    env = payload["environment"]
    for key in ENVIRONMENT_FIELDS:
        assert env[key], key
    assert env["device"] == "cpu" and env["cpu_count"] >= 1

    records = payload["records"]
    by_n = [r for r in records if r["sweep"] == "n"]
    by_K = [r for r in records if r["sweep"] == "K"]
    assert len(records) == len(by_n) + len(by_K)
    assert [r["n"] for r in by_n] == [8, 16]  # swept in increasing order
    for r in records:
        for key in record_fields("01-jacobi"):
            assert key in r, key
        assert (r["variant"], r["family"], r["backend"], r["device"], r["dtype"]) == (
            "jax-jacobi",
            "jacobi",
            "jax",
            "cpu",
            "float64",
        )
        assert r["N"] == r["n"] * r["n"]
        assert isinstance(r["peak_mem_bytes"], int) and r["peak_mem_bytes"] > 0
    for r in by_n:
        assert r["K"] == 3 and r["samples"] == 1
        for key in ("forward_s", "grad_s", "compile_s"):
            assert isinstance(r[key], float) and r[key] > 0, key
    # Memory against K: compiled only, at the middle of the grid sizes.
    assert [(r["n"], r["K"]) for r in by_K] == [(16, 2), (16, 5)]
    for r in by_K:
        assert r["forward_s"] is None and r["grad_s"] is None and r["compile_s"] is None


def test_budget_stops_the_sweep(project):
    said = []
    by_backend = _bench.bench(
        "02-gauss-seidel",
        ["jax-rb"],
        sizes=[8, 4, 16],
        params={"K": 2},
        budget_s=1e-12,
        samples=1,
        memory_over=None,
        say=said.append,
    )
    records = by_backend["jax"]
    assert [r["n"] for r in records] == [4]  # every gradient exceeds the budget
    assert any("skipping n = 8, 16" in line for line in said)


def test_rerun_replaces_only_the_series_it_measured(project):
    def record(variant, n, dtype="float64", K=1, sweep="n"):
        return {
            "variant": variant,
            "dtype": dtype,
            "N": n * n,
            "n": n,
            "K": K,
            "sweep": sweep,
            "forward_s": 1.0,
            "grad_s": 2.0,
            "compile_s": 3.0,
            "peak_mem_bytes": 4,
        }

    def stored():
        (path,) = (project / "results" / "01-jacobi" / "bench").glob("*.json")
        assert path.name == "jax-cpu.json"
        return sorted(
            (r["variant"], r["dtype"], r["n"]) for r in json.loads(path.read_text())["records"]
        )

    _bench.write("01-jacobi", "cpu", {"jax": [record("jax-jacobi", 4), record("other", 4)]})
    _bench.write("01-jacobi", "cpu", {"jax": [record("jax-jacobi", 8)]})
    assert stored() == [("jax-jacobi", "float64", 8), ("other", "float64", 4)]
    _bench.write("01-jacobi", "cpu", {"jax": [record("jax-jacobi", 2, "float32")]})
    assert stored() == [
        ("jax-jacobi", "float32", 2),
        ("jax-jacobi", "float64", 8),
        ("other", "float64", 4),
    ]
    # Another K adds a series; memory-against-K records are replaced as one series.
    _bench.write("01-jacobi", "cpu", {"jax": [record("jax-jacobi", 16, K=7)]})
    _bench.write("01-jacobi", "cpu", {"jax": [record("jax-jacobi", 8, K=10, sweep="K")]})
    _bench.write("01-jacobi", "cpu", {"jax": [record("jax-jacobi", 8, K=20, sweep="K")]})
    assert stored() == [
        ("jax-jacobi", "float32", 2),
        ("jax-jacobi", "float64", 8),
        ("jax-jacobi", "float64", 8),
        ("jax-jacobi", "float64", 16),
        ("other", "float64", 4),
    ]


def test_missing_gpu_is_one_line_and_exit_2(project, capsys):
    if _has_gpu():
        pytest.skip("a GPU is visible to JAX here, so the missing-GPU error cannot occur")
    rc = main(["bench", "01-jacobi", "--device", "gpu", "--ns", "4"])
    assert rc == 2
    assert "no GPU" in _one_line_error(capsys)
    assert not (project / "results" / "01-jacobi" / "bench").exists()


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--ns", "0"], "sizes (n) must be at least 1"),
        (["--samples", "0"], "samples"),
        (["--K", "0"], "K must be at least 1"),
        (["--budget-s", "0"], "budget"),
        (["--variants", "no-such-variant"], "known variants"),
    ],
    ids=["n-zero", "samples-zero", "K-zero", "budget-zero", "unknown-variant"],
)
def test_bad_arguments_are_one_line_and_exit_2(project, capsys, argv, words):
    assert main(["bench", "01-jacobi", *argv]) == 2
    assert words in _one_line_error(capsys)


def test_functions_without_xla_are_timed_without_memory(project, monkeypatch):
    """A backend that is not JAX (as Julia through juliacall): numpy arrays in, times out,
    no XLA memory figure and no memory-against-K records."""
    from weanj import _registry
    from weanj._registry import Variant

    seen = []

    def loss(theta, uobs, K):
        seen.append(type(theta))
        return float(np.sum((theta - uobs) ** 2))

    def grad(theta, uobs, K):
        seen.append(type(theta))
        return 2 * (theta - uobs)

    fake = Variant(
        example="01-jacobi",
        name="numpy-fake",
        family="fake",
        backend="numpy",
        build=lambda: (loss, grad),
        versions=("numpy",),
    )
    monkeypatch.setitem(_registry._VARIANTS["01-jacobi"], fake.name, fake)
    by_backend = _bench.bench(
        "01-jacobi",
        ["numpy-fake"],
        sizes=[4, 6],
        params={"K": 2},
        samples=1,
        memory_over=("K", (2, 3)),
        say=lambda line: None,
    )
    assert set(seen) == {np.ndarray}
    records = by_backend["numpy"]
    assert [(r["sweep"], r["n"], r["N"]) for r in records] == [("n", 4, 16), ("n", 6, 36)]
    for r in records:
        assert r["peak_mem_bytes"] is None and r["grad_s"] > 0 and r["compile_s"] > 0
    # On a GPU run it is skipped (it runs on the CPU), not mislabelled as a GPU result.
    if _has_gpu():
        assert (
            _bench.bench(
                "01-jacobi", ["numpy-fake"], sizes=[4], device="gpu", say=lambda line: None
            )
            == {}
        )


def test_default_samples_shrink_to_fit_the_budget():
    calls = []

    def slow_grad(x):
        calls.append(x)
        time.sleep(0.02)
        return x

    # One probe call decides; a gradient slower than the budget is timed once.
    assert _bench._samples_within_budget(slow_grad, (1.0,), 64, budget_s=0.005) == 1
    assert _bench._samples_within_budget(slow_grad, (1.0,), 64, budget_s=1000.0) == 10
    assert _bench._samples_within_budget(slow_grad, (1.0,), 512, budget_s=1000.0) == 3
    assert len(calls) == 3


# --- benchmark files: concurrent runs, unreadable files, wrong types (issue 17) ---------


def _record(name, size=4, **changes):
    r = {
        "variant": name,
        "dtype": "float64",
        "N": size * size,
        "n": size,
        "K": 1,
        "sweep": "n",
        "forward_s": 1.0,
        "grad_s": 2.0,
        "compile_s": 3.0,
        "peak_mem_bytes": 4,
    }
    r.update(changes)
    return r


# A process that writes its variant's records with `_bench.write` as soon as the go file
# appears, `rounds` times (JAX and the registry stubbed out: only the file is at stake).
_BENCH_WRITER = textwrap.dedent("""
    import pathlib, sys, time
    from weanj import _bench, _registry
    _bench.environment = lambda device: {"device": device}
    _registry.find_variant = lambda example, name: None
    variant, rounds, go = sys.argv[1], int(sys.argv[2]), pathlib.Path(sys.argv[3])
    record = {"variant": variant, "dtype": "float64", "N": 16, "n": 4, "K": 1, "sweep": "n",
              "forward_s": 1.0, "grad_s": 2.0, "compile_s": 3.0, "peak_mem_bytes": 4}
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    for i in range(rounds):
        _bench.write("01-jacobi", "cpu", {"jax": [dict(record, n=4 + i, N=(4 + i) ** 2)]})
""")


def test_concurrent_writers_keep_every_record(project):
    """Writers, each on its own variant, all at once on one file: with the lock every
    series survives (without it, nearly every run of this test loses some)."""
    writers, rounds, go = 6, 8, project / "go"
    procs = []
    try:
        for i in range(writers):
            procs.append(
                subprocess.Popen(
                    [PYTHON, "-c", _BENCH_WRITER, f"v{i:02d}", str(rounds), str(go)],
                    env=subprocess_env(project),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        go.touch()
        for p in procs:
            assert p.wait(timeout=120) == 0, p.stderr.read()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.stdout.close()
            p.stderr.close()
    path = project / "results" / "01-jacobi" / "bench" / "jax-cpu.json"
    records = json.loads(path.read_text())["records"]
    # Each variant's series at n = 4, 5, 6 is one series per n (its K and dtype fixed,
    # the size swept): a rerun replaces the variant's series, so the last round remains.
    assert sorted(r["variant"] for r in records) == [f"v{i:02d}" for i in range(writers)]
    assert {r["n"] for r in records} == {4 + rounds - 1}
    folder = path.parent
    assert sorted(p.name for p in folder.iterdir()) == [".jax-cpu.json.lock", "jax-cpu.json"]


@pytest.mark.slow
def test_concurrent_bench_runs_keep_every_record(project):
    """The acceptance test of issue 17: 10 pairs of `weanj bench` on different variants,
    each pair at once (cheap settings); every pair's records are kept."""
    pairs = [("jax-jacobi", "jax-jacobi-adjoint")] * 10
    argv = ["--ns", "4", "--K", "1", "--samples", "1", "--memory-Ks"]
    path = project / "results" / "01-jacobi" / "bench" / "jax-cpu.json"
    for a, b in pairs:
        path.unlink(missing_ok=True)
        procs = [
            subprocess.Popen(
                [PYTHON, "-m", "weanj", "bench", "01-jacobi", "--variants", v, *argv],
                env=subprocess_env(project),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for v in (a, b)
        ]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
        variants = sorted(r["variant"] for r in json.loads(path.read_text())["records"])
        assert variants == sorted([a, b])


def test_an_unreadable_benchmark_file_is_moved_aside(project, capsys):
    folder = project / "results" / "01-jacobi" / "bench"
    folder.mkdir(parents=True)
    path = folder / "jax-cpu.json"
    path.write_text('{"environment": {}, "records": [')  # cut short
    _bench.write("01-jacobi", "cpu", {"jax": [_record("jax-jacobi")]})
    err = capsys.readouterr().err.strip()
    (aside,) = [p for p in folder.iterdir() if ".unreadable-" in p.name]
    assert aside.read_text() == '{"environment": {}, "records": ['  # kept, byte for byte
    assert len(err.splitlines()) == 1 and str(aside) in err
    assert [r["variant"] for r in json.loads(path.read_text())["records"]] == ["jax-jacobi"]
    assert not aside.name.endswith(".json")  # `weanj plot` does not take it for results


def test_malformed_records_send_the_file_aside_and_keep_the_good_ones(project, capsys):
    folder = project / "results" / "01-jacobi" / "bench"
    folder.mkdir(parents=True)
    path = folder / "jax-cpu.json"
    original = json.dumps({"environment": {}, "records": [_record("good"), _record("bad", N="x")]})
    path.write_text(original)
    _bench.write("01-jacobi", "cpu", {"jax": [_record("new")]})
    (aside,) = [p for p in folder.iterdir() if ".unreadable-" in p.name]
    assert aside.read_text() == original and str(aside) in capsys.readouterr().err
    assert sorted(r["variant"] for r in json.loads(path.read_text())["records"]) == ["good", "new"]


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"N": "16"}, "field N must be an integer >= 0, got '16'"),
        ({"N": True}, "field N must be an integer >= 0, got True"),
        ({"n": 4.5}, "field n must be an integer >= 0"),
        ({"K": None}, "field K must be an integer >= 0, got None"),
        ({"forward_s": "fast"}, "field forward_s must be a finite number of seconds"),
        ({"grad_s": float("nan")}, "field grad_s must be a finite number of seconds"),
        ({"compile_s": -1.0}, "field compile_s must be a finite number of seconds"),
        ({"peak_mem_bytes": 1.5}, "field peak_mem_bytes must be an integer >= 0 or null"),
        ({"dtype": 64}, "field dtype must be text, got 64"),
        ({"variant": ""}, "field variant must be text"),
        ({"extra": object()}, "cannot be written as JSON"),
        ({"extra": float("inf")}, "cannot be written as JSON"),
    ],
    ids=lambda v: str(v)[:24],
)
def test_write_results_refuses_wrong_types(project, changes, words):
    import weanj

    with pytest.raises(weanj.InputError) as excinfo:
        weanj.write_results("01-jacobi", "jax", "cpu", [_record("a"), _record("b", **changes)])
    message = str(excinfo.value)
    assert words in message and "\n" not in message
    assert not (project / "results" / "01-jacobi" / "bench").exists()


def test_write_results_takes_numpy_numbers(project):
    import weanj

    r = _record("a", N=np.int64(16), n=np.int32(4), forward_s=np.float64(0.5), grad_s=None)
    path = weanj.write_results("01-jacobi", "jax", "cpu", [r], env={})
    (stored,) = json.loads(path.read_text())["records"]
    assert stored["N"] == 16 and stored["forward_s"] == 0.5 and stored["grad_s"] is None
