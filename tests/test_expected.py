"""`weanj.Expected`: declared expectations, checked when declared and applied by the judge.

The pairs of a declared difference (as declared, absent, larger than the bound, in another
array or region) are judged in a user project by every front end in
`test_front_ends_agree.py`; here: what a declaration refuses in one line, a declaration on
the example rather than the variant, and declared runs and gradient checks (a variant
known to raise, a gradient known to fail its Taylor test).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._pipeline.engine._cases import judge_case, read_plan
from weanj._pipeline.session._session import Session
from weanj._places import places

from .toy_kernels import random_xy, xy_example

NAME = "91-declared"
WHY = "a known difference"


def _distance(x, y):
    return jnp.sum((x - y) ** 2)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({}, "needs a reason"),
        ({"reason": "two\nlines"}, "needs a reason"),
        ({"reason": WHY, "verdict": "ok"}, "verdict 'ok' is not one of FAIL, error, NaN/Inf"),
        ({"reason": WHY, "check": "fd"}, "check 'fd' is not one of run, taylor, jvp"),
        ({"reason": WHY, "check": "taylor", "against": "b"}, "has no `against`"),
        ({"reason": WHY, "check": "run"}, "a run does not FAIL"),
        ({"reason": WHY, "verdict": "error", "elements": [1]}, "a run has no elements"),
        ({"reason": WHY, "elements": [1], "region": np.s_[0:2]}, "elements or a region"),
        ({"reason": WHY, "bound": 0.0}, "bound must be positive"),
        ({"reason": WHY, "bound": "big"}, "bound must be a number"),
        ({"reason": WHY, "check": "jvp", "bound": 1.0}, "a bound is a pair's"),
        ({"reason": WHY, "region": "x"}, "region is a box of slices"),
        ({"reason": WHY, "elements": ["a"]}, "is not an index"),
    ],
)
def test_a_bad_declaration_is_refused_in_one_line(fields, words):
    with pytest.raises(weanj.DefinitionError) as e:
        weanj.Expected(**fields)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_declaration_says_where_in_words():
    assert weanj.Expected(reason=WHY, array="x", elements=[0, (3,)]).where() == "x[0], x[3]"
    assert weanj.Expected(reason=WHY, array="g", region=np.s_[2:5, :]).where() == "g[2:5, :]"
    arrays = {"w": np.zeros(11)}
    midpoint = weanj.Expected(reason=WHY, array="w", elements=lambda a: [len(a["w"]) // 2])
    assert midpoint.where(arrays) == "w[5]"
    assert weanj.Expected(reason=WHY, array="w", elements=lambda a: []).where(arrays) == (
        "no element of w"
    )


@pytest.fixture
def registered(project):
    yield
    _registry.unregister_example(NAME)


def _catalog_error(**example_fields) -> str:
    ex = weanj.register_example(
        xy_example(NAME, generate=lambda seed: random_xy(seed, 6), **example_fields)
    )
    weanj.jax_variant(ex, "jax-a", family="f", loss=_distance)
    weanj.jax_variant(ex, "jax-b", family="f", loss=_distance)
    weanj.jax_variant(ex, "jax-c", family="g", loss=_distance)
    with pytest.raises(weanj.DefinitionError) as e:
        _registry.catalog(NAME)
    return str(e.value)


@pytest.mark.parametrize(
    ("declared", "words"),
    [
        (weanj.Expected("jax-z", reason=WHY), "names 'jax-z', which is not a variant of"),
        (weanj.Expected("jax-a", "jax-c", reason=WHY), "which are not of one family"),
        (weanj.Expected("jax-a", reason=WHY, array="y"), "the gradient arrays are x"),
    ],
)
def test_a_declaration_naming_what_the_example_lacks_is_refused(registered, declared, words):
    assert words in _catalog_error(expected=declared)


def test_an_example_declaration_names_its_variant(project):
    with pytest.raises(weanj.DefinitionError, match="each of its expected= names its variant"):
        xy_example(NAME, generate=random_xy, expected=weanj.Expected(reason=WHY))


def _judged(dtypes=("float64",)) -> dict:
    p = read_plan(_registry.catalog(NAME), places(), live=True, dtypes=dtypes)
    with Session() as session:
        return {c.id: judge_case(p, c, session) for c in p.cases}


def test_declared_on_the_example_a_pair_differs_as_declared(registered):
    ex = weanj.register_example(
        xy_example(
            NAME,
            generate=lambda seed: random_xy(seed, 6),
            expected=weanj.Expected("jax-b", "jax-a", reason=WHY, elements=[1]),
        )
    )
    weanj.jax_variant(ex, "jax-a", family="f", loss=_distance)

    @weanj.jax_variant(ex, "jax-b", family="f")
    def planted(x, y):  # ∂/∂x[1] moves by 2·x[1]
        return _distance(x, y) + x[1] ** 2

    weanj.write_inputs(NAME)
    j = _judged()[f"{NAME}::f::jax-a~jax-b"]
    x = weanj.load_inputs(NAME)["x"]
    assert j.verdict == weanj.Verdict.EXPECTED and j.declared == "x[1]", j.reason
    # the judge's numbers, apart from it: only x[1] differs, by 2·|x[1]|
    assert j.comparison.differing_at == ((1,),)
    assert j.comparison.max_abs == pytest.approx(2 * abs(x[1]), rel=1e-12)


def test_a_declared_run_and_a_declared_check_are_expected_or_unexpectedly_ok(registered):
    ex = weanj.register_example(xy_example(NAME, generate=lambda seed: random_xy(seed, 6)))
    weanj.jax_variant(ex, "jax-a", family="f", loss=_distance)

    def raises(x, y):
        raise ValueError("not ported yet")

    def twice(x, y):  # a gradient twice the loss's: its Taylor test fails
        return 4 * (x - y)

    weanj.jax_variant(
        ex,
        "jax-raises",
        family="f",
        loss=raises,
        expected=weanj.Expected(reason="not ported yet", verdict="error"),
    )
    weanj.jax_variant(
        ex,
        "jax-twice",
        family="f",
        loss=_distance,
        grad=twice,
        expected=(
            weanj.Expected(reason="the gradient is doubled", check="taylor"),
            weanj.Expected(reason="the gradient is doubled", array="x"),
        ),
    )
    weanj.jax_variant(
        ex,
        "jax-fine",
        family="f",
        loss=_distance,
        expected=weanj.Expected(reason="was wrong once", check="taylor"),
    )
    weanj.write_inputs(NAME)
    judged = _judged()
    run = judged[f"{NAME}::f::jax-raises::run"]
    assert run.verdict == weanj.Verdict.EXPECTED and not run.failed
    assert run.reason.startswith("not ported yet; ") and "ValueError" in run.reason
    taylor = judged[f"{NAME}::f::jax-twice::taylor"]
    assert taylor.verdict == weanj.Verdict.EXPECTED, taylor.reason
    # its rates, apart from the verdict: a wrong gradient's remainders fall as h, not h²
    assert all(max(rates) < 1.5 for rates in taylor.taylor.asymptotic if rates)
    assert judged[f"{NAME}::f::jax-a~jax-twice"].verdict == weanj.Verdict.EXPECTED
    fine = judged[f"{NAME}::f::jax-fine::taylor"]
    assert fine.verdict == weanj.Verdict.UNEXPECTEDLY_OK and fine.failed
    assert fine.reason == "declared FAIL (was wrong once), but taylor is ok"
    # the pairs of the variant that raised are not compared, as for any fault
    assert judged[f"{NAME}::f::jax-a~jax-raises"].verdict == weanj.Verdict.SKIPPED
