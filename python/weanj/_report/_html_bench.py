"""The end of the HTML report: per example its benchmark figures and records, and its
provenance (inputs, keys, gradient files, versions, device and date)."""

from __future__ import annotations

from typing import Any

from ._html_parts import e, img, link, table
from ._page_model import ExamplePage, anchor


def _bench_table(p: ExamplePage) -> str:
    ex = p.example
    size = ex.sizes.name if ex.sizes is not None else None
    columns = ([size] if size else []) + list(ex.param_names)
    rows = []
    for r in sorted(
        p.bench,
        key=lambda r: (
            str(r.get("sweep")),
            r["variant"],
            r["device"],
            [str(r.get(c)) for c in columns],
        ),
    ):

        def ms(v):
            return "—" if v is None else f"{1e3 * v:.3f}"

        spread = r.get("spread") or {}
        grad = ms(r.get("grad_s"))
        if spread.get("grad_s"):
            lo, hi = spread["grad_s"]
            grad += f" ({1e3 * lo:.3f}–{1e3 * hi:.3f})"
        mem = r.get("peak_mem_bytes")
        first = "—" if r.get("compile_s") is None else f"{r['compile_s']:.2f}"
        scratch = "—" if mem is None else f"{mem / 2**20:.2f}"
        rows.append(
            f"<tr><td><code>{e(r['variant'])}</code></td><td>{e(r['device'])}</td><td>{e(r['dtype'])}</td>"
            + "".join(f'<td class="n">{e(r.get(c, "—"))}</td>' for c in columns)
            + f'<td class="n">{ms(r.get("forward_s"))}</td><td class="n">{grad}</td>'
            f'<td class="n">{first}</td><td class="n">{scratch}</td>'
            f'<td class="n">{e(r.get("samples") or "—")}</td></tr>'
        )
    head = [
        "variant",
        "device",
        "dtype",
        *columns,
        "forward [ms]",
        "gradient [ms] (min–max)",
        "first call [s]",
        "scratch [MiB]",
        "samples",
    ]
    return table([e(h) for h in head], rows, "bench")


def benchmarks(p: ExamplePage, have_matplotlib: bool) -> str:
    from ._bench_plots import figures

    out = [
        f'<section id="{e(anchor(p.name, "bench"))}"><h3>{link(p.name, p.name)}: benchmarks</h3>'
    ]
    if p.bench is None:
        note = next((m for m in p.missing if "benchmark" in m), "no benchmark results")
        out.append(f'<p class="note">{e(note)}</p></section>')
        return "".join(out)
    if have_matplotlib:
        try:  # the figures must not cost the page (their records were checked on reading)
            drawn = [(f, img(f.figure, f.title)) for f in figures(p.catalog, p.bench)]
        except Exception as err:
            first = (str(err).splitlines() or [""])[0][:200]
            out.append(
                f'<p class="note">no benchmark figures ({e(type(err).__name__)}: {e(first)})</p>'
            )
            drawn = []
        for f, picture in drawn:
            out.append(
                f'<div class="pic" id="{e(anchor(p.name, "bench", f.stem))}">{picture}</div>'
            )
    out.append(
        "<details><summary>the numbers (every record)</summary>" + _bench_table(p) + "</details>"
    )
    out.append("</section>")
    return "".join(out)


def definition_list(items: dict[str, Any]) -> str:
    return (
        "<table>"
        + "".join(f"<tr><th>{e(k)}</th><td><code>{e(v)}</code></td></tr>" for k, v in items.items())
        + "</table>"
    )


def provenance(p: ExamplePage) -> str:
    out = [
        f'<section id="{e(anchor(p.name, "provenance"))}">'
        f"<h3>{link(p.name, p.name)}: provenance</h3>"
    ]
    if p.ej is not None and p.ej.inputs is not None:
        inputs = p.ej.inputs
        facts = {
            "inputs file": inputs.path,
            "inputs sha256": inputs.digest,
            "key (float64)": inputs.key("float64"),
            "key (float32)": inputs.key("float32"),
            **{f"parameter {k}": v for k, v in inputs.params.items()},
            **{
                f"attribute {k}": v
                for k, v in inputs.attrs.items()
                if k in ("seed", "generator", "layout", "format")
            },
        }
        out.append(definition_list(facts))
        rows = [
            f"<tr><td><code>{e(g.label)}</code></td><td>{e(g.source)}</td><td>{e(g.dtype)}</td>"
            f"<td>{e(g.backend_version or g.backend)}</td><td>{e(g.created)}</td>"
            f"<td><code>{e(g.key[:12])}…</code></td></tr>"
            for g in p.ej.subjects.values()
        ]
        if rows:
            out.append(
                "<h4>gradient files judged</h4>"
                + table(["label", "source", "dtype", "backend", "created", "key"], rows)
            )
    environments = {}
    if p.ej is not None and p.ej.environment:
        environments[f"the last weanj check ({p.ej.judged_at})"] = p.ej.environment
    for name, env in p.bench_environments.items():
        environments[f"benchmark file {name}"] = env
    if environments:
        keys = list(dict.fromkeys(k for env in environments.values() for k in env))
        rows = [
            f"<tr><th>{e(k)}</th>"
            + "".join(
                f"<td><code>{e(env.get(k, '—'))}</code></td>" for env in environments.values()
            )
            + "</tr>"
            for k in keys
        ]
        out.append(
            "<h4>versions, device and date</h4>" + table(["", *(e(k) for k in environments)], rows)
        )
    if p.skipped:
        out.append(
            "<h4>skipped, and why</h4><ul>"
            + "".join(f"<li>{e(', '.join(v))}: {e(k)}</li>" for k, v in p.skipped.items())
            + "</ul>"
        )
    out.append("</section>")
    return "".join(out)
