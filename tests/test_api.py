"""The notebook API outside inputs and store: `import weanj`, the seed notebook's calls,
`fd_check`, `time_median`, `write_results`, where the project root is, the typed model
(`weanj.Param`, `weanj.Array`, `weanj.Example`) and the argument check of every variant call."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time

import numpy as np
import pytest

import weanj
import weanj._project

from .conftest import REPO
from .helpers import (
    PYTHON,
    TYPED,
    registered_typed,
    subprocess_env,
    typed_arrays,
    typed_gradient,
)

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


# --- time_median ----------------------------------------------------------------------


class _FakeClock:
    """A `time` stand-in whose clock moves only when a timed function says so."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


def test_time_median_with_a_fake_clock(monkeypatch):
    clock = _FakeClock()
    monkeypatch.setattr(weanj._timing, "time", clock)
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


# --- project root ---------------------------------------------------------------------


def test_root_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path / "elsewhere"))
    # A root that does not exist is a mistake (a typo), not an empty project.
    with pytest.raises(weanj.ProjectError, match="is not an existing folder"):
        weanj.project_root()
    (tmp_path / "elsewhere").mkdir()
    assert weanj.project_root() == (tmp_path / "elsewhere").resolve()


@pytest.mark.skipif(
    weanj._project._PACKAGE_DIR != REPO / "python" / "weanj",
    reason="weanj is not imported from this checkout (not an editable install)",
)
def test_root_is_the_editable_checkout(monkeypatch, tmp_path):
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert weanj.project_root() == REPO


def test_root_falls_back_to_cwd(monkeypatch, tmp_path):
    # As installed into site-packages: no checkout above the package.
    site = tmp_path / "lib" / "site-packages" / "weanj"
    site.mkdir(parents=True)
    monkeypatch.setattr(weanj._project, "_PACKAGE_DIR", site)
    monkeypatch.delenv("WEANJ_ROOT", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert weanj.project_root() == work.resolve()
    # A checkout is recognised by its pyproject.toml and shared_inputs/ together.
    (site.parent.parent / "pyproject.toml").write_text("")
    assert weanj.project_root() == work.resolve()
    (site.parent.parent / "shared_inputs").mkdir()
    assert weanj.project_root() == site.parent.parent
    monkeypatch.setenv("WEANJ_ROOT", "")  # empty means unset
    assert weanj.project_root() == site.parent.parent


def test_results_follow_the_root(project):
    assert weanj.gradient_path("01-jacobi", "jax-jacobi") == (
        project / "results" / "01-jacobi" / "gradients" / "jax-jacobi.h5"
    )
    assert weanj.inputs_path("02-gauss-seidel") == project / "shared_inputs" / "02-gauss-seidel.h5"


# --- the notebook API checks what the command line checks ----------------------------


@pytest.mark.parametrize(
    "args, words",
    [
        (lambda t, o: (t, o, 0), "K must be at least 1, got 0"),
        (lambda t, o: (t, o, 2**31), "K must be at most 2147483647"),
        (lambda t, o: (t, o, 3.0), "K must be an integer, got 3.0"),
        (lambda t, o: (t, o, True), "K must be an integer, got True"),
        (lambda t, o: (t, o, "3"), "K must be an integer, got '3'"),
        (lambda t, o: (t, o[:4, :4], 3), "uobs has shape (4, 4)"),
        (lambda t, o: (t, o.astype(np.float32), 3), "mix float32 and float64"),
        (lambda t, o: (t.astype(int), o, 3), "theta has dtype int64; expected float64 or float32"),
        (lambda t, o: (t > 0, o, 3), "theta has dtype bool; expected float64 or float32"),
        (lambda t, o: (t + 0j, o, 3), "theta has dtype complex128; expected float64 or float32"),
        (lambda t, o: (t.astype(np.float16), o, 3), "theta has dtype float16"),
        (lambda t, o: (t.tolist(), o, 3), "theta must be an array (numpy or JAX), got list"),
        (lambda t, o: (None, o, 3), "theta must be an array (numpy or JAX), got NoneType"),
        (lambda t, o: (t, "uobs", 3), "uobs must be an array (numpy or JAX), got str"),
        (lambda t, o: (np.zeros((0, 0)), np.zeros((0, 0)), 3), "theta is empty (shape (0, 0))"),
        (lambda t, o: (t[0], o[0], 3), "theta has shape (5,); expected (n, n)"),
        (lambda t, o: (t, o), "takes 3 arguments (theta, uobs, K), got 2"),
        (lambda t, o: (t, o, 3, 4), "takes 3 arguments (theta, uobs, K), got 4"),
    ],
    ids=[
        "K-zero",
        "K-too-large",
        "K-float",
        "K-bool",
        "K-text",
        "shapes",
        "mixed-dtypes",
        "int-array",
        "bool-array",
        "complex-array",
        "float16",
        "list",
        "none",
        "text",
        "empty",
        "1-d",
        "arity-2",
        "arity-4",
    ],
)
def test_variant_calls_are_checked_before_they_run(args, words):
    # .grad(θ, uobs, 0) used to return an all-zero gradient, wrong shapes a raw JAX error.
    rng = np.random.default_rng(0)
    theta, uobs = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    v = weanj.variant("01-jacobi", "jax-jacobi")
    for fn in (v.loss, v.grad, v.grad.lower):
        with pytest.raises(weanj.InputError) as raised:
            fn(*args(theta, uobs))
        message = str(raised.value)
        assert words in message and "jax-jacobi" in message and "\n" not in message


def test_checked_calls_accept_jax_arrays_numpy_scalars_and_float32():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    theta, uobs = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    v = weanj.variant("01-jacobi", "jax-jacobi")
    reference = float(v.loss(theta, uobs, 3))
    with jax.enable_x64(True):  # JAX arrays of float64 (the session's default is float32)
        theta_jax, uobs_jax = jnp.asarray(theta), jnp.asarray(uobs)
    assert float(v.loss(theta_jax, uobs_jax, np.int64(3))) == reference
    g32 = v.grad(theta.astype(np.float32), uobs.astype(np.float32), 3)
    assert g32.dtype == np.float32
    g64 = np.asarray(v.grad(theta, uobs, 3))
    np.testing.assert_allclose(np.asarray(g32), g64, rtol=0, atol=1e-5 * np.abs(g64).max())
    assert weanj.example("01-jacobi").check_call("x", (theta, uobs, 3)) == "float64"
    assert weanj.example("01-jacobi").check_call(
        "x", (theta.astype("f4"), uobs.astype("f4"), 3)
    ) == ("float32")


# --- typed parameters ---------------------------------------------------------------


def test_param_kinds_and_default_ranges():
    K, nu, flag = weanj.Param("K", 3), weanj.Param("nu", 0.5), weanj.Param("flag", True)
    assert (K.kind, K.minimum, K.maximum) == ("int", 1, 2**31 - 1)
    assert (nu.kind, nu.minimum, nu.maximum) == ("float", -np.inf, np.inf)
    assert (flag.kind, flag.minimum, flag.maximum) == ("bool", None, None)
    assert weanj.Param("T", 2, kind="float").default == 2.0  # an int default, kind float
    assert type(weanj.Param("T", 2, kind="float").default) is float
    assert K.range_text == "1 <= int <= 2147483647" and nu.range_text == "float"
    assert weanj.Param("nu", 0.5, minimum=0, maximum=1).range_text == "0 <= float <= 1"


@pytest.mark.parametrize(
    "param, value, expected",
    [
        (weanj.Param("K", 3), 5, 5),
        (weanj.Param("K", 3), np.int32(5), 5),
        (weanj.Param("K", 3), np.array(7), 7),
        (weanj.Param("K", 3), 2**31 - 1, 2**31 - 1),
        (weanj.Param("nu", 0.5), 2, 2.0),
        (weanj.Param("nu", 0.5), np.float32(0.25), 0.25),
        (weanj.Param("nu", 0.5), -1e300, -1e300),
        (weanj.Param("flag", True), False, False),
        (weanj.Param("flag", True), np.bool_(True), True),
    ],
)
def test_param_check_accepts(param, value, expected):
    checked = param.check(value)
    assert (
        checked == expected
        and type(checked) is {"int": int, "float": float, "bool": bool}[param.kind]
    )


@pytest.mark.parametrize(
    "param, value, words",
    [
        (weanj.Param("K", 3), 3.0, "K must be an integer, got 3.0"),
        (weanj.Param("K", 3), np.float64(3.0), "K must be an integer, got"),
        (weanj.Param("K", 3), True, "K must be an integer, got True"),
        (weanj.Param("K", 3), "3", "K must be an integer, got '3'"),
        (weanj.Param("K", 3), None, "K must be an integer, got None"),
        (weanj.Param("K", 3), 0, "K must be at least 1, got 0"),
        (weanj.Param("K", 3), 2**31, "K must be at most 2147483647 (the kernels' loop counters"),
        (weanj.Param("K", 3, minimum=2, maximum=9), 10, "K must be at most 9, got 10"),
        (weanj.Param("nu", 0.5), float("nan"), "nu must be a finite number, got nan"),
        (weanj.Param("nu", 0.5), float("inf"), "nu must be a finite number, got inf"),
        (weanj.Param("nu", 0.5), -np.inf, "nu must be a finite number, got -inf"),
        (weanj.Param("nu", 0.5), True, "nu must be a finite number, got True"),
        (weanj.Param("nu", 0.5), "0.5", "nu must be a finite number, got '0.5'"),
        (weanj.Param("nu", 0.5, minimum=0.0, maximum=1.0), 1.5, "nu must be at most 1, got 1.5"),
        (weanj.Param("nu", 0.5, minimum=0.0), -0.1, "nu must be at least 0, got -0.1"),
        (weanj.Param("flag", True), 1, "flag must be true or false, got 1"),
        (weanj.Param("flag", True), 0.0, "flag must be true or false, got 0.0"),
        (weanj.Param("flag", True), "true", "flag must be true or false, got 'true'"),
    ],
    ids=lambda v: str(v)[:20] if not isinstance(v, weanj.Param) else v.name,
)
def test_param_check_refuses(param, value, words):
    with pytest.raises(weanj.InputError) as raised:
        param.check(value)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_param_parse_reads_command_line_words():
    K, nu, flag = weanj.Param("K", 3), weanj.Param("nu", 0.5), weanj.Param("flag", True)
    assert K.parse("5") == 5 and K.parse(" 7 ") == 7 and type(K.parse("5")) is int
    assert nu.parse("1e-3") == 1e-3 and nu.parse("2") == 2.0 and type(nu.parse("2")) is float
    for word in ("true", "TRUE", "1", "yes", "on"):
        assert flag.parse(word) is True, word
    for word in ("false", "False", "0", "no", "off"):
        assert flag.parse(word) is False, word
    for param, word, words in [
        (K, "3.0", "--K takes an integer, got '3.0'"),
        (K, "abc", "--K takes an integer, got 'abc'"),
        (K, "", "--K takes an integer, got ''"),
        (K, "0", "K must be at least 1, got 0"),
        (K, str(2**31), "K must be at most 2147483647"),
        (nu, "abc", "--nu takes a number, got 'abc'"),
        (nu, "nan", "nu must be a finite number, got nan"),
        (nu, "-inf", "nu must be a finite number, got -inf"),
        (flag, "maybe", "--flag takes true or false, got 'maybe'"),
        (flag, "2", "--flag takes true or false, got '2'"),
    ]:
        with pytest.raises(weanj.InputError) as raised:
            param.parse(word)
        assert words in str(raised.value), (word, str(raised.value))


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: weanj.Param("x", "text"), "kind must be int, float or bool"),
        (lambda: weanj.Param("x", None), "kind must be int, float or bool"),
        (lambda: weanj.Param("1x", 3), "must be a Python identifier"),
        (lambda: weanj.Param("K", 3, minimum=5), "K must be at least 5, got 3"),
        (lambda: weanj.Param("K", 3, maximum=2**31), "maximum <= 2147483647"),
        (lambda: weanj.Param("K", 3, minimum=1.5), "need int minimum"),
        (lambda: weanj.Param("nu", 0.5, minimum=1.0, maximum=0.0), "need minimum <= maximum"),
        (lambda: weanj.Param("nu", float("nan")), "nu must be a finite number"),
        (lambda: weanj.Param("flag", True, minimum=0), "a bool parameter has no range"),
        (lambda: weanj.Param("K", 3, kind="str"), "kind must be int, float or bool"),
        (lambda: weanj.Param("K", 3, sweep=(1, 2.5)), "K must be an integer, got 2.5"),
        (lambda: weanj.Param("K", 3, bench=0), "K must be at least 1"),
    ],
    ids=[
        "text",
        "none",
        "name",
        "default-range",
        "max-int32",
        "int-bound",
        "float-range",
        "nan",
        "bool-range",
        "kind",
        "sweep",
        "bench",
    ],
)
def test_param_definitions_are_checked(make, words):
    with pytest.raises(weanj.DefinitionError) as raised:
        make()
    assert words in str(raised.value)


# --- typed arrays ---------------------------------------------------------------------


def test_array_declarations():
    assert weanj.Array("x") == weanj.Array("x", "float", None, False, None)
    assert weanj.Array("pos", shape=("P", 2)).shape == ("P", 2)
    assert weanj.Array("s", shape=()).shape == ()
    assert weanj.Array("v", shape="n").shape == ("n",)  # one symbol: a 1-d array
    assert weanj.Array("i", "int", dtype=np.int16).dtype == "int16"
    assert weanj.Array("i", "int", index=True, shape=("m",)).describe() == "i: int index (m,)"
    assert weanj.Array("c", "int", dtype="int32", shape=("m",)).describe() == "c: int32 (m,)"
    assert weanj.Array("s", shape=()).describe() == "s: float ()"
    assert weanj.Array("pos", shape=("P", 2)).describe() == "pos: float (P, 2)"
    assert [weanj.Array("a", k).differentiable for k in ("float", "complex", "int", "bool")] == [
        True,
        True,
        False,
        False,
    ]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"name": "1x"}, "must be a Python identifier"),
        ({"name": "x", "kind": "double"}, "kind must be one of float, complex, int, bool"),
        ({"name": "x", "index": True}, "index=True needs kind='int'"),
        ({"name": "x", "kind": "bool", "index": True}, "index=True needs kind='int'"),
        ({"name": "x", "dtype": "float32"}, "dtype= names the integer dtype of an int array"),
        ({"name": "x", "kind": "int", "dtype": "float64"}, "dtype= names the integer dtype"),
        ({"name": "x", "kind": "int", "dtype": "nonsense"}, "dtype= names the integer dtype"),
        ({"name": "x", "shape": (-1,)}, "shape must be a tuple of ints >= 0 and symbols"),
        ({"name": "x", "shape": (True,)}, "shape must be a tuple of ints >= 0 and symbols"),
        ({"name": "x", "shape": ("a b",)}, "shape must be a tuple of ints >= 0 and symbols"),
        ({"name": "x", "shape": (2.0,)}, "shape must be a tuple of ints >= 0 and symbols"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_array_definitions_are_checked(kwargs, words):
    with pytest.raises(weanj.DefinitionError) as raised:
        weanj.Array(**kwargs)
    assert words in str(raised.value)


def test_array_values_are_kept_or_cast_only_where_nothing_is_lost():
    float_array, complex_array = weanj.Array("x"), weanj.Array("z", "complex")
    any_int, int32 = weanj.Array("i", "int"), weanj.Array("c", "int", dtype="int32")
    flags = weanj.Array("b", "bool")
    f32 = np.array([0.1, 0.2], dtype=np.float32)
    assert float_array.stored(f32, "w").dtype == np.float64
    np.testing.assert_array_equal(float_array.stored(f32, "w"), f32.astype(np.float64))
    assert complex_array.stored(np.array([1.0, 2.0]), "w").dtype == np.complex128
    assert any_int.stored(np.array([1, 2], dtype=np.int16), "w").dtype == np.int16  # kept
    assert any_int.stored(np.array([1, 2], dtype=np.uint8), "w").dtype == np.uint8
    assert int32.stored(np.array([1, 2], dtype=np.int32), "w").dtype == np.int32
    assert flags.stored(np.array([True, False]), "w").dtype == bool
    assert float_array.stored(np.array(2.5), "w").shape == ()  # 0-d stays 0-d
    for spec, value, words in [
        (
            float_array,
            np.array([1 + 2j]),
            "x has dtype complex128, but the example declares it float",
        ),
        (float_array, np.array([1, 2]), "declare it weanj.Array(name, kind='int')"),
        (float_array, np.array([True]), "declare it weanj.Array(name, kind='bool')"),
        (int32, np.array([1, 2]), "c has dtype int64, but the example declares it int (int32)"),
        (any_int, np.array([1.0]), "i has dtype float64"),
        (flags, np.array([0, 1]), "b has dtype int64"),
        (complex_array, np.array([1, 2]), "z has dtype int64"),
        (float_array, np.array([1.0, np.nan]), "x has 1 NaN/Inf value(s), the first at numpy (1)"),
        (float_array, [1.0, 2.0], "w: x must be an array (numpy or JAX), got list"),
        (float_array, np.array(["a"]), "expected numbers or booleans"),
    ]:
        with pytest.raises(weanj.InputError) as raised:
            spec.stored(value, "w")
        assert words in str(raised.value), str(raised.value)
    # A run in float32: float and complex arrays follow the dtype under test, others stay.
    assert float_array.for_run(np.zeros(2), "float32").dtype == np.float32
    assert complex_array.for_run(np.zeros(2, complex), "float32").dtype == np.complex64
    assert int32.for_run(np.zeros(2, np.int32), "float32").dtype == np.int32


# --- examples -------------------------------------------------------------------------


def _example(**overrides):
    fields = dict(name="91-model", arrays=("x",), wrt="x", generate=lambda seed: {})
    fields.update(overrides)
    return weanj.Example(**fields)


def test_example_merges_shapes_into_its_arrays():
    ex = _example(
        arrays=("pos", "q", weanj.Array("w")), wrt="q", shapes={"pos": ("P", 2), "q": ("P",)}
    )
    assert [a.shape for a in ex.specs] == [("P", 2), ("P",), None]
    assert ex.arrays == ("pos", "q", "w") and ex.symbols == ("P",)
    assert ex.check_shapes({"pos": (7, 2), "q": (7,), "w": (3, 3)}) == {"P": 7}
    with pytest.raises(
        weanj.InputError, match=r"q has shape \(6,\), pos's shape \(7, 2\) gives P = 7"
    ):
        ex.check_shapes({"pos": (7, 2), "q": (6,), "w": ()})
    # An Array's own shape and `shapes=` must agree.
    same = _example(arrays=(weanj.Array("x", shape=("n",)),), shapes={"x": ("n",)})
    assert same.specs[0].shape == ("n",)
    with pytest.raises(weanj.DefinitionError, match="x has shape"):
        _example(arrays=(weanj.Array("x", shape=("n",)),), shapes={"x": ("m",)})
    with pytest.raises(weanj.DefinitionError, match="shapes names arrays"):
        _example(shapes={"y": ("n",)})
    # The built-in deposition example declares its shapes so.
    dep = weanj.example("05-deposition")
    assert dep.array("pos").shape == ("P", 2) and dep.array("q").shape == ("P",)


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"arrays": (weanj.Array("i", "int"),), "wrt": "i"}, "wrt names i, a int array"),
        ({"arrays": (weanj.Array("b", "bool"),), "wrt": "b"}, "wrt names b, a bool array"),
        ({"wrt": "y"}, "wrt='y' must name one or several distinct arrays"),
        ({"wrt": ("x", "x")}, "must name one or several distinct arrays"),
        ({"wrt": ()}, "must name one or several distinct arrays"),
        ({"arrays": ("x", "x")}, "array names must be distinct"),
        ({"arrays": ("x", 3)}, "arrays must be names or weanj.Array objects"),
        ({"params": (weanj.Param("x", 1),)}, "repeat or clash with arrays"),
        ({"params": ("K",)}, "params must be weanj.Param objects"),
        ({"name": "../x"}, "example name '../x' must start with a letter or digit"),
        ({"taylor": {"y": weanj.TaylorPolicy()}}, "taylor must be a weanj.TaylorPolicy"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_example_definitions_are_checked(overrides, words):
    with pytest.raises(weanj.DefinitionError) as raised:
        _example(**overrides)
    assert words in str(raised.value)


def test_complex_arrays_are_differentiable():
    ex = _example(arrays=(weanj.Array("z", "complex"), weanj.Array("i", "int")), wrt="z")
    assert ex.wrt_names == ("z",)


# --- the argument check of a typed example's variant ----------------------------------


@pytest.fixture
def typed(project):
    """`helpers.typed_example` with one JAX variant, registered for this test."""
    with registered_typed(variant=True) as ex:
        yield ex


def _typed_args(arrays=None, **params):
    arrays = arrays or typed_arrays(2)
    values = {"S": 3, "nu": 0.25, "upwind": True, **params}
    names = ("x", "z", "idx", "mask", "s", "counts")
    return tuple(arrays[n] for n in names) + (values["S"], values["nu"], values["upwind"])


def test_a_typed_variant_computes_with_every_kind(typed):
    v = weanj.variant(TYPED, "jax-typed")
    arrays = typed_arrays(2)
    for upwind in (True, False):
        expected = typed_gradient(arrays, 3, 0.25, upwind)
        c = 2.0 if upwind else 1.0
        loss = c * 3 * 0.25 * np.sum(arrays["counts"] * arrays["x"][arrays["idx"]] ** 2)
        loss += arrays["s"] * np.sum(np.abs(arrays["z"][arrays["mask"]]) ** 2)
        assert float(v.loss(*_typed_args(arrays, upwind=upwind))) == pytest.approx(loss, rel=1e-14)
        g = v.grad(*_typed_args(arrays, upwind=upwind))
        assert set(g) == {"x", "z"} and g["z"].dtype == np.complex128
        np.testing.assert_allclose(np.asarray(g["x"]), expected["x"], rtol=1e-14, atol=0)
        np.testing.assert_allclose(np.asarray(g["z"]), expected["z"], rtol=1e-14, atol=0)
    f32 = dict(
        arrays,
        x=arrays["x"].astype(np.float32),
        z=arrays["z"].astype(np.complex64),
        s=arrays["s"].astype(np.float32),
    )
    g32 = v.grad(*_typed_args(f32))
    assert g32["x"].dtype == np.float32 and g32["z"].dtype == np.complex64
    assert typed.check_call("jax-typed", _typed_args(f32)) == "float32"


@pytest.mark.parametrize(
    "change, params, words",
    [
        ({"idx": np.zeros(4)}, {}, "idx has dtype float64; expected an integer dtype"),
        ({"counts": np.ones(4, dtype=np.int64)}, {}, "counts has dtype int64; expected int32"),
        ({"mask": np.ones(6, dtype=np.int8)}, {}, "mask has dtype int8; expected bool"),
        ({"z": np.ones(6)}, {}, "z has dtype float64; expected complex128 or complex64"),
        ({"x": np.ones(6, dtype=np.float32)}, {}, "the arrays mix float32 and float64"),
        ({"z": np.ones(6, dtype=np.complex64)}, {}, "the arrays mix float32 and float64"),
        ({"s": np.ones(1)}, {}, "s has shape (1,); expected ()"),
        ({"z": np.ones(5, dtype=complex)}, {}, "z has shape (5,), x's shape (6,) gives n = 6"),
        ({"x": np.ones(0), "z": np.ones(0, complex), "mask": np.ones(0, bool)}, {}, "x is empty"),
        ({"idx": [0, 1, 2, 3]}, {}, "idx must be an array (numpy or JAX), got list"),
        ({}, {"S": 3.0}, "S must be an integer, got 3.0"),
        ({}, {"S": 10}, "S must be at most 9, got 10"),
        ({}, {"nu": float("nan")}, "nu must be a finite number, got nan"),
        ({}, {"nu": -1.0}, "nu must be at least 0, got -1"),
        ({}, {"upwind": 1}, "upwind must be true or false, got 1"),
    ],
    ids=lambda v: str(v)[:24],
)
def test_typed_variant_calls_are_checked(typed, change, params, words):
    v = weanj.variant(TYPED, "jax-typed")
    args = _typed_args({**typed_arrays(2), **change}, **params)
    for fn in (v.loss, v.grad):
        with pytest.raises(weanj.InputError) as raised:
            fn(*args)
        message = str(raised.value)
        assert words in message and message.startswith("jax-typed") and "\n" not in message
