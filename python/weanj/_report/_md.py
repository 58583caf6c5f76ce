"""The report as GitHub Markdown, for a CI job summary (`$GITHUB_STEP_SUMMARY`).

The verdict tables and the list of failures, nothing else (no pictures): GitHub shows at
most 1 MiB of a step's summary and the page must stay readable there, so the text is kept
under `LIMIT` characters, whatever fails (long lists are cut with a count of the rest).
Table cells escape `|`; names are code spans, so that `a~b` is never struck through.
"""

from __future__ import annotations

from ._page_model import Cell, ExamplePage, overall
from ._text import num, region_lines, summary

LIMIT = 60_000  # below the 65,000 characters the summary must stay under, with margin
MAX_FAILURES = 20  # listed per example; the count of the rest follows
MAX_LINE = 400


def esc(text: str) -> str:
    """Text safe in a table cell: `|` escaped, no line breaks."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: str) -> str:
    return f"`{esc(text)}`" if text else ""


def _cell(c: Cell) -> str:
    """The cell's text, and for what fails or differs the arrays or partners concerned."""
    named = c.links and c.verdict not in ("ok", "")
    return esc(c.text) + (f" ({', '.join(esc(t) for t, _ in c.links)})" if named else "")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


def summary_table(pages: list[ExamplePage]) -> list[str]:
    out = [
        "| example | verdict | what fails (variant · array) | missing |",
        "| --- | --- | --- | --- |",
    ]
    for p in pages:
        fails = "; ".join(
            f"{code(f.subject)}"
            + (f" · {code(f.array)}" if f.array else "")
            + f": {esc(_short(f.what))}"
            for f in p.failures[:5]
        )
        if len(p.failures) > 5:
            fails += f"; … and {len(p.failures) - 5} more"
        verdict = f"**{p.verdict}**" if p.verdict != "ok" else "ok"
        missing = esc("; ".join(_short(m) for m in p.missing)) or "—"
        out.append(f"| {code(p.name)} | {verdict} | {fails or '—'} | {missing} |")
    return out


def variant_table(p: ExamplePage) -> list[str]:
    out = [
        "| variant | family | verdict | loss | Taylor (min rate) | jvp | float32 "
        "| same-family pairs | time |",
        "| --- | --- | --- | ---: | --- | --- | --- | --- | ---: |",
    ]
    for r in p.rows:
        loss = num(r.loss, 15) if r.loss is not None else "—"
        time_s = f"{r.seconds:.1f} s" if r.seconds is not None else "—"
        verdict = f"**{r.verdict}**" if r.verdict == "FAIL" else r.verdict
        out.append(
            f"| {code(r.variant)} | {esc(r.family)} | {verdict} | {loss} | {_cell(r.taylor)} | "
            f"{_cell(r.jvp)} | {_cell(r.float32)} | {_cell(r.pairs)} | {time_s} |"
        )
    return out


def failure_lines(p: ExamplePage) -> list[str]:
    """The failing judgements, each with its summary and regions (what pytest says)."""
    lines = []
    if p.error is not None:
        return [f"- not judged: {_short(p.error)}"]
    failing = [j for j in p.ej.judgements if j.failed]
    for j in failing[:MAX_FAILURES]:
        lines.append(f"- {code(j.case)}: {_short(summary(j).split(': ', 1)[-1])}")
        if j.comparison is not None and j.comparison.differing:
            lines.extend(f"  - {_short(x.strip())}" for x in region_lines(j.comparison, "")[:3])
    checks = [j for j in p.checks if j["failed"]]
    for j in checks[: max(0, MAX_FAILURES - len(failing))]:
        lines.append(f"- {code(j['case'])}: {_short(j['summary'].split(': ', 1)[-1])}")
    errors = p.check.data.get("errors", {}) if p.check.current else {}
    for label, message in errors.items():
        lines.append(f"- {code(label)}: error: {_short(message)}")
    rest = len(failing) + len(checks) - MAX_FAILURES
    if rest > 0:
        lines.append(
            f"- … and {rest} more failing case(s): see `weanj report` (HTML) "
            f"or `weanj diff {p.name}`"
        )
    return lines


def example_block(p: ExamplePage) -> list[str]:
    title = f": {p.example.title}" if p.example.title else ""
    out = ["", f"## {code(p.name)}{esc(title)} — {p.verdict}", ""]
    if p.error is not None:
        return out + [f"not judged: {_short(p.error)}"]
    out.append(f"{p.ej.inputs.describe()}; {_short(p.check.note)}")
    out.append("")
    out.extend(variant_table(p))
    if p.skipped:
        out.append("")
        out.extend(
            f"- skipped {', '.join(code(x) for x in labels)}: {_short(why)}"
            for why, labels in p.skipped.items()
        )
    failures = failure_lines(p)
    if failures:
        out += ["", "### failures", "", *failures]
    return out


def render(pages: list[ExamplePage], env: dict[str, str]) -> str:
    verdict, sentence = overall(pages)
    head = [f"# weanj report: {verdict}", "", f"**overall: {verdict}** — {esc(sentence)}", ""]
    head += summary_table(pages)
    if len("\n".join(head)) > LIMIT // 2:  # hundreds of examples: their rows, cut
        rows, head = head[6:], head[:6]
        while rows and len("\n".join(head + rows[:1])) < LIMIT // 2:
            head.append(rows.pop(0))
        head += ["", f"_… and {len(rows)} more example(s): see the HTML report (`weanj report`)._"]
    blocks = [example_block(p) for p in pages]
    foot = [
        "",
        f"_written {env.get('date')} by weanj {env.get('weanj')} from the store, the recorded "
        "references, the last `weanj check` and the benchmark files; nothing was run._",
        "",
    ]
    text = "\n".join(head + [line for b in blocks for line in b] + foot)
    if len(text) <= LIMIT:
        return text
    # Too long (very many variants or failures): the tables first, then as many example
    # blocks as fit, and a line saying what was cut.
    kept, size = list(head), len("\n".join(head))
    for p, block in zip(pages, blocks, strict=True):
        chunk = "\n".join(block)
        if size + len(chunk) + 200 > LIMIT:
            kept += [
                "",
                f"_… cut here to stay under {LIMIT} characters: the examples from "
                f"{code(p.name)} on are in the HTML report (`weanj report`)._",
            ]
            break
        kept += block
        size += len(chunk) + 1
    return "\n".join(kept + foot)
