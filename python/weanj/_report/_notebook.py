"""A `Judgement` in a notebook: the report's first tables and the pictures of what fails,
as one self-contained HTML fragment (inline style, images as PNG `data:` URIs, no script).
"""

from __future__ import annotations

from .._judge._alone import alone
from .._judge._checks import num
from .._judge._verdict import ExampleJudgement
from .._model._verdicts import CaseKind, Verdict
from ._cells import check_cell, checks_of, family_cell, float32_cell, shown_checks
from ._html_parts import badge, cell, declared_item, e, img, table, verdict_class, verdict_style
from ._lines import coverage_text, fault_text, summary
from ._text import fault_rows, reference_lines

# Scoped to the fragment: a notebook or a docs page around it keeps its own look.
SCOPED_STYLE = (
    ".weanj-judgement table{border-collapse:collapse;margin:.4em 0;font-size:.9em}"
    ".weanj-judgement th,.weanj-judgement td{border:1px solid #ccc;padding:.2em .45em;"
    "text-align:left;vertical-align:top}"
    ".weanj-judgement th{background:#f2f2f2}"
    ".weanj-judgement img{max-width:100%}" + verdict_style(".weanj-judgement ")
)


def _summary_rows(judgement) -> list[str]:
    rows = []
    for ej in judgement:
        what = []
        for who, j in fault_rows(ej):
            what.append(f"<li><code>{e(who)}</code>: {e(j.verdict)}: {e(fault_text(j))}</li>")
        for j in ej.failures:
            if j.kind != CaseKind.RUN:
                where = f" · array <code>{e(j.array)}</code>" if j.array else ""
                what.append(
                    f"<li><code>{e(j.case)}</code>{where}: {e(summary(j).split(': ', 2)[-1])}</li>"
                )
        what.extend(declared_item(declared, cases) for declared, cases in ej.expected.items())
        what.extend(f"<li>{e(a.line)}</li>" for a in alone(ej))  # compared with nothing
        body = f'<ul style="margin:.2em 0">{"".join(what)}</ul>' if what else ""
        if ej.error is not None:
            body = e(ej.error)
        rows.append(
            f"<tr><td><code>{e(ej.name)}</code></td>"
            f'<td class="{verdict_class(ej.state)}">{e(ej.state)}</td><td>{body or "—"}</td></tr>'
        )
    return rows


def _variant_rows(ej: ExampleJudgement) -> list[str]:
    suspects = set(ej.suspects())
    rows = []
    for run in ej.of_kind(CaseKind.RUN):
        label = run.subjects[0]
        if "@" in label:
            continue
        g = ej.subjects.get(label)
        if run.verdict != Verdict.OK:
            rows.append(
                f"<tr><td><code>{e(label)}</code></td><td>{e(run.family)}</td>"
                f'<td class="{verdict_class(str(run.verdict))}" colspan="6">'
                f"{e(run.verdict)}: {e(fault_text(run) or run.reason)}</td></tr>"
            )
            continue
        loss = num(g.loss, 15) if g is not None and g.loss is not None else "—"
        rows.append(
            f"<tr><td><code>{e(label)}</code></td><td>{e(run.family)}</td><td>{loss}</td>"
            + "".join(cell(check_cell(checks_of(ej, label, k), k)) for k in shown_checks(ej))
            + cell(float32_cell(ej, label))
            + cell(family_cell(ej, label, suspects))
            + "</tr>"
        )
    return rows


def _pictures(ej: ExampleJudgement, limit: int) -> list[str]:
    failing = [
        j
        for j in ej.judgements
        if CaseKind(j.kind).compares
        and j.failed
        and j.comparison is not None
        and j.comparison.differing
    ]
    if not failing:
        return []
    try:
        from ._figures import draw_pair
    except ImportError:
        return []
    out = []
    for j in failing[:limit]:
        a, b = (ej.subjects.get(label) for label in j.subjects)
        if a is None or b is None:
            continue
        try:
            fig = draw_pair(j, a, b)
        except Exception:  # matplotlib missing: the tables say it all
            return out
        if fig is not None:
            out.append(f"<p><code>{e(j.case)}</code></p>{img(fig, j.case)}")
    return out


def judgement_html(judgement, *, max_pictures: int = 6) -> str:
    # what was compared with nothing, and what was not judged
    covered = coverage_text(judgement.coverage, judgement.did_not_run, judgement.alone)
    head = (
        f"<p><b>weanj {e(judgement.command)}</b>: {badge(judgement.verdict)}"
        + (f" — {e(covered)}" if covered else "")
        + "</p>"
    )
    parts = [f'<div class="weanj-judgement"><style>{SCOPED_STYLE}</style>', head]
    parts.append(
        table(["example", "verdict", "what fails, what is expected"], _summary_rows(judgement))
    )
    left = max_pictures
    for ej in judgement:
        if ej.error is not None:
            continue
        if judgement.command == "check":
            parts.append(f"<p><b>{e(ej.name)}</b> — {badge(ej.state)}</p>")
            parts.append(
                table(
                    [
                        "variant",
                        "family",
                        "loss",
                        *(k.column for k in shown_checks(ej)),
                        "float32",
                        "family agreement",
                    ],
                    _variant_rows(ej),
                )
            )
            for line in reference_lines(ej):  # a family judged against its next member
                parts.append(f"<p>{e(line.strip())}</p>")
        pictures = _pictures(ej, left)
        left -= len(pictures)
        parts.extend(pictures)
    parts.append("</div>")
    return "".join(parts)
