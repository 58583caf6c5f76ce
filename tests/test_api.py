"""The notebook API outside inputs and store: `import weanj`, the seed notebook's calls,
the gradient checks for any function (`taylor_test`, `jvp_check`, `fd_check`),
`time_median`, `write_results`, and the one-line refusals of the notebook helpers' own
arguments. (The typed model: test_model.py; where the project is: test_project_root.py.)"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time

import numpy as np
import pytest

import weanj
from weanj._pipeline.bench import _measure

from .helpers import PYTHON, subprocess_env

# Optional or heavy modules that `import weanj` must not pull in.
HEAVY = ("juliacall", "jax", "jaxlib", "kernex", "enzyme_ad", "matplotlib")

_PROBE = (
    "import json, os, sys, weanj; "
    f"print(json.dumps({{'prealloc': os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE'), "
    f"'heavy': sorted(m for m in {HEAVY!r} if m in sys.modules)}}))"
)


def _import_weanj(env: dict[str, str]) -> dict:
    out = subprocess.run(
        [PYTHON, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(out.stdout)


def test_import_sets_preallocate_and_stays_light():
    env = subprocess_env()
    env.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)
    probe = _import_weanj(env)
    assert probe == {"prealloc": "false", "heavy": []}


def test_import_leaves_a_preset_preallocate_alone():
    probe = _import_weanj(subprocess_env(XLA_PYTHON_CLIENT_PREALLOCATE="true"))
    assert probe["prealloc"] == "true"


def test_notebook_functions_exist():
    for name in ("load_inputs", "save_gradient", "fd_check", "time_median", "write_results"):
        assert callable(getattr(weanj, name)), name
    for name in ("Array", "Param", "Example", "Inputs", "Gradient", "variant", "evaluate"):
        assert hasattr(weanj, name), name


# --- the seed notebook, as docs/notebook.md shows it ---------------------------------


def _lex_loss(theta, uobs, K):
    """The 02-gauss-seidel loss in plain Python: K in-place sweeps, j outer, i inner (the
    Julia loop order), from u⁰ = 0, then Σ (u − uobs)² over the interior."""
    n = theta.shape[0]
    h2 = 1.0 / (n + 1) ** 2
    u = [[0.0] * (n + 2) for _ in range(n + 2)]
    t = theta.tolist()
    for _ in range(K):
        for j in range(1, n + 1):
            for i in range(1, n + 1):
                u[i][j] = (
                    h2 * t[i - 1][j - 1] + u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1]
                ) / 4
    interior = np.array(u)[1:-1, 1:-1]
    return float(np.sum((interior - uobs) ** 2))


def test_the_seed_notebook_calls(project):
    import jax

    EX = "02-gauss-seidel"
    d = weanj.load_inputs(EX)
    assert (
        set(d) == {"theta", "uobs", "K", "sha256"} and d["sha256"] == weanj.read_inputs(EX).digest
    )
    v = weanj.variant(EX, "jax-lex")
    g = v.grad(d["theta"], d["uobs"], d["K"])
    assert g.shape == d["theta"].shape and g.dtype == np.float64
    loss = float(v.loss(d["theta"], d["uobs"], d["K"]))
    assert loss == pytest.approx(_lex_loss(d["theta"], d["uobs"], d["K"]), rel=1e-12)
    err = weanj.fd_check(lambda t: v.loss(t, d["uobs"], d["K"]), d["theta"], g, n=10, h=1e-2)
    assert err < 1e-8  # the loss is quadratic: central differences are exact but rounding
    # The same gradient against central differences of the plain-Python loss.
    rng = np.random.default_rng(11)
    for _ in range(2):
        direction = rng.standard_normal(d["theta"].shape)
        direction /= np.linalg.norm(direction)
        plus = _lex_loss(d["theta"] + 1e-2 * direction, d["uobs"], d["K"])
        minus = _lex_loss(d["theta"] - 1e-2 * direction, d["uobs"], d["K"])
        central = (plus - minus) / 2e-2
        assert abs(central - float(np.sum(np.asarray(g) * direction))) <= 1e-8 * abs(central)

    path = weanj.save_gradient(EX, "jax-lex", g)
    assert path == project / "results" / EX / "gradients" / "jax-lex.h5"
    stored = weanj.load_gradient(EX, "jax-lex")
    np.testing.assert_array_equal(stored.gradient, np.asarray(g))
    assert stored.key == weanj.read_inputs(EX).key("float64")

    seconds = weanj.time_median(
        lambda: v.grad(d["theta"], d["uobs"], d["K"]), sync=jax.block_until_ready, samples=3
    )
    assert 0 < seconds < 60
    record = _record(variant="jax-lex", grad_s=seconds, forward_s=seconds, K=d["K"])
    out = weanj.write_results(EX, "jax", "cpu", [record], env={"machine": "test"})
    assert json.loads(out.read_text())["records"][0]["grad_s"] == seconds


# --- fd_check -----------------------------------------------------------------------


def _quadratic(shape=(4, 5), seed=3):
    """f(x) = ½ x·Ax + b·x with A symmetric positive definite; ∇f = Ax + b."""
    rng = np.random.default_rng(seed)
    m = int(np.prod(shape))
    B = rng.standard_normal((m, m))
    A = B @ B.T + m * np.eye(m)
    b = rng.standard_normal(m)
    x = rng.standard_normal(shape)

    def f(y):
        y = np.ravel(y)
        return 0.5 * y @ A @ y + b @ y

    return f, x, (A @ np.ravel(x) + b).reshape(shape)


def test_fd_check_accepts_the_exact_gradient_of_a_quadratic():
    f, x, g = _quadratic()
    assert weanj.fd_check(f, x, g, n=10, h=1e-2) < 1e-10


def test_fd_check_measures_a_wrong_gradient():
    f, x, g = _quadratic()
    # Along every direction v: D = g·v exactly, so 2g gives |D - 2D| / |2D| = 1/2 and -g
    # gives |D + D| / |D| = 2.
    assert weanj.fd_check(f, x, 2 * g) == pytest.approx(0.5, rel=1e-8)
    assert weanj.fd_check(f, x, -g) == pytest.approx(2.0, rel=1e-8)
    wrong = g.copy()
    wrong[1, 2] += 10 * np.abs(g).max()
    assert weanj.fd_check(f, x, wrong) > 0.1


def test_fd_check_uses_n_seeded_directions():
    f, x, g = _quadratic()
    calls = []

    def counted(y):
        calls.append(y.copy())
        return f(y)

    wrong = g + 0.3  # an error that depends on the direction
    first = weanj.fd_check(counted, x, wrong, n=7, h=1e-2, seed=5)
    assert len(calls) == 2 * 7
    # x ± h·v with |v| = 1
    assert np.linalg.norm(calls[0] - x) == pytest.approx(1e-2, rel=1e-12)
    assert weanj.fd_check(f, x, wrong, n=7, h=1e-2, seed=5) == first
    assert weanj.fd_check(f, x, wrong, n=7, h=1e-2, seed=6) != first


def test_fd_check_reports_nonfinite_and_rejects_bad_arguments():
    f, x, g = _quadratic()
    assert weanj.fd_check(lambda y: float("nan"), x, g) == float("inf")
    with pytest.raises(weanj.InputError, match="shape"):
        weanj.fd_check(f, x, g[:, :-1])
    with pytest.raises(weanj.InputError):
        weanj.fd_check(f, x, g, n=0)
    with pytest.raises(weanj.InputError):
        weanj.fd_check(f, x, g, h=0.0)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"seed": -1}, "fd_check: seed must be an integer >= 0, got -1"),
        ({"n": 2.0}, "fd_check: n must be an integer >= 1 (directions), got 2.0"),
        ({"h": "0.01"}, "fd_check: h must be a number > 0 (the step), got '0.01'"),
        ({"h": float("nan")}, "fd_check: h must be a finite number > 0"),
        ({"n": True}, "fd_check: n must be an integer >= 1"),
    ],
    ids=["negative-seed", "float-n", "text-h", "nan-h", "bool-n"],
)
def test_fd_check_names_the_argument_it_refuses(kwargs, words):
    f, x, g = _quadratic()
    with pytest.raises(weanj.InputError) as raised:
        weanj.fd_check(f, x, g, **kwargs)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_fd_check_needs_a_function_returning_a_scalar():
    _, x, g = _quadratic()
    with pytest.raises(weanj.InputError) as raised:
        weanj.fd_check(lambda y: np.ravel(y) ** 2, x, g)
    assert str(raised.value) == (
        "fd_check: f must return a real scalar, got an array of shape (20,) (float64)"
    )
    with pytest.raises(weanj.InputError, match="fd_check: f must be a function, got int"):
        weanj.fd_check(3, x, g)


# --- taylor_test and jvp_check: the checks of weanj check, for any function ----------------


def _nonlinear(seed=4):
    """f(y) = Σ sin(y)·y² + (Σ y)³/10 at a random point, its gradient by hand, and a copy
    of that gradient wrong by 1 % in one entry."""
    x = np.random.default_rng(seed).standard_normal(12)

    def f(y):
        return float(np.sum(np.sin(y) * y**2) + np.sum(y) ** 3 / 10)

    g = np.cos(x) * x**2 + 2 * x * np.sin(x) + 3 * np.sum(x) ** 2 / 10
    wrong = g.copy()
    wrong[3] *= 1.01
    return f, x, g, wrong


def test_taylor_test_falls_with_rate_two_for_the_gradient_and_one_for_a_wrong_one():
    f, x, g, wrong = _nonlinear()
    right = weanj.taylor_test(f, x, g)
    assert isinstance(right, weanj.TaylorResult) and right.passes
    assert len(right.asymptotic) == 2  # the default: two directions
    assert min(min(rates) for rates in right.asymptotic) > 1.9
    assert all(1.9 < r < 2.1 for rates in right.rates for r in rates)  # every resolved step
    bad = weanj.taylor_test(f, x, wrong)
    assert not bad.passes
    assert max(max(rates) for rates in bad.asymptotic) < 1.1
    assert min(min(rates) for rates in bad.asymptotic) > 0.9
    # More directions, another seed: the same verdicts.
    assert weanj.taylor_test(f, x, g, directions=3, seed=7).passes
    assert not weanj.taylor_test(f, x, wrong, directions=3, seed=7).passes
    with pytest.raises(weanj.InputError, match="taylor_test: g has shape"):
        weanj.taylor_test(f, x, g[:-1])


def test_jvp_check_compares_forward_mode_with_the_claimed_gradient():
    import jax.numpy as jnp

    _, x, g, wrong = _nonlinear()

    def f(y):
        return jnp.sum(jnp.sin(y) * y**2) + jnp.sum(y) ** 3 / 10

    dx = np.random.default_rng(9).standard_normal(x.shape)
    right = weanj.jvp_check(f, x, g, dx=dx)
    assert isinstance(right, weanj.JvpResult) and right.passes
    assert right.reverse == pytest.approx(float(g @ dx), rel=1e-15)
    assert right.forward == pytest.approx(float(g @ dx), rel=1e-13)  # jax.jvp, in float64
    assert right.error < 1e-13
    bad = weanj.jvp_check(f, x, wrong, dx=dx)
    assert not bad.passes and bad.forward == right.forward
    # |0.01 g₃ dx₃| / Σ|g_i dx_i|: the error the wrong entry makes, relative
    expected = abs(0.01 * g[3] * dx[3]) / float(np.sum(np.abs(wrong) * np.abs(dx)))
    assert bad.error == pytest.approx(expected, rel=1e-6) and bad.error > 1e-5
    assert weanj.jvp_check(f, x, g).passes  # a seeded direction of its own


# --- time_median ----------------------------------------------------------------------


class _FakeClock:
    """A `time` stand-in whose clock moves only when a timed function says so."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


def test_time_median_with_a_fake_clock(monkeypatch):
    clock = _FakeClock()
    monkeypatch.setattr(_measure, "time", clock)
    durations = [100.0, 3.0, 1.0, 2.0, 5.0, 4.0]  # the first call is the warmup
    calls, synced = [], []

    def fn():
        clock.now += durations[len(calls)]
        calls.append(len(calls))
        return len(calls)

    def sync(result):
        clock.now += 0.5  # inside the timed interval: the clock stops after sync
        synced.append(result)

    assert weanj.time_median(fn, sync=sync, samples=5) == pytest.approx(3.5)
    assert len(calls) == 6 and synced == [1, 2, 3, 4, 5, 6]

    calls.clear()
    # Two warmups (100, 3), then an even count: the mean of the middle two of [1, 2, 5, 4].
    assert weanj.time_median(fn, samples=4, warmup=2) == pytest.approx(3.0)
    assert len(calls) == 6

    calls.clear()
    assert weanj.time_median(fn, samples=5, warmup=0) == pytest.approx(3.0)  # 100,3,1,2,5
    assert len(calls) == 5


def test_time_median_measures_at_least_the_sleep():
    # time.sleep never returns early, so this bound holds on any machine, however busy.
    assert weanj.time_median(lambda: time.sleep(0.01), samples=3, warmup=0) >= 0.01


def test_time_median_rejects_bad_counts():
    with pytest.raises(weanj.InputError):
        weanj.time_median(lambda: None, samples=0)
    with pytest.raises(weanj.InputError):
        weanj.time_median(lambda: None, warmup=-1)


# --- write_results --------------------------------------------------------------------

FIELDS = ("dtype", "variant", "N", "n", "K", "forward_s", "grad_s", "compile_s", "peak_mem_bytes")


def _record(**overrides):
    record = {
        "dtype": "float64",
        "variant": "jax-jacobi",
        "N": np.int64(66),
        "n": 64,
        "K": 20,
        "forward_s": np.float64(1.5e-3),
        "grad_s": 4.25e-3,
        "compile_s": 0.5,
        "peak_mem_bytes": None,
        "note": "extra fields are kept",
    }
    record.update(overrides)
    return record


def test_write_results_schema(project):
    records = [_record(), _record(n=32, N=34)]
    path = weanj.write_results("01-jacobi", "jax", "cpu", records, env={"machine": "test"})
    assert path == project / "results" / "01-jacobi" / "bench" / "jax-cpu.json"
    payload = json.loads(path.read_text())
    assert set(payload) == {"environment", "records"}
    assert payload["environment"] == {"machine": "test"}
    assert len(payload["records"]) == 2
    first = payload["records"][0]
    assert set(FIELDS) <= set(first)
    assert first["N"] == 66 and isinstance(first["N"], int)
    assert first["forward_s"] == 1.5e-3 and first["peak_mem_bytes"] is None
    assert first["note"] == "extra fields are kept"
    assert payload["records"][1]["n"] == 32


def test_write_results_default_environment(project):
    import jax

    path = weanj.write_results("01-jacobi", "jax", "cpu", [_record()])
    env = json.loads(path.read_text())["environment"]
    assert env["jax"] == jax.__version__
    assert env["device"] == "cpu"
    dt.datetime.fromisoformat(env["date"])


def test_write_results_missing_field(project):
    record = _record()
    del record["compile_s"]
    with pytest.raises(weanj.InputError, match="compile_s"):
        weanj.write_results("01-jacobi", "jax", "cpu", [_record(), record], env={})
    assert not (project / "results" / "01-jacobi" / "bench").exists()


def test_write_results_is_atomic(project):
    path = weanj.write_results("01-jacobi", "jax", "cpu", [_record()], env={})
    before = path.read_bytes()
    # A mistyped field is refused before anything is written (one line)...
    with pytest.raises(weanj.InputError, match="grad_s"):
        weanj.write_results("01-jacobi", "jax", "cpu", [_record(grad_s=object())], env={})
    assert path.read_bytes() == before
    # ...and so is an extra field JSON cannot hold: the previous file stays, no temporary
    # file is left.
    with pytest.raises(weanj.InputError, match="JSON"):
        weanj.write_results("01-jacobi", "jax", "cpu", [_record(note=object())], env={})
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["jax-cpu.json"]


def test_write_results_unknown_example(project):
    with pytest.raises(weanj.UnknownNameError, match="01-jacobi"):
        weanj.write_results("03-nope", "jax", "cpu", [_record()], env={})


# --- the notebook helpers' own arguments ------------------------------------------------


@pytest.mark.parametrize(
    "call, what",
    [
        (lambda: weanj.load_inputs("01-jacobi", "mine\0.h5"), "path"),
        (lambda: weanj.read_inputs("01-jacobi", "mine\0.h5"), "path"),
        (lambda: weanj.write_inputs("01-jacobi", "new\0.h5"), "path"),
        (lambda: weanj.evaluate("01-jacobi", "jax-jacobi", inputs="mine\0.h5"), "inputs"),
        (lambda: weanj.load_gradient("01-jacobi", "jax-jacobi", path="g\0.h5"), "path"),
        (
            lambda: weanj.save_gradient(
                "01-jacobi", "jax-jacobi", np.zeros((64, 64)), path="g\0.h5"
            ),
            "path",
        ),
    ],
    ids=["load_inputs", "read_inputs", "write_inputs", "evaluate", "load_gradient", "save"],
)
def test_a_nul_byte_in_a_path_is_one_input_error_naming_the_argument(project, call, what, request):
    """A raw `ValueError: embedded null byte` from the file system before; nothing is
    read, run or written. The line names the function and the argument."""
    function = {"save": "save_gradient"}.get(request.node.callspec.id, request.node.callspec.id)
    before = sorted(project.rglob("*"))
    with pytest.raises(weanj.InputError) as raised:
        call()
    assert str(raised.value).startswith(f"{function}: {what} '"), str(raised.value)
    assert "contains a NUL byte" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert sorted(project.rglob("*")) == before


def test_a_path_that_is_no_path_is_one_input_error(project):
    with pytest.raises(weanj.InputError, match=r"path must be a file path \(str or Path\), got 5"):
        weanj.load_inputs("01-jacobi", 5)


# --- wrong calls: one line naming the argument and what it accepts ---------------------------

_X = np.ones(3)


def _square(t):
    return float(np.sum(np.asarray(t) ** 2))


WRONG_CALLS = {
    "check(123)": (lambda: weanj.check(123), weanj.InputError, "examples"),
    "check variants=5": (
        lambda: weanj.check("01-jacobi", variants=5),
        weanj.InputError,
        "variants",
    ),
    "check timeout text": (
        lambda: weanj.check("01-jacobi", timeout="ten"),
        weanj.InputError,
        "timeout",
    ),
    "check fresh text": (lambda: weanj.check("01-jacobi", fresh="yes"), weanj.InputError, "fresh"),
    "check dtype": (lambda: weanj.check("01-jacobi", dtype="float16"), weanj.InputError, "dtype"),
    "check bad keyword": (lambda: weanj.check("01-jacobi", colour=True), TypeError, "colour"),
    "diff(1)": (lambda: weanj.diff(1), weanj.InputError, "examples"),
    "diff unknown": (lambda: weanj.diff("99-nope"), weanj.UnknownNameError, "example"),
    "taylor_test loss text": (lambda: weanj.taylor_test("x", _X, 2 * _X), weanj.InputError, "loss"),
    "taylor_test x text": (lambda: weanj.taylor_test(_square, "x", _X), weanj.InputError, "x "),
    "taylor_test g text": (lambda: weanj.taylor_test(_square, _X, "g"), weanj.InputError, "g "),
    "evaluate example 1": (lambda: weanj.evaluate(1, "jax-jacobi"), weanj.InputError, "example"),
    "evaluate variant 3": (lambda: weanj.evaluate("01-jacobi", 3), weanj.InputError, "variant"),
    "evaluate unknown variant": (
        lambda: weanj.evaluate("01-jacobi", "jax-nope"),
        weanj.UnknownNameError,
        "variant",
    ),
    "evaluate params list": (
        lambda: weanj.evaluate("01-jacobi", "jax-jacobi", params=[1]),
        weanj.InputError,
        "params",
    ),
    "evaluate unknown parameter": (
        lambda: weanj.evaluate("01-jacobi", "jax-jacobi", params={"Q": 1}),
        weanj.InputError,
        "parameter Q",
    ),
    "evaluate timeout text": (
        lambda: weanj.evaluate("01-jacobi", "jax-jacobi", timeout="x"),
        weanj.InputError,
        "timeout",
    ),
    "evaluate inputs 5": (
        lambda: weanj.evaluate("01-jacobi", "jax-jacobi", inputs=5),
        weanj.InputError,
        "inputs",
    ),
    "variant 5": (lambda: weanj.variant("01-jacobi", 5), weanj.InputError, "variant"),
    "variant None example": (
        lambda: weanj.variant(None, "jax-jacobi"),
        weanj.InputError,
        "example",
    ),
    "load_inputs 3.5": (lambda: weanj.load_inputs(3.5), weanj.InputError, "example"),
    "load_inputs path 5": (lambda: weanj.load_inputs("01-jacobi", 5), weanj.InputError, "path"),
    "load_inputs bad keyword": (
        lambda: weanj.load_inputs("01-jacobi", file="x.h5"),
        TypeError,
        "file",
    ),
    "generate_inputs seed -1": (
        lambda: weanj.generate_inputs("01-jacobi", seed=-1),
        weanj.InputError,
        "seed",
    ),
    "generate_inputs seed text": (
        lambda: weanj.generate_inputs("01-jacobi", seed="x"),
        weanj.InputError,
        "seed",
    ),
    "tolerance unknown": (lambda: weanj.tolerance("float16"), weanj.InputError, "dtype"),
}


@pytest.mark.parametrize("call", WRONG_CALLS, ids=list(WRONG_CALLS))
def test_a_wrong_call_is_one_line_naming_the_argument(call):
    do, kind, named = WRONG_CALLS[call]
    with pytest.raises(kind) as info:
        do()
    assert type(info.value) is kind or isinstance(info.value, weanj.WeanjError)
    message = str(info.value)
    assert named in message, message
    if isinstance(info.value, weanj.InputError):
        assert "\n" not in message, message
        assert "must be" in message or "no parameter" in message, message


def test_a_seed_of_the_wrong_kind_in_the_example_is_one_line():
    ex = weanj.Example(
        name="98-seeded", arrays=("x",), wrt="x", seed=-3, generate=lambda s: {"x": np.ones(3)}
    )
    from weanj._io._inputs import generate_inputs

    with pytest.raises(weanj.InputError, match=r"98-seeded: the inputs' seed must be an integer"):
        generate_inputs(ex)


def test_weanj_new_with_examples_as_text_is_one_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.weanj]\nexamples = "a.b"\n')
    from .projects import weanj_in

    r = weanj_in(tmp_path, "new", "30-foo")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"weanj: error: {tmp_path / 'pyproject.toml'}: [tool.weanj] examples must be a list of "
        'module names, e.g. examples = ["kernels.smooth"]; nothing was written'
    ]
    assert not (tmp_path / "examples").exists()
