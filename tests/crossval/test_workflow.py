"""The seed notebook's workflow, end to end through the public API, in a temporary project:
load the shared inputs, loss and gradient of each variant, `fd_check`, `save_gradient`,
`time_median` and `write_results` — then read back what was written."""

from __future__ import annotations

import json
import time

import numpy as np

import weanj

EXAMPLE = "02-gauss-seidel"  # the seed notebook's example


def test_notebook_workflow(project):
    import jax

    d = weanj.load_inputs(EXAMPLE)
    theta, uobs, K = d["theta"], d["uobs"], d["K"]
    assert theta.dtype == np.float64 and theta.shape == uobs.shape
    records: dict[str, list[dict]] = {}
    # The notebook is the JAX side: its variants are those of backend "jax".
    names = [n for n in weanj.variants(EXAMPLE) if weanj.variant(EXAMPLE, n).backend == "jax"]
    assert names, "no JAX variant of the notebook's example is registered"
    for name in names:
        v = weanj.variant(EXAMPLE, name)
        t0 = time.perf_counter()
        g = np.asarray(v.grad(theta, uobs, K))
        compile_s = time.perf_counter() - t0
        loss = float(np.asarray(v.loss(theta, uobs, K)))
        err = weanj.fd_check(lambda t, v=v: v.loss(t, uobs, K), theta, g, n=10, h=1e-2)
        assert err < 1e-6, f"{name}: fd_check {err:.2e}"

        path = weanj.save_gradient(EXAMPLE, name, g)
        assert path == project / "results" / EXAMPLE / "gradients" / f"{name}.h5"
        stored = weanj.load_gradient(EXAMPLE, name)
        assert np.array_equal(stored.gradient, g)
        assert stored.inputs_sha256 == d["sha256"] and stored.params == {"K": K}
        assert (stored.variant, stored.family, stored.example.name) == (name, v.family, EXAMPLE)
        assert stored.example is v.example  # the Example object itself

        n = theta.shape[0]
        record = dict(
            dtype="Float64",
            variant=name,
            N=n * n,
            n=n,
            K=K,
            forward_s=weanj.time_median(
                lambda v=v: v.loss(theta, uobs, K), sync=jax.block_until_ready, samples=1
            ),
            grad_s=weanj.time_median(
                lambda v=v: v.grad(theta, uobs, K), sync=jax.block_until_ready, samples=1
            ),
            compile_s=compile_s,
            peak_mem_bytes=None,
            loss=loss,
        )
        records.setdefault(v.backend, []).append(record)

    for backend, recs in records.items():
        path = weanj.write_results(EXAMPLE, backend, "cpu", recs)
        assert path == project / "results" / EXAMPLE / "bench" / f"{backend}-cpu.json"
        written = json.loads(path.read_text())
        assert [r["variant"] for r in written["records"]] == [r["variant"] for r in recs]
        assert [r["loss"] for r in written["records"]] == [r["loss"] for r in recs]
        assert written["environment"]["jax"] == jax.__version__
    # The store holds exactly the gradients saved above, nothing else.
    assert sorted(
        p.name for p in (project / "results" / EXAMPLE / "gradients").iterdir()
    ) == sorted(f"{name}.h5" for name in names)
