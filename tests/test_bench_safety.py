"""`weanj bench` refuses what it cannot do before it starts, and keeps what it measured:
a size out of reach is refused before anything is allocated; earlier records that are
not what weanj writes are set aside, never a traceback after the measurement; records
of typed (float, bool) parameters are written."""

from __future__ import annotations

import json
import tracemalloc

import pytest

import weanj
from weanj import _registry
from weanj._cli import main

from .helpers import assert_one_line_error, bench_record, typed_example

EX = "01-jacobi"


def _bench_record(variant: str, n: int, **changes) -> dict:
    """A benchmark record of 01-jacobi at size n, K = 2, with its timings and memory."""
    timings = {"forward_s": 1e-4, "grad_s": 2e-4, "compile_s": 0.1, "peak_mem_bytes": 100}
    return bench_record(variant, n, 2, **timings, size=n) | changes


@pytest.mark.parametrize(
    "argv",
    [["--sizes", "99999999"], ["--sizes", "4", "--over", "n", "99999999"]],
    ids=["size", "dimension"],
)
def test_a_size_out_of_reach_is_refused_before_anything_is_allocated(project, capsys, argv):
    """(The bound of 30 s is gone: the memory bound says "before anything is allocated"
    whatever the machine's load.)"""
    tracemalloc.start()
    try:
        code = main(["bench", EX, "--variants", "jax-jacobi", *argv])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2
    # 2 arrays of n² float64: 2·8·(10⁸)² bytes, about 1.5e8 GiB
    assert_one_line_error(
        capsys.readouterr().err,
        f"{EX}: n = 99999999 would need about 1.49e+08 GiB",
        "choose a smaller n",
    )
    assert peak < 64 * 2**20, peak
    assert not (project / "results" / EX / "bench").exists()


def test_bad_earlier_records_are_skipped_and_this_runs_numbers_written(project, capsys):
    """A list where text or a number belongs (in the contract's fields or in the other
    fields weanj writes, such as `sweep`) used to end `bench` in a traceback after it had
    measured, losing that run's numbers."""
    folder = project / "results" / EX / "bench"
    folder.mkdir(parents=True)
    path = folder / "jax-cpu.json"
    earlier = [
        _bench_record("jax-jacobi", 16),
        _bench_record(["jax-jacobi"], 32),
        _bench_record("jax-jacobi", 64, sweep=["n"]),
        _bench_record("jax-jacobi", 8, grad_s=[1.0]),
        _bench_record("x" * 10**6, 128),  # a megabyte of name: minutes of legend layout
    ]
    original = json.dumps({"environment": {}, "records": earlier})
    path.write_text(original)
    argv = [
        "bench",
        EX,
        "--variants",
        "jax-jacobi",
        "--sizes",
        "4",
        "--samples",
        "1",
        "--memory-over",
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "could not be read whole" in err and "kept its 1 readable record(s)" in err
    (aside,) = [p for p in folder.iterdir() if ".unreadable-" in p.name]
    assert aside.read_text() == original
    stored = json.loads(path.read_text())["records"]
    assert sorted(r["n"] for r in stored) == [4, 16]  # this run's, and the good earlier one
    assert all(isinstance(r["grad_s"], float) for r in stored)


def test_records_of_an_example_with_float_and_bool_parameters_are_written(project):
    """Parameters are checked by their kind: a float or bool parameter's value used to be
    refused as "an integer >= 0" after the measurement."""
    weanj.register_example(typed_example("95-typed-bench"))
    try:
        record = {
            "dtype": "float64",
            "variant": "jax-a",
            "N": 12,
            "forward_s": 1e-4,
            "grad_s": 2e-4,
            "compile_s": 0.1,
            "peak_mem_bytes": None,
            "S": 3,
            "nu": 0.25,
            "upwind": True,
        }
        path = weanj.write_results("95-typed-bench", "jax", "cpu", [record], env={})
        (stored,) = json.loads(path.read_text())["records"]
        assert (stored["nu"], stored["upwind"], stored["S"]) == (0.25, True, 3)
        for bad, words in [
            ({"nu": "x"}, "field nu must be a finite number"),
            ({"upwind": 1}, "field upwind must be true or false"),
            ({"S": 2.5}, "field S must be an integer >= 0"),
        ]:
            with pytest.raises(weanj.InputError, match=words):
                weanj.write_results("95-typed-bench", "jax", "cpu", [{**record, **bad}], env={})
    finally:
        _registry.unregister_example("95-typed-bench")
