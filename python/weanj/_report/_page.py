"""`weanj report`: one page of every verdict and benchmark, written from what is stored.

It runs nothing. Per example it reads the store through the judge (`_check.diff_store`:
pairs, float32 pairs, files), the gradient checks the last `weanj check` left
(`_verdicts_file`, shown while their inputs key is the current one) and the benchmark
records (`_bench_plots.load_results`); what is missing is said, with the command that
computes it. This module gathers those into `ExamplePage`s, one per example; `_html`
and `_md` only render them.

Which variant is wrong: in a family, a pair that fails names two variants. The one that
fails against most of its family (or fails its own gradient check) is the *suspect*, and
the page's first table names it with the array and links to the pair's section.
"""

from __future__ import annotations

import datetime as _dt
import sys
from pathlib import Path

from .._errors import InputError, InputFileError, WeanjError
from .._judge._verdict import SEVERITY, ExampleJudgement, Judgement, Verdict, is_failing
from ._page_model import (
    Cell,
    ExamplePage,
    Failure,
    VariantRow,
    anchor,
    overall,
    same_family_pairs,
    suspects,
    variant_anchor,
)
from ._text import num
from ._verdicts_file import read_check_verdicts

__all__ = ["Cell", "ExamplePage", "Failure", "VariantRow", "anchor", "command", "gather"]

# At most this many pair pictures per example (failing pairs beyond it are in the table).
MAX_PICTURES = 12


# --- gathering ---------------------------------------------------------------------------


def gather(example_name: str) -> ExamplePage:
    """Everything the page says about one example."""
    from .._check import diff_store
    from .._registry import example

    ex = example(example_name)
    try:
        ej = diff_store(ex.name)
    except WeanjError as e:
        page = ExamplePage(ex, None, read_check_verdicts(ex.name, None), error=str(e))
        page.failures.append(Failure(ex.name, None, f"not judged: {e}", []))
        _bench(page)
        return page
    key = ej.inputs.key("float64") if ej.inputs is not None else None
    page = ExamplePage(ex, ej, read_check_verdicts(ex.name, key))
    if page.check.state != "current":
        page.missing.append(page.check.note)
    page.suspects = set(suspects([j for j in ej.of_kind("pair") if j.failed]))
    _rows(page)
    _failures(page)
    page.pictures, page.left_out_pictures = _pictures(ej)
    _bench(page)
    return page


def _check_gradients(page: ExamplePage) -> dict[str, dict]:
    if not page.check.current:
        return {}
    return {g["label"]: g for g in page.check.data.get("gradients", [])}


def _rows(page: ExamplePage) -> None:
    from .._registry import families, unavailable_variants

    ej, ex = page.ej, page.example
    checked = _check_gradients(page)
    check_skips = page.check.data.get("skipped_subjects", {}) if page.check.current else {}
    errors = page.check.data.get("errors", {}) if page.check.current else {}
    unavailable = unavailable_variants(ex.name)
    stale = {
        j.subjects[0]: j.reason
        for j in ej.of_kind("file")
        if j.verdict == Verdict.STALE and j.subjects
    }
    for family, members in families(ex).items():
        for name in members:
            row = VariantRow(name, family, variant_anchor(ex.name, name), "ok")
            g = ej.subjects.get(name)
            row.loss = g.loss if g is not None else (checked.get(name) or {}).get("loss")
            row.seconds = (checked.get(name) or {}).get("seconds")
            row.taylor = _check_cell(page, name, "taylor")
            row.jvp = _check_cell(page, name, "jvp")
            row.float32 = _float32_cell(page, name, check_skips)
            row.pairs = _pairs_cell(page, name)
            why = check_skips.get(name) or unavailable.get(name)
            if name in errors:
                row.verdict, row.note = "FAIL", errors[name]
            elif g is None and why:
                row.verdict, row.note = "skipped", why
                page.skipped.setdefault(why, []).append(name)
            elif g is None and name in stale:
                row.verdict, row.note = "stale", stale[name]
            elif g is None:
                row.verdict = "missing"
                row.note = f"no gradient file: run `weanj check {ex.name}`"
            cells = (row.taylor, row.jvp, row.float32, row.pairs)
            if any(is_failing(c.verdict) for c in cells):
                row.verdict = "FAIL"
            page.rows.append(row)
    for reason, labels in _check_skips(page).items():
        page.skipped.setdefault(reason, []).extend(labels)
    if any(r.verdict == "missing" for r in page.rows):
        page.missing.append(
            f"gradient files of {', '.join(r.variant for r in page.rows if r.verdict == 'missing')}"
            ": "
            f"run `weanj check {ex.name}`"
        )


def _check_skips(page: ExamplePage) -> dict[str, list[str]]:
    """Skipped checks of variants that did run (a jvp no family member can push forward;
    float32 not supported), one entry per reason."""
    out: dict[str, list[str]] = {}
    ran = {r.variant for r in page.rows if r.verdict != "skipped"}
    for j in page.check.data.get("skipped", []) if page.check.current else []:
        labels = [s for s in j.get("subjects", []) if s.split("@")[0] in ran]
        if labels and j["kind"] == "jvp":
            out.setdefault(j["reason"], []).append(f"{labels[0]} (jvp)")
    return out


def _worst(verdicts: list[str]) -> str:
    for v in SEVERITY:
        if v in verdicts:
            return v
    return verdicts[0] if verdicts else ""


def _check_cell(page: ExamplePage, name: str, kind: str) -> Cell:
    if not page.check.current:
        stale = page.check.state == "stale"
        return Cell("stale" if stale else "—", "stale" if stale else "", [], page.check.note)
    mine = [j for j in page.checks if j["kind"] == kind and j["subjects"] == [name]]
    if not mine:
        return Cell("—", "", [], f"no {kind} check recorded for {name}")
    verdict = _worst([j["verdict"] for j in mine])
    if verdict == "skipped":
        return Cell("skipped", "skipped", [], next(j["reason"] for j in mine if j["reason"]))
    if kind == "taylor":
        rates = [
            r
            for j in mine
            for d in (j.get("taylor") or {}).get("directions", [])
            for r in d["rates"][-3:]
        ]
        shown = f"{min(rates):.2f}" if rates else "lin."
    else:
        errors = [j["jvp"]["error"] for j in mine if j.get("jvp") and j["jvp"]["error"] is not None]
        shown = num(max(errors), 0) if errors else ""
    links = [(j["array"] or kind, j["case"]) for j in mine if j["verdict"] == verdict]
    return Cell(f"{verdict} {shown}".strip(), verdict, links, "\n".join(j["summary"] for j in mine))


def _float32_cell(page: ExamplePage, name: str, check_skips: dict[str, str]) -> Cell:
    label = f"{name}@float32"
    mine = [j for j in page.ej.of_kind("pair") if len(j.subjects) == 2 and j.subjects[1] == label]
    if not mine:
        why = check_skips.get(label)
        if why:
            return Cell("skipped", "skipped", [], why)
        return Cell("—", "", [], f"no float32 gradient of {name} in the store")
    verdict = _worst([str(j.verdict) for j in mine])
    rels = [j.comparison.max_rel for j in mine if j.comparison is not None]
    links = [(j.array, j.case) for j in mine if str(j.verdict) == verdict and j.failed]
    text = f"{verdict} {num(max(rels), 1) if rels else ''}".strip()
    return Cell(text, verdict, links, "\n".join(_summary(j) for j in mine))


def _summary(j: Judgement) -> str:
    from ._text import summary

    return summary(j)


def _pairs_cell(page: ExamplePage, name: str) -> Cell:
    mine = [j for j in same_family_pairs(page.ej) if name in j.subjects]
    if not mine:
        return Cell("—", "", [], "no other member of its family in the store")
    failing = [j for j in mine if j.failed]
    if failing:
        links = [
            (f"{next(s for s in j.subjects if s != name)} ({j.array})", j.case) for j in failing
        ]
        why = "\n".join(_summary(j) for j in failing)
        if name in page.suspects:
            verdict = _worst([str(j.verdict) for j in failing])
            return Cell(f"FAIL vs {len(failing)} of {len(mine)}", verdict, links, why)
        # It fails only against the family's suspects: the suspects are the news.
        return Cell(f"ok ×{len(mine) - len(failing)}; FAIL vs", "differs", links, why)
    kinks = [j for j in mine if j.verdict == Verdict.KINKS]
    if kinks:
        return Cell(
            f"kinks ({len(kinks)}), ok {len(mine) - len(kinks)}",
            "kinks",
            [(j.array, j.case) for j in kinks],
            "\n".join(_summary(j) for j in kinks),
        )
    return Cell(f"ok ×{len(mine)}", "ok", [], "agrees with every member of its family in the store")


def _failures(page: ExamplePage) -> None:
    ej = page.ej
    pairs = [j for j in ej.of_kind("pair") if j.failed]
    named = set()
    for label, js in suspects(pairs).items():
        by_array: dict[str | None, list[Judgement]] = {}
        for j in js:
            by_array.setdefault(j.array, []).append(j)
        for array, group in by_array.items():
            others = [next(s for s in j.subjects if s != label) for j in group]
            worst = max(group, key=lambda j: j.comparison.max_rel if j.comparison else 0)
            c = worst.comparison
            where = ""
            if c is not None and c.worst:
                where = f", max|Δ|/max|g_ref| {num(c.max_rel)} at numpy {tuple(c.worst)}"
            what = f"{group[0].verdict}: differs from {', '.join(others)}{where}"
            page.failures.append(
                Failure(
                    label, array, what, [(o, j.case) for o, j in zip(others, group, strict=True)]
                )
            )
            named.update(j.case for j in group)
    for j in pairs:
        if j.case not in named:  # a failing pair of two non-suspects
            page.failures.append(
                Failure(" vs ".join(j.subjects), j.array, str(j.verdict), [("pair", j.case)])
            )
    for j in page.checks:
        if j["failed"]:
            what = f"{j['kind']} {j['verdict']}: {j['reason']}"
            page.failures.append(
                Failure(j["subjects"][0], j["array"], what, [(j["kind"], j["case"])])
            )
    if page.check.current:
        for label, message in page.check.data.get("errors", {}).items():
            page.failures.append(
                Failure(
                    label,
                    None,
                    f"error: {message}",
                    [("variant", variant_anchor(page.name, label.split("@")[0]))],
                )
            )
    for j in ej.of_kind("file"):
        if j.failed:
            label = j.case.split("::file::", 1)[1]
            page.failures.append(
                Failure(f"file {label}", None, f"{j.verdict}: {j.reason}", [("file", j.case)])
            )


def _pictures(ej: ExampleJudgement) -> tuple[list[Judgement], int]:
    """The pairs drawn: failing and kink pairs (float64 ones first, then worst first); when
    none, the agreeing same-family pair of the largest error and every pair of family
    references (`info`)."""
    pairs = [j for j in ej.of_kind("pair") if j.comparison is not None]
    notable = [j for j in pairs if j.failed or j.verdict == Verdict.KINKS]
    if notable:
        notable.sort(
            key=lambda j: (j.subjects[1].endswith("@float32"), -(j.comparison.max_rel or 0))
        )
        return notable[:MAX_PICTURES], max(0, len(notable) - MAX_PICTURES)
    chosen = []
    agreeing = [j for j in same_family_pairs(ej) if j.comparison.max_abs > 0]
    if agreeing:
        chosen.append(max(agreeing, key=lambda j: j.comparison.max_rel))
    chosen += [j for j in pairs if j.verdict == Verdict.INFO]
    return chosen[:MAX_PICTURES], max(0, len(chosen) - MAX_PICTURES)


def _bench(page: ExamplePage) -> None:
    import json

    from .._io._safeh5 import read_bytes
    from .._project import results_dir
    from .._timing import MAX_RESULTS_BYTES
    from ._bench_plots import load_results

    if not any((results_dir(page.name) / "bench").glob("*.json")):
        page.missing.append(f"no benchmark results: run `weanj bench {page.name}`")
        return
    try:
        page.bench = load_results(page.name)
    except InputFileError as e:
        page.missing.append(f"benchmark results unusable: {e}")
        return
    for path in sorted((results_dir(page.name) / "bench").glob("*.json")):
        try:  # a regular file of bounded size and nesting (load_results skipped the others)
            env = json.loads(read_bytes(path, "benchmark file", limit=MAX_RESULTS_BYTES))
            env = env.get("environment")
        except (OSError, ValueError, AttributeError, RecursionError):
            env = None
        if isinstance(env, dict):
            page.bench_environments[path.name] = env


# --- the command ----------------------------------------------------------------------------


def report_environment() -> dict[str, str]:
    """Where and when the page was written (no JAX: the report runs nothing)."""
    import importlib.metadata
    import platform

    try:
        version = importlib.metadata.version("weanj")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "weanj": version,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def command(examples: list[str] | None, out: str | None, fmt: str | None) -> int:
    """`weanj report [EXAMPLE...] [--out FILE] [--format html|md]`; `--out -` writes to
    standard output. Returns 0 once the page is written, whatever its verdicts (`weanj
    check` is the command whose exit status judges)."""
    from .._io._atomic import atomic_path
    from .._project import project_root
    from .._registry import example, example_names

    names = [example(n).name for n in examples] if examples else example_names()
    if fmt is None:
        fmt = "md" if out is not None and out.lower().endswith(".md") else "html"
    if fmt not in ("html", "md"):
        raise InputError(f"--format must be html or md, not {fmt!r}")
    pages = [gather(name) for name in names]
    if fmt == "html":
        from ._html import render
    else:
        from ._md import render
    text = render(pages, report_environment())
    if out == "-":
        sys.stdout.write(text)
        return 0
    path = Path(out) if out is not None else project_root() / "results" / f"report.{fmt}"
    if path.is_dir():
        raise InputError(
            f"--out {path} is a folder; give a file name, e.g. {path / ('report.' + fmt)}"
        )
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputFileError(f"cannot write {path} ({e.strerror or e})") from None
    verdict, sentence = overall(pages)
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1024:.0f} KiB): {verdict} — {sentence}")
    return 0
