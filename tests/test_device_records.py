"""A run on a device is kept and reused as a CPU run is (docs/DESIGN.md, "Evaluation
records"; issue 51: an interrupted or repeated check keeps every finished evaluation),
keyed by the device too. Tested on the stand-in TPU (`WEANJ_STANDIN_DEVICE=tpu` with two
CPU devices, `_backends._standin`), in fresh processes (the XLA flag must be set before
JAX starts):

- a second `weanj check --device tpu` reuses all 8 evaluations (2 variants × 2 dtypes ×
  2 devices) and gives every case the verdict, the numbers and the precision-or-bug line
  of the first, whose device floors come from the device's own precision level (kept in
  the record with the device's description);
- the same records on another device (its identity: kind, software, stand-in or not)
  are recomputed, saying so, while the CPU runs stay reused;
- a fault on a device is never kept (a platform limit, or a time limit the load decides),
  where the same fault on the CPU is.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np

from .projects import loaded, run_in, user_env, write_project

STANDIN = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "WEANJ_STANDIN_DEVICE": "tpu"}

DENSE = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    import weanj

    jax.config.update("jax_enable_x64", True)


    def gen(seed):
        r = np.random.default_rng(seed)
        return {"x": r.standard_normal(16), "W": r.standard_normal((16, 16)) / 4}

    ex = weanj.register_example(weanj.Example(
        name="10-dense", arrays=("x", "W"), wrt=("x", "W"), generate=gen,
    ))

    @weanj.jax_variant(ex, "jax-a", family="f")
    def a(x, W):
        return jnp.sum(jnp.tanh(W @ x) ** 2)

    @weanj.jax_variant(ex, "jax-b", family="f")
    def b(x, W):
        return jnp.sum(jnp.tanh(jnp.einsum("ij,j->i", W, x)) ** 2)
    """
)

# Run in the project: the check again (every record reused), then once more with the
# device's identity changed to a real TPU's (as if the project moved to one).
AGAIN_THEN_ELSEWHERE = textwrap.dedent(
    """
    import sys
    from weanj._cli import main
    from weanj._pipeline.records import _records

    print("== again", flush=True)
    main(["check", "--device", "tpu"])
    real = _records.identity

    def elsewhere(*args):
        found = real(*args)
        return None if found is None else {**found, "device_kind": "TPU v5 lite", "standin": False}

    _records.identity = elsewhere
    print("== elsewhere", flush=True)
    main(["check", "--device", "tpu"])
    """
)


def _cases(root) -> dict:
    """Every pair and gradient check of the check.json, by case id, with its numbers."""
    data = json.loads((root / "results" / "10-dense" / "check.json").read_text())
    return {c["case"]: c for c in [*data["pairs"], *data["checks"]]}


def test_device_runs_are_reused_and_recomputed_on_another_device(tmp_path):
    root = write_project(tmp_path, {"kernels/dense.py": DENSE})
    env = user_env(**STANDIN)
    first = run_in(root, "-m", "weanj", "check", "--device", "tpu", env=env, timeout=900)
    assert first.returncode == 1, first.stdout + first.stderr  # the bfloat16 pass fails W
    assert "evaluations: reused 0 of 8, 8 recomputed" in first.stdout, first.stdout
    before = _cases(root)
    device_cases = [c for c in before if "@tpu" in c]
    assert len(device_cases) == 8, sorted(before)  # 4 device runs × 2 arrays
    failed = {c for c, v in before.items() if v["verdict"] == "FAIL"}
    assert failed == {
        "10-dense::f::jax-a~jax-a@float32@tpu::W",
        "10-dense::f::jax-a~jax-b@float32@tpu::W",
    }

    record = root / "results" / "10-dense" / "evaluations" / "jax-a@float32@tpu.npz"
    with np.load(record, allow_pickle=False) as z:
        kept = json.loads(str(z["record"][()]))
    assert kept["parts"]["device"] == "tpu", kept["parts"]
    assert kept["parts"]["device_kind"] == "stand-in tpu (CPU device 1)", kept["parts"]
    assert kept["parts"]["standin"] is True
    assert kept["extra"]["precision_reduced"] is True, kept["extra"]
    assert set(kept["extra"]["precision_level"]) == {"loss", "x", "W"}, kept["extra"]
    assert all(v > 0 for v in kept["extra"]["precision_level"].values()), kept["extra"]

    r = run_in(root, "-c", AGAIN_THEN_ELSEWHERE, env=env, timeout=900)
    again, elsewhere = r.stdout.split("== elsewhere")
    assert "evaluations: reused 8 of 8 (" in again, again
    failures = [
        line for line in first.stdout.splitlines() if "agrees under precision=highest" in line
    ]
    assert len(failures) == 2 and all(line in again for line in failures), again
    assert "reused 4 of 8, 4 recomputed" in elsewhere, elsewhere
    assert "the device changed (now TPU v5 lite)" in elsewhere, elsewhere
    assert _cases(root) == before  # the same verdicts and numbers, recomputed or reused


def test_a_fault_on_a_device_is_never_kept(tmp_path):
    from weanj import _registry
    from weanj._io._inputs import read_inputs
    from weanj._judge._contract import Fault
    from weanj._model._verdicts import Verdict
    from weanj._pipeline.records._records import Records
    from weanj._places import Places
    from weanj._project import project_config

    root = write_project(tmp_path, {"kernels/dense.py": DENSE})
    with loaded(root, "kernels.dense"):
        cat = _registry.catalog("10-dense")
        v = cat.find("jax-a")
        records = Records(Places(root), project_config(root))
        inputs = read_inputs(cat.example, Places(root))
        fault = Fault(Verdict.ERROR, "jax-a raised", "weanj run 10-dense jax-a")
        folder = root / "results" / "10-dense" / "evaluations"
        records.keep(v, inputs, "float32", fault, device="tpu")
        assert not (folder / "jax-a@float32@tpu.npz").exists()
        records.keep(v, inputs, "float32", fault)  # the same fault on the CPU: kept
        assert (folder / "jax-a@float32.npz").is_file()
        assert records.recall(v, inputs, "float32") == fault
