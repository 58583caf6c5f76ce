"""Each example's evidence on the HTML page (`_html`): the pictures of its failing (or most
interesting) pairs and of its failing gradient checks, a one-element array as numbers,
and the tables of its pairs, gradient checks and files."""

from __future__ import annotations

import numpy as np

from .._judge._beyond import compared_view
from .._judge._checks import num
from .._judge._verdict import CaseJudgement
from .._model._verdicts import GRADIENT_CHECKS, CaseKind, Verdict
from ._cells import compared, same_family_pairs
from ._figures import plain
from ._html_parts import badge, e, img, link, table, verdict_class
from ._lines import (
    compared_name,
    declared_text,
    file_name,
    index,
    julia,
    region_lines,
    summary,
    worst_ulp_text,
)
from ._page_model import ExamplePage, anchor, judged_line


def nothing_judged(p: ExamplePage, state_class: str, error_class: str) -> str:
    """The close of an example's section where there is no judgement to show: what runs it
    (`state`), or why the judge could not judge it; "" where there is one."""
    if p.ej is None:
        return f'<p class="{state_class}">{e(p.state)}</p></section>'
    if p.error is not None:
        return f'<p class="{error_class}">not judged: {e(p.error)}</p></section>'
    return ""


def _numbers(j: CaseJudgement, a, b) -> str:
    """A one-element array as numbers, not a picture."""
    ga = np.asarray(a.gradients[j.array]).reshape(-1)[0].item()  # Python numbers: plain repr
    gb = np.asarray(b.gradients[j.array]).reshape(-1)[0].item()
    delta = abs(complex(gb) - complex(ga))
    # against a reference of 0, in absolute terms (|Δ| itself), never NaN/Inf
    rel = num(delta / abs(ga)) if ga != 0 else "— (the reference is 0)"
    return table(
        [e(a.label), e(b.label), "|Δ|", "|Δ| / |g_ref|"],
        [
            f'<tr><td class="n">{ga!r}</td><td class="n">{gb!r}</td><td class="n">{num(delta)}'
            f'</td><td class="n">{e(rel)}</td></tr>'
        ],
    )


def pair_picture(p: ExamplePage, j: CaseJudgement, have_matplotlib: bool) -> str:
    from ._figures import draw_pair

    a, b = (compared_view(p.ej.subjects[label], j.kind) for label in j.subjects)
    gone = [g.label for g in (a, b) if j.array not in g.gradients]
    what = "array" if j.kind == CaseKind.PAIR else ""
    out = [
        f'<div class="pic" id="{e(j.case)}"><h4>{e(j.subjects[1])} vs {e(j.subjects[0])} · '
        f"{what} <code>{e(compared_name(j))}</code> — {badge(str(j.verdict))}</h4>",
        f"<p><code>{e(j.case)}</code>: {e(summary(j).split(': ', 2)[-1])}</p>",
    ]
    if j.comparison is not None and j.comparison.differing:
        lines = [line.strip() for line in region_lines(j.comparison, "")]
        out.append(f'<ul class="tight">{"".join(f"<li>{e(x)}</li>" for x in lines)}</ul>')
    if j.verdict.at_kinks:
        out.append(f"<p>differs only at the kinks, as declared: {e(j.kinks)}</p>")
    if gone:  # read back from check.json: its store file changed since the check
        out.append(
            f'<p class="note">no picture: the gradient file of {e(", ".join(gone))} no longer '
            "holds what the check judged</p>"
        )
    elif np.size(a.gradients[j.array]) == 1:
        out.append(_numbers(j, a, b))
    elif not have_matplotlib:
        out.append("<p class=\"note\">no picture: pip install 'weanj[plot]' for matplotlib</p>")
    else:
        try:
            fig = draw_pair(j, a, b)
        except Exception as err:  # one picture must not cost the page
            fig, why = None, f"no picture ({type(err).__name__}: {err})"
        else:
            why = "bitwise equal: nothing to draw"
        out.append(
            img(fig, f"where {j.subjects[1]} differs from {j.subjects[0]} in {j.array}")
            if fig is not None
            else f'<p class="note">{e(why)}</p>'
        )
    out.append("</div>")
    return "".join(out)


def check_picture(j: CaseJudgement) -> str:
    """A failing gradient check's picture, as its result draws it (`plot`, the protocol of
    `_judge._checks`): the Taylor test's remainders against the step, with slope 2."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.add_subplot()
    title, what = j.result.plot(ax, j.subjects[0])
    ax.set_title(plain(f"{j.subjects[0]} · {j.array}: {title}"), fontsize=9)
    ax.legend(fontsize=7)
    return img(fig, f"{what} of {j.subjects[0]} in {j.array}")


def _relative_cell(c) -> str:
    """max|Δ|/max|g_ref|, or, against a reference of zeros, the words saying so (the max|Δ|
    beside it is then the measure); the noise floor where it, not the relative tolerance,
    bounds |Δ|."""
    text = e("reference all zeros" if c.reference_zero else num(c.max_rel))
    notes = []
    if c.grad_floor > c.tolerance.grad * c.reference_max:
        notes.append(f"noise floor {num(c.grad_floor)}")
    if c.own_rounding:
        notes.append(f"{c.own_rounding} element(s) within their own rounding level")
    if notes:
        text += f' <span class="note">({e("; ".join(notes))})</span>'
    return text


def _loss_cell(c) -> str:
    """|ΔL|/|L|, or |ΔL| itself where the reference loss is 0."""
    if c.loss_abs is None:
        return "—"
    if c.loss_rel is None:
        return f"|ΔL| {num(c.loss_abs)} (L_ref = 0)"
    return num(c.loss_rel)


def pair_row(j: CaseJudgement, drawn: set[str]) -> str:
    c = j.comparison
    ident = "" if j.case in drawn else f' id="{e(j.case)}"'
    ref, other = j.subjects
    name = link(other, j.case) if j.case in drawn else e(other)
    if c is None:
        cells = '<td colspan="6" class="note">' + e(j.reason) + "</td>"
    else:
        equal = c.max_abs == 0
        worst = "—" if equal or not c.worst else e(index(c.worst)) + " / " + e(julia(c.worst))
        cells = (
            f'<td class="n">{num(c.max_abs)}</td><td class="n">{_relative_cell(c)}</td>'
            f'<td class="n">{worst}</td><td class="n">{e(worst_ulp_text(c))}</td>'
            f'<td class="n">{_loss_cell(c)}</td>'
            f'<td class="n">{c.differing} in {c.region_count}</td>'
        )
    return (
        f'<tr{ident} title="{e(summary(j))}"><td><code>{e(ref)}</code></td>'
        f"<td><code>{name}</code></td>"
        f"<td><code>{e(compared_name(j))}</code></td>{cells}"
        f'<td class="{verdict_class(str(j.verdict))}">{e(j.verdict)}</td>'
        f'<td class="note">{e(declared_cell(j))}</td></tr>'
    )


def declared_cell(j: CaseJudgement) -> str:
    """What a case was declared to be (`weanj.Expected`), why, and how it departs."""
    if j.expected is None:
        return ""
    text = f"{declared_text(j)}: {j.expected.reason}"
    if j.verdict.not_there:
        text += " — but it agrees"
    elif j.departure:
        text += f" — not as declared: {j.departure}"
    return text


def evidence(p: ExamplePage, have_matplotlib: bool) -> str:
    out = [
        f'<section id="{e(anchor(p.name, "pairs"))}">'
        f"<h3>{link(p.name, p.name)}: pairs and pictures</h3>"
    ]
    nothing = nothing_judged(p, "note", "note")
    if nothing:
        return "".join(out) + nothing
    drawn = {j.case for j in p.pictures}
    if p.pictures:
        kind = (
            "failing and kink pairs"
            if any(j.failed or j.verdict.at_kinks for j in p.pictures)
            else "no pair fails: the agreeing pair of the largest error, and the family references"
        )
        out.append(
            f'<p class="note">Pictures: {e(kind)}; |Δ| relative to max|g_ref|, red: the '
            "tolerance and the regions beyond it.</p>"
        )
        out.extend(pair_picture(p, j, have_matplotlib) for j in p.pictures)
    if p.left_out_pictures:
        out.append(
            f'<p class="note">{p.left_out_pictures} more failing pair(s) without a picture: '
            "see the table.</p>"
        )
    for j in checks(p):
        if j.failed and hasattr(j.result, "plot") and have_matplotlib:
            try:
                out.append(f'<div class="pic">{check_picture(j)}</div>')
            except Exception as err:  # one picture must not cost the page
                why = f"no picture of {j.case} ({type(err).__name__}: {err})"
                out.append(f'<p class="note">{e(why.splitlines()[0][:300])}</p>')
    out.extend(tables(p, drawn))
    out.append("</section>")
    return "".join(out)


def tables(p: ExamplePage, drawn: set[str]) -> list[str]:
    """The tables of an example's evidence: pairs (same family, float32, across
    families), gradient checks, and the files that are not current."""
    return [*_pair_tables(p, drawn), *_check_tables(p), *_file_tables(p)]


def _pair_tables(p: ExamplePage, drawn: set[str]) -> list[str]:
    """The tables of pairs: same family, float32 against float64, across families."""
    out = []
    head = [
        "reference",
        "other",
        "array",
        "max|Δ|",
        "max|Δ|/max|g_ref|",
        "worst (numpy / Julia)",
        "ULP",
        "|ΔL|/|L|",
        "beyond tol. (elements in regions)",
        "verdict",
        "declared (weanj.Expected)",
    ]
    pairs = [j for j in compared(p.ej) if j.verdict != Verdict.SKIPPED]
    same = same_family_pairs(p.ej)
    groups = (
        ("same-family pairs (float64)", same),
        (
            "float32 against its own float64 run",
            [j for j in pairs if j.subjects[1].endswith("@float32")],
        ),
        (
            "family references across families (information, never a failure)",
            [j for j in pairs if "::info::" in j.case or j.verdict == Verdict.INFO],
        ),
    )
    for title, js in groups:
        if js:
            out.append(
                f"<h4>{e(title)}</h4>" + table(head, [pair_row(j, drawn) for j in js], "pairs")
            )
    return out


def _check_tables(p: ExamplePage) -> list[str]:
    """The table of gradient checks (none where no check is shown)."""
    out = []
    # the checks of variants at fault or unavailable are said once, above the tables
    shown = [
        j
        for j in checks(p)
        if not (
            j.verdict == Verdict.SKIPPED and (j.blocked_by or j.subjects[0] in p.ej.unavailable)
        )
    ]
    if shown:
        rows = [
            f'<tr id="{e(j.case)}"><td><code>{e(j.subjects[0])}</code></td><td>{e(j.kind)}'
            f'</td><td><code>{e(j.array)}</code></td><td class="{verdict_class(str(j.verdict))}">'
            f"{e(j.verdict)}</td><td>{e(summary(j).split(': ', 2)[-1])}</td>"
            f'<td class="note">{e(declared_cell(j))}</td></tr>'
            for j in shown
        ]
        out.append(
            f"<h4>gradient checks ({e(judged_line(p))})</h4>"
            + table(
                ["variant", "check", "array", "verdict", "numbers", "declared (weanj.Expected)"],
                rows,
                "checks",
            )
        )
    return out


def _file_tables(p: ExamplePage) -> list[str]:
    """The files of the store and recorded/ that are not current, and a line naming the
    ones that are."""
    out = []
    files = p.ej.of_kind(CaseKind.FILE)
    if files:
        out.append("<h4>files of the store and recorded/</h4>")
        fine = [j for j in files if j.verdict == Verdict.OK]
        rows = [
            f'<tr id="{e(j.case)}"><td><code>{e(file_name(j))}</code></td>'
            f'<td class="{verdict_class(str(j.verdict))}">{e(j.verdict)}</td>'
            f'<td class="note">{e(j.reason)}</td></tr>'
            for j in files
            if j.verdict != Verdict.OK
        ]
        if rows:
            out.append(table([str(CaseKind.FILE), "verdict", "why"], rows))
        if fine:
            names = ", ".join(f"<code>{e(file_name(j))}</code>" for j in fine)
            out.append(f'<p class="note">{len(fine)} file(s) read, current and finite: {names}</p>')
    return out


def checks(p: ExamplePage) -> list[CaseJudgement]:
    """The example's gradient checks (every kind of `GRADIENT_CHECKS`), in case order."""
    return [j for j in p.ej.judgements if j.kind in GRADIENT_CHECKS]
