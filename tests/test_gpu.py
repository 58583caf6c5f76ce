"""weanj on a GPU: the variants computed on a JAX GPU device agree with the independent
numpy references under the float64 policy, and `weanj bench --device gpu` measures there.

Every test here needs a JAX GPU device (`jax.devices("gpu")`) and skips, saying so, where
there is none (the development machines and CI have none; the GPU runs are in the notes).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import weanj
from weanj._cli import main

from .crossval import reference_poisson, reference_tridiagonal

pytestmark = pytest.mark.gpu


def _gpu():
    import jax

    try:
        found = jax.devices("gpu")
    except RuntimeError:  # no GPU backend installed
        found = []
    if not found:
        pytest.skip("no JAX GPU device here (jax.devices('gpu') is empty)")
    return found[0]


# (example, variant, algorithm of the numpy reference, reference module)
GPU_CASES = [
    ("01-jacobi", "jax-jacobi", "jacobi", reference_poisson),
    ("02-gauss-seidel", "jax-lex", "lex", reference_poisson),
    ("02-gauss-seidel", "jax-wavefront", "lex", reference_poisson),
    ("02-gauss-seidel", "jax-rb", "rb", reference_poisson),
    ("04-tridiagonal", "jax-thomas", "thomas", reference_tridiagonal),
    ("04-tridiagonal", "jax-pcr", "thomas", reference_tridiagonal),
]


@pytest.mark.parametrize(
    ("example", "name", "algorithm", "reference"),
    GPU_CASES,
    ids=[f"{e}::{v}" for e, v, _, _ in GPU_CASES],
)
def test_a_variant_on_the_gpu_agrees_with_the_numpy_reference(example, name, algorithm, reference):
    """Loss and gradient computed on the GPU against the plain-loop numpy reference
    (sharing no code with weanj), under the float64 tolerance policy (docs/DESIGN.md §6)."""
    import jax

    gpu = _gpu()
    arrays, params = reference.small_inputs()
    variant = weanj.variant(example, name)
    with jax.default_device(gpu):
        # numpy float64 arrays in, as weanj's own runs pass them: put on the default
        # device by the call, in the precision the call runs in.
        loss = variant.loss(**arrays, **params)
        grad = variant.grad(**arrays, **params)
        assert {d.platform for d in loss.devices()} == {"gpu"}
    want_loss = reference.loss(algorithm, arrays, params)
    want = reference.gradient(algorithm, arrays, params)
    got = grad if isinstance(grad, dict) else {next(iter(want)): grad}
    assert abs(float(loss) - want_loss) <= 1e-12 * abs(want_loss)
    for array, g_ref in want.items():
        g = np.asarray(got[array])
        assert g.dtype == np.float64
        scale = np.max(np.abs(g_ref))
        assert np.max(np.abs(g - g_ref)) <= 1e-11 * scale, array


def test_bench_on_the_gpu_records_the_gpu(project):
    """`weanj bench --device gpu`: records of the GPU (its device kind, not the CPU's),
    positive times and XLA's scratch memory of the compiled gradient."""
    gpu = _gpu()
    rc = main(
        ["bench", "01-jacobi", "--variants", "jax-jacobi", "--device", "gpu"]
        + ["--sizes", "8", "16", "--K", "2", "--samples", "2"]
    )
    assert rc == 0
    data = json.loads((project / "results" / "01-jacobi" / "bench" / "jax-gpu.json").read_text())
    assert data["environment"]["device_kind"] == gpu.device_kind
    timed = [r for r in data["records"] if r["sweep"] == "n"]
    assert [r["n"] for r in timed] == [8, 16]
    for r in timed:
        assert r["device"] == "gpu"
        assert r["grad_s"] > 0 and r["forward_s"] > 0
        assert r["peak_mem_bytes"] is not None and r["peak_mem_bytes"] >= 0
