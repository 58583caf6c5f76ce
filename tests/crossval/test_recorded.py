"""Live variants against the committed reference gradients in `results/<example>/recorded/`.

A gradient recorded on another machine (a Julia run, a GPU run) is checked against every
live variant of its family in every test run from then on (README: "Recording a reference
gradient"). These are `pytest --weanj`'s recorded cases, run by its own check: the
recorded gradient is the reference of the relative error, the live variant is evaluated
with the recorded file's parameters and dtype on the shared inputs, per gradient array;
a reference recorded on other inputs skips, saying so.
"""

from __future__ import annotations

import pytest

from weanj import _matrix

from .cases import matrix_cases


@pytest.mark.parametrize("case", matrix_cases("recorded"))
def test_live_variant_agrees_with_recorded_gradient(case):
    try:
        _matrix.run_case(case)
    except _matrix.CaseSkipped as e:
        pytest.skip(str(e))
