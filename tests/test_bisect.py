"""`weanj bisect EX A B [--over PARAM]`: the first iteration count and the smallest size at
which two variants part ways, the minimal case and the commands that reproduce it.

The planted variant smooths like its sibling but damps element 3 from step 6 on: wrong
exactly for K >= 6 and n >= 4 (it has no element 3 below). The acceptance test runs it as
a user does, in a project of its own; the others register throwaway examples in-process.
"""

from __future__ import annotations

import re
import time

import h5py
import numpy as np
import pytest

import weanj
from weanj import _bisect, _registry

from .helpers import assert_one_line_error
from .projects import reproduce, weanj_in, write_project

STEPS = """\
import jax.numpy as jnp
import weanj
from toy_kernels import random_xy, smooth, smooth_loop, smooth_scan


def generate(seed, n=12):
    return random_xy(seed, n)


ex = weanj.register_example(weanj.Example(
    name="30-steps", arrays=("x", "y"), wrt="x", shapes={"x": ("n",), "y": ("n",)},
    params=(weanj.Param("K", default=10), weanj.Param("damp", default=0.999)),
    generate=generate, sizes=weanj.Sizes(generate=generate, values=(16, 32)),
))
weanj.jax_variant(ex, "jax-steps", family="s", loss=lambda x, y, K, damp: smooth_loop(x, y, K))
weanj.jax_variant(ex, "jax-scan", family="s", loss=lambda x, y, K, damp: smooth_scan(x, y, K))


@weanj.jax_variant(ex, "jax-late", family="s")
def late(x, y, K, damp):
    for k in range(1, K + 1):
        x = smooth(x)
        if k >= 6 and x.shape[0] >= 4:  # wrong from step 6 on, where there is an element 3
            x = x.at[3].multiply(damp)
    return jnp.sum((x - y) ** 2)


@weanj.jax_variant(ex, "jax-other", family="t")
def other(x, y, K, damp):
    return jnp.sum((x - y) ** 2)
"""


@pytest.fixture(scope="module")
def steps_project(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("steps-project"), {"steps.py": STEPS})


def smooth_reference(x, y, K, damp=1.0, late=False):
    """Loss and gradient of the planted kernels in numpy (the adjoint by hand: each step is
    linear, x ← D_k M x with M the symmetric circulant smoothing and D_k the damping)."""
    n = len(x)

    def M(v):
        return (np.roll(v, 1) + 2 * v + np.roll(v, -1)) / 4

    def D(v, k):
        v = v.copy()
        if late and k >= 6 and n >= 4:
            v[3] *= damp
        return v

    u = x.copy()
    for k in range(1, K + 1):
        u = D(M(u), k)
    r = u - y
    g = 2 * r
    for k in range(K, 0, -1):
        g = M(D(g, k))  # (D M)ᵀ = Mᵀ Dᵀ = M D
    return float(np.sum(r**2)), g


def test_bisect_over_K_names_step_6_and_the_smallest_size(steps_project):
    r = weanj_in(steps_project, "bisect", "30-steps", "jax-steps", "jax-late", "--over", "K")
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "first disagreement at K = 6 (K = 5 agrees)" in out, out
    # Doubling 1, 2, 4, 8 (up to 8 × the shared K = 10), then bisection 6, 5.
    tried = re.findall(r"^  K = (\d+): (\w+)", out, re.MULTILINE)
    assert tried == [
        ("1", "ok"),
        ("2", "ok"),
        ("4", "ok"),
        ("8", "FAIL"),
        ("6", "FAIL"),
        ("5", "ok"),
    ]
    sizes = re.findall(r"^  n = (\d+): (\w+)", out, re.MULTILINE)
    assert sizes == [("1", "ok"), ("2", "ok"), ("3", "ok"), ("4", "FAIL")]
    assert "smallest case: n = 4, K = 6" in out
    # The regions at the value found: element 3 is damped, so every entry's gradient moves.
    assert "12 element(s) in numpy (0:11) / Julia (1:12)" in out
    assert "4 element(s) in numpy (0:3) / Julia (1:4)" in out

    case = steps_project / "results/30-steps/cases/bisect-jax-steps-jax-late-K6-n4.h5"
    with h5py.File(case) as f:
        x, y, K, damp = f["x"][()], f["y"][()], int(f.attrs["K"]), float(f.attrs["damp"])
    expected = np.random.default_rng(0)  # the Sizes generator at n = 4, seed 0
    np.testing.assert_array_equal(x, expected.standard_normal(4))
    np.testing.assert_array_equal(y, expected.standard_normal(4))
    assert (K, damp) == (6, 0.999)

    # The printed commands reproduce it: both runs, then the judge of the two files.
    commands = [
        line.strip()
        for line in out.splitlines()
        if line.startswith("  weanj run") or line.startswith("  python -m weanj._bisect")
    ]
    assert len(commands) == 3, out
    judged = reproduce(steps_project, commands)
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert "30-steps::s::jax-steps~jax-late: FAIL" in judged.stdout
    # ... and the numbers in the run files are the kernels' (numpy, by hand).
    for variant, late in (("jax-steps", False), ("jax-late", True)):
        path = steps_project / f"results/30-steps/runs/bisect-jax-steps-jax-late-K6-n4-{variant}.h5"
        with h5py.File(path) as f:
            loss_ref, g_ref = smooth_reference(x, y, 6, damp, late)
            assert abs(f.attrs["loss"] - loss_ref) <= 1e-12 * loss_ref
            np.testing.assert_allclose(
                f["gradient"][()], g_ref, rtol=0, atol=1e-11 * np.max(np.abs(g_ref))
            )


def test_bisect_respects_an_upper_value_and_fixed_parameters(steps_project):
    r = weanj_in(
        steps_project, "bisect", "30-steps", "jax-steps", "jax-late", "--K", "7", "--damp", "1.0"
    )
    # damp = 1 makes the planted bug a no-op: they agree at every K up to 7.
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.findall(r"^  K = (\d+)", r.stdout, re.MULTILINE) == ["1", "2", "4", "7"]
    assert "agree at every K tried, 1 … 7" in r.stdout


def test_bisect_refuses_what_it_cannot_compare(steps_project):
    for args, fragment in (
        (("jax-steps", "jax-other"), "different families"),
        (("jax-steps", "jax-steps"), "two different variants"),
        (("jax-steps", "jax-late", "--over", "damp"), "needs an int parameter"),
        (("jax-steps", "jax-nope"), "unknown variant 'jax-nope'"),
    ):
        r = weanj_in(steps_project, "bisect", "30-steps", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        head, *listed = r.stderr.strip().splitlines()  # a list of known names may follow
        assert all(line.startswith("  ") for line in listed), r.stderr
        assert_one_line_error(head, fragment)


# --- in-process: the searches and an example without Sizes ------------------------------------


def test_smallest_value_doubles_then_bisects():
    calls = []

    def disagree(v):
        calls.append(v)
        return v >= 37

    assert _bisect.smallest_value(disagree, 1, 1000) == 37
    assert calls == [1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37]
    assert _bisect.smallest_value(lambda v: True, 3, 10) == 3
    assert _bisect.smallest_value(lambda v: False, 1, 10) is None
    assert _bisect.smallest_value(lambda v: v >= 10, 1, 10) == 10


def test_size_candidates_are_small_ones_then_doubling():
    assert _bisect.size_candidates(32) == [1, 2, 3, 4, 5, 6, 7, 8, 16, 32]
    assert _bisect.size_candidates(100) == [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 100]
    assert _bisect.size_candidates(4) == [1, 2, 3, 4, 5, 6, 7, 8]


NAME = "91-nosizes"


@pytest.fixture
def nosizes(project):
    import jax.numpy as jnp

    ex = weanj.register_example(
        weanj.Example(
            name=NAME,
            arrays=("x",),
            wrt="x",
            params=(weanj.Param("T", default=4),),
            generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal((3, 5))},
        )
    )

    @weanj.jax_variant(ex, "jax-power", family="p")
    def power(x, T):
        return jnp.sum(x**2) * T

    @weanj.jax_variant(ex, "jax-off", family="p")
    def off(x, T):  # wrong from T = 3 on, at row 1 only
        return jnp.sum(x**2) * T + (T >= 3) * 1e-3 * jnp.sum(x[1] ** 2)

    @weanj.jax_variant(ex, "jax-slow", family="p")
    def slow(x, T):
        time.sleep(2)  # while tracing: the first call of each T takes two seconds
        return jnp.sum(x**2) * T

    weanj.write_inputs(NAME)
    yield ex
    _registry.unregister_example(NAME)


def test_without_sizes_the_minimal_case_is_the_shared_inputs(nosizes, capsys, project):
    code = _bisect.command(NAME, "jax-power", "jax-off")
    out = capsys.readouterr().out
    assert code == 1, out
    assert "first disagreement at T = 3 (T = 2 agrees)" in out
    assert "declares no Sizes: the minimal case is the shared inputs" in out
    assert "5 element(s) in numpy (1:1, 0:4) / Julia (2:2, 1:5)" in out  # row 1 only
    case = project / "results" / NAME / "cases" / "bisect-jax-power-jax-off-T3.h5"
    shared = weanj.load_inputs(NAME)
    with h5py.File(case) as f:
        np.testing.assert_array_equal(f["x"][()], shared["x"])
        assert int(f.attrs["T"]) == 3
    # The judge of two files refuses a gradient of other inputs.
    g = weanj.evaluate(NAME, "jax-power")
    stale = project / "results" / NAME / "runs" / "power.h5"
    from weanj._io._store import write_gradient

    stale.parent.mkdir(parents=True, exist_ok=True)
    write_gradient(g, stale)
    assert _bisect.main(["judge", NAME, str(case), str(stale), str(stale)]) == 2
    assert "was not computed on" in capsys.readouterr().err


def test_a_variant_out_of_time_is_an_error_not_a_verdict(nosizes, capsys):
    with pytest.raises(weanj.WeanjError) as e:
        _bisect.command(NAME, "jax-power", "jax-slow", timeout_s=0.3)
    assert_one_line_error(
        str(e.value),
        "jax-slow took longer than the time limit of 0.3 s",
        "T = 1",
        "raise --timeout",
    )
