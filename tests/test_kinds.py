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
from weanj._model._expected import CHECKS as EXPECTED_CHECKS
from weanj._model._expected import DECLARABLE
from weanj._model._verdicts import GRADIENT_CHECKS, CaseKind, Verdict
from weanj._pipeline._gradchecks import CHECKS

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "weanj"

# Folders and modules other work moves off their literals (issue #43): none left (the
# views, `_report/`, are generic over `Verdict` and `CaseKind`).
NOT_YET: tuple[str, ...] = ()
# Modules whose `.kind` is another thing, spelled alike: a file probe's outcome.
OTHER = ("_io/_safeh5.py",)
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
    assert GRADIENT_CHECKS == (CaseKind.TAYLOR, CaseKind.JVP)
    assert tuple(CHECKS) == GRADIENT_CHECKS
    assert all(CHECKS[k].kind is k for k in GRADIENT_CHECKS)
    assert not any(k.is_check for k in (CaseKind.RUN, CaseKind.PAIR, CaseKind.FILE))


def test_what_a_declaration_may_name_derives_from_the_definition():
    assert EXPECTED_CHECKS == (CaseKind.RUN, *GRADIENT_CHECKS)
    assert all(isinstance(v, Verdict) and v.failing for v in DECLARABLE)
    for kind in GRADIENT_CHECKS:  # given as text, kept as the type
        e = Expected(variant="a", reason="known", check=kind.value)
        assert e.check is kind and e.verdict is Verdict.FAIL
    e = Expected(variant="a", reason="known", verdict="NaN/Inf")
    assert e.check is CaseKind.RUN and e.verdict is Verdict.NONFINITE
    with pytest.raises(DefinitionError, match="check 'pair' is not one of run, taylor, jvp"):
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
