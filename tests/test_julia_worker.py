"""weanj's Julia worker where no Julia runs: the process, its protocol and its failures.

- The protocol (`_julia_wire`): messages with arrays of every kind, and streams that
  end early or are not this protocol's.
- The real worker (`_julia_worker.py`) on a stand-in juliacall (`tests/stand_ins/
  juliacall`, whose WeanJ kernels answer from the fixtures the Python reference wrote):
  every built-in example in both dtypes crosses as the kernels read it; arrays of every
  kind, the loss's activity options, Enzyme's errors, a kernel's own checks and bugs, a
  user's file (included once; one that does not load), an unsupported Julia, no Enzyme;
  the worker imports juliacall before numpy and never jax.
- Stand-in workers that fail as a Julia worker can (`tests/stand_ins/julia_worker.py`):
  one that dies by SIGSEGV, one that hangs past the deadline, one that exits at
  start-up: each is one line naming the cause and the log; `weanj check` then judges
  every other variant and exits 1, without a traceback, and never imports juliacall.
- A Julia file that does not exist makes only its variant unavailable in `weanj check`
  (registering it, and an unreadable one, is tests/test_julia_variants.py's, with the
  arguments refused before anything crosses).
- No process outlives weanj: stand-in workers that hang at start, hang on a request or
  exit mid-request end at the default limit (`$WEANJ_JULIA_TIMEOUT_S`) as `timeout` or
  `error`; SIGINT and SIGTERM during a request; every process they started is gone.
- One request per evaluation; Julia records reused by a second check that starts no
  worker; an edit of one Julia file recomputes its variants only; `weanj bench` prints the
  times inside the worker beside the round trip.

Nothing here is Julia, and nothing here is saved as a Julia result.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _watch
from weanj._backends import _julia, _julia_client, _julia_process, _julia_stand_in
from weanj._backends import _julia_wire as wire

from . import julia_helpers
from .helpers import graph_fields, graph_gradient
from .julia_helpers import (
    commands_here,
    forget_julia,
    graph_inputs,
    one_line,
)
from .projects import run_in, user_env, weanj_here, write_project

# The shared fixtures (tests/julia_helpers.py), under their names here.
new_example = julia_helpers.new_example

REPO = Path(__file__).resolve().parent.parent
STAND_INS = REPO / "tests" / "stand_ins"
FIXTURES = REPO / "julia" / "test" / "fixtures"
REAL_WORKER = shlex.join([sys.executable, str(_julia_client.WORKER_SCRIPT)])


def stand_in_worker(mode: str) -> str:
    return shlex.join([sys.executable, str(STAND_INS / "julia_worker.py"), mode])


# --- the protocol --------------------------------------------------------------------------


def test_a_message_carries_its_header_and_arrays_of_every_kind():
    arrays = [
        np.arange(12.0).reshape(3, 4),
        np.arange(6, dtype=np.float32).reshape(2, 3).T,  # not C-contiguous: sent in C order
        np.array([1 + 2j, -3.5j], dtype=np.complex64),
        np.array([[0, 7], [2**31 - 1, -5]], dtype=np.int32),
        np.array([True, False, True]),
        np.array(2.5),  # 0-d stays 0-d
        np.zeros((0, 3)),
    ]
    stream = io.BytesIO()
    wire.write(stream, {"op": "grad", "params": [3, 0.5, True], "file": None}, arrays)
    stream.seek(0)
    header, received = wire.read(stream)
    assert header["op"] == "grad" and header["params"] == [3, 0.5, True]
    assert header["file"] is None
    for sent, got in zip(arrays, received, strict=True):
        assert got.dtype == sent.dtype and got.shape == sent.shape
        assert np.array_equal(got, sent) and got.flags.c_contiguous and got.flags.owndata


def test_a_stream_that_ends_early_or_is_not_the_protocol_is_refused():
    whole = io.BytesIO()
    wire.write(whole, {"reply": "grad"}, [np.ones(5)])
    data = whole.getvalue()
    for cut in (0, 3, 12, len(data) - 1):
        with pytest.raises(wire.Closed):
            wire.read(io.BytesIO(data[:cut]))
    with pytest.raises(wire.Garbled):
        wire.read(io.BytesIO(b"\xff" * 64))  # a length no header has
    with pytest.raises(wire.Garbled):
        wire.read(io.BytesIO((5).to_bytes(8, "big") + b"nope!"))


# --- the real worker, on a stand-in juliacall --------------------------------------------


class Fake:
    """The real worker on the stand-in juliacall: what crossed (`calls`), and the Python
    file of a user's stand-in kernels (`kernels`)."""

    def __init__(self, root: Path):
        self.root = root
        self.record = root / "record.jsonl"
        self.user = root / "user_kernels.py"
        self.user.write_text("KERNELS = {}\n")

    def calls(self, kind: str | None = None) -> list[dict]:
        if not self.record.exists():
            return []
        entries = [json.loads(line) for line in self.record.read_text().splitlines()]
        return [e for e in entries if kind is None or e["call"] == kind]

    def kernels(self, text: str) -> None:
        self.user.write_text(text)

    def log(self) -> str:
        return (_julia_process.work_folder(self.root) / "worker.log").read_text()


@pytest.fixture
def no_worker():
    """No worker running, no failed start remembered, no Julia variant built, before and
    after."""
    forget_julia()
    yield
    forget_julia()


@pytest.fixture
def fake(tmp_path, monkeypatch, no_worker) -> Fake:
    """weanj's own worker program with the stand-in juliacall first on its path, in a
    temporary project root (the built-in examples)."""
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))
    monkeypatch.setenv(_julia_stand_in.WORKER_VARIABLE, REAL_WORKER)
    path = [str(STAND_INS), str(REPO / "python"), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))
    found = Fake(tmp_path)
    monkeypatch.setenv("WEANJ_TEST_RECORD", str(found.record))
    monkeypatch.setenv("WEANJ_TEST_USER_KERNELS", str(found.user))
    for var in ("WEANJ_TEST_JULIA_VERSION", "WEANJ_TEST_NO_ENZYME", "WEANJ_TEST_NO_WEANJ"):
        monkeypatch.delenv(var, raising=False)
    return found


def fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def decode(a: dict) -> np.ndarray:
    return np.asarray(a["data"], dtype=np.float64).reshape(a["shape"])


def float32_deposition_case(content: dict, case: dict) -> dict:
    """05-deposition refuses positions that round to 1.0 in float32 (outside [0, 1)),
    which its fixture's particles on the periodic wrap do: the same case without those
    particles, its loss and gradient computed by the Python reference."""
    from .test_julia_fixtures import FIXTURES as ENTRIES
    from .test_julia_fixtures import encode

    arrays = {a: decode(case["inputs"][a]) for a in content["arrays"]}
    kept = np.all(arrays["pos"].astype(np.float32) < 1, axis=1)
    arrays["pos"], arrays["q"] = arrays["pos"][kept], arrays["q"][kept]
    (entry,) = [e for e in ENTRIES if e.variant == content["variant"]]
    loss, gradient = entry.reference(arrays, case["params"])
    return {
        "name": f"{case['name']}-float32",
        "params": case["params"],
        "inputs": {a: encode(arrays[a]) for a in content["arrays"]},
        "loss": float(loss),
        "gradient": {w: encode(gradient[w]) for w in content["wrt"]},
    }


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.stem)
def test_every_example_crosses_as_its_kernel_reads_it(fake, monkeypatch, path):
    """Each built-in Julia variant (all five examples: with and without parameters, one
    and several `wrt` arrays) on its fixture's cases, in float64 and then in float32 (one
    worker for both): the stand-in answers only when the arrays it receives are the
    case's, in argument order, untransposed, in the dtype under test, and the parameters
    Julia `Int`s; its answer comes back as the loss in that dtype and the gradient arrays
    by name in `wrt` order, C-ordered."""
    content = json.loads(path.read_text())
    cases_in = {"float64": content["cases"], "float32": content["cases"]}
    if content["example"] == "05-deposition":  # known to the worker before it starts
        cases_in["float32"] = [float32_deposition_case(content, c) for c in content["cases"]]
        extra = fake.root / "extra_cases.json"
        extra.write_text(json.dumps({content["loss"]: cases_in["float32"]}))
        monkeypatch.setenv("WEANJ_TEST_EXTRA_CASES", str(extra))
    v = weanj.variant(content["example"], content["variant"])
    flags = [a in content["wrt"] for a in content["arrays"]] + [False] * len(content["params"])
    # a kernel with outputs: its loss and gradient with them by DI (`_julia_beyond`)
    together = "outputs_loss_and_gradient" if content["outputs"] else "loss_and_gradient"
    kinds = ("grad", together)
    for dtype, cases in cases_in.items():
        made = {kind: len(fake.calls(kind)) for kind in kinds}  # the earlier dtype's
        for case in cases:
            arrays = [decode(case["inputs"][a]).astype(dtype) for a in content["arrays"]]
            args = (*arrays, *(case["params"][p] for p in content["params"]))
            # the loss and the gradient apart, then together (one request: an evaluation's)
            both = v.functions().value_and_grad(*args)
            if content["outputs"]:  # with the outputs beside the loss, by name
                (loss, outputs), g = both
                both = (loss, g)
                assert list(outputs) == content["outputs"]
                for name, found in outputs.items():
                    expected = decode(case["outputs"][name]).astype(dtype)
                    assert found.dtype == np.dtype(dtype) and np.array_equal(found, expected)
            for loss, g in ((v.loss(*args), v.grad(*args)), both):
                assert type(loss) is np.dtype(dtype).type, dtype
                assert loss == np.dtype(dtype).type(case["loss"]), dtype
                found = g if isinstance(g, dict) else {content["wrt"][0]: g}
                assert list(found) == content["wrt"]
                for name in content["wrt"]:
                    expected = decode(case["gradient"][name]).astype(dtype)
                    assert found[name].dtype == np.dtype(dtype), dtype
                    assert found[name].flags.c_contiguous
                    assert np.array_equal(found[name], expected), dtype
        for kind in kinds:
            calls = fake.calls(kind)[made[kind] :]  # this dtype's
            assert len(calls) == len(cases) >= 1, dtype
            assert all(c["flags"] == flags for c in calls)
            assert all(c.get("activity", "bare") == "bare" for c in calls)
            assert all(p[0] == "int" for c in calls for p in c.get("params", []))
    if content["outputs"]:  # Enzyme's backends, with the loss's own activity
        assert {c["activity"] for c in fake.calls("enzyme_backends")} == {"bare"}


def test_the_worker_imports_juliacall_first_and_never_jax(fake):
    """Julia's libstdc++ must be loaded before numpy loads the system's (PythonCall's
    FAQ), and Julia and XLA must not share a process: the worker imports juliacall before
    numpy and weanj, and jax never; this process never imports juliacall."""
    v = weanj.variant("02-gauss-seidel", "julia-lex")
    with pytest.raises(_julia_process.JuliaError, match="no fixture case"):
        v.loss(np.ones((2, 2)), np.ones((2, 2)), 1)
    (start,) = fake.calls("start")
    assert start["before"] == {"numpy": False, "jax": False, "weanj": False}
    # WeanJ is loaded as the package it is, never included as a script
    assert [c["code"] for c in fake.calls("seval")] == [
        *("string(VERSION)", "Base.load_path()"),  # the bounds checked before loading
        "import Enzyme",
        "using WeanJ",
    ]
    assert not fake.calls("include")
    assert "juliacall" not in sys.modules


def test_what_computed_is_known_before_a_worker_starts_and_says_stand_in(fake):
    """A record's key holds the backend's identity: the same before a worker starts (a
    later command's look-up) and after (this command's write); a stand-in's says so and
    digests its files; what the worker said it runs is reported apart."""
    content = json.loads((FIXTURES / "julia-jacobi.json").read_text())
    case = content["cases"][0]
    v = weanj.variant("01-jacobi", "julia-jacobi")
    before = v.backend_version()
    assert before.startswith(f"stand-in worker ({REAL_WORKER}), not Julia: files sha256 ")
    assert not fake.calls("start")  # knowing it started nothing
    v.loss(*(decode(case["inputs"][a]) for a in content["arrays"]), case["params"]["K"])
    assert v.backend_version() == before
    said = _julia_client.versions()
    assert said.startswith(f"stand-in worker ({REAL_WORKER}): Julia 0.0.0-stand-in")
    assert said.endswith("juliacall 0.0.0-stand-in")


GRAPH_KERNELS = """
import numpy as np

def loss(x, z, edges, mask, w, scale, steps, flag):
    a, b = z[edges[:, 0] - 1], z[edges[:, 1] - 1]  # 1-based, as a Julia loop reads them
    total = scale * np.sum(mask * np.abs(a - b) ** 2) + steps * np.sum(x**2)
    return x.dtype.type(total + flag * np.sum(w))

def gradients(x, z, edges, mask, w, scale, steps, flag):
    a, b = edges[:, 0] - 1, edges[:, 1] - 1
    d = 2 * scale * mask * (z[a] - z[b])
    gz = np.zeros_like(z)
    np.add.at(gz, a, d)
    np.add.at(gz, b, -d)
    return [(2 * steps * x).astype(x.dtype), gz]

KERNELS = {"graph.jl": {"graph_loss": (loss, gradients)}}
"""


def graph_variant(fake, new_example, validate=None):
    fake.kernels(GRAPH_KERNELS)
    (fake.root / "graph.jl").write_text("# a stand-in reads no Julia\n")
    ex = new_example("90-graph", **graph_fields(), validate=validate)
    return weanj.julia_variant(
        ex, "julia-graph", family="graph", loss="graph_loss", file="graph.jl"
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_kind_crosses_as_its_julia_type(fake, new_example, dtype):
    """Each array reaches Julia with its own element type (float64/float32, complex128/
    complex64, int32 kept int32, bool), the index array plus one, the parameters as
    Float64, Int and Bool; only the float and complex `wrt` arrays are flagged; the
    complex gradient comes back as Enzyme gives it (not conjugated)."""
    validated = []

    def validate(arrays):  # sees the 0-based values, as stored
        validated.append(arrays["edges"].copy())

    v = graph_variant(fake, new_example, validate)
    x, z, edges, mask, w = graph_inputs(dtype)
    g = v.grad(x, z, edges, mask, w, 0.5, 3, True)
    (call,) = fake.calls("grad")
    assert call["flags"] == [True, True, False, False, False, False, False, False]
    complex_name = "<c16" if dtype == np.float64 else "<c8"
    assert [a["dtype"] for a in call["arrays"]] == [
        np.dtype(dtype).str,
        complex_name,
        "<i4",
        "|b1",
        np.dtype(dtype).str,
    ]
    assert call["arrays"][2]["data"] == (edges + 1).tolist()
    assert call["params"] == [["float", 0.5], ["int", 3], ["bool", True]]
    assert np.array_equal(validated[-1], edges) and edges.min() == 0  # the caller's, unshifted
    expected = graph_gradient(x, z, edges, mask, 0.5, 3)
    assert list(g) == ["z", "x"]
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(g["z"], expected["z"], rtol=tol, atol=tol)
    assert not np.allclose(g["z"], np.conj(expected["z"]), rtol=tol, atol=tol)
    np.testing.assert_allclose(g["x"], expected["x"], rtol=tol)
    assert v.jvp is None
    loss = v.loss(x, z, edges, mask, w, 0.5, 3, False)
    a, b = z[edges[:, 0]], z[edges[:, 1]]
    reference = 0.5 * np.sum(mask * np.abs(a - b) ** 2) + 3 * np.sum(x**2)
    assert type(loss) is np.dtype(dtype).type
    assert float(loss) == pytest.approx(float(reference), rel=tol)


SIMPLE_KERNELS = """
import numpy as np

def square(x):
    return x.dtype.type(np.sum(x**2))

def double(x):
    return [2 * x]

def in_float64(x):
    return np.float64(np.sum(x))

def checked(x):
    raise Exception("DimensionMismatch: x must have 3 entries, got (2,)\\nStacktrace: ...")

def bug(x):
    raise Exception("UndefVarError: `y` not defined in `Main.smooth`\\nStacktrace:\\n [1] top")

def fail(message):
    def gradients(x):
        raise Exception(message)
    return gradients

MUTABILITY = (
    "EnzymeMutabilityException: Function argument passed to autodiff cannot be proven "
    "readonly.\\nIf the the function argument cannot contain derivative data, instead call "
    "autodiff(Mode, Const(f), ...)"
)
RUNTIME_ACTIVITY = (
    "EnzymeRuntimeActivityError: Detected potential need for runtime activity.\\n\\n"
    "Constant memory is stored (or returned) to a differentiable variable and correctness "
    "cannot be guaranteed with static activity analysis."
)

KERNELS = {
    "f.jl": {
        "f": (square, double),
        "g": (square, double),
        "wide": (in_float64, double),
        "checked": (checked, double),
        "bug": (square, lambda x: bug(x)),
        "mutability": (square, fail(MUTABILITY)),
        "runtime": (square, fail(RUNTIME_ACTIVITY)),
    }
}
"""


@pytest.fixture
def simple(fake, new_example):
    """An example of one float array `x` and `variant(name, loss, **options)`, a Julia
    variant of `f.jl` whose stand-in kernels are SIMPLE_KERNELS."""
    fake.kernels(SIMPLE_KERNELS)
    (fake.root / "f.jl").write_text("# a stand-in reads no Julia\n")
    ex = new_example("90-f", arrays=("x",), wrt="x")

    def variant(name, loss, **options):
        return weanj.julia_variant(ex, name, family="f", loss=loss, file="f.jl", **options)

    return variant


def test_the_loss_activity_options_reach_enzyme_gradient(fake, simple):
    options = {
        "julia-bare": {},
        "julia-dup": {"function": "duplicated", "runtime_activity": True},
        "julia-const": {"function": "const"},
    }
    for name, given in options.items():
        v = simple(name, "f", **given)
        np.testing.assert_array_equal(v.grad(np.arange(3.0)), 2 * np.arange(3.0))
    assert [(c["activity"], c["runtime_activity"]) for c in fake.calls("grad")] == [
        ("bare", False),
        ("duplicated", True),
        ("const", False),
    ]


def test_a_users_file_is_included_once_for_all_its_variants(fake, simple):
    for name in ("f", "g"):
        assert simple(f"julia-{name}", name).loss(np.ones(2)) == 2.0
    (included,) = fake.calls("include_kernels")
    assert included["path"] == str((fake.root / "f.jl").resolve())


@pytest.mark.parametrize(
    "loss, options, says, not_said",
    [
        ("mutability", {}, ["function='duplicated'", "function='const'"], []),
        ("runtime", {}, ["runtime_activity=True", "function='duplicated'"], []),
        ("runtime", {"function": "duplicated"}, ["runtime_activity=True"], ["'duplicated'"]),
    ],
)
def test_enzymes_activity_errors_name_the_option_that_fixes_them(
    simple, loss, options, says, not_said
):
    """Enzyme's messages (as Enzyme.jl's src/errors.jl prints them, read, not run) become
    one line naming the variant and julia_variant's option, exit code 2."""
    v = simple("julia-f", loss, **options)
    with pytest.raises(weanj.DefinitionError) as caught:
        v.grad(np.ones(3))
    message = one_line(str(caught.value))
    assert message.startswith("julia-f: Enzyme") and caught.value.exit_code == 2
    assert all(fragment in message for fragment in says)
    assert not any(fragment in message for fragment in not_said)


def test_a_kernels_own_check_is_input_and_a_bug_is_the_variants_error(fake, simple):
    with pytest.raises(weanj.InputError) as caught:
        simple("julia-checked", "checked").loss(np.ones(2))
    assert one_line(str(caught.value)) == (
        "julia-checked: DimensionMismatch: x must have 3 entries, got (2,)"
    )
    with pytest.raises(_julia_process.JuliaError) as caught:
        simple("julia-bug", "bug").grad(np.ones(2))
    message = one_line(str(caught.value))
    assert message.startswith("julia-bug: UndefVarError: `y` not defined")
    assert message.endswith(f"(Julia's stack trace: {fake.root / '.weanj-cache/julia/worker.log'})")
    assert "Stacktrace" not in message
    assert "[1] top" in fake.log()  # Julia's stack trace, kept in the log


def test_a_loss_in_another_dtype_than_its_inputs_is_the_variants_error(simple):
    v = simple("julia-wide", "wide")
    assert v.loss(np.ones(3)) == 3.0  # float64 inputs: fine
    with pytest.raises(_julia_process.JuliaError) as caught:
        v.loss(np.ones(3, dtype=np.float32))
    assert "returned a float64 loss on float32 inputs" in one_line(str(caught.value))


def test_a_loss_missing_from_its_file_is_one_line_naming_both(fake, simple):
    with pytest.raises(weanj.DefinitionError) as caught:
        simple("julia-f", "smoth_loss").loss(np.ones(3))
    message = one_line(str(caught.value))
    assert "smoth_loss" in message and str((fake.root / "f.jl").resolve()) in message


def test_a_julia_file_that_does_not_load_makes_its_variants_unavailable(fake, simple):
    """A file Julia cannot include (a syntax error, a package not installed): its
    variants are unavailable, saying why; the worker goes on with every other variant."""
    (fake.root / "f.jl").write_text(
        "# stand-in: does not load: LoadError: ParseError:\n# Error @ f.jl:3:9 -- missing `end`\n"
    )
    v = simple("julia-f", "f")
    for _ in range(2):  # included once: the second call gives the same reason
        with pytest.raises(weanj.UnavailableError) as caught:
            v.loss(np.ones(3))
        message = one_line(str(caught.value))
        assert "f.jl does not load: LoadError: ParseError:" in message and "log:" in message
    assert len(fake.calls("include_kernels")) == 1
    content = json.loads((FIXTURES / "julia-lex.json").read_text())
    case = content["cases"][0]
    args = [decode(case["inputs"][a]) for a in content["arrays"]]
    assert weanj.variant("02-gauss-seidel", "julia-lex").loss(*args, case["params"]["K"]) > 0


def test_a_package_missing_from_the_project_names_the_command_that_adds_it(fake, simple):
    (fake.root / "f.jl").write_text(
        "# stand-in: does not load: LoadError: ArgumentError: Package SpecialFunctions not "
        "found in current path.\n"
    )
    with pytest.raises(weanj.UnavailableError) as caught:
        simple("julia-f", "f").loss(np.ones(3))
    message = str(caught.value)
    assert f"julia --project={fake.root} -e 'using Pkg; Pkg.add(\"SpecialFunctions\")'" in message


def test_an_unsupported_julia_in_the_worker_is_refused_and_not_started_again(fake, monkeypatch):
    monkeypatch.setenv("WEANJ_TEST_JULIA_VERSION", "1.14.0-DEV")
    v = weanj.variant("02-gauss-seidel", "julia-rb")
    for _ in range(2):
        with pytest.raises(weanj.UnavailableError) as caught:
            v.loss(np.ones((2, 2)), np.ones((2, 2)), 1)
        message = one_line(str(caught.value))
        assert "juliacall runs Julia 1.14.0-DEV" in message
        assert "juliaup add 1.1" in message  # 1.13, or 1.11 where the OpenSSL is older than 3.5
    assert len(fake.calls("seval")) == 1  # one start, remembered
    assert _julia.unavailable_reason() is None  # a stand-in is configured: it decides


def test_julia_without_enzyme_says_how_to_install_it(fake, monkeypatch):
    monkeypatch.setenv("WEANJ_TEST_NO_ENZYME", "1")
    with pytest.raises(weanj.UnavailableError) as caught:
        weanj.variant("01-jacobi", "julia-jacobi").loss(np.ones((2, 2)), np.ones((2, 2)), 1)
    message = one_line(str(caught.value))
    assert "could not load Enzyme" in message and "juliapkg.resolve(force=True)" in message


# --- stand-in workers that fail -----------------------------------------------------------


@pytest.fixture
def failing(tmp_path, monkeypatch, no_worker):
    """`use(mode)`: a stand-in worker that fails that way, in a temporary project root;
    returns the log's path."""
    monkeypatch.setenv("WEANJ_ROOT", str(tmp_path))

    def use(mode: str) -> Path:
        monkeypatch.setenv(_julia_stand_in.WORKER_VARIABLE, stand_in_worker(mode))
        return _julia_process.work_folder(tmp_path) / "worker.log"

    return use


LEX_ARGS = (np.ones((3, 3)), np.zeros((3, 3)), 2)


def test_a_worker_that_dies_is_one_line_and_the_next_call_starts_afresh(failing):
    log = failing("segfault")
    v = weanj.variant("02-gauss-seidel", "julia-lex")
    for _ in range(2):
        with pytest.raises(_julia_process.JuliaError) as caught:
            v.grad(*LEX_ARGS)
        assert one_line(str(caught.value)) == (
            f"the Julia worker died (SIGSEGV) while computing julia-lex's gradient (log: {log})"
        )
    assert log.read_text().count("--- weanj's Julia worker") == 2  # a fresh worker each time


def test_a_worker_that_exits_at_start_is_one_line_and_not_started_again(failing):
    log = failing("exit-at-start")
    v = weanj.variant("02-gauss-seidel", "julia-rb")
    for _ in range(2):
        with pytest.raises(_julia_process.JuliaError) as caught:
            v.loss(*LEX_ARGS)
        assert one_line(str(caught.value)) == (
            f"the Julia worker exited with status 3 while starting (log: {log})"
        )
    text = log.read_text()
    assert text.count("--- weanj's Julia worker") == 1 and "exiting at start-up" in text


@pytest.mark.slow  # the hang-on-request case of the no-orphan test runs by default
def test_a_worker_still_busy_at_the_deadline_is_killed(failing, monkeypatch):
    """Past the watched call's deadline the worker is killed (with all it started) and the
    call raises TimeoutError; that variant is not asked again, the next one starts afresh."""
    log = failing("hang")
    started = []
    popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(_julia_process.subprocess, "Popen", recording_popen)
    for attempt, name in enumerate(("julia-lex", "julia-rb"), start=1):
        v = weanj.variant("02-gauss-seidel", name)
        # Started first, without a limit, so that only the request is timed.
        with _julia_client._LOCK:
            _julia_client._STATE["worker"] = _julia_client._start(_julia_client._limit(), name)
        token = _watch._DEADLINE.set(time.monotonic() + 2)
        try:
            with pytest.raises(TimeoutError) as caught:
                v.grad(*LEX_ARGS)
        finally:
            _watch._DEADLINE.reset(token)
        assert one_line(str(caught.value)) == (
            f"the Julia worker was still computing {name}'s gradient at the time limit "
            f"({_julia_client.LIMITS}); stopped it (log: {log})"
        )
        assert len(started) == attempt and started[-1].wait(10) < 0  # killed, by a signal
        assert _julia_client._STATE["worker"] is None
    with pytest.raises(TimeoutError, match="^julia-lex is not asked again: the Julia worker"):
        weanj.variant("02-gauss-seidel", "julia-lex").grad(*LEX_ARGS)
    assert len(started) == 2


# --- weanj check with a failing worker -----------------------------------------------------

TINY = """\
import numpy as np
import weanj
from toy_kernels import smooth_loop, smooth_scan

ex = weanj.register_example(weanj.Example(
    name="20-tiny", arrays=("x", "y"), wrt="x", params=(weanj.Param("S", default=3),),
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8),
                           "y": np.random.default_rng(seed + 1).standard_normal(8)},
))
weanj.jax_variant(ex, "jax-loop", family="smooth", loss=smooth_loop)
weanj.jax_variant(ex, "jax-scan", family="smooth", loss=smooth_scan)
weanj.julia_variant(ex, "julia-smooth", family="smooth", file="julia/smooth.jl",
                    loss="smooth_loss", dtypes=("float64",))
"""

# `weanj check` as the console script runs it, then: was juliacall imported here?
CHECK = (
    "import sys\n"
    "from weanj._cli._main import main\n"
    "code = main(sys.argv[1:])\n"
    "print('juliacall imported:', 'juliacall' in sys.modules)\n"
    "sys.exit(code)\n"
)


def tiny_project(root: Path, julia_file: bool = True) -> Path:
    files = {"tiny.py": TINY}
    if julia_file:
        files["julia/smooth.jl"] = "# a stand-in reads no Julia\nsmooth_loss(x, y, S) = sum(x)\n"
    return write_project(root, files)


def check_json(root: Path) -> dict:
    return json.loads((root / "results" / "20-tiny" / "check.json").read_text())


@pytest.mark.parametrize(
    "mode, cause",
    [
        ("segfault", "the Julia worker died (SIGSEGV) while computing julia-smooth's loss"),
        pytest.param(
            "exit-at-start",
            "the Julia worker exited with status 3 while starting",
            marks=pytest.mark.slow,
        ),
        # The hang waits out --timeout (60 s): `-m slow`; a worker killed at its deadline
        # is also test_a_worker_still_busy_at_the_deadline_is_killed's, in seconds.
        pytest.param("hang", "time limit", marks=pytest.mark.slow),
    ],
)
def test_weanj_check_judges_the_others_when_the_worker_fails(tmp_path, mode, cause):
    """Acceptance 1 of #33: the Julia variant gets one line naming the cause and the
    log, the JAX pair is judged ok as before, the exit code is 1, no traceback; and
    juliacall was never imported by weanj itself (acceptance 2). The hang's limit is far
    above what the two tiny JAX variants take; nothing else is timed."""
    root = tiny_project(tmp_path)
    env = user_env(**{_julia_stand_in.WORKER_VARIABLE: stand_in_worker(mode)})
    done = run_in(root, "-c", CHECK, "check", "--dtype", "float64", "--timeout", "60", env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    assert "juliacall imported: False" in done.stdout
    judged = check_json(root)
    error = judged["faults"]["julia-smooth"]["reason"]
    assert cause in one_line(error) and str(root / ".weanj-cache" / "julia" / "worker.log") in error
    pairs = {tuple(p["subjects"]): p["verdict"] for p in judged["pairs"]}
    assert pairs[("jax-loop", "jax-scan")] == "ok"
    assert not (root / "results" / "20-tiny" / "gradients" / "julia-smooth.h5").exists()


def test_a_missing_julia_file_makes_only_its_variant_unavailable(tmp_path, monkeypatch):
    """#34, acceptance 3: a julia_variant whose file is not written yet: `inputs
    regenerate` (in `write_project`) and `weanj check` go on, the JAX variants judged, the
    Julia variant listed unavailable with the reason; exit 0. A stand-in worker is
    configured (so Julia would count as available) and never started (the check runs in
    this process, as a fresh one runs it)."""
    root = tiny_project(tmp_path, julia_file=False)
    monkeypatch.setenv(_julia_stand_in.WORKER_VARIABLE, stand_in_worker("segfault"))
    done = weanj_here(root, "check", "--dtype", "float64")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Traceback" not in output
    assert f"the Julia file {root / 'julia' / 'smooth.jl'} does not exist" in output
    pairs = {tuple(p["subjects"]): p["verdict"] for p in check_json(root)["pairs"]}
    assert pairs[("jax-loop", "jax-scan")] == "ok"
    assert not (root / ".weanj-cache" / "julia" / "worker.log").exists()


# --- no worker outlives weanj ---------------------------------------------------------------


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not: its parent may be gone, and what reaps
    orphans here need not do so at once)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def running_in_group(group: int) -> list[int]:
    """The processes of a process group that still run (the worker's group: the worker,
    its lifeline's watchdog and anything it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def pids_of(path: Path) -> dict[str, list[int]]:
    """What the stand-in workers wrote: `{"worker": [...], "child": [...], ...}`."""
    found: dict[str, list[int]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            for key, value in json.loads(line).items():
                if key != "mode":
                    found.setdefault(key, []).append(value)
    return found


def wait_for(condition, seconds: float = 120.0) -> bool:
    """Poll `condition()` until it holds or `seconds` pass (a bound for a stuck test, not
    a measurement)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def nothing_left(pids: Path) -> list[int]:
    """Every process the stand-in workers reported, or their groups hold, that still
    runs (after a grace for a watchdog that is killing its group)."""
    found = pids_of(pids)
    workers = found.get("worker", [])
    assert workers, "no worker was started"

    def left() -> list[int]:
        every = set(workers) | set(found.get("child", []))
        for group in workers:
            every |= set(running_in_group(group))
        return sorted(p for p in every if alive(p))

    wait_for(lambda: not left(), 30)
    return left()


@pytest.mark.parametrize(
    "mode, verdict, cause",
    [
        # The hang on a request runs by default; the other two with `-m slow` (the
        # README's test command stays under its time).
        pytest.param(
            "hang-at-start",
            "timeout",
            "the Julia worker was still starting after 3 s",
            marks=pytest.mark.slow,
        ),
        ("hang", "timeout", "still computing julia-smooth's loss and gradient after 3 s"),
        pytest.param(
            "exit-mid-request",
            "error",
            "the Julia worker exited with status 7 while computing",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_worker_that_hangs_or_dies_ends_the_check_and_leaves_no_process(
    tmp_path, mode, verdict, cause
):
    """Acceptance 7 of #39: without --timeout, a Julia call ends at the default limit
    (`$WEANJ_JULIA_TIMEOUT_S`, here 3 s) as `timeout`; a worker that exits mid-request
    is `error`; either way `weanj check` ends, judges the other variants, and no worker
    or child of one is left running."""
    root = tiny_project(tmp_path)
    pids = tmp_path / "pids.jsonl"
    env = user_env(
        **{
            _julia_stand_in.WORKER_VARIABLE: stand_in_worker(mode),
            _julia_client.TIMEOUT_VARIABLE: "3",
            "WEANJ_TEST_PIDS": str(pids),
        }
    )
    done = run_in(root, "-m", "weanj", "check", "--dtype", "float64", env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    fault = check_json(root)["faults"]["julia-smooth"]
    assert fault["verdict"] == verdict and cause in one_line(fault["reason"]), fault
    pairs = {tuple(p["subjects"]): p["verdict"] for p in check_json(root)["pairs"]}
    assert pairs[("jax-loop", "jax-scan")] == "ok"
    assert nothing_left(pids) == []


@pytest.mark.parametrize(
    "signum",
    [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_check_interrupted_while_the_worker_computes_leaves_no_process(tmp_path, signum):
    """Ctrl-C (SIGINT to weanj's process group, as a terminal sends it; the worker's
    group is its own) while the worker hangs on a request: weanj ends with 130 and kills
    the worker's group. SIGTERM (what a batch system sends at a job's time limit): weanj
    handles it as an interrupt, says so in one line and ends with 143 (128 + 15, as a
    shell reports a job ended so; `_interrupts`), and the worker's group is gone."""
    root = tiny_project(tmp_path)
    pids = tmp_path / "pids.jsonl"
    env = user_env(
        **{
            _julia_stand_in.WORKER_VARIABLE: stand_in_worker("hang"),
            _julia_client.TIMEOUT_VARIABLE: "600",
            "WEANJ_TEST_PIDS": str(pids),
        }
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "weanj", "check", "--dtype", "float64"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: "handling" in pids_of(pids) or p.poll() is not None)
        assert p.poll() is None, p.communicate()
        os.killpg(p.pid, signum)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == (130 if signum == signal.SIGINT else 143), out + err
    if signum == signal.SIGTERM:
        assert "weanj: terminated (SIGTERM)" in err, err
    assert "Traceback" not in err
    assert nothing_left(pids) == []


# --- Julia records are reused ---------------------------------------------------------------

TWO_FILES = """\
import numpy as np
import weanj
from toy_kernels import smooth_loop, smooth_scan

ex = weanj.register_example(weanj.Example(
    name="21-two", arrays=("x", "y"), wrt="x", params=(weanj.Param("S", default=2),),
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8),
                           "y": np.random.default_rng(seed + 1).standard_normal(8)},
))
weanj.jax_variant(ex, "jax-loop", family="smooth", loss=smooth_loop)
weanj.jax_variant(ex, "jax-scan", family="smooth", loss=smooth_scan)
weanj.julia_variant(ex, "julia-a", family="smooth", file="julia/a.jl", loss="smooth_loss")
weanj.julia_variant(ex, "julia-b", family="smooth", file="julia/b.jl", loss="smooth_loss")
"""

# What the stand-in juliacall computes for both files: Σ (Mˢx − y)² and its gradient in
# numpy, by hand (M is symmetric: ∇ = 2 Mˢ (Mˢx − y)); the worker never imports JAX.
TWO_FILES_KERNELS = """
import numpy as np

def smoothed(v, S):
    for _ in range(S):
        v = (np.roll(v, 1) + 2 * v + np.roll(v, -1)) / 4
    return v

def loss(x, y, S):
    return x.dtype.type(np.sum((smoothed(x, S) - y) ** 2))

def gradients(x, y, S):
    return [(2 * smoothed(smoothed(x, S) - y, S)).astype(x.dtype), None]

KERNELS = {name: {"smooth_loss": (loss, gradients)} for name in ("a.jl", "b.jl")}
"""


def two_files_project(root: Path) -> tuple[Path, dict[str, str], Path]:
    """A project of two Julia files (`julia/a.jl`, `julia/b.jl`), each the file of one
    variant, run by weanj's own worker program on the stand-in juliacall: the project,
    the environment of its commands, and the stand-in's record of calls."""
    write_project(
        root,
        {
            "two.py": TWO_FILES,
            "julia/a.jl": "smooth_loss(x, y, S) = 0.0  # read by no Julia here\n",
            "julia/b.jl": "smooth_loss(x, y, S) = 0.0  # read by no Julia here\n",
        },
    )
    kernels = root / "stand_in_kernels.py"
    kernels.write_text(TWO_FILES_KERNELS)
    record = root / "record.jsonl"
    path = [str(STAND_INS), str(REPO / "python"), os.environ.get("PYTHONPATH", "")]
    env = user_env(
        **{
            _julia_stand_in.WORKER_VARIABLE: REAL_WORKER,
            "PYTHONPATH": os.pathsep.join(p for p in path if p),
            "WEANJ_TEST_RECORD": str(record),
            "WEANJ_TEST_USER_KERNELS": str(kernels),
        }
    )
    return root, env, record


def recorded(record: Path, kind: str) -> list[dict]:
    if not record.exists():
        return []
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    return [e for e in entries if e["call"] == kind]


def progress(output: str, label: str) -> str:
    """How `weanj check -v` said it got an evaluation: `reused` or its seconds."""
    (line,) = [x for x in output.splitlines() if f"21-two {label}:" in x]
    return line.split(f"21-two {label}:")[1].split(",")[0].strip()


def check_json_of(root: Path) -> dict:
    return json.loads((root / "results" / "21-two" / "check.json").read_text())


@pytest.fixture(scope="module")
def two_files_checked(tmp_path_factory) -> dict:
    """The two-file project after its first `weanj check` (run in this process as a fresh
    one runs it; the worker a process of its own): the project, its environment and the
    stand-in's record, and what that first check left, kept as it was then (the finished
    command, the record's calls of each kind the tests read, and check.json). One command
    for both tests of a first check; then
    test_julia_records_are_reused_and_an_edit_recomputes_that_files_variants goes on in
    the project (the only test that runs anything more in it)."""
    root, env, record = two_files_project(tmp_path_factory.mktemp("two-files"))
    with commands_here(env):
        first = weanj_here(root, "check", "-v")
    return {
        "root": root,
        "env": env,
        "record": record,
        "first": first,
        "calls": {kind: recorded(record, kind) for kind in ("start", "loss_and_gradient", "grad")},
        "check.json": check_json_of(root) if first.returncode == 0 else None,
    }


def test_one_julia_evaluation_is_one_request(two_files_checked):
    """Acceptance 4 of #39: each Julia evaluation is one request for the loss and the
    gradient together; no gradient-only request is made, and what the worker computed is
    judged ok against the JAX variants (the project's first `weanj check`). Every pair
    agrees within the relative tolerance, so no rounding level is asked for (no run on
    perturbed inputs: issue 60)."""
    done, calls = two_files_checked["first"], two_files_checked["calls"]
    assert done.returncode == 0, done.stdout + done.stderr
    both = calls["loss_and_gradient"]
    assert len(both) == 2 * 2  # two variants × two dtypes, each evaluated once
    assert {a["dtype"] for c in both for a in c["arrays"]} == {"<f8", "<f4"}
    assert calls["grad"] == []
    pairs = two_files_checked["check.json"]["pairs"]
    verdicts = {tuple(p["subjects"]): p["verdict"] for p in pairs}
    assert verdicts[("julia-a", "julia-b")] == "ok"
    assert verdicts[("jax-loop", "julia-a")] == "ok"


def test_julia_records_are_reused_and_an_edit_recomputes_that_files_variants(two_files_checked):
    """Acceptance 5 of #39 (with the stand-in worker): after a first `weanj check`, which
    computes every Julia evaluation in one worker, a second with nothing changed reuses
    every Julia evaluation and starts no worker; editing one Julia file recomputes its
    variant's evaluations only (and starts one worker). The second is a fresh process
    (what it reuses is what the first left on disk); the first and the third run in this
    process as a fresh one runs them (`commands_here`: no worker before or after)."""
    root, env, record = (two_files_checked[k] for k in ("root", "env", "record"))
    labels = ["julia-a", "julia-a@float32", "julia-b", "julia-b@float32"]
    first = two_files_checked["first"]
    assert first.returncode == 0, first.stdout + first.stderr
    assert len(two_files_checked["calls"]["start"]) == 1
    assert all(progress(first.stderr, label) != "reused" for label in labels)

    again = run_in(root, "-m", "weanj", "check", "-v", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(recorded(record, "start")) == 1  # no worker started
    assert all(progress(again.stderr, label) == "reused" for label in labels)
    assert "reused 8 of 8" in again.stdout + again.stderr

    with (root / "julia" / "a.jl").open("a") as f:
        f.write("# an edit\n")
    with commands_here(env):
        edited = weanj_here(root, "check", "-v")
    assert edited.returncode == 0, edited.stdout + edited.stderr
    assert len(recorded(record, "start")) == 2
    assert [progress(edited.stderr, label) == "reused" for label in labels] == [
        False,
        False,
        True,
        True,
    ]


def test_bench_reports_the_times_inside_the_worker_beside_the_round_trip(tmp_path):
    """Acceptance 6 of #39 (with the stand-in worker, whose times are its own, and say
    so): `weanj bench` on a Julia variant labels its medians as round trips and prints
    the times measured inside the worker beside them (median and fastest of as many
    samples, after a warm-up call), recorded under `timed_inside` with their clock. The
    command runs in this process as a fresh one runs it (`commands_here`); the worker, whose
    times these are, is a process of its own either way."""
    root, env, record = two_files_project(tmp_path)
    with commands_here(env):
        done = weanj_here(root, "bench", "21-two", "--variants", "julia-a", "--samples", "3")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "(round trip)" in output
    assert "inside the stand-in worker (not Julia): forward" in output
    assert "Julia (time_ns" not in output  # a stand-in's times are never called Julia's
    (timings,) = recorded(record, "timings")
    assert timings["samples"] == 3
    (path,) = (root / "results" / "21-two" / "bench").glob("julia-*.json")
    (point,) = json.loads(path.read_text())["records"]
    inside = point["timed_inside"]
    assert inside["clock"] == "inside the stand-in worker (not Julia)"
    assert inside["samples"] == 3
    assert 0 < inside["forward_min_s"] <= inside["forward_s"]
    assert 0 < inside["grad_min_s"] <= inside["grad_s"]
    # the round trip holds the computation, timed inside, and more (the pipes, the copies)
    assert point["grad_s"] > inside["grad_min_s"]
    assert "| forward inside [ms] | gradient inside [ms] |" in done.stdout


def test_weanj_not_in_the_environment_says_how_to_add_it(fake, monkeypatch):
    """`using WeanJ` fails where juliapkg did not develop it (a `PYTHON_JULIACALL_PROJECT`
    used as it is, say): the Julia variants are unavailable, one line naming the fix."""
    monkeypatch.setenv("WEANJ_TEST_NO_WEANJ", "1")
    with pytest.raises(weanj.UnavailableError) as caught:
        weanj.variant("01-jacobi", "julia-jacobi").loss(np.ones((2, 2)), np.ones((2, 2)), 1)
    message = one_line(str(caught.value))
    assert "could not load WeanJ" in message and "juliapkg.resolve(force=True)" in message
    assert str(REPO / "julia") in message
