"""Every code block of the documentation as a test (Sybil), as a pytest plugin:

    python -m pytest -p tests.docs_blocks README.md docs

One item per block, in page order. Python blocks (plain, or `>>>` sessions checked as
doctests, and `<!-- invisible-code-block: python -->` set-up a reader does not see) run in
one namespace per page, in a temporary project holding a copy of weanj's shared inputs and
recorded references (`$WEANJ_ROOT` and the working folder), and whatever a page registers
is taken back afterwards; JAX's compilation cache is one folder for the whole run. A
block in another language is not run, and says so: it is a skipped item whose reason
names its language (`bash` and `console`: shell commands, whose
`weanj ...` command lines must still parse with weanj's own parser, or the item fails;
`text`: output; `toml`, `julia`, `json`: files of those kinds). A Python block that cannot
run here is marked in the page with `<!-- skip: next "why" -->`, and its item is skipped
with that reason. A fenced block in no known language fails, so nothing is left out
unseen. `docs/DESIGN.md` is excluded: the contract's blocks are signatures and formulas,
not programs. Not in weanj's default test paths (`python -m pytest -n 2` leaves it out):
`.ci/run` runs it on its own, after the docs build.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import io
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from unittest import SkipTest

from sybil import Region, Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

REPO = Path(__file__).resolve().parent.parent

# Languages shown and never run, and why.
NOT_RUN = {
    "bash": "shell commands: shown, not run (their weanj command lines parse)",
    "console": "a shell session: shown, not run (its weanj command lines parse)",
    "text": "output or a layout: shown, not run",
    "toml": "a TOML file: shown, not run",
    "julia": "Julia code: no Julia on the machines weanj is tested on",
    "json": "a JSON file: shown, not run",
}


class FenceAudit:
    """Every fenced block that is not Python: skipped with its reason, or a failure when
    its language is missing or unknown."""

    def __init__(self) -> None:
        self.lexer = RawFencedCodeBlockLexer(
            info_pattern=re.compile(r"(?P<language>[^\n]*)$\n", re.MULTILINE)
        )

    def __call__(self, document):
        for region in self.lexer(document):
            language = region.lexemes["language"].strip()
            if language == "python":
                continue  # PythonCodeBlockParser's
            source = str(region.lexemes["source"])
            yield Region(region.start, region.end, (language, source), self.evaluate)

    @staticmethod
    def evaluate(example) -> None:
        language, source = example.parsed
        where = f"{Path(example.path).relative_to(REPO)}:{example.line}"
        if language in ("bash", "console"):
            _parse_weanj_lines(source, where)
        if language in NOT_RUN:
            raise SkipTest(f"{where}: {language} block: {NOT_RUN[language]}")
        raise AssertionError(
            f"{where}: a code block in language {language or '(none)'!r}: mark it python (run) or "
            f"one of {', '.join(NOT_RUN)} (not run)"
        )


def _parse_weanj_lines(source: str, where: str) -> None:
    """Every `weanj ...` command of a shell block is one the parser accepts (an option
    renamed or removed fails here, not in a reader's terminal)."""
    from weanj._cli._parser import parse

    for line in source.splitlines():
        line = line.split("  #")[0].strip().removeprefix("$ ")
        for command in line.split("&&"):
            words = shlex.split(command.strip())
            if words[:1] != ["weanj"]:
                continue
            stderr = io.StringIO()
            try:
                with contextlib.redirect_stderr(stderr):
                    parse(words[1:])
            except SystemExit:
                raise AssertionError(
                    f"{where}: {command.strip()!r} does not parse: {stderr.getvalue().strip()}"
                ) from None


def _registry_state():
    """The current project's registry as it stands (what a page registers is taken back)."""
    from weanj import _registry

    table = _registry._table()
    saved = {
        name: copy.copy(getattr(table, name))
        for name in ("examples", "at_kinks", "strategies", "variant_module")
    }
    saved["variants"] = {k: dict(v) for k, v in table.variants.items()}
    return table, saved


def _restore_registry(state) -> None:
    table, saved = state
    for name, value in saved.items():
        found = getattr(table, name)
        found.clear()
        found.update(value)


_SESSION: dict[str, Path] = {}


def _session_cache() -> Path:
    """One compilation cache for the whole run (`$WEANJ_COMPILATION_CACHE`), outside the
    pages' projects: JAX's persistent cache is turned on once per process, by the first
    page that compiles through weanj (`weanj.check()` does), and must outlive that page's
    temporary project, which its teardown removes."""
    if "cache" not in _SESSION:
        folder = Path(tempfile.mkdtemp(prefix="weanj-docs-cache-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _SESSION["cache"] = folder
    return _SESSION["cache"]


def setup(namespace: dict) -> None:
    """A temporary project for one page (as the tests' `project` fixture makes one)."""
    os.environ.setdefault("WEANJ_COMPILATION_CACHE", str(_session_cache()))
    root = Path(tempfile.mkdtemp(prefix="weanj-docs-"))
    shutil.copytree(REPO / "shared_inputs", root / "shared_inputs")
    for recorded in (REPO / "results").glob("*/recorded"):
        shutil.copytree(recorded, root / recorded.relative_to(REPO))
    saved = {"root": root, "cwd": os.getcwd(), "env": os.environ.get("WEANJ_ROOT")}
    saved["x64"] = _x64()
    os.environ["WEANJ_ROOT"] = str(root)
    os.chdir(root)
    import weanj

    # The built-in examples, loaded before the snapshot: their modules stay imported
    # (Python imports a module once), so their registrations must stay too.
    weanj.example_names()
    namespace["_docs"] = saved | {"registry": _registry_state()}


def _x64() -> bool | None:
    """JAX's `jax_enable_x64` where JAX is imported (a page may set it, as the seed
    notebook does; the next page gets the setting back)."""
    import sys

    jax = sys.modules.get("jax")
    return None if jax is None else bool(jax.config.jax_enable_x64)


def teardown(namespace: dict) -> None:
    saved = namespace["_docs"]
    if saved["x64"] is not None or _x64() is not None:
        import jax

        jax.config.update("jax_enable_x64", bool(saved["x64"]))
    os.chdir(saved["cwd"])
    if saved["env"] is None:
        os.environ.pop("WEANJ_ROOT", None)
    else:
        os.environ["WEANJ_ROOT"] = saved["env"]
    _restore_registry(saved["registry"])
    shutil.rmtree(saved["root"], ignore_errors=True)


pytest_collect_file = Sybil(
    parsers=[SkipParser(), PythonCodeBlockParser(), FenceAudit()],
    path=str(REPO),
    patterns=["README.md", "docs/*.md", "docs/**/*.md"],
    excludes=["DESIGN.md"],
    setup=setup,
    teardown=teardown,
).pytest()
