"""`weanj report [EXAMPLE...] [--out FILE] [--format html|md]` and `weanj.report()`: one
page of every verdict and benchmark, written from what is stored (it runs nothing).

Per example: the store judged by the one judge (what `weanj diff` says), the gradient
checks and faults of the last `weanj check` (`results/<example>/check.json`, shown while
their inputs are the current ones), and the benchmark records. `--out` never replaces
weanj's own data (the shared inputs, the store, recorded references, cases, check files)
nor anything that is not a regular file; `--out -` writes to standard output.
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
from .._io._atomic import atomic_path
from .._io._bench import load_results
from .._pipeline._cases import judge_plan, not_judged, read_plan
from .._pipeline._session import Session
from .._places import Places, places
from .._registry import catalogs
from .._report._page import gather
from .._report._page_model import ExamplePage, overall
from .._report._verdicts_file import read_check_verdicts

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
    from .._io._safeh5 import read_bytes

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


def pages_of(examples: Sequence[str] | str | None) -> list[ExamplePage]:
    """Everything the page says, per example."""
    here = places()
    out = []
    with Session() as session:
        for cat in catalogs(examples):
            try:
                ej = judge_plan(read_plan(cat, here, live=False, checks=False), session)
            except WeanjError as e:
                ej = not_judged(cat, e)
            key = ej.inputs.key("float64") if ej.inputs is not None else None
            check = read_check_verdicts(cat.name, key, here)
            out.append(gather(cat, ej, check, _bench(cat, here)))
    return out


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
) -> Report:
    """Write the report (module docstring). **Returns** a `Report`: the path, the format and
    the page's overall verdict (the report itself exits 0 whatever its verdicts: `weanj
    check` is the command whose exit status judges)."""
    fmt = format
    if fmt is None:
        fmt = "md" if out is not None and str(out).lower().endswith(".md") else "html"
    if fmt not in FORMATS:
        raise InputError(f"--format must be html or md, not {fmt!r}")
    here = places()
    path, target = (None, None) if out == "-" else output_path(out, fmt, here)
    pages = pages_of(examples)
    if fmt == "html":
        from .._report._html import render
    else:
        from .._report._md import render
    text = render(pages, page_environment())
    verdict, sentence = overall(pages)
    if path is None:
        sys.stdout.write(text)
        return Report(None, fmt, verdict, sentence, pages, text)
    try:
        with atomic_path(target) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputFileError(f"cannot write {path} ({e.strerror or e})") from None
    return Report(path, fmt, verdict, sentence, pages)
