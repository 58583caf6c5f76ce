"""The verdicts and the kinds of case are defined once (`_model._verdicts`), as types, and
everything that lists them derives from that definition (docs/DESIGN.md, "The judge").

The code is read as a reader sees it (`ast`): a comparison of a `.verdict` or `.kind` with
a string, a `Fault("...")`, an `of_kind("...")` or a `CaseJudgement(id, "...")` spells a
verdict or a case kind by hand, which is what these tests forbid.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import weanj
from weanj import Expected
from weanj._errors import DefinitionError
from weanj._model._expected import DECLARABLE_KINDS
from weanj._model._verdicts import DECLARABLE, GRADIENT_CHECKS, CaseKind, Verdict
from weanj._pipeline.checks._gradchecks import CHECKS

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "weanj"

# Folders and modules other work moves off their literals (issue #43): none left (the
# views, `_report/`, are generic over `Verdict` and `CaseKind`).
NOT_YET: tuple[str, ...] = ()
# Modules whose `.kind` is another thing, spelled alike: a file probe's outcome.
OTHER = ("_io/_probe_process.py", "_io/_safeh5.py")
WORDS = {v.value for v in Verdict} | {k.value for k in CaseKind}


def test_there_is_one_definition_module():
    """No module but `_model/_verdicts.py` defines or re-exports the verdicts."""
    package = Path(weanj.__file__).parent
    assert not (package / "_judge" / "_kinds.py").exists()
    for path in package.rglob("*.py"):
        if path.name == "_verdicts.py":
            continue
        text = path.read_text()
        assert "class Verdict(" not in text and "class CaseKind(" not in text, path


def test_the_gradient_checks_are_the_kinds_marked_so_each_with_one_entry_of_the_table():
    first = (CaseKind.TAYLOR, CaseKind.JVP)  # every example's; the others, some examples'
    assert GRADIENT_CHECKS == (*first, CaseKind.TAYLOR2, CaseKind.SYMMETRY, CaseKind.DOT)
    assert not any(k.optional for k in first) and all(
        k.optional for k in GRADIENT_CHECKS if k not in first
    )
    assert tuple(CHECKS) == GRADIENT_CHECKS
    assert all(CHECKS[k].kind is k for k in GRADIENT_CHECKS)
    compared = (CaseKind.PAIR, CaseKind.OUTPUT, CaseKind.HVP, CaseKind.PULLBACK)
    assert not any(k.is_check for k in (CaseKind.RUN, CaseKind.FILE, *compared))
    assert tuple(k for k in CaseKind if k.compares) == compared


def test_what_a_declaration_may_name_derives_from_the_definition():
    assert DECLARABLE_KINDS == (CaseKind.RUN, *GRADIENT_CHECKS)
    assert all(isinstance(v, Verdict) and v.failing for v in DECLARABLE)
    for kind in GRADIENT_CHECKS:  # given as text, kept as the type
        e = Expected(variant="a", reason="known", check=kind.value)
        assert e.check is kind and e.verdict is Verdict.FAIL
    e = Expected(variant="a", reason="known", verdict="NaN/Inf")
    assert e.check is CaseKind.RUN and e.verdict is Verdict.NONFINITE
    with pytest.raises(
        DefinitionError, match="check 'pair' is not one of run, taylor, jvp, taylor2, symmetry, dot"
    ):
        Expected(variant="a", reason="known", check="pair")
    with pytest.raises(DefinitionError, match="verdict 'ok' is not one of FAIL, error, NaN/Inf"):
        Expected(variant="a", reason="known", verdict="ok")
    with pytest.raises(DefinitionError, match="expect verdict 'error' or 'NaN/Inf'"):
        Expected(variant="a", reason="known", check="run")


def test_the_types_serialise_as_their_text():
    """Files written before the types read the same (str enums compare and hash as text)."""
    e = Expected(variant="a", reason="known", check="jvp", verdict="FAIL")
    text = json.dumps(e.to_json())
    assert '"check": "jvp"' in text and '"verdict": "FAIL"' in text
    assert json.loads(text)["check"] == CaseKind.JVP
    assert f"{CaseKind.TAYLOR}::x" == "taylor::x"
    assert {"taylor::x": 1}.get(f"{CaseKind.TAYLOR}::x") == 1
    assert {("jvp", "x"): 1}[(CaseKind.JVP, "x")] == 1
    assert Verdict.parse("NaN/Inf") is Verdict.NONFINITE
    with pytest.raises(ValueError):
        Verdict.parse("nan/inf")


def _spelled(path: Path) -> list[str]:
    """The places a module spells a verdict or a case kind as a string literal where it
    means one (see the module docstring)."""

    def word(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in WORDS

    def words(node) -> bool:
        return word(node) or (
            isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(word(e) for e in node.elts)
        )

    def means(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr in ("verdict", "kind")

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(means(s) for s in sides) and any(words(s) for s in sides):
                found.append(f"{path.name}:{node.lineno}")
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            args = node.args
            if (
                (name in ("Fault", "of_kind", "skipped", "declared_check") and args[:1])
                and word(args[0])
                or (name in ("CaseJudgement", "Case", "not_compared") and len(args) > 1)
                and word(args[1])
            ):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_module_spells_a_verdict_or_a_case_kind_by_hand():
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("examples/") or rel == "_model/_verdicts.py":
            continue
        if any(rel.startswith(n) for n in NOT_YET) or rel in OTHER:
            continue
        spelled.extend(f"{rel}: {where}" for where in _spelled(path))
    assert not spelled, spelled


def test_the_reader_sees_what_it_must(tmp_path):
    """The reader itself: each form it forbids is found."""
    p = tmp_path / "m.py"
    p.write_text(
        "a.verdict == 'error'\n"
        "b.kind in ('taylor', 'jvp')\n"
        "Fault('skipped', 'why')\n"
        "ej.of_kind('file')\n"
        "CaseJudgement(c, 'run', v)\n"
        "x == 'error'\n"  # not a verdict's attribute: not read as one
        "d['error']\n"
    )
    assert _spelled(p) == ["m.py:1", "m.py:2", "m.py:3", "m.py:4", "m.py:5"]


# --- verdicts only from the judge (docs/DESIGN.md §8) ---------------------------------------


def _member(node) -> bool:
    """`Verdict.X` (or its text, `str(Verdict.X)`): a verdict named by its member."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "str" and node.args:
        node = node.args[0]
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Verdict"
        and node.attr.isupper()
    )


def _read_back(node) -> bool:
    """`Verdict.parse(...)`: a verdict read back from a file (a record, `check.json`)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parse"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "Verdict"
    )


def _decided(path: Path) -> list[str]:
    """Where a module gives a `Fault` or a `CaseJudgement` a verdict of its own: any verdict
    argument but one read back from a file, and any `replace(..., verdict=...)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        given = {k.arg: k.value for k in node.keywords}
        if name == "Fault":
            verdict = node.args[0] if node.args else given.get("verdict")
        elif name == "CaseJudgement":
            verdict = node.args[2] if len(node.args) > 2 else given.get("verdict")
        elif name == "replace" and "verdict" in given:
            verdict = given["verdict"]
        else:
            continue
        if verdict is not None and not _read_back(verdict):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_module_outside_the_judge_decides_a_verdict():
    """§8: the pipeline reports what happened (`_contract.fault_of`, `numbers_fault`), the
    case table asks `_judge/_verdict` for every case; only `_judge/` makes a verdict."""
    decided = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("_judge/", "examples/")):
            continue
        decided.extend(f"{rel}: {where}" for where in _decided(path))
    assert not decided, decided


def _lists(path: Path) -> list[str]:
    """Where a module writes a list of verdicts by hand: a tuple, list or set literal of
    two or more `Verdict` members."""
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set))
        and sum(_member(e) for e in node.elts) >= 2
    ]


def test_no_other_list_of_verdicts_exists():
    """§8: `FAULTS`, `NOT_RUN`, `UNJUDGED`, `DECLARABLE` and every other set of verdicts is
    derived from the `Verdict` table; no module (the judge's included) writes one."""
    listed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "_model/_verdicts.py" or rel.startswith("examples/"):
            continue
        listed.extend(f"{rel}: {where}" for where in _lists(path))
    assert not listed, listed


def test_the_readers_of_verdicts_see_what_they_must(tmp_path):
    p = tmp_path / "m.py"
    p.write_text(
        "Fault(Verdict.ERROR, 'what')\n"
        "Fault(ERROR, 'what', command)\n"
        "CaseJudgement(c, k, Verdict.TIMEOUT, reason=r)\n"
        "CaseJudgement(c, k, verdict=v)\n"
        "dataclasses.replace(j, verdict=Verdict.OK)\n"
        "Fault(Verdict.parse(text), 'what')\n"  # read back: allowed
        "CaseJudgement(c, k, Verdict.parse(text))\n"  # read back: allowed
        "x in (Verdict.SKIPPED, Verdict.UNAVAILABLE)\n"
        "y == Verdict.OK\n"  # one member: not a list
        "r.verdict not in (str(Verdict.SKIPPED), str(Verdict.UNAVAILABLE))\n"
    )
    assert _decided(p) == ["m.py:1", "m.py:2", "m.py:3", "m.py:4", "m.py:5"]
    assert _lists(p) == ["m.py:8", "m.py:10"]


def test_the_sets_of_verdicts_derive_from_the_table():
    from weanj._model import _verdicts as v

    assert v.FAULTS == (Verdict.ERROR, Verdict.NONFINITE, Verdict.TIMEOUT)
    assert v.NOT_RUN == (Verdict.UNAVAILABLE, Verdict.SKIPPED)
    assert v.UNJUDGED == (Verdict.STALE, Verdict.UNAVAILABLE, Verdict.SKIPPED, Verdict.INFO)
    assert v.DECLARABLE == DECLARABLE == (Verdict.FAIL, Verdict.ERROR, Verdict.NONFINITE)
    assert [x for x in Verdict if x.agreeing] == [Verdict.KINKS, Verdict.OK]
    assert [x for x in Verdict if x.as_declared] == [Verdict.KINKS, Verdict.EXPECTED]
    assert all(x.failing for x in v.FAULTS) and not any(x.failing for x in v.NOT_RUN)


# What docs/verdicts.md says `pytest --weanj` makes of each verdict, written out here
PYTEST = {
    "FAIL": "failed",
    "unexpectedly ok": "XPASS(strict)",
    "error": "failed",
    "NaN/Inf": "failed",
    "timeout": "failed",
    "stale": "skipped",
    "kinks": "passed",
    "expected": "xfailed",
    "unavailable": "skipped",
    "skipped": "skipped",
    "info": "passed",
    "ok": "passed",
}


def test_each_verdict_declares_its_pytest_outcome_and_fails_by_it():
    """§8: a verdict's pytest outcome is its own (`Verdict.outcome`), and a failing verdict
    is one whose item fails: the command's exit and pytest's agree by construction."""
    from weanj._model._verdicts import Outcome, VerdictFlag

    assert {v.value: v.outcome.value for v in Verdict} == PYTEST
    failing = {v.value for v in Verdict if v.failing}
    assert failing == {"FAIL", "unexpectedly ok", "error", "NaN/Inf", "timeout"}
    assert all(v.failing == (v.outcome in (Outcome.FAILED, Outcome.XPASS_STRICT)) for v in Verdict)
    assert all(isinstance(v.flags, VerdictFlag) for v in Verdict)
    with pytest.raises(AttributeError):  # a flag misspelt is an error, never another meaning
        VerdictFlag.AGREE  # noqa: B018
    assert [v for v in Verdict if v.at_kinks] == [Verdict.KINKS]
    assert [v for v in Verdict if v.declared] == [Verdict.EXPECTED]
    assert [v for v in Verdict if v.not_there] == [Verdict.UNEXPECTEDLY_OK]
    assert [v for v in Verdict if v.outdated] == [Verdict.STALE]


# The verdicts whose behaviour their flags carry: the judge gives them, nothing compares them
ASKED = {"EXPECTED", "KINKS", "STALE", "UNEXPECTEDLY_OK"}


def _asked(node) -> bool:
    """`Verdict.X` of `ASKED`, its text, or a tuple, list or set holding one."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_asked(e) for e in node.elts)
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "str" and node.args:
        node = node.args[0]
    return _member(node) and node.attr in ASKED


def _named(path: Path) -> list[str]:
    """Where a module compares a verdict with one of `ASKED` by name."""
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Compare) and any(map(_asked, (node.left, *node.comparators)))
    ]


def test_what_a_verdict_does_is_asked_of_it_never_decided_by_its_name():
    """§8: the views, the case table and the pytest plugin ask a verdict's flags
    (`at_kinks`, `declared`, `not_there`, `outdated`, `outcome`), so a new verdict with the
    same flags is rendered the same with no view edited."""
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        named.extend(f"{path.relative_to(PACKAGE)}: {w}" for w in _named(path))
    assert not named, named


def test_the_reader_of_names_sees_what_it_must(tmp_path):
    p = tmp_path / "m.py"
    p.write_text(
        "j.verdict == Verdict.KINKS\n"
        "str(Verdict.EXPECTED) != r.verdict\n"
        "v in (Verdict.STALE, Verdict.OK)\n"
        "j.verdict == Verdict.OK\n"  # not one whose flags say what it does
        "dataclasses.replace(j, verdict=Verdict.EXPECTED)\n"  # the judge giving it
    )
    assert _named(p) == ["m.py:1", "m.py:2", "m.py:3"]


def test_the_judge_turns_what_happened_into_a_fault():
    """What the pipeline reports (an exception, the numbers) and the verdict it gets."""
    import numpy as np

    from weanj._errors import ExcludedError, UnavailableError
    from weanj._judge._contract import Breach, fault_of, numbers_fault
    from weanj._model import Gradient

    cases = [
        (TimeoutError("past 5 s"), Verdict.TIMEOUT, "cmd"),
        (UnavailableError("no Julia found"), Verdict.UNAVAILABLE, ""),
        (ExcludedError("float64 only"), Verdict.SKIPPED, ""),  # an UnavailableError too
        (Breach("returned a loss of shape (2,)"), Verdict.ERROR, "cmd"),
        (ZeroDivisionError("division by zero"), Verdict.ERROR, "cmd"),
        (ChildProcessError("process 1 of 2 exited with code 9"), Verdict.ERROR, "cmd"),
    ]
    for happened, verdict, command in cases:
        f = fault_of(happened, "", "cmd")
        assert (f.verdict, f.what, f.command) == (verdict, str(happened), command)
    assert fault_of(ValueError("x"), "the line").what == "the line"
    ex = weanj.Example(name="k-ex", arrays=("x",), wrt="x", generate=lambda s: {"x": np.ones(2)})

    def gradient(values, loss=1.0) -> Gradient:
        return Gradient(ex, "v", "f", "float64", {"x": np.array(values)}, loss, {}, "0" * 64, "k")

    assert numbers_fault(gradient([1.0, 2.0])) is None
    bad = numbers_fault(gradient([1.0, np.nan]), "weanj run k-ex v")
    assert bad.verdict == Verdict.NONFINITE and bad.command == "weanj run k-ex v"
    assert bad.what.startswith("v: 1 NaN/Inf value(s) in the gradient x")
    assert numbers_fault(gradient([1.0, 2.0], loss=float("inf"))).verdict == Verdict.NONFINITE


def test_the_colours_are_styled_once_from_the_verdicts():
    """§8.2: one CSS rule per `Verdict.colour`, the same for the report and the notebook."""
    from weanj._model._verdicts import COLOURS
    from weanj._report import _html_parts, _notebook

    for colour in COLOURS:
        assert f".{colour}{{" in _html_parts.STYLE
        assert f".weanj-judgement .{colour}{{" in _notebook.SCOPED_STYLE
    rule = _html_parts.verdict_style()
    assert rule in _html_parts.STYLE
    assert _html_parts.verdict_style(".weanj-judgement ") in _notebook.SCOPED_STYLE
    # no colour of a verdict by hand
    for name in ("_notebook.py", "_html.py", "_html_evidence.py", "_md.py"):
        text = (PACKAGE / "_report" / name).read_text()
        assert not any(f".{colour}{{" in text for colour in COLOURS), name
