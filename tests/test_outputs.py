"""A port's forward outputs, judged like gradients (issue 72; docs/outputs.md).

The kernel: T steps of a nonlinear periodic stencil on an N×N field x, `u ← u/2 +
(the four neighbours)/8 + sin(u)/20`, its output `uT` the field after T steps and its loss
`Σ uT²`, which a mirror of uT leaves unchanged. `jax-loop` and `jax-scan` are correct;
`jax-mirror` returns its output mirrored along the first axis from T = 4 on (its loss and
gradient are the correct ones): only the output comparison can see it. The field is
computed again here in numpy, independently.
"""

from __future__ import annotations

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._model._verdicts import CaseKind, Verdict
from weanj._places import places

from .projects import pytest_weanj_in, run_in, user_env, write_project

NAME = "94-mirror"
N, T, FIRST = 8, 6, 4  # the mirror starts at step FIRST


def _generate(seed):
    return {"x": np.random.default_rng(seed).standard_normal((N, N))}


def _step(u):
    around = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1)
    return 0.5 * u + 0.125 * around + 0.05 * jnp.sin(u)


def numpy_field(x: np.ndarray, steps: int) -> np.ndarray:
    """The field after `steps` steps, in numpy (the same order of operations)."""
    u = np.asarray(x, np.float64)
    for _ in range(steps):
        around = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)
        u = 0.5 * u + 0.125 * around + 0.05 * np.sin(u)
    return u


def _register():
    ex = weanj.register_example(
        weanj.Example(
            name=NAME,
            arrays=("x",),
            wrt="x",
            params=(weanj.Param("T", default=T),),
            generate=_generate,
            outputs=("uT",),
        )
    )

    @weanj.jax_variant(ex, "jax-loop", family="stencil")
    def loop(x, T):
        u = x
        for _ in range(T):
            u = _step(u)
        return jnp.sum(u * u), {"uT": u}

    @weanj.jax_variant(ex, "jax-scan", family="stencil")
    def scan(x, T):
        u, _ = jax.lax.scan(lambda u, _: (_step(u), None), x, None, length=T)
        return jnp.sum(u * u), {"uT": u}

    @weanj.jax_variant(ex, "jax-mirror", family="stencil")
    def mirror(x, T):
        """Planted: from step FIRST on, the field it returns is mirrored."""
        u, _ = jax.lax.scan(lambda u, _: (_step(u), None), x, None, length=T)
        return jnp.sum(u * u), {"uT": u[::-1] if T >= FIRST else u}

    return ex


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The example checked once (float64 and float32), fresh: (judgement, root)."""
    root = tmp_path_factory.mktemp("mirror")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        _register()
        weanj.write_inputs(NAME)
        judgement = weanj.check(NAME, fresh=True, say=lambda line: None)
        for fmt in ("html", "md"):  # the page of the live judgement, and of check.json
            weanj.report([NAME], out=root / f"live.{fmt}", judgement=judgement)
            weanj.report([NAME], out=root / f"stored.{fmt}")
        yield judgement, root
    _registry.unregister_example(NAME)


def _output_case(a: str, b: str) -> str:
    return f"{NAME}::output::uT::{a}~{b}"


def test_a_mirrored_output_is_caught_by_the_output_comparisons_alone(checked):
    judgement, _ = checked
    ej = judgement[NAME]
    x = np.asarray(ej.inputs.arrays["x"])
    field = numpy_field(x, T)
    # the outputs are the field, as numpy computes it independently
    for label in ("jax-loop", "jax-scan"):
        assert np.allclose(ej.subjects[label].outputs["uT"], field, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(ej.subjects["jax-mirror"].outputs["uT"], field[::-1], rtol=1e-13)
    failing = {j.case for j in ej.failures}
    # the output and its pullback Jᵀw (the mirrored field's Jacobian is mirrored too)
    assert failing == {
        _output_case("jax-loop", "jax-mirror"),
        _output_case("jax-scan", "jax-mirror"),
        f"{NAME}::pullback::uT::x::jax-loop~jax-mirror",
        f"{NAME}::pullback::uT::x::jax-scan~jax-mirror",
    }
    j = ej.by_case()[_output_case("jax-loop", "jax-mirror")]
    assert j.kind == CaseKind.OUTPUT and j.array == "uT" and j.verdict == Verdict.FAIL
    mirrored = np.abs(field - field[::-1])
    assert j.comparison.max_abs == pytest.approx(float(mirrored.max()), rel=1e-12)
    assert j.comparison.differing == int(np.count_nonzero(mirrored > 1e-11 * np.abs(field).max()))
    # everything else agrees: loss, gradient, Taylor, jvp, the dot-product test
    agreeing = ej.by_case()[f"{NAME}::stencil::jax-loop~jax-mirror"]
    assert agreeing.verdict == Verdict.OK and agreeing.comparison.max_abs == 0.0
    assert all(j.verdict == Verdict.OK for j in ej.judgements if j.kind.is_check)
    assert set(ej.suspects()) == {"jax-mirror"}
    # where they part ways, in both index bases
    text = "\n".join(judgement.lines())
    assert "jax-loop vs jax-mirror (output uT):" in text
    assert "numpy slice" in text and "Julia range" in text
    assert f"{_output_case('jax-loop', 'jax-mirror')}: FAIL: max|Δ|" in text


def test_float32_outputs_are_judged_against_their_own_float64_run(checked):
    judgement, _ = checked
    ej = judgement[NAME]
    for label in ("jax-loop", "jax-scan", "jax-mirror"):
        j = ej.by_case()[_output_case(label, f"{label}@float32")]
        assert j.verdict == Verdict.OK and 0 < j.comparison.max_rel < 1e-4, j.reason
        assert ej.subjects[f"{label}@float32"].outputs["uT"].dtype == np.float32


def test_outputs_add_no_execution_and_their_jacobian_one_backward_each(checked):
    judgement, _ = checked
    ej = judgement[NAME]
    for label in ("jax-loop", "jax-scan"):
        cost = ej.subjects[label].cost
        assert cost.of("evaluation") == (1, 1) and cost.of("jacobian") == (0, 1)
        assert cost.of("jvp") == (0, 0), cost.describe()
    dots = [j for j in ej.of_kind(CaseKind.DOT)]
    assert {j.subjects[0] for j in dots} == {"jax-loop", "jax-scan", "jax-mirror"}
    for j in dots:
        (o,) = j.result.outputs
        assert j.result.by == j.subjects[0] and o.error < 1e-13, j.reason


def test_a_recheck_reuses_the_outputs_and_judges_alike(checked, monkeypatch):
    judgement, root = checked
    monkeypatch.setenv("WEANJ_ROOT", str(root))
    again = weanj.check(NAME, say=lambda line: None)
    before, after = judgement[NAME], again[NAME]
    assert all(why.startswith("reused") for why in after.reuse.values()), after.reuse
    assert {j.case: j.verdict for j in after.judgements} == {
        j.case: j.verdict for j in before.judgements
    }
    for label, g in before.subjects.items():
        assert np.array_equal(after.subjects[label].outputs["uT"], g.outputs["uT"]), label
        assert after.subjects[label].jacobian == g.jacobian


def test_diff_and_every_view_show_the_outputs(checked, monkeypatch):
    judgement, root = checked
    monkeypatch.setenv("WEANJ_ROOT", str(root))
    case = _output_case("jax-loop", "jax-mirror")
    stored = weanj.diff(NAME)[NAME]
    assert {j.case: j.verdict for j in stored.of_kind(CaseKind.OUTPUT)} == {
        j.case: j.verdict for j in judgement[NAME].of_kind(CaseKind.OUTPUT)
    }
    (data,) = judgement.to_json()["examples"]
    (row,) = [j for j in data["outputs"] if j["case"] == case]
    assert row["verdict"] == "FAIL" and row["array"] == "uT" and row["kind"] == "output"
    assert data["gradients"][0]["outputs"]["uT"]["shape"] == [N, N]
    checkfile = json.loads(places().check_file(NAME).read_text())
    assert case in json.dumps(checkfile)
    for fmt in ("html", "md"):  # written right after the check (`checked`)
        live, again = (root / f"{which}.{fmt}" for which in ("live", "stored"))
        assert case in live.read_text() and "output uT" in live.read_text()
        # check.json's page is the live one (but for the second it was judged at)
        assert _undated(live.read_text()) == _undated(again.read_text())
    assert "where jax-mirror differs from jax-loop in uT" in (root / "live.html").read_text()
    assert case in judgement._repr_html_()


def _undated(page: str) -> str:
    return re.sub(r"judged \d{4}-\d\d-\d\dT[\d:]+\+00:00", "judged …", page)


def test_bisect_finds_the_first_step_where_the_output_parts_ways(checked, monkeypatch):
    from weanj._commands.bisect import bisect
    from weanj._model import VariantRun

    _, root = checked
    monkeypatch.setenv("WEANJ_ROOT", str(root))
    cat = _registry.catalog(NAME)
    a, b = (VariantRun(cat.find(name), "float64") for name in ("jax-loop", "jax-mirror"))
    found = bisect(cat, a, b, over="T", params={"T": T}, say=lambda line: None)
    assert found.first == FIRST
    assert any(j.kind == CaseKind.OUTPUT and j.failed for j in found.outcome.judgements)


def test_a_loss_without_its_outputs_is_the_variants_fault(tmp_path, monkeypatch):
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    ex = weanj.register_example(
        weanj.Example("93-forgot", arrays=("x",), wrt="x", generate=_generate, outputs=("uT",))
    )
    try:
        weanj.jax_variant(ex, "jax-forgot", family="f", loss=lambda x: jnp.sum(x * x))
        weanj.write_inputs("93-forgot")
        j = weanj.check("93-forgot", dtype="float64", say=lambda line: None)["93-forgot"]
        (run,) = j.of_kind(CaseKind.RUN)
        assert run.verdict == Verdict.ERROR
        assert "returned no outputs: 93-forgot declares outputs uT" in run.reason
    finally:
        _registry.unregister_example("93-forgot")


CORRECT = """
import jax, jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="21-fields", arrays=("x", "w"), wrt=("x", "w"), outputs=("uT",), order=2,
    generate=lambda seed: {
        "x": np.random.default_rng(seed).standard_normal((8, 8)),
        "w": np.random.default_rng(seed + 1).standard_normal((8, 8)),
    },
))


def step(u, w):
    around = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1)
    return 0.5 * u + 0.125 * around + 0.05 * jnp.sin(u) * w


@weanj.jax_variant(ex, "jax-loop", family="f")
def loop(x, w):
    u = x
    for _ in range(5):
        u = step(u, w)
    return jnp.sum(u * u * w), {"uT": u}


@weanj.jax_variant(ex, "jax-scan", family="f")
def scan(x, w):
    u, _ = jax.lax.scan(lambda u, _: (step(u, w), None), x, None, length=5)
    return jnp.sum(u * u * w), {"uT": u}
"""


def test_no_false_alarm_on_the_standin_tpu_nor_at_the_second_order(tmp_path):
    """Correct ports pass every new check in float64 and float32 on the CPU, and their
    outputs pass on the stand-in TPU (judged against the CPU float64 reference)."""
    from .test_devices import STANDIN

    root = write_project(tmp_path, {"kernels/fields.py": CORRECT})
    r = run_in(
        root, "-m", "weanj", "check", "--device", "tpu", env=user_env(**STANDIN), timeout=900
    )
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((root / "results" / "21-fields" / "check.json").read_text())
    verdicts = {c["case"]: c["verdict"]["$verdict"] for c in data["judgement"]["judgements"]}
    outputs = {c: v for c, v in verdicts.items() if "::output::" in c}
    for other in ("jax-scan", "jax-loop@float32", "jax-loop@tpu", "jax-loop@float32@tpu"):
        assert f"21-fields::output::uT::jax-loop~{other}" in outputs, sorted(outputs)
    assert set(outputs.values()) == {"ok"}, outputs
    assert verdicts["21-fields::hvp::x::jax-loop~jax-scan"] == "ok"
    for kind in ("taylor2", "symmetry", "dot"):
        for array in ("x", "w"):
            assert verdicts[f"21-fields::f::jax-scan::{kind}::{array}"] == "ok", kind
    # the pytest items carry the case ids (the evaluations reused from the check's records)
    r = pytest_weanj_in(root, "-v", timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    for case in ("output::uT::jax-loop~jax-scan", "hvp::x::jax-loop~jax-scan"):
        assert re.search(rf"21-fields::{case} PASSED", r.stdout), r.stdout


def test_a_julia_variants_outputs_are_judged_and_an_answer_without_them_is_its_error(
    tmp_path, monkeypatch
):
    """A Julia variant of an example with outputs (its kernel returns them beside its
    loss: docs/julia.md) gets them from the worker's `loss_and_grad` answer, after its
    gradient arrays (the worker's answer stood in here, numpy's loss, gradient and
    output: nothing claims to be Julia's), and they are judged as a JAX variant's; an
    answer without them is the variant's error, in one line. Its evaluation beyond the
    gradient is tests/test_julia_outputs.py's."""
    from weanj._backends import _julia_calls, _julia_client

    answered = {"outputs": True}

    def answer(request, arrays, **_):
        assert request["outputs"] == ["u"]
        x = np.asarray(arrays[0])
        loss = [np.asarray(np.sum(x * x))]
        if request["op"] == "loss":
            return {"reply": "loss"}, loss
        outputs = [x.copy()] if answered["outputs"] else []
        return {"reply": request["op"], "outputs": ["u"] if outputs else []}, [
            *loss,
            2 * x,
            *outputs,
        ]

    monkeypatch.setattr(_julia_client, "request", answer)
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    ex = weanj.register_example(
        weanj.Example(
            "92-julia-outputs", arrays=("x",), wrt="x", generate=_generate, outputs=("u",)
        )
    )
    try:
        kernel = _julia_calls.JuliaKernel(
            ex.name, "jax-as-julia", "sq_loss", None, ("x",), ("x",), (), outputs=("u",)
        )
        (loss, outputs), g = _julia_calls.julia_functions(ex, kernel).value_and_grad(
            np.ones((N, N))
        )
        assert float(loss) == N * N and np.all(g == 2.0) and np.all(outputs["u"] == 1.0)

        def as_julia(example, fn, grad):  # the Julia backend's plain functions, on numpy
            return _julia_calls.julia_functions(example, kernel)._replace(
                placed=None, checking=None
            )

        weanj.jax_variant(ex, "jax-sq", family="f", loss=lambda x: (jnp.sum(x * x), {"u": x}))
        weanj.jax_variant(
            ex,
            "jax-as-julia",
            family="f",
            loss=lambda x: x,
            functions=as_julia,
            dtypes=("float64",),
        )
        weanj.write_inputs(ex.name)
        ej = weanj.check(ex.name, dtype="float64", say=lambda line: None)[ex.name]
        (case,) = ej.of_kind(CaseKind.OUTPUT)
        assert case.verdict == Verdict.OK and case.comparison.max_abs == 0.0
        answered["outputs"] = False
        ej = weanj.check(ex.name, dtype="float64", fresh=True, say=lambda line: None)[ex.name]
        run = ej.run_of("jax-as-julia")
        assert run.verdict == Verdict.ERROR
        assert "the Julia worker answered 0 outputs ([]) for u" in run.reason
    finally:
        _registry.unregister_example("92-julia-outputs")
