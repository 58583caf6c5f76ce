"""`weanj bench`: the record schema, the budget stop, merging reruns, and the errors.

Only the file format and the sweep logic are asserted here; the timings themselves
belong to benchmarks, not to pass/fail tests.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from types import SimpleNamespace

import jax
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._cli import main
from weanj._commands import bench as bench_command
from weanj._io import _bench as bench_files
from weanj._io._bench import record_fields
from weanj._pipeline.bench import _measure
from weanj._places import places

from .helpers import PYTHON, assert_one_line_error, subprocess_env

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


def _bench(example: str, variants=None, **options) -> dict:
    """`weanj bench`'s function, writing nothing (the tests below read its records, not
    the files): `{backend: records}`."""
    cat = _registry.catalog(example)  # the names resolved as the command line resolves them
    chosen = _registry.chosen_variants(cat, variants) if variants else None
    done = bench_command.bench(cat, chosen, write=False, **options)
    assert not done.errors, done.errors
    return done.by_backend


def _bench_jacobi(variant: str, **options) -> dict:
    """`bench` of one 01-jacobi variant at n = 4 and 6 with K = 2, one sample, quietly
    and without memory against K, unless `options` say otherwise."""
    quick = {"sizes": [4, 6], "params": {"K": 2}, "samples": 1, "memory_over": None}
    return _bench("01-jacobi", [variant], **{**quick, "say": lambda line: None, **options})


def _merge(by_backend: dict, *, replace: bool = False, example: str = "01-jacobi") -> list:
    """Merge records into the example's benchmark files, as `weanj bench` does."""
    return bench_files.merge(
        weanj.example(example),
        "cpu",
        by_backend,
        places(),
        env={"device": "cpu"},
        backend_versions={},
        replace=replace,
    )


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("weanj: error:"), err
    assert_one_line_error(err)
    return err


def test_record_schema(project, capsys):
    rc = main(
        [
            "bench",
            "01-jacobi",
            "--variants",
            "jax-jacobi",
            "--sizes",
            "16",
            "8",
            "--K",
            "3",
            "--samples",
            "1",
            "--memory-over",
            "K",
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
        for key in record_fields(weanj.example("01-jacobi")):
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
    by_backend = _bench(
        "02-gauss-seidel",
        ["jax-rb"],
        sizes=[8, 4, 16],
        params={"K": 1},  # the cheapest programs to compile: the budget is all that matters
        budget_s=1e-12,
        samples=1,
        memory_over=None,
        say=said.append,
    )
    records = by_backend["jax"]
    assert [r["n"] for r in records] == [4]  # every gradient exceeds the budget
    assert any(
        "jax-rb: gradient took" in line
        and "> budget 1e-12 s; skipping the rest of this series" in line
        for line in said
    ), said


def test_rerun_replaces_only_the_points_it_measured(project):
    def record(variant, n, dtype="float64", K=1, sweep="n", grad_s=2.0):
        return {
            "variant": variant,
            "dtype": dtype,
            "N": n * n,
            "n": n,
            "K": K,
            "sweep": sweep,
            "forward_s": 1.0,
            "grad_s": grad_s,
            "compile_s": 3.0,
            "peak_mem_bytes": 4,
        }

    def stored():
        (path,) = (project / "results" / "01-jacobi" / "bench").glob("*.json")
        assert path.name == "jax-cpu.json"
        return sorted(
            (r["variant"], r["dtype"], r["sweep"], r["n"], r["K"], r["grad_s"])
            for r in json.loads(path.read_text())["records"]
        )

    _merge({"jax": [record("jax-jacobi", 4), record("other", 4)]})
    # Another size of the same series: added, the earlier one kept.
    _merge({"jax": [record("jax-jacobi", 8)]})
    # The same point again: it replaces the earlier record of that point only.
    _merge({"jax": [record("jax-jacobi", 4, grad_s=9.0)]})
    assert stored() == [
        ("jax-jacobi", "float64", "n", 4, 1, 9.0),
        ("jax-jacobi", "float64", "n", 8, 1, 2.0),
        ("other", "float64", "n", 4, 1, 2.0),
    ]
    # Another dtype or another fixed K is another series; memory-against-K points too.
    _merge({"jax": [record("jax-jacobi", 2, "float32")]})
    _merge({"jax": [record("jax-jacobi", 16, K=7)]})
    _merge({"jax": [record("jax-jacobi", 8, K=10, sweep="K")]})
    _merge({"jax": [record("jax-jacobi", 8, K=20, sweep="K")]})
    assert len(stored()) == 7
    # replace=True (`weanj bench --replace`): every earlier record of a measured series goes.
    _merge({"jax": [record("jax-jacobi", 32)]}, replace=True)
    _merge({"jax": [record("jax-jacobi", 8, K=30, sweep="K")]}, replace=True)
    assert stored() == [
        ("jax-jacobi", "float32", "n", 2, 1, 2.0),
        ("jax-jacobi", "float64", "K", 8, 30, 2.0),
        ("jax-jacobi", "float64", "n", 16, 7, 2.0),
        ("jax-jacobi", "float64", "n", 32, 1, 2.0),
        ("other", "float64", "n", 4, 1, 2.0),
    ]


def test_replace_on_the_command_line(project, capsys):
    argv = ["bench", "01-jacobi", "--variants", "jax-jacobi", "--K", "1", "--samples", "1"]
    path = project / "results" / "01-jacobi" / "bench" / "jax-cpu.json"
    assert main([*argv, "--sizes", "4", "--memory-over"]) == 0
    assert main([*argv, "--sizes", "8", "--memory-over"]) == 0
    assert sorted(r["n"] for r in json.loads(path.read_text())["records"]) == [4, 8]
    assert main([*argv, "--sizes", "6", "--memory-over", "--replace"]) == 0
    assert [r["n"] for r in json.loads(path.read_text())["records"]] == [6]
    capsys.readouterr()


def test_over_a_parameter_is_timed_at_the_middle_size(project):
    # The values as text, as the command line gives them: parsed by the Param. The sizes,
    # K and K values of test_record_schema (there memory only): most programs of these
    # (n, K) are then compiled once for both tests.
    by_backend = _bench_jacobi("jax-jacobi", sizes=[8, 16], params={"K": 3}, over=("K", ("5", "2")))
    over = [r for r in by_backend["jax"] if r["sweep"] == "K"]
    assert [(r["n"], r["K"]) for r in over] == [(16, 2), (16, 5)]
    assert all(r["timed"] and r["grad_s"] > 0 and r["forward_s"] > 0 for r in over)
    assert [r["K"] for r in by_backend["jax"] if r["sweep"] == "n"] == [3, 3]


def test_N_counts_the_entries_of_every_gradient_array(project):
    # 04-tridiagonal: four gradient arrays a, b, c, d, each (n, n) at size n.
    by_backend = _bench(
        "04-tridiagonal", ["jax-thomas"], sizes=[3], samples=1, say=lambda line: None
    )
    assert [(r["n"], r["N"]) for r in by_backend["jax"]] == [(3, 4 * 9)]


def _dims_generate(seed, T=4, d=3):
    return {"x": np.random.default_rng(seed).standard_normal((T, d))}


@pytest.fixture
def dims_example(project):
    """An example whose arrays have symbolic dimensions T and d, without `Sizes`: one
    generator takes them as keywords, the other does not."""
    import jax.numpy as jnp

    from weanj import _registry

    names = {"94-dims": _dims_generate, "95-fixed": lambda seed: _dims_generate(seed)}
    for name, generate in names.items():
        ex = weanj.register_example(
            weanj.Example(
                name=name,
                arrays=(weanj.Array("x", shape=("T", "d")),),
                wrt="x",
                params=(weanj.Param("S", 2),),
                generate=generate,
            )
        )
        weanj.jax_variant(ex, "jax-sum", family="f", loss=lambda x, S: S * jnp.sum(x**2))
        weanj.write_inputs(name)
    yield
    for name in names:
        _registry.unregister_example(name)


def test_over_and_memory_over_a_dimension_of_a_shape(dims_example):
    by_backend = _bench(
        "94-dims",
        samples=1,
        over=("T", ("8", "2")),
        memory_over=("d", (5,)),
        say=lambda line: None,
    )
    records = by_backend["jax"]
    # The shared inputs (T=4, d=3), then T against time, then d against memory only.
    assert [(r["sweep"], r.get("T"), r.get("d"), r["N"], r["timed"]) for r in records] == [
        ("size", None, None, 12, True),
        ("T", 2, None, 6, True),
        ("T", 8, None, 24, True),
        ("d", None, 5, 20, False),
    ]
    assert records[-1]["grad_s"] is None and isinstance(records[-1]["peak_mem_bytes"], int)


def test_a_dimension_its_generator_cannot_set_is_refused_before_any_work(dims_example, capsys):
    said = []
    with pytest.raises(weanj.InputError) as info:
        bench_command.bench(
            _registry.catalog("95-fixed"), samples=1, over=("T", (2, 8)), say=said.append
        )
    assert "its generate takes no keyword T" in str(info.value) and "def generate(seed" in str(
        info.value
    )
    assert said == []  # nothing measured first
    assert main(["bench", "95-fixed", "--memory-over", "d", "5"]) == 2
    assert "takes no keyword d" in _one_line_error(capsys)
    assert main(["bench", "94-dims", "--over", "Q", "2"]) == 2
    assert "94-dims has no parameter or dimension Q (it has: S, T, d)" in _one_line_error(capsys)


FAULTY = "96-bench-fault"


@pytest.fixture
def faulty_example(project):
    """An example of two correct variants and one (`jax-short`) whose custom gradient
    drops the last row: the variant contract's fault, whatever the inputs."""
    import jax
    import jax.numpy as jnp

    from weanj import _registry

    ex = weanj.register_example(
        weanj.Example(
            name=FAULTY,
            arrays=(weanj.Array("x", shape=("T", "d")),),
            wrt="x",
            params=(weanj.Param("S", 2),),
            generate=_dims_generate,
        )
    )

    def loss(x, S):
        return S * jnp.sum(x**2)

    weanj.jax_variant(ex, "jax-sum", family="f", loss=loss)
    weanj.jax_variant(ex, "jax-short", family="f", grad=lambda x, S: jax.grad(loss)(x, S)[:-1])(
        loss
    )
    weanj.jax_variant(ex, "jax-dot", family="f", loss=lambda x, S: S * jnp.vdot(x, x))
    weanj.write_inputs(FAULTY)
    yield ex
    _registry.unregister_example(FAULTY)


def test_a_variant_at_fault_is_its_error_line_and_the_others_are_measured(faulty_example, capsys):
    assert main(["bench", FAULTY, "--samples", "1"]) == 1
    out, err = capsys.readouterr()
    # One error line, the variant's own, naming what is wrong and how to reproduce it.
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert errors == [
        "jax-short: error: jax-short returned a gradient of x of shape (3, 3); its input has "
        f"shape (4, 3) (reproduce: `weanj run {FAULTY} jax-short`)"
    ], err
    assert "Traceback" not in err
    # The others are measured and written; nothing of jax-short is.
    path = places().bench_file(FAULTY, "jax", "cpu")
    records = json.loads(path.read_text())["records"]
    assert sorted(r["variant"] for r in records) == ["jax-dot", "jax-sum"]
    for r in records:
        assert r["sweep"] == "size" and r["N"] == 12 and r["grad_s"] > 0
    table = [line for line in out.splitlines() if line.startswith("| `")]
    assert sorted(line.split("`")[1] for line in table) == ["jax-dot", "jax-sum"]
    assert f"wrote {path}" in out
    # The command it names says the same, and saves nothing (exit 1).
    assert main(["run", FAULTY, "jax-short"]) == 1
    err = capsys.readouterr().err
    assert "jax-short returned a gradient of x of shape (3, 3); its input has shape (4, 3)" in err
    assert not places().gradient(FAULTY, "jax-short").exists()


def test_sizes_that_cannot_fit_in_memory_are_refused_before_allocating(project, capsys):
    assert main(["bench", "01-jacobi", "--sizes", "4", "1000000", "--samples", "1"]) == 2
    err = _one_line_error(capsys)
    assert "01-jacobi: n = 1000000 would need about" in err and "choose a smaller n" in err
    # 2 float64 arrays of n² entries: 2·8·10¹² bytes, about 1.5e4 GiB
    assert "1.49e+04 GiB" in err
    assert not (project / "results" / "01-jacobi" / "bench").exists()


def test_a_point_past_the_timeout_ends_its_series(project, numpy_variant):
    numpy_variant.state["slow"] = True
    said = []
    by_backend = _bench_jacobi(numpy_variant.name, timeout=0.3, say=said.append)
    assert by_backend == {"numpy": []}
    assert any(
        "time limit of 0.3 s" in line and "0: none); skipping the rest of this series" in line
        for line in said
    ), said


def test_missing_gpu_is_one_line_and_exit_2(project, capsys):
    if _has_gpu():
        pytest.skip("a GPU is visible to JAX here, so the missing-GPU error cannot occur")
    rc = main(["bench", "01-jacobi", "--device", "gpu", "--ns", "4"])
    assert rc == 2
    assert "no GPU" in _one_line_error(capsys)
    assert not (project / "results" / "01-jacobi" / "bench").exists()


# `weanj bench 01-jacobi --sizes 4 ARGV`, refused by weanj in one line: {test id: (ARGV,
# the error's words)}.
REFUSED_BY_WEANJ = {
    "K-zero": (["--K", "0"], "K must be at least 1"),
    "K-float": (["--K", "1.5"], "--K takes an integer, got '1.5'"),
    "K-case": (["--k", "3"], "01-jacobi has no parameter k (--k); did you mean --K?"),
    "over-empty": (["--over", "K"], "--over K needs at least one value"),
    "over-zero": (["--over", "K", "0"], "K must be at least 1"),
    "unknown-variant": (["--variants", "no-such-variant"], "known variants"),
}
# `weanj bench 01-jacobi ARGV`, refused by its parser in one line (no usage block):
# `weanj: error: weanj bench: argument `, these words, and where the usage is.
REFUSED_BY_THE_PARSER = {
    "sizes-zero": (["--sizes", "0"], "--sizes/--ns: expected an integer >= 1, got '0'"),
    "samples-zero": (["--samples", "0"], "--samples: expected an integer >= 1, got '0'"),
    "budget-zero": (["--budget-s", "0"], "--budget-s: expected a finite number > 0, got '0'"),
    "budget-inf": (["--budget-s", "inf"], "--budget-s: expected a finite number > 0, got 'inf'"),
    "timeout-nan": (
        ["--timeout", "nan"],
        "--timeout: expected a number of seconds >= 0 (0: no limit), got 'nan'",
    ),
}


def _cases(table: dict) -> list:
    return [pytest.param(argv, words, id=name) for name, (argv, words) in table.items()]


def _bench_refused(project, capsys, *argv) -> str:
    """`weanj bench 01-jacobi ARGV` exits with code 2 (the parser's refusal too: a one-line
    `UsageError`, never `SystemExit`) and writes nothing: its stderr."""
    assert main(["bench", "01-jacobi", *argv]) == 2
    assert not (project / "results" / "01-jacobi" / "bench").exists()
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, words", _cases(REFUSED_BY_WEANJ))
def test_bad_arguments_are_one_line_and_exit_2(project, capsys, argv, words):
    err = _bench_refused(project, capsys, "--sizes", "4", *argv).strip()
    assert err.startswith("weanj: error:"), err
    assert_one_line_error(err)
    assert words in err


@pytest.mark.parametrize("argv, words", _cases(REFUSED_BY_THE_PARSER))
def test_bad_option_values_are_refused_by_the_parser(project, capsys, argv, words):
    err = _bench_refused(project, capsys, *argv)
    assert_one_line_error(err)
    assert err.strip() == f"weanj: error: weanj bench: argument {words} (see weanj bench --help)"


def test_the_poisson_spellings_are_the_same_options():
    from weanj._cli._parser import parse

    args, words = parse(["bench", "01-jacobi", "--ns", "8", "4", "--memory-Ks", "2", "--K", "3"])
    assert args.sizes == [8, 4] and args.memory_Ks == [2] and words == {"K": "3"}
    args, _ = parse(["bench", "01-jacobi", "--sizes", "8", "--memory-over", "K", "2"])
    assert args.sizes == [8] and args.memory_over == ["K", "2"]


@pytest.fixture
def numpy_variant(monkeypatch):
    """A variant that is not JAX (as Julia through juliacall): numpy in, numpy out; its
    gradient call sleeps 0.5 s when `slow` is set."""
    from weanj import _registry
    from weanj._model import Variant

    seen, state = [], {"slow": False}

    def loss(theta, uobs, K):
        seen.append(type(theta))
        return float(np.sum((theta - uobs) ** 2))

    def grad(theta, uobs, K):
        seen.append(type(theta))
        if state["slow"]:
            time.sleep(0.5)
        return 2 * (theta - uobs)

    fake = Variant(
        example=weanj.example("01-jacobi"),
        name="numpy-fake",
        family="fake",
        backend="numpy",
        build=lambda: (loss, grad),
        versions=("numpy",),
    )
    monkeypatch.setitem(_registry._table().variants["01-jacobi"], fake.name, fake)
    return SimpleNamespace(name=fake.name, seen=seen, state=state)


def test_functions_without_xla_are_timed_without_memory(project, numpy_variant):
    """A backend that is not JAX (as Julia through juliacall): numpy arrays in, times out,
    no XLA memory figure and no memory-against-K records."""
    by_backend = _bench_jacobi("numpy-fake", memory_over=("K", (2, 3)))
    assert set(numpy_variant.seen) == {np.ndarray}
    records = by_backend["numpy"]
    assert [(r["sweep"], r["n"], r["N"]) for r in records] == [("n", 4, 16), ("n", 6, 36)]
    for r in records:
        assert r["peak_mem_bytes"] is None and r["grad_s"] > 0 and r["compile_s"] > 0
    # On a GPU run it is skipped (it runs on the CPU), not mislabelled as a GPU result.
    if _has_gpu():
        assert (
            _bench("01-jacobi", ["numpy-fake"], sizes=[4], device="gpu", say=lambda line: None)
            == {}
        )


def test_default_samples_shrink_to_fit_the_budget():
    calls = []

    def slow_grad(x):
        calls.append(x)
        time.sleep(0.02)
        return x

    # One probe call decides; a gradient slower than the budget is timed once.
    assert _measure.samples_within_budget(slow_grad, (1.0,), 64, budget_s=0.005) == 1
    assert _measure.samples_within_budget(slow_grad, (1.0,), 64, budget_s=1000.0) == 10
    assert _measure.samples_within_budget(slow_grad, (1.0,), 512, budget_s=1000.0) == 3
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


# 01-jacobi as its benchmark file sees it (its name, its size n, its parameter K), built
# rather than looked up: looking 01-jacobi up loads the built-in examples, which import
# JAX, a second or more of start-up in each writer; only the file is at stake. The test
# checks that it is 01-jacobi to `merge` (the same record fields and field kinds).
_JACOBI_FOR_THE_FILE = textwrap.dedent("""
    import weanj
    ex = weanj.Example(
        name="01-jacobi", arrays=("theta", "uobs"), wrt="theta",
        shapes={"theta": ("n", "n"), "uobs": ("n", "n")}, params=(weanj.Param("K", 20),),
        generate=lambda seed: {}, sizes=weanj.Sizes(generate=lambda seed, n: {}, values=(4,)),
    )
""")

# A process that merges its variant's records into the file (`_io._bench.merge`, what
# `weanj bench` calls) as soon as the go file appears, `rounds` times (no JAX: only the
# file is at stake).
_BENCH_WRITER = _JACOBI_FOR_THE_FILE + textwrap.dedent("""
    import pathlib, sys, time
    from weanj._io import _bench
    from weanj._places import places
    here = places()
    variant, rounds, go = sys.argv[1], int(sys.argv[2]), pathlib.Path(sys.argv[3])
    record = {"variant": variant, "dtype": "float64", "N": 16, "n": 4, "K": 1, "sweep": "n",
              "forward_s": 1.0, "grad_s": 2.0, "compile_s": 3.0, "peak_mem_bytes": 4}
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    for i in range(rounds):
        _bench.merge(ex, "cpu", {"jax": [dict(record, n=4 + i, N=(4 + i) ** 2)]}, here,
                     env={"device": "cpu"}, backend_versions={})
""")


def test_concurrent_writers_keep_every_record(project):
    """Writers, each on its own variant, all at once on one file: with the lock every
    series survives (without it, nearly every run of this test loses some)."""
    scope: dict = {}
    exec(_JACOBI_FOR_THE_FILE, scope)  # the writers' 01-jacobi is the registered one to merge
    for fields in (bench_files.record_fields, bench_files.param_kinds):
        assert fields(scope["ex"]) == fields(weanj.example("01-jacobi"))
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
    # Each writer measured n = 4 .. 4 + rounds - 1 of its own variant's series: a rerun
    # keeps the earlier points and replaces only the points it measured again, so every
    # point of every writer survives, once.
    assert sorted((r["variant"], r["n"]) for r in records) == [
        (f"v{i:02d}", 4 + k) for i in range(writers) for k in range(rounds)
    ]
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
    _merge({"jax": [_record("jax-jacobi")]})
    err = capsys.readouterr().err.strip()
    (aside,) = [p for p in folder.iterdir() if ".unreadable-" in p.name]
    assert aside.read_text() == '{"environment": {}, "records": ['  # kept, byte for byte
    assert_one_line_error(err, str(aside))
    assert [r["variant"] for r in json.loads(path.read_text())["records"]] == ["jax-jacobi"]
    assert not aside.name.endswith(".json")  # `weanj plot` does not take it for results


def test_malformed_records_send_the_file_aside_and_keep_the_good_ones(project, capsys):
    folder = project / "results" / "01-jacobi" / "bench"
    folder.mkdir(parents=True)
    path = folder / "jax-cpu.json"
    original = json.dumps({"environment": {}, "records": [_record("good"), _record("bad", N="x")]})
    path.write_text(original)
    _merge({"jax": [_record("new")]})
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
        ({"dtype": 64}, "field dtype must be float64 or float32, got 64"),
        ({"dtype": "../x"}, "field dtype must be float64 or float32, got '../x'"),
        ({"variant": ""}, "field variant must be text"),
        ({"extra": object()}, "cannot be written as JSON"),
        ({"extra": float("inf")}, "cannot be written as JSON"),
    ],
    ids=lambda v: str(v)[:24],
)
def test_write_results_refuses_wrong_types(project, changes, words):
    with pytest.raises(weanj.InputError) as excinfo:
        weanj.write_results("01-jacobi", "jax", "cpu", [_record("a"), _record("b", **changes)])
    message = str(excinfo.value)
    assert words in message and "\n" not in message
    assert not (project / "results" / "01-jacobi" / "bench").exists()


def test_write_results_takes_numpy_numbers(project):
    r = _record("a", N=np.int64(16), n=np.int32(4), forward_s=np.float64(0.5), grad_s=None)
    path = weanj.write_results("01-jacobi", "jax", "cpu", [r], env={})
    (stored,) = json.loads(path.read_text())["records"]
    assert stored["N"] == 16 and stored["forward_s"] == 0.5 and stored["grad_s"] is None
