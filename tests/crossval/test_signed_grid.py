"""What is particular to 06-signed-grid (issue 31, item 5): where the literal port parts ways.

- The reference (`reference_signed_grid.py`) checks itself: its hand gradient against
  central differences, and t = 0 exactly at the midpoint of every odd n.
- `jax-signfit-integer` equals the reference, loss and both gradient arrays, at every n
  from 2 to 20 (odd and even) in float64, and at odd and even sizes in float32.
- `jax-signfit` (the literal port) parts ways with the reference at exactly the sizes
  where XLA's arithmetic, t = fma(k, RN(2/(n-1)), -1) at the midpoint k = (n-1)/2, is not
  0: computed here with exact rational arithmetic, compared with what the port returns,
  and equal to the set measured with jax 0.10.2 on x86-64, n ∈ {7, 11, 13, 15, 19} within
  3..20. There only the midpoint's sign flips, in the direction the fused value has.
- The compiled HLO holds the multiplication by the rounded reciprocal, no division.

The sweeps over sizes evaluate each port's own loss function (what `weanj.jax_variant`
registered) and its gradient from one compiled program per size (`jax.value_and_grad`),
half the compilations of `.loss` and `.grad`; `weanj check` runs the registered variants.
- `weanj check 06-signed-grid` (a subprocess, as a user runs it) exits 0 with the literal
  port as its one expected difference (`weanj.Expected`, at x[0] and w[5], with its reason).
- `weanj fuzz`: with the declaration, every draw at a size where the fused midpoint flips
  differs as declared and the run passes, counting them; in a user project that registers
  the two ports again without it (`signfit_copy`), fuzz finds by itself where they part.
- The validator's one-line rejections.
"""

from __future__ import annotations

import functools
import json
import platform
import re
from fractions import Fraction

import h5py
import jax
import numpy as np
import pytest

import weanj

from ..helpers import needs_xla_cpu, rejection, run_weanj
from . import reference_signed_grid as reference

EXAMPLE = "06-signed-grid"
LITERAL, INTEGER = "jax-signfit", "jax-signfit-integer"
# Measured with jax 0.10.2 on x86-64 (AMD EPYC, FMA3), float64 and float32 alike; the
# model below predicts the same set from arithmetic alone.
MEASURED = {7, 11, 13, 15, 19}
SIZES = range(3, 21)


def fused_midpoint(n: int, dtype=np.float64) -> float:
    """t at the midpoint k = (n-1)/2 of an odd n as XLA computes it on a CPU: the
    division by n-1 made a multiplication by c = RN(2/(n-1)), then contracted with the
    addition into fma(k, c, -1): k·c - 1 exactly, rounded once (exact rationals here)."""
    k = (n - 1) // 2
    c = dtype(2) / dtype(n - 1)  # numpy rounds the quotient to the dtype: RN(2/(n-1))
    return float(dtype(float(Fraction(k) * Fraction(float(c)) - 1)))


def parting_sizes(sizes, dtype=np.float64) -> set[int]:
    """The odd sizes whose fused midpoint is not 0, i.e. whose sign(t) flips."""
    return {n for n in sizes if n % 2 == 1 and fused_midpoint(n, dtype) != 0.0}


def needs_fma():
    from weanj.examples import signed_grid

    needs_xla_cpu("XLA's contraction of t = -1 + i·c into a fused multiply-add")
    if not signed_grid.xla_fuses_here():
        pytest.skip(
            f"this CPU ({platform.machine()}) has no fused multiply-add that XLA could "
            "contract t = -1 + i·c into, or it cannot be told from /proc/cpuinfo"
        )


@functools.cache
def _value_and_grad(name: str):
    """The variant's own loss (what `weanj.jax_variant` registered) with its gradient
    from one compiled program per size: half the compilations of `.loss` and `.grad`."""
    from weanj.examples import signed_grid

    loss = {LITERAL: signed_grid.literal_loss, INTEGER: signed_grid.integer_loss}[name]
    return jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))


@functools.cache
def evaluate(name: str, n: int, dtype: str = "float64"):
    """(loss, {"x": ∂L/∂x, "w": ∂L/∂w}) of a port on `sized(n)`, cast to `dtype`."""
    arrays = sized(n)
    x, w = (np.asarray(arrays[k]).astype(dtype) for k in ("x", "w"))
    with jax.enable_x64(True):
        loss, (gx, gw) = _value_and_grad(name)(x, w)
    assert gx.dtype == gw.dtype == np.dtype(dtype)
    return float(loss), {"x": np.asarray(gx, np.float64), "w": np.asarray(gw, np.float64)}


@functools.cache
def expected(n: int):
    """The reference's loss and gradient on `sized(n)`."""
    arrays = sized(n)
    return reference.loss("signfit", arrays), reference.gradient("signfit", arrays)


def agrees(loss, g, loss_ref, g_ref, dtype: str = "float64") -> dict[str, bool]:
    """The tolerance policy, per part: the loss, and each gradient array."""
    tol = weanj.tolerance(dtype)
    out = {"loss": abs(loss - loss_ref) <= tol.loss * abs(loss_ref)}
    for k, ref in g_ref.items():
        out[k] = float(np.max(np.abs(g[k] - ref))) <= tol.grad * float(np.max(np.abs(ref)))
    return out


def sized(n: int, m: int = 4):
    return reference.sized_inputs(m, n)[0]


# --- the reference checks itself ------------------------------------------------------


@pytest.mark.parametrize("n", [2, 7, 8])
def test_reference_gradient_matches_central_differences(n):
    arrays = sized(n)
    g, fd = reference.gradient("signfit", arrays), reference.fd_gradient(arrays)
    for k in ("x", "w"):
        assert np.max(np.abs(fd[k] - g[k])) <= 1e-9 * np.max(np.abs(g[k])), k


def test_reference_grid_has_t_exactly_zero_at_every_odd_midpoint():
    for n in range(3, 202, 2):
        t = reference.grid(n)
        assert t[(n - 1) // 2] == 0.0 and t[0] == -1.0 and t[-1] == 1.0, n


def test_the_fused_midpoint_is_zero_only_when_the_half_is_a_power_of_two():
    """k·RN(1/k) = 1 exactly iff 1/k is a double, i.e. k = 2^j: so every odd n but
    2^j + 1 has a fused midpoint of ±ulp size, in float64 and float32."""
    for dtype in (np.float64, np.float32):
        for n in range(3, 2002, 2):
            k = (n - 1) // 2
            assert (fused_midpoint(n, dtype) == 0.0) == (k & (k - 1) == 0), (n, dtype)
    assert fused_midpoint(7) == -(2.0**-54) and fused_midpoint(11) == 2.0**-54
    assert parting_sizes(SIZES) == MEASURED


# --- the integer port: the loop's function at every size ----------------------------------


def test_integer_port_equals_the_reference_at_every_size():
    for n in range(2, 21):
        parts = agrees(*evaluate(INTEGER, n), *expected(n))
        assert all(parts.values()), f"n = {n}: {parts}"


@pytest.mark.parametrize("name", [INTEGER, LITERAL])
def test_float32_runs_against_the_float64_reference(name):
    """The integer port agrees at an odd and an even n; the literal port's float32 run
    flips where the float32 fused midpoint is not 0 (n = 7, not n = 8)."""
    sizes = (7, 8)
    predicted = parting_sizes(sizes, np.float32) if name == LITERAL else set()
    if predicted:
        needs_fma()
    parted = {
        n
        for n in sizes
        if not all(agrees(*evaluate(name, n, "float32"), *expected(n), "float32").values())
    }
    assert parted == predicted


# --- the literal port: exactly where XLA's fused grid flips sign(t) -----------------------


def test_literal_port_parts_ways_exactly_where_the_fused_midpoint_is_not_zero():
    needs_fma()
    parted = {"loss": set(), "x": set(), "w": set()}
    for n in SIZES:
        for part, ok in agrees(*evaluate(LITERAL, n), *expected(n)).items():
            if not ok:
                parted[part].add(n)
    model = parting_sizes(SIZES)
    for part, found in parted.items():
        assert found == model == MEASURED, (
            f"{LITERAL}'s {part} parts from the loop at n = {sorted(found)}; the fused "
            f"arithmetic predicts {sorted(model)}, jax 0.10.2 on x86-64 gave {sorted(MEASURED)} "
            "(a change here means XLA compiles the grid otherwise: update the gallery page)"
        )


@pytest.mark.parametrize("n", [7, 11])
def test_only_the_midpoint_flips_and_by_the_fused_sign(n):
    """The literal port is the loop with sign(t) at the midpoint replaced by the sign of
    the fused value: the loss moves by w·((s - x0)² - x0²), ∂L/∂w by the same at that
    index only (t^j, j ≥ 1, and every other point move by rounding only)."""
    needs_fma()
    arrays = sized(n)
    x, w = arrays["x"], arrays["w"]
    mid, s = (n - 1) // 2, np.sign(fused_midpoint(n))
    assert s != 0
    loss_ref, g_ref = expected(n)
    loss, g = evaluate(LITERAL, n)
    flipped = (s - x[0]) ** 2  # the residual at t = ±ulp: sign ±1 less x[0]
    assert g_ref["w"][mid] == x[0] ** 2
    expected_w = g_ref["w"].copy()
    expected_w[mid] = flipped
    tol = weanj.tolerance("float64")
    assert np.max(np.abs(g["w"] - expected_w)) <= tol.grad * np.max(np.abs(expected_w))
    expected_loss = loss_ref + w[mid] * (flipped - x[0] ** 2)
    assert abs(loss - expected_loss) <= tol.loss * abs(expected_loss), (loss, expected_loss)


def test_the_compiled_grid_multiplies_by_the_rounded_reciprocal():
    """XLA's algebraic simplifier rewrote `/ (n-1)` (n = 7): the compiled HLO holds
    a multiplication by RN(2/6) = 0.33333333333333331 and an addition of -1, no division."""
    from weanj.examples import signed_grid

    arrays = sized(7)
    with jax.enable_x64(True):
        hlo = jax.jit(signed_grid.literal_loss).lower(arrays["x"], arrays["w"]).compile()
    text = hlo.as_text()
    assert re.search(r"constant\(\{?0\.33333333333333331\}?\)", text), "no reciprocal constant"
    assert re.search(r"constant\(\{?-1\}?\)", text)
    assert " divide(" not in text


# --- weanj check, as a user runs it ---------------------------------------------------------


def test_weanj_check_passes_with_the_literal_port_as_its_one_expected_difference(project):
    """On the shared inputs (n = 11), in a project that lists the example: exit 0 and "1
    expected difference", named with its reason; the literal port's pairs (against the
    integer port and the recorded reference, in float64) are `expected` exactly where
    the fused midpoint flips sign(t): x[0] and w[5], the midpoint (n - 1)/2; every other
    pair and every gradient check is ok; the residuals, its output, part ways at the
    midpoint, as declared too."""
    needs_fma()
    from weanj.examples import signed_grid

    (project / "pyproject.toml").write_text(
        '[tool.weanj]\nexamples = ["weanj.examples.signed_grid"]\n'
    )
    r = run_weanj(
        "check", EXAMPLE, "--dtype", "float64", "-v", root=project, cwd=project, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(rf"^  {INTEGER}\s+{LITERAL}\s+x\s.*expected$", r.stdout, re.MULTILINE)
    assert f"  {EXAMPLE}: ok (1 expected difference)" in r.stdout, r.stdout
    assert re.search(r"^overall: ok — .*, 1 expected difference, ", r.stdout, re.MULTILINE)
    # the residual the sign flips is an output of the example, declared there too
    said = f"    {LITERAL} vs its family (x[0]; w[5]; r[5], 5 case(s)): {signed_grid.HAZARD}"
    assert said in r.stdout
    verdicts = json.loads((project / "results" / EXAMPLE / "check.json").read_text())
    pairs = {tuple(p["subjects"]) + (p["array"],): p for p in verdicts["pairs"]}
    recorded = f"recorded/{INTEGER}"
    with h5py.File(project / "shared_inputs" / f"{EXAMPLE}.h5", "r") as f:  # as committed
        n = f["w"].shape[0]
    assert n % 2 == 1 and n in parting_sizes([n])  # the premise: n = 11 parts ways
    where = {"x": "x[0]", "w": f"w[{(n - 1) // 2}]"}
    for array in ("x", "w"):
        assert pairs[(INTEGER, recorded, array)]["verdict"] == "ok"
        with_literal = [p for k, p in pairs.items() if LITERAL in k and k[-1] == array]
        assert len(with_literal) == 2  # against the integer port and the recorded one
        for p in with_literal:
            assert p["verdict"] == "expected" and not p["failed"]
            assert p["expected"]["where"] == where[array]
            assert p["expected"]["reason"] == signed_grid.HAZARD
            assert p["differing_at"] == [[0 if array == "x" else (n - 1) // 2]]
    (output,) = [p for p in verdicts["outputs"] if p["subjects"] == [INTEGER, LITERAL]]
    assert output["verdict"] == "expected" and output["expected"]["where"] == where["w"].replace(
        "w", "r"
    )
    assert output["differing_at"] == [[(n - 1) // 2]]
    assert not [p["case"] for p in verdicts["pairs"] + verdicts["checks"] if p["failed"]]
    assert all(c["verdict"] == "ok" for c in verdicts["checks"] if c["verdict"] != "skipped")


# --- weanj fuzz, with the declaration and without it -----------------------------------------

COPY = "96-signfit-copy"
COPY_MODULE = """\
\"\"\"06-signed-grid's two JAX ports, registered again by a user project: the literal port
declared with {expected} (no declaration: where they part is a failure).\"\"\"
import weanj
from weanj.examples import signed_grid as sg

EXAMPLE = weanj.register_example(weanj.Example(
    name="{name}",
    arrays=(weanj.Array("x", shape=("m",)), weanj.Array("w", shape=("n",))),
    wrt=("x", "w"), seed=6, validate=sg.validate, describe=sg.describe,
    generate=lambda seed: sg.generate(seed, {n}),
    sizes=weanj.Sizes(generate=lambda seed, size: sg.generate(seed, size),
                      values=(101, 1001, 10001, 100001), name="n"),
))
weanj.jax_variant(EXAMPLE, "{integer}", family="signfit", loss=sg.integer_loss)
weanj.jax_variant(EXAMPLE, "{literal}", family="signfit", loss=sg.literal_loss,
                  expected={expected})
"""


def signfit_copy(project, *, expected: str = "None", n: int = 10, in_process: bool = False):
    """A user project's copy of 06-signed-grid's two JAX ports (`COPY`), its shared inputs
    at `n` (n = 10: no midpoint, the ports agree there, as the published benchmark's), the
    literal port declared with the Python expression `expected`: the module
    `signfit_copy.py` beside the project's `pyproject.toml`, which a `weanj` subprocess
    loads. `in_process`: also registered in this process (the caller unregisters `COPY`).
    **Returns** its `Example` when registered here."""
    from weanj._io._inputs import write_inputs_file
    from weanj._model._inputs import from_arrays
    from weanj.examples import signed_grid as sg

    if in_process:  # the registry loaded first (the built-ins), not from this pyproject
        weanj.example(EXAMPLE)
    text = COPY_MODULE.format(name=COPY, n=n, integer=INTEGER, literal=LITERAL, expected=expected)
    (project / "signfit_copy.py").write_text(text)
    (project / "pyproject.toml").write_text('[tool.weanj]\nexamples = ["signfit_copy"]\n')
    scope = {"__name__": "signfit_copy"}
    if in_process:
        exec(compile(text, str(project / "signfit_copy.py"), "exec"), scope)
    ex = scope.get("EXAMPLE") or weanj.Example(
        name=COPY, arrays=sg.EXAMPLE.specs, wrt=("x", "w"), generate=sg.generate
    )
    shared = from_arrays(ex, sg.generate(6, n))
    write_inputs_file(shared, project / "shared_inputs" / f"{COPY}.h5", seed=6)
    return scope.get("EXAMPLE")


# `-m slow`: tests/test_fuzz.py finds and shrinks the same odd sizes on a copy of the ports.
@pytest.mark.slow
def test_weanj_fuzz_finds_an_odd_size_by_itself_where_the_shared_inputs_agree(project):
    """#31, acceptance 5, on the two ports as a user project registers them without the
    literal port's declaration: with shared inputs at an even size (n = 10), `weanj fuzz`
    finds by itself the smallest size at which the fused midpoint flips the sign, n = 7
    ((n-1)/2 = 3 is not a power of two; n = 3, 5 agree)."""
    needs_fma()
    signfit_copy(project)
    # No draw left for the search after the shared inputs and the first declared size:
    # reported on that first failure, as it is.
    r = run_weanj("fuzz", COPY, "--max-examples", "2", root=project, cwd=project, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "\nFAIL on m = 4, n = 101, declared size 101\n" in r.stdout, r.stdout
    assert "shrunk from" not in r.stdout and "declared to differ" not in r.stdout
    # With draws left, the search shrinks it to the smallest size that parts (seeded: how
    # far Hypothesis's shrinking gets depends on its draws; tests/test_fuzz.py checks over
    # seeds that the case reported is the smallest failing draw, never larger than 101).
    r = run_weanj(
        "fuzz", COPY, "--max-examples", "30", "--seed", "3", root=project, cwd=project,
        timeout=300,
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "shared inputs: " not in r.stdout  # they agree: no line about them
    shrunk = "FAIL on m = 4, n = 7, seed 0 (shrunk from m = 4, n = 101, declared size 101)"
    assert f"\n{shrunk}\n" in r.stdout, r.stdout
    assert f"1 of 1 pair(s) disagree: {INTEGER}~{LITERAL}" in r.stdout, r.stdout


def test_weanj_fuzz_passes_the_declared_pair_and_counts_its_draws(project):
    """The gallery's own declaration (x[0] and the midpoint of w, no bound) on the shared
    inputs as committed (n = 11, which parts): `weanj fuzz --seed 1` exits 0, says the
    pair is declared, with its reason, and counts the draws that differed as declared:
    exactly the draws at a size where the fused midpoint flips (`parting_sizes`, from
    arithmetic alone); at every other size the pair agrees, as the judge requires where
    the declaration's elements are none."""
    needs_fma()
    from weanj._commands import fuzz as fuzz_command
    from weanj._pipeline.search import _fuzz_search
    from weanj._registry import catalog
    from weanj.examples import signed_grid

    sizes = []  # the n of every case judged, in order
    judge = _fuzz_search.judge_draw

    def recorded(session, cat, pairs, case, budget, **kwargs):
        sizes.append(case.inputs.dims["n"])
        return judge(session, cat, pairs, case, budget, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(_fuzz_search, "judge_draw", recorded)
        done = fuzz_command.fuzz(catalog(EXAMPLE), seed=1, max_examples=12, say=lambda s: None)
    assert done.exit_code == 0 and not done.findings, done.lines
    assert (
        f"  {INTEGER}~{LITERAL} is declared to differ ({signed_grid.HAZARD}): searching for "
        "where it differs beyond the declaration"
    ) in done.lines
    parting = [n for n in sizes if n in parting_sizes([n])]
    assert sizes[0] == 11 and 0 < len(parting) < len(sizes), sizes
    counted = f"  {INTEGER}~{LITERAL}: {len(parting)} draw(s) differed as declared (expected)"
    assert counted in done.lines, done.lines
    assert done.as_declared == {(INTEGER, LITERAL): len(parting)}
    assert done.lines[-1].startswith(f"fuzz {EXAMPLE}: ok — {len(sizes)} draw(s);")
    assert done.lines[-1].endswith("0 of 1 pair(s) disagree")


# --- the validator ----------------------------------------------------------------------------


def test_validator_accepts_any_size_from_two():
    ex = weanj.example(EXAMPLE)
    for n in (2, 3, 8, 11, 1000):
        ex.validate(ex.sizes.generate(0, n))
    ex.validate(ex.generate(ex.seed))


@pytest.mark.parametrize(
    ("x", "w", "words"),
    [
        (np.ones(3), np.ones(1), "has shape (1,), not a vector of 2 <= n <= 2^23"),
        (np.ones(3), np.ones((2, 2)), "w has shape (2, 2)"),
        (np.ones(0), np.ones(5), "x has shape (0,), not a vector of m >= 1"),
        (np.ones((2, 2)), np.ones(5), "x has shape (2, 2)"),
        (np.ones(3), np.array([1.0, np.nan, 1.0]), "w has 1 NaN/Inf"),
        (np.ones(3), np.broadcast_to(1.0, (2**23 + 1,)), "(8388609,), not a vector"),
    ],
    ids=["n1", "w2d", "m0", "x2d", "nan", "too-long"],
)
def test_validator_refuses_in_one_line(x, w, words):
    message = rejection(EXAMPLE, {"x": x, "w": w})
    assert words in message, message
