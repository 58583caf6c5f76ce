"""03-advection in particular: the reference checking itself, the minmod ties of the
shared inputs and where the two limiter forms' gradients part, bitwise properties,
rematerialisation, tiny grids, and `weanj run` on inputs never seen.

The registry-driven tests (every variant against `reference_advection` on small inputs,
float32, jit/non-jit, inputs unmutated; the case table's same-family pairs, float32 pairs,
Taylor and jvp checks on the shared inputs) cover the rest.
"""

from __future__ import annotations

import functools

import h5py
import numpy as np
import pytest

import weanj

from ..helpers import rejection, weanj_main, write_h5
from . import reference_advection as reference

EXAMPLE = "03-advection"
ARRAYS = ("c0", "u", "v", "cobs")
MUSCL = ("jax-muscl", "kernex-muscl", "jax-muscl-enzyme", "jax-muscl-checkpoint")


def _args(arrays):
    return [arrays[k] for k in ARRAYS]


def _evaluate(name: str, arrays, T: int) -> tuple[float, np.ndarray]:
    v = weanj.variant(EXAMPLE, name)
    args = _args(arrays)
    return float(np.asarray(v.loss(*args, T))), np.asarray(v.grad(*args, T))


@functools.cache
def _shared_loss(name: str, T: int) -> float:
    return float(np.asarray(weanj.variant(EXAMPLE, name).loss(*_args(shared_arrays()), T)))


@functools.cache
def _shared_grad(name: str, T: int) -> np.ndarray:
    return np.asarray(weanj.variant(EXAMPLE, name).grad(*_args(shared_arrays()), T))


@functools.cache
def shared_arrays() -> dict[str, np.ndarray]:
    data = weanj.load_inputs(EXAMPLE)
    return {k: np.asarray(data[k]) for k in ARRAYS}


def _skip_unless_available(name: str) -> None:
    reason = weanj.unavailable_variants(EXAMPLE).get(name)
    if reason is not None:
        pytest.skip(f"{name}: {reason}")


def assert_within_policy(loss_ref, g_ref, loss, g, what: str) -> None:
    tol = weanj.tolerance("float64")
    assert abs(loss - loss_ref) <= tol.loss * abs(loss_ref), (
        f"{what}: loss {loss!r} vs {loss_ref!r}"
    )
    scale = np.max(np.abs(g_ref))
    worst = np.max(np.abs(g - g_ref))
    assert worst <= tol.grad * scale, f"{what}: max|Δg|/max|g_ref| = {worst / scale:.2e}"


def kink_cells(c: np.ndarray) -> dict[str, np.ndarray]:
    """Minmods on a kink of the field c (a*b == 0 or |a| == |b|), from the inputs alone."""
    out = {}
    for axis, (a, b) in reference.minmod_arguments(c).items():
        out[axis] = (a * b == 0) | (np.abs(a) == np.abs(b))
    return out


def reach_of_first_step_kinks(c0: np.ndarray) -> np.ndarray:
    """The c0 entries a minmod of the first step reads, for every minmod on a kink: its
    cell and the two beside it along its axis."""
    kinks = kink_cells(c0)
    reach = np.zeros(c0.shape, bool)
    for shift in (-1, 0, 1):
        reach |= np.roll(kinks["x"], shift, 0) | np.roll(kinks["y"], shift, 1)
    return reach


# --- the reference checks itself -----------------------------------------------------------


def test_reference_adjoint_matches_its_finite_differences():
    # A generic point (random, no kink within reach of ±h) where the loss is quadratic in
    # c0 around it: central differences are exact up to rounding, ≈ eps·L/h.
    arrays, params = reference.random_case(np.random.default_rng(11), 5), {"T": 3}
    g = reference.gradient("muscl", arrays, params)["c0"]
    g_fd = reference.fd_gradient(arrays, params, h=1e-6)
    assert np.max(np.abs(g - g_fd)) <= 1e-8 * np.max(np.abs(g))
    # Away from the kinks every convention is the same derivative.
    for algorithm in ("muscl-minmax", "muscl-minmax-julia"):
        assert np.array_equal(reference.gradient(algorithm, arrays, params)["c0"], g)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (0.25, 0.25),
        (-0.25, -0.25),
        (0.25, -0.25),
        (0.0, 0.5),
        (0.5, 0.0),
        (0.0, -0.5),
        (-0.5, 0.0),
        (0.0, 0.0),
        (0.125, 0.5),
        (0.5, -0.125),
        (-0.5, -0.125),
    ],
)
def test_minmod_conventions_are_what_jax_computes(a, b):
    # The reference's partials at (and off) the kinks against JAX AD of the module's two
    # limiters: the branch form follows the branch, the sign/min/abs form gets JAX's rules.
    import jax

    from weanj.examples import advection

    with jax.enable_x64(True):
        for limiter, convention in (
            (advection.minmod, "branch"),
            (advection.minmod_minmax, "jax-minmax"),
        ):
            value = float(limiter(a, b))
            assert value == reference.minmod(a, b)  # same value (±0 aside: == ignores it)
            partials = tuple(float(p) for p in jax.grad(limiter, argnums=(0, 1))(a, b))
            assert partials == reference.minmod_partials(a, b, convention), (limiter, a, b)


def test_predicted_julia_min_convention():
    # What the reference predicts for Julia's `min` (see reference_advection): at a == b
    # the cotangent goes to b, at a zero argument it agrees with JAX's form.
    assert reference.minmod_partials(0.25, 0.25, "julia-minmax") == (0.0, 1.0)
    assert reference.minmod_partials(-0.25, -0.25, "julia-minmax") == (0.0, 1.0)
    assert reference.minmod_partials(0.0, -0.5, "julia-minmax") == (-0.5, 0.0)
    assert reference.minmod_partials(0.5, 0.0, "julia-minmax") == (0.0, 0.5)
    assert reference.minmod_partials(0.0, 0.0, "julia-minmax") == (0.0, 0.0)


def test_reference_conventions_at_ties_are_the_jax_variants():
    # tie_inputs (for the Julia fixtures): kinks where all three conventions differ, and
    # the reference's branch and JAX conventions reproduce the two JAX variants there.
    arrays, params = reference.tie_inputs()
    kinks = kink_cells(arrays["c0"])
    a, b = reference.minmod_arguments(arrays["c0"])["x"]
    assert ((a == b) & (a != 0)).any() and ((a * b == 0) & (a != b)).any()
    assert kinks["y"].any()
    grads = {c: reference.gradient(c, arrays, params)["c0"] for c in reference.CONVENTIONS}
    assert not np.allclose(grads["muscl"], grads["muscl-minmax"])
    assert not np.allclose(grads["muscl-minmax"], grads["muscl-minmax-julia"])
    for name, algorithm in (("jax-muscl", "muscl"), ("jax-muscl-minmax", "muscl-minmax")):
        loss, g = _evaluate(name, arrays, params["T"])
        assert_within_policy(
            reference.loss(algorithm, arrays, params), grads[algorithm], loss, g, name
        )


# --- the shared inputs: ties, and where the two limiter forms part ---------------------------


def test_shared_inputs_have_minmod_ties_at_the_first_step():
    # Counted from the inputs alone (docs/DESIGN.md: ramps of exactly representable values and
    # constant patches), for the numbers of docs/gallery/advection.md.
    c0 = shared_arrays()["c0"]
    assert c0.shape == (64, 64)
    for axis, (a, b) in reference.minmod_arguments(c0).items():
        ramp = (a == b) & (a != 0)
        assert (ramp & (a > 0)).sum() == 224, axis  # both signs of slope
        assert (ramp & (a < 0)).sum() == 224, axis
        assert ((a == 0) & (b == 0)).sum() == 448, axis  # constant patches
        assert ((a * b == 0) & ((a != 0) | (b != 0))).sum() == 64, axis  # their edges
    u, v = shared_arrays()["u"], shared_arrays()["v"]
    ramps = kink_cells(c0)["x"] & (reference.minmod_arguments(c0)["x"][0] != 0)
    assert (ramps & (u >= 0)).any() and (ramps & (u < 0)).any()  # both upwind branches
    assert max(np.max(np.abs(u)), np.max(np.abs(v))) <= 1.0


def test_fd_mask_leaves_out_exactly_the_first_steps_kinks():
    # The example's finite-difference mask follows the kinks along the whole trajectory;
    # on the shared inputs no kink survives the first step (rough, slightly compressible
    # velocities), so it is the first step's reach, computed here from c0 alone.
    arrays = shared_arrays()
    mask = weanj.example(EXAMPLE).fd.mask(arrays, {"T": 20})["c0"]
    assert np.array_equal(~mask, reach_of_first_step_kinks(arrays["c0"]))
    assert (~mask).sum() == 1152


def test_minmax_loss_is_bitwise_muscl_on_shared_inputs():
    for T in (1, 20):
        assert _shared_loss("jax-muscl-minmax", T) == _shared_loss("jax-muscl", T), T


def test_minmax_gradient_differs_only_next_to_ties():
    # T = 1: the gradient elements where the two forms differ are exactly the entries a
    # minmod on a kink reads (non-empty), and each form's gradient is the reference's
    # hand adjoint under its convention.
    arrays, params = shared_arrays(), {"T": 1}
    g_branch = _shared_grad("jax-muscl", 1)
    g_minmax = _shared_grad("jax-muscl-minmax", 1)
    scale = np.max(np.abs(g_branch))
    differ = np.abs(g_branch - g_minmax) > 1e-11 * scale
    assert differ.sum() > 0
    near = reach_of_first_step_kinks(arrays["c0"])
    assert not np.any(differ & ~near), np.argwhere(differ & ~near)[:10]
    assert differ.sum() == 681  # docs/gallery/advection.md: 681 of 4096
    for g, algorithm in ((g_branch, "muscl"), (g_minmax, "muscl-minmax")):
        g_ref = reference.gradient(algorithm, arrays, params)["c0"]
        assert np.max(np.abs(g - g_ref)) <= 1e-11 * np.max(np.abs(g_ref)), algorithm


def test_minmax_gradient_agrees_once_the_ties_are_perturbed_away():
    arrays = dict(shared_arrays())
    rng = np.random.default_rng(13)
    arrays["c0"] = arrays["c0"] + rng.uniform(-1e-3, 1e-3, arrays["c0"].shape)
    kinks = kink_cells(arrays["c0"])
    assert not kinks["x"].any() and not kinks["y"].any()
    for T in (1, 20):
        loss, g = _evaluate("jax-muscl", arrays, T)
        loss_mm, g_mm = _evaluate("jax-muscl-minmax", arrays, T)
        assert loss_mm == loss
        assert_within_policy(loss, g, loss_mm, g_mm, f"perturbed, T={T}")


# --- bitwise properties, rematerialisation, tiny grids ------------------------------------


@pytest.mark.parametrize("T", [17, 20, pytest.param(300, marks=pytest.mark.slow)])
def test_checkpoint_is_muscl(T):
    # T = 17: two levels, 3 blocks of 5 steps and a rest of 2; 20: 4 blocks of 5; 300:
    # three levels (blocks of 45 steps, of 7). (T <= 16: one level, jax-muscl itself.)
    loss, g = _shared_loss("jax-muscl", T), _shared_grad("jax-muscl", T)
    loss_cp, g_cp = _shared_loss("jax-muscl-checkpoint", T), _shared_grad("jax-muscl-checkpoint", T)
    assert loss_cp == loss
    assert_within_policy(loss, g, loss_cp, g_cp, f"jax-muscl-checkpoint, T={T}")


def test_checkpoint_memory_grows_slower_than_T():
    # XLA's scratch memory of the gradient, compiled only (n = 16 keeps it quick): ×8
    # steps cost jax-muscl ×4.8 (its branch masks, on top of a fixed part), the nested
    # blocks ×1.7 (at n = 128, T = 1000: 5.0 MB against 67 MB, benchmarks/advection.py).
    arrays = weanj.example(EXAMPLE).sizes.generate(0, 16)

    def temp(name, T):
        compiled = weanj.variant(EXAMPLE, name).grad.lower(*_args(arrays), T).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    plain = {T: temp("jax-muscl", T) for T in (32, 256)}
    remat = {T: temp("jax-muscl-checkpoint", T) for T in (32, 256)}
    assert plain[256] / plain[32] > 4.0, plain
    assert remat[256] / remat[32] < 2.0, remat
    assert remat[256] < 0.35 * plain[256], (remat, plain)


def test_xla_contraction_is_the_whole_difference_from_the_loops():
    # The plain loops round every operation; XLA's CPU program fuses two multiply-adds per
    # face (reference_advection, `fma=True`). Either the loops match jax-muscl bitwise or
    # that contraction does; anything else is a change of the arithmetic worth knowing.
    import jax
    import jax.numpy as jnp

    from weanj.examples import advection

    arrays, params = reference.random_inputs(np.random.default_rng(17))
    with jax.enable_x64(True):
        c_jax = np.asarray(
            jax.jit(advection.advect, static_argnums=3)(
                *(jnp.asarray(arrays[k]) for k in ("c0", "u", "v")), params["T"]
            )
        )
    plain = reference.solve(arrays, params["T"])
    fused = reference.solve(arrays, params["T"], fma=True)
    assert np.array_equal(c_jax, plain) or np.array_equal(c_jax, fused), (
        f"n={arrays['c0'].shape[0]} T={params['T']}: jax-muscl's c^T differs from the plain "
        f"loops at {(c_jax != plain).sum()} and from the contracted ones at "
        f"{(c_jax != fused).sum()} cells"
    )
    if jax.default_backend() == "cpu":
        assert np.array_equal(c_jax, fused)


@pytest.mark.parametrize(
    ("name", "n"),
    [
        ("jax-muscl", 1),
        ("jax-muscl", 2),
        ("jax-muscl", 3),
        ("kernex-muscl", 2),
        ("jax-muscl-minmax", 1),
    ],
)
def test_tiny_periodic_grids(name, n):
    # Indices mod n: at n <= 4 the stencil (i±2) wraps onto itself (kernex pads by
    # wrapping, wider than the array at n = 1, 2); n = 1 has no differences at all (every
    # minmod on its kink a = b = 0, where all conventions give 0).
    _skip_unless_available(name)
    arrays = reference.random_case(np.random.default_rng(n), n)
    params = {"T": 3}
    loss, g = _evaluate(name, arrays, 3)
    algorithm = weanj.variant(EXAMPLE, name).family
    assert_within_policy(
        reference.loss(algorithm, arrays, params),
        reference.gradient(algorithm, arrays, params)["c0"],
        loss,
        g,
        f"{name}, n={n}",
    )


def test_validation_errors_are_one_line():
    good = reference.random_case(np.random.default_rng(0), 5)
    for arrays, fragment in [
        ({**good, "u": 1.5 * good["u"] / np.max(np.abs(good["u"]))}, "|u| must be <= 1"),
        ({**good, "v": good["v"][:4]}, "v has shape (4, 5)"),
        ({**good, "c0": good["c0"][:4]}, "c0 must be a square"),
    ]:
        assert fragment in rejection(EXAMPLE, arrays)


# --- acceptance 1: `weanj run` on inputs never seen, against the reference -----------------


@pytest.mark.parametrize(
    "name",
    ["jax-muscl"]
    + [pytest.param(v, marks=pytest.mark.slow) for v in (*MUSCL[1:], "jax-muscl-minmax")],
)
def test_weanj_run_on_random_inputs(name, project, tmp_path):
    # `weanj run` in this process (`weanj_main`; compilation: seconds): jax-muscl always,
    # the other variants with the slow tests.
    _skip_unless_available(name)
    rng = np.random.default_rng(2026)
    arrays, params = reference.random_inputs(rng)
    inputs = write_h5(tmp_path / "random.h5", **arrays)
    out = tmp_path / "out.h5"
    T = params["T"]
    result = weanj_main(
        "run", EXAMPLE, name, "--inputs", inputs, "--T", T, "--out", out, root=project
    )
    assert result.returncode == 0, result.stderr
    with h5py.File(out, "r") as f:
        stored = f["gradient"]
        g = stored["c0"][()] if isinstance(stored, h5py.Group) else stored[()]
        loss = float(f.attrs["loss"])
        assert int(f.attrs["T"]) == T
    algorithm = reference.ALGORITHMS[weanj.variant(EXAMPLE, name).family]
    loss_ref = reference.loss(algorithm, arrays, params)
    g_ref = reference.gradient(algorithm, arrays, params)["c0"]
    assert abs(loss - loss_ref) <= 1e-12 * abs(loss_ref)
    assert np.max(np.abs(g - g_ref)) <= 1e-11 * np.max(np.abs(g_ref))
