"""`weanj fuzz`: differential testing of same-family pairs on drawn inputs, with shrinking.

The user project (a folder of its own, run as a user runs it) holds two ports that agree
on their shared inputs and part ways elsewhere: one mishandles the unpaired last element
for odd n from its second sweep on (n = 1 is unaffected: the smallest failing case is
n = 3, S = 2); the other differentiates `min` at a tie differently, which only the
example's own strategy (`weanj.fuzz_strategy`, small integers) produces. The search must
find both within its default budget, shrink them, keep them in the database and print
commands that reproduce them. The smaller tests register throwaway examples in-process.
"""

from __future__ import annotations

import re
import subprocess
import sys

import h5py
import numpy as np
import pytest

import weanj
from weanj import _fuzz, _registry

from .helpers import assert_one_line_error
from .projects import pytest_weanj_in, reproduce, weanj_in, write_project
from .toy_kernels import away_from_ties, integer_xy, min_by_branches, min_by_minimum, xy_example

KERNELS = '''\
import jax.numpy as jnp
import weanj
from toy_kernels import integer_xy, min_by_branches, min_by_minimum, random_xy, smooth, smooth_loop


def generate(seed, n=16):
    return random_xy(seed, n)


odd = weanj.register_example(weanj.Example(
    name="31-odd", arrays=("x", "y"), wrt="x", shapes={"x": ("n",), "y": ("n",)},
    params=(weanj.Param("S", default=2),), generate=generate,
    sizes=weanj.Sizes(generate=generate, values=(16, 32)),
))
weanj.jax_variant(odd, "jax-roll", family="s", loss=smooth_loop)


@weanj.jax_variant(odd, "jax-pairs", family="s")
def paired(x, y, S):
    n = x.shape[0]
    for s in range(S):
        new = smooth(x)
        if s > 0 and n % 2 == 1:  # ported for even n: the unpaired last element stays behind
            new = new.at[n - 1].set(x[n - 1])
        x = new
    return jnp.sum((x - y) ** 2)


weanj.julia_variant(odd, "julia-roll", family="s", file="julia/roll.jl", loss="roll_loss")


tie = weanj.register_example(weanj.Example(
    name="32-tie", arrays=("x", "y"), wrt="x", shapes={"x": ("n",), "y": ("n",)},
    generate=generate, sizes=weanj.Sizes(generate=generate, values=(16,)),
))
weanj.jax_variant(tie, "jax-where", family="m", loss=min_by_branches)
weanj.jax_variant(tie, "jax-minimum", family="m", loss=min_by_minimum)


@weanj.fuzz_strategy(tie)
def small_integers(draw):
    """Ties: small integers, so that x == y happens."""
    return integer_xy(draw, longest=4, largest=2)
'''


@pytest.fixture(scope="module")
def fuzz_project(tmp_path_factory):
    root = write_project(
        tmp_path_factory.mktemp("fuzz-project"),
        {"kernels.py": KERNELS, "julia/roll.jl": "roll_loss(x, y, S) = sum(abs2, x - y)\n"},
    )
    # On their shared inputs both pairs agree: only other inputs show the difference.
    check = weanj_in(root, "check", "--dtype", "float64")
    assert check.returncode == 0, check.stdout + check.stderr
    return root


def _failure(out: str) -> re.Match:
    m = re.search(r"^FAIL on (.*?)(?: \(shrunk from .*\))?$", out, re.MULTILINE)
    assert m, out
    return m


def _reproduce(out: str, cwd) -> subprocess.CompletedProcess:
    """Run the printed commands; the last one (the judge) is returned."""
    commands = [
        line.strip()
        for line in out.splitlines()
        if line.strip().startswith(("weanj run ", "python -m weanj._bisect judge "))
    ]
    assert len(commands) == 3, out
    return reproduce(cwd, commands)


def test_finds_odd_n_within_the_default_budget_and_shrinks_it(fuzz_project):
    r = weanj_in(fuzz_project, "fuzz", "31-odd")
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "skipped julia-roll:" in out  # Julia takes part only where it runs
    # Shrunk to the smallest failing size and sweep count (n = 1 is not affected).
    shrunk = re.match(r"n = 3, S = 2, seed (\d+)", _failure(out).group(1))
    assert shrunk, out
    assert "3 element(s) in numpy (0:2) / Julia (1:3)" in out
    m = re.search(r"case written to (\S+)", out)
    with h5py.File(fuzz_project / m.group(1)) as f:
        x, y, S = f["x"][()], f["y"][()], int(f.attrs["S"])
    rng = np.random.default_rng(int(shrunk.group(1)))  # the Sizes generator at n = 3
    np.testing.assert_array_equal(x, rng.standard_normal(3))
    np.testing.assert_array_equal(y, rng.standard_normal(3))
    assert S == 2
    # Independently of weanj: the two kernels' losses differ on this case.
    smooth = lambda v: (np.roll(v, 1) + 2 * v + np.roll(v, -1)) / 4  # noqa: E731
    u = smooth(smooth(x))
    w = smooth(x)
    w_last = w[2]
    w = smooth(w)
    w[2] = w_last
    assert abs(np.sum((u - y) ** 2) - np.sum((w - y) ** 2)) > 1e-3
    judged = _reproduce(out, fuzz_project)
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert "31-odd::s::jax-roll~jax-pairs: FAIL" in judged.stdout

    # The database: the next run tries the kept case first and fails at once.
    again = weanj_in(fuzz_project, "fuzz", "31-odd")
    assert again.returncode == 1
    assert _failure(again.stdout).group(1) == _failure(out).group(1)
    assert re.search(r"FAIL — 1 draw\(s\)", again.stdout), again.stdout
    assert any((fuzz_project / "results" / ".weanj-fuzz" / "31-odd").iterdir())


def test_an_example_strategy_finds_a_tie(fuzz_project):
    r = weanj_in(fuzz_project, "fuzz", "32-tie")
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "strategies small_integers" in out
    assert "n = 1, strategy small_integers" in _failure(out).group(1), out
    x = re.search(r"^  x = \[(.*)\]$", out, re.MULTILINE).group(1)
    y = re.search(r"^  y = \[(.*)\]$", out, re.MULTILINE).group(1)
    assert x == y and float(x) != 0  # shrunk to one tie, x == y != 0
    # At the tie the branch gives 2x, jnp.minimum splits it: 1e0 relative difference / 2.
    assert "worst 5.00e-01·max|g_ref|" in out
    judged = _reproduce(out, fuzz_project)
    assert judged.returncode == 1, judged.stdout + judged.stderr


def test_pytest_weanj_fuzz_makes_one_item_per_pair(fuzz_project):
    r = pytest_weanj_in(
        fuzz_project, "--weanj-fuzz", "50", "--weanj-example", "31-odd", "-k", "fuzz", "-rfs"
    )
    assert r.returncode == 1, r.stdout + r.stderr
    failed = sorted(re.findall(r"^FAILED weanj::(\S+)", r.stdout, re.MULTILINE))
    assert failed == ["31-odd::s::jax-roll~jax-pairs::fuzz"], r.stdout
    assert "case written to results/31-odd/cases/fuzz-" in r.stdout
    assert "element(s) in numpy" in r.stdout and "weanj run 31-odd jax-pairs" in r.stdout
    # julia-roll's two pairs skip, saying why.
    assert re.search(
        r"^SKIPPED \[2\] .*julia-roll is unavailable here: ", r.stdout, re.MULTILINE
    ), r.stdout
    assert "2 skipped" in r.stdout and "1 failed" in r.stdout


# --- in-process -------------------------------------------------------------------------------

NAME = "92-fuzz"


@pytest.fixture
def agreeing(project):
    import jax.numpy as jnp

    def validate(arrays):
        if arrays["x"].shape[0] < 2:
            raise weanj.InputError(f"x needs at least 2 entries, got {arrays['x'].shape[0]}")

    def generate(seed, n=6):
        return {"x": np.random.default_rng(seed).standard_normal(n)}

    ex = weanj.register_example(
        weanj.Example(
            name=NAME,
            arrays=("x",),
            wrt="x",
            shapes={"x": ("n",)},
            params=(weanj.Param("T", default=3, minimum=2, maximum=4),),
            generate=generate,
            validate=validate,
            sizes=weanj.Sizes(generate=generate, values=(6,)),
        )
    )

    @weanj.jax_variant(ex, "jax-a", family="q")
    def a(x, T):
        return jnp.sum(x**2) * T

    @weanj.jax_variant(ex, "jax-b", family="q")
    def b(x, T):
        return T * jnp.sum(x * x)

    @weanj.jax_variant(ex, "jax-c", family="other")
    def c(x, T):
        return jnp.sum(x)

    weanj.write_inputs(NAME)
    yield ex
    _registry.unregister_example(NAME)


def test_agreeing_pair_stops_at_the_time_limit_and_notes_refusals(agreeing, capsys):
    code = _fuzz.command(NAME, seconds=4, max_examples=10_000)
    out = capsys.readouterr().out
    assert code == 0, out
    summary = out.strip().splitlines()[-1]
    m = re.match(
        r"fuzz 92-fuzz: ok — (\d+) draw\(s\) in (\d+) s \(stopped at the time limit\)", summary
    )
    assert m and int(m.group(1)) >= 1 and 4 <= int(m.group(2)) < 30, summary
    assert "0 of 1 pair(s) disagree" in summary
    # n = 1 is refused by the example's validate: assumed away, and said.
    assert "refused by the example: x needs at least 2 entries, got 1" in out
    assert "T ∈ {2, 3, 4}" in out  # minimum, +1, +2; +3 and more lie beyond the maximum


def test_max_examples_bounds_the_draws(agreeing, capsys):
    assert _fuzz.command(NAME, max_examples=3, seconds=600) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    draws = int(re.search(r"(\d+) draw\(s\)", summary).group(1))
    assert 1 <= draws <= 3, summary


def test_pairs_are_checked(agreeing):
    # (In-process through `command`, not `main`: the CLI turns on JAX's persistent cache
    # for the whole process, which other tests' temporary projects must not inherit.)
    for pair, fragment in (
        (("jax-a", "jax-c"), "compares members of one family"),
        (("jax-a", "jax-a"), "not compared with itself"),
    ):
        with pytest.raises(weanj.InputError) as e:
            _fuzz.command(NAME, pairs=[pair])
        assert_one_line_error(str(e.value), fragment)
    with pytest.raises(weanj.UnknownNameError, match="unknown variant 'jax-nope'"):
        _fuzz.command(NAME, pairs=[("jax-a", "jax-nope")])


def test_parameter_candidates_start_at_the_minimum():
    assert _fuzz.param_candidates(weanj.Param("K", default=20)) == (1, 2, 3, 4, 6, 9, 20)
    assert _fuzz.param_candidates(weanj.Param("K", default=2, minimum=0, maximum=5)) == (
        0, 1, 2, 3, 5,
    )  # fmt: skip
    assert _fuzz.param_candidates(weanj.Param("flag", default=True)) == (True, False)
    assert _fuzz.param_candidates(weanj.Param("nu", default=0.25, minimum=0.0)) == (
        0.25, 0.0, 1.0,
    )  # fmt: skip


def test_fuzz_strategy_registration_is_checked():
    with pytest.raises(weanj.DefinitionError, match="must be callable"):
        weanj.fuzz_strategy("93-any", 3)
    with pytest.raises(weanj.DefinitionError, match="an Example or its name"):
        weanj.fuzz_strategy(7, lambda draw: {})

    def edges(draw):
        return {}

    try:
        assert weanj.fuzz_strategy("93-any")(edges) is edges  # as a decorator
        weanj.fuzz_strategy("93-any", edges)  # twice: registered once
        assert _fuzz.strategies_of("93-any") == [edges]
    finally:
        _fuzz._STRATEGIES.pop("93-any", None)


def test_import_weanj_loads_neither_hypothesis_nor_jax():
    code = "import sys, weanj; print('hypothesis' in sys.modules, 'jax' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["False", "False"]


KINKS = "94-fuzz-kinks"


@pytest.fixture
def declared_ties(project):
    ex = weanj.register_example(
        xy_example(
            KINKS,
            shapes={"x": ("n",), "y": ("n",)},
            generate=lambda seed: {"x": np.arange(3.0), "y": np.arange(3.0) + 0.5},  # no tie
            fd=weanj.FDPolicy(mask=away_from_ties),
        )
    )
    weanj.jax_variant(ex, "jax-where", family="m", loss=min_by_branches)
    weanj.jax_variant(ex, "jax-minimum", family="m", loss=min_by_minimum)

    @weanj.fuzz_strategy(ex)
    def ties(draw):
        return integer_xy(draw, longest=3, largest=1)

    weanj.write_inputs(KINKS)
    yield ex
    _registry.unregister_example(KINKS)
    _fuzz._STRATEGIES.pop(KINKS, None)


def test_a_pair_declared_to_differ_at_kinks_agrees_there(declared_ties, capsys):
    # Undeclared, the ties part the two ways of writing min ...
    assert _fuzz.command(KINKS, max_examples=200, seconds=60) == 1
    assert "FAIL on n = 1, strategy ties" in capsys.readouterr().out
    # ... declared, the judge says `kinks` there, which agrees: nothing to report.
    weanj.differ_at_kinks(KINKS, "jax-where", "jax-minimum", why="min at a tie")
    assert _fuzz.command(KINKS, max_examples=40, seconds=60) == 0
    assert "0 of 1 pair(s) disagree" in capsys.readouterr().out
