"""Each option of a check declared once (issue 71, item 1; docs/reference/options.md): a
field of `CheckOptions` (`_check_options`) gives `weanj check`'s flag, `weanj.check()`'s
keyword and `pytest --weanj`'s option, and each front end's value reaches the run that
reads it. The front ends are driven as a user drives them (the command line's parser and
`main`, `weanj.check()`, `pytest --weanj` in a fresh process); what reaches the run is what
`CheckRun` is handed, and, for pytest, the case table it collects.
"""

from __future__ import annotations

import dataclasses

import pytest

from weanj import _project
from weanj._check_options import (
    OPTION_KEYS,
    CheckOptions,
    declared,
    for_pytest,
    table_rows,
    with_flags,
)
from weanj._cli._parser import build_parser

from .projects import pytest_weanj_in, tiny_project, weanj_here

FIELDS = dataclasses.fields(CheckOptions)

# a value other than the default for each option on the command line, as typed, and as
# the API takes it
GIVEN = {
    "variants": (["--variants", "jax-a", "jax-b"], ("jax-a", "jax-b")),
    "dtype": (["--dtype", "float64"], "float64"),
    "require": (["--require", "julia", "--require", "jax-a"], ("julia", "jax-a")),
    "device": (["--device", "tpu"], ("tpu",)),
    "fresh": (["--fresh"], True),
    "verbose": (["-v"], True),
    "fd": (["--fd"], True),
    "strict": (["--strict"], True),
    "order": (["--order", "2"], 2),
    "timeout": (["--timeout", "7.5"], 7.5),
    "workers": (["--workers", "3"], 3),
    "scheduler": (["--scheduler", "tcp://127.0.0.1:8786"], "tcp://127.0.0.1:8786"),
    "processes": (["--processes", "2"], 2),
}


def test_every_option_with_a_flag_is_tried_here_and_its_default_is_no_flag():
    assert set(GIVEN) == {f.name for f in with_flags()}
    args = build_parser().parse_args(["check"])
    assert CheckOptions.from_args(args) == CheckOptions()


@pytest.mark.parametrize("name", sorted(GIVEN))
def test_a_flag_gives_the_same_options_as_the_apis_keyword(name):
    typed, value = GIVEN[name]
    args = build_parser().parse_args(["check", *typed])
    assert CheckOptions.from_args(args) == CheckOptions.of("check", **{name: value})
    assert getattr(CheckOptions.of("check", **{name: value}), name) == value
    assert value != next(f.default for f in FIELDS if f.name == name)


@pytest.mark.parametrize(
    ("keywords", "said"),
    [
        (dict(order=3), "check: order must be 1 or 2"),
        (dict(order=True), "check: order must be 1 or 2"),
        (dict(fd="yes"), "check: fd must be True or False"),
        (dict(variants="jax-a"), "check: variants must be a list of names"),
        (dict(variants=[]), "check: variants=[] selects nothing"),
        (dict(device=["cpu", "moon"]), "device must be one of cpu, gpu, tpu, got 'moon'"),
        (dict(timeout=-1), "check: timeout must be a number of seconds >= 0"),
        (dict(workers=-1), "check: workers must be an integer >= 0"),
        (dict(scheduler=""), "check: scheduler must be a scheduler's address"),
        (dict(dtype="float16"), "check: dtype must be one of"),
    ],
)
def test_a_wrong_value_is_one_line_naming_the_option(keywords, said):
    import weanj
    from weanj._errors import InputError

    with pytest.raises(InputError) as e:
        weanj.check("01-jacobi", **keywords)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_an_unknown_keyword_is_pythons_type_error_naming_the_options():
    import weanj

    with pytest.raises(TypeError, match=r"unexpected keyword argument 'colour' \(its options: "):
        weanj.check("01-jacobi", colour=True)


def test_pytest_takes_each_option_it_declares_and_says_why_not_the_others():
    for f in FIELDS:
        d = declared(f)
        assert d.pytest is None or d.pytest.startswith("--weanj-"), f.name
        # an option weanj check takes and pytest does not says why (the docs' table)
        if d.flags and d.pytest is None:
            assert d.pytest_why, f.name
    assert {f.name for f in for_pytest()} == {
        "variants",
        "dtype",
        "require",
        "device",
        "fresh",
        "fd",
        "strict",
        "order",
        "timeout",
    }
    rows = {row[0]: row for row in table_rows()}
    assert set(rows) == {f.name for f in FIELDS}
    assert rows["workers"][2] == "— (pytest --weanj evaluates in its own process)"


def test_the_declared_keys_are_those_the_project_reads():
    assert set(OPTION_KEYS) == {"require", "devices", "timeout", "scheduler"}
    assert set(OPTION_KEYS) <= _project._KEYS


class _Reached(Exception):
    pass


@pytest.fixture
def handed(monkeypatch):
    """What `CheckRun` is handed, the run stopped there."""
    from weanj._commands import check as check_command

    seen = {}

    def stop(cats, places, options, executor=None, listeners=(), **how):
        seen.update(options=options, executor=executor, how=how)
        raise _Reached

    monkeypatch.setattr(check_command, "CheckRun", stop)
    return seen


def test_the_command_lines_options_reach_the_run(tmp_path, handed):
    root = tiny_project(tmp_path)
    flags = ["--fd", "--order", "2", "--dtype", "float64", "--timeout", "9", "--strict"]
    with pytest.raises(_Reached):
        weanj_here(root, "check", "10-tiny", *flags)
    options = handed["options"]
    assert (options.fd, options.order, options.dtype) == (True, 2, "float64")
    assert (options.timeout, options.strict, options.save) == (9.0, True, True)
    assert handed["how"]["devices"] == ("cpu",)


def test_the_apis_options_reach_the_run(tmp_path, handed):
    import weanj

    from .projects import as_user_in

    root = tiny_project(tmp_path)
    with as_user_in(root), pytest.raises(_Reached):
        weanj.check("10-tiny", fd=True, order=2, save=False, fresh=True, say=lambda s: None)
    options = handed["options"]
    assert (options.fd, options.order, options.save, options.fresh) == (True, 2, False, True)


def test_pytest_weanjs_options_reach_its_case_table(tmp_path):
    """`--weanj-order 2` adds the Hessian products' cases, `--weanj-dtype float64` leaves
    the float32 runs out, `--weanj-variant` keeps one variant: the table collected says
    each reached the run."""
    root = tiny_project(tmp_path)
    plain = pytest_weanj_in(root, "--collect-only", "-q")
    asked = pytest_weanj_in(
        root,
        "--collect-only",
        "-q",
        "--weanj-order",
        "2",
        "--weanj-dtype",
        "float64",
        "--weanj-example",
        "10-tiny",
    )
    assert plain.returncode == 0 and asked.returncode == 0, plain.stdout + asked.stdout
    before = [x for x in plain.stdout.splitlines() if x.startswith("weanj::10-tiny")]
    after = [x for x in asked.stdout.splitlines() if x.startswith("weanj::")]
    assert any("@float32" in x for x in before) and not any("@float32" in x for x in after)
    assert not any("::hvp::" in x for x in before) and any("::hvp::" in x for x in after)
    wrong = pytest_weanj_in(root, "--collect-only", "-q", "--weanj-order", "3")
    assert wrong.returncode != 0 and "--weanj-order: invalid choice: 3" in wrong.stderr
