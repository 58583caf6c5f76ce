"""A family that fails the Taylor test alike: correct ports of Σ|w − c| + Σw², judged at
w = c + 1e-9, just above every kink. The Taylor test's first step (1e-2·‖w‖) crosses the
kinks, and every step down to where the remainder sinks into rounding does, so every port
fails it the same way while their gradients agree with each other (and with the exact
one-sided derivative, computed here in numpy). The judge names no suspect and says, in one
line, that a kink (or too large a first step) is the likelier cause, with the `h0` to
declare; a family with a wrong port among them gets no such line, and its port is named.
"""

from __future__ import annotations

import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._model._verdicts import CaseKind

from .toy_kernels import (
    ABOVE_KINK,
    KINK_AT,
    above_the_kinks,
    kinked_by_abs,
    kinked_by_branches,
    kinked_by_relu,
)

EX = "96-abs-above"
PORTS = {"jax-abs": kinked_by_abs, "jax-branches": kinked_by_branches, "jax-relu": kinked_by_relu}


def _register(wrong: bool = False) -> None:
    """The three correct ports (float64 only: in float32, w rounds onto the kinks), and with
    `wrong` a fourth whose loss is 0.1 % off (its own gradient its loss's: it would pass a
    Taylor test away from the kinks)."""
    ex = weanj.register_example(weanj.Example(EX, ("w",), "w", above_the_kinks))
    for name, loss in PORTS.items():
        weanj.jax_variant(ex, name, family="k", loss=loss, dtypes=("float64",))
    if wrong:
        weanj.jax_variant(
            ex, "jax-off", family="k", loss=lambda w: 1.001 * kinked_by_abs(w), dtypes=("float64",)
        )
    weanj.write_inputs(EX)


@pytest.fixture
def kinked(project):
    _register()
    yield weanj.check(EX, say=lambda s: None)
    _registry.unregister_example(EX)


@pytest.fixture
def kinked_and_wrong(project):
    _register(wrong=True)
    yield weanj.check(EX, say=lambda s: None)
    _registry.unregister_example(EX)


def _loss(w):
    return float(np.sum(np.abs(w - KINK_AT)) + np.sum(w**2))


def test_the_premise_is_the_kink_not_the_ports(kinked):
    """Independently of the ports: the exact gradient (sign(w − c) + 2w, one-sided above
    the kinks) fails the Taylor test of the numpy loss at the default first step, which is
    far above the distance to the kinks; every port's gradient is that gradient."""
    w = weanj.load_inputs(EX)["w"]
    exact = np.sign(w - KINK_AT) + 2 * w
    assert np.all(w - KINK_AT > 0) and 1e-2 * np.linalg.norm(w) > 1e6 * ABOVE_KINK
    assert not weanj.taylor_test(_loss, w, exact).passes
    for name in PORTS:
        np.testing.assert_allclose(kinked[EX].subjects[name].gradients["w"], exact, rtol=1e-15)


def test_one_line_names_the_kink_and_no_port_is_a_suspect(kinked):
    ej = kinked[EX]
    taylor = {j.subjects[0]: j.verdict for j in ej.of_kind(CaseKind.TAYLOR)}
    assert taylor == dict.fromkeys(PORTS, weanj.Verdict.FAIL)
    pairs = [j.verdict for j in ej.of_kind(CaseKind.PAIR) if j.verdict != weanj.Verdict.SKIPPED]
    assert pairs == [weanj.Verdict.OK] * 3  # the float32 pairs: skipped (float64 only)
    assert ej.suspects() == {} and kinked.suspects == []

    lines = kinked.lines()
    named = [line for line in lines if "family k: every member" in line]
    assert len(named) == 1, "\n".join(lines)
    # each member's own failure names the kink too, by its second differences
    reasons = [j.reason for j in ej.of_kind(CaseKind.TAYLOR)]
    assert all("the loss has a kink within" in r for r in reasons), reasons
    (line,) = named
    assert line.startswith(
        "  family k: every member (jax-abs, jax-branches, jax-relu) fails the Taylor test of "
        "w alike while their gradients agree: a kink of the loss within about "
    ), line
    assert not any(line.startswith("suspects") for line in lines)
    # the step it suggests starts the test below the kinks: with it, the exact gradient
    # is no longer failed (the kinks were the failure); below 1e-9 the loss's curvature
    # stands under its rounding level, so the test there is unresolved, not a pass, and a
    # gradient off by 1e-3 is not passed either: no advice followed turns it into ok
    h0 = float(line.split("TaylorPolicy(h0=")[1].split(")")[0])
    assert line.endswith(f'declare Example(taylor={{"w": weanj.TaylorPolicy(h0={h0:.0e})}})')
    assert h0 < ABOVE_KINK
    w = weanj.load_inputs(EX)["w"]
    exact = np.sign(w - KINK_AT) + 2 * w
    below = weanj.taylor_test(_loss, w, exact, h0=h0)
    assert below.unresolved and not below.failing and not below.passes, below
    assert not weanj.taylor_test(_loss, w, exact * (1 + 1e-3), h0=h0).passes


def test_a_wrong_port_among_them_is_named_and_no_kink_is(kinked_and_wrong):
    ej = kinked_and_wrong[EX]
    assert ej.by_case()[f"{EX}::k::jax-off::taylor"].verdict == weanj.Verdict.FAIL
    assert set(ej.suspects()) == {"jax-off"}
    assert not [line for line in kinked_and_wrong.lines() if "family k: every member" in line]
