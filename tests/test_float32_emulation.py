"""float32's rounding of a JAX program, emulated (`_pipeline/evaluation/_emulation.py`):
its arithmetic is float32's bit for bit, its range float64's, its decisions the float64
program's; what it cannot look into it refuses, saying why, and the level stands as the
perturbed runs measured it (tests/test_float32_floor.py runs it as a check does)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from weanj._pipeline.evaluation._emulation import NotLookedInto, emulate
from weanj._pipeline.evaluation._lockstep import rounding

F = np.float32


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def test_rounding_is_float32s_precision_with_float64s_range():
    values = np.random.default_rng(0).standard_normal(1000) * 10.0 ** np.arange(-30, 30, 0.06)
    rounded = np.asarray(jax.jit(rounding())(values))
    np.testing.assert_array_equal(rounded, values.astype(F).astype(np.float64))
    # beyond float32's range: float32 gives inf and 0, the emulation rounds the digits only
    wide = np.array([1e300, -3e-300, 1.0 + 2.0**-40])
    out = np.asarray(jax.jit(rounding())(wide))
    assert np.isfinite(out[0]) and abs(out[0] / 1e300 - 1) < 2.0**-24
    assert out[1] != 0 and abs(out[1] / -3e-300 - 1) < 2.0**-24
    assert out[2] == 1.0
    ints = np.arange(5)
    assert rounding()(ints) is ints  # not floating: as it is
    z = values[:100] + 1j * values[100:200]  # complex: each part, as complex64 rounds them
    rounded = np.asarray(jax.jit(rounding())(z))
    np.testing.assert_array_equal(rounded, z.astype(np.complex64).astype(np.complex128))


@jax.custom_jvp
def _soft(x):
    return x / (1.0 + jnp.sqrt(x * x + 1.0))


_soft.defjvp(lambda p, t: (_soft(p[0]), t[0]))


def _program(a, xs):
    """A recurrence through `scan`, `checkpoint`, `cond`, `custom_jvp`, `jit` and a
    `while_loop`, elementwise operations only (each rounded once in float32 too)."""

    def body(c, x):
        c = jax.checkpoint(lambda c: c * a[0] + x)(c)
        c = jax.lax.cond(c > 0, lambda c: c / 3.0, lambda c: c - 0.1, c)
        return c, _soft(c)

    c, ys = jax.lax.scan(body, a[1], xs)
    twice = jax.jit(lambda v: v * 1.1 + 0.3)
    c, _ = jax.lax.while_loop(lambda s: s[1] < 5, lambda s: (twice(s[0]), s[1] + 1), (c, 0))
    return c + ys[-1]


def _numpy_program(a, xs, dtype):
    """`_program` in plain numpy, every value in `dtype`."""
    a, xs = a.astype(dtype), xs.astype(dtype)
    c = a[1]
    for x in xs:
        c = c * a[0] + x
        c = c / dtype(3.0) if c > 0 else c - dtype(0.1)
        y = c / (dtype(1.0) + np.sqrt(c * c + dtype(1.0)))
    for _ in range(5):
        c = c * dtype(1.1) + dtype(0.3)
    return c + y


def test_the_rounded_run_is_float32_arithmetic_bit_for_bit():
    """+, −, ×, ÷ and √, each rounded to float32 after float64 computed it exactly
    enough, are float32's own: the emulated program gives numpy's float32 result exactly,
    through every control-flow and call primitive; the plain run gives float64's."""
    rng = np.random.default_rng(1)
    a, xs = np.array([0.93, 0.4]), rng.standard_normal(300)
    narrow = (a.astype(F).astype(np.float64), xs.astype(F).astype(np.float64))
    plain, rounded = emulate(jax.jit(_program), (), (a, xs), narrow)
    assert float(rounded) == float(_numpy_program(a, xs, F))
    assert float(plain) == pytest.approx(float(_numpy_program(a, xs, np.float64)), rel=1e-14)
    assert float(rounded) != float(plain)


def _settle(x):
    """A loop that stops at a float64 tolerance (float32 never gets there: 1 + 1e-8 is 1
    in float32, and a float32 run would loop for ever), and a branch that float32's
    rounding of x would flip."""
    t, n = jax.lax.while_loop(
        lambda s: s[0] < 1.0 + 3.5e-8, lambda s: (s[0] + 1e-8, s[1] + 1), (jnp.float64(1.0), 0)
    )
    side = jax.lax.cond(x[0] > 1.0 + 1e-8, lambda: 2.0 * x[0], lambda: 3.0 * x[0])
    masked = jnp.where(x > 1.0 + 1e-8, x, -x)
    return t, n, side, masked, jnp.sign(x - (1.0 + 1e-8)), jnp.floor(x * 1e8)


def test_the_rounded_run_takes_the_float64_programs_branches_and_trip_counts():
    x = np.array([1.0 + 3e-8])
    narrow = (x.astype(F).astype(np.float64),)  # 1.0 exactly
    plain, rounded = emulate(jax.jit(_settle), (), (x,), narrow)
    assert int(plain[1]) == int(rounded[1]) == 4  # it ended, after the float64 run's steps
    assert float(rounded[0]) == 1.0 and float(plain[0]) > 1.0  # t + 1e-8 is t in float32
    assert float(rounded[2]) == 2.0 and float(plain[2]) == pytest.approx(2.0 * x[0])
    assert float(rounded[3][0]) == 1.0  # the float64 run's mask: x, not −x
    # a sign and a floor are decisions too: the float64 run's, not float32's 0 and 1e8
    assert float(rounded[4][0]) == float(plain[4][0]) == 1.0
    assert float(rounded[5][0]) == float(plain[5][0]) == 100000003.0


def test_a_sharded_program_is_emulated_shard_by_shard():
    """A `shard_map` body is interpreted on each shard: the same rounding as the program
    without it."""
    from jax.sharding import Mesh, PartitionSpec

    mesh = Mesh(np.array(jax.devices("cpu")[:1]), ("rows",))
    spec = PartitionSpec("rows")

    def body(a):
        return jnp.cumsum(jnp.sqrt(a * a + 1.0) / 3.0)[None]

    sharded = jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec)
    a = np.random.default_rng(2).standard_normal(64)
    narrow = (a.astype(F).astype(np.float64),)
    _, rounded = emulate(jax.jit(lambda a: sharded(a)[0]), (), (a,), narrow)
    _, alone = emulate(jax.jit(lambda a: body(a)[0]), (), (a,), narrow)
    np.testing.assert_array_equal(np.asarray(rounded), np.asarray(alone))
    assert not np.array_equal(np.asarray(rounded), np.asarray(body(a)[0]))


class _InX64Off:
    """A program as a variant's backend hands it over (`.jitted`, `._context`), whose
    x64 is off."""

    def __init__(self, fn):
        self.jitted = jax.jit(fn)

    def _context(self):
        return jax.enable_x64(False)


def test_what_it_cannot_look_into_it_refuses_saying_why():
    x = (np.array([0.5, 2.0]),)

    def through_python(x):
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    for program, why in (
        (jax.jit(through_python), "its program calls pure_callback, whose arithmetic"),
        (lambda x: np.sin(x), "its functions are not a jax.jit program"),
        (_InX64Off(jnp.sin), "its program has no float64 values (x64 is off there)"),
    ):
        with pytest.raises(NotLookedInto, match=why.replace("(", r"\(").replace(")", r"\)")):
            emulate(program, (), x, x)


def test_a_refusal_leaves_the_perturbed_runs_level_and_says_why():
    """`_levels._emulated` on a variant whose functions are plain Python: no level added,
    the reason kept for the evidence line; on a JAX program, the level folded in."""
    import weanj
    from weanj._model import Functions, Gradient, Inputs
    from weanj._pipeline.evaluation import _levels

    class Watch:
        def step(self, text):
            pass

        def run(self, fn, label):
            return fn()

    ex = weanj.Example(
        name="94-emulated", arrays=("x",), wrt="x", shapes={"x": (2,)}, generate=lambda s: {}
    )
    x = np.array([0.3, 1.7])
    inputs = Inputs(ex, {"x": x}, {}, digest="0" * 64)

    def loss(x):
        return jnp.sum(jnp.sin(x) * x)

    def run(value_and_grad):
        noise = {"loss": 1e-30, "x": 1e-30}
        g = Gradient(
            ex, "v", "f", "float32", {"x": x.astype(F)}, 1.0, {}, "0" * 64, "k", noise=noise
        )
        built, spent = Functions(loss, None, value_and_grad=value_and_grad), []
        found = _levels._emulated(g, inputs, built, Watch(), "94", lambda *n: spent.append(n))
        return g, found, spent

    g, found, spent = run(lambda x: (float(np.sum(np.sin(x) * x)), np.sin(x)))
    assert found.refused == "its functions are not a jax.jit program" and not found.levels
    assert g.noise == {"loss": 1e-30, "x": 1e-30} and spent == []
    g, found, spent = run(jax.jit(jax.value_and_grad(loss)))
    narrow = x.astype(F)
    exact = float(np.sum(np.sin(x) * x))
    in_float32 = float(np.sum(np.sin(narrow) * narrow, dtype=F))
    assert not found.refused and spent == [(2, 2)]
    assert found.levels["loss"] == pytest.approx(abs(in_float32 - exact), rel=0.5)
    assert g.noise["loss"] == found.levels["loss"] and g.noise["x"] == found.levels["x"] > 0


def test_the_evidence_says_what_the_emulation_measured_or_why_it_could_not():
    """A float32 pair beyond float32's tolerance: its evidence names the emulated rounding
    (relative to the float64 reference) and, where it passes by it, how far it lands;
    where the program could not be looked into, why, and that the spread alone stands."""
    import weanj
    from weanj._judge._verdict import judge_pair
    from weanj._model import Emulated, Gradient
    from weanj._pipeline.engine._evidence import with_evidence

    ex = weanj.Example(
        name="93-said", arrays=("x",), wrt="x", shapes={"x": (2,)}, generate=lambda s: {}
    )
    g = np.array([2.0, -4.0])

    def run(dtype, off, **levels):
        x, loss = {"x": g * (1 + off)}, 8.0 * (1 + off)
        return Gradient(ex, "jax-v", "f", dtype, x, loss, {}, "0" * 64, "k", **levels)

    wide = run("float64", 0.0, noise={"loss": 1e-15, "x": 1e-15})
    emulated = Emulated({"loss": 8e-5, "x": 1e-5})
    narrow = run("float32", 1e-4, noise={"loss": 8e-5, "x": 1e-5}, emulated=emulated)
    j = with_evidence(
        judge_pair("93::f::jax-v~jax-v@float32", wide, narrow, "x"), ex, (wide, narrow)
    )
    assert str(j.verdict) == "ok"
    assert j.evidence[1] == (
        "float32's rounding of jax-v@float32, emulated on its float64 program (every value "
        "rounded to float32): |ΔL|/|L| 1.0e-05, x 2.5e-06 of max|g|"
    )
    assert j.evidence[2].startswith("float32 keeps 4.0 digits here") and (
        "float32's own rounding of its float64 program |ΔL|/|L| 1.0e-05, x 2.5e-06" in j.evidence[2]
    )
    refused = Emulated(
        {}, "its program calls enzyme_primal, whose arithmetic weanj cannot look into"
    )
    narrow = run("float32", 1e-4, noise={"loss": 1e-9, "x": 1e-9}, emulated=refused)
    j = with_evidence(
        judge_pair("93::f::jax-v~jax-v@float32", wide, narrow, "x"), ex, (wide, narrow)
    )
    assert str(j.verdict) == "FAIL"
    assert j.evidence[1] == (
        "float32's rounding of jax-v@float32 not emulated: its program calls enzyme_primal, "
        "whose arithmetic weanj cannot look into (its level is its perturbed runs' spread alone)"
    )
