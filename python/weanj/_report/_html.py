"""The report as one self-contained HTML file.

Nothing leaves the file: pictures are PNG `data:` URIs, the style sheet is inline, there
is no script, and a Content-Security-Policy (`default-src 'none'; img-src data:;
style-src 'unsafe-inline'`) tells the browser to load nothing else, so a page mailed or
attached to a pull request shows the same everywhere, offline. Every element worth a
link has an `id`: an example (`#02-gauss-seidel`), a pair or check (its pytest id,
`#02-gauss-seidel::lex::jax-lex~kernex-lex`), a variant (`#EX::variant::V`).

Order: the overall verdict, the first table (per example: its verdict and who fails, in
which array, with links), each example's table of variants; then per example the
evidence (pictures of the failing pairs, or of the most interesting agreeing pair and
of the family references; the pairs, checks and files tables); the benchmark plots;
the provenance. The evidence is `_html_evidence`'s, the benchmarks and provenance
`_html_bench`'s.
"""

from __future__ import annotations

from .._judge._checks import num
from .._model._verdicts import GRADIENT_CHECKS, Verdict
from ._cells import Cell, shown_checks
from ._html_bench import benchmarks, definition_list, provenance
from ._html_evidence import evidence, nothing_judged
from ._html_parts import CSP, STYLE, badge, cell, declared_item, e, link, table, verdict_class
from ._page_model import ExamplePage, anchor, judged_line, overall
from ._text import alone_lines, reference_lines, x64_lines

# --- the top -------------------------------------------------------------------------------


def summary_table(pages: list[ExamplePage]) -> str:
    """The first table: per example its verdict and who fails, in which array."""
    rows = []
    for p in pages:
        if p.failures:
            items = "".join(
                f"<li><code>{e(f.subject)}</code>"
                + (f" · array <code>{e(f.array)}</code>" if f.array else "")
                + f": {e(f.what)}"
                + (" → " + ", ".join(link(t, a) for t, a in f.links) if f.links else "")
                + "</li>"
                for f in p.failures
            )
            what = f'<ul class="tight">{items}</ul>'
        elif p.error is not None:
            what = f"not judged: {e(p.error)}"
        else:
            what = "every judged pair, check and file agrees" if p.judged and p.ej.ok else ""
        if p.judged and p.ej.expected:
            items = "".join(
                declared_item(
                    d, cases, " → " + ", ".join(link(j.array or j.kind, j.case) for j in cases)
                )
                for d, cases in p.ej.expected.items()
            )
            what = (what if p.failures else "") + f'<ul class="tight">{items}</ul>'
        missing = "<br>".join(e(m) for m in p.missing) or "—"
        rows.append(
            f'<tr><td>{link(p.name, p.name)}</td><td class="{verdict_class(p.verdict)}">'
            f'{e(p.verdict)}</td><td>{what}</td><td class="note">{missing}</td></tr>'
        )
    return table(
        [
            "example",
            "verdict",
            "what fails, what differs as declared (variant · array → evidence)",
            "missing",
        ],
        rows,
        "summary",
    )


def variant_table(p: ExamplePage) -> str:
    kinds = shown_checks(p.ej) if p.ej is not None else GRADIENT_CHECKS
    rows = []
    for r in p.rows:
        loss = num(r.loss, 15) if r.loss is not None else "—"
        time_s = f"{r.seconds:.1f} s" if r.seconds is not None else "—"
        # A skip reason's first clause (the whole is listed below the table, and a title)
        skipped = r.verdict == str(Verdict.SKIPPED)
        short = r.note.split(";")[0].split(" (")[0] if skipped else r.note
        note = e(short[:120] + ("…" if len(short) > 120 else ""))
        rows.append(
            f'<tr id="{e(r.anchor)}"><td><code>{e(r.variant)}</code></td><td>{e(r.family)}</td>'
            f'<td class="{verdict_class(r.verdict)}">{e(r.verdict)}</td><td class="n">{loss}</td>'
            + "".join(cell(r.checks.get(k, Cell())) for k in kinds)
            + cell(r.float32)
            + cell(r.pairs)
            + f'<td class="n">{time_s}</td><td class="note" title="{e(r.note)}">{note}</td></tr>'
        )
    head = [
        "variant",
        "family",
        "verdict",
        "loss",
        *(k.column for k in kinds),
        "float32 (max rel.)",
        "same-family pairs",
        "time (first call)",
        "note",
    ]
    return table(head, rows, "variants")


def example_top(p: ExamplePage) -> str:
    ex = p.example
    out = [
        f'<section class="example" id="{e(p.name)}">',
        f"<h3>{e(p.name)}{': ' + e(ex.title) if ex.title else ''} — {badge(p.verdict)}</h3>",
    ]
    nothing = nothing_judged(p, verdict_class(p.verdict), "fail")
    if nothing:
        return "".join(out) + nothing
    out.append(
        f'<p class="note">{e(p.ej.inputs.describe())}; dtypes judged: '
        f"{e(', '.join(sorted({g.dtype for g in p.ej.subjects.values()})) or 'none')}; "
        f"{e(judged_line(p))}. Evidence: {link('pairs and pictures', anchor(p.name, 'pairs'))}, "
        f"{link('benchmarks', anchor(p.name, 'bench'))}, "
        f"{link('provenance', anchor(p.name, 'provenance'))}.</p>"
    )
    out.append(variant_table(p))
    # the x64 configuration each run computed in (DESIGN §2.2); a family judged against
    # another member than its designated reference (DESIGN §5); one compared with nothing
    x64 = [line.strip() for line in x64_lines(p.ej) + reference_lines(p.ej) + alone_lines(p.ej)]
    if x64:
        out.append(f'<p class="note">{"<br>".join(e(line) for line in x64)}</p>')
    if p.not_compared:
        cases = len({case for v in p.not_compared.values() for case in v})
        labels = ", ".join(dict.fromkeys(x.split("@")[0] for x in p.not_compared))
        out.append(
            f'<p class="note">Not compared: {cases} case(s) with {e(labels)} (at fault in the '
            "last check: see their rows).</p>"
        )
    for title, listed in (("Unavailable here", p.unavailable), ("Skipped", p.skipped)):
        if listed:
            items = "".join(
                f"<li>{e(', '.join(labels))}: {e(why)}</li>" for why, labels in listed.items()
            )
            out.append(f'<p>{title}, and why:</p><ul class="tight note">{items}</ul>')
    out.append("</section>")
    return "".join(out)


def render(pages: list[ExamplePage], env: dict[str, str]) -> str:
    try:
        import matplotlib  # noqa: F401

        have_matplotlib = True
    except ImportError:
        have_matplotlib = False
    verdict, sentence = overall(pages)
    nav = "".join(f'<a href="#{e(p.name)}">{e(p.name)}</a>' for p in pages)
    body = [
        "<header><h1>weanj report</h1>",
        f'<p id="overall" class="overall {verdict_class(verdict)}">overall: {e(verdict)}</p>',
        f"<p>{e(sentence)}. Rendered from the judgement of <code>weanj check</code> (judged "
        f"{e(env.get('date'))}) and the benchmark files; nothing was run here.</p>",
        f"<nav>{nav}</nav></header>",
        '<h2 id="verdicts">Verdicts</h2>',
        summary_table(pages),
        *(example_top(p) for p in pages),
        '<h2 id="evidence">Pairs and pictures</h2>',
        *(evidence(p, have_matplotlib) for p in pages),
        '<h2 id="benchmarks">Benchmarks</h2>',
        *(benchmarks(p, have_matplotlib) for p in pages),
        '<h2 id="provenance">Provenance</h2>',
        *(provenance(p) for p in pages),
        "<h3>this page</h3>" + definition_list(env),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>weanj report: {e(verdict)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
