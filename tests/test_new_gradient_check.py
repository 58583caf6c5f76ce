"""A new gradient check with its own result type reaches every view without a view edited
(docs/DESIGN.md §9, "A new check").

The test adds, in this process, what a new check is in the code: a `CaseKind` member (here
`norm`, added to the enum and to `GRADIENT_CHECKS` where modules hold it, as the member
in `_model/_verdicts.py` would), its entry in `_pipeline.checks._gradchecks.CHECKS` (its
judgement, its policy and its evidence, which a module `_check_norm.py` would hold), and
its result type, registered in `_judge._checks.RESULTS`, which holds its rule and its
views. The toy check: the gradient's 2-norm at most `BOUND`. Then `weanj.check()` runs it
on a small example: the terminal's text shows its column, its cells and its failure line,
the JSON its numbers (against numpy's norm of the analytic gradient) and the evidence the
check names, `check.json` keeps them under the result's name and reads them back, and the
page from `check.json` is the live page, byte for byte. No module of the engine is edited.
Everything added is taken away afterwards.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._judge import _verdict as judge
from weanj._judge._checks import RESULTS, check_result, finite, num
from weanj._model import _verdicts
from weanj._model._verdicts import CaseKind, Verdict
from weanj._pipeline.checks._gradchecks import CHECKS, GradientCheck

from .toy_kernels import random_xy, xy_example

NAME = "95-norm"
BOUND = 100.0  # the toy check: ‖g‖₂ at most this


@dataclass(frozen=True)
class NormResult:
    """The toy check's numbers: the gradient's 2-norm and the bound it is held to."""

    array: str
    norm: float
    bound: float

    def to_json(self) -> dict[str, Any]:
        return {"array": self.array, "norm": self.norm, "bound": self.bound}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NormResult:
        return cls(str(data["array"]), float(data["norm"]), float(data["bound"]))

    def judge(self) -> tuple[Verdict, str]:
        if self.norm <= self.bound:
            return Verdict.OK, ""
        return Verdict.FAIL, f"‖g‖ = {num(self.norm)} above {self.bound:g}"

    def summary(self, reason: str) -> str:
        return reason or f"‖g‖ = {num(self.norm)} (bound {self.bound:g})"

    @classmethod
    def measure(cls, results) -> str:
        return num(max(r.norm for r in results), 1)

    def view_json(self) -> dict[str, Any]:
        return {"norm": {"value": finite(self.norm), "bound": self.bound}}


def _norm_judgement(session, case, catalog, inputs, g, array, **fields):
    result = NormResult(array, float(np.linalg.norm(g.gradients[array])), BOUND)
    return judge.judge_check(case, CaseKind("norm"), result, **fields)


def _norm_evidence(j, example):
    """The toy check's evidence, from its judgement's numbers: beyond the bound, the
    entries that carry most of the norm were looked at (as a real check names a second
    pass it made)."""
    return [f"the largest entries of {j.result.array}"] if j.result.norm > j.result.bound else []


def _add_kind(name: str, value: str, header: str, measure: str) -> CaseKind:
    """A `CaseKind` member made in this process as the enum makes its own."""
    member = str.__new__(CaseKind, value)
    member._value_, member._name_, member.__objclass__ = value, name, CaseKind
    member.header, member.measure, member._check = header, measure, True
    member._sort_order_ = len(CaseKind._member_names_)
    CaseKind._member_map_[name] = member
    CaseKind._value2member_map_[value] = member
    CaseKind._member_names_.append(name)
    type.__setattr__(CaseKind, name, member)
    return member


def _remove_kind(name: str, value: str) -> None:
    del CaseKind._member_map_[name], CaseKind._value2member_map_[value]
    CaseKind._member_names_.remove(name)
    type.__delattr__(CaseKind, name)


@pytest.fixture
def norm_check(monkeypatch):
    """The toy check registered: its kind, its `CHECKS` entry, its result type."""
    kind = _add_kind("NORM", "norm", "‖g‖", "max norm")
    old = {"GRADIENT_CHECKS": _verdicts.GRADIENT_CHECKS, "CASE_KINDS": _verdicts.CASE_KINDS}
    new = {
        "GRADIENT_CHECKS": (*old["GRADIENT_CHECKS"], kind),
        "CASE_KINDS": (*old["CASE_KINDS"], kind),
    }
    for module in [m for n, m in sys.modules.items() if n.startswith("weanj")]:
        for attr, value in old.items():
            if getattr(module, attr, None) is value:
                monkeypatch.setattr(module, attr, new[attr])
    monkeypatch.setitem(
        CHECKS,
        kind,
        GradientCheck(
            kind,
            _norm_judgement,
            lambda ex: {},
            NormResult,
            lambda n: True,
            evidence=_norm_evidence,
        ),
    )
    check_result("toy_norm")(NormResult)
    try:
        yield kind
    finally:
        # a module imported while the check was registered took the longer tuples too
        for module in [m for n, m in sys.modules.items() if n.startswith("weanj")]:
            for attr, value in new.items():
                if getattr(module, attr, None) is value:
                    setattr(module, attr, old[attr])
        RESULTS.pop("toy_norm", None)
        _remove_kind("NORM", "norm")


@pytest.fixture
def example(project):
    """Two families: `jax-a`, `L = Σ (x − y)²`, whose gradient 2(x − y) keeps within the
    bound, and `jax-b`, `100·L`, whose gradient does not."""
    ex = weanj.register_example(xy_example(NAME, generate=lambda seed: random_xy(seed, 8)))
    weanj.jax_variant(ex, "jax-a", family="a", loss=lambda x, y: jnp.sum((x - y) ** 2))
    weanj.jax_variant(ex, "jax-b", family="b", loss=lambda x, y: 100 * jnp.sum((x - y) ** 2))
    weanj.write_inputs(NAME)
    yield ex
    _registry.unregister_example(NAME)


def test_a_new_check_is_rendered_everywhere_and_read_back_from_check_json(
    norm_check, example, project
):
    from weanj._io._inputs import read_inputs
    from weanj._places import Places
    from weanj._report._text import example_lines
    from weanj._report._verdicts_file import read_check

    judgement = weanj.check([NAME], say=lambda line: None)
    ej = judgement[NAME]
    x, y = (np.asarray(ej.inputs.arrays[k]) for k in ("x", "y"))
    norm_a, norm_b = np.linalg.norm(2 * (x - y)), np.linalg.norm(200 * (x - y))
    assert norm_a < BOUND < norm_b  # the inputs make one pass and one fail
    cases = {j.case: j for j in ej.of_kind(norm_check)}
    a, b = cases[f"{NAME}::a::jax-a::norm"], cases[f"{NAME}::b::jax-b::norm"]
    assert (a.verdict, b.verdict) == (Verdict.OK, Verdict.FAIL)
    assert a.result.norm == pytest.approx(norm_a, rel=1e-12)
    assert b.result.norm == pytest.approx(norm_b, rel=1e-12)
    # the other checks pass: the toy check alone fails the run
    assert [j.case for j in ej.failures] == [b.case] and judgement.exit_code == 1

    # the terminal: a column headed by the kind, each variant's cell, the failure's line
    text = judgement.lines()
    header = next(line for line in text if line.split()[:1] == ["variant"])
    assert header.split()[3:6] == ["taylor", "jvp", "norm"]
    row_a = next(line for line in text if line.split()[:1] == ["jax-a"])
    row_b = next(line for line in text if line.split()[:1] == ["jax-b"])
    assert row_a.split()[7:9] == ["ok", f"{norm_a:.1e}"]
    assert row_b.split()[7:9] == ["FAIL", f"{norm_b:.1e}"]
    failure = f"{b.case}: FAIL: ‖g‖ = {norm_b:.2e} above {BOUND:g}"
    assert f"    {failure}" in text

    # the JSON: its numbers, as its result type writes them, and the summary line
    (data,) = judgement.to_json()["examples"]
    checks = {c["case"]: c for c in data["checks"]}
    assert checks[a.case]["norm"]["value"] == pytest.approx(norm_a, rel=1e-12)
    assert checks[b.case]["norm"] == {"value": b.result.norm, "bound": BOUND}
    assert checks[b.case]["summary"] == failure
    # the evidence the check names, asked of it by the engine (no engine edit)
    assert checks[b.case]["evidence"] == ["the largest entries of x"]
    assert "evidence" not in checks[a.case]

    # check.json: the numbers under the result's name, read back whole
    places = Places(project)
    stored = json.loads(places.check_file(NAME).read_text())
    (entry,) = [c for c in stored["judgement"]["judgements"] if c["case"] == b.case]
    assert entry["toy_norm"]["$class"] == "NormResult" and entry["taylor"] is None
    back = read_check(_registry.catalog(NAME), read_inputs(example, places), places)
    assert back.current, back.note
    assert {j.case: j.result for j in back.judgement.judgements} == {
        j.case: j.result for j in ej.judgements
    }
    assert back.judgement.by_case()[b.case].evidence == ("the largest entries of x",)
    assert example_lines(back.judgement) == example_lines(ej)
    # the page from check.json is the live page (no picture: the toy result draws none)
    for fmt in ("html", "md"):
        live, from_file = project / f"live.{fmt}", project / f"stored.{fmt}"
        weanj.report([NAME], out=live, judgement=judgement)
        weanj.report([NAME], out=from_file)
        assert live.read_bytes() == from_file.read_bytes()
        assert b.case in live.read_text()
        assert "‖g‖ (max norm)" in live.read_text()  # its column, from its own entry


def test_every_check_names_a_registered_result_type():
    """The table and the registry agree: each check's numbers are of a registered type,
    which keeps the protocol the judge and the views rely on."""
    for kind, check in CHECKS.items():
        assert check.result in RESULTS.values(), kind
        assert all(
            callable(getattr(check.result, m))
            for m in ("to_json", "from_json", "judge", "summary", "measure", "view_json")
        )
