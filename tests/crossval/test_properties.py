"""Properties every variant must have: jit and non-jit agree, float32 stays within its
tolerance of float64. (That inputs are not mutated, every `run_variant` asserts.)

Both are checked outside the pipeline, on small inputs, against the independent
reference. The fast suite runs the float32 property for one variant per family (the
pipeline's own float32 cases of every variant, on the shared inputs, are
`test_families`'); `pytest -m slow` runs every variant, and jit against non-jit (op by op,
seconds per variant)."""

from __future__ import annotations

import numpy as np
import pytest

import weanj

from .cases import (
    assert_within_policy,
    on_small,
    reference_of,
    reference_on_small,
    run_variant,
    variant_cases,
)


# Op by op, shard_map runs every collective and every block as its own dispatch (15-30 s
# for a tiny case), and kernex every point of its stencil (5-16 s); the others take 1-5 s.
@pytest.mark.slow
@pytest.mark.parametrize(("example", "name"), variant_cases())
def test_jit_and_nonjit_agree(example, name):
    import jax

    v = weanj.variant(example, name)
    if not hasattr(v.loss, "jitted"):
        pytest.skip(f"{name}: not a jax.jit function, so there is no non-jit mode to compare")
    if v.backend == "enzyme":
        pytest.skip(f"{name}: Enzyme-JAX primitives run only inside jit ('must be JIT'ed')")
    module, algorithm = reference_of(example, name)
    # Op-by-op execution is slow (nested scans ~0.1 s per point update): a tiny case.
    if hasattr(module, "eager_inputs"):
        arrays, params = module.eager_inputs()
        jitted = run_variant(example, name, arrays, params)
    else:  # the reference tests' run, compiled once per process
        arrays, params = module.small_inputs()
        jitted = on_small(example, name)
    with jax.disable_jit():
        eager = run_variant(example, name, arrays, params)
    assert_within_policy(*jitted, *eager, what=f"{name} jit vs non-jit")
    # And both are the mathematics, not merely each other.
    assert_within_policy(
        module.loss(algorithm, arrays, params),
        module.gradient(algorithm, arrays, params),
        *eager,
        what=f"{name} non-jit vs reference",
    )


@pytest.mark.parametrize(("example", "name"), variant_cases(rest_of_family_slow=True))
def test_float32_within_its_tolerance_of_float64(example, name):
    # On the small inputs float32 rounding is orders of magnitude inside the float32
    # policy (1e-4 of max|g|), so the test is meaningful: a different algorithm fails
    # it, honest float32 rounding does not.
    _, algorithm = reference_of(example, name)
    loss_ref, g_ref = reference_on_small(example, algorithm)
    loss32, g32 = on_small(example, name, "float32")
    for k, g in g32.items():
        assert g.dtype == np.float32, f"{name}: float32 inputs gave a {g.dtype} gradient ({k})"
    assert_within_policy(
        loss_ref, g_ref, loss32, g32, dtype="float32", what=f"{name} float32 vs float64 reference"
    )
