"""`weanj.differ_at_kinks`: a same-family pair documented to differ at the kinks.

A throwaway example, `L(x, y) = Σ min(x, y)²`-like, with exact ties `x == y` in its
inputs (`toy_kernels.tied_xy`): one variant writes `min` with branches (the derivative
goes to x at a tie), one with `jnp.minimum` (½ each way). Declared, the pair agrees away
from the kinks and is reported `kinks`, not failed; undeclared, or differing away from the
kinks, it fails.
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._cli import main
from weanj._pipeline.engine._cases import judge_case, read_plan
from weanj._pipeline.session._session import Session
from weanj._places import places
from weanj._report._lines import summary

from .toy_kernels import away_from_ties, min_by_branches, min_by_minimum, tied_xy, xy_example

NAME = "90-kinks"


@pytest.fixture
def kinks_example(project):
    fd = weanj.FDPolicy(step=1e-6, mask=away_from_ties, why="ties x == y")
    ex = weanj.register_example(xy_example(NAME, generate=tied_xy, fd=fd))
    weanj.jax_variant(ex, "jax-branch", family="m", loss=min_by_branches)
    weanj.jax_variant(ex, "jax-minimum", family="m", loss=min_by_minimum)

    @weanj.jax_variant(ex, "jax-off", family="m")
    def off(x, y):  # differs away from the ties too: never excused
        return min_by_minimum(x, y) + 1e-3 * jnp.sum(x[1] ** 2)

    weanj.write_inputs(NAME)
    yield ex
    _registry.unregister_example(NAME)


def _save(name: str) -> None:
    g = weanj.evaluate(NAME, name)
    weanj.save_gradient(NAME, name, g.gradient, loss=g.loss)


def _diff_json(capsys) -> dict:
    code = main(["diff", NAME, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _live_pair(a: str, b: str):
    """The judge's answer to the pair as `pytest --weanj` and `weanj check` ask it: the
    live case table (with the kink declarations made so far), the variants evaluated."""
    p = read_plan(_registry.catalog(NAME), places(), live=True, dtypes=("float64",), checks=False)
    (case,) = [c for c in p.cases if c.kind == "pair" and c.subjects == (a, b)]
    with Session() as session:
        return judge_case(p, case, session)


def test_declared_pair_differs_only_at_the_kinks(kinks_example, capsys):
    d = weanj.load_inputs(NAME)
    ties = np.flatnonzero(d["x"] == d["y"])
    for name in ("jax-branch", "jax-minimum"):
        _save(name)
    # At a tie x == y, branches send the whole derivative 2x to x, jnp.minimum half of it.
    gb = weanj.load_gradient(NAME, "jax-branch").gradient
    gm = weanj.load_gradient(NAME, "jax-minimum").gradient
    np.testing.assert_array_equal(gb[ties], 2 * d["x"][ties])
    np.testing.assert_array_equal(gm[ties], d["x"][ties])
    # Undeclared: a failure, at exactly the tie elements.
    code, report = _diff_json(capsys)
    (pair,) = report["pairs"]
    assert code == 1 and pair["verdict"] == "FAIL"
    assert pair["differing"] == len(ties) == 4
    assert [i for (i,) in pair["differing_at"]] == list(ties)
    assert _live_pair("jax-branch", "jax-minimum").verdict == "FAIL"
    # Declared: reported, not failed; the loss is the same to the bit.
    weanj.differ_at_kinks(NAME, "jax-branch", "jax-minimum", why="min at a tie")
    code, report = _diff_json(capsys)
    (pair,) = report["pairs"]
    assert code == 0 and pair["verdict"] == "kinks" and pair["kinks"] == "min at a tie"
    assert pair["away_from_kinks_max_rel"] == 0.0 and pair["loss_rel"] == 0.0
    assert pair["differing"] == 4 and pair["region_count"] == 4
    text_code = main(["diff", NAME])
    out = capsys.readouterr().out
    assert text_code == 0 and "only at the kinks, as declared (min at a tie)" in out
    # pytest --weanj's (and weanj check's) pair says the same, with the count.
    j = _live_pair("jax-branch", "jax-minimum")
    assert j.verdict == "kinks" and j.case == f"{NAME}::m::jax-branch~jax-minimum"
    line = summary(j)
    assert "4 of 12 element(s) beyond tolerance in 4 region(s)" in line
    assert "differs only at the kinks, as declared (min at a tie); away from them 0.00e+00" in line


def test_declared_pair_must_agree_away_from_the_kinks(kinks_example, capsys):
    weanj.differ_at_kinks(NAME, "jax-minimum", "jax-off", why="min at a tie")
    for name in ("jax-minimum", "jax-off"):
        _save(name)
    code, report = _diff_json(capsys)
    (pair,) = report["pairs"]
    # Declared, but x[1] differs away from the ties: FAIL, the declaration named.
    assert code == 1 and pair["verdict"] == "FAIL" and pair["kinks"] == "min at a tie"
    assert [1] in pair["differing_at"]
    j = _live_pair("jax-minimum", "jax-off")
    assert j.failed and j.verdict == "FAIL"


def test_check_reports_the_kink_pair_and_masks_the_checks(kinks_example, capsys):
    """`weanj check`: the declared pair is `kinks` (not a failure), the undeclared one
    that differs away from the ties fails, and the Taylor and jvp checks perturb only
    the entries the kink mask keeps."""
    weanj.differ_at_kinks(NAME, "jax-branch", "jax-minimum", why="min at a tie")
    judgement = weanj.check(NAME, dtype="float64", save=False)
    assert judgement.exit_code == 1  # jax-off differs from both away from the ties
    ej = judgement[NAME]
    by_case = ej.by_case()
    kinks = by_case[f"{NAME}::m::jax-branch~jax-minimum"]
    assert kinks.verdict == "kinks" and kinks.kinks == "min at a tie"
    assert kinks.away.max_rel == 0.0 and kinks.comparison.differing == 4
    for other in ("jax-branch", "jax-minimum"):
        assert by_case[f"{NAME}::m::{other}~jax-off"].verdict == "FAIL"
    d = weanj.load_inputs(NAME)
    ties = d["x"] == d["y"]
    for name in ("jax-branch", "jax-minimum", "jax-off"):
        # Taylor and jvp perturb only the entries the kink mask keeps (away from the ties).
        taylor = by_case[f"{NAME}::m::{name}::taylor"]
        assert taylor.info["masked"] == {"left_out": 4, "size": 12, "why": "ties x == y"}
        assert taylor.taylor.left_out == int(ties.sum())
    for name in ("jax-branch", "jax-minimum"):
        assert by_case[f"{NAME}::m::{name}::taylor"].verdict == "ok"
        assert by_case[f"{NAME}::m::{name}::jvp"].verdict == "ok"
    # The text view says the same.
    out = "\n".join(judgement.lines())
    rows = {tuple(r.split()[:2]): r.split()[-1] for r in out.splitlines() if "  x  " in r}
    assert rows[("jax-branch", "jax-minimum")] == "kinks"
    assert rows[("jax-branch", "jax-off")] == "FAIL"
    assert "only at the kinks, as declared (min at a tie); away from them 0.00e+00" in out
    assert "kink mask: 4 of 12 entries left out (ties x == y)" in out
    for name in ("jax-branch", "jax-minimum"):
        cells = next(r.split() for r in out.splitlines() if r.split()[:2] == [name, "m"])
        assert cells[3] == "ok" and cells[5] == "ok"  # Taylor and jvp, away from the ties


def test_declaring_needs_a_mask_and_one_family(kinks_example):
    with pytest.raises(weanj.DefinitionError, match="not a variant"):
        weanj.differ_at_kinks(NAME, "jax-branch", "jax-nope", why="")
    plain = weanj.register_example(
        weanj.Example(name="91-plain", arrays=("x",), wrt="x", generate=lambda s: {"x": np.ones(2)})
    )
    try:
        with pytest.raises(weanj.DefinitionError, match="FDPolicy mask"):
            weanj.differ_at_kinks(plain, "a", "b", why="")
    finally:
        _registry.unregister_example("91-plain")
