"""One line for every misuse (issue 52, item 5).

`weanj.Expected` declarations that cannot fit the example's arrays (a region of another
rank, a float slice, an `elements` function that raises or returns no indices, a pair of a
variant with itself) are refused in one line naming the declaration (its variant and the
file:line of the project's code that declared it), with exit status 2 and no traceback:
when the module is loaded where the declaration alone is wrong, once the inputs are known
(before anything runs) where it does not fit them. And the Python API's arguments:
`weanj.check(say=5)`, `weanj.report(out=5)`, `weanj.compare("a", "b")`; and a `tls://`
scheduler, which needs a security configuration weanj does not take.
"""

from __future__ import annotations

import pytest

import weanj
from weanj._errors import InputError

from .helpers import assert_one_line_error
from .projects import weanj_here, write_project

HEAD = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="42-misused", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)}))

@weanj.jax_variant(ex, "jax-a", family="f")
def a(x):
    return jnp.sum(jnp.sin(x) ** 2)

def boom(arrays):
    raise ValueError("no such element")

"""
LINE = HEAD.count("\n") + 1  # the line of the declaration below HEAD


def _declared(expected: str) -> str:
    return HEAD + (
        f'@weanj.jax_variant(ex, "jax-b", family="f", expected={expected})\n'
        "def b(x):\n"
        "    return jnp.sum(1 - jnp.cos(x) ** 2)\n"
    )


WHY = 'reason="known"'
CASES = {
    # what is declared: the words of its one line
    "a 2-d region on a 1-d array": (
        f"weanj.Expected({WHY}, region=np.s_[1:3, :])",
        ["jax-b vs its family", "its region [1:3, :] does not fit x, of shape (6,) (1-d)"],
    ),
    "an index of the region outside the array": (
        f"weanj.Expected({WHY}, region=np.s_[10])",
        ["jax-b vs its family", "its region [10] does not fit x"],
    ),
    "a float slice": (
        f"weanj.Expected({WHY}, region=np.s_[1.5:3])",
        ["region is a box of slices and indices, integers only", "slice(1.5, 3, None)"],
    ),
    "elements that raise": (
        f"weanj.Expected({WHY}, elements=boom)",
        ["its elements function boom raised ValueError: no such element"],
    ),
    "elements that return None": (
        f"weanj.Expected({WHY}, elements=lambda arrays: None)",
        ["returned None, not a list of indices"],
    ),
    "elements that return an element outside": (
        f"weanj.Expected({WHY}, elements=lambda arrays: [7])",
        ["element (7,) is outside x, of shape (6,)"],
    ),
    "elements that return no index": (
        f"weanj.Expected({WHY}, elements=lambda arrays: ['first'])",
        ["element 'first' is not an index"],
    ),
    "elements that are a number": (
        f"weanj.Expected({WHY}, elements=3)",
        ["elements must be a list of indices or a function of the inputs, got 3"],
    ),
    "the variant against itself": (
        f'weanj.Expected({WHY}, against="jax-b")',
        ["against='jax-b' names the variant itself"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_declaration_that_cannot_fit_is_one_line_naming_it(tmp_path, case):
    expected, words = CASES[case]
    root = write_project(tmp_path, {"kernels/misused.py": _declared(expected)}, regenerate=False)
    # refused on loading the project where the declaration alone is wrong; else it loads
    regenerated = weanj_here(root, "inputs", "regenerate")
    done = weanj_here(root, "check")
    if regenerated.returncode != 0:
        assert regenerated.stderr == done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    assert_one_line_error(done.stderr, *words, f"kernels/misused.py:{LINE}")
    assert not (root / "results" / "42-misused" / "check.json").exists()  # nothing judged


def test_an_example_declaration_against_its_own_variant_is_refused():
    with pytest.raises(weanj.DefinitionError) as e:
        weanj.Expected(variant="jax-a", against="jax-a", reason="known")
    assert "names the variant itself" in str(e.value) and "\n" not in str(e.value)
    assert "test_misuse.py:" in str(e.value)  # where it was declared


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: weanj.check(say=5), "check: say must be a function taking one line of text"),
        (lambda: weanj.report(out=5), "report: out must be a file name (str or pathlib.Path)"),
        (lambda: weanj.compare("a", "b"), "compare: g_ref must be an array of numbers"),
        (lambda: weanj.compare([1.0, 2.0], None), "compare: g must be an array of numbers"),
    ],
)
def test_a_wrong_argument_of_the_api_is_one_line(call, words):
    with pytest.raises(InputError) as e:
        call()
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_tls_scheduler_without_a_security_configuration_is_one_line(tmp_path):
    pytest.importorskip("distributed")
    from .projects import tiny_project

    root = tiny_project(tmp_path)
    done = weanj_here(root, "check", "--scheduler", "tls://127.0.0.1:1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert_one_line_error(
        done.stderr, "tls://127.0.0.1:1 speaks TLS", "security configuration", "tcp://"
    )
