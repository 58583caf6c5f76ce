"""A variant without a forward mode borrows one only from a member the same check does not
judge at fault (docs/DESIGN.md §9.2; issue 62, item 2).

`53-lender`, family `f`: `jax-f32` (registered first, so it used to lend) computes
`L = Σ sin(x)·x³` in float32 inside a float64 program, as GradBench's published JAX ode
tool does; `jax-vjp` is the same loss with a hand-written `custom_vjp` (no forward mode),
correct; `jax-plain` is the plain JAX loss, correct. Family `g`: `jax-g-broken` raises,
`jax-g-vjp` has no forward mode: no member is left to lend one.
"""

from __future__ import annotations

import json

import pytest

from .projects import run_here, write_project

LENDER = """\
import jax
import jax.numpy as jnp
import numpy as np
import weanj

jax.config.update("jax_enable_x64", True)

ex = weanj.register_example(weanj.Example(
    name="53-lender", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).uniform(0.5, 1.5, 16)}))


def plain(x):
    return jnp.sum(jnp.sin(x) * x**3)


def in_float32(x):
    y = x.astype(jnp.float32)  # the published tool's arithmetic, in a float64 program
    return jnp.sum(jnp.sin(y) * y**3).astype(x.dtype)


@jax.custom_vjp
def by_hand(x):
    return plain(x)


def _forward(x):
    return plain(x), x


def _backward(x, ct):
    return (ct * (jnp.cos(x) * x**3 + 3 * jnp.sin(x) * x**2),)


by_hand.defvjp(_forward, _backward)


def broken(x):
    raise ValueError("a broken member")


weanj.jax_variant(ex, "jax-f32", family="f", loss=in_float32)
weanj.jax_variant(ex, "jax-vjp", family="f", loss=by_hand)
weanj.jax_variant(ex, "jax-plain", family="f", loss=plain)
weanj.jax_variant(ex, "jax-g-broken", family="g", loss=broken)
weanj.jax_variant(ex, "jax-g-vjp", family="g", loss=by_hand)
"""

CHECK = (
    "import json, weanj\n"
    "j = weanj.check(dtype='float64', save=False, fresh=True, say=lambda line: None)\n"
    "print(json.dumps(j.to_json()['examples'][0]))\n"
)


@pytest.fixture(scope="module")
def lender(tmp_path_factory) -> dict:
    root = write_project(tmp_path_factory.mktemp("lender"), {"kernels/lender.py": LENDER})
    r = run_here(root, CHECK)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _case(data: dict, case: str) -> dict:
    (found,) = [c for c in data["pairs"] + data["checks"] if c["case"] == case]
    return found


def test_the_member_at_fault_is_the_one_the_pairs_name(lender):
    """The premise: the float32 member differs from the two correct ones, which agree;
    the difference is float32's (far above the float64 tolerance, near float32's eps)."""
    assert _case(lender, "53-lender::f::jax-f32~jax-vjp")["verdict"] == "FAIL"
    assert _case(lender, "53-lender::f::jax-f32~jax-plain")["verdict"] == "FAIL"
    assert _case(lender, "53-lender::f::jax-vjp~jax-plain")["verdict"] == "ok"
    rel = _case(lender, "53-lender::f::jax-f32~jax-plain")["max_rel"]
    assert 1e-9 < rel < 1e-5


def test_the_correct_custom_vjp_borrows_from_a_correct_member_and_says_which(lender):
    jvp = _case(lender, "53-lender::f::jax-vjp::jvp")
    assert jvp["verdict"] == "ok", jvp
    assert jvp["jvp"]["by"] == "jax-plain"  # never jax-f32, registered first
    assert jvp["summary"].startswith(
        "53-lender::f::jax-vjp::jvp: ok: jvp by jax-plain agrees with ⟨g, dx⟩ to "
    )
    # its own forward mode: jax-f32 is checked against itself, and passes
    assert _case(lender, "53-lender::f::jax-f32::jvp")["jvp"]["by"] == "jax-f32"


def test_with_no_member_left_to_lend_the_check_is_skipped_saying_why(lender):
    (jvp,) = [c for c in lender["skipped"] if c["case"] == "53-lender::g::jax-g-vjp::jvp"]
    assert jvp["verdict"] == "skipped"
    assert jvp["reason"] == (
        "neither jax-g-vjp (can't apply forward-mode autodiff (jvp) to a custom_vjp function.) "
        "nor a member of family g not at fault can be "
        "pushed forward by jax.jvp (jax-g-broken: at fault (error))"
    )
