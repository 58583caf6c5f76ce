"""`weanj bench`: the record schema, the budget stop, merging reruns, and the errors.

Only the file format and the sweep logic are asserted here; the timings themselves
belong to benchmarks, not to pass/fail tests.
"""

from __future__ import annotations

import json
import time

import jax
import numpy as np
import pytest

from weanj import _bench
from weanj._cli import main
from weanj._timing import record_fields

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
