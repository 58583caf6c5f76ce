"""What a check spends of the user's kernel (issue 60): the kernel's own executions,
counted by the kernel itself, against the check's counts and its bounds; evidence gathered
only where a verdict needs it; a re-check that writes nothing.

The counted kernel is a 2-D nonlinear heat stencil with two `wrt` arrays (u0, kappa). Its
forward pass calls back to the host (`jax.debug.callback`), and a `custom_vjp` identity on
u0 calls back from its backward pass: every forward and backward execution of the kernel
is heard, whichever program of weanj's runs it. The check's own counts (`Gradient.cost`,
`check.json`) must equal what the kernel heard, and stay within the issue's bounds.
"""

from __future__ import annotations

import json
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._places import places

NAME = "93-counted-heat"
N, T = 10, 4
HEARD: Counter = Counter()


def _heard(variant: str, kind: str, value) -> None:
    HEARD[(variant, kind, np.asarray(value).dtype.name)] += 1


@jax.custom_vjp
def _counted(x):
    return x


def _counted_fwd(x):
    return x, None


def _counted_bwd(_, g):
    jax.debug.callback(lambda v: _heard("jax-counted", "backward", v), g[0, 0])
    return (g,)


_counted.defvjp(_counted_fwd, _counted_bwd)


def _generate(seed):
    rng = np.random.default_rng(seed)
    return {
        "u0": rng.random((N, N)),
        "kappa": 0.1 + 0.05 * rng.random((N, N)),
        "uobs": rng.random((N, N)),
    }


def _step(u, kappa):
    lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u
    return u + kappa * (1 + u * u) * lap * 0.2


def _heat(u0, kappa, uobs, steps):
    u, _ = jax.lax.scan(lambda u, _: (_step(u, kappa), None), u0, None, length=steps)
    return jnp.sum((u - uobs) ** 2)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    root = tmp_path_factory.mktemp("counted")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        ex = weanj.register_example(
            weanj.Example(
                name=NAME,
                arrays=("u0", "kappa", "uobs"),
                wrt=("u0", "kappa"),
                params=(weanj.Param("T", default=T),),
                generate=_generate,
            )
        )

        @weanj.jax_variant(ex, "jax-counted", family="heat")
        def counted(u0, kappa, uobs, T):
            """Both passes heard; no forward mode (its custom_vjp): its jvp borrowed."""
            jax.debug.callback(lambda v: _heard("jax-counted", "forward", v), u0[0, 0])
            return _heat(_counted(u0), kappa, uobs, T)

        @weanj.jax_variant(ex, "jax-forward", family="heat")
        def forward(u0, kappa, uobs, T):
            """Its forward pass heard; pushed forward by its own jvp."""
            jax.debug.callback(lambda v: _heard("jax-forward", "forward", v), u0[0, 0])
            return _heat(u0, kappa, uobs, T)

        weanj.write_inputs(NAME)
        yield ex, root
    _registry.unregister_example(NAME)


def _check(root, monkeypatch, **options):
    """`weanj.check` of both variants (float64 and float32) with the kernel's counts
    reset; **Returns** (the judgement, what the kernel heard: `{(variant, kind, dtype):
    runs}`)."""
    monkeypatch.setenv("WEANJ_ROOT", str(root))
    HEARD.clear()
    judgement = weanj.check(NAME, say=lambda line: None, **options)
    return judgement, Counter(HEARD)


def _heard_by(heard: Counter, variant: str, dtype: str) -> tuple[int, int]:
    return heard[(variant, "forward", dtype)], heard[(variant, "backward", dtype)]


def test_a_checks_float64_evaluation_spends_a_few_gradients(example, monkeypatch):
    """Acceptance of #69 (and #60 before it): with every default check, a float64
    evaluation runs the kernel forward at most 1 + 6·(wrt arrays) = 13 times and backward
    at most twice; a float32 one at most 3 and 2; and weanj's own counts are the kernel's.
    (jax-counted has no forward mode: its jvp check reads jax-forward's derivatives, which
    jax-forward's own evaluation computed in its one call: nothing runs for it.)"""
    ex, root = example
    judgement, heard = _check(root, monkeypatch, fresh=True)
    assert judgement.ok, judgement.lines()
    f64 = judgement[NAME].subjects["jax-counted"]
    f32 = judgement[NAME].subjects["jax-counted@float32"]
    forward, backward = _heard_by(heard, "jax-counted", "float64")
    assert forward <= 1 + 6 * 2 and backward <= 2, heard
    assert f64.cost.of("jvp") == (0, 0), f64.cost.describe()
    assert (f64.cost.forward, f64.cost.backward) == (forward, backward), f64.cost.describe()
    donor = judgement[NAME].subjects["jax-forward"].cost
    # (jax-forward's backward pass is not heard: only jax-counted's custom_vjp calls back)
    assert heard[("jax-forward", "forward", "float64")] == donor.forward
    assert donor.forward <= 1 + 6 * 2 and donor.backward <= 2, donor.describe()
    forward, backward = _heard_by(heard, "jax-counted", "float32")
    assert forward <= 3 and backward <= 2, heard
    assert (f32.cost.forward, f32.cost.backward) == (forward, backward), f32.cost.describe()
    assert f64.cost.of("evaluation") == (1, 1) and f32.cost.of("evaluation") == (1, 1)
    # nothing beyond the first pass was needed: no rounding level, no central differences
    assert f64.cost.of("rounding") == (0, 0) and f64.cost.of("fd") == (0, 0)
    checks = [j for j in judgement[NAME].judgements if j.kind.is_check]
    assert {str(j.verdict) for j in checks} == {"ok"}, [j.reason for j in checks]
    assert all(not j.evidence for j in judgement[NAME].judgements), [
        (j.case, j.evidence) for j in judgement[NAME].judgements if j.evidence
    ]


def test_each_array_is_pushed_forward_alone_in_the_evaluations_own_call(example, monkeypatch):
    """Acceptance of #69 item 2: the jvp check of each array is that array's own
    directional derivative (the other tangent zero), computed in the evaluation's one call
    (no jvp execution), and equal to `jax.jvp` of the loss along that array alone,
    computed here independently; ⟨g, dx⟩ is the array's own term."""
    ex, root = example
    judgement, heard = _check(root, monkeypatch, fresh=True)
    assert judgement.ok, judgement.lines()
    g = judgement[NAME].subjects["jax-forward"]
    assert g.cost.of("jvp") == (0, 0) and set(g.forward) == {"u0", "kappa"}
    inputs = weanj.load_inputs(NAME)
    arrays = [jnp.asarray(inputs[k]) for k in ("u0", "kappa", "uobs")]
    jvps = {j.array: j for j in judgement[NAME].judgements if j.kind == "jvp"}
    assert set(jvps) == {"u0", "kappa"}  # jax-counted's borrow, by the same rule
    for position, array in enumerate(("u0", "kappa")):
        result = jvps[array].result
        dx = result_direction(ex, array, inputs[array])
        tangents = [jnp.zeros_like(a) for a in arrays[:2]]
        tangents[position] = jnp.asarray(dx)
        with jax.enable_x64(True):
            _, alone = jax.jvp(
                lambda u, k: _heat(u, k, arrays[2], T), tuple(arrays[:2]), tuple(tangents)
            )
        assert abs(float(alone) - g.forward[array]) <= 1e-12 * result.scale, (array, alone)
        assert result.reverse == pytest.approx(float(np.vdot(g.gradients[array], dx)), rel=1e-12)
    borrowed = [
        j for j in judgement[NAME].judgements if j.kind == "jvp" and j.subjects == ("jax-counted",)
    ]
    assert {j.result.by for j in borrowed} == {"jax-forward"}


def result_direction(ex, array, x):
    """The jvp check's direction of `array` (no kink mask here), as the check draws it."""
    from weanj._judge._jvp import jvp_direction

    return jvp_direction(ex, array, np.asarray(x), None)


def test_the_costs_are_in_check_json(example, monkeypatch):
    ex, root = example
    judgement, heard = _check(root, monkeypatch, fresh=True)
    data = json.loads(places().check_file(NAME).read_text())
    (entry,) = [g for g in data["gradients"] if g["label"] == "jax-forward"]
    assert entry["cost"]["evaluation"] == [1, 1]
    assert (
        sum(f for f, _ in entry["cost"].values())
        == judgement[NAME].subjects["jax-forward"].cost.forward
    )
    assert entry["levels_measured"] is False  # no comparison needed them


def test_a_recheck_runs_nothing_and_writes_nothing(example, monkeypatch):
    """Acceptance of #60: with nothing changed, a re-check runs the kernel not once and
    leaves every file under results/ as it was (check.json included: its content did not
    change)."""
    ex, root = example
    _check(root, monkeypatch, fresh=True)
    _check(root, monkeypatch)  # check.json: says "reused" from now on
    files = [p for p in (root / "results").rglob("*") if p.is_file()]
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files}
    judgement, heard = _check(root, monkeypatch)
    assert judgement.ok and sum(heard.values()) == 0, heard
    files = [p for p in (root / "results").rglob("*") if p.is_file()]
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files}
    assert after == before, sorted(str(p) for p in set(after) ^ set(before))
