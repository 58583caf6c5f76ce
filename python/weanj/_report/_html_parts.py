"""The HTML report's building blocks: escaping, links, tables, verdict colours, and
matplotlib figures as PNG `data:` URIs (the page loads nothing from anywhere else)."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from .._model._verdicts import COLOURS, Verdict
from ._cells import Cell

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
DPI = 80

# States a page shows beside the judge's verdicts, each in a colour class of `_LOOK`: a
# member that fails only against its family's suspects; an example without a judgement to
# show, or not judged; a page with either.
_STATES = {
    "differs": "kinks",
    **dict.fromkeys(("not checked", "not judged", "incomplete", "partial"), "stale"),
}

# The look of each colour class of `Verdict` (`Verdict.colour`), written once for the report
# and the notebook (`verdict_style`).
_LOOK = {
    "fail": "background:#f9d6d5;font-weight:bold",
    "stale": "background:#fff6cc",
    "kinks": "background:#fbeec8",
    "expected": "background:#e8def8",
    "skip": "background:#eee;color:#555",
    "info": "background:#e1ecf7",
    "ok": "background:#dff3df",
}


def declared_item(declared: Any, cases: list, tail: str = "") -> str:
    """A difference declared with `weanj.Expected`, as a list item: its verdict's badge,
    what it declares, where it shows, its reason, then `tail` (the report's links)."""
    where = "; ".join(dict.fromkeys(j.declared for j in cases if j.declared))
    shown = f" · <code>{e(where)}</code>" if where else ""
    return (
        f"<li>{badge(str(cases[0].verdict))} <code>{e(declared.what())}</code>{shown}: "
        f"{e(declared.reason)}{tail}</li>"
    )


def verdict_style(scope: str = "") -> str:
    """The CSS rules of the verdicts' colours, derived from `Verdict` (each of its colour
    classes, `COLOURS`), under `scope` (the notebook's fragment: `.weanj-judgement `)."""
    return "".join(f"{scope}.{colour}{{{_LOOK[colour]}}}" for colour in COLOURS)


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:84em;
padding:0 1em;color:#1b1b1b;line-height:1.4}
h1{margin-bottom:.2em}h2{border-bottom:2px solid #ccc;margin-top:2em}
h3{margin-top:1.6em}table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .5em;vertical-align:top;text-align:left}
th{background:#f2f2f2}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:.95em;white-space:nowrap}td.n{white-space:nowrap}
.overall{font-size:1.3em;padding:.4em .7em;display:inline-block}
.note{color:#555}.pic{margin:1em 0 2em}.pic img{max-width:100%;border:1px solid #ddd}
nav a{margin-right:1em}ul.tight{margin:.3em 0}section.example{margin-bottom:1em}
""" + verdict_style()


def e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def verdict_class(verdict: str) -> str:
    """The colour of a verdict (from `Verdict` itself) or of a page's other states."""
    if verdict in _STATES:
        return _STATES[verdict]
    try:
        v = Verdict.parse(str(verdict))
    except ValueError:
        return ""
    return v.colour


def badge(verdict: str) -> str:
    return f'<span class="{verdict_class(verdict)}">{e(verdict)}</span>'


def link(text: str, target: str) -> str:
    return f'<a href="#{e(target)}">{e(text)}</a>'


def png_uri(fig) -> str:
    """A matplotlib figure as a PNG `data:` URI."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def img(fig, alt: str) -> str:
    return f'<img alt="{e(alt)}" src="{png_uri(fig)}">'


def cell(c: Cell, css: str = "") -> str:
    body = e(c.text)
    if c.links:
        body += " " + ", ".join(link(text, target) for text, target in c.links)
    classes = " ".join(x for x in (verdict_class(c.verdict), css) if x)
    title = f' title="{e(c.title)}"' if c.title else ""
    return f'<td class="{classes}"{title}>{body}</td>'


def table(head: list[str], rows: list[str], css: str = "") -> str:
    heads = "".join(f"<th>{h}</th>" for h in head)
    body = "".join(rows)
    return f'<table class="{css}"><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>'
