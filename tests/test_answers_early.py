"""Answers in seconds (issue 70, item 5): a refusal that needs no JAX comes before JAX is
imported. A mistyped variant took 15–25 s to be refused on a loaded machine, the time to
import JAX and every example module; it is now refused from the record of what the
project's modules registered at their last import (`_registry._names`), in the same words
as after the import, and the record is not trusted once their code has changed.

Each command runs in a fresh process (`python -c`, the command line's `main`), which
says after each refusal whether JAX was imported; the same commands run again with no
record (the refusals after the import, as before) must say the same lines.
"""

from __future__ import annotations

import json

from .projects import run_in, tiny_project, weanj_in

# What a command refuses, and a fragment of its line (the line itself is compared between
# the two ways of refusing it).
CASES = {
    "an unknown variant": (["check", "10-tiny", "--variants", "jax-c"], "unknown variant(s) jax-c"),
    "an unknown example": (["check", "10-tinny"], "unknown example '10-tinny'"),
    "a variant for an example": (["run", "jax-a", "jax-a"], "jax-a is a variant of 10-tiny"),
    "an unknown parameter": (["run", "10-tiny", "jax-a", "--T", "3"], "10-tiny has no parameter T"),
    "a parameter's value": (["run", "10-tiny", "jax-a", "--S", "0"], "S"),
    "a value of no kind": (["bench", "10-tiny", "--S", "two"], "S"),
    "a variant to run": (["run", "10-tiny", "jax-z"], "unknown variant 'jax-z' of 10-tiny"),
    "a run's name": (["bisect", "10-tiny", "jax-a", "jax-q@float32"], "'jax-q@float32'"),
    "a pair": (["fuzz", "10-tiny", "--pairs", "jax-a", "jax-q"], "unknown variant 'jax-q'"),
    "a benchmark's variant": (["bench", "10-tiny", "--variants", "jax-q"], "'jax-q' of 10-tiny"),
    "an example to list": (["list", "11-othr"], "did you mean 11-other?"),
    "an option": (["check", "--variant", "jax-a"], "did you mean --variants?"),
}

# Each command of CASES through the command line's `main`, in this one process: its exit
# code, whether JAX was imported by then, and what it said on stderr.
COMMANDS = """\
import contextlib, io, json, sys
from weanj._cli._main import main

out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's usage errors
            code = e.code
    out.append([code, "jax" in sys.modules, err.getvalue()])
print(json.dumps(out))
"""


def _commands(root, argvs) -> list:
    done = run_in(root, "-c", COMMANDS, json.dumps(argvs))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_refusal_that_needs_no_jax_comes_before_it_in_the_same_words(tmp_path):
    root = tiny_project(tmp_path)
    assert weanj_in(root, "list").returncode == 0  # the project loaded: its names recorded
    from weanj._project import project_config
    from weanj._registry._names import record_file

    record = record_file(project_config(root))
    assert record.is_file()
    argvs = [argv for argv, _ in CASES.values()]
    early = _commands(root, argvs)
    record.unlink()  # no record: each refused after JAX and the modules have imported
    late = _commands(root, argvs)
    for (what, (_, words)), (code, jax, said), (code_late, _, said_late) in zip(
        CASES.items(), early, late, strict=True
    ):
        assert code == code_late == 2, (what, said, said_late)
        assert not jax, (what, said)  # refused before JAX was imported
        assert said == said_late and words in said, (what, said, said_late)
        assert "Traceback" not in said


def test_the_record_is_not_trusted_once_the_code_changed(tmp_path):
    """A variant added since the record was written is not refused from it: the record's
    key holds the modules' code."""
    root = tiny_project(tmp_path)
    assert weanj_in(root, "list").returncode == 0
    tiny = root / "kernels" / "tiny.py"
    tiny.write_text(
        tiny.read_text()
        + '\n@weanj.jax_variant(ex, "jax-c", family="f")\n'
        + "def c(x, y, S):\n    return a(x, y, S)\n"
    )
    ((code, jax, said),) = _commands(root, [["check", "10-tiny", "--variants", "jax-c", "-v"]])
    assert code == 0 and jax, said  # judged, after the modules imported
    assert "10-tiny jax-c: " in said


def test_an_unknown_key_of_the_project_is_refused_before_jax(tmp_path):
    root = tiny_project(tmp_path)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "timout = 30\n")
    ((code, jax, said),) = _commands(root, [["check"]])
    assert code == 2 and not jax, said
    assert "timout" in said and "Traceback" not in said
