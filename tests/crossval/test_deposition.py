"""05-deposition: what is particular to the cloud-in-cell example (issue 15).

- the reference checking itself: its hand-derived gradient against central differences
  away from the kinks, one-sided differences on them, central ones across the wrap;
- which grids ρ are bitwise the loop's on a CPU (jax-segment-sum, jax-sorted) and which
  are not (jax-scatter: four scatters add in corner-major order), and why;
- every `cic` variant against the reference, per array, on the shared inputs (float64 and
  float32), with the particles placed on kink lines and on the wrap counted from the file;
- the finite-difference mask, the validator, and `weanj run` on inputs never seen.

The registry-driven generic tests (tests/crossval/test_reference.py, ...) cover the
small case of `reference_deposition.small_inputs`; these tests use the shared inputs.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import jax
import numpy as np
import pytest

import weanj
from weanj._registry import find_variant
from weanj.examples import deposition as dep

from ..helpers import (
    assert_one_line_error,
    central_differences,
    needs_xla_cpu,
    rejection,
    run_weanj,
    weanj_main,
    write_h5,
)
from . import reference_deposition as ref

EXAMPLE = "05-deposition"
SHARED = Path(__file__).resolve().parents[2] / "shared_inputs" / f"{EXAMPLE}.h5"


def cic_variants(*, slow_backends=(), fast=None):
    """Every registered `cic` variant, skipped with the reason where it cannot run here;
    marked `slow` where its backend is in `slow_backends` (Enzyme-JAX compiles for ~10 s)
    or, given `fast`, where it is not one of those."""
    unavailable = weanj.unavailable_variants(EXAMPLE)
    cases = []
    for name in weanj.families(EXAMPLE)["cic"]:
        marks = []
        backend = find_variant(EXAMPLE, name).backend
        if backend in ("julia", "enzyme"):
            marks.append(getattr(pytest.mark, backend))
        if backend in slow_backends or (fast is not None and name not in fast):
            marks.append(pytest.mark.slow)
        if name in unavailable:
            marks.append(pytest.mark.skip(reason=f"{name}: {unavailable[name]}"))
        cases.append(pytest.param(name, id=name, marks=marks))
    return cases


@pytest.fixture(scope="module")
def shared():
    """The committed shared inputs, read with h5py (not through weanj)."""
    with h5py.File(SHARED, "r") as f:
        return {name: f[name][()] for name in ("pos", "q", "rhoobs")}


@pytest.fixture(scope="module")
def shared_reference(shared):
    return ref.loss("cic", shared, {}), ref.gradient("cic", shared, {})


def grid_of(deposit, pos, q, n):
    with jax.enable_x64(True):
        return np.asarray(jax.jit(deposit, static_argnums=2)(pos, q, n))


def assert_per_array(name, loss, grads, loss_ref, grads_ref, *, rel_loss, rel_grad, rows=None):
    """docs/DESIGN.md's policy, per array: |ΔL| ≤ rel_loss·|L|, |Δg| ≤ rel_grad·max|g_ref|."""
    assert abs(loss - loss_ref) <= rel_loss * abs(loss_ref), f"{name}: loss {loss} vs {loss_ref}"
    for array, g_ref in grads_ref.items():
        g = np.asarray(grads[array], dtype=np.float64)
        assert g.shape == g_ref.shape, f"{name}: {array} has shape {g.shape}"
        bound = rel_grad * np.max(np.abs(g_ref))
        worst = np.max(np.abs(g - g_ref))
        assert worst <= bound, f"{name}: ∂L/∂{array} off by {worst:.3e} > {bound:.3e}"
        if rows is not None:  # the particles on kinks and on the wrap, on their own
            assert np.max(np.abs(g[rows] - g_ref[rows])) <= bound, f"{name}: {array} at kinks"


# --- The reference checks itself ------------------------------------------------------


def test_reference_gradient_is_the_central_difference_away_from_kinks():
    rng = np.random.default_rng(150)
    arrays = ref._inputs(rng, 30, 6, kinks=0)
    grads = ref.gradient("cic", arrays, {})
    h = 1e-6
    g = arrays["pos"] * 6 - 0.5
    away = np.abs(g - np.round(g)) > 100 * 6 * h
    for name in ("pos", "q"):
        fds = central_differences(
            lambda v, name=name: ref.loss("cic", {**arrays, name: v}, {}), arrays[name], h
        )
        for index in np.ndindex(fds.shape):
            if name == "pos" and not away[index]:
                continue
            fd = fds[index]
            assert abs(fd - grads[name][index]) <= 1e-6 * np.max(np.abs(grads[name])), (
                name,
                index,
            )
    assert away.sum() >= 50  # most positions were checked


def test_reference_gradient_on_a_kink_is_the_assigned_cells():
    """On gx = 3 (n = 8) floor assigns cells 3 and 4: the derivative is the one-sided one
    from above; from below (cells 2 and 3) it differs, and a central difference averages."""
    arrays, _ = ref.small_inputs()
    p = 2
    assert arrays["pos"][p, 0] * 8 - 0.5 == 3.0
    grad = ref.gradient("cic", arrays, {})["pos"][p, 0]

    def loss_at(x):
        pos = arrays["pos"].copy()
        pos[p, 0] = x
        return ref.loss("cic", {**arrays, "pos": pos}, {})

    x, h = arrays["pos"][p, 0], 1e-7
    above = (loss_at(x + h) - loss_at(x)) / h
    below = (loss_at(x) - loss_at(x - h)) / h
    scale = max(abs(above), abs(below))
    assert abs(grad - above) <= 1e-4 * scale
    assert abs(above - below) > 1e-2 * scale  # a real kink: the slopes differ


def test_reference_is_smooth_across_the_periodic_wrap():
    """A particle at pos = 0 has i0 = −1 → n−1 and i1 = 0; moving it to −h keeps those
    cells (gx = −0.5 − nh), to 1 − h wraps it to the same cells from the other side."""
    arrays, _ = ref.small_inputs()
    assert arrays["pos"][0].tolist() == [0.0, 0.0]
    grads = ref.gradient("cic", arrays, {})
    h = 1e-6

    def loss_at(x, y):
        pos = arrays["pos"].copy()
        pos[0] = (x, y)
        return ref.loss("cic", {**arrays, "pos": pos}, {})

    fd_x = (loss_at(h, 0.0) - loss_at(-h, 0.0)) / (2 * h)
    assert abs(fd_x - grads["pos"][0, 0]) <= 1e-6 * np.max(np.abs(grads["pos"]))
    assert loss_at(1.0 - 2.0**-20, 0.0) == pytest.approx(loss_at(-(2.0**-20), 0.0), rel=1e-12)


# --- Bitwise grids ---------------------------------------------------------------------

# On a CPU: which variants' ρ is the loop's to the last bit (docs/DESIGN.md's order).
BITWISE_LOOP = {"jax-segment-sum": True, "jax-sorted": True, "jax-scatter": False}
DEPOSITS = {
    "jax-segment-sum": dep.deposit_segment_sum,
    "jax-sorted": dep.deposit_sorted,
    "jax-scatter": dep.deposit_scatter,
}


def test_which_grids_are_bitwise_the_loop_on_the_shared_inputs(shared):
    # On a GPU, segment_sum adds with atomics, in no fixed order (seen on an H200).
    needs_xla_cpu("the order in which XLA's scatter and segment_sum add")
    n = shared["rhoobs"].shape[0]
    loop = ref.deposit(shared["pos"], shared["q"], n)
    corner_major = ref.deposit(shared["pos"], shared["q"], n, order="corner-major")
    grids = {name: grid_of(f, shared["pos"], shared["q"], n) for name, f in DEPOSITS.items()}
    assert {name: np.array_equal(g, loop) for name, g in grids.items()} == BITWISE_LOOP
    # jax-scatter is bitwise a loop too, over the corners first: XLA's CPU scatter adds
    # its updates in order, one scatter after the other. The two orders round apart in
    # hundreds of cells, by an ulp or so:
    assert np.array_equal(grids["jax-scatter"], corner_major)
    differ = loop != corner_major
    assert 100 < differ.sum() < n * n
    assert np.max(np.abs(loop - corner_major)[differ] / np.abs(loop[differ])) < 1e-14


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_grids_bitwise_on_unseen_inputs(seed):
    """Random P, n (n mostly not a power of two, where pos*n is rounded) with coordinates
    at the doubles nearest the kink lines."""
    needs_xla_cpu("the order in which XLA's scatter and segment_sum add")
    arrays, _ = ref.random_inputs(np.random.default_rng(seed))
    pos, q, n = arrays["pos"], arrays["q"], arrays["rhoobs"].shape[0]
    loop = ref.deposit(pos, q, n)
    for name in ("jax-segment-sum", "jax-sorted"):
        assert np.array_equal(grid_of(DEPOSITS[name], pos, q, n), loop), name
    corner_major = ref.deposit(pos, q, n, order="corner-major")
    assert np.array_equal(grid_of(dep.deposit_scatter, pos, q, n), corner_major)


def test_jax_sorted_sums_each_cell_in_the_loops_order_with_one_cell():
    """n = 1: all four corners of every particle land in the one cell, so the order within
    a particle matters too."""
    needs_xla_cpu("the order in which XLA's segment_sum adds")
    rng = np.random.default_rng(7)
    pos, q = rng.random((50, 2)), rng.standard_normal(50)
    loop = ref.deposit(pos, q, 1)
    assert np.array_equal(grid_of(dep.deposit_sorted, pos, q, 1), loop)
    assert np.array_equal(grid_of(dep.deposit_segment_sum, pos, q, 1), loop)


@pytest.mark.parametrize("num_cells", [37, 2**62], ids=["packed-keys", "argsort"])
def test_sort_by_cell_is_a_stable_sort(num_cells):
    """jax-sorted's sort: unique keys cell·m + k where they fit int64, else an argsort."""
    cells = np.random.default_rng(9).integers(0, 37, 500).astype(np.int32)
    with jax.enable_x64(True):
        order, sorted_cells = jax.jit(dep.sort_by_cell, static_argnums=1)(cells, num_cells)
    assert np.array_equal(np.asarray(order), np.argsort(cells, kind="stable"))
    assert np.array_equal(np.asarray(sorted_cells), np.sort(cells))


def test_cell_coordinate_is_rounded_twice():
    """gx = pos*n − 0.5 as the loop rounds it (no fused multiply-add), also where pos*n
    is inexact (n not a power of two): otherwise a particle an ulp from a kink could land
    in the other cell, and its gradient would differ by O(1)."""
    x = np.random.default_rng(8).random(10_000)
    for n in (5, 7, 13, 32):
        with jax.enable_x64(True):
            g = np.asarray(jax.jit(dep.cell_coordinate, static_argnums=1)(x, n))
        assert np.array_equal(g, x * n - 0.5), n


# --- Every cic variant against the reference, on the shared inputs --------------------


def special_particles(pos, n):
    """Counts (and rows) of the particles on kink lines and on the periodic wrap, in the
    loop's float64 arithmetic."""
    g = pos * n - 0.5
    on = g == np.floor(g)
    return {
        "x on a kink": on[:, 0],
        "y on a kink": on[:, 1],
        "on a grid node": on.all(axis=1),
        "at pos = 0 (i0 = -1 -> n-1)": (pos == 0).any(axis=1),
        "on the kink gx or gy = 0": (g == 0).any(axis=1),
        "on the kink gx or gy = n-1 (i1 = n -> 0)": (g == n - 1).any(axis=1),
        "largest position (i1 = n -> 0)": (pos == np.nextafter(1.0, 0.0)).any(axis=1),
    }


def test_shared_inputs_have_particles_on_kinks_and_on_the_wrap(shared):
    counts = {k: int(v.sum()) for k, v in special_particles(shared["pos"], 32).items()}
    assert counts["x on a kink"] >= 128 + 64 and counts["y on a kink"] >= 128 + 64
    assert counts["on a grid node"] >= 64
    for what in list(counts)[3:]:
        assert counts[what] >= 4, (what, counts)
    # and the wrap is used: cells n-1 and 0 both receive from particles on both sides
    g = shared["pos"] * 32 - 0.5
    assert (np.floor(g) == -1).sum() >= 8 and (np.floor(g) == 31).sum() >= 8


@pytest.mark.parametrize("name", cic_variants())
def test_variant_matches_reference_on_shared_inputs(name, shared, shared_reference):
    ex = weanj.example(EXAMPLE)
    v = weanj.variant(EXAMPLE, name)
    args = ex.args(shared, {})
    special = np.zeros(len(shared["q"]), bool)
    for rows in special_particles(shared["pos"], 32).values():
        special |= rows
    assert_per_array(
        name,
        float(v.loss(*args)),
        v.grad(*args),
        *shared_reference,
        rel_loss=1e-12,
        rel_grad=1e-11,
        rows=special,
    )


@pytest.mark.parametrize("name", cic_variants(slow_backends=("enzyme",)))
def test_variant_float32_on_shared_inputs(name, shared):
    """float32 stays float32, within the float32 policy of the reference on the same
    (float32-rounded) inputs. n = 32: pos*n − 0.5 is exact in float32 as in float64, so
    both assign every particle, kinks included, to the same cells."""
    ex = weanj.example(EXAMPLE)
    single = {k: a.astype(np.float32) for k, a in shared.items()}
    rounded = {k: a.astype(np.float64) for k, a in single.items()}
    # As weanj's float32 runs call it: the built functions (rounding to float32 puts some
    # positions on 1.0, which direct calls refuse as outside [0, 1)).
    v = weanj.variant(EXAMPLE, name).built
    args = ex.args(single, {})
    loss, grads = v.loss(*args), v.grad(*args)
    assert np.asarray(loss).dtype == np.float32
    assert all(np.asarray(g).dtype == np.float32 for g in grads.values())
    assert_per_array(
        name,
        float(loss),
        grads,
        ref.loss("cic", rounded, {}),
        ref.gradient("cic", rounded, {}),
        rel_loss=1e-5,
        rel_grad=1e-4,
    )


# --- The finite-difference policy -------------------------------------------------------


def masked_fd_error(loss_of, x, g, mask, h, directions=10, seed=0):
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(directions):
        d = rng.standard_normal(x.shape) * mask
        d /= np.linalg.norm(d)
        fd = (loss_of(x + h * d) - loss_of(x - h * d)) / (2 * h)
        ad = float(np.vdot(g, d))
        worst = max(worst, abs(fd - ad) / max(abs(fd), abs(ad)))
    return worst


def test_fd_mask_leaves_out_the_kinks(shared, shared_reference):
    ex = weanj.example(EXAMPLE)
    policy = ex.fd
    mask = policy.mask(shared, {})
    assert set(mask) == {"pos", "q"} and mask["q"].all() and mask["q"].shape == (4096,)
    g = shared["pos"] * 32 - 0.5
    distance = np.abs(g - np.round(g)) / 32  # to the nearest kink line, in position units
    assert np.array_equal(mask["pos"], distance > policy.step)
    assert not mask["pos"][g == np.floor(g)].any()  # every coordinate on a kink is left out
    assert (~mask["pos"]).sum() == 452  # what `weanj check` reports for the shared inputs

    # The built loss, as weanj's gradient checks call it: the steps may move a position
    # just past 1.0, which direct calls refuse (the kernel wraps it periodically).
    v = weanj.variant(EXAMPLE, "jax-segment-sum").built
    _, grads = shared_reference
    for name in ("pos", "q"):

        def loss_of(x, name=name):
            return float(v.loss(*ex.args({**shared, name: x}, {})))

        error = masked_fd_error(loss_of, shared[name], grads[name], mask[name], policy.step)
        assert error <= policy.threshold / 10, (name, error)  # measured: 6.7e-8, 5.5e-9
    # Without the mask, directions straddle kinks and the check fails by O(1):
    unmasked = masked_fd_error(
        lambda x: float(v.loss(*ex.args({**shared, "pos": x}, {}))),
        shared["pos"],
        grads["pos"],
        np.ones_like(mask["pos"]),
        policy.step,
    )
    assert unmasked > 1e-2


# --- The validator ------------------------------------------------------------------------


def _bad(**changes):
    arrays, _ = ref.small_inputs()
    arrays.update(changes)
    return arrays


BAD_INPUTS = {
    "pos (P, 3)": (_bad(pos=np.zeros((12, 3))), "pos must have shape (P, 2)"),
    "pos (P,)": (_bad(pos=np.zeros(12)), "pos must have shape (P, 2)"),
    "no particles": (_bad(pos=np.zeros((0, 2)), q=np.zeros(0)), "P >= 1"),
    "q too short": (_bad(q=np.zeros(11)), "q must have shape (P,) = (12,)"),
    "rhoobs not square": (_bad(rhoobs=np.zeros((8, 7))), "rhoobs must be a square"),
    "pos = 1": (_bad(pos=np.full((12, 2), 1.0)), "outside the periodic unit square"),
    "pos < 0": (_bad(pos=np.full((12, 2), -1e-300)), "outside the periodic unit square"),
    "NaN in q": (_bad(q=np.full(12, np.nan)), "q has 12 NaN/Inf"),
    "Inf in pos": (_bad(pos=np.full((12, 2), np.inf)), "pos has 24 NaN/Inf"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_validator_rejects(case):
    arrays, fragment = BAD_INPUTS[case]
    assert fragment in rejection(EXAMPLE, arrays)


def test_weanj_run_rejects_positions_outside_the_square_in_one_line(tmp_path):
    arrays, _ = ref.small_inputs()
    arrays["pos"][3, 1] = 1.0
    bad = write_h5(tmp_path / "bad.h5", **arrays)
    # in this process: the one-line error of a fresh process is the julia-cic test's below
    result = weanj_main("run", EXAMPLE, "jax-scatter", "--inputs", bad, root=tmp_path)
    assert result.returncode == 2
    assert_one_line_error(result.stderr, "outside the periodic unit square", "pos[3, 1] = 1.0")


# --- weanj run on inputs never seen (issue 15, acceptance 1) ------------------------------


@pytest.mark.parametrize("name", cic_variants(slow_backends=("enzyme",), fast=("jax-scatter",)))
def test_weanj_run_on_unseen_inputs(name, tmp_path):
    rng = np.random.default_rng([15, sum(map(ord, name))])
    arrays, _ = ref.random_inputs(rng)
    inputs = write_h5(tmp_path / "unseen.h5", **arrays)
    out = tmp_path / "out.h5"
    result = weanj_main("run", EXAMPLE, name, "--inputs", inputs, "--out", out, root=tmp_path)
    assert result.returncode == 0, result.stderr
    with h5py.File(out, "r") as f:
        loss = float(f.attrs["loss"])
        grads = {array: f["gradient"][array][()] for array in ("pos", "q")}
        assert f.attrs["variant"] == name and f.attrs["dtype"] == "float64"
    assert_per_array(
        name,
        loss,
        grads,
        ref.loss("cic", arrays, {}),
        ref.gradient("cic", arrays, {}),
        rel_loss=1e-12,
        rel_grad=1e-11,
    )


def test_julia_cic_is_registered_and_says_why_it_cannot_run():
    v = find_variant(EXAMPLE, "julia-cic")
    assert v is not None and v.family == "cic" and v.backend == "julia"
    reason = weanj.unavailable_variants(EXAMPLE).get("julia-cic")
    assert reason is None or "julia" in reason.lower()  # e.g. "no Julia found (...)"


def test_weanj_run_julia_cic_without_julia_says_why_in_one_line(tmp_path):
    reason = weanj.unavailable_variants(EXAMPLE).get("julia-cic")
    if reason is None:
        pytest.skip("Julia is installed here: julia-cic runs (see the cic variant tests)")
    arrays, _ = ref.small_inputs()
    inputs = write_h5(tmp_path / "small.h5", **arrays)
    result = run_weanj("run", EXAMPLE, "julia-cic", "--inputs", str(inputs), root=tmp_path)
    assert result.returncode == 2
    # One first line of at most ~200 characters saying what is wrong; where the reason
    # would make it longer, the rest (what to install) goes on one indented line below.
    assert "Traceback" not in result.stderr
    first, *rest = result.stderr.strip().splitlines()
    assert "julia-cic" in first and "unavailable" in first and "Julia" in first, first
    assert len(first) <= 200 + len("weanj: error: "), first
    assert len(rest) <= 1 and all(line.startswith("  ") for line in rest), result.stderr
    # and the whole reason is there, split at most at one "; ".
    said = " ".join([first, *(line.strip() for line in rest)]).replace("; ", " ")
    assert reason.replace("; ", " ") in said, result.stderr
