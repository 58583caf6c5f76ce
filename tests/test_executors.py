"""The `Executor` protocol (docs/DESIGN.md §8.5): another engine is one module holding a
`Remote` subclass `ENGINE` and one line in `_executors.ENGINES`. This module is such an
engine (`ENGINE` below: it evaluates in this process, one after another, as a stand-in for
a cluster), registered for the scheme `toy://` by the test alone: `weanj check --scheduler
toy://here` on a user project judges as the in-process check does, each evaluation's record
written as it is handed back, and the next check reuses them all."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from weanj._pipeline.executors import _executors
from weanj._pipeline.executors._executors import Remote

from .projects import tiny_project, weanj_here


class ToyEngine(Remote):
    """Evaluates here (the module docstring), and hands each back through `done`."""

    name = "toy"
    handed: list[str] = []
    seconds = 0.0  # what each evaluation is said to have taken on the "cluster"
    of: dict[str, int] = {}  # evaluations handed back, per example

    def evaluate(self, todo, asked, done) -> None:
        from weanj._pipeline.evaluation._evaluate import evaluate
        from weanj._pipeline.evaluation._on_device import label_of
        from weanj._watch import Watch

        for v, inputs, dtype in todo:
            watch = Watch(timeout_s=asked.timeout, say=lambda _: None)
            found = evaluate(v, inputs, dtype, watch, shown_path=asked.shown_path)
            records = asked.records
            done((v, inputs, dtype), found, seconds=ToyEngine.seconds, where="toy")
            # written the moment it was handed back, before the next is evaluated
            path = records.places.evaluations(v.example.name) / f"{label_of(v, dtype)}.npz"
            assert path.is_file(), path
            ToyEngine.handed.append(label_of(v, dtype))
            ToyEngine.of[v.example.name] = ToyEngine.of.get(v.example.name, 0) + 1


ENGINE = ToyEngine


def _verdicts(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted((root / "results").glob("*/check.json")):
        for part in json.loads(path.read_text()).values():
            if isinstance(part, list):
                out.update({c["case"]: c["verdict"] for c in part if "case" in c})
    return out


def test_an_engine_is_one_module_and_its_registration(tmp_path, monkeypatch):
    (tmp_path / "tiny").mkdir()
    root = tiny_project(tmp_path / "tiny")
    local = weanj_here(root, "check", "--fresh")
    assert local.returncode == 0, local.stderr
    expected = _verdicts(root)
    shutil.rmtree(root / "results")
    monkeypatch.setitem(_executors.ENGINES, "toy", (__name__, ("toy",)))
    ToyEngine.handed.clear()
    assert isinstance(_executors.executor_for(None, "toy://here", None), ToyEngine)
    toy = weanj_here(root, "check", "--scheduler", "toy://here", "-v")
    assert toy.returncode == 0, toy.stdout + toy.stderr
    assert _verdicts(root) == expected
    lines = [line for line in toy.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 6 and all("(on toy)" in line for line in lines), lines
    assert len(ToyEngine.handed) == 6
    again = weanj_here(root, "check", "--scheduler", "toy://here", "-v")
    assert again.returncode == 0, again.stderr
    reused = [line for line in again.stderr.splitlines() if line.startswith("[")]
    assert len(reused) == 6 and all(": reused, ok" in line for line in reused), reused
    assert "evaluations: reused 6 of 6" in again.stdout
    assert len(ToyEngine.handed) == 6  # nothing handed to the engine the second time


def test_an_address_no_engine_claims_goes_to_the_first(monkeypatch):
    """Dask's own addresses (`tcp://`, `tls://`, a bare `host:port`) and a scheme no engine
    names go to the first engine (Dask); `toy://` to the engine registered for it."""
    pytest.importorskip("distributed")
    from weanj._pipeline.executors._dask import DaskExecutor

    monkeypatch.setitem(_executors.ENGINES, "toy", (__name__, ("toy",)))
    for address in ("tcp://127.0.0.1:8786", "tls://127.0.0.1:8786", "127.0.0.1:8786", None):
        assert _executors.engine_for(address) is DaskExecutor
    assert _executors.engine_for("toy://anywhere") is ToyEngine


def test_an_example_s_progress_line_counts_its_evaluations_made_elsewhere(tmp_path, monkeypatch):
    """An engine evaluates everything before the judge asks: the example's line said
    `0.0 s` (its judging alone) whatever the evaluations took; it now counts the seconds
    each evaluation took where it ran (7.25 s each here, a stand-in figure)."""
    (tmp_path / "tiny").mkdir()
    root = tiny_project(tmp_path / "tiny")
    monkeypatch.setitem(_executors.ENGINES, "toy", (__name__, ("toy",)))
    monkeypatch.setattr(ToyEngine, "seconds", 7.25)
    monkeypatch.setattr(ToyEngine, "of", {})
    toy = weanj_here(root, "check", "--scheduler", "toy://here")
    assert toy.returncode == 0, toy.stdout + toy.stderr
    lines = [x for x in toy.stderr.splitlines() if x.startswith("[")]
    assert len(lines) == 2, toy.stderr  # one per example
    for line in lines:
        name, seconds = re.search(r"\] (\S+): \d+ evaluation\(s\), ([\d.]+) s, ", line).groups()
        assert ToyEngine.of[name] > 0 and float(seconds) >= ToyEngine.of[name] * 7.25, line
