"""What is particular to 04-tridiagonal (issue 14).

- The reference (`reference_tridiagonal.py`) checks itself: its hand adjoint of the loops
  against central differences of its loss and against the dense-matrix formula.
- Every `thomas` variant, per gradient array, against the reference, on systems of size
  n = 6, 2 and 1 (a 2×2 and a 1×1 system), with values outside the systems (`a[:, 0]`,
  `c[:, n-1]`) that must be ignored: their gradient is exactly zero.
- `jax-thomas`'s solution is the reference loop's to the bit (float64), at n from 1 to
  257: XLA must not contract `b - a*cp` into a fused multiply-add (see the module).
- `jax-thomas-adjoint`'s custom VJP against JAX's AD of the same forward.
- The validator's one-line rejections, and `weanj run` on inputs never seen.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import h5py
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj._registry import find_variant

from ..helpers import assert_one_line_error, rejection
from . import reference_tridiagonal as reference

EXAMPLE = "04-tridiagonal"
WRT = ("a", "b", "c", "d")
_MARKS = {"julia": pytest.mark.julia, "enzyme": pytest.mark.enzyme, "kernex": pytest.mark.kernex}


def thomas_variants(fast: tuple[str, ...] | None = None) -> list:
    """Every registered variant of family `thomas`, marked by backend, skipped with the
    reason where it cannot run here; with `fast`, the others are marked `slow`."""
    unavailable = weanj.unavailable_variants(EXAMPLE)
    cases = []
    for name in weanj.families(EXAMPLE)["thomas"]:
        marks = [] if fast is None or name in fast else [pytest.mark.slow]
        backend = find_variant(EXAMPLE, name).backend
        if backend in _MARKS:
            marks.append(_MARKS[backend])
        if name in unavailable:
            marks.append(pytest.mark.skip(reason=f"{name}: {unavailable[name]}"))
        cases.append(pytest.param(name, id=name, marks=marks))
    return cases


def systems(m: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """Random dominant systems (the reference's generator), with nonzero values outside."""
    return reference._dominant(np.random.default_rng(seed), m, n, 0.3)


def args_of(arrays) -> tuple:
    return tuple(arrays[k] for k in ("a", "b", "c", "d", "xobs"))


def assert_per_array(g_ref, g, what, tol=1e-11):
    """`|Δg| <= tol·max|g_ref|` for each gradient array, naming the array; the entries
    outside the systems must be exactly zero."""
    for name in WRT:
        ref, got = np.asarray(g_ref[name]), np.asarray(g[name])
        assert got.shape == ref.shape, f"{what}: {name} has shape {got.shape}"
        scale = float(np.max(np.abs(ref)))
        err = float(np.max(np.abs(got - ref)))
        assert err <= tol * scale, f"{what}: {name}: max|Δg| = {err:.3g} > {tol:g}·{scale:.3g}"
    g = {k: np.asarray(v) for k, v in g.items()}
    assert np.all(g["a"][:, 0] == 0), f"{what}: nonzero gradient at a[:, 0] (outside)"
    assert np.all(g["c"][:, -1] == 0), f"{what}: nonzero gradient at c[:, n-1] (outside)"


# --- the reference checks itself ------------------------------------------------------


@pytest.mark.parametrize(("m", "n"), [(3, 6), (2, 1), (2, 2), (1, 9)])
def test_reference_solves_the_systems(m, n):
    arrays = systems(m, n, 1)
    x = reference.solve(arrays)
    for r in range(m):
        exact = np.linalg.solve(reference.matrix(arrays, r), arrays["d"][r])
        np.testing.assert_allclose(x[r], exact, rtol=0, atol=1e-14 * np.max(np.abs(exact)))


@pytest.mark.parametrize(("m", "n"), [(3, 6), (2, 1), (2, 2)])
def test_reference_adjoint_matches_dense_formula(m, n):
    """The hand adjoint of the loops against λ = A⁻ᵀ 2(x - xobs) by dense solves."""
    arrays = systems(m, n, 2)
    assert_per_array(
        reference.dense_gradient(arrays), reference.gradient("thomas", arrays), "dense", 1e-13
    )


def test_reference_adjoint_matches_finite_differences():
    arrays, _ = reference.small_inputs()
    g = reference.gradient("thomas", arrays)
    fd = reference.fd_gradient(arrays, h=1e-5)
    for name in WRT:
        scale = np.max(np.abs(g[name]))
        assert np.max(np.abs(fd[name] - g[name])) <= 1e-8 * scale, name


# --- every thomas variant, per array, including a 1×1 and a 2×2 system ----------------


@pytest.mark.parametrize(("m", "n"), [(3, 6), (3, 2), (2, 1)], ids=["n6", "n2", "n1"])
@pytest.mark.parametrize("name", thomas_variants())
def test_variant_matches_reference_per_array(name, m, n):
    arrays = systems(m, n, 3)
    v = weanj.variant(EXAMPLE, name)
    loss = float(np.asarray(v.loss(*args_of(arrays))))
    g = v.grad(*args_of(arrays))
    assert isinstance(g, dict) and tuple(g) == WRT
    loss_ref = reference.loss("thomas", arrays)
    assert abs(loss - loss_ref) <= 1e-12 * abs(loss_ref), f"{name}: loss {loss} vs {loss_ref}"
    assert_per_array(reference.gradient("thomas", arrays), g, f"{name} (m={m}, n={n})")


# --- bits -------------------------------------------------------------------------------


def test_thomas_solution_is_the_loop_bit_for_bit():
    """Same operations in the same order: equal to the last bit, at sizes that exercise
    every block width of `sweep` (gcd(n, 8) = 1, 2, 4, 8) and one or many blocks."""
    from weanj.examples import tridiagonal

    solve = jax.jit(tridiagonal.thomas_solve)
    shapes = [(1, 1), (3, 1), (2, 2), (3, 4), (4, 8), (2, 9), (3, 40), (2, 257)]
    with jax.enable_x64(True):
        for m, n in shapes:
            arrays = systems(m, n, 100 * m + n)
            x = np.asarray(solve(*(jnp.asarray(arrays[k]) for k in ("a", "b", "c", "d"))))
            expected = reference.solve(arrays)
            differ = int(np.sum(x != expected))
            assert differ == 0, f"(m, n) = ({m}, {n}): {differ} of {x.size} entries differ"


def test_thomas_and_adjoint_losses_are_bitwise_equal_on_shared_inputs():
    d = weanj.load_inputs(EXAMPLE)
    args = args_of(d)
    plain = np.asarray(weanj.variant(EXAMPLE, "jax-thomas").loss(*args))
    adjoint = np.asarray(weanj.variant(EXAMPLE, "jax-thomas-adjoint").loss(*args))
    assert plain.tobytes() == adjoint.tobytes(), (float(plain), float(adjoint))


# --- the adjoint against JAX's AD of the same forward ---------------------------------


@pytest.mark.parametrize(("m", "n"), [(3, 16), (2, 1)])
def test_adjoint_vjp_matches_jax_ad(m, n):
    """For any cotangent x̄, the custom VJP (λ = A⁻ᵀx̄ by the transposed sweeps) equals
    JAX's AD of jax-thomas's scans, array by array."""
    from weanj.examples import tridiagonal

    arrays = systems(m, n, 4)
    xbar = np.random.default_rng(5).standard_normal((m, n))
    with jax.enable_x64(True):
        primals = tuple(jnp.asarray(arrays[k]) for k in WRT)
        x_ad, vjp_ad = jax.vjp(tridiagonal.thomas_solve, *primals)
        x_adj, vjp_adj = jax.vjp(tridiagonal.thomas_adjoint_solve, *primals)
        g_ad = dict(zip(WRT, vjp_ad(jnp.asarray(xbar)), strict=True))
        g_adj = dict(zip(WRT, vjp_adj(jnp.asarray(xbar)), strict=True))
    assert np.asarray(x_ad).tobytes() == np.asarray(x_adj).tobytes()
    assert_per_array(g_ad, g_adj, f"custom VJP vs JAX AD (m={m}, n={n})", 1e-13)


# --- the validator ----------------------------------------------------------------------


def test_validator_accepts_the_generator_and_ignores_outside_entries():
    ex = weanj.example(EXAMPLE)
    ex.validate(ex.generate(ex.seed))
    arrays = systems(3, 5, 6)
    arrays["a"][:, 0] = 1e6  # outside the systems: not part of dominance
    arrays["c"][:, -1] = -1e6
    ex.validate(arrays)


def test_validator_names_the_first_row_and_index_not_dominant():
    arrays = systems(4, 7, 7)
    arrays["b"][2, 3] = abs(arrays["a"][2, 3]) + abs(arrays["c"][2, 3])  # equal: not strict
    arrays["b"][3, 1] = 0.1 * arrays["b"][3, 1]
    message = rejection(EXAMPLE, arrays)
    assert "row 2, index 3" in message and "diagonally dominant" in message, message


@pytest.mark.parametrize(
    ("array", "shape"), [("a", (4, 6)), ("xobs", (7, 4)), ("d", (4,))], ids=str
)
def test_validator_rejects_mismatched_shapes(array, shape):
    arrays = systems(4, 7, 8)
    arrays[array] = np.ones(shape)
    message = rejection(EXAMPLE, arrays)
    assert array in message and str(shape) in message, message


def test_validator_rejects_non_matrices():
    arrays = {k: np.ones(5) for k in ("a", "b", "c", "d", "xobs")}
    assert "(m, n)" in rejection(EXAMPLE, arrays)


# --- `weanj run` on inputs never seen (issue 14, acceptance 1) ---------------------------


def weanj_cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "weanj", *map(str, args)],
        cwd=cwd,
        env={**os.environ, "WEANJ_ROOT": str(cwd)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def write_arrays(path, arrays):
    with h5py.File(path, "w") as f:
        for name, a in arrays.items():
            f.create_dataset(name, data=a)
    return path


# A subprocess each (seconds): jax-thomas runs by default, the others with the slow tests
# (tests/crossval/test_cli.py runs one variant per family on every run).
@pytest.mark.parametrize("name", thomas_variants(fast=("jax-thomas",)))
def test_run_on_unseen_inputs_matches_reference_per_array(name, project):
    seed = secrets.randbits(32)  # unseen by construction; reported on failure
    arrays, _ = reference.random_inputs(np.random.default_rng(seed))
    inputs = write_arrays(project / "unseen.h5", arrays)
    out = project / "out" / "o.h5"
    r = weanj_cli("run", EXAMPLE, name, "--inputs", inputs, "--out", out, cwd=project)
    assert r.returncode == 0, f"seed {seed}: {r.stderr}"
    with h5py.File(out, "r") as f:
        assert isinstance(f["gradient"], h5py.Group), "expected a group `gradient`"
        g = {k: f["gradient"][k][()] for k in f["gradient"]}
        loss = float(f.attrs["loss"])
    assert sorted(g) == sorted(WRT), f"seed {seed}: datasets {sorted(g)}"
    loss_ref = reference.loss("thomas", arrays)
    assert abs(loss - loss_ref) <= 1e-12 * abs(loss_ref), f"seed {seed}: {loss} vs {loss_ref}"
    shape = arrays["b"].shape
    assert_per_array(reference.gradient("thomas", arrays), g, f"seed {seed}, (m, n) = {shape}")


def test_run_rejects_non_dominant_inputs_in_one_line(project):
    arrays = systems(2, 5, 9)
    arrays["b"][1, 4] = 0.0
    inputs = write_arrays(project / "bad.h5", arrays)
    r = weanj_cli("run", EXAMPLE, "jax-thomas", "--inputs", inputs, cwd=project)
    assert r.returncode == 2, r.stderr
    assert_one_line_error(r.stderr, "row 1, index 4")
