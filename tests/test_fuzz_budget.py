"""`weanj fuzz` keeps its word (#51): `--seconds S` ends the command within S and one
evaluation, no call starts once S is spent, and no call is left running when it returns
(no "still run in the background"); when most draws give NaN/Inf in every variant alike
(an explicit heat step drawn past its stability limit), fuzz says so in one line naming
the parameter and pointing at `weanj.Param(minimum=, maximum=)`.

No wall-clock figure is asserted: the budget is counted on a clock the test injects
(`fuzz(clock=...)`), which each evaluation of the stand-in variants moves on by 2 s (the
evaluation runs for real, through the session's watch, as every evaluation does); what is
asserted is the evaluations started after the budget (none), the simulated time at
return, and the threads and child processes left (counted).
"""

from __future__ import annotations

import os
import re
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._commands import fuzz as fuzz_command
from weanj._pipeline.session import _session

from .helpers import assert_one_line_error

SLOW = "93-fuzz-slow"
CALL_S = 2.0  # what each evaluation of the stand-in variants takes on the injected clock


def _children() -> set[int]:
    """This process's child processes, from /proc (none where /proc is missing)."""
    found = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task") if os.path.isdir("/proc") else ():
        path = f"/proc/{os.getpid()}/task/{task}/children"
        if os.path.exists(path):
            with open(path) as f:
                found.update(int(p) for p in f.read().split())
    return found


def two_ports(name: str, **fields) -> tuple:
    """An example of one vector x (n = 6 shared and declared, T from 2 to 4, default 3)
    and two JAX ports of T·Σx² that agree, `jax-a` and `jax-b`, registered: (example, A,
    B). `fields`: more of the example's (a `validate`)."""
    import jax.numpy as jnp

    def generate(seed, n=6):
        return {"x": np.random.default_rng(seed).standard_normal(n)}

    ex = weanj.register_example(
        weanj.Example(
            name=name,
            arrays=("x",),
            wrt="x",
            shapes={"x": ("n",)},
            params=(weanj.Param("T", default=3, minimum=2, maximum=4),),
            generate=generate,
            sizes=weanj.Sizes(generate=generate, values=(6,)),
            **fields,
        )
    )
    a = weanj.jax_variant(ex, "jax-a", family="q", loss=lambda x, T: jnp.sum(x**2) * T)
    b = weanj.jax_variant(ex, "jax-b", family="q", loss=lambda x, T: T * jnp.sum(x * x))
    return ex, a, b


@pytest.fixture
def slow_pair(project, monkeypatch):
    """Two agreeing JAX ports, each evaluation of which takes `CALL_S` seconds of the
    injected clock (`clock.read`); `clock.evaluations`: (started, ended) of each."""

    clock = SimpleNamespace(now=0.0, evaluations=[])
    clock.read = lambda: clock.now
    evaluate = _session.evaluate

    def slow(*args, **kwargs):
        started = clock.now
        try:
            return evaluate(*args, **kwargs)
        finally:
            clock.now += CALL_S
            clock.evaluations.append((started, clock.now))

    monkeypatch.setattr(_session, "evaluate", slow)

    two_ports(SLOW)
    weanj.write_inputs(SLOW)
    yield clock
    _registry.unregister_example(SLOW)


def test_seconds_ends_within_the_budget_and_one_evaluation_leaving_no_call(slow_pair, capsys):
    """#51's acceptance: `weanj fuzz --seconds 5` with evaluations of 2 s each."""
    clock = slow_pair
    evaluations = clock.evaluations
    threads, children = set(threading.enumerate()), _children()
    done = fuzz_command.fuzz(
        _registry.catalog(SLOW), seconds=5, max_examples=1000, clock=clock.read
    )
    out, err = capsys.readouterr()
    budget = 5.0
    assert done.out_of_time and done.exit_code == 0, out
    assert len(evaluations) >= 2, out
    # no evaluation starts once the budget is spent (the one in flight is waited for)
    assert [s for s, _ in evaluations if s >= budget] == [], evaluations
    # so the run ends within the budget and one evaluation (its longest)
    assert clock.now <= budget + CALL_S, (clock.now, evaluations)
    assert clock.now > budget  # the evaluation in flight at the budget was waited for
    # no call left running: no thread, no process, nothing said to run in the background
    assert set(threading.enumerate()) <= threads, threading.enumerate()
    assert _children() <= children
    assert "in the background" not in out + err
    summary = out.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"fuzz {SLOW}: ok — {done.draws} draw\(s\) in {clock.now:.0f} s \(stopped at the time "
        r"limit\); 0 of 1 pair\(s\) disagree",
        summary,
    ), summary


# --- draws where the kernel cannot go ---------------------------------------------------------

HEAT = """\
import jax
import jax.numpy as jnp
import numpy as np
import weanj

jax.config.update("jax_enable_x64", True)
STEPS = 4000  # past r = 1/2 the highest mode grows as |1 - 4r|^STEPS: beyond float64 soon


def generate(seed, n=32):
    rng = np.random.default_rng(seed)
    return {"u": rng.standard_normal(n), "target": rng.standard_normal(n)}


def validate(arrays):
    if arrays["u"].shape[0] < 3:
        raise weanj.InputError("the heat step needs at least 3 points")


heat = weanj.register_example(weanj.Example(
    name="41-heat", arrays=("u", "target"), wrt="u", shapes={"u": ("n",), "target": ("n",)},
    params=(PARAM,), generate=generate, validate=validate,
    sizes=weanj.Sizes(generate=generate, values=(32,)),
))


def explicit(u, target, r):
    step = lambda _, u: u + r * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1))
    return jnp.sum((jax.lax.fori_loop(0, STEPS, step, u) - target) ** 2)


def explicit_concatenated(u, target, r):
    def step(_, u):
        lap = jnp.concatenate([u[-1:], u[:-1]]) + jnp.concatenate([u[1:], u[:1]]) - 2 * u
        return u + r * lap
    return jnp.sum((jax.lax.fori_loop(0, STEPS, step, u) - target) ** 2)


weanj.jax_variant(heat, "jax-roll", family="heat", loss=explicit)
weanj.jax_variant(heat, "jax-concat", family="heat", loss=explicit_concatenated)
"""


def _heat_fuzz(root, param: str, monkeypatch):
    """`weanj fuzz 41-heat --seed 2 --max-examples 20` in the user project at `root` (in
    this process, as the user's `weanj` would run it), each judged draw recorded."""
    from weanj._pipeline.search import _fuzz_search

    from .projects import as_user_in, write_project

    root.mkdir()
    write_project(root, {"heat.py": HEAT.replace("PARAM", param)})
    judged = []
    judge = _fuzz_search.judge_draw

    def recorded(*args, **kwargs):
        judged.append(judge(*args, **kwargs))
        return judged[-1]

    monkeypatch.setattr(_fuzz_search, "judge_draw", recorded)
    with as_user_in(root):
        done = fuzz_command.fuzz(
            _registry.catalog("41-heat"), seed=2, max_examples=20, say=lambda s: None
        )
    return done, judged


def test_draws_past_a_stability_limit_are_said_with_the_bounds_to_declare(tmp_path, monkeypatch):
    """An explicit heat step, stable only for 0 < r <= 1/2, its r left open (default 0.4:
    drawn from [0.1, 1.6]): the draws past the limit give NaN/Inf in both ports alike,
    which is no disagreement; fuzz counts them and points at `weanj.Param`'s bounds. With
    the bounds declared, no draw gives NaN/Inf."""
    done, judged = _heat_fuzz(tmp_path / "open", 'weanj.Param("r", default=0.4)', monkeypatch)
    assert done.exit_code == 0 and not done.findings, done.lines
    blown = [d for d in judged if d.nonfinite]
    r = [dict(d.case.inputs.params)["r"] for d in judged]
    # the stability limit, independently: a draw blows up only past r = 1/2, and each
    # stable draw stays finite
    assert all(dict(d.case.inputs.params)["r"] > 0.5 for d in blown), r
    assert all(d.nonfinite for d in judged if dict(d.case.inputs.params)["r"] > 0.6), r
    assert len(judged) == done.draws and 4 * len(blown) >= done.draws, r
    most = "most draws (" if 2 * len(blown) > done.draws else ""
    said = (
        f"  {most}{len(blown)} of {done.draws}{')' if most else ' draw(s)'} gave NaN/Inf in "
        "every variant: r drawn from [0.1, 1.6]; bound it with weanj.Param('r', default=0.4, "
        "minimum=..., maximum=...)"
    )
    assert said in done.lines, done.lines

    done, judged = _heat_fuzz(
        tmp_path / "bounded", 'weanj.Param("r", default=0.4, minimum=0.05, maximum=0.5)',
        monkeypatch,
    )  # fmt: skip
    assert done.exit_code == 0 and judged and not any(d.nonfinite for d in judged), done.lines
    assert not any("NaN/Inf" in line for line in done.lines), done.lines
    assert "r ∈ [0.05, 0.5]" in "\n".join(done.lines)


def test_most_draws_non_finite_is_one_line_naming_the_open_parameters():
    from weanj._report._fuzz import nonfinite_line

    ex = weanj.Example(
        name="95-heat",
        arrays=("u",),
        wrt="u",
        params=(weanj.Param("r", 0.4), weanj.Param("T", 30, maximum=60)),
        generate=lambda seed: {"u": np.zeros(3)},
    )
    assert nonfinite_line(ex, 20, 17) == (
        "most draws (17 of 20) gave NaN/Inf in every variant: r drawn from [0.1, 1.6]; "
        "bound it with weanj.Param('r', default=0.4, minimum=..., maximum=...)"
    )  # T's range is declared: not named
    assert nonfinite_line(ex, 20, 3) == "3 of 20 draw(s) gave NaN/Inf in every variant alike"
    assert nonfinite_line(ex, 20, 0) is None
    closed = weanj.Example(
        name="95-closed",
        arrays=("u",),
        wrt="u",
        params=(weanj.Param("r", 0.4, minimum=0.0, maximum=4.0),),
        generate=lambda seed: {"u": np.zeros(3)},
    )
    assert nonfinite_line(closed, 10, 6).startswith(
        "most draws (6 of 10) gave NaN/Inf in every variant: r drawn from [0, 4]; bound it"
    )


# --- compilations across draws ----------------------------------------------------------------

SHAPES = "94-fuzz-shapes"


def test_draws_of_one_shape_reuse_the_compiled_programs(project):
    """#51: sizes drawn by fuzz reuse compilations across draws of the same shape. Counted
    from JAX's own compile events (`jax.monitoring`: one backend compilation, or retrieval
    from the persistent cache, per program made): a second draw of a shape and parameters
    already judged, on other data (another generator seed), makes no program; a draw of a
    new size does (the counter counts)."""
    import jax
    from jax._src import dispatch

    from weanj._model import VariantRun
    from weanj._pipeline.search._fuzz_search import Budget, judge_draw
    from weanj._pipeline.search._minimal_case import sized_case
    from weanj._pipeline.session._session import Session

    ex, a, b = two_ports(SHAPES)
    try:
        cat = _registry.catalog(SHAPES)
        made = []

        def compiled(event: str, seconds: float, **kwargs) -> None:
            if event == dispatch.BACKEND_COMPILE_EVENT:
                made.append(event)

        def programs(size: int, seed: int) -> int:
            before = len(made)
            case = sized_case(ex, size, {"T": 3}, seed)
            draw = judge_draw(session, cat, [(VariantRun(a), VariantRun(b))], case, Budget())
            assert not draw.failing and not draw.nonfinite, draw.outcomes
            return len(made) - before

        jax.monitoring.register_event_duration_secs_listener(compiled)
        try:
            with Session() as session:
                first = programs(7, seed=1)
                again = programs(7, seed=2)  # the same shape, other data
                other = programs(9, seed=1)  # a new shape
        finally:
            jax.monitoring.unregister_event_duration_listener(compiled)
    finally:
        _registry.unregister_example(SHAPES)
    assert first > 0 and other > 0, (first, other)
    assert again == 0, again


def test_a_budget_no_draw_fits_in_is_one_line_saying_so(slow_pair, capsys):
    """`--seconds 1` with evaluations of 2 s: the shared inputs' draw is cut after its first
    evaluation (the second never starts), and the command says why nothing was judged."""
    clock = slow_pair
    with pytest.raises(weanj.WeanjError) as e:
        fuzz_command.fuzz(_registry.catalog(SLOW), seconds=1, clock=clock.read)
    capsys.readouterr()
    assert_one_line_error(str(e.value), "no draw of 93-fuzz-slow was judged within --seconds 1")
    assert clock.evaluations == [(0.0, CALL_S)]


# --- what a run says it drew, and the seconds it counts (issue 70) --------------------------


def test_each_draw_is_one_line_with_the_values_drawn(project, monkeypatch, capsys):
    """Every draw judged is one line, in order, with the values drawn (the case as the
    engine judged it, seen here by a spy on `judge_draw`), and the summary's count of
    draws is the number of those lines."""
    from weanj._pipeline.search import _fuzz_search

    name = "95-fuzz-said"
    two_ports(name)
    weanj.write_inputs(name)
    judged = []
    judge = _fuzz_search.judge_draw

    def spy(*args, **kwargs):
        draw = judge(*args, **kwargs)
        judged.append(draw.case)
        return draw

    monkeypatch.setattr(_fuzz_search, "judge_draw", spy)
    try:
        done = fuzz_command.fuzz(_registry.catalog(name), max_examples=7, seed=3)
    finally:
        _registry.unregister_example(name)
    out = capsys.readouterr().out
    said = re.findall(r"^  draw (\d+): (.*): agree$", out, re.MULTILINE)
    assert said == [(str(k), c.describe()) for k, c in enumerate(judged, 1)], out
    assert said[0][1] == "n = 6, T = 3, the shared inputs" and len(said) == done.draws == 7
    assert "n = 6, T = 2, the shared inputs at T = 2" in out  # the default's neighbours
    assert re.search(r"^fuzz 95-fuzz-said: ok — 7 draw\(s\); 0 of 1 pair", out, re.MULTILINE)


SLOW_TRACE = "96-fuzz-slow-trace"
TRACE_S = 5.0  # what tracing `jax-slow-trace` takes: more than the --seconds below


def _fuzz_slow_trace(**options):
    """`fuzz` of a pair one of whose ports takes `TRACE_S` to trace, registered afresh (its
    programs compiled anew), with `--seconds 4` and at most 3 draws."""
    import time

    import jax.numpy as jnp

    ex = weanj.register_example(
        weanj.Example(
            name=SLOW_TRACE,
            arrays=("x",),
            wrt="x",
            generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)},
        )
    )
    weanj.jax_variant(ex, "jax-plain", family="q", loss=lambda x: jnp.sum(x**2))

    @weanj.jax_variant(ex, "jax-slow-trace", family="q")
    def slow_trace(x):
        time.sleep(TRACE_S)  # Python at trace time: part of the compilation
        return jnp.sum(x * x)

    weanj.write_inputs(SLOW_TRACE)
    try:
        cat = _registry.catalog(SLOW_TRACE)
        return fuzz_command.fuzz(cat, seconds=4, max_examples=3, say=lambda line: None, **options)
    finally:
        _registry.unregister_example(SLOW_TRACE)


def test_the_seconds_do_not_count_compilation(project):
    """`jax-slow-trace` takes 5 s to trace (a stand-in for a compilation on a loaded
    machine); every draw has the shared shape, so it is compiled once. Counted on the
    command's clock (compilation left out), `--seconds 4` holds all 3 draws, and the
    summary says how long was spent compiling; on a plain clock the first draw spends it
    all (that direction needs no bound: a slower machine only spends more)."""
    import time

    done = _fuzz_slow_trace()
    assert done.draws == 3 and not done.out_of_time, done.lines
    assert done.compiling_s >= TRACE_S, done.compiling_s
    assert re.search(r"— 3 draw\(s\) in \d+ s \(and \d+ s compiling\);", done.lines[-1])
    assert "up to 3 draws or 4 s (compilation not counted)" in "\n".join(done.lines)
    try:
        plain = _fuzz_slow_trace(clock=time.monotonic)
    except weanj.WeanjError as e:  # so loaded a machine that not even one draw fitted
        assert "no draw of 96-fuzz-slow-trace was judged within --seconds 4" in str(e)
    else:
        assert plain.draws == 1 and plain.out_of_time, plain.lines
