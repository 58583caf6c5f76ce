"""An output's pullback `Jᵀ·w` compared across variants (issue 72, item 2; docs/outputs.md).

The kernel of tests/test_outputs.py: T steps of a nonlinear periodic stencil on an N×N
field x, `u ← u/2 + (the four neighbours)/8 + sin(u)/20`, its output `uT` the field after
T steps and its loss `Σ uT²`. `jax-loop` and `jax-scan` are correct; `jax-stiff` returns
the right field, loss and gradient, but computes its output with `sin` of a frozen copy
of the field (`stop_gradient`): the output's Jacobian misses the `cos(u)/20` term, in
forward and reverse mode alike, so its dot-product test holds. Only the comparison of
`Jᵀ·w` with the family's can see it.

`Jᵀ·w` is computed here again in numpy, independently: the adjoint of one step is
`λ ← (1/2 + cos(u)/20)·λ + (the four neighbours of λ)/8` (the neighbours' sum is its own
transpose on a periodic grid), run from the output's seeded weight w back over the steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._model._verdicts import CaseKind, Verdict
from weanj._places import places

NAME = "93-pulled"
N, T = 6, 4


def _generate(seed):
    return {"x": np.random.default_rng(seed).standard_normal((N, N))}


def _around(u, roll=jnp.roll):
    return roll(u, 1, 0) + roll(u, -1, 0) + roll(u, 1, 1) + roll(u, -1, 1)


def _step(u, frozen=False):
    s = jnp.sin(jax.lax.stop_gradient(u) if frozen else u)
    return 0.5 * u + 0.125 * _around(u) + 0.05 * s


def numpy_pullback(x: np.ndarray, weight: np.ndarray, frozen: bool = False) -> np.ndarray:
    """`Jᵀ·w` of the field after T steps, by the adjoint steps (module docstring)."""
    fields = [np.asarray(x, np.float64)]
    for _ in range(T - 1):
        u = fields[-1]
        fields.append(0.5 * u + 0.125 * _around(u, np.roll) + 0.05 * np.sin(u))
    lam = np.asarray(weight, np.float64)
    for u in reversed(fields):
        own = 0.5 if frozen else 0.5 + 0.05 * np.cos(u)
        lam = own * lam + 0.125 * _around(lam, np.roll)
    return lam


def _register():
    ex = weanj.register_example(
        weanj.Example(name=NAME, arrays=("x",), wrt="x", generate=_generate, outputs=("uT",))
    )

    @weanj.jax_variant(ex, "jax-loop", family="stencil")
    def loop(x):
        u = x
        for _ in range(T):
            u = _step(u)
        return jnp.sum(u * u), {"uT": u}

    @weanj.jax_variant(ex, "jax-scan", family="stencil")
    def scan(x):
        u, _ = jax.lax.scan(lambda u, _: (_step(u), None), x, None, length=T)
        return jnp.sum(u * u), {"uT": u}

    @weanj.jax_variant(ex, "jax-stiff", family="stencil")
    def stiff(x):
        """Planted: the loss from the field, the output from a field whose sin is frozen."""
        u, out = x, x
        for _ in range(T):
            u, out = _step(u), _step(out, frozen=True)
        return jnp.sum(u * u), {"uT": out}

    return ex


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    root = tmp_path_factory.mktemp("pulled")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        _register()
        weanj.write_inputs(NAME)
        yield weanj.check(NAME, fresh=True, say=lambda line: None), root
    _registry.unregister_example(NAME)


def _case(a: str, b: str) -> str:
    return f"{NAME}::pullback::uT::x::{a}~{b}"


def test_the_pullbacks_are_the_adjoint_steps_of_numpy(checked):
    from weanj._judge._directions import output_weights

    ej = checked[0][NAME]
    x = np.asarray(ej.inputs.arrays["x"])
    (weight,) = output_weights(ej.example, {"uT": (N, N)}).values()
    for label in ("jax-loop", "jax-scan"):
        pulled = ej.subjects[label].pullback["uT::x"]
        np.testing.assert_allclose(pulled, numpy_pullback(x, weight), rtol=1e-12, atol=1e-15)
    stiff = ej.subjects["jax-stiff"].pullback["uT::x"]
    np.testing.assert_allclose(stiff, numpy_pullback(x, weight, frozen=True), rtol=1e-12)
    assert np.abs(stiff - numpy_pullback(x, weight)).max() > 1e-3  # the check can see it


def test_a_consistently_wrong_output_jacobian_is_caught_by_the_pullbacks_alone(checked):
    ej = checked[0][NAME]
    failing = {j.case for j in ej.failures}
    assert failing == {_case("jax-loop", "jax-stiff"), _case("jax-scan", "jax-stiff")}
    j = ej.by_case()[_case("jax-loop", "jax-stiff")]
    assert j.kind == CaseKind.PULLBACK and j.array == "uT::x" and j.verdict == Verdict.FAIL
    assert ej.by_case()[_case("jax-loop", "jax-scan")].verdict == Verdict.OK
    # its output, loss, gradient and dot-product test (J consistent with itself) agree
    agreeing = ej.by_case()[f"{NAME}::output::uT::jax-loop~jax-stiff"]
    assert agreeing.verdict == Verdict.OK and agreeing.comparison.max_abs == 0.0
    dot = ej.by_case()[f"{NAME}::stencil::jax-stiff::dot"]
    assert dot.verdict == Verdict.OK and dot.result.by == "jax-stiff"
    assert set(ej.suspects()) == {"jax-stiff"}
    # only a check's float64 runs have pullbacks: no float32 case
    assert all("@float32" not in j.case for j in ej.of_kind(CaseKind.PULLBACK))


def test_the_pullbacks_cost_nothing_more(checked):
    """They are the dot-product test's backward (one per output) kept whole."""
    ej = checked[0][NAME]
    for label in ("jax-loop", "jax-scan", "jax-stiff"):
        cost = ej.subjects[label].cost
        assert cost.of("evaluation") == (1, 1) and cost.of("jacobian") == (0, 1), cost.describe()


def test_records_diff_and_views_keep_the_pullbacks(checked, monkeypatch):
    judgement, root = checked
    monkeypatch.setenv("WEANJ_ROOT", str(root))
    again = weanj.check(NAME, say=lambda line: None)[NAME]
    assert all(why.startswith("reused") for why in again.reuse.values()), again.reuse
    for label, g in judgement[NAME].subjects.items():
        if g.pullback is not None:
            assert np.array_equal(again.subjects[label].pullback["uT::x"], g.pullback["uT::x"])
    kept = {j.case: j.verdict for j in judgement[NAME].of_kind(CaseKind.PULLBACK)}
    assert {j.case: j.verdict for j in again.of_kind(CaseKind.PULLBACK)} == kept
    stored = weanj.diff(NAME)[NAME]  # the store's gradient files hold them
    assert {j.case: j.verdict for j in stored.of_kind(CaseKind.PULLBACK)} == kept
    case = _case("jax-loop", "jax-stiff")
    (data,) = judgement.to_json()["examples"]
    (row,) = [j for j in data["pullbacks"] if j["case"] == case]
    assert row["verdict"] == "FAIL" and row["array"] == "uT::x" and row["kind"] == "pullback"
    assert case in places().check_file(NAME).read_text()
    assert "jax-loop vs jax-stiff (Jᵀw uT by x):" in "\n".join(judgement.lines())
    for fmt in ("html", "md"):
        page = root / f"pulled.{fmt}"
        weanj.report([NAME], out=page, judgement=judgement)
        assert case in page.read_text() and "Jᵀw" in page.read_text()
    assert "where jax-stiff differs from jax-loop in uT::x" in (root / "pulled.html").read_text()
