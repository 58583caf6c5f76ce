"""What the judge decides that the views only show: a variant's verdict as a whole
(`ExampleJudgement.variant_verdict`), its suspects (`ExampleJudgement.suspects`, from
`_judge._suspects`), and the judgement's serialisation (`_judge._serial`: what
check.json holds, read back into the same objects).

The judgements here are built by hand from numbers whose verdicts are known (a pair
that differs by 1e-3 relative fails the float64 tolerance; one that differs by 1e-14
agrees), so each expectation follows from the definitions, not from the code under test.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from weanj import Expected
from weanj._judge._compare import compare
from weanj._judge._jvp import JvpResult
from weanj._judge._remainder import TaylorDirection
from weanj._judge._serial import decode_case, encode_case, resolve_expected
from weanj._judge._taylor import TaylorResult
from weanj._judge._verdict import CaseJudgement, ExampleJudgement
from weanj._model import TaylorPolicy
from weanj._model._verdicts import CaseKind, Verdict

G = np.array([1.0, -2.0, 3.0, 0.5])


def _pair(a: str, b: str, *, off: float, family: str = "f") -> CaseJudgement:
    """b against a, b's gradient G·(1 + off) at its last element: a real comparison."""
    gb = G.copy()
    gb[-1] *= 1 + off
    c = compare(G, gb, 1.0, 1.0)
    verdict = Verdict.OK if c.agree else Verdict.FAIL
    return CaseJudgement(
        f"ex::{family}::{a}~{b}", CaseKind.PAIR, verdict, family, (a, b), "x", comparison=c
    )


def _judgement(*cases: CaseJudgement, subjects=("a", "b", "c"), **fields) -> ExampleJudgement:
    ej = ExampleJudgement(example=None, inputs=None, judgements=list(cases), **fields)
    ej.subjects = dict.fromkeys(subjects)  # who was judged (their arrays do not matter here)
    return ej


def test_the_pairs_built_here_have_the_verdicts_their_numbers_give():
    assert _pair("a", "b", off=1e-14).verdict == Verdict.OK
    assert _pair("a", "b", off=1e-3).verdict == Verdict.FAIL


def test_one_wrong_of_three_is_the_only_suspect_and_the_only_failing_variant():
    ab, ac, bc = _pair("a", "b", off=1e-14), _pair("a", "c", off=1e-3), _pair("b", "c", off=1e-3)
    ej = _judgement(ab, ac, bc)
    assert ej.suspects() == {"c": [ac, bc]}
    assert [ej.variant_verdict(v) for v in "abc"] == [Verdict.OK, Verdict.OK, Verdict.FAIL]


def test_two_members_that_differ_the_reference_is_trusted():
    """One failing pair of two: the family's reference (its first subject) is trusted."""
    ab = _pair("a", "b", off=1e-3)
    ej = _judgement(ab, subjects=("a", "b"))
    assert ej.suspects() == {"b": [ab]}
    assert (ej.variant_verdict("a"), ej.variant_verdict("b")) == (Verdict.OK, Verdict.FAIL)


def _broken_reference(*others: str) -> tuple[CaseJudgement, list[CaseJudgement]]:
    """`a`, the family's designated reference, raised: its run, and its pairs with each of
    `others` not compared (as the case table judges them)."""
    run = CaseJudgement("ex::f::a::run", CaseKind.RUN, Verdict.ERROR, "f", ("a",), reason="boom")
    blocked = [
        CaseJudgement(
            f"ex::f::a~{o}",
            CaseKind.PAIR,
            Verdict.SKIPPED,
            "f",
            ("a", o),
            "x",
            reason="not compared: a is in error",
            blocked_by="a",
        )
        for o in others
    ]
    return run, blocked


def test_a_broken_reference_stands_aside_and_is_never_what_a_member_is_blamed_for():
    """DESIGN §5: the family is judged against its next member that ran; the suspects group
    only the members compared, so a tie among the others is settled by that member."""
    run, blocked = _broken_reference("b", "c", "d")
    bc, bd, cd = _pair("b", "c", off=1e-14), _pair("b", "d", off=1e-3), _pair("c", "d", off=1e-3)
    ej = _judgement(run, *blocked, bc, bd, cd, subjects=("b", "c", "d"))
    (ref,) = ej.references()
    assert (ref.designated, ref.state, ref.judged_against) == ("a", "at fault (error)", "b")
    assert ref.line == "family f: a is at fault (error); family judged against b"
    assert ej.suspects() == {"d": [bd, cd]}
    # two members left that disagree: the groups tie, the stand-in reference is trusted
    run, blocked = _broken_reference("b", "c")
    bc = _pair("b", "c", off=1e-3)
    ej = _judgement(run, *blocked, bc, subjects=("b", "c"))
    assert ej.suspects() == {"c": [bc]}
    assert ej.references()[0].judged_against == "b"
    # a reference that ran is no news
    ej = _judgement(_pair("a", "b", off=1e-14), subjects=("a", "b"))
    assert [r.line for r in ej.references()] == [""]


def test_a_pair_unexpectedly_ok_blames_no_port():
    """`unexpectedly ok`: the numbers agree, only the declaration is wrong: no suspect."""
    ab = _pair("a", "b", off=1e-14)
    ab.verdict = Verdict.UNEXPECTEDLY_OK
    ej = _judgement(ab, subjects=("a", "b"))
    assert ej.suspects() == {} and ej.failures == [ab]


def test_a_variant_verdict_is_its_fault_its_own_checks_or_its_float32_run():
    run = CaseJudgement("ex::f::d::run", CaseKind.RUN, Verdict.ERROR, "f", ("d",), reason="boom")
    taylor = CaseJudgement("ex::f::a::taylor", CaseKind.TAYLOR, Verdict.FAIL, "f", ("a",), "x")
    jvp = CaseJudgement("ex::f::a::jvp", CaseKind.JVP, Verdict.NONFINITE, "f", ("a",), "x")
    f32 = _pair("b", "c@float32", off=1e-1)  # float32: 10% off fails its tolerance too
    assert f32.verdict == Verdict.FAIL
    ej = _judgement(
        run,
        taylor,
        jvp,
        f32,
        subjects=("a", "b", "c", "c@float32"),
        unavailable={"e": "no Julia found"},
        skipped={"g": "float32 not supported"},
        dtypes=("float64", "float32"),
    )
    assert ej.variant_verdict("d") == Verdict.ERROR  # its run's fault
    assert ej.variant_verdict("a") == Verdict.FAIL  # FAIL ranks above NaN/Inf
    assert Verdict.FAIL.rank < Verdict.NONFINITE.rank
    assert ej.variant_verdict("c") == Verdict.FAIL  # its float32 run against the reference
    assert ej.variant_verdict("b") == Verdict.OK  # the reference is never blamed for it
    assert ej.variant_verdict("e") == Verdict.UNAVAILABLE
    assert ej.variant_verdict("g") == Verdict.SKIPPED
    assert ej.variant_verdict("h") is None  # nothing of it was judged: no verdict


def test_a_stale_file_is_the_verdict_of_a_variant_judged_only_through_it():
    stale = CaseJudgement(
        "ex::file::gradients/h.h5", CaseKind.FILE, Verdict.STALE, "f", ("h",), reason="old"
    )
    assert _judgement(stale).variant_verdict("h") == Verdict.STALE


# --- the serialisation ------------------------------------------------------------------------


def _round_trip(j: CaseJudgement, declarations=()) -> CaseJudgement:
    text = json.dumps(encode_case(j), allow_nan=False)  # strict JSON: no NaN, no Infinity
    return decode_case(json.loads(text), resolve_expected(tuple(declarations)))


def test_a_case_reads_back_whole_nan_and_inf_included():
    bad = G.copy()
    bad[1] = np.nan
    c = compare(G, bad, 1.0, math.inf)
    assert c.nonfinite and c.regions
    j = CaseJudgement(
        "ex::f::a~b", CaseKind.PAIR, Verdict.NONFINITE, "f", ("a", "b"), "x", comparison=c
    )
    back = _round_trip(j)
    assert back.verdict is Verdict.NONFINITE and back.subjects == ("a", "b")
    assert repr(back.comparison) == repr(c)  # every field, NaN and Inf as they were
    assert back.kind == j.kind and back.case == j.case
    assert isinstance(back.comparison.worst, tuple) and isinstance(back.comparison.regions, tuple)
    assert math.isinf(back.comparison.loss_abs) and math.isnan(back.comparison.regions[0].worst_abs)


def test_gradient_checks_read_back_with_their_numbers():
    d = TaylorDirection((1e-2, 5e-3), (1e-4, 2.5e-5), (1e-16, 1e-16), slope=0.3)
    t = TaylorResult("x", TaylorPolicy(rate=1.9), 1e-2, (d,), left_out=1, size=4)
    taylor = CaseJudgement("ex::f::a::taylor", CaseKind.TAYLOR, Verdict.OK, "f", ("a",), result=t)
    back = _round_trip(taylor)
    assert back.taylor == t and back.taylor.directions[0].rates == pytest.approx((2.0,))
    r = JvpResult("x", "a", 1.0, 1.0 + 1e-3, 2.0, 1e-8)
    jvp = CaseJudgement("ex::f::a::jvp", CaseKind.JVP, Verdict.FAIL, "f", ("a",), result=r)
    assert _round_trip(jvp).jvp == r and not r.passes


def test_a_declaration_reads_back_as_the_catalogs_own():
    mine = Expected(variant="b", reason="rounds differently", elements=lambda arrays: [(3,)])
    j = CaseJudgement(
        "ex::f::a~b", CaseKind.PAIR, Verdict.EXPECTED, "f", ("a", "b"), "x", expected=mine
    )
    assert _round_trip(j, [mine]).expected is mine  # its elements (a function) included
    gone = _round_trip(j, [])  # no longer declared: its fields alone
    assert gone.expected is not mine and gone.expected.to_json()["reason"] == mine.reason


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.pop("case"),
        lambda d: d.update(verdict={"$verdict": "maybe"}),
        lambda d: d.update(verdict="maybe"),
        lambda d: d.update(kind="stroll"),
        lambda d: d.update(subjects=["a", 3]),
        lambda d: d["comparison"].update({"$class": "Popen"}),
        lambda d: d["comparison"].update(max_abs="big"),
        lambda d: d["comparison"].update(worst={"$tuple": ["first"]}),
        lambda d: d.update(unknown=1),
    ],
)
def test_a_case_changed_by_hand_is_refused(change):
    data = encode_case(_pair("a", "b", off=1e-3))
    change(data)
    with pytest.raises(ValueError):
        decode_case(data, resolve_expected(()))
