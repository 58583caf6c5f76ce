"""`weanj.differ_at_kinks`: a same-family pair documented to differ at the kinks.

A throwaway example, `L(x, y) = Σ min(x, y)²`-like, with exact ties `x == y` in its
inputs: one variant writes `min` with branches (the derivative goes to x at a tie), one
with `jnp.minimum` (½ each way). Declared, the pair agrees away from the kinks and is
reported `kinks`, not failed; undeclared, or differing away from the kinks, it fails.
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _matrix, _registry
from weanj._cli import main

NAME = "90-kinks"


def generate(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(12)
    y = rng.standard_normal(12)
    y[::3] = x[::3]  # exact ties: four kinks
    return {"x": x, "y": y}


def away_from_ties(arrays, params):
    return {"x": arrays["x"] != arrays["y"]}


@pytest.fixture
def kinks_example(project):
    ex = weanj.register_example(
        weanj.Example(
            name=NAME,
            arrays=("x", "y"),
            wrt="x",
            generate=generate,
            fd=weanj.FDPolicy(step=1e-6, mask=away_from_ties, why="ties x == y"),
        )
    )

    @weanj.jax_variant(ex, "jax-branch", family="m")
    def branch(x, y):
        return jnp.sum(jnp.where(x <= y, x, y) ** 2)

    @weanj.jax_variant(ex, "jax-minimum", family="m")
    def minimum(x, y):
        return jnp.sum(jnp.minimum(x, y) ** 2)

    @weanj.jax_variant(ex, "jax-off", family="m")
    def off(x, y):  # differs away from the ties too: never excused
        return jnp.sum(jnp.minimum(x, y) ** 2) + 1e-3 * jnp.sum(x[1] ** 2)

    weanj.write_inputs(NAME)
    yield ex
    _registry.unregister_example(NAME)


def _diff_json(capsys) -> dict:
    code = main(["diff", NAME, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_declared_pair_differs_only_at_the_kinks(kinks_example, capsys):
    d = weanj.load_inputs(NAME)
    ties = np.flatnonzero(d["x"] == d["y"])
    for name in ("jax-branch", "jax-minimum"):
        weanj.evaluate(NAME, name).save()
    # Undeclared: a failure, at exactly the tie elements.
    code, report = _diff_json(capsys)
    (pair,) = report["pairs"]
    assert code == 1 and pair["verdict"] == "FAIL"
    assert pair["differing"] == len(ties) == 4
    assert [i for (i,) in pair["differing_at"]] == list(ties)
    # Declared: reported, not failed; the loss is the same to the bit.
    weanj.differ_at_kinks(NAME, "jax-branch", "jax-minimum", why="min at a tie")
    code, report = _diff_json(capsys)
    (pair,) = report["pairs"]
    assert code == 0 and pair["verdict"] == "kinks" and pair["kinks"] == "min at a tie"
    assert pair["away_from_kinks_max_rel"] == 0.0 and pair["loss_rel"] == 0.0
    text_code = main(["diff", NAME])
    out = capsys.readouterr().out
    assert text_code == 0 and "differs only at the kinks, as declared (min at a tie)" in out
    # pytest --weanj's pair check says the same.
    (case,) = [c for c in _matrix.cases([NAME]) if c.kind == "pair" and "jax-off" not in c.id]
    assert "differs only at the kinks (4 element(s))" in _matrix.run_case(case)


def test_declared_pair_must_agree_away_from_the_kinks(kinks_example, capsys):
    weanj.differ_at_kinks(NAME, "jax-minimum", "jax-off", why="min at a tie")
    for name in ("jax-minimum", "jax-off"):
        weanj.evaluate(NAME, name).save()
    code, report = _diff_json(capsys)
    (pair,) = report["pairs"]
    assert code == 1 and pair["verdict"] == "FAIL" and pair["kinks"] is None
    (case,) = [
        c
        for c in _matrix.cases([NAME])
        if c.kind == "pair" and c.variants == ("jax-minimum", "jax-off")
    ]
    with pytest.raises(_matrix.CheckFailure):
        _matrix.run_case(case)


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
