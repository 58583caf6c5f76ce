"""The Taylor test's last resolved step, estimated (issues 60 and 69;
`_pipeline/checks/_taylor_walk.py`): it decides as the walk of every step decided, both
ways along a direction (+dx and −dx), in a few losses.

The walk (halving from h0 until three remainders in a row are at rounding level, then the
rates at the smallest resolved steps), both ways, is the reference: on smooth losses with
claimed slopes wrong by 1e-2 down to 1e-15 relative, of either sign, and on losses with a
kink at any distance, the estimate's verdict must be the walk's, case by case. Where they
may differ is named: a correct gradient whose cubic term crosses its quadratic one near
rounding level, where the walk's third-smallest rate is still the crossing's (a false
FAIL the estimate, reading the smallest halving, does not make).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._judge._remainder import RESOLVED
from weanj._pipeline.checks._taylor_walk import Floor, Grid, both_ways, walk


def _verdict(ways, rate=1.8) -> str:
    """The judge's rule for one direction read both ways (`TaylorResult.passes`; no rate:
    a loss linear along it, its steps at h0, the array's scale here)."""
    return "ok" if all(not d.rates or d.agrees(rate) for d in ways) else "FAIL"


def _both(f, claimed, h0, floor=0.0):
    """(the estimate's two ways, losses it computed, the walk's two ways)."""
    calls = []

    def counted(h):
        calls.append(h)
        return f(h)

    found, _, _ = both_ways(Grid(counted, f(0.0), claimed, h0, 40), Floor(floor), 1.8)
    ahead = Grid(f, f(0.0), claimed, h0, 40)
    back = Grid(lambda h: f(-h), f(0.0), -claimed, h0, 40)
    return found, len(calls), (walk(ahead, floor), walk(back, floor))


def _smallest_resolved(d):
    """The steps of a way whose remainders are resolved, smallest last."""
    return [
        h for h, r, rho in zip(d.steps, d.remainders, d.rounding, strict=True) if r > RESOLVED * rho
    ]


def test_on_smooth_losses_the_estimate_decides_as_the_walk():
    """Seeded polynomials L0 + s·h + C·h² + D·h³ (D small beside C), claimed slopes wrong
    by 10^-k relative (k = 2..15, both signs) or right: 1,160 cases, one verdict each way;
    a right slope costs at most 6 losses both ways (the walk took 40 and more)."""
    rng = np.random.default_rng(20261206)
    right_costs, walk_costs = [], []
    for _ in range(40):
        L0, s, C = (rng.standard_normal() * 10 ** rng.uniform(-2, 2) for _ in range(3))
        D = C * rng.standard_normal() * 0.1
        h0 = 10 ** rng.uniform(-2, 0)

        def f(h, L0=L0, s=s, C=C, D=D):
            return L0 + s * h + C * h * h + D * h**3

        for delta in [0.0] + [sign * 10.0**-k for k in range(2, 16) for sign in (-1, 1)]:
            found, cost, walked = _both(f, s * (1 + delta), h0)
            assert _verdict(found) == _verdict(walked), (L0, s, C, D, h0, delta)
            if delta == 0:
                assert _verdict(found) == "ok"
                right_costs.append(cost)
                walk_costs.append(sum(len(w.steps) for w in walked))
    assert max(right_costs) <= 6, right_costs
    assert np.median(walk_costs) >= 3 * np.median(right_costs), (walk_costs, right_costs)


def test_on_a_kink_at_any_distance_the_estimate_decides_as_the_walk():
    """A kink of any size, from h0·1e-8 to twice h0 away: 1,000 cases. Where they differ,
    the walk failed a right slope by reading rates across a kink that the estimate's
    smallest halving lies below (the slope at x is the one below the kink): never the
    other way."""
    rng = np.random.default_rng(7)
    differ = 0
    for _ in range(1000):
        L0, s, C = rng.standard_normal(3)
        h0 = 10 ** rng.uniform(-2, 0)
        c = h0 * 10 ** rng.uniform(-8, 0.3)
        K = rng.standard_normal() * 10 ** rng.uniform(-6, 1)
        delta = rng.choice([0.0, 1e-3, 1e-7])

        def f(h, L0=L0, s=s, C=C, K=K, c=c):
            return L0 + s * h + C * h * h + K * max(0.0, h - c)

        found, _, walked = _both(f, s * (1 + delta), h0)
        if _verdict(found) != _verdict(walked):
            differ += 1
            assert (_verdict(found), _verdict(walked)) == ("ok", "FAIL")
            # its deciding halving, into its last resolved step, lies below the kink
            assert _smallest_resolved(found[0])[-2] < c, (found[0].steps, c)
            # and without the kink the walk passes too: the kink, not the slope, failed it
            _, _, smooth = _both(
                lambda h, L0=L0, s=s, C=C: L0 + s * h + C * h * h, s * (1 + delta), h0
            )
            assert _verdict(smooth) == "ok"
    # (read both ways, the walk reads a crossing's rates twice as often as one way did)
    assert differ <= 10


def test_a_wrong_slope_whose_terms_cancel_in_the_regime_fails():
    """r(h) = |C·h² − e·h| dips to zero at h = e/C. Put the dip where the estimate aims
    (C·h² ≈ 1600ρ, the error e·h resolved there and below): the remainder there is not
    the h² the estimate expects, it is not borne out, and the walk fails it (rates near 1
    below the dip), as it always did; for dips anywhere from there to rounding level,
    the two agree."""
    L0, s, C, h0 = 1.0, 0.7, 2.0, 0.05
    rho = 64 * np.finfo(float).eps * 1.0
    k = math.ceil(math.log2(h0 / math.sqrt(1600 * rho / C)))
    e = C * h0 / 2**k  # the dip there

    def f(h):
        return L0 + s * h + C * h * h

    found, cost, walked = _both(f, s + e, h0)
    assert _verdict(walked) == "FAIL"
    assert _verdict(found) == "FAIL" and cost > 6  # not decided by the estimate
    for shift in np.linspace(-2, 6, 33):  # the dip from 4 halvings higher to rounding level
        found, _, walked = _both(f, s + e * 2**-shift, h0)
        assert _verdict(found) == _verdict(walked), shift


def test_a_noisy_loss_escalates_to_its_measured_floor_once():
    """A loss jittering at 1e-10 of itself (far above 64·ε): under the free floor the
    regime is noise; the measured level is asked for once (for every direction) and the
    test passes under it."""
    asked = []

    def f(h):
        return (1.0 + 0.3 * h + 2.0 * h * h) * (1 + 1e-10 * math.sin(1e9 * h + 1.0))

    floor = Floor(0.0, lambda: asked.append(1) or 2e-10)
    first = both_ways(Grid(f, f(0.0), 0.3, 0.05, 40), floor, 1.8)
    second = both_ways(Grid(f, f(0.0), 0.3, 0.05, 40), floor, 1.8, first[2])
    assert asked == [1] and floor.value == 2e-10
    assert _verdict(first[0]) == "ok" and _verdict(second[0]) == "ok"


def test_where_the_walk_reads_a_crossing_the_estimate_reads_the_regime():
    """A right slope whose cubic term crosses its quadratic one (C·D < 0) a few halvings
    above rounding level: the walk's third-smallest rate is the crossing's (1.75: a false
    FAIL); the estimate reads the two smallest halvings (2 and 2) and passes."""
    L0, s, C, D, E = -620.9095982331581, 0.0408, 0.01304603386470591, -0.9226, -2.6619
    h0 = 0.9743976282244838

    def f(h):
        return L0 + s * h + C * h * h + D * h**3 + E * h**4

    found, _, walked = _both(f, s, h0)
    assert _verdict(walked) == "FAIL" and min(walked[0].rates[-3:]) < 1.8
    assert _verdict(found) == "ok" and all(1.8 <= r <= 2.3 for d in found for r in d.rates)


# --- in a check: each array on its own evidence --------------------------------------------

NAME = "92-two-arrays"
N = 8


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """L = Σ w·sin(x)²; `jax-ad` by JAX, `jax-wrong-w` a hand-written gradient whose w part
    is 0.5 % too large (its x part right)."""
    root = tmp_path_factory.mktemp("two-arrays")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        ex = weanj.register_example(
            weanj.Example(
                name=NAME,
                arrays=("x", "w"),
                wrt=("x", "w"),
                generate=lambda seed: {
                    "x": np.random.default_rng(seed).standard_normal(N),
                    "w": np.random.default_rng(seed + 1).uniform(0.5, 1.5, N),
                },
            )
        )

        def loss(x, w):
            return jnp.sum(w * jnp.sin(x) ** 2)

        def wrong(x, w):
            return {"x": w * jnp.sin(2 * x), "w": 1.005 * jnp.sin(x) ** 2}

        weanj.jax_variant(ex, "jax-ad", family="f", loss=loss)
        weanj.jax_variant(ex, "jax-wrong-w", family="f", loss=loss, grad=wrong)
        weanj.write_inputs(NAME)
        mp.setenv("WEANJ_ROOT", str(root))
        yield root, weanj.check(NAME, dtype="float64", say=lambda line: None, fresh=True)
    _registry.unregister_example(NAME)


def _case(judgement, variant, kind, array):
    (j,) = [
        j
        for j in judgement[NAME].judgements
        if j.kind == kind and j.subjects == (variant,) and j.array == array
    ]
    return j


def test_a_wrong_array_fails_on_its_own_evidence_and_the_right_one_passes(planted):
    """Each array moves alone in the Taylor test and is pushed forward alone in the jvp
    check: w's 0.5 % fails both, x (right) passes both, with nothing more gathered for it;
    the failing ones carry central differences (and the Taylor test its second
    differences: the loss is smooth, the gradient wrong)."""
    root, judgement = planted
    assert not judgement.ok
    for kind in ("taylor", "jvp"):
        wrong_w = _case(judgement, "jax-wrong-w", kind, "w")
        right_x = _case(judgement, "jax-wrong-w", kind, "x")
        assert str(wrong_w.verdict) == "FAIL", (kind, wrong_w.reason)
        assert str(right_x.verdict) == "ok", (kind, right_x.reason)
        assert "central differences" in wrong_w.evidence and "fd" in wrong_w.info
        assert "fd" not in right_x.info and not right_x.evidence  # it passed on its own
        good = _case(judgement, "jax-ad", kind, "w")
        assert str(good.verdict) == "ok" and not good.evidence, good.evidence
    taylor = _case(judgement, "jax-wrong-w", "taylor", "w")
    assert any(e.startswith("second differences") for e in taylor.evidence), taylor.evidence
    assert taylor.result.kink is False and "is not the loss's derivative" in taylor.reason
    for variant in ("jax-ad", "jax-wrong-w"):
        cost = judgement[NAME].subjects[variant].cost
        # the jvp check's derivatives came with the evaluation's own call
        assert cost.of("jvp") == (0, 0) and cost.of("evaluation") == (1, 1), cost.describe()
    assert judgement[NAME].subjects["jax-wrong-w"].cost.of("fd")[0] > 0
