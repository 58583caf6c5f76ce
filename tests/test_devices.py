"""The device as a dimension of the matrix (docs/devices.md), tested where no accelerator is:
on the stand-in (`WEANJ_STANDIN_DEVICE=tpu` with two CPU devices, `_backends._standin`),
in fresh processes (the XLA flag must be set before JAX starts). The commands without the
stand-in (no TPU here) run in this process, the variable unset (`projects.weanj_here`;
`helpers.weanj_main` for the built-in examples): what they are checked for is what they
say, write and exit with, not what a fresh process does.

- the stand-in's reduced precision is one bfloat16 pass (checked against ml_dtypes'
  rounding, independent of weanj), and never reaches a CPU run;
- a user project with a dense network over time steps: on the stand-in tpu the correct
  ports pass with the precision in effect named, a planted indexing bug fails with "still
  differs under precision=highest", a port the reduced precision breaks fails with "agrees
  under precision=highest", an ordinary exception is still the port's `error`;
- the platform-limit table with the text a TPU v5e gave; the stand-in's injected
  `UNIMPLEMENTED` makes the built-in sharded variant `unavailable on tpu`;
- without `--device`, the verdicts, check.json's verdicts and the exit status are those
  of the code before devices existed (/work/main's python, where it is there) with and
  without the stand-in present;
- without a TPU: `weanj bench --device tpu` and `weanj check --device tpu` are one line,
  exit 2; a project listing the TPU in `devices` says "tpu: not run", and fails only
  under `--require tpu`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from weanj._judge._platform import platform_limit, precision_or_bug

from .conftest import REPO
from .helpers import PYTHON, assert_one_line_error, weanj_main
from .projects import run_in, user_env, weanj_here, write_project

# The text a TPU v5e gave for 01-jacobi's jax-jacobi-sharded in float64 (jax 0.10.2,
# libtpu 0.0.42.1), as the issue quotes it.
TPU_PMAX_TEXT = (
    "JaxRuntimeError: UNIMPLEMENTED: Supported lowering only of Sum all reduce, original "
    "computation: %region_1.2 (pmax.2: f64[], pmax.3: f64[]) -> f64[] {\n"
    '  %pmax.2 = f64[] parameter(0), metadata={op_name="pmax"}\n'
    " ... ROOT %max.1 = f64[] maximum(%pmax.2, %pmax.3) ...}"
)

STANDIN = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "WEANJ_STANDIN_DEVICE": "tpu"}


def standin_env() -> dict[str, str]:
    return user_env(**STANDIN)


def bare_here(monkeypatch, root: Path, *args) -> subprocess.CompletedProcess:
    """`weanj ARGS` in this process (`weanj_here`), without the stand-in: this process
    has no TPU, and `$WEANJ_STANDIN_DEVICE` is unset while the command runs."""
    monkeypatch.delenv("WEANJ_STANDIN_DEVICE", raising=False)
    return weanj_here(root, *args)


# --- the platform-limit table ----------------------------------------------------------------


def test_the_tpu_pmax_text_is_a_platform_limit_naming_op_and_dtype():
    assert platform_limit(TPU_PMAX_TEXT, "tpu") == (
        "pmax of f64 (the TPU all-reduces only sums in float64)"
    )


def test_an_ordinary_error_or_a_cpu_run_is_no_platform_limit():
    assert platform_limit("ValueError: operands could not be broadcast", "tpu") is None
    assert platform_limit("IndexError: index 9 is out of bounds", "gpu") is None
    assert platform_limit(TPU_PMAX_TEXT, "cpu") is None  # the CPU is the reference


def test_the_precision_or_bug_lines():
    assert precision_or_bug("tpu", "default", True).startswith(
        "agrees under precision=highest: the difference is the TPU's default matmul precision"
    )
    assert precision_or_bug("tpu", "default", False) == (
        "still differs under precision=highest: not the device's arithmetic"
    )


# --- the stand-in's arithmetic -------------------------------------------------------------------

BF16_PROBE = """
import numpy as np, jax, jax.numpy as jnp, ml_dtypes
from weanj._backends._placement import placed
rng = np.random.default_rng(3)
a = rng.standard_normal((40, 30)).astype(np.float32)
b = rng.standard_normal((30, 20)).astype(np.float32)
f = jax.jit(lambda a, b: a @ b)
with placed("tpu") as place:
    standin = np.asarray(f(a, b))
with placed("tpu", "highest"):
    highest = np.asarray(f(a, b))
cpu = np.asarray(f(a, b))
rounded = (a.astype(ml_dtypes.bfloat16).astype(np.float64)
           @ b.astype(ml_dtypes.bfloat16).astype(np.float64))
exact = a.astype(np.float64) @ b.astype(np.float64)
scale = np.abs(exact).max()
print(json.dumps({
    "kind": place.description,
    "standin_vs_bf16": float(np.abs(standin - rounded).max() / scale),
    "standin_vs_exact": float(np.abs(standin - exact).max() / scale),
    "highest_vs_exact": float(np.abs(highest - exact).max() / scale),
    "cpu_vs_exact": float(np.abs(cpu - exact).max() / scale),
}))
"""


def test_the_standin_rounds_float32_products_to_bfloat16_and_never_a_cpu_run(tmp_path):
    r = run_in(tmp_path, "-c", "import json\n" + BF16_PROBE, env=standin_env())
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["kind"] == "stand-in tpu (CPU device 1)"
    # one bfloat16 pass: operands rounded as ml_dtypes rounds them, summed in float32
    assert got["standin_vs_bf16"] < 1e-6
    assert got["standin_vs_exact"] > 1e-4  # three digits, not seven
    assert got["highest_vs_exact"] < 1e-6 and got["cpu_vs_exact"] < 1e-6


# --- a user project with a dense network over time steps -------------------------------------

DENSE = """
import jax
import jax.numpy as jnp
import numpy as np
import weanj

jax.config.update("jax_enable_x64", True)  # the program computes in float64

ex = weanj.register_example(weanj.Example(
    name="20-dense", arrays=("W", "u0", "target"), wrt=("W", "u0"),
    params=(weanj.Param("T", 4),),
    generate=lambda seed: {
        "W": np.random.default_rng(seed).standard_normal((48, 48)) / np.sqrt(48),
        "u0": np.random.default_rng(seed + 1).standard_normal((48, 24)),
        "target": np.random.default_rng(seed + 2).standard_normal((48, 24)) * 0.5,
    },
))


@weanj.jax_variant(ex, "jax-dense", family="dense")
def dense(W, u0, target, T):
    u = u0
    for _ in range(T):
        u = jnp.tanh(W @ u)
    return jnp.sum((u - target) ** 2)


@weanj.jax_variant(ex, "jax-dense-scan", family="dense")
def dense_scan(W, u0, target, T):
    def step(u, _):
        return jnp.tanh(jnp.einsum("ij,jk->ik", W, u)), None
    u, _ = jax.lax.scan(step, u0, None, length=T)
    return jnp.sum((u - target) ** 2)


@weanj.jax_variant(ex, "jax-dense-shifted", family="dense")
def dense_shifted(W, u0, target, T):
    u = u0
    for t in range(T):
        v = W @ u
        u = jnp.tanh(v if t else jnp.roll(v, 1, axis=0))  # planted: a row index off by one
    return jnp.sum((u - target) ** 2)


@weanj.jax_variant(ex, "jax-dense-offset", family="dense")
def dense_offset(W, u0, target, T):
    u = u0
    for _ in range(T):  # (W + 64) u - 64 sum(u): the same product, cancelling in bfloat16
        u = jnp.tanh((W + 64.0) @ u - 64.0 * jnp.sum(u, axis=0))
    return jnp.sum((u - target) ** 2)


@weanj.jax_variant(ex, "jax-dense-raises", family="dense", dtypes=("float32",))
def dense_raises(W, u0, target, T):
    raise ValueError("an ordinary mistake")
"""


@pytest.fixture(scope="module")
def dense_check(tmp_path_factory):
    """`weanj check --device tpu` of the dense project on the stand-in: (run, verdicts,
    reasons) from its check.json."""
    root = write_project(tmp_path_factory.mktemp("dense"), {"kernels/dense.py": DENSE})
    r = run_in(root, "-m", "weanj", "check", "--device", "tpu", env=standin_env(), timeout=900)
    data = json.loads((root / "results" / "20-dense" / "check.json").read_text())
    cases = {c["case"]: c for c in _cases(data)}
    return r, cases, root


def _cases(data) -> list[dict]:
    """Every case judgement of a check.json, wherever the file keeps them."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            if "case" in x and "verdict" in x:
                verdict = x["verdict"]
                if isinstance(verdict, dict):  # check.json's `{"$verdict": "ok"}`
                    verdict = verdict.get("$verdict")
                found.append({**x, "verdict": verdict})
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(data)
    return found


PAIR = "20-dense::dense::jax-dense~{}::{}"


def test_the_correct_ports_pass_on_the_standin_tpu_with_the_precision_named(dense_check):
    r, cases, _ = dense_check
    for label in ("jax-dense@float32@tpu", "jax-dense-scan@float32@tpu", "jax-dense@tpu"):
        for array in ("W", "u0"):
            assert cases[PAIR.format(label, array)]["verdict"] == "ok", label
    assert "matmul precision default of the stand-in tpu: BF16_BF16_F32" in r.stdout
    assert "stand-in tpu (CPU device 1)" in r.stdout  # never presented as a TPU's
    # and they differ from the CPU reference by the reduced precision, not by nothing
    assert "BF16_BF16_F32" in json.dumps(cases[PAIR.format("jax-dense@float32@tpu", "W")])


def test_a_planted_indexing_bug_fails_and_is_not_the_devices_arithmetic(dense_check):
    r, cases, _ = dense_check
    assert r.returncode == 1
    for array in ("W", "u0"):
        case = cases[PAIR.format("jax-dense-shifted@float32@tpu", array)]
        assert case["verdict"] == "FAIL"
        assert (
            "still differs under precision=highest: not the device's arithmetic" in (case["reason"])
        )


def test_a_port_the_reduced_precision_breaks_is_named_as_the_precision(dense_check):
    r, cases, _ = dense_check
    case = cases[PAIR.format("jax-dense-offset@float32@tpu", "W")]
    assert case["verdict"] == "FAIL"
    assert (
        "agrees under precision=highest: the difference is the stand-in TPU's default"
        in (case["reason"])
    )


def test_an_ordinary_exception_on_the_device_is_the_ports_error(dense_check):
    r, cases, _ = dense_check
    run = cases["20-dense::dense::jax-dense-raises@float32@tpu::run"]
    assert run["verdict"] == "error"
    assert "ValueError: an ordinary mistake" in run["reason"]


def test_bisect_on_the_device_names_it_and_reproduces_there(dense_check):
    """`weanj bisect --device tpu`: B on the stand-in tpu, A (the reference) on the CPU."""
    _, _, root = dense_check
    args = ("bisect", "20-dense", "jax-dense", "jax-dense-shifted", "--device", "tpu")
    r = run_in(root, "-m", "weanj", *args, env=standin_env(), timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "20-dense::dense::jax-dense~jax-dense-shifted@tpu::W: FAIL" in r.stdout
    assert "weanj run 20-dense jax-dense-shifted --device tpu --inputs" in r.stdout


# --- the built-in sharded variant: a platform limit on the stand-in -----------------------


def _jacobi_project(root: Path) -> Path:
    """A project of weanj's built-in examples (`builtin = true`, `x64 = true`) in `root`,
    holding 01-jacobi's inputs: the committed file, which is byte for byte what `weanj
    inputs regenerate 01-jacobi` writes (test_inputs.py's
    test_regenerate_is_byte_identical holds that), copied rather than regenerated."""
    (root / "pyproject.toml").write_text("[tool.weanj]\nbuiltin = true\nx64 = true\n")
    (root / "shared_inputs").mkdir()
    name = "shared_inputs/01-jacobi.h5"
    shutil.copyfile(REPO / name, root / name)
    return root


SHARDED = ["check", "01-jacobi", "--device", "tpu", "--dtype", "float64", "--variants"]
SHARDED += ["jax-jacobi", "jax-jacobi-sharded"]
SHARDED_UNAVAILABLE = (
    "unavailable jax-jacobi-sharded@tpu: unavailable on tpu (stand-in): pmax of f64 (the "
    "TPU all-reduces only sums in float64)"
)


def test_the_sharded_variant_in_float64_is_unavailable_on_the_standin_tpu(tmp_path):
    _jacobi_project(tmp_path)
    r = run_in(tmp_path, "-m", "weanj", *SHARDED, env=standin_env(), timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert SHARDED_UNAVAILABLE in r.stdout


# slow: that a run unavailable on the required device is a failure is held in the fast suite
# by test_a_run_past_the_time_limit_on_a_device_is_a_platform_limit (a platform limit on the
# stand-in, `--require tpu`: exit 1) and by
# test_check_on_a_tpu_without_one_is_one_line_or_not_run_and_fails_only_when_required
@pytest.mark.slow
def test_the_sharded_variant_in_float64_required_on_the_standin_tpu_is_a_failure(tmp_path):
    """Required (`--require tpu`), the sharded variant's platform limit is a failure."""
    _jacobi_project(tmp_path)
    args = [*SHARDED, "--require", "tpu"]
    r = run_in(tmp_path, "-m", "weanj", *args, env=standin_env(), timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr
    assert SHARDED_UNAVAILABLE in r.stdout
    assert "required but not run: jax-jacobi-sharded@tpu did not run" in r.stdout, r.stdout


def test_bench_on_the_standin_tpu_says_a_platform_limit_and_measures_the_rest(tmp_path):
    """`weanj bench --device tpu`: the sharded variant's float64 pmax is the platform
    limit it is in `check` (skipped, one line), not the port's error; the others are
    measured on the device and written."""
    _jacobi_project(tmp_path)
    args = ["bench", "01-jacobi", "--device", "tpu", "--sizes", "8", "--samples", "1"]
    args += ["--variants", "jax-jacobi", "jax-jacobi-sharded"]
    r = run_in(tmp_path, "-m", "weanj", *args, env=standin_env(), timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert "jax-jacobi-sharded: unavailable on tpu (stand-in): pmax of f64" in said, said
    assert "error" not in said and "Traceback" not in said, said
    data = json.loads((tmp_path / "results" / "01-jacobi" / "bench" / "jax-tpu.json").read_text())
    assert {r["variant"] for r in data["records"]} == {"jax-jacobi"}
    assert all(r["device"] == "tpu" and r.get("standin") for r in data["records"])


SLOW_ON_THE_DEVICE = """
import time
import jax.numpy as jnp, numpy as np
import weanj
from jax._src import config

ex = weanj.register_example(weanj.Example(
    name="10-slow", arrays=("x", "y"), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8),
                           "y": np.random.default_rng(seed + 1).standard_normal(8)},
))

def on_the_device():
    d = config.default_device.value
    return d is not None and not isinstance(d, str) and d.id == 1

@weanj.jax_variant(ex, "jax-a", family="f")
def a(x, y):
    return jnp.sum((x - y) ** 2)

@weanj.jax_variant(ex, "jax-b", family="f")
def b(x, y):
    if on_the_device():  # traced on the stand-in only: far slower there than on the CPU
        time.sleep(3600)  # past any limit (its thread is abandoned, the process exits)
    return jnp.sum((y - x) ** 2)
"""


def test_a_run_past_the_time_limit_on_a_device_is_a_platform_limit(tmp_path):
    """On the CPU a run past the limit is the port's `timeout`; on a device, where a
    program can be far slower for the platform's reasons (float64 emulated on a TPU), it
    is `unavailable on tpu`, naming the limit, and a failure only where the device is
    required (`--require tpu`).

    The two checks run in two copies of the project, the required one started once the
    first has said that its run of `jax-a` on the device finished: its start (imports,
    loading the project) overlaps the first's wait on `jax-b@tpu` (a sleep), not the
    first's runs that must finish within the limit."""
    (tmp_path / "a").mkdir()
    root = write_project(tmp_path / "a", {"kernels/slow.py": SLOW_ON_THE_DEVICE})
    required_root = Path(shutil.copytree(root, tmp_path / "b"))
    # 20 s: far beyond what the other runs take on a busy machine (with 3 s, a compile of
    # jax-a under load could pass it), and jax-b@tpu never ends
    args = ["-m", "weanj", "check", "--device", "tpu", "--dtype", "float64", "--timeout", "20"]
    args += ["--fresh", "-v"]  # -v: a progress line per evaluation
    first = _popen(root, *args)
    said = []
    while line := first.stderr.readline():  # up to the line of its run of jax-a@tpu
        said.append(line)
        if "10-slow jax-a@tpu: " in line:
            break
    required = _popen(required_root, *args, "--require", "tpu")
    out, err = first.communicate(timeout=900)
    err = "".join(said) + err
    required_out, required_err = required.communicate(timeout=900)
    assert first.returncode == 0, out + err
    assert (
        "unavailable jax-b@tpu: unavailable on tpu (stand-in): did not finish within the time "
        "limit of 20 s on the TPU"
    ) in out, out
    assert "10-slow jax-b@tpu: " in err and ", timeout" not in err, err
    assert required.returncode == 1, required_out + required_err


def _popen(root: Path, *argv: str) -> subprocess.Popen:
    """`python ARGV` started in the folder `root` on the stand-in, its output piped."""
    return subprocess.Popen(
        [PYTHON, *argv],
        cwd=root,
        env=standin_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# --- without --device: as before ---------------------------------------------------------------

TINY = """
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="10-tiny", arrays=("x", "y"), wrt="x", params=(weanj.Param("S", 2),),
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8),
                           "y": np.random.default_rng(seed + 1).standard_normal(8)},
))

@weanj.jax_variant(ex, "jax-a", family="f")
def a(x, y, S):
    for _ in range(S):
        x = (jnp.roll(x, 1) + 2 * x + jnp.roll(x, -1)) / 4
    return jnp.sum((x - y) ** 2)

@weanj.jax_variant(ex, "jax-b", family="f")
def b(x, y, S):
    return jnp.sum((jnp.roll(x, 1) - y) ** 2)  # wrong on purpose: a failing verdict too
"""


def _verdicts(r: subprocess.CompletedProcess, root: Path) -> tuple[int, dict, str]:
    data = json.loads((root / "results" / "10-tiny" / "check.json").read_text())
    cases = {c["case"]: (c["verdict"], c.get("reason", "")) for c in _cases(data)}
    return r.returncode, cases, r.stdout


def test_without_device_the_verdicts_and_exit_are_those_without_devices(tmp_path, monkeypatch):
    """`weanj check` without `--device`: without the stand-in (in this process) and with
    it (in a fresh process, where it is present), the same exit status and verdicts."""
    root = write_project(tmp_path, {"kernels/tiny.py": TINY})
    code, plain, said = _verdicts(bare_here(monkeypatch, root, "check", "--fresh"), root)
    assert code == 1 and any(v == "FAIL" for v, _ in plain.values())
    assert "device: cpu\n" in said, [x for x in said.splitlines() if "device" in x]
    r = run_in(root, "-m", "weanj", "check", "--fresh", env=standin_env())
    code_standin, standin, said = _verdicts(r, root)
    assert (code_standin, standin) == (code, plain)  # an accelerator present changes nothing
    assert "device: cpu (a stand-in TPU is present: --device tpu judges it)" in said
    # as before devices existed: the CPU runs' cases only, the wrong port the one failure
    assert not [c for c in plain if "@tpu" in c or "@gpu" in c], plain
    failing = sorted(c for c, (v, _) in plain.items() if v not in ("ok", "skipped", "info"))
    assert failing == ["10-tiny::f::jax-a~jax-b"], plain


# --- without a TPU ----------------------------------------------------------------------------


def test_bench_on_a_tpu_without_one_is_one_line_and_exit_2(tmp_path, monkeypatch):
    """In this process (`helpers.weanj_main`: the built-in examples are registered here),
    as test_bench.py's test_missing_gpu_is_one_line_and_exit_2 holds it for a GPU."""
    (tmp_path / "pyproject.toml").write_text("[tool.weanj]\nbuiltin = true\nx64 = true\n")
    monkeypatch.delenv("WEANJ_STANDIN_DEVICE", raising=False)
    r = weanj_main("bench", "02-gauss-seidel", "--device", "tpu", root=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no TPU visible to JAX here" in lines[0], r.stderr


TINY_OK = TINY.replace(
    "return jnp.sum((jnp.roll(x, 1) - y) ** 2)  # wrong on purpose: a failing verdict too",
    """for _ in range(S):
        x = 0.25 * jnp.roll(x, 1) + 0.5 * x + 0.25 * jnp.roll(x, -1)
    return jnp.sum((x - y) ** 2)""",
)


def test_check_on_a_tpu_without_one_is_one_line_or_not_run_and_fails_only_when_required(
    tmp_path, monkeypatch
):
    """`--device tpu` without a TPU: one line, exit 2 (nothing runs); the project's
    `devices = ["cpu", "tpu"]` without one: "tpu: not run" in the headline, exit 0, and
    a failure under `--require tpu` (tests/test_coverage.py holds the lines)."""
    root = write_project(tmp_path, {"kernels/tiny.py": TINY_OK})
    r = bare_here(monkeypatch, root, "check", "--device", "tpu", "--dtype", "float64")
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert_one_line_error(r.stderr, "--device tpu: no TPU visible to JAX here")
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(text + 'devices = ["cpu", "tpu"]\n')
    r = bare_here(monkeypatch, root, "check", "--dtype", "float64")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "tpu: not run (no TPU visible to JAX here" in r.stdout and "@tpu" not in r.stdout
    r = bare_here(monkeypatch, root, "check", "--dtype", "float64", "--require", "tpu")
    assert r.returncode == 1, r.stdout + r.stderr


API_CHECK = """
import weanj
j = weanj.check(dtype="float64", device={device!r})
for case, verdict in sorted(j.verdicts().items()):
    print(case, verdict)
"""


@pytest.mark.parametrize("how", ["api", "project"])
def test_the_api_and_the_project_key_choose_the_device(tmp_path, how):
    """`weanj.check(device="tpu")` and `[tool.weanj] devices = ["cpu", "tpu"]` judge the
    runs on the stand-in tpu against the CPU reference, as `--device tpu` does."""
    root = write_project(tmp_path, {"kernels/tiny.py": TINY_OK})
    if how == "project":
        text = (root / "pyproject.toml").read_text()
        (root / "pyproject.toml").write_text(text + 'devices = ["cpu", "tpu"]\n')
    r = run_in(
        root, "-c", API_CHECK.format(device="tpu" if how == "api" else None), env=standin_env()
    )
    assert r.returncode == 0, r.stderr
    verdicts = dict(line.rsplit(" ", 1) for line in r.stdout.strip().splitlines())
    assert verdicts["10-tiny::f::jax-a~jax-a@tpu"] == "ok"
    assert verdicts["10-tiny::f::jax-a~jax-b@tpu"] == "ok"
    assert verdicts["10-tiny::f::jax-b@tpu::run"] == "ok"
    assert not any(case.endswith("@tpu::taylor") for case in verdicts)  # the CPU run's


def test_the_precision_level_is_measured_at_the_unit_roundoff_of_the_precision_in_effect():
    """bfloat16 keeps 8 significant bits, tensorfloat32 11: their unit roundoffs 2⁻⁸ and
    2⁻¹¹ (half an ulp); a run at full precision has no precision level of its own."""
    from weanj._model import DeviceProvenance
    from weanj._pipeline.evaluation._on_device import precision_eps

    def run(precision: str, reduced: bool) -> DeviceProvenance:
        return DeviceProvenance("tpu", "TPU v5 lite", precision, reduced)

    tpu = "default (one bfloat16 pass for float32 matmuls on a TPU)"
    gpu = "default (tensorfloat32 passes for float32 matmuls where the GPU has them)"
    assert precision_eps(run(tpu, True)) == 2.0**-8
    assert precision_eps(run(gpu, True)) == 2.0**-11
    assert precision_eps(run("BF16_BF16_F32_X3", True)) == 2.0**-17
    assert precision_eps(run("highest", False)) is None
    assert precision_eps(None) is None  # a CPU run
