"""MkDocs hook: the parts of the site that are generated from weanj itself, so they cannot
drift from the code.

- `<!-- weanj:check-options -->` (docs/reference/options.md) becomes the table of a
  check's options, from their one declaration (`weanj._check_options.CheckOptions`).
- `<!-- weanj:cli -->` (docs/cli.md) becomes the `--help` of `weanj` and of every
  subcommand, from `weanj._cli._parser.build_parser()`: the parser the command runs.
- `<!-- weanj:docstring MODULE -->` (the gallery pages) becomes the module's docstring
  (an example module's docstring is its mathematics and its hazards), as Markdown.
- `<!-- weanj:variants EXAMPLE -->` (the gallery pages) becomes the table of the example's
  registered variants (name, family, backend, dtypes, description), and
  `<!-- weanj:examples -->` the table of the built-in examples and their families, both
  read from the registry of weanj's own project, whatever is installed here.

The tutorial notebook runs in the kernel `weanj-docs`, which `on_config` declares for the
Python that runs MkDocs (a kernel spec on `$JUPYTER_PATH`, which Jupyter searches first):
so the notebook sees the weanj being documented, whatever other `python3` kernels the
machine has.

And docs/api.md must document every public name of `weanj` (`::: weanj.NAME`), and
nothing else: a name added to `weanj/__init__.py` without a place on that page, or one
removed from it but still on the page, stops the build.

A marker that names nothing (an unknown example, a subcommand the parser lost) stops the
build: `mkdocs build --strict` is the check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI_MARKER = "<!-- weanj:cli -->"
EXAMPLES_MARKER = "<!-- weanj:examples -->"
OPTIONS_MARKER = "<!-- weanj:check-options -->"
DOCSTRING_MARKER = re.compile(r"<!-- weanj:docstring (?P<module>[\w.]+) -->")
VARIANTS_MARKER = re.compile(r"<!-- weanj:variants (?P<example>[\w.-]+) -->")


KERNEL = "weanj-docs"
_kernels: list[str] = []


def on_config(config):
    if _kernels:  # `mkdocs serve` rebuilds: declared once
        return config
    folder = tempfile.mkdtemp(prefix="weanj-docs-kernel-")
    spec = Path(folder) / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "weanj docs", "language": "python"})
    )
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (folder, os.environ.get("JUPYTER_PATH")) if p
    )
    _kernels.append(folder)
    return config


def on_shutdown():
    for folder in _kernels:
        shutil.rmtree(folder, ignore_errors=True)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise RuntimeError("weanj's parser has no subcommands")


def _help(parser: argparse.ArgumentParser) -> str:
    # argparse wraps to $COLUMNS (and colours on some Pythons): fix both, so the page is
    # the same wherever it is built.
    os.environ["NO_COLOR"] = "1"
    return parser.format_help().rstrip()


def cli_reference() -> str:
    """The command line reference: the top-level help, then one section per subcommand in
    the parser's order."""
    from weanj._cli._parser import build_parser

    parser = build_parser()
    parts = [
        "## `weanj`",
        "",
        "```text",
        _help(parser),
        "```",
    ]
    for name, sub in _subparsers(parser).items():
        parts += ["", f"## `weanj {name}`", "", "```text", _help(sub), "```"]
    return "\n".join(parts)


def _weanj_project():
    """weanj's registry loaded from this checkout's own `[tool.weanj]` (the built-in
    examples), whatever `$WEANJ_ROOT` or the current folder say."""
    saved = os.environ.get("WEANJ_ROOT")
    os.environ["WEANJ_ROOT"] = str(REPO)
    try:
        import weanj

        weanj.example_names()  # loads the registry now, from this root
        return weanj
    finally:
        if saved is None:
            os.environ.pop("WEANJ_ROOT", None)
        else:
            os.environ["WEANJ_ROOT"] = saved


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*").replace("\n", " ")


def variants_table(example: str) -> str:
    weanj = _weanj_project()
    from weanj._registry import registered_variant

    if example not in weanj.example_names():
        raise ValueError(f"<!-- weanj:variants {example} -->: no such built-in example")
    rows = [
        "| variant | family | backend | dtypes | what it is |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in weanj.variants(example, available_only=False):
        v = registered_variant(example, name)
        rows.append(
            f"| `{name}` | {v.family} | {v.backend} | {', '.join(v.dtypes)} "
            f"| {_cell(v.description)} |"
        )
    return "\n".join(rows)


def _list_blocks(text: str, *, docstring: bool = False) -> str:
    """What belongs to a `- ` item is indented by two spaces in weanj's docstrings and
    pages (as on GitHub); Python-Markdown wants four for a table, a code block or a second
    paragraph to stay inside the item, and a blank line before an item that follows one of
    several paragraphs. In a docstring, a wrapped line that starts with an issue number
    (`#56371`) is text, not a heading. Fenced blocks outside items are left alone."""
    out, in_item, fence = [], False, None
    for line in text.splitlines():
        stripped = line.lstrip()
        if fence is not None and not in_item:
            if stripped.startswith(fence):
                fence = None
            out.append(line)
            continue
        if not in_item and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            out.append(line)
            continue
        if docstring:
            line = re.sub(r"^(\s*)#(?=\w)", r"\1\\#", line)
        if line.startswith("- "):
            if in_item and out and out[-1].strip():
                out.append("")  # an item after a multi-paragraph item: its own block
            in_item = True
        elif in_item and line.startswith("  "):
            line = "  " + line
        elif line.strip():
            in_item = False
        out.append(line)
    return "\n".join(out)


def module_docstring(module: str) -> str:
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ValueError(f"<!-- weanj:docstring {module} -->: no such module")
    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text()))
    if not doc:
        raise ValueError(f"<!-- weanj:docstring {module} -->: the module has no docstring")
    return _list_blocks(doc, docstring=True)


def examples_table() -> str:
    weanj = _weanj_project()
    rows = ["| example | what it is | family | variants |", "| --- | --- | --- | --- |"]
    for name in weanj.example_names():
        title = _cell(weanj.example(name).title)
        for family, members in weanj.families(name).items():
            variants = ", ".join(f"`{v}`" for v in members)
            rows.append(f"| `{name}` | {title} | {family} | {variants} |")
            title = ""
    return "\n".join(rows)


def check_api_page(markdown: str) -> None:
    """Every public name of `weanj` has its `::: weanj.NAME` on the page, and every such
    line names a public name (a name removed from `weanj/__init__.py` leaves the page)."""
    import weanj

    documented = set(re.findall(r"^::: weanj\.(\w+)", markdown, re.MULTILINE))
    public = set(weanj.__all__)
    # an alias kept for old code (`DirectionalResult`) is documented by its class's entry
    shown = {id(getattr(weanj, n)) for n in documented & public}
    missing = sorted(n for n in public - documented if id(getattr(weanj, n)) not in shown)
    gone = sorted(documented - public)
    if missing:
        raise ValueError(f"docs/api.md does not document weanj.{', weanj.'.join(missing)}")
    if gone:
        raise ValueError(f"docs/api.md documents weanj.{', weanj.'.join(gone)}, no longer public")


def options_table() -> str:
    """The table of a check's options, from their one declaration (`_check_options`)."""
    from weanj._check_options import table_rows

    head = (
        "| `weanj.check(...)` | `weanj check` | `pytest --weanj` | `[tool.weanj]` | default "
        "| what it does |\n|---|---|---|---|---|---|\n"
    )

    def code(text: str) -> str:
        return text if text.startswith("—") else f"`{text}`"

    return head + "\n".join(
        f"| `{name}` | {code(flags)} | {code(pytest)} | {code(key)} | `{default}` | {help_} |"
        for name, flags, pytest, key, default, help_ in table_rows()
    )


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri == "api.md":
        check_api_page(markdown)
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    markdown = DOCSTRING_MARKER.sub(lambda m: module_docstring(m.group("module")), markdown)
    if EXAMPLES_MARKER in markdown:
        markdown = markdown.replace(EXAMPLES_MARKER, examples_table())
    if OPTIONS_MARKER in markdown:
        markdown = markdown.replace(OPTIONS_MARKER, options_table())
    markdown = VARIANTS_MARKER.sub(lambda m: variants_table(m.group("example")), markdown)
    return _list_blocks(markdown)
