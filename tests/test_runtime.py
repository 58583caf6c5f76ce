"""Backends own their runtime (issue 43, item 4; docs/DESIGN.md §3.6): waiting for a
result, device placement, scratch memory and timing are a backend's `Runtime`, and
`weanj bench` measures every variant through its own; outside `_backends/` only the
modules DESIGN §3.6 names import JAX."""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._backends import _runtime
from weanj._backends._jax import JAX_RUNTIME
from weanj._backends._julia import JULIA_RUNTIME
from weanj._commands import bench as bench_command
from weanj._model import Variant

PACKAGE = Path(weanj.__file__).resolve().parent

# docs/DESIGN.md §3.6: the modules outside _backends/ and examples/ that import JAX, each
# for the reason given there
JAX_OUTSIDE_BACKENDS = {
    "_x64.py",
    "_environment.py",
    "_interrupts.py",
    "_io/_jax_cache.py",
    "_pipeline/executors/_jax_processes.py",  # the jax.distributed executor's process
    # float32's rounding of a JAX program, emulated: its jaxpr interpreted, when a level
    # is measured (a program transformation of JAX's, for any backend's JAX program)
    "_pipeline/evaluation/_emulation.py",
    "_pipeline/evaluation/_lockstep.py",
}


def _imports_jax(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            if any(a.name.split(".")[0] in ("jax", "jaxlib") for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] in ("jax", "jaxlib"):
                return True
    return False


def test_outside_the_backends_only_the_named_modules_import_jax():
    importing = {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.relative_to(PACKAGE).parts[0] not in ("_backends", "examples") and _imports_jax(p)
    }
    assert importing == JAX_OUTSIDE_BACKENDS
    # the reader sees an import where there is one
    assert _imports_jax(PACKAGE / "_backends" / "_jax.py")
    assert not _imports_jax(PACKAGE / "_backends" / "_runtime.py")


def _numpy_variant(backend: str, name: str = "numpy-fake") -> Variant:
    def loss(theta, uobs, K):
        return float(np.sum((theta - uobs) ** 2))

    def grad(theta, uobs, K):
        return 2 * (theta - uobs)

    return Variant(
        example=weanj.example("01-jacobi"),
        name=name,
        family="fake",
        backend=backend,
        build=lambda: (loss, grad),
        versions=("numpy",),
    )


def test_each_variant_runs_on_its_backends_runtime():
    weanj.example("01-jacobi")
    table = _registry._table().variants["01-jacobi"]
    assert _runtime.runtime_of(table["jax-jacobi"]) is JAX_RUNTIME
    assert _runtime.runtime_of(table["julia-jacobi"]) is JULIA_RUNTIME  # Julia not started
    # functions that are neither JAX's nor Julia's: the host's, whatever the backend's name
    assert _runtime.runtime_of(_numpy_variant("numpy")) is _runtime.HOST
    assert _runtime.runtime_of(_numpy_variant("kernex")) is _runtime.HOST


def test_the_host_runs_on_the_cpu_and_measures_nothing_itself():
    host = _runtime.HOST
    assert host.runs_on("cpu") and not host.runs_on("gpu") and not host.compiled
    assert host.device("cpu") is None and host.placement(None, True) is None
    with pytest.raises(weanj.UnavailableError, match="not on gpu"):
        host.device("gpu")
    arrays = {"x": np.arange(3.0)}
    assert host.to_device(arrays, None) is arrays
    assert host.scratch_bytes(lambda: 0, ()) is None and host.inside(lambda: 0, (), 3) is None
    calls = []
    forward, gradient = host.interleaved(lambda: calls.append("f"), lambda: calls.append("g"), 3)
    assert calls == ["f"] + ["f", "g"] * 3  # one forward warm-up, then alternating
    assert len(forward) == len(gradient) == 3 and min(forward + gradient) >= 0


def test_jax_places_blocks_and_measures_compiled_functions():
    import jax

    cpu = JAX_RUNTIME.device("cpu")
    assert cpu == jax.devices("cpu")[0]
    placed = JAX_RUNTIME.to_device({"x": np.arange(4.0)}, cpu, x64=True)
    assert isinstance(placed["x"], jax.Array) and placed["x"].dtype == np.float64
    assert list(placed["x"].devices()) == [cpu]
    n = 64

    @jax.jit
    def outer(x):  # a running sum down the columns of x xᵀ: the n×n matrix is stored
        return jax.numpy.sum(jax.numpy.cumsum(jax.numpy.outer(x, x), axis=0))

    # the n×n intermediate is scratch memory: at least n² float32 entries
    assert JAX_RUNTIME.scratch_bytes(outer, (np.ones(n, np.float32),)) >= 4 * n * n
    assert JAX_RUNTIME.scratch_bytes(lambda x: x, (np.ones(n),)) is None  # nothing compiled
    # Σ_j Σ_i (i + 1) over an n×n matrix of ones: n · n(n + 1)/2
    assert float(JAX_RUNTIME.block(outer(np.ones(n, np.float32)))) == n * n * (n + 1) / 2


def test_the_julia_runtime_reads_the_times_its_worker_measured():
    args = (np.ones(2),)

    def grad(*a):
        raise AssertionError("never called: the worker times itself")

    grad.timed_inside = lambda *a, samples: {"grad_s": [1.0] * samples, "args": a}
    assert JULIA_RUNTIME.inside(grad, args, 4) == {"grad_s": [1.0] * 4, "args": args}
    assert JULIA_RUNTIME.inside(lambda: 0, args, 4) is None


class Counting(_runtime.Runtime):
    """A new backend's runtime, as its `_backends/` module would register it: every
    operation counted, scratch memory and its own clock made up."""

    name = "counting"
    compiled = True

    def __init__(self):
        self.blocked = 0
        self.placed: list = []

    def runs(self, variant) -> bool:
        return variant.backend == "counting"

    def device(self, kind: str):
        return f"{kind}:0"

    def placement(self, device, multi_device: bool):
        return ("on", device)

    def to_device(self, arrays, where, *, x64=True):
        self.placed.append((where, sorted(arrays)))
        return dict(arrays)

    def block(self, result):
        self.blocked += 1
        return result

    def scratch_bytes(self, fn, args):
        return 1000 * int(np.size(args[0]))

    def inside(self, fn, args, samples):
        return {
            "forward_s": [0.001 * (k + 1) for k in range(samples)],
            "grad_s": [0.002 * (k + 1) for k in range(samples)],
            "clock": "the counting clock",
        }


def test_a_new_backend_is_measured_through_its_own_runtime(project, monkeypatch):
    """`weanj bench` of a variant whose backend registered a runtime: nothing in the
    pipeline or the commands knows it, and every measurement goes through it."""
    counting = Counting()
    monkeypatch.setattr(_runtime, "_REGISTERED", [counting, *_runtime._REGISTERED])
    fake = _numpy_variant("counting", "counting-fake")
    monkeypatch.setitem(_registry._table().variants["01-jacobi"], fake.name, fake)
    lines: list[str] = []
    done = bench_command.bench(
        _registry.catalog("01-jacobi"),
        [fake],
        sizes=[4, 6],
        params={"K": 2},
        samples=3,
        memory_over=("K", (2, 3)),
        write=False,
        say=lines.append,
    )
    assert not done.errors, done.errors
    records = done.by_backend["counting"]
    assert [(r["sweep"], r["n"], r["K"], r["timed"]) for r in records] == [
        ("n", 4, 2, True),
        ("n", 6, 2, True),
        ("K", 6, 2, False),  # compiled-only points: the runtime says it compiles
        ("K", 6, 3, False),
    ]
    # scratch memory is the runtime's: 1000 bytes per entry of the first array (n²)
    assert [r["peak_mem_bytes"] for r in records] == [16_000, 36_000, 36_000, 36_000]
    # every point's inputs placed where the runtime said, once, before timing
    arrays = sorted(weanj.example("01-jacobi").arrays)
    assert counting.placed == [(("on", "cpu:0"), arrays)] * 4
    # each timed point: the first gradient, one forward warm-up, 3 forward and 3 gradient
    # calls, each waited for by the runtime
    assert counting.blocked == 2 * (1 + 1 + 2 * 3)
    for r in records[:2]:
        assert r["samples"] == 3
        inside = r["timed_inside"]
        assert inside["clock"] == "the counting clock" and inside["samples"] == 3
        assert inside["forward_s"] == pytest.approx(statistics.median([0.001, 0.002, 0.003]))
        assert inside["grad_min_s"] == pytest.approx(0.002)
    assert any("the counting clock" in line for line in lines)
