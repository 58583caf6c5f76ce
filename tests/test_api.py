"""The notebook API outside inputs and store: `import weanj`, `fd_check`, `time_median`,
`write_results`, and where the project root is."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time

import numpy as np
import pytest

import weanj
import weanj._root

from .conftest import REPO
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
    assert weanj.project_root() == (tmp_path / "elsewhere").resolve()


@pytest.mark.skipif(
    weanj._root._PACKAGE_DIR != REPO / "python" / "weanj",
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
    monkeypatch.setattr(weanj._root, "_PACKAGE_DIR", site)
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
        (lambda t, o: (t, o, 0), "K must be in [1,"),
        (lambda t, o: (t, o, 2**31), "K must be in [1,"),
        (lambda t, o: (t, o, 3.0), "K must be an integer"),
        (lambda t, o: (t, o[:4, :4], 3), "uobs has shape (4, 4)"),
        (lambda t, o: (t, o.astype(np.float32), 3), "mix float32 and float64"),
        (lambda t, o: (t.astype(int), o, 3), "dtype int64"),
        (lambda t, o: (t, o), "takes 3 arguments (theta, uobs, K), got 2"),
    ],
    ids=["K-zero", "K-too-large", "K-float", "shapes", "mixed-dtypes", "int-array", "arity"],
)
def test_variant_calls_are_checked_before_they_run(args, words):
    # .grad(θ, uobs, 0) used to return an all-zero gradient, wrong shapes a raw JAX error.
    rng = np.random.default_rng(0)
    theta, uobs = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    v = weanj.variant("01-jacobi", "jax-jacobi")
    for fn in (v.loss, v.grad, v.grad.lower):
        with pytest.raises(weanj.InputError) as raised:
            fn(*args(theta, uobs))
        assert words in str(raised.value) and "jax-jacobi" in str(raised.value)
