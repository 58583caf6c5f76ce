"""The report as GitHub Markdown, for a CI job summary (`$GITHUB_STEP_SUMMARY`).

The verdict tables and the list of failures, nothing else (no pictures): GitHub shows at
most 1 MiB of a step's summary and the page must stay readable there, so the text is kept
under `LIMIT` characters, whatever fails (long lists are cut with a count of the rest).

Nothing read from a file or a user's code is written raw: names are code spans (so that
`a~b` is never struck through), fenced with more backticks than they hold, and every
other text has Markdown's and HTML's special characters escaped (`<img ...>` shows as
text, never as an element); table cells escape `|`.
"""

from __future__ import annotations

import re

from .._judge._checks import num
from .._model._verdicts import GRADIENT_CHECKS, Verdict
from ._cells import Cell, shown_checks
from ._lines import fault_text, region_lines, summary
from ._page_model import ExamplePage, judged_line, overall
from ._text import alone_lines, reference_lines, x64_lines

LIMIT = 60_000  # below the 65,000 characters the summary must stay under, with margin
MAX_FAILURES = 20  # listed per example; the count of the rest follows
MAX_LINE = 400


# Characters that would start markup (emphasis, links, code, HTML, strike-through, a table
# cell's end) where text is read: escaped with a backslash, which CommonMark allows before
# any ASCII punctuation.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")


def esc(text: str) -> str:
    """Text safe anywhere in the summary: one line, markup characters escaped."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def code(text: str) -> str:
    """A name as a code span: fenced by one backtick more than the longest run it holds
    (padded where it starts or ends with one), `|` escaped for the tables."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    if not text:
        return ""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def prose(text: str) -> str:
    """A message: its `quoted` parts (commands, names) as code spans, the rest escaped."""
    parts = " ".join(str(text).split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans, all escaped
        return esc(text)
    return "".join(
        code(part) if k % 2 else _SPECIAL.sub(r"\\\1", part) for k, part in enumerate(parts)
    )


def _cell(c: Cell) -> str:
    """The cell's text, and for what fails or differs the arrays or partners concerned."""
    named = c.links and c.verdict not in (str(Verdict.OK), "")
    return esc(c.text) + (f" ({', '.join(esc(t) for t, _ in c.links)})" if named else "")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


def summary_table(pages: list[ExamplePage]) -> list[str]:
    out = [
        "| example | verdict | what fails (variant · array), what differs as declared | missing |",
        "| --- | --- | --- | --- |",
    ]
    for p in pages:
        fails = "; ".join(
            f"{code(f.subject)}"
            + (f" · {code(f.array)}" if f.array else "")
            + f": {prose(_short(f.what))}"
            for f in p.failures[:5]
        )
        if len(p.failures) > 5:
            fails += f"; … and {len(p.failures) - 5} more"
        if not fails and p.error is not None:
            fails = prose(_short(f"not judged: {p.error}"))
        if not fails and p.ej is None:
            fails = prose(_short(p.state))
        if p.ej is not None and p.ej.expected:  # what differs as declared, with the reason
            declared = "; ".join(
                f"expected: {code(e.what())}: {prose(_short(e.reason))}" for e in p.ej.expected
            )
            fails = f"{fails}; {declared}" if fails else declared
        verdict = f"**{p.verdict}**" if p.verdict != str(Verdict.OK) else p.verdict
        missing = "; ".join(prose(_short(m)) for m in p.missing) or "—"
        out.append(f"| {code(p.name)} | {verdict} | {fails or '—'} | {missing} |")
    return out


def variant_table(p: ExamplePage) -> list[str]:
    kinds = shown_checks(p.ej) if p.ej is not None else GRADIENT_CHECKS
    out = [
        "| variant | family | verdict | loss | "
        + "".join(f"{k.column} | " for k in kinds)
        + "float32 | same-family pairs | time |",
        "| --- | --- | --- | ---: | " + "--- | " * len(kinds) + "--- | --- | ---: |",
    ]
    for r in p.rows:
        loss = num(r.loss, 15) if r.loss is not None else "—"
        time_s = f"{r.seconds:.1f} s" if r.seconds is not None else "—"
        verdict = f"**{esc(r.verdict)}**" if _failing(r.verdict) else esc(r.verdict)
        out.append(
            f"| {code(r.variant)} | {esc(r.family)} | {verdict} | {loss} | "
            + "".join(f"{_cell(r.checks.get(k, Cell()))} | " for k in kinds)
            + f"{_cell(r.float32)} | {_cell(r.pairs)} | {time_s} |"
        )
    return out


def _failing(verdict: str) -> bool:
    try:
        return Verdict.parse(verdict).failing
    except ValueError:
        return False


def failure_lines(p: ExamplePage) -> list[str]:
    """The failing judgements, each with its summary and regions (what pytest says), and
    each variant at fault in the last check once, with its line and command."""
    lines = []
    if p.error is not None:
        return [f"- not judged: {prose(_short(p.error))}"]
    if p.ej is None:
        return []
    faults = p.ej.faults
    at_fault = {id(f) for f in faults.values()}
    failing = [j for j in p.ej.judgements if j.failed and id(j) not in at_fault]
    for j in failing[:MAX_FAILURES]:
        lines.append(f"- {code(j.case)}: {esc(_short(summary(j).split(': ', 1)[-1]))}")
        if j.comparison is not None and j.comparison.differing:
            lines.extend(
                f"  - {esc(_short(x.strip()))}" for x in region_lines(j.comparison, "")[:3]
            )
    for label, f in faults.items():
        base, _, dtype = label.partition("@")
        if dtype and base in faults and faults[base].verdict == f.verdict:
            continue  # one line per variant: its float64 line says it
        lines.append(f"- {code(label)}: {esc(f.verdict)}: {prose(_short(fault_text(f)))}")
    rest = len(failing) - MAX_FAILURES
    if rest > 0:
        lines.append(
            f"- … and {rest} more failing case(s): see `weanj report` (HTML) "
            f"or `weanj diff {p.name}`"
        )
    return lines


def _not_compared(p: ExamplePage) -> list[str]:
    if not p.not_compared:
        return []
    cases = len({case for v in p.not_compared.values() for case in v})
    labels = ", ".join(code(v) for v in dict.fromkeys(x.split("@")[0] for x in p.not_compared))
    return [f"- not compared: {cases} case(s) with {labels} (at fault: see their rows)"]


def example_block(p: ExamplePage) -> list[str]:
    title = f": {p.example.title}" if p.example.title else ""
    out = ["", f"## {code(p.name)}{esc(title)} — {p.verdict}", ""]
    if p.ej is None:
        return out + [prose(_short(p.state))]
    if p.error is not None:
        return out + [f"not judged: {prose(_short(p.error))}"]
    out.append(f"{esc(p.ej.inputs.describe())}; {prose(_short(judged_line(p)))}")
    out.append("")
    out.extend(variant_table(p))
    notes = _not_compared(p)
    said = x64_lines(p.ej) + reference_lines(p.ej) + alone_lines(p.ej)
    notes += [f"- {esc(line.strip())}" for line in said]
    notes += [
        f"- unavailable {', '.join(code(x) for x in labels)}: {prose(_short(why))}"
        for why, labels in p.unavailable.items()
    ]
    notes += [
        f"- skipped {', '.join(code(x) for x in labels)}: {prose(_short(why))}"
        for why, labels in p.skipped.items()
    ]
    if notes:
        out += ["", *notes]
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
        f"_rendered by weanj {env.get('weanj')} from the judgement of `weanj check` (judged "
        f"{env.get('date')}) and the benchmark files; nothing was run here._",
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
