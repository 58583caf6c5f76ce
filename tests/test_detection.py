"""What a check can see (issue 69, item 6): the smallest planted relative error the
self-checks catch, against the same array tested alone with every step walked.

(i) On the two kernels of `benchmarks/detection.py` whose three `wrt` arrays differ in
curvature by more than 100× (a tanh MLP, a nonlinear heat stencil; tiny sizes), each
array's Taylor test in a family of one with no forward mode (`custom_vjp`: the self-checks
alone, nothing else judges it) catches, per array, errors down to the reference's
smallest within 2×: the same grid point of ε, or one half decade apart with a bisected
ratio ≤ 2. The numbers come from the benchmark's own functions.

(ii) A family whose members all share one planted error fails by its self-checks alone:
one element of the lowest-curvature array × (1 + 1e-3) in two `custom_vjp` members (the
Taylor test), every gradient × (1 + 1e-9) in two members with a hand-written `grad=`
(the jvp check); the correct members beside them in the same examples stay ok.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj._registry import unregister_example

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def detection():
    """The benchmark's modules (`benchmarks/_detection*.py`), imported as the script
    imports them (its folder on `sys.path` while they load)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _detection
        import _detection_kernels
        import _detection_measure
    finally:
        sys.path.remove(str(BENCHMARKS))
    return _detection, _detection_kernels, _detection_measure


@pytest.mark.parametrize("name", ["mlp", "heat"])
def test_each_arrays_taylor_test_sees_what_its_full_walk_sees(detection, name):
    planting, kernels, measuring = detection
    kernel = kernels.kernel(name, small=True)
    curvature = {a: planting.curvature(kernel, a) for a in kernel.wrt}
    assert max(curvature.values()) >= 100 * min(curvature.values()), curvature  # the premise
    with planting.planted(kernel, ways=("custom_vjp",)) as bench:
        plants = [p for p in measuring.plantings(bench) if p.kind != "every"]
        assert len(plants) == 2 * len(kernel.wrt)
        for p in plants:
            # from 1e-3 down, each series until its first miss: all its smallest needs
            record = measuring.measure(bench, p, measuring.EPSILONS[2:], stop_after=1)
            found, reference = (record["smallest"][s] for s in ("custom_vjp taylor", "walk alone"))
            assert not any(v for k, v in record["baseline"].items() if k != "elsewhere"), record
            assert found is not None and reference is not None, (p.label, record["smallest"])
            assert abs(math.log10(found / reference)) <= 0.5 + 1e-9, (p.label, found, reference)
            assert record["ratios"]["custom_vjp taylor"]["ratio"] <= 2.0, (p.label, record)
            assert not any(row["elsewhere"] for row in record["grid"]), (p.label, record["grid"])


# --- (ii) a family that shares one mistake -----------------------------------------------------


def _family_example(planting, kernel, name: str, way: str, plants: dict) -> None:
    """`name`: family `planted`, two members planting `plants` (`way`: `custom_vjp` or
    `grad=`), and family `correct`, the plain loss (JAX AD) and the same way with nothing
    planted. Its inputs carry the plants."""
    import jax.numpy as jnp

    plain, by_hand, wrapped = planting.planted_losses(kernel)
    n, m = len(kernel.arrays), len(kernel.wrt)

    def unplanted(fn):
        def correct(*args):
            zeros = (jnp.zeros_like(p) for p in args[n : n + m])
            return fn(*args[:n], *zeros, *args[n + m :])

        return correct

    arrays = {**kernel.arrays, **{f"plant_{a}": plants[a] for a in kernel.wrt}}
    ex = weanj.register_example(
        weanj.Example(
            name=name,
            arrays=tuple(arrays),
            wrt=kernel.wrt,
            generate=lambda seed: arrays,
            params=kernel.params,
        )
    )
    for member in ("jax-a", "jax-b"):
        if way == "custom_vjp":
            weanj.jax_variant(ex, member, family="planted", loss=wrapped)
        else:
            weanj.jax_variant(ex, member, family="planted", loss=plain, grad=by_hand)
    weanj.jax_variant(ex, "jax-plain", family="correct", loss=plain)
    if way == "custom_vjp":
        weanj.jax_variant(ex, "jax-correct", family="correct", loss=unplanted(wrapped))
    else:
        weanj.jax_variant(ex, "jax-correct", family="correct", loss=plain, grad=unplanted(by_hand))
    weanj.save_inputs(ex, arrays, params=kernel.values)


@pytest.fixture(scope="module")
def shared_mistakes(detection, tmp_path_factory):
    """Both examples on the heat stencil, checked once (float64, fresh): their checks
    `{name: {(family, member, kind, array): verdict}}` and the judgement."""
    planting, kernels, measuring = detection
    kernel = kernels.kernel("heat", small=True)
    lowest = min(kernel.wrt, key=lambda a: planting.curvature(kernel, a))
    g = {a: np.asarray(v) for a, v in _gradient(kernel).items()}
    element = measuring.Planting("element", lowest, measuring.median_element(g[lowest], None))
    every = measuring.Planting("every")
    examples = {
        "95-shared-vjp": ("custom_vjp", element.plants(kernel, 1e-3)),
        "95-shared-grad": ("grad=", every.plants(kernel, 1e-9)),
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(tmp_path_factory.mktemp("shared-mistakes")))
        try:
            for name, (way, plants) in examples.items():
                _family_example(planting, kernel, name, way, plants)
            judged = weanj.check(
                list(examples), dtype="float64", fresh=True, save=False, say=lambda line: None
            )
        finally:
            for name in examples:
                unregister_example(name)
    verdicts = {
        name: {
            (j.family, j.subjects[0], str(j.kind), j.array): str(j.verdict)
            for j in judged[name].judgements
            if str(j.kind) in ("taylor", "jvp")
        }
        for name in examples
    }
    return verdicts, judged, lowest, kernel


def _gradient(kernel):
    import jax

    at = tuple(list(kernel.arrays).index(a) for a in kernel.wrt)
    g = jax.grad(kernel.loss, argnums=at)(*kernel.args())  # float64: the suite's x64 is on
    return dict(zip(kernel.wrt, g, strict=True))


def test_an_element_error_every_custom_vjp_member_shares_fails_its_taylor_test(shared_mistakes):
    verdicts, judged, lowest, kernel = shared_mistakes
    mine = verdicts["95-shared-vjp"]
    for member in ("jax-a", "jax-b"):
        assert mine[("planted", member, "taylor", lowest)] == "FAIL", mine
        for a in kernel.wrt:
            if a != lowest:
                assert mine[("planted", member, "taylor", a)] == "ok", mine
            assert mine[("planted", member, "jvp", a)] == "skipped", mine  # no forward mode
    assert not judged["95-shared-vjp"].ok


def test_a_one_in_a_billion_error_every_grad_member_shares_fails_its_jvp(shared_mistakes):
    verdicts, judged, lowest, kernel = shared_mistakes
    mine = verdicts["95-shared-grad"]
    for member in ("jax-a", "jax-b"):
        for a in kernel.wrt:
            assert mine[("planted", member, "jvp", a)] == "FAIL", (a, mine)
    assert not judged["95-shared-grad"].ok


def test_the_correct_members_beside_them_stay_ok(shared_mistakes):
    verdicts, judged, lowest, kernel = shared_mistakes
    for name, mine in verdicts.items():
        correct = {key: v for key, v in mine.items() if key[0] == "correct"}
        assert len(correct) == 2 * 2 * len(kernel.wrt), correct
        assert set(correct.values()) == {"ok"}, (name, correct)
