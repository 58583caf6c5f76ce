"""Mistakes named where they are made, in weanj's words (issue 62, item 4): a variant's
signature at registration, a mistyped variant name, a variant given where an example is
expected, an `Expected` region past its array's end; and where a time limit came from.

A user's 1-D heat project (`12-heat`: arrays `u0`, `r`; parameters `K`, `D`), run as a
user runs it (in this process, `weanj_here`).
"""

from __future__ import annotations

import pytest

from .projects import weanj_here, write_project

HEAT = """\
import jax.numpy as jnp
import numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="12-heat", arrays=("u0", "r"), wrt="u0",
    params=(weanj.Param("K", 3), weanj.Param("D", 0.2)),
    generate=lambda seed: {{"u0": np.random.default_rng(seed).standard_normal(50),
                           "r": np.random.default_rng(seed + 1).standard_normal(50)}},
    {extra}))


@weanj.jax_variant(ex, "jax-scan", family="heat")
def scan(u0, r, K, D):
    u = u0
    for _ in range(K):
        u = u + D * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1))
    return jnp.sum((u - r) ** 2)
{more}
"""

MISSING = """
@weanj.jax_variant(ex, "jax-loop", family="heat")
def loop(u0, r, K):  # D forgotten
    return jnp.sum((u0 - r) ** 2)
"""


def _project(tmp_path, *, extra: str = "", more: str = "", regenerate: bool = True):
    text = HEAT.format(extra=extra, more=more)
    return write_project(tmp_path, {"kernels/heat.py": text}, regenerate=regenerate)


def _error(r) -> str:
    """The one error a command stopped with (a line of ~200 characters at most: a longer
    one, with a long project path in it, continues on the next line, indented)."""
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    first, *rest = r.stderr.strip().splitlines()
    assert all(line.startswith("  ") for line in rest), r.stderr
    return " ".join([first, *(line.strip() for line in rest)])


def test_a_variant_missing_a_parameter_fails_at_registration_in_one_line(tmp_path):
    root = _project(tmp_path, more=MISSING, regenerate=False)
    assert _error(weanj_here(root, "list")) == (
        "weanj: error: example module 'kernels.heat' ([tool.weanj] of "
        f"{root / 'pyproject.toml'}): 12-heat variant jax-loop: loss loop(u0, r, K) "
        "cannot take 12-heat's arguments (u0, r, K, D): too many positional arguments"
    )


def test_a_hand_written_gradient_is_held_to_the_same_signature(tmp_path):
    more = '\nweanj.jax_variant(ex, "jax-grad", family="heat", loss=scan, grad=lambda u0, r: u0)\n'
    root = _project(tmp_path, more=more, regenerate=False)
    assert "variant jax-grad: grad <lambda>(u0, r) cannot take 12-heat's arguments" in _error(
        weanj_here(root, "list")
    )


SWAPPED = """
@weanj.jax_variant(ex, "jax-swapped", family="heat")
def swapped(r, u0, K, D):  # the arrays in another order: it would run on r as u0
    return jnp.sum((u0 - r) ** 2)
"""


def test_parameters_naming_the_arrays_in_another_order_are_refused_at_registration(tmp_path):
    root = _project(tmp_path, more=SWAPPED, regenerate=False)
    assert _error(weanj_here(root, "list")) == (
        "weanj: error: example module 'kernels.heat' ([tool.weanj] of "
        f"{root / 'pyproject.toml'}): 12-heat variant jax-swapped: loss swapped(r, u0, K, D) "
        "gets 12-heat's arguments by position, in the order (u0, r, K, D): "
        "r in u0's place, u0 in r's place"
    )


@pytest.mark.parametrize(
    "signature, wrong",
    [
        ("(u, r, K, D)", "u in u0's place"),  # not the example's array
        ("(u0, r, D, K)", "D in K's place, K in D's place"),  # parameters swapped
        ("(u0, r, steps, D)", ""),  # a parameter named otherwise: its place is all it says
        ("(a, b, /, K, D)", ""),  # positional-only: anonymous to a caller
        ("(*args)", ""),  # a wrapper's: nothing to read
        ("(u0, *rest, **keywords)", ""),
    ],
)
def test_only_names_that_are_clearly_wrong_are_refused(signature, wrong):
    import inspect

    from weanj import Example, Param
    from weanj._model._signature import misnamed

    heat = Example(
        name="12-heat",
        arrays=("u0", "r"),
        wrt="u0",
        params=(Param("K", 3), Param("D", 0.2)),
        generate=lambda seed: {},
    )
    scope: dict = {}
    exec(f"def f{signature}: pass", scope)
    assert misnamed(heat, inspect.signature(scope["f"])) == wrong


READ_THROUGH = """
import functools

import jax


class Swapped:
    def __call__(self, r, u0, K, D):
        return jnp.sum((u0 - r) ** 2)


weanj.jax_variant(ex, "jax-jit", family="heat", loss=jax.jit(scan, static_argnums=(2, 3)))
weanj.jax_variant(
    ex, "jax-partial", family="heat", loss=functools.partial(lambda s, u0, r, K, D: 0.0, 1.0)
)
weanj.jax_variant(ex, "jax-lambda", family="heat", loss=lambda u0, r, K, D: 0.0)
weanj.jax_variant(ex, "jax-object", family="heat", loss=Swapped())
"""


def test_jitted_functions_partials_lambdas_and_callables_are_read_through(tmp_path):
    root = _project(tmp_path, more=READ_THROUGH, regenerate=False)
    said = _error(weanj_here(root, "list"))
    # the jitted function, the partial and the lambda name the arrays in order: they
    # register; the object, registered last, is the one refused
    assert "variant jax-object: loss Swapped(r, u0, K, D) gets 12-heat's arguments" in said


@pytest.fixture(scope="module")
def heat(tmp_path_factory):
    return _project(tmp_path_factory.mktemp("heat"))


def test_a_mistyped_variant_name_suggests_the_name(heat):
    r = weanj_here(heat, "check", "--variants", "jax-scna")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("weanj: error: unknown variant(s) jax-scna; did you mean jax-scan?")


def test_a_variant_where_an_example_is_expected_suggests_variants(heat):
    r = weanj_here(heat, "check", "12-heat", "jax-scan")
    said = _error(r).split("  known examples:")[0]  # the line, then the list
    assert "; jax-scan is a variant of 12-heat: weanj check 12-heat --variants jax-scan" in said


def test_an_expected_region_past_the_arrays_end_is_refused_before_anything_runs(tmp_path):
    extra = (
        'expected=weanj.Expected("jax-scan", reason="planted", array="u0", region=np.s_[43:640])'
    )
    root = _project(tmp_path, extra=extra)
    r = weanj_here(root, "check", "--dtype", "float64")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "its region [43:640] reaches 640 on axis 0, past the end of u0, of shape (50,)" in (
        r.stdout + r.stderr
    )
    assert "[1/" not in r.stderr  # refused before any evaluation


def test_a_time_limit_given_on_the_command_line_is_named_so(heat):
    from weanj._project import project_config, time_limit

    config = project_config(heat)
    assert time_limit(2, config).source == (
        " (given: --timeout 2, or timeout= of the API; 0: none)"
    )
    assert time_limit(None, config).source.startswith(" (the default, 600 s: ")
