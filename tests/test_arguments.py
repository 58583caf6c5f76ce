"""Every public function checks its arguments at the call (issue 64, item 1): a wrong
type, a text where a list is asked, a name given twice, something not callable where a
function is asked, a name that would become a path, an example registered over another:
one `weanj` error line naming the function, the argument and what it accepts (exit 2 on
the command line), never a `TypeError` or `KeyError` from deep inside, and nothing
written. The calls that were accepted without a word or raised a raw exception before
(the reliability battery of issue 64) are here with their siblings.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _registry

from .helpers import assert_one_line_error
from .projects import run_in, weanj_here, write_project

NAME = "96-misused"


def _loss(x):
    return float(np.sum(np.asarray(x) ** 2))


@pytest.fixture
def ex():
    """A registered example of one array `x` (withdrawn afterwards, with whatever a test
    registered on it)."""
    made = weanj.register_example(
        weanj.Example(name=NAME, arrays=("x",), wrt="x", generate=lambda s: {"x": np.ones(4)})
    )
    yield made
    _registry.unregister_example(NAME)


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under `root`, as the sha256 of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _refused(call, kind=weanj.WeanjError) -> str:
    """The one line `call()` is refused with (a `WeanjError` of `kind`, exit code 2)."""
    with pytest.raises(kind) as raised:
        call()
    message = str(raised.value)
    assert isinstance(raised.value, weanj.WeanjError) and raised.value.exit_code == 2
    assert "\n" not in message, message
    return message


# --- the battery's cases ------------------------------------------------------------------


def test_save_inputs_with_an_array_missing_names_it_and_the_expected_ones(ex, tmp_path):
    """A bare `KeyError: 'y'` before (a regression of round 6); nothing is written."""
    two = weanj.register_example(
        weanj.Example(
            name="96-two", arrays=("x", "y"), wrt="x", generate=lambda s: {"x": 0, "y": 0}
        )
    )
    try:
        message = _refused(
            lambda: weanj.save_inputs(two, {"x": np.ones(3)}, path=tmp_path / "in.h5"),
            weanj.InputError,
        )
    finally:
        _registry.unregister_example("96-two")
    assert message == (
        "the arrays given to save_inputs('96-two'): missing array(s) y (expected x, y)"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("ad", [["enzyme"], {"enzyme": 1}, ("enzyme",)])
def test_julia_variant_ad_of_the_wrong_type_is_one_line(ex, ad):
    """`TypeError: unhashable type: 'list'` before, naming neither the function nor `ad=`."""
    message = _refused(
        lambda: weanj.julia_variant(ex, "julia-x", family="f", loss="f", ad=ad),
        weanj.DefinitionError,
    )
    assert message.startswith("julia_variant 'julia-x': ad must be one of 'enzyme', ")
    assert weanj.variants(ex, available_only=False) == []


@pytest.mark.parametrize(
    ("elements", "words"),
    [
        ({1: 2}, "elements must be a list of indices or a function of the inputs"),
        ([{1: 2}], "element {1: 2} is not an index"),
        ([{1, 2}], "element {1, 2} is not an index"),
        ([(1, [2])], "element (1, [2]) is not an index"),
        ("ab", "elements must be a list of indices"),
    ],
)
def test_expected_elements_that_are_no_indices_are_refused(elements, words):
    message = _refused(lambda: weanj.Expected(reason="known", elements=elements))
    assert message.startswith("weanj.Expected: ") and words in message, message


def test_expected_elements_of_indices_are_kept_in_order():
    """What is accepted, read back: ints, tuples, lists and array rows are indices."""
    made = weanj.Expected(reason="known", elements=[3, (1, 2), [0, 1], *np.array([[4, 5]])])
    assert made.elements == ((3,), (1, 2), (0, 1), (4, 5))


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda ex: weanj.jax_variant(ex, _loss, family="f"), "jax_variant: name must be a"),
        (lambda ex: weanj.jax_variant(ex, 5, family="f"), "jax_variant: variant name 5 must"),
        (
            lambda ex: weanj.jax_variant(ex, "jax-x", family="f", loss=5),
            "jax_variant 'jax-x': loss must be None or a function, got 5",
        ),
        (
            lambda ex: weanj.jax_variant(ex, "jax-x", family="f")(5),
            "is applied to the loss, a function; got 5",
        ),
        (
            lambda ex: weanj.jax_variant(ex, "jax-x", family="f", loss=_loss, grad="g"),
            "jax_variant 'jax-x': grad must be None or a function, got 'g'",
        ),
        (
            lambda ex: weanj.enzyme_variant(ex, "jax-x-enzyme", family="f", loss=[_loss]),
            "enzyme_variant 'jax-x-enzyme': loss must be None or a function",
        ),
        (
            lambda ex: weanj.jax_variant(ex, "jax-x", family="f", loss=_loss, excludes=3),
            "variant jax-x: excludes must be a function, got 3",
        ),
    ],
    ids=[
        "function as name",
        "int as name",
        "loss 5",
        "decorating 5",
        "grad text",
        "enzyme loss list",
        "excludes 3",
    ],
)
def test_a_variant_whose_function_is_no_function_is_refused(ex, call, words):
    """`weanj.jax_variant(ex, 5)`'s siblings: refused at the call, the decorator's form
    as soon as it is applied; nothing is registered."""
    assert words in _refused(lambda: call(ex), weanj.DefinitionError)
    assert weanj.variants(ex, available_only=False) == []


@pytest.mark.parametrize("family", ["../x", "a/b", "a\\b", "..", "", " f", "x::y", "a\nb", 5, None])
def test_a_family_that_is_no_name_is_refused(ex, family):
    """A family names cases (`EX::FAMILY::VARIANT`): a path or a separator in it is
    refused, in every constructor. (Markup is the reports' to escape:
    tests/test_report_safety.py declares a family holding some.)"""
    for call in (
        lambda: weanj.jax_variant(ex, "jax-x", family=family, loss=_loss),
        lambda: weanj.julia_variant(ex, "julia-x", family=family, loss="f"),
    ):
        message = _refused(call, weanj.DefinitionError)
        assert "family must be a name (no / \\ .. :: or line break" in message, message
    assert weanj.variants(ex, available_only=False) == []


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"requires": "kernex"}, "requires must be a list of names, got the text 'kernex'"),
        ({"requires": 5}, "requires must be a list of names (str), got 5"),
        ({"requires": ["kernex", "kernex"]}, "requires names 'kernex' twice"),
        ({"dtypes": ("float64", "float64")}, "dtypes must be one or more of float64, float32"),
        ({"dtypes": 64}, "dtypes must be one or more of float64, float32"),
        ({"multi_device": "yes"}, "multi_device must be True or False, got 'yes'"),
        ({"description": 5}, "description must be one line of text, got 5"),
        ({"expected": 5}, "expected= takes weanj.Expected declarations"),
    ],
)
def test_a_variant_option_of_the_wrong_kind_is_refused(ex, options, words):
    message = _refused(
        lambda: weanj.jax_variant(ex, "jax-x", family="f", loss=_loss, **options),
        weanj.DefinitionError,
    )
    assert words in message, message
    assert weanj.variants(ex, available_only=False) == []


def test_julia_variant_loss_file_and_function_of_the_wrong_kind(ex):
    for options, words in (
        ({"loss": 5}, "loss must be a Julia function's name (str), got 5"),
        ({"loss": "f", "file": 5}, "file must be None or a Julia file's path (str or Path)"),
        ({"loss": "f", "function": ["const"]}, "function must be None, 'const' or 'dupl"),
        ({"loss": "f", "runtime_activity": "no"}, "runtime_activity must be True or False"),
    ):
        message = _refused(
            lambda o=options: weanj.julia_variant(ex, "julia-x", family="f", **o),
            weanj.DefinitionError,
        )
        assert message.startswith("julia_variant 'julia-x': ") and words in message, message


def test_registering_an_example_over_a_registered_one_is_refused(ex):
    """The same example object again (a cell run twice) and another under its name, in one
    line; the first stays registered."""
    again = weanj.Example(name=NAME, arrays=("y",), wrt="y", generate=lambda s: {"y": 0})
    for other in (ex, again):
        message = _refused(lambda o=other: weanj.register_example(o), weanj.DefinitionError)
        assert message.startswith(f"register_example: example {NAME!r} is registered twice")
    assert weanj.example(NAME) is ex


SMOOTH = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="11-smooth", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)}))

@weanj.jax_variant(ex, "jax-smooth", family="smooth")
def smooth(x):
    return jnp.sum(jnp.sin(x) ** 2)
"""


def test_a_script_registering_a_name_the_project_takes_is_refused_at_its_call(tmp_path):
    """Before the registry has loaded the project, a script's `register_example` of a
    name one of the project's modules registers was accepted, and the project's own
    module then failed to import. Now the project loads first, and the script's call
    is the one refused; the project is whole."""
    root = write_project(tmp_path, {"kernels/smooth.py": SMOOTH}, regenerate=False)
    code = (
        "import numpy as np, weanj\n"
        "try:\n"
        "    weanj.register_example(weanj.Example(name='11-smooth', arrays=('x',), wrt='x',\n"
        "                           generate=lambda s: {'x': np.ones(3)}))\n"
        "except weanj.DefinitionError as e:\n"
        "    print('refused:', e)\n"
        "print(weanj.example('11-smooth').module, weanj.variants('11-smooth'))\n"
    )
    done = run_in(root, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "refused: register_example: example '11-smooth' is registered twice (first by "
        "module kernels.smooth)",
        "kernels.smooth ['jax-smooth']",
    ]


# --- the front doors' lists, choices and flags ---------------------------------------------

WRONG = {
    "check variants ''": (lambda: weanj.check(variants=""), "check: variants must be a list"),
    "check variants text": (
        lambda: weanj.check(variants="jax-jacobi"),
        "check: variants must be a list of names, got the text 'jax-jacobi' "
        "(one name: variants=['jax-jacobi'])",
    ),
    "check variants twice": (
        lambda: weanj.check(variants=["jax-jacobi", "jax-jacobi"]),
        "check: variants names 'jax-jacobi' twice",
    ),
    "check examples twice": (
        lambda: weanj.check(["01-jacobi", "01-jacobi"]),
        "check: examples names '01-jacobi' twice",
    ),
    "check empty example": (lambda: weanj.check([""]), "check: examples holds an empty name"),
    # an empty selection judged every variant (or example): a check of nothing chosen passed
    "check no variant": (
        lambda: weanj.check("01-jacobi", variants=[]),
        "check: variants=[] selects nothing; name one or more, or leave variants out (None)",
    ),
    "check no example": (lambda: weanj.check([]), "check: examples=[] selects nothing"),
    "diff no example": (lambda: weanj.diff(()), "diff: examples=[] selects nothing"),
    "report no example": (lambda: weanj.report([]), "report: examples=[] selects nothing"),
    "check dtype list": (
        lambda: weanj.check(dtype=["float64"]),
        "check: dtype must be one of 'float64', 'float32', 'both', got ['float64']",
    ),
    "check workers text": (lambda: weanj.check(workers="2"), "check: workers must be an integer"),
    "check workers bool": (lambda: weanj.check(workers=True), "check: workers must be an integer"),
    "check processes 0": (lambda: weanj.check(processes=0), "check: processes must be an integer"),
    "check scheduler 5": (lambda: weanj.check(scheduler=5), "check: scheduler must be a"),
    "check require text": (lambda: weanj.check(require="julia"), "check: require must be a list"),
    "check device 5": (lambda: weanj.check(device=5), "check: device must be a name"),
    "diff empty": (lambda: weanj.diff(""), "diff: examples holds an empty name"),
    "report format": (lambda: weanj.report(format="pdf"), "report: format must be one of"),
    "report judgement": (lambda: weanj.report(judgement={}), "report: judgement must be a"),
    "report examples 5": (lambda: weanj.report(5), "report: examples must be a name"),
    "variants flag": (
        lambda: weanj.variants("01-jacobi", available_only="no"),
        "variants: available_only must be True or False, got 'no'",
    ),
    "evaluate dtype": (
        lambda: weanj.evaluate("01-jacobi", "jax-jacobi", dtype=["float64"]),
        "evaluate: dtype must be 'float64' or 'float32'",
    ),
    "gradient_path recorded text": (
        lambda: weanj.gradient_path("01-jacobi", "jax-jacobi", recorded="yes"),
        "gradient_path: recorded must be True or False, got 'yes'",
    ),
    "gradient_path variant path": (
        lambda: weanj.gradient_path("01-jacobi", "../jax-jacobi"),
        "gradient_path: variant name '../jax-jacobi' must start with a letter or digit",
    ),
    "load_gradient allow_stale": (
        lambda: weanj.load_gradient("01-jacobi", "jax-jacobi", recorded=True, allow_stale=1),
        "load_gradient: allow_stale must be True or False, got 1",
    ),
    "stored_gradients flag": (
        lambda: weanj.stored_gradients("01-jacobi", produced="no"),
        "stored_gradients: produced must be True or False",
    ),
    "save_inputs params": (
        lambda: weanj.save_inputs("01-jacobi", {}, params=[3]),
        "save_inputs: params must be a dict",
    ),
    "save_gradient force": (
        lambda: weanj.save_gradient("01-jacobi", "jax-jacobi", np.ones((64, 64)), force="y"),
        "save_gradient: force must be True or False, got 'y'",
    ),
    "save_gradient params": (
        lambda: weanj.save_gradient("01-jacobi", "jax-jacobi", np.ones((64, 64)), params=3),
        "save_gradient: params must be a dict",
    ),
    "write_results records": (
        lambda: weanj.write_results("01-jacobi", "jax", "cpu", 5),
        "write_results: records must be a list of dicts",
    ),
    "write_results env": (
        lambda: weanj.write_results("01-jacobi", "jax", "cpu", [], env=[]),
        "write_results: env must be a dict",
    ),
    "differ_at_kinks why": (
        lambda: weanj.differ_at_kinks("03-advection", "jax-muscl", "julia-muscl", why=5),
        "differ_at_kinks: why must be one line saying why, got 5",
    ),
    "jvp_check f": (lambda: weanj.jvp_check(5, np.ones(3), np.ones(3)), "jvp_check: f must be"),
    "jvp_check seed": (
        lambda: weanj.jvp_check(_loss, np.ones(3), np.ones(3), seed="1"),
        "jvp_check: seed must be an integer >= 0",
    ),
    "taylor_test rate": (
        lambda: weanj.taylor_test(_loss, np.ones(3), 2 * np.ones(3), rate="2"),
        "taylor_test: rate must be a finite number, got '2'",
    ),
    "taylor_test h0": (
        lambda: weanj.taylor_test(_loss, np.ones(3), 2 * np.ones(3), h0=-1.0),
        "taylor_test: h0 must be a finite number > 0, got -1.0",
    ),
    "time_median fn": (lambda: weanj.time_median(5), "time_median: fn must be a function"),
    "time_median samples": (
        lambda: weanj.time_median(lambda: 0, samples="3"),
        "time_median: samples must be an integer >= 1, got '3'",
    ),
    "time_median sync": (
        lambda: weanj.time_median(lambda: 0, sync=5),
        "time_median: sync must be None or a function",
    ),
    "compare dtype": (
        lambda: weanj.compare(np.ones(2), np.ones(2), dtype=5),
        "compare: dtype must be float64, float32, complex128 or complex64, got 5",
    ),
    "compare keep": (
        lambda: weanj.compare(np.ones(2), np.ones(2), keep=5),
        "compare: keep must be booleans shaped like the arrays (2,)",
    ),
    "compare loss": (
        lambda: weanj.compare(np.ones(2), np.ones(2), 1.0, "1"),
        "compare: loss must be None or a number, got '1'",
    ),
    "ulp_distance text": (lambda: weanj.ulp_distance("a", 1.0), "ulp_distance: a must be"),
    "set_devices text": (lambda: weanj.set_devices("2"), "set_devices: devices must be"),
    "set_devices platform": (
        lambda: weanj.set_devices(platform=5),
        "set_devices: platform must be a platform's name (str), got 5",
    ),
    "environment device": (lambda: weanj.environment(device=5), "environment: device must be"),
    "enable_compilation_cache": (
        lambda: weanj.enable_compilation_cache(5),
        "enable_compilation_cache: root must be None or a folder (str or Path), got 5",
    ),
    "project_config": (lambda: weanj.project_config(5), "project_config: root must be a folder"),
}


@pytest.mark.parametrize("call", WRONG, ids=list(WRONG))
def test_a_wrong_argument_is_one_line_naming_the_function_and_what_it_accepts(project, call):
    """Each call is refused before anything is read, run or written: the project's files
    are byte-identical afterwards."""
    do, words = WRONG[call]
    before = _snapshot(project)
    assert words in _refused(do)
    assert _snapshot(project) == before


def test_the_right_calls_beside_them_still_work(project):
    """What the checks accept: a list of one variant, one example's name, a tuple."""
    judged = weanj.check("01-jacobi", variants=("jax-jacobi",), dtype="float64", save=False)
    assert judged.ok and list(judged.examples) == ["01-jacobi"]
    assert weanj.variants("01-jacobi", available_only=False)[0] == "jax-jacobi"
    assert weanj.time_median(lambda: 0, samples=1, warmup=0) >= 0.0


# --- on the command line: exit 2, one line, the user's files as they were ---------------

MODULE_MISUSES = {
    "a family with ../": (
        'weanj.jax_variant(ex, "jax-b", family="../up", loss=lambda x: jnp.sum(x))\n',
        "variant jax-b: family must be a name (no / \\ .. :: or line break",
    ),
    "a function where the name goes": (
        "weanj.jax_variant(ex, lambda x: jnp.sum(x), family='f')\n",
        "jax_variant: name must be a variant's name (str, e.g. 'jax-loop')",
    ),
    "a Julia ad as a list": (
        'weanj.julia_variant(ex, "julia-b", family="f", loss="f", ad=["enzyme"])\n',
        "julia_variant 'julia-b': ad must be one of 'enzyme'",
    ),
    "an example registered twice": (
        'weanj.register_example(weanj.Example(name="11-smooth", arrays=("x",), wrt="x",\n'
        '    generate=lambda seed: {"x": np.ones(3)}))\n',
        "register_example: example '11-smooth' is registered twice",
    ),
}


@pytest.mark.parametrize("case", sorted(MODULE_MISUSES))
def test_a_misuse_in_a_project_module_stops_check_in_one_line(tmp_path, case):
    """`weanj check` (in this process, as a fresh one runs it) of a project whose module
    misuses the API: exit 2, one line naming the module and the call's mistake, nothing
    judged, every file of the project byte-identical."""
    line, words = MODULE_MISUSES[case]
    root = write_project(tmp_path, {"kernels/smooth.py": SMOOTH + line}, regenerate=False)
    before = _snapshot(root)
    done = weanj_here(root, "check")
    assert done.returncode == 2, done.stdout + done.stderr
    assert_one_line_error(done.stderr, "example module 'kernels.smooth'", words)
    assert done.stdout == ""
    assert _snapshot(root) == before


def test_variants_named_twice_on_the_command_line_is_one_line(tmp_path):
    root = write_project(tmp_path, {"kernels/smooth.py": SMOOTH})
    before = _snapshot(root)
    done = weanj_here(root, "check", "--variants", "jax-smooth", "jax-smooth")
    assert done.returncode == 2, done.stdout + done.stderr
    assert_one_line_error(done.stderr, "check: variants names 'jax-smooth' twice")
    assert _snapshot(root) == before
