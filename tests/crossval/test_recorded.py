"""Live variants against the committed reference gradients in `results/<example>/recorded/`.

A gradient recorded on another machine (a Julia run, a GPU run) is checked against every
live variant of its family in every test run from then on (docs/files.md: "Recording a
reference gradient"). These are the case table's recorded pairs (`V~recorded/R`, per gradient
array), answered by the judge, and its file cases: each recorded file must be current
(computed on the shared inputs, as its provenance key says) and finite. References
recorded before format 2 (no `format`, no `key`, the float64-bytes digest) are still
read and matched: `tests/data/format1/` holds two of them, as committed then.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

import weanj
from weanj._model._verdicts import Verdict
from weanj._pipeline.engine._cases import judge_case, read_plan, subject_outcome
from weanj._pipeline.session._session import Session
from weanj._places import places
from weanj._registry import catalog
from weanj._report._lines import message

from ..helpers import format1_sha256, inputs_sha256, provenance_key
from .cases import (
    assert_as_declared,
    assert_judged,
    assert_within_policy,
    is_recorded,
    is_variant,
    judge,
    subject,
    subjects_of,
    table_cases,
)

REPO = Path(__file__).resolve().parents[2]
FORMAT1 = REPO / "tests" / "data" / "format1"


def _recorded_pair(p, case) -> bool:
    if case.kind != "pair" or case.across_families:
        return False
    subjects = subjects_of(p, case)
    return any(map(is_recorded, subjects)) and any(map(is_variant, subjects))


def _recorded_file(p, case) -> bool:
    return case.kind == "file" and case.id.split("::file::")[1].startswith("recorded/")


def _raw(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """A gradient file's attributes and arrays, read with h5py (not through weanj)."""
    with h5py.File(path, "r") as f:
        node = f["gradient"]
        arrays = (
            {"": node[()]} if isinstance(node, h5py.Dataset) else {k: node[k][()] for k in node}
        )
        return dict(f.attrs), arrays


def _shared_arrays(root: Path, ex) -> list[tuple[str, np.ndarray]]:
    with h5py.File(root / "shared_inputs" / f"{ex.name}.h5", "r") as f:
        return [(name, f[name][()]) for name in ex.arrays]


@pytest.mark.parametrize(("example", "case_id"), table_cases(_recorded_pair, "recorded pair"))
def test_live_variant_agrees_with_recorded_gradient(example, case_id):
    j = judge(example, case_id)
    assert_judged(j, Verdict.OK, Verdict.EXPECTED)
    if j.verdict == Verdict.EXPECTED:  # only a pair declared with weanj.Expected
        assert_as_declared(example, j)
        return
    a, b = (subject(example, label) for label in j.subjects)
    recorded, live = (a, b) if a.source == "recorded" else (b, a)
    # The recorded gradient as the reference of the relative error, as docs/files.md says.
    assert_within_policy(
        recorded.loss,
        recorded.gradients[j.array],
        live.loss,
        live.gradients[j.array],
        recorded.dtype,
        what=case_id,
    )


@pytest.mark.parametrize(("example", "case_id"), table_cases(_recorded_file, "recorded file"))
def test_recorded_file_is_current_and_finite(example, case_id):
    # A committed reference on other inputs would be `stale`: never compared, so it would
    # check nothing; the repository's own references must be current.
    j = judge(example, case_id)
    assert j.verdict == Verdict.OK, message(j)
    ex = weanj.example(example)
    path = REPO / "results" / example / "recorded" / f"{j.subjects[0].split('/', 1)[1]}.h5"
    attrs, arrays = _raw(path)
    assert all(np.all(np.isfinite(a)) for a in arrays.values()), path
    # "Current", from the definitions (not by asking weanj): the file's key is the
    # provenance key of the shared inputs' digest, its parameters and its dtype.
    params = {p: attrs[p] for p in ex.param_names}
    if attrs.get("format") == 2:
        digest = inputs_sha256(_shared_arrays(REPO, ex))
        assert attrs["inputs_sha256"] == digest, path
        assert attrs["key"] == provenance_key(digest, params, attrs["dtype"]), path
    else:
        assert attrs["inputs_sha256"] == format1_sha256(*(a for _, a in _shared_arrays(REPO, ex)))


def _format1_files() -> list:
    return [pytest.param(p, id=p.stem) for p in sorted(FORMAT1.glob("recorded-*.h5"))]


def _install(project: Path, source: Path, *, inputs_sha256: str | None = None) -> tuple:
    """Put a format-1 reference in place of the project's recorded file of its variant."""
    attrs, _ = _raw(source)
    assert "format" not in attrs and "key" not in attrs, f"{source} is not a format-1 file"
    target = project / "results" / attrs["example"] / "recorded" / f"{attrs['variant']}.h5"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    if inputs_sha256 is not None:
        with h5py.File(target, "r+") as f:
            f.attrs["inputs_sha256"] = inputs_sha256
    return weanj.example(attrs["example"]), attrs, target


@pytest.mark.parametrize("source", _format1_files())
def test_format1_reference_is_read_and_matched(project, source):
    ex, attrs, target = _install(project, source)
    p = read_plan(catalog(ex), places(), live=True)  # in the temporary project ($WEANJ_ROOT)
    label = f"recorded/{target.stem}"
    file_case = p.files[f"{ex.name}::file::{label}"]
    assert file_case.verdict == Verdict.OK, message(file_case)
    g = p.subjects[label].gradient
    assert (g.source, g.format, g.variant) == ("recorded", 1, attrs["variant"])
    # Its key is computed from its legacy digest (the float64 bytes of the arrays), which
    # is that of the shared inputs: "the same inputs" as a format-2 file would say it.
    legacy = format1_sha256(*(a for _, a in _shared_arrays(project, ex)))
    assert attrs["inputs_sha256"] == legacy
    params = {name: attrs[name] for name in ex.param_names}
    assert g.key == provenance_key(legacy, params, "float64")
    # Every live variant of its family is judged against it, per gradient array, and
    # agrees; the numbers are those of the file as h5py reads it.
    pairs = [
        c for c in p.cases if c.kind == "pair" and label in c.subjects and p.skip_of(c) is None
    ]
    assert len(pairs) >= len(ex.wrt_names), [c.id for c in p.cases]
    _, raw = _raw(target)
    raw = {ex.wrt_names[0]: raw[""]} if "" in raw else raw
    session = Session()
    for case in pairs:
        j = judge_case(p, case, session)
        assert j.verdict == Verdict.OK, message(j)
        live = subject_outcome(p, next(s for s in case.subjects if s != label), session)
        assert_within_policy(
            float(attrs["loss"]),
            raw[case.array],
            live.loss,
            live.gradients[case.array],
            what=case.id,
        )
    # And the format-1 and the format-2 recordings of one variant on these inputs agree.
    attrs2, raw2 = _raw(REPO / "results" / ex.name / "recorded" / target.name)
    assert attrs2.get("format") == 2
    raw2 = {ex.wrt_names[0]: raw2[""]} if "" in raw2 else raw2
    assert_within_policy(float(attrs2["loss"]), raw2, float(attrs["loss"]), raw, what="1 vs 2")


@pytest.mark.parametrize("source", _format1_files())
def test_format1_reference_on_other_inputs_is_stale_and_not_compared(project, source):
    other = format1_sha256(np.arange(3.0))  # a digest of other arrays
    ex, _, target = _install(project, source, inputs_sha256=other)
    p = read_plan(catalog(ex), places(), live=True)
    label = f"recorded/{target.stem}"
    j = p.files[f"{ex.name}::file::{label}"]
    assert j.verdict == Verdict.STALE and not j.failed, message(j)
    assert other[:12] in j.reason and "re-record" in j.reason, j.reason
    assert label not in p.subjects
    assert not [c.id for c in p.cases if label in c.subjects]
