"""What an evaluation with its checks compiles (issues 51 and 60): counted from JAX's own
compile event (`_io._jax_cache.compilations`), each compilation put to the variant and
dtype whose phase was running (`_watch`).

A JAX variant's loss and gradient are one program per dtype; in float64 the same program
holds each array's forward-mode derivative for the jvp check (computed in the
evaluation's own call) and, in a branch of its own, the plain loss that the Taylor test's
steps and the loss floor's runs call (`_backends/_checking.py`, issue 73): one program in
float64, one in float32. A run of the same example again compiles nothing.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

from weanj._io import _jax_cache
from weanj._pipeline.engine._cases import judge_plan, read_plan
from weanj._pipeline.session._session import Session
from weanj._places import places
from weanj._registry import catalog

EXAMPLE = "01-jacobi"
KINDS = ("jax-jacobi", "jax-jacobi-adjoint", "jax-jacobi-enzyme")
# Enzyme-JAX compiles a variant's forward on its own to find the arguments XLA keeps
# (enzyme_ad/jax/primitives.py): not weanj's program, counted apart.
ENZYME_PROBE = "jit(forward_for_enzyme)"
PHASE = re.compile(
    rf"(?:compiling or running )?{EXAMPLE} (?P<label>[^\s:]+)(?::.*?(?: by (?P<by>\S+))?)?"
)


def _subject(text: str | None) -> tuple[str, str]:
    m = PHASE.fullmatch(text or "")
    if m is None:
        return (text or "(no phase)", "")
    name, _, dtype = (m.group("by") or m.group("label")).partition("@")
    return name, dtype or "float64"


def _judged(cat) -> list[tuple[str, str, float]]:
    plan = read_plan(cat, places(), live=True)
    with Session(say=lambda line: None) as session:
        with _jax_cache.compilations(session.watch.current) as found:
            judge_plan(plan, session)
    return list(found)


def test_subjects_are_read_from_the_phase_texts():
    assert _subject(f"compiling or running {EXAMPLE} jax-jacobi@float32") == (
        "jax-jacobi",
        "float32",
    )
    assert _subject(f"{EXAMPLE} jax-jacobi: loss floor (its rounding level)") == (
        "jax-jacobi",
        "float64",
    )
    assert _subject(f"{EXAMPLE} jax-jacobi-enzyme: jvp of u by jax-jacobi") == (
        "jax-jacobi",
        "float64",
    )
    assert _subject(f"{EXAMPLE}: judging a against b (u)")[1] == ""


def test_an_evaluation_with_its_checks_compiles_one_program_per_dtype(project, monkeypatch):
    import jax

    monkeypatch.setenv("WEANJ_COMPILATION_CACHE", "0")
    full = catalog(EXAMPLE)
    # one variant of each way of building: JAX AD, a hand-written gradient (whose jvp
    # check borrows jax-jacobi's forward mode), Enzyme-JAX where it is installed
    cat = dataclasses.replace(full, variants=tuple(v for v in full.variants if v.name in KINDS))
    runs = [v for v in cat.variants if v.unavailable_reason() is None]
    assert {v.name for v in runs} >= {"jax-jacobi", "jax-jacobi-adjoint"}
    jax.clear_caches()  # cold: no program compiled by an earlier test serves this one
    found = _judged(cat)
    programs = Counter(_subject(where) for where, name, _ in found if name != ENZYME_PROBE)
    for v in runs:
        for dtype in v.dtypes:
            # in float64 the one program (the jvp check's forward mode and the Taylor
            # steps' plain loss in it); in float32 the one program; jax-jacobi-adjoint's
            # jvp check reads jax-jacobi's derivatives, computed in its evaluation's call
            want = 1
            assert programs[(v.name, dtype)] == want, (v.name, dtype, programs, found)
    # nothing compiled outside an evaluation or a check of one of them
    assert set(programs) <= {(v.name, d) for v in runs for d in v.dtypes}, programs
    # issue 73: at most two compilations a run, Enzyme-JAX's own forward probes counted
    total_runs = sum(len(v.dtypes) for v in runs)
    assert len(found) <= 2 * total_runs, (len(found), total_runs, found)
    # Judged again (a new session, the variants' programs kept): the same shapes, dtypes
    # and parameters hit the same executables; nothing is traced or compiled again.
    assert _judged(cat) == []


def test_the_old_way_would_compile_more(project, monkeypatch):
    """The counter is not blind: one variant built as before issue 51 (a loss program and
    a gradient program) compiles both in each dtype, and in float64 its forward mode too."""
    import jax

    from weanj._model import Functions

    monkeypatch.setenv("WEANJ_COMPILATION_CACHE", "0")
    cat = catalog(EXAMPLE)
    v = cat.find("jax-jacobi")
    fns = v.functions()
    monkeypatch.setitem(v._built, "fns", Functions(fns.loss, fns.grad, fns.jvp))
    only = type(cat)(cat.example, (v,))
    jax.clear_caches()
    programs = Counter(_subject(where) for where, _, _ in _judged(only))
    assert programs[("jax-jacobi", "float32")] == 2, programs
    assert programs[("jax-jacobi", "float64")] == 3, programs


FIXED = "93-one-shape"


def test_fuzz_draws_of_one_shape_compile_nothing_again(project, monkeypatch):
    """Drawn values of one shape (the arrays' shape fixed, no parameter) hit the programs
    the first draw compiled: the count does not grow with the draws."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import weanj
    from weanj import _registry
    from weanj._commands import fuzz as fuzz_command

    monkeypatch.setenv("WEANJ_COMPILATION_CACHE", "0")

    def generate(seed):
        return {"x": np.random.default_rng(seed).standard_normal(5)}

    ex = weanj.register_example(
        weanj.Example(name=FIXED, arrays=("x",), wrt="x", shapes={"x": (5,)}, generate=generate)
    )
    try:

        @weanj.jax_variant(ex, "jax-a", family="q")
        def a(x):
            return jnp.sum(jnp.sin(x) ** 2)

        @weanj.jax_variant(ex, "jax-b", family="q")
        def b(x):
            return jnp.sum(1 - jnp.cos(x) ** 2)

        weanj.write_inputs(FIXED)
        jax.clear_caches()
        with _jax_cache.compilations() as found:
            done = fuzz_command.fuzz(
                _registry.catalog(FIXED), max_examples=12, seconds=600, say=lambda line: None
            )
        assert done.exit_code == 0 and done.draws >= 6, done.lines
        programs = Counter(name for _, name, _ in found)
        # one loss-and-gradient program per variant, whatever the number of draws
        assert programs == {"jit(loss_and_gradient)": 2}, (programs, done.draws)
    finally:
        _registry.unregister_example(FIXED)
