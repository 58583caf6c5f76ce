"""`weanj report [EXAMPLE...] [--out FILE] [--format html|md]` and `weanj.report()`: one
page of every verdict and benchmark, rendered from the judgement (it runs and judges
nothing).

Per example: the judgement of the last `weanj check`, read back from
`results/<example>/check.json` while its inputs are the current ones (the same
`ExampleJudgement` check returned), or, with `judgement=` (`weanj.report(judgement=
weanj.check())`), that live judgement itself: the two pages are the same bytes. An
example without a current check file is one line, `not checked: run `weanj check EX``
(or why its file is stale or unreadable), never a verdict. Then the benchmark records.
`--out` never replaces weanj's own data (the shared inputs, the store, recorded
references, cases, check files) nor anything that is not a regular file, nor a file weanj
did not write unless `--force` (`force=True`; never a `.py` module); `--out -` writes to
standard output.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._environment import page_environment
from .._errors import InputError, InputFileError, WeanjError
from .._io._atomic import atomic_path, not_written
from .._io._bench import load_results
from .._io._inputs import check_fresh, read_inputs
from .._judge._judgement import Judgement
from .._judge._verdict import ExampleJudgement
from .._places import Places, places
from .._registry import catalogs
from .._report._page import gather
from .._report._page_model import ExamplePage, overall
from .._report._verdicts_file import MISSING, read_check

FORMATS = ("html", "md")


@dataclass
class Report:
    """The page written: where, in which format, its overall verdict and sentence."""

    path: Path | None
    format: str
    verdict: str
    sentence: str
    pages: list[ExamplePage]
    text: str = ""


def _bench(cat, here: Places):
    folder = here.bench(cat.name)
    if not any(folder.glob("*.json")) if folder.is_dir() else True:
        return None, [f"no benchmark results: run `weanj bench {cat.name}`"], {}
    try:
        records, problems = load_results(cat.example, here)
    except InputFileError as e:
        return None, [f"benchmark results unusable: {e}"], {}
    import json

    from .._io._bench import MAX_RESULTS_BYTES
    from .._io._file_bytes import read_bytes

    environments = {}
    for path in sorted(folder.glob("*.json")):
        try:  # a regular file of bounded size and nesting (load_results skipped the others)
            env = json.loads(read_bytes(path, "benchmark file", limit=MAX_RESULTS_BYTES))
            env = env.get("environment")
        except (OSError, ValueError, AttributeError, RecursionError, WeanjError):
            env = None
        if isinstance(env, dict):
            environments[path.name] = env
    return records, [f"benchmark records: {p}" for p in problems], environments


def pages_of(
    examples: Sequence[str] | str | None, judgement: Judgement | None = None
) -> list[ExamplePage]:
    """Everything the page says, per example: of `judgement` (its examples, default) or
    of each example's check file."""
    here = places()
    if judgement is not None and examples is None:
        examples = list(judgement.examples)
    out = []
    for cat in catalogs(examples):
        ej, state = _judgement_of(cat, here, judgement)
        out.append(gather(cat, ej, state, _bench(cat, here)))
    return out


def _judgement_of(cat, here: Places, judgement: Judgement | None):
    """`(the example's judgement, "")`, or `(None, the one line saying why none)`."""
    if judgement is not None:
        if cat.name in judgement.examples:
            return judgement[cat.name], ""
        return None, f"not checked: not in this judgement (run `weanj check {cat.name}`)"
    try:
        inputs = read_inputs(cat.example, here)
        check_fresh(cat.example, here, inputs)
    except WeanjError as e:  # the inputs cannot be read: the judge's "not judged"
        return ExampleJudgement(cat.example, None, error=str(e), judged_at=""), ""
    found = read_check(cat, inputs, here)
    if found.judgement is not None:
        return found.judgement, ""
    if found.state == MISSING:
        return None, f"not checked: run `weanj check {cat.name}`"
    return None, found.note


def _judged(pages: list[ExamplePage]) -> str:
    """When what the page shows was judged (the latest of its judgements): the page's
    date, the same from a live judgement and from the check files it wrote."""
    judged = [p.ej.judged_at for p in pages if p.judged]
    return max(judged, default="") or "never"


def output_path(out: str | Path | None, fmt: str, here: Places) -> tuple[Path, Path]:
    """Where the page goes: `(the path as given, the file written)`. A symbolic link is
    replaced by the page, never written through (docs/files.md, "Links"); refused in one
    line where it would replace weanj's own data or something that is not a regular file
    (a device, a folder, a pipe), the link's target included."""
    path = Path(out) if out is not None else here.report(fmt)
    if path.is_dir():
        raise InputError(
            f"--out {path} is a folder; give a file name, e.g. {path / ('report.' + fmt)}"
        )
    why = here.protected(path)
    if why is not None:
        raise InputError(f"refusing to write the report to {path}: {why}; choose another file")
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(
            f"refusing to write the report to {path}: it is not a regular file (a device, a "
            "pipe or a socket); choose a file, or --out - for standard output"
        )
    return path, path


def report(
    examples: Sequence[str] | str | None = None,
    *,
    out: str | Path | None = None,
    format: str | None = None,
    judgement: Judgement | None = None,
    force: bool = False,
) -> Report:
    """Write the report (module docstring). `judgement`: render this judgement (what
    `weanj.check()` returned; default: each example's check file). **Returns** a
    `Report`: the path, the format and the page's overall verdict (the report itself
    exits 0 whatever its verdicts: `weanj check` is the command whose exit status
    judges)."""
    from .. import _arguments as arg

    examples = arg.some(arg.names(examples, "examples", "report"), "examples", "report")
    out = arg.out_path(out, "out", "report")
    force = arg.flag(force, "force", "report")
    if judgement is not None and not isinstance(judgement, Judgement):
        raise InputError(
            f"report: judgement must be a weanj.Judgement (what weanj.check() returns), got "
            f"{type(judgement).__name__}"
        )
    fmt = format
    if fmt is None:
        fmt = "md" if out is not None and str(out).lower().endswith(".md") else "html"
    fmt = arg.one_of(fmt, FORMATS, "format", "report")
    here = places()
    path, target = (None, None) if out == "-" else output_path(out, fmt, here)
    pages = pages_of(examples, judgement)
    if fmt == "html":
        from .._report._html import render
    else:
        from .._report._md import render
    text = render(pages, {**page_environment(), "date": _judged(pages)})
    verdict, sentence = overall(pages)
    if path is None:
        sys.stdout.write(text)
        return Report(None, fmt, verdict, sentence, pages, text)
    try:
        # `--out` names the user's choice: only a page weanj wrote, or `force`; the default
        # page is weanj's own (a damaged one is kept aside)
        foreign = "refuse" if out is not None else "aside"
        with atomic_path(target, force=force, foreign=foreign) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except OSError as e:
        raise not_written("", path, e) from None
    return Report(path, fmt, verdict, sentence, pages)
