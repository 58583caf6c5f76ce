"""Live variants against the committed reference gradients in `results/<example>/recorded/`.

A gradient recorded on another machine (a Julia run, a GPU run) is checked against every
live variant of its family in every test run from then on (README: "Recording a reference
gradient"). The recorded gradient is the reference of the relative error; the live
variant is evaluated with the recorded file's parameters and dtype, on the shared inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj._store import read_gradient_file

from .cases import _marks, on_shared, shared_inputs


def _recorded_files(example: str) -> list[Path]:
    return sorted((weanj.project_root() / "results" / example / "recorded").glob("*.h5"))


def _cases():
    cases = []
    for ex in weanj.example_names():
        recorded = [(p, read_gradient_file(p)) for p in _recorded_files(ex)]
        family_of = {n: f for f, names in weanj.families(ex).items() for n in names}
        for name, family in family_of.items():
            mine = [(p, s) for p, s in recorded if s.family == family]
            if not mine:
                cases.append(
                    pytest.param(
                        ex,
                        name,
                        None,
                        id=f"{ex}:{name}-vs-recorded",
                        marks=pytest.mark.skip(
                            reason=f"no recorded gradient of family {family!r} under "
                            f"results/{ex}/recorded/"
                        ),
                    )
                )
            for path, _ in mine:
                cases.append(
                    pytest.param(
                        ex,
                        name,
                        path,
                        marks=_marks(ex, [name]),
                        id=f"{ex}:{name}-vs-recorded/{path.stem}",
                    )
                )
    return cases


def _live(example: str, name: str, params: dict, dtype: str) -> tuple[float, np.ndarray]:
    """(loss, gradient) of the live variant, shared with the other crossval tests when the
    recording used the shared inputs' own parameters in float64 (the usual case)."""
    d = shared_inputs(example)
    if dtype == "float64" and all(d[k] == v for k, v in params.items()):
        return on_shared(example, name)
    ev = weanj.evaluate(example, name, params=params, dtype=dtype)
    return ev.loss, ev.gradient


@pytest.mark.parametrize(("example", "name", "path"), _cases())
def test_live_variant_agrees_with_recorded_gradient(example, name, path):
    recorded = read_gradient_file(path)
    current = shared_inputs(example)["sha256"]
    if recorded.inputs_sha256 != current:
        pytest.skip(
            f"{path.name} was recorded on other inputs (sha256 "
            f"{recorded.inputs_sha256[:12]}…, current {current[:12]}…); re-record it"
        )
    loss, gradient = _live(example, name, recorded.params, recorded.dtype)
    c = weanj.compare(recorded.gradient, gradient, recorded.loss, loss)
    assert c.agree, (
        f"{name} vs recorded {path.name} ({recorded.backend_version}): max|Δ|/max|g_ref| = "
        f"{c.max_rel:.2e}, |ΔL|/|L| = {c.loss_rel}, worst at numpy {c.worst} / Julia "
        f"{c.worst_julia}, {c.ulp} ULP"
    )
