"""Where two ports differ: connected regions per array, the same in text, JSON and pytest
messages, and pictures for any rank (issue 23, build points 1 and 2).

Unit tests build `Gradient`s by hand and ask the judge; every region is checked against
an independent count (numpy masks, written out here). The end-to-end test is a user
project with a variant wrong in two separate regions, run as a user runs it.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import weanj
from weanj._judge._compare import compare
from weanj._judge._regions import MAX_REGIONS, regions
from weanj._judge._verdict import ExampleJudgement, judge_pair
from weanj._model import Gradient
from weanj._model._verdicts import Verdict
from weanj._report._json import judgement_json
from weanj._report._lines import message, region_lines

from .projects import pytest_weanj_in, weanj_in, write_project


def _example(shape=None, mask=None):
    spec = weanj.Array("x", shape=shape)
    return weanj.Example(
        name="90-regions",
        arrays=(spec,),
        wrt="x",
        generate=lambda seed: {"x": np.zeros(shape or (4,))},
        fd=weanj.FDPolicy(mask=mask) if mask else weanj.FDPolicy(),
    )


def _gradient(ex, variant, values, loss=1.0):
    return Gradient(
        example=ex,
        variant=variant,
        family="f",
        dtype="float64",
        gradients={"x": np.asarray(values, float)},
        loss=loss,
        params={},
        inputs_sha256="0" * 64,
        key="k" * 64,
    )


def _pair(ref, other, *, kinks=None, keep=None, shape=None):
    ex = _example(shape=shape, mask=(lambda a, p: {"x": keep}) if keep is not None else None)
    a, b = _gradient(ex, "jax-ref", ref), _gradient(ex, "jax-other", other)
    return judge_pair("90-regions::f::jax-ref~jax-other", a, b, "x", kinks=kinks, keep=keep), a, b


# --- the regions themselves ---------------------------------------------------------------------


def test_two_separate_regions_in_1d_largest_first_with_both_conventions():
    ref = np.linspace(1.0, 2.0, 128)  # max|g_ref| = 2
    other = ref.copy()
    other[0:20] += 1e-6 * np.arange(1, 21)  # worst at 19
    other[97:128] += 1e-8  # 31 elements, uniform error: worst is the first (argmax)
    other[60] += 1e-14  # rounding noise: 5e-15 relative, inside the tolerance
    c = compare(ref, other, 1.0, 1.0)
    assert not c.agree and c.differing == 51 and c.region_count == 2
    big, small = c.regions
    assert (big.count, big.lo, big.hi, big.worst) == (31, (97,), (127,), (97,))
    assert (small.count, small.lo, small.hi, small.worst) == (20, (0,), (19,), (19,))
    assert small.worst_rel == pytest.approx(20e-6 / 2.0, rel=1e-9)
    assert small.worst_abs == pytest.approx(20e-6, rel=1e-9)
    assert big.to_json()["julia"] == {"lo": [98], "hi": [128], "worst": [98]}
    assert small.to_json()["numpy"] == {"lo": [0], "hi": [19], "worst": [19]}
    lines = region_lines(c)
    assert lines == [
        "    31 element(s) in numpy slice [97:128] / Julia range [98:128], worst "
        "5.00e-09·max|g_ref| at numpy (97) / Julia (98)",
        "    20 element(s) in numpy slice [0:20] / Julia range [1:20], worst "
        "1.00e-05·max|g_ref| at numpy (19) / Julia (20)",
    ]


def test_regions_connect_along_diagonals_in_any_rank():
    outside = np.zeros((5, 5), bool)
    outside[1, 1] = outside[2, 2] = outside[3, 3] = True  # one diagonal chain
    outside[0, 4] = True  # alone
    found, total = regions(outside, outside.astype(float))
    assert total == 2
    assert [(r.count, r.lo, r.hi) for r in found] == [(3, (1, 1), (3, 3)), (1, (0, 4), (0, 4))]
    cube = np.zeros((3, 3, 3), bool)
    cube[0, 0, 0] = cube[1, 1, 1] = True  # corner neighbours in 3-D
    assert regions(cube, cube.astype(float))[1] == 1


def test_equal_sizes_are_ordered_by_worst_error_and_the_rest_is_counted():
    ref = np.ones(40)
    other = ref.copy()
    errors = {3: 1e-9, 10: 1e-5, 17: 1e-7, 24: 1e-3, 31: 1e-6, 36: 1e-8, 38: 1e-4, 0: 1e-10}
    for i, e in errors.items():
        other[i] += e
    c = compare(ref, other)
    assert c.region_count == len(errors) == 8 and len(c.regions) == MAX_REGIONS
    by_worst = sorted(errors, key=lambda i: -errors[i])[:MAX_REGIONS]
    assert [r.worst for r in c.regions] == [(i,) for i in by_worst]
    lines = region_lines(c)
    assert len(lines) == MAX_REGIONS + 1 and lines[-1] == "    … and 2 more region(s)"


def test_larger_regions_come_before_worse_small_ones():
    ref = np.ones((6, 6))
    other = ref.copy()
    other[0, 0] += 1.0  # one element, very wrong
    other[3:6, 3:6] += 1e-6  # nine elements, slightly wrong
    c = compare(ref, other)
    assert [(r.count, r.lo, r.hi) for r in c.regions] == [(9, (3, 3), (5, 5)), (1, (0, 0), (0, 0))]


def test_nan_regions_and_a_zero_reference_are_told_apart():
    ref = np.zeros(8)
    other = ref.copy()
    other[2] = 1e-3
    other[6] = np.nan
    c = compare(ref, other)
    assert c.nonfinite and c.region_count == 2
    by_place = {r.lo: r for r in c.regions}
    assert by_place[(6,)].nonfinite and by_place[(6,)].to_json()["worst_rel"] is None
    assert not by_place[(2,)].nonfinite and by_place[(2,)].to_json()["worst_abs"] == 1e-3
    text = "\n".join(region_lines(c))
    assert "numpy slice [6:7] / Julia range [7:7], worst NaN/Inf" in text
    assert (
        "numpy slice [2:3] / Julia range [3:3], worst |Δ| 1.00e-03 (the reference is zero there)"
        in text
    )
    assert "NaN" not in text.split("\n")[0]  # the region of the zero reference: absolute


def test_a_scalar_gradient_is_one_region_without_an_index():
    c = compare(np.array(2.0), np.array(3.0))
    assert c.region_count == 1 and c.regions[0].lo == () and c.regions[0].count == 1
    assert region_lines(c) == [
        "    1 element(s) in the scalar, worst 5.00e-01·max|g_ref| at numpy () / Julia ()"
    ]


def test_text_json_and_the_pytest_message_list_the_same_regions():
    ref = np.linspace(1.0, 2.0, 128)
    other = ref.copy()
    other[0:20] *= 1.001
    other[97:128] *= 1.001
    j, _, _ = _pair(ref, other)
    assert j.verdict == Verdict.FAIL
    text = message(j)  # what a failing pytest --weanj item shows
    for numpy_box, julia_box in (("[97:128]", "[98:128]"), ("[0:20]", "[1:20]")):
        assert f"numpy slice {numpy_box} / Julia range {julia_box}" in text
    data = judgement_json(j)
    assert data["region_count"] == 2
    boxes = [
        (r["numpy"]["lo"], r["numpy"]["hi"], r["julia"]["lo"], r["julia"]["hi"])
        for r in data["regions"]
    ]
    assert boxes == [([97], [127], [98], [128]), ([0], [19], [1], [20])]
    counts_in_text = [int(m) for m in re.findall(r"(\d+) element\(s\) in numpy", text)]
    assert counts_in_text == [r["count"] for r in data["regions"]] == [31, 20]


# --- pictures -----------------------------------------------------------------------------------


@pytest.fixture
def mpl():
    return pytest.importorskip("matplotlib", reason="pictures need matplotlib")


def _boxes(ax):
    """The outlined regions of a heat map: (row lo, col lo, row hi, col hi), 0-based."""
    from matplotlib.patches import Rectangle

    out = []
    for p in ax.patches:
        if isinstance(p, Rectangle) and not p.get_fill():
            x, y = p.get_xy()
            out.append(
                (
                    round(y - 0.5),
                    round(x - 0.5),
                    round(y - 0.5 + p.get_height() - 1),
                    round(x - 0.5 + p.get_width() - 1),
                )
            )
    return sorted(out)


def test_a_3d_pair_shows_slices_through_the_worst_element_and_projections(mpl):
    """The issue's stencil: the error is large on the two k faces, rounding noise inside."""
    from weanj._report._figures import draw_pair

    shape = (6, 7, 8)
    rng = np.random.default_rng(0)
    ref = rng.uniform(1.0, 2.0, shape)
    other = ref * (1 + 1e-15 * rng.standard_normal(shape))  # inside the tolerance
    other[:, :, 0] += 1e-3
    other[:, :, 7] += 1.0
    other[2, 3, 7] += 0.5  # the worst element
    j, a, b = _pair(ref, other, shape=("i", "j", "k"))
    c = j.comparison
    assert c.worst == (2, 3, 7) and c.region_count == 2
    assert sorted((r.lo, r.hi) for r in c.regions) == [
        ((0, 0, 0), (5, 6, 0)),
        ((0, 0, 7), (5, 6, 7)),
    ]
    fig = draw_pair(j, a, b)
    heat = [ax for ax in fig.axes if ax.images]
    assert len(heat) == 6  # three slices, three projections
    delta = np.abs(other - ref) / np.max(np.abs(ref))
    slices = {
        (0, 1): delta[:, :, 7],  # through k = 7 (Julia 8)
        (0, 2): delta[:, 3, :],
        (1, 2): delta[2, :, :],
    }
    slice_axes, projection_axes = heat[0::2], heat[1::2]  # drawn column by column
    for ax, ((p, q), expected) in zip(slice_axes, slices.items(), strict=True):
        shown = ax.images[0].get_array()
        np.testing.assert_array_equal(shown.filled(0.0), expected)
        assert f"axis {p} (Julia index)" in ax.get_ylabel() and f"axis {q}" in ax.get_xlabel()
    assert "axis 2 = 8" in slice_axes[0].get_title()  # the worst element's Julia index
    # The k = 7 face fills the first slice and is outlined there; the other slices cut
    # both faces, and both are outlined.
    assert _boxes(slice_axes[0]) == [(0, 0, 5, 6)]
    assert _boxes(slice_axes[1]) == [(0, 0, 5, 0), (0, 7, 5, 7)]
    assert _boxes(slice_axes[2]) == [(0, 0, 6, 0), (0, 7, 6, 7)]
    # Projections: the max over the remaining axis, every region outlined.
    for ax, axis in zip(projection_axes, (2, 1, 0), strict=True):
        np.testing.assert_array_equal(ax.images[0].get_array().filled(0.0), delta.max(axis=axis))
    assert _boxes(projection_axes[0]) == [(0, 0, 5, 6), (0, 0, 5, 6)]  # both faces onto (i, j)


def test_heat_map_marks_tolerance_nan_and_regions(mpl):
    from weanj._report._figures import NAN_COLOUR, draw_pair

    ref = np.ones((5, 9))
    other = ref.copy()
    other[1:3, 2:4] += 1e-4
    other[4, 8] = np.nan
    j, a, b = _pair(ref, other, shape=("m", "n"))
    assert j.verdict == Verdict.NONFINITE
    fig = draw_pair(j, a, b)
    heat, bar = fig.axes[0], fig.axes[1]
    assert _boxes(heat) == [(1, 2, 2, 3), (4, 8, 4, 8)]
    (marker,) = [line for line in heat.lines if line.get_color() == NAN_COLOUR]
    assert list(marker.get_xdata()) == [9] and list(marker.get_ydata()) == [5]  # Julia (5, 9)
    tolerances = [line.get_ydata()[0] for line in bar.lines]
    assert tolerances == [1e-11]


def test_a_kinks_pair_gets_a_heat_map_saying_so(mpl):
    from weanj._report._figures import chosen_pairs, draw_pair

    ref = np.arange(1.0, 17.0).reshape(4, 4)
    other = ref.copy()
    other[1, 2] = 0.5 * ref[1, 2]  # the tie convention at the one kink
    keep = np.ones((4, 4), bool)
    keep[1, 2] = False
    j, a, b = _pair(ref, other, kinks="min at a tie", keep=keep, shape=("n", "n"))
    assert j.verdict == Verdict.KINKS
    ej = ExampleJudgement(a.example, None, [j], {"jax-ref": a, "jax-other": b})
    assert chosen_pairs(ej) == [j]
    fig = draw_pair(j, a, b)
    heat = fig.axes[0]
    assert "only at the kinks, as declared (min at a tie)" in heat.get_title()
    assert _boxes(heat) == [(1, 2, 1, 2)]
    shown = heat.images[0].get_array()
    assert shown.count() == 1 and shown[1, 2] == pytest.approx(0.5 * 7 / 16)


def test_a_1d_pair_is_a_line_with_the_regions_shaded(mpl):
    from weanj._report._figures import draw_pair

    ref = np.linspace(1.0, 2.0, 128)
    other = ref.copy()
    other[0:20] *= 1.001
    other[97:128] *= 1.001
    j, a, b = _pair(ref, other, shape=("n",))
    ax = draw_pair(j, a, b).axes[0]
    spans = sorted((p.get_x(), p.get_x() + p.get_width()) for p in ax.patches)
    assert spans == [(0.5, 20.5), (97.5, 128.5)]  # Julia 1:20 and 98:128, cell edges
    (curve,) = [line for line in ax.lines if len(line.get_xdata()) > 2]
    assert curve.get_xdata()[0] == 1 and len(curve.get_xdata()) == 51


# --- acceptance 1, as a user runs it -------------------------------------------------------------

TWO_REGIONS = """\
import jax, jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="40-edges", arrays=("x", "y"), wrt="x", shapes={"x": ("n",), "y": ("n",)},
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(128),
                           "y": np.random.default_rng(seed + 1).standard_normal(128)},
))


def loss(x, y):
    return jnp.sum(jnp.sin(x) * y)


weanj.jax_variant(ex, "jax-sin", family="edges", loss=loss)


def wrong_boundaries(x, y):  # a wrong boundary treatment at both ends
    g = jnp.cos(x) * y
    return g.at[0:20].multiply(1.01).at[97:128].multiply(1.02)


weanj.jax_variant(ex, "jax-edges", family="edges", grad=wrong_boundaries)(loss)
"""


@pytest.mark.slow  # check, diff and a pytest --weanj session; test_front_ends_agree runs by default
def test_both_regions_appear_in_check_diff_json_and_pytest(tmp_path):
    write_project(tmp_path, {"edges.py": TWO_REGIONS})
    boxes = (
        "numpy slice [0:20] / Julia range [1:20]",
        "numpy slice [97:128] / Julia range [98:128]",
    )

    check = weanj_in(tmp_path, "check", "40-edges", "--dtype", "float64")
    assert check.returncode == 1, check.stdout + check.stderr
    assert all(b in check.stdout for b in boxes), check.stdout
    assert "31 element(s) in numpy slice [97:128]" in check.stdout  # the larger region first
    assert check.stdout.index(boxes[1]) < check.stdout.index(boxes[0])

    diff = weanj_in(tmp_path, "diff", "40-edges", "--json")
    assert diff.returncode == 1, diff.stderr
    (pair,) = json.loads(diff.stdout)["pairs"]
    assert pair["region_count"] == 2 and pair["differing"] == 51
    assert [
        (r["count"], r["numpy"]["lo"], r["numpy"]["hi"], r["julia"]["lo"], r["julia"]["hi"])
        for r in pair["regions"]
    ] == [(31, [97], [127], [98], [128]), (20, [0], [19], [1], [20])]

    tests = pytest_weanj_in(tmp_path, "-rf")
    assert tests.returncode == 1, tests.stdout + tests.stderr
    message = tests.stdout[tests.stdout.index("40-edges::edges::jax-sin~jax-edges: FAIL") :]
    assert all(b in message for b in boxes), tests.stdout


# --- readouts that say what they mean (issue 70, item 8) -----------------------------------------


def test_a_region_prints_as_a_half_open_numpy_slice_and_an_inclusive_julia_range():
    # rows 1 to 46 of column 0: what the issue saw printed as `numpy (1:46, 0:0)`, an empty
    # slice to a numpy user
    ref = np.ones((64, 8))
    other = ref.copy()
    other[1:47, 0] += 1e-3
    c = compare(ref, other)
    (line,) = region_lines(c)
    assert "46 element(s) in numpy slice [1:47, 0:1] / Julia range [2:47, 1:1]," in line
    # the slice printed selects exactly the differing elements, and the range counts them
    assert np.count_nonzero(other[1:47, 0:1] != ref[1:47, 0:1]) == 46
    assert len(range(2, 47 + 1)) * len(range(1, 1 + 1)) == 46


def test_a_reference_about_zero_at_the_worst_element_gets_no_ulp_figure():
    # the worst entry's reference is 1e-300 beside entries of order one: a ULP count from
    # there is ~4.6e18, which measures how small the reference is, not the difference
    ref = np.array([1.0, 2.0, 1e-300, 3.0])
    other = ref.copy()
    other[2] = -1e-3
    j, _, _ = _pair(ref, other)
    c = j.comparison
    assert c.worst == (2,) and c.ulp > 10**18  # the count the views no longer show
    assert c.reference_near_zero
    text = message(j)
    assert "reference ≈ 0" in text and " ULP" not in text
    data = judgement_json(j)
    assert data["ulp"] is None and data["ulp_text"] == "reference ≈ 0"


def test_a_reference_above_the_rounding_level_keeps_its_ulp_figure():
    ref = np.array([1.0, 2.0, 1e-3, 3.0])  # small, but far above eps·max|g_ref| = 6.7e-16
    other = ref.copy()
    other[2] = 2e-3
    j, _, _ = _pair(ref, other)
    assert not j.comparison.reference_near_zero
    expected = f"{j.comparison.ulp:.1e}".replace("e+", "e") + " ULP"
    assert expected in message(j) and "reference ≈ 0" not in message(j)
