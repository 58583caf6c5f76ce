"""`weanj bisect EX A B [--over PARAM|SIZE] [--inputs CASE]`: the first iteration count and
the smallest size at which two variants part ways, the minimal case and the commands that
reproduce it.

The planted variant smooths like its sibling but damps element 3 from step 6 on: wrong
exactly for K >= 6 and n >= 4 (it has no element 3 below). The acceptance test runs it as
a user does, in a project of its own; the others register throwaway examples in-process
(among them a port wrong exactly at odd sizes, which a search of powers of two misses).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest

import weanj
from weanj import _registry, _run_names
from weanj._cli import main
from weanj._commands import bisect as bisect_command
from weanj._pipeline.search import _bisection
from weanj._watch import Watch

from .helpers import assert_one_line_error
from .projects import reproduce_case, saved_path, weanj_in, write_project
from .test_timeouts import clock  # noqa: F401 - the watch's clock, a fixture


def _bisect(example: str, a: str, b: str, **options):
    """`weanj bisect`'s function, the names resolved as the command line resolves them."""
    cat = _registry.catalog(example)
    return bisect_command.bisect(cat, *_run_names.same_family_pair(cat, a, b, "bisect"), **options)


STEPS = """\
import jax.numpy as jnp
import weanj
from toy_kernels import random_xy, smooth, smooth_loop, smooth_scan


def generate(seed, n=12):
    return random_xy(seed, n)


ex = weanj.register_example(weanj.Example(
    name="30-steps", arrays=("x", "y"), wrt="x", shapes={"x": ("n",), "y": ("n",)},
    params=(weanj.Param("K", default=10), weanj.Param("damp", default=0.999)),
    generate=generate, sizes=weanj.Sizes(generate=generate, values=(16, 32)),
))
weanj.jax_variant(ex, "jax-steps", family="s", loss=lambda x, y, K, damp: smooth_loop(x, y, K))
weanj.jax_variant(ex, "jax-scan", family="s", loss=lambda x, y, K, damp: smooth_scan(x, y, K))


@weanj.jax_variant(ex, "jax-late", family="s")
def late(x, y, K, damp):
    for k in range(1, K + 1):
        x = smooth(x)
        if k >= 6 and x.shape[0] >= 4:  # wrong from step 6 on, where there is an element 3
            x = x.at[3].multiply(damp)
    return jnp.sum((x - y) ** 2)


@weanj.jax_variant(ex, "jax-other", family="t")
def other(x, y, K, damp):
    return jnp.sum((x - y) ** 2)
"""


@pytest.fixture(scope="module")
def steps_project(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("steps-project"), {"steps.py": STEPS})


def smooth_reference(x, y, K, damp=1.0, late=False):
    """Loss and gradient of the planted kernels in numpy (the adjoint by hand: each step is
    linear, x ← D_k M x with M the symmetric circulant smoothing and D_k the damping)."""
    n = len(x)

    def M(v):
        return (np.roll(v, 1) + 2 * v + np.roll(v, -1)) / 4

    def D(v, k):
        v = v.copy()
        if late and k >= 6 and n >= 4:
            v[3] *= damp
        return v

    u = x.copy()
    for k in range(1, K + 1):
        u = D(M(u), k)
    r = u - y
    g = 2 * r
    for k in range(K, 0, -1):
        g = M(D(g, k))  # (D M)ᵀ = Mᵀ Dᵀ = M D
    return float(np.sum(r**2)), g


@pytest.mark.slow  # two searches; the fast tests below bisect over sizes and parameters
def test_bisect_over_K_names_step_6_and_the_smallest_size(steps_project):
    r = weanj_in(steps_project, "bisect", "30-steps", "jax-steps", "jax-late", "--over", "K")
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "first disagreement at K = 6 (K = 5 agrees; K tried: 1…8):" in out, out
    # Every value from 1 to 8 (the small values, before any doubling): wrong from 6 on.
    tried = re.findall(r"^  K = (\d+): (\w+)", out, re.MULTILINE)
    assert tried == [(str(k), "ok" if k < 6 else "FAIL") for k in range(1, 9)]
    sizes = re.findall(r"^  n = (\d+): (\w+)", out, re.MULTILINE)
    assert sizes == [("1", "ok"), ("2", "ok"), ("3", "ok"), ("4", "FAIL")]
    assert "smallest case: n = 4, K = 6" in out
    # The regions at the value found: element 3 is damped, so every entry's gradient moves.
    assert "12 element(s) in numpy slice [0:12] / Julia range [1:12]" in out
    assert "4 element(s) in numpy slice [0:4] / Julia range [1:4]" in out

    case = steps_project / "results/30-steps/cases/bisect-jax-steps-jax-late-K6-n4.h5"
    with h5py.File(case) as f:
        x, y, K, damp = f["x"][()], f["y"][()], int(f.attrs["K"]), float(f.attrs["damp"])
    expected = np.random.default_rng(0)  # the Sizes generator at n = 4, seed 0
    np.testing.assert_array_equal(x, expected.standard_normal(4))
    np.testing.assert_array_equal(y, expected.standard_normal(4))
    assert (K, damp) == (6, 0.999)

    # The printed commands reproduce it: both runs on the case file, then the pair judged
    # on it alone (`weanj bisect ... --inputs CASE`), with check's case id.
    commands = [
        line.strip()
        for line in out.splitlines()
        if line.startswith("  weanj run") or line.startswith("  weanj bisect")
    ]
    assert commands[2] == (
        "weanj bisect 30-steps jax-steps jax-late --inputs "
        "results/30-steps/cases/bisect-jax-steps-jax-late-K6-n4.h5"
    ), out
    *runs, judged = reproduce_case(steps_project, commands)
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert "30-steps::s::jax-steps~jax-late: FAIL" in judged.stdout
    assert "4 element(s) in numpy slice [0:4] / Julia range [1:4]" in judged.stdout
    # ... and the numbers in the run files are the kernels' (numpy, by hand).
    for run, variant, late in ((runs[0], "jax-steps", False), (runs[1], "jax-late", True)):
        path = saved_path(steps_project, run)
        assert path.parent == steps_project / "results/30-steps/runs", path  # not the store
        with h5py.File(path) as f:
            assert f.attrs["variant"] == variant
            loss_ref, g_ref = smooth_reference(x, y, 6, damp, late)
            assert abs(f.attrs["loss"] - loss_ref) <= 1e-12 * loss_ref
            np.testing.assert_allclose(
                f["gradient"][()], g_ref, rtol=0, atol=1e-11 * np.max(np.abs(g_ref))
            )


@pytest.fixture
def steps_here(project, monkeypatch):
    """The same example module, registered in this process (the command line called
    in-process: its own checks, without a process to start per call)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # `toy_kernels`
    weanj.example_names()  # the built-in examples first
    exec(compile(STEPS, "steps.py", "exec"), {"__name__": "steps"})
    weanj.write_inputs("30-steps")
    yield
    _registry.unregister_example("30-steps")


def test_bisect_respects_an_upper_value_and_fixed_parameters(steps_here, capsys):
    code = main(["bisect", "30-steps", "jax-steps", "jax-late", "--K", "7", "--damp", "1.0"])
    out, err = capsys.readouterr()
    # damp = 1 makes the planted bug a no-op: they agree at every K up to 7.
    assert code == 0, out + err
    assert re.findall(r"^  K = (\d+)", out, re.MULTILINE) == ["1", "2", "3", "4", "5", "6", "7"]
    assert out.splitlines()[-1] == "jax-steps and jax-late agree at every K tried (K = 1…7)"


def test_bisect_refuses_what_it_cannot_compare(steps_here, capsys):
    for args, fragment in (
        (("jax-steps", "jax-other"), "different families"),
        (("jax-steps", "jax-steps"), "two different variants"),
        (("jax-steps", "jax-late", "--over", "damp"), "needs an int parameter"),
        (
            ("jax-steps", "jax-late", "--over", "k"),
            "has no int parameter or size k; did you mean K?",
        ),
        (("jax-steps", "jax-nope"), "unknown variant 'jax-nope'"),
    ):
        code = main(["bisect", "30-steps", *args])
        out, err = capsys.readouterr()
        assert code == 2 and not out, (args, out, err)
        head, *listed = err.strip().splitlines()  # a list of known names may follow
        assert all(line.startswith("  ") for line in listed), err
        assert_one_line_error(head, fragment)


# --- in-process: the searches and an example without Sizes ------------------------------------


def test_smallest_value_scans_the_small_values_then_doubles_then_bisects():
    calls = []

    def disagree(v):
        calls.append(v)
        return v >= 37

    assert _bisection.smallest_value(disagree, 1, 1000) == 37
    # every value from 1 to 8, then doubling and bisection
    assert calls == [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 48, 40, 36, 38, 37]
    assert _bisection.smallest_value(lambda v: True, 3, 10) == 3
    assert _bisection.smallest_value(lambda v: False, 1, 10) is None
    assert _bisection.smallest_value(lambda v: v >= 10, 1, 10) == 10


def test_size_candidates_are_small_ones_then_powers_of_two_and_their_odd_neighbours():
    small = [1, 2, 3, 4, 5, 6, 7, 8]

    def candidates(*values):
        return list(weanj.Sizes(generate=lambda seed, n: {}, values=values).candidates())

    assert candidates(32) == [*small, 15, 16, 17, 31, 32]
    assert candidates(100) == [*small, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100]
    assert candidates(4) == small
    # every declared size, between the powers of two too (fuzz draws them, bisect tries them)
    assert candidates(20, 40) == [*small, 15, 16, 17, 20, 31, 32, 33, 40]


NAME = "91-nosizes"


@pytest.fixture
def nosizes(project):
    import jax.numpy as jnp

    ex = weanj.register_example(
        weanj.Example(
            name=NAME,
            arrays=("x",),
            wrt="x",
            params=(weanj.Param("T", default=4),),
            generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal((3, 5))},
        )
    )

    @weanj.jax_variant(ex, "jax-power", family="p")
    def power(x, T):
        return jnp.sum(x**2) * T

    @weanj.jax_variant(ex, "jax-off", family="p")
    def off(x, T):  # wrong from T = 3 on, at row 1 only
        return jnp.sum(x**2) * T + (T >= 3) * 1e-3 * jnp.sum(x[1] ** 2)

    release = threading.Event()

    @weanj.jax_variant(ex, "jax-slow", family="p")
    def slow(x, T):
        release.wait(300)  # while tracing: never done before the test ends (no clock race)
        return jnp.sum(x**2) * T

    weanj.write_inputs(NAME)
    yield ex
    release.set()
    _registry.unregister_example(NAME)


def test_without_sizes_the_minimal_case_is_the_shared_inputs(nosizes, capsys, project):
    done = _bisect(NAME, "jax-power", "jax-off")
    out = capsys.readouterr().out
    assert done.exit_code == 1 and done.first == 3, out
    assert "first disagreement at T = 3 (T = 2 agrees; T tried: 1…8):" in out
    assert "declares no Sizes: the minimal case is the shared inputs" in out
    assert "5 element(s) in numpy slice [1:2, 0:5] / Julia range [2:2, 1:5]" in out  # row 1 only
    (j,) = done.outcome.judgements  # check's pair id, on the minimal case
    assert (j.case, j.verdict) == ("91-nosizes::p::jax-power~jax-off", weanj.Verdict.FAIL)
    case = project / "results" / NAME / "cases" / "bisect-jax-power-jax-off-T3.h5"
    assert done.case == case
    shared = weanj.load_inputs(NAME)
    with h5py.File(case) as f:
        np.testing.assert_array_equal(f["x"][()], shared["x"])
        assert int(f.attrs["T"]) == 3
    shown = "results/91-nosizes/cases/bisect-jax-power-jax-off-T3.h5"
    assert done.reproduce == [
        f"weanj run {NAME} jax-power --inputs {shown}",
        f"weanj run {NAME} jax-off --inputs {shown}",
        f"weanj bisect {NAME} jax-power jax-off --inputs {shown}",
    ]
    # `--inputs CASE` judges the pair on that file alone: the same verdict and region at
    # its T = 3; at T = 2 (`--T 2`) they agree.
    again = _bisect(NAME, "jax-power", "jax-off", inputs=case)
    out = capsys.readouterr().out
    assert again.exit_code == 1 and again.first is None, out
    assert [(j.case, j.verdict) for j in again.outcome.judgements] == [
        ("91-nosizes::p::jax-power~jax-off", weanj.Verdict.FAIL)
    ]
    assert "5 element(s) in numpy slice [1:2, 0:5] / Julia range [2:2, 1:5]" in out
    before = again.outcome.judgements[0].comparison
    assert before.max_abs == j.comparison.max_abs  # the same numbers as the search found
    agreeing = _bisect(NAME, "jax-power", "jax-off", inputs=case, params={"T": 2})
    assert agreeing.exit_code == 0
    assert [str(j.verdict) for j in agreeing.outcome.judgements] == ["ok"]
    capsys.readouterr()
    # A file that is not an inputs file of the example (a gradient file) is refused in
    # one line, exit 2.
    gradient = project / "results" / NAME / "gradients" / "jax-power.h5"
    assert main(["run", NAME, "jax-power"]) == 0 and gradient.is_file()
    capsys.readouterr()
    assert main(["bisect", NAME, "jax-power", "jax-off", "--inputs", str(gradient)]) == 2
    assert_one_line_error(capsys.readouterr().err, str(gradient))


@pytest.mark.usefixtures("clock")
def test_a_variant_out_of_time_is_an_error_not_a_verdict(nosizes, capsys, monkeypatch):
    """`clock` (test_timeouts'): jax-slow's call (it waits while tracing) passes the
    limit of 600 s at once on the watch's clock, which no other call can, however busy
    the machine (with a real limit of 5 s, jax-power's compile could under load)."""
    monkeypatch.setattr(Watch, "_start_beating", lambda self: None)  # it reads that clock
    with pytest.raises(weanj.WeanjError) as e:
        _bisect(NAME, "jax-power", "jax-slow", timeout=600)
    assert_one_line_error(
        str(e.value),
        "jax-slow took longer than the time limit of 600 s",
        "T = 1",
        "raise --timeout",
    )


# --- a port wrong only at odd T (issue 70: doubling tried 1, 2, 4, …, 200 and said "agree") ----

ODD_T = "94-odd-t"


def _wrong_at(T: int, start: int) -> bool:
    """Where `jax-odd` is wrong (the test's own statement of the planted bug)."""
    return T % 2 == 1 and T >= start


@pytest.fixture
def odd_t(project):
    """`jax-odd` adds a term at odd T from `start` on (3, or 11 with `--start`: 3 the
    default); `jax-plain` is right everywhere."""
    import jax.numpy as jnp

    ex = weanj.register_example(
        weanj.Example(
            name=ODD_T,
            arrays=("x",),
            wrt="x",
            params=(weanj.Param("T", default=6), weanj.Param("start", default=3)),
            generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal((3, 5))},
        )
    )
    weanj.jax_variant(ex, "jax-plain", family="p", loss=lambda x, T, start: jnp.sum(x**2) * T)

    @weanj.jax_variant(ex, "jax-odd", family="p")
    def odd(x, T, start):
        return jnp.sum(x**2) * T + _wrong_at(T, start) * 1e-3 * jnp.sum(x[1] ** 2)

    weanj.write_inputs(ODD_T)
    yield ex
    _registry.unregister_example(ODD_T)


def test_bisect_finds_a_port_wrong_only_at_odd_t_and_says_it_is_not_monotone(odd_t, capsys):
    """Wrong at T = 3, 5, 7, …: the values 1 to 8 are each tried before any doubling, so
    the search finds T = 3 and says agreement is not monotone in T (2, 4, 6, 8 agree)."""
    done = _bisect(ODD_T, "jax-plain", "jax-odd", over="T")
    out = capsys.readouterr().out
    assert done.exit_code == 1 and done.first == 3 and not done.monotone, out
    assert done.tried == {T: _wrong_at(T, 3) for T in range(1, 9)}, out
    assert (
        "first disagreement at T = 3 (T = 2 agrees; T tried: 1…8); not monotone in T: "
        "T = 4, 6, 8 agree above it (3, 5, 7 disagree), so a value not tried may go either way:"
    ) in out, out


def test_bisect_past_the_small_values_tries_the_value_above_the_one_it_found(odd_t, capsys):
    """Wrong at odd T from 11 on, searched up to T = 41: the small values agree, doubling
    reaches 41 (wrong), bisection finds 39 (38 agrees), and 40, the value above, agrees:
    not monotone, said so; every value tried is the test's own statement of the bug."""
    done = _bisect(ODD_T, "jax-plain", "jax-odd", over="T", params={"T": 41, "start": 11})
    out = capsys.readouterr().out
    assert done.first == 39 and not done.monotone, out
    assert list(done.tried) == [*range(1, 9), 16, 32, 41, 36, 38, 39, 40], out
    assert done.tried == {T: _wrong_at(T, 11) for T in done.tried}, out
    assert "first disagreement at T = 39 (T = 38 agrees; T tried: 1…8, 16, 32, 36, 38…41)" in out
    assert "not monotone in T: T = 40 agree above it (39, 41 disagree)" in out


def test_bisect_that_finds_nothing_lists_the_values_tried_and_those_it_did_not(odd_t, capsys):
    """Wrong at odd T from 11 on, searched up to 8 × 6 = 48 (even): every value tried is
    even or small, so the pair agrees there, and the line says which values those were
    and that the others were not tried, never "every T"."""
    done = _bisect(ODD_T, "jax-plain", "jax-odd", over="T", params={"start": 11})
    out = capsys.readouterr().out
    assert done.exit_code == 0 and done.first is None, out
    assert done.tried == dict.fromkeys([*range(1, 9), 16, 32, 48], False), out
    assert (
        "jax-plain and jax-odd agree at every T tried (T = 1…8, 16, 32, 48); the 37 value(s) "
        "between were not tried (a port wrong at some values only may part there: weanj fuzz "
        "draws others)"
    ) in out, out


# --- a port wrong exactly at odd sizes (issue 31: XLA's contraction at a grid midpoint) ------

ODD = "93-odd-n"


@pytest.fixture
def odd_sizes(project):
    """Sizes n >= 10 only (the example's `validate`); `jax-mid` is wrong exactly at odd n,
    where its grid has a midpoint, and agrees at every even n (the shared inputs: n = 16)."""
    yield _odd_example()
    _registry.unregister_example(ODD)


def _odd_example(expected=()):
    """`odd_sizes`'s example, `expected=` its declarations."""
    import jax.numpy as jnp

    def generate(seed, n=16):
        rng = np.random.default_rng(seed)
        return {"x": rng.standard_normal(n), "y": rng.standard_normal(n)}

    def validate(arrays):
        if arrays["x"].shape[0] < 10:
            raise weanj.InputError(f"needs n >= 10, got {arrays['x'].shape[0]}")

    ex = weanj.register_example(
        weanj.Example(
            name=ODD,
            arrays=("x", "y"),
            wrt="x",
            shapes={"x": ("n",), "y": ("n",)},
            generate=generate,
            validate=validate,
            sizes=weanj.Sizes(generate=generate, values=(16, 32)),
            expected=expected,
        )
    )

    def loss(x, y):
        return jnp.sum((x - y) ** 2)

    @weanj.jax_variant(ex, "jax-mid", family="g")
    def mid(x, y):
        n = x.shape[0]
        if n % 2 == 1:  # the midpoint's sign flipped: its term weighs 1.001
            x = x.at[n // 2].multiply(1.001)
        return jnp.sum((x - y) ** 2)

    weanj.jax_variant(ex, "jax-sum", family="g", loss=loss)
    weanj.jax_variant(
        ex, "jax-expanded", family="g", loss=lambda x, y: jnp.sum(x * x - 2 * x * y + y * y)
    )
    weanj.write_inputs(ODD)
    return ex


MIDPOINT = "the midpoint's term weighs 1.001"


def midpoint(arrays) -> list[int]:
    n = arrays["x"].shape[0]
    return [n // 2] if n % 2 == 1 else []


@pytest.fixture
def declared_odd(project, request):
    """`odd_sizes`, with `jax-mid` declared to differ from `jax-sum` in x at the elements
    `request.param` (a list, or a function of the arrays)."""
    declared = weanj.Expected(
        variant="jax-mid", against="jax-sum", reason=MIDPOINT, array="x", elements=request.param
    )
    yield _odd_example(expected=(declared,))
    _registry.unregister_example(ODD)


def _tried(out: str) -> list[tuple[int, str]]:
    return [(int(n), word) for n, word in re.findall(r"^  n = (\d+): (\w+)", out, re.MULTILINE)]


def test_bisect_over_the_size_names_the_smallest_odd_size(odd_sizes, capsys, project):
    assert main(["bisect", ODD, "jax-sum", "jax-mid", "--over", "n"]) == 1
    out = capsys.readouterr().out
    refused = [(n, "refused") for n in range(1, 9)]
    # 1 … 8 (refused), 15 fails; then every size between the largest agreeing one and it.
    assert _tried(out) == [*refused, (15, "FAIL"), (9, "refused"), (10, "ok"), (11, "FAIL")], out
    assert "smallest case: n = 11" in out
    assert "1 element(s) in numpy slice [5:6] / Julia range [6:6]" in out  # the midpoint of n = 11
    case = project / "results" / ODD / "cases" / "bisect-jax-sum-jax-mid-n11.h5"
    rng = np.random.default_rng(odd_sizes.seed)  # the Sizes generator at n = 11
    with h5py.File(case) as f:
        np.testing.assert_array_equal(f["x"][()], rng.standard_normal(11))
    # Independently of weanj: the ports' losses differ at n = 11, not at n = 10 or 12.
    for n, differ in ((10, False), (11, True), (12, False)):
        rng = np.random.default_rng(odd_sizes.seed)
        x, y = rng.standard_normal(n), rng.standard_normal(n)
        w = x.copy()
        if n % 2:
            w[n // 2] *= 1.001
        assert (np.sum((w - y) ** 2) != np.sum((x - y) ** 2)) == differ


def test_bisect_over_the_size_lists_the_sizes_where_all_agree(odd_sizes, capsys):
    assert main(["bisect", ODD, "jax-sum", "jax-expanded", "--over", "n"]) == 0
    out = capsys.readouterr().out
    assert [n for n, word in _tried(out) if word != "refused"] == [15, 16, 17, 31, 32], out
    assert "jax-sum and jax-expanded agree at every n tried (n = 15…17, 31…32)" in out
    assert "minimal case written" not in out


def test_the_minimal_case_is_the_case_fuzz_writes_too(odd_sizes, project, capsys):
    """bisect's minimal case is `_pipeline.search._minimal_case.FuzzInput`, fuzz's type: made at a
    size by the Sizes generator, written under `results/EX/cases/` byte-identical each
    time, read back from its file, its reproduce commands its own."""
    from weanj._pipeline.search._minimal_case import FuzzInput, sized_case
    from weanj._places import places

    done = _bisect(ODD, "jax-sum", "jax-mid", over="n", say=lambda s: None)
    case = done.minimal
    assert isinstance(case, FuzzInput) and (case.size, case.seed) == (11, odd_sizes.seed)
    assert case.path == project / "results" / ODD / "cases" / "bisect-jax-sum-jax-mid-n11.h5"
    assert done.case == case.path and case.inputs.path == case.path  # read back from it
    written = case.path.read_bytes()
    made = sized_case(odd_sizes, 11, {}, odd_sizes.seed)
    assert made.inputs.key() == case.inputs.key()  # the generator's n = 11, as fuzz makes it
    again = made.write(places(), "bisect-jax-sum-jax-mid-n11")
    assert again.path.read_bytes() == written
    runs = _run_names.same_family_pair(_registry.catalog(ODD), "jax-sum", "jax-mid", "bisect")
    assert done.reproduce == again.reproduce(*runs, places())
    assert made.order() == (22, 0.0, odd_sizes.seed)  # 2 × 11 elements, no parameter
    # a size the example refuses is no case: why, in words
    assert sized_case(odd_sizes, 3, {}, 0) == "refused (n = 3: needs n >= 10, got 3)"


@pytest.mark.parametrize("declared_odd", [midpoint], indirect=True)
def test_bisect_on_a_declared_pair_looks_beyond_its_declaration(declared_odd, capsys):
    """Declared where it differs (the midpoint of every odd n: the test above measures
    it), the pair is said to be declared, with the reason, and differs as declared at
    each odd size tried: nothing beyond it, exit 0."""
    assert main(["bisect", ODD, "jax-sum", "jax-mid", "--over", "n"]) == 0
    out = capsys.readouterr().out
    declared = (
        f"jax-sum~jax-mid is declared to differ ({MIDPOINT}): searching for where it differs "
        "beyond the declaration"
    )
    assert out.splitlines()[1] == declared, out
    tried = [(n, word) for n, word in _tried(out) if word != "refused"]
    assert tried == [(n, "expected" if n % 2 else "ok") for n in (15, 16, 17, 31, 32)], out
    assert (
        "jax-sum and jax-mid agree, or differ only as declared, at every n tried (n = 15…17, 31…32)"
    ) in out
    assert "minimal case written" not in out


@pytest.mark.parametrize("declared_odd", [[0]], indirect=True)
def test_bisect_finds_where_a_declared_pair_differs_beyond_its_declaration(
    declared_odd, capsys, project
):
    """Declared at x[0], where it does not differ: at an even size the declared difference
    does not show, which is no failure of the search (`ok`); at an odd size it differs
    outside x[0], beyond the declaration: the smallest such size, n = 11, is the case,
    its message naming the declaration and the element (x[5], the midpoint)."""
    assert main(["bisect", ODD, "jax-sum", "jax-mid", "--over", "n"]) == 1
    out = capsys.readouterr().out
    refused = [(n, "refused") for n in range(1, 9)]
    assert _tried(out) == [*refused, (15, "FAIL"), (9, "refused"), (10, "ok"), (11, "FAIL")], out
    assert "  n = 10: ok (the declared difference does not show)" in out
    assert "smallest case: n = 11" in out
    assert "not as declared: differs outside x[0]: 1 other element(s) of x, the worst x[5] " in out
    assert f"(declared: {MIDPOINT})" in out
    assert (project / "results" / ODD / "cases" / "bisect-jax-sum-jax-mid-n11.h5").is_file()
