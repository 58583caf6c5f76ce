"""`weanj report`: one self-contained page (HTML) and a job summary (Markdown), written
from the store, the last `weanj check` and the benchmark files.

The user project (in a folder outside the repository, found by root discovery) has two
examples: `11-scale`, whose only gradient array is a 0-d scalar and whose two variants
agree; and `12-ring`, with two correct variants and one (`jax-wrong`) whose gradient is
off by 1e-3 relative at x[7]. The check the report reads (`weanj.check()`), `weanj report`
and `weanj check` run in this process as a fresh one runs them (`projects.run_here`,
`projects.weanj_here`: the project loaded afresh from its folder; what is tested is what
they write, not the process). Numbers on the page are checked against numpy; the page
itself by parsing it: every image decodes as PNG, every `#anchor` resolves, nothing
refers to the network.
"""

from __future__ import annotations

import base64
import html
import json
import re
import struct
from html.parser import HTMLParser
from pathlib import Path

import h5py
import numpy as np
import pytest

from .helpers import assert_one_line_error, bench_record, inputs_sha256, provenance_key
from .projects import RING, run_here, weanj_here, write_project
from .toy_kernels import smooth_reference

# L(s) = Σ (s·x − y)², one 0-d gradient array; the two variants sum in other orders.
SCALE = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="11-scale", arrays=(weanj.Array("s", shape=()), weanj.Array("x", shape=("n",)),
                             weanj.Array("y", shape=("n",))), wrt="s",
    generate=lambda seed: {"s": np.array(0.7), "x": np.random.default_rng(seed).standard_normal(30),
                           "y": np.random.default_rng(seed + 1).standard_normal(30)},
))


@weanj.jax_variant(ex, "jax-direct", family="scale")
def direct(s, x, y):
    return jnp.sum((s * x - y) ** 2)


@weanj.jax_variant(ex, "jax-expanded", family="scale")
def expanded(s, x, y):
    return s**2 * jnp.sum(x * x) - 2 * s * jnp.sum(x * y) + jnp.sum(y * y)
"""

# What `weanj check` leaves for the report: `weanj.check()`, the function the command
# calls, writes each example's verdicts (results/<example>/check.json).
CHECK = "import weanj; weanj.check()"

PNG = b"\x89PNG\r\n\x1a\n"


# --- parsing the page ----------------------------------------------------------------------


class Page(HTMLParser):
    """The page's elements as (tag, attributes, text inside), tables as rows of cells."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.ids: dict[str, int] = {}
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.metas: list[dict] = []
        self.scripts = 0
        self.tables: list[list[list[str]]] = []  # top-level tables, rows of cell texts
        self.table_links: list[list[str]] = []  # the hrefs in each table
        self._depth = 0
        self._cell: list[str] | None = None
        self.open_elements: list[tuple[str, str | None]] = []
        self.text_in: dict[str, list[str]] = {}  # id: text inside that element
        self.imgs_in: dict[str, int] = {}  # id: images inside that element
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = self.ids.get(a["id"], 0) + 1
        if tag not in ("img", "meta", "br", "link", "input"):
            self.open_elements.append((tag, a.get("id")))
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
            if self._depth:
                self.table_links[-1].append(a["href"])
        if tag in ("img", "script", "link", "iframe", "source") and "src" in a:
            self.srcs.append(a["src"])
        if tag == "img":
            for _, ident in self.open_elements:
                if ident:
                    self.imgs_in[ident] = self.imgs_in.get(ident, 0) + 1
        if tag == "link" and "href" in a:
            self.hrefs.append(a["href"])
        if tag == "meta":
            self.metas.append(a)
        if tag == "script":
            self.scripts += 1
        if tag == "table":
            self._depth += 1
            if self._depth == 1:
                self.tables.append([])
                self.table_links.append([])
        if tag == "tr" and self._depth == 1:
            self.tables[-1].append([])
        if tag in ("td", "th") and self._depth == 1:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._depth == 1 and self._cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "table":
            self._depth -= 1
        while self.open_elements:
            name, _ = self.open_elements.pop()
            if name == tag:
                break

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        for _, ident in self.open_elements:
            if ident:
                self.text_in.setdefault(ident, []).append(data)

    def text(self, ident: str) -> str:
        return " ".join(" ".join(self.text_in.get(ident, [])).split())


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk, after checking the signature."""
    assert data[:8] == PNG and data[12:16] == b"IHDR", data[:16]
    return struct.unpack(">II", data[16:24])


def assert_self_contained(text: str, images: bool = True) -> Page:
    """Every image a PNG data URI that decodes, every `#anchor` an id (each id once),
    nothing from the network, no script, and the policy that forbids loading anything."""
    page = Page(text)
    assert page.srcs or not images, "no images"
    for src in page.srcs:
        assert src.startswith("data:image/png;base64,"), src[:80]
        width, height = png_size(base64.b64decode(src.split(",", 1)[1], validate=True))
        assert width > 50 and height > 50
    duplicated = [i for i, n in page.ids.items() if n > 1]
    assert not duplicated, duplicated
    for href in page.hrefs:
        assert href.startswith("#"), href
        assert href[1:] in page.ids, f"{href} resolves to no id"
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert "url(" not in text  # no style sheet fetches
    assert page.scripts == 0
    policies = [
        m for m in page.metas if m.get("http-equiv", "").lower() == "content-security-policy"
    ]
    assert [m["content"] for m in policies] == [
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
    ]
    return page


def assert_github_tables(md: str) -> list[list[str]]:
    """Every table: a header row, a separator row of as many cells, rows of as many
    (GitHub's table syntax, `|` inside cells escaped); returns the header rows."""
    lines = md.splitlines()
    heads = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            cells = lambda line: re.split(r"(?<!\\)\|", line.strip())[1:-1]  # noqa: E731
            head = cells(lines[i])
            assert i + 1 < len(lines) and re.fullmatch(
                r"\|( ?:?-{3,}:? ?\|)+", lines[i + 1].strip()
            ), lines[i : i + 2]
            assert len(cells(lines[i + 1])) == len(head)
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                assert len(cells(lines[i])) == len(head), lines[i]
                i += 1
            heads.append([h.strip() for h in head])
        else:
            i += 1
    return heads


# --- the user project ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ports(tmp_path_factory) -> Path:
    """The project, checked (its verdicts left for the report), and both reports."""
    root = write_project(
        tmp_path_factory.mktemp("ports"),
        {"kernels/scale.py": SCALE, "kernels/ring.py": RING},
        name="my-ports",
    )
    r = run_here(root, CHECK)
    assert r.returncode == 0, r.stderr
    for args in (("--out", "report.html"), ("--format", "md", "--out", "summary.md")):
        r = weanj_here(root, "report", *args)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.startswith(f"wrote {args[-1]} (") and "FAIL" in r.stdout, r.stdout
    return root


@pytest.fixture(scope="module")
def page(ports) -> Page:
    return assert_self_contained((ports / "report.html").read_text(encoding="utf-8"))


def _ring_arrays(root: Path):
    with h5py.File(root / "shared_inputs" / "12-ring.h5") as f:
        return f["x"][()], f["y"][()]


def test_first_table_names_the_wrong_variant_and_array_and_links_to_its_pairs(ports, page):
    first, links = page.tables[0], page.table_links[0]
    assert first[0][:2] == ["example", "verdict"]
    rows = {row[0]: row for row in first[1:]}
    assert rows["11-scale"][1] == "ok" and rows["12-ring"][1] == "FAIL"
    ring = rows["12-ring"][2]
    # The suspect is jax-wrong, in array x, differing from both correct variants; they are
    # never named as the failing variant.
    assert re.search(r"jax-wrong · array x: FAIL: differs from jax-loop, jax-scan", ring), ring
    assert "jax-loop · array" not in ring and "jax-scan · array" not in ring
    x, y = _ring_arrays(ports)
    _, g = smooth_reference(x, y, 3)
    rel = 1e-3 * abs(g[7]) / np.max(np.abs(g))  # |Δ| at x[7] relative to max|g_ref|
    assert f"max|Δ|/max|g_ref| = {rel:.2e} at numpy (7,)" in ring, ring
    for other in ("jax-loop", "jax-scan"):
        case = f"12-ring::smooth::{other}~jax-wrong"
        assert f"#{case}" in links
        # The link leads to the pair's section: its picture and its regions.
        assert page.ids[case] == 1 and page.imgs_in.get(case) == 1
        section = page.text(case)
        assert f"jax-wrong vs {other} · array x — FAIL" in section, section
        assert "1 element(s) in numpy slice [7:8] / Julia range [8:8]" in section, section
    # The correct pair agrees, and is not drawn (nothing fails in it).
    assert "#12-ring::smooth::jax-loop~jax-scan" not in links


def test_variant_table_shows_the_gradient_checks_of_the_last_check(page):
    table = next(t for t in page.tables if t[0][0] == "variant" and "jax-wrong" in str(t))
    head = table[0]
    rows = {row[0]: dict(zip(head, row, strict=True)) for row in table[1:]}
    assert set(rows) == {"jax-loop", "jax-scan", "jax-wrong"}
    # A gradient off at one element fails the Taylor test (its remainders fall like h,
    # rate about 1, not h², or slower still read the way its error cancels the curvature);
    # the correct ones pass with rate 2.
    taylor = rows["jax-wrong"]["Taylor (min rate)"]
    rate = float(re.match(r"FAIL (-?\d\.\d\d)", taylor).group(1))
    assert rate < 1.3, taylor
    for good in ("jax-loop", "jax-scan"):
        assert re.match(r"ok (1\.9\d|2\.\d\d)", rows[good]["Taylor (min rate)"]), rows[good]
        assert rows[good]["jvp (rel. error)"].startswith("ok")
        # They fail only against the suspect: their rows stay ok, saying against whom.
        assert rows[good]["same-family pairs"] == "ok ×1; FAIL vs jax-wrong (x)"
        assert rows[good]["verdict"] == "ok"
    assert rows["jax-wrong"]["same-family pairs"] == "FAIL vs 2 of 2 jax-loop (x), jax-scan (x)"
    assert rows["jax-wrong"]["verdict"] == "FAIL"
    assert re.fullmatch(r"\d+\.\d s", rows["jax-loop"]["time (first call)"])
    loss = float(rows["jax-loop"]["loss"])
    assert loss > 0


def test_failing_taylor_check_has_its_picture_and_anchor(page):
    case = "12-ring::smooth::jax-wrong::taylor"
    assert page.ids[case] == 1 and "FAIL" in page.text(case)
    assert any("#" + case == h for h in page.hrefs)  # linked from the tables above
    assert page.imgs_in.get("12-ring::pairs", 0) == 3  # the 2 failing pairs, the Taylor test


def test_a_scalar_array_is_shown_as_numbers_not_a_picture(ports, page):
    """11-scale fails nowhere: the agreeing pair of the largest error is shown, and its
    only array is 0-d: two numbers and their difference, which equal the stored ones."""
    case = "11-scale::scale::jax-direct~jax-expanded"
    assert page.ids[case] == 1 and page.imgs_in.get(case, 0) == 0
    with h5py.File(ports / "results/11-scale/gradients/jax-direct.h5") as f:
        a = float(f["gradient"][()])
    with h5py.File(ports / "results/11-scale/gradients/jax-expanded.h5") as f:
        b = float(f["gradient"][()])
    with h5py.File(ports / "shared_inputs" / "11-scale.h5") as f:
        s, x, y = float(f["s"][()]), f["x"][()], f["y"][()]
    exact = float(np.sum(2 * (s * x - y) * x))
    assert abs(a - exact) <= 1e-12 * abs(exact) and abs(b - exact) <= 1e-11 * abs(exact)
    section = page.text(case)
    assert f"{a!r} {b!r} {abs(b - a):.2e}" in section, section


def test_markdown_is_a_short_github_summary_naming_the_failure(ports):
    md = (ports / "summary.md").read_text(encoding="utf-8")
    assert len(md) < 65_000
    heads = assert_github_tables(md)
    assert heads[0] == [
        "example",
        "verdict",
        "what fails (variant · array), what differs as declared",
        "missing",
    ]
    assert sum(h[0] == "variant" for h in heads) == 2
    first = md.split("\n\n", 2)[2].split("\n\n")[0]
    assert "`jax-wrong` · `x`: FAIL: differs from jax-loop, jax-scan" in first, first
    assert "- `12-ring::smooth::jax-loop~jax-wrong`: FAIL" in md
    assert "- `12-ring::smooth::jax-wrong::taylor`: FAIL" in md
    assert "<img" not in md and "data:" not in md


def test_check_leaves_its_verdicts_for_the_report(ports, tmp_path):
    """`weanj check` itself writes results/<example>/check.json (its `cmd_check` calls
    `write_check_verdicts`)."""
    target = ports / "results" / "11-scale" / "check.json"
    before = json.loads(target.read_text())["timestamp"]
    target.unlink()
    r = weanj_here(ports, "check", "11-scale", "--dtype", "float64")
    assert r.returncode == 0, r.stdout + r.stderr
    assert target.is_file(), (
        "weanj check left no check.json (cmd_check must call write_check_verdicts)"
    )
    data = json.loads(target.read_text())
    assert data["example"] == "11-scale" and data["dtypes"] == ["float64"]
    assert data["timestamp"] >= before


# --- built-in examples, nothing computed yet ------------------------------------------------


def _report(*args) -> int:
    from weanj._cli import main

    return main(["report", *args])


def test_builtin_examples_say_what_is_missing_and_which_command_computes_it(project, capsys):
    """Nothing checked yet: the report judges nothing (the store and the recorded
    references are there), each example is one line, `not checked`, naming the command."""
    out = project / "r.html"
    assert _report("--out", str(out)) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"wrote {out} (") and "KiB" in said
    text = out.read_text(encoding="utf-8")
    page = assert_self_contained(text, images=False)
    from weanj._registry import example_names

    names = example_names()
    assert [row[0] for row in page.tables[0][1:]] == names
    for name in names:
        row = next(r for r in page.tables[0] if r[0] == name)
        assert row[1] == "not checked"
        assert f"not checked: run `weanj check {name}`" in row[3]
        assert f"run `weanj bench {name}`" in row[3]
        assert page.ids[name] == 1
    assert page.text("overall") == "overall: incomplete"
    md_path = project / "r.md"
    assert _report("--out", str(md_path)) == 0  # the format follows the suffix
    md = md_path.read_text(encoding="utf-8")
    assert len(md) < 65_000 and md.startswith("# weanj report: incomplete")
    assert len(assert_github_tables(md)) == 1  # the first table; no variants judged
    for name in names:
        assert f"not checked: run `weanj check {name}`" in md


def test_markdown_stays_under_the_limit_however_much_fails(project):
    """Hundreds of failing pairs with long reasons: the summary is cut, and says so."""
    from weanj._io._inputs import read_inputs
    from weanj._judge._verdict import CaseJudgement, ExampleJudgement
    from weanj._model._verdicts import Verdict
    from weanj._places import places
    from weanj._registry import example
    from weanj._report import _md, _page, _page_model

    pages = []
    for name in ("01-jacobi", "02-gauss-seidel", "03-advection"):
        ex = example(name)
        ej = ExampleJudgement(ex, read_inputs(ex, places()))
        for k in range(400):
            ej.judgements.append(
                CaseJudgement(
                    f"{name}::fam::a{k}~b{k}",
                    "pair",
                    Verdict.FAIL,
                    family="fam",
                    subjects=(f"a{k}", f"b{k}"),
                    array="theta",
                    reason="why " * 200,
                )
            )
        p = _page_model.ExamplePage(ex, ej)
        _page._failures(p)
        pages.append(p)
    md = _md.render(pages, {"date": "today", "weanj": "test"})
    assert len(md) < 65_000
    assert "- … and 380 more failing case(s)" in md  # 20 listed of 400
    assert_github_tables(md)
    # Hundreds of examples, none judged: the first table itself is cut, and says so.
    many = [
        _page_model.ExamplePage(
            example("01-jacobi"),
            ExampleJudgement(example("01-jacobi"), None, error="the inputs are missing " * 5),
            error="the inputs are missing " * 5,
        )
        for _ in range(500)
    ]
    for p in many:
        p.failures.append(_page_model.Failure(p.name, None, "not judged: " + p.error, []))
    md = _md.render(many, {"date": "today", "weanj": "test"})
    assert len(md) < 65_000 and "more example(s): see the HTML report" in md
    assert_github_tables(md)


def test_an_example_without_inputs_is_reported_not_judged(project, capsys):
    (project / "shared_inputs" / "04-tridiagonal.h5").unlink()
    out = project / "r.html"
    assert _report("03-advection", "04-tridiagonal", "--out", str(out)) == 0
    page = assert_self_contained(out.read_text(encoding="utf-8"), images=False)
    rows = {row[0]: row for row in page.tables[0][1:]}
    # Not judged (its inputs cannot be read), not FAIL: nothing was compared.
    assert rows["04-tridiagonal"][1] == "not judged"
    assert rows["04-tridiagonal"][2].startswith("not judged: ")
    assert "weanj inputs regenerate" in rows["04-tridiagonal"][2]
    assert rows["03-advection"][1] == "not checked"  # no check.json: one line, no verdict
    assert Page(out.read_text(encoding="utf-8")).text("overall") == "overall: incomplete"


def test_check_file_is_current_only_on_the_same_inputs(project):
    from weanj._io._inputs import read_inputs
    from weanj._judge._verdict import ExampleJudgement
    from weanj._places import places
    from weanj._registry import example
    from weanj._report._verdicts_file import read_check_verdicts, write_check_verdicts

    ex, here = example("01-jacobi"), places()
    inputs = read_inputs(ex, here)
    (path,) = write_check_verdicts([ExampleJudgement(ex, inputs)], here)
    assert path == project / "results" / "01-jacobi" / "check.json"
    assert not list(path.parent.glob(".*.tmp"))
    data = json.loads(path.read_text())
    with h5py.File(project / "shared_inputs" / "01-jacobi.h5") as f:
        arrays = {name: f[name][()] for name in ex.arrays}
        K = int(f.attrs["K"])
    key = provenance_key(inputs_sha256(arrays), {"K": K}, "float64")  # from its definition
    assert data["key"] == key and data["inputs_sha256"] == inputs_sha256(arrays)
    assert data["environment"]["jax"] and data["timestamp"].endswith("+00:00")
    assert read_check_verdicts("01-jacobi", key, here).state == "current"
    stale = read_check_verdicts("01-jacobi", "0" * 64, here)
    assert stale.state == "stale" and "`weanj check 01-jacobi`" in stale.note
    # The page says so too, where the checks would be.
    data["key"] = "f" * 64
    path.write_text(json.dumps(data))
    assert _report("01-jacobi", "--out", str(project / "r.html")) == 0
    text = (project / "r.html").read_text(encoding="utf-8")
    assert "ran on other inputs" in text and "refresh them with `weanj check 01-jacobi`" in text
    path.write_text("{not json")
    assert read_check_verdicts("01-jacobi", key, here).state == "unreadable"
    # A check file of the format before the judgement was written whole: refused in one
    # line naming the command that rewrites it; the page says that line, no traceback.
    data["key"], data["weanj_check"] = key, 1
    path.write_text(json.dumps(data))
    old = read_check_verdicts("01-jacobi", key, here)
    assert old.state == "unreadable" and "\n" not in old.note
    assert old.note == f"{path} is a check file of format 1, not 2: rewrite it with " + (
        "`weanj check 01-jacobi`"
    )
    assert _report("01-jacobi", "--out", str(project / "r.html")) == 0
    page = Page((project / "r.html").read_text(encoding="utf-8"))
    row = next(r for r in page.tables[0] if r[0] == "01-jacobi")
    assert row[1] == "not checked" and "rewrite it with `weanj check 01-jacobi`" in row[3]


def test_bad_arguments_are_one_line_and_exit_2(project, capsys):
    assert _report("no-such-example") == 2
    err = capsys.readouterr().err
    # the registry's message: one line, then the list of the known examples
    head = err.splitlines()[0]
    assert "unknown example 'no-such-example'" in head and len(head) <= 200
    assert "Traceback" not in err and "known examples: 01-jacobi" in err
    assert _report("01-jacobi", "--out", str(project)) == 2
    assert_one_line_error(capsys.readouterr().err, "is a folder")


def test_out_dash_writes_markdown_to_stdout(project, capsys):
    assert _report("01-jacobi", "--format", "md", "--out", "-") == 0
    out = capsys.readouterr().out
    assert out.startswith("# weanj report: ") and "| `01-jacobi` |" in out


# --- benchmark plots ------------------------------------------------------------------------


def _bench_record(variant, n, K, *, sweep="n", device="cpu", spread=True):
    forward = 1e-4 * n * (2 if "rb" in variant else 1)
    record = bench_record(
        variant,
        n,
        K,
        device=device,
        sweep=sweep,
        forward_s=forward,
        grad_s=3 * forward,
        compile_s=0.4,
        peak_mem_bytes=4096 * n * n,
        samples=5,
    )
    if spread:
        record["spread"] = {
            "forward_s": [0.8 * forward, 1.5 * forward],
            "grad_s": [2.5 * forward, 4 * forward],
        }
    return record


def test_bench_figures_colour_families_and_show_the_spread(project):
    from matplotlib.colors import rgb_to_hsv
    from matplotlib.container import ErrorbarContainer

    from weanj import write_results
    from weanj._io._bench import load_results
    from weanj._places import places
    from weanj._registry import catalog
    from weanj._report._bench_plots import figures, styles

    variants = ("jax-lex", "kernex-lex", "jax-rb", "kernex-rb")
    records = [_bench_record(v, n, K) for v in variants for n in (8, 16, 32) for K in (10, 40)]
    write_results("02-gauss-seidel", "jax", "cpu", records, env={"note": "test"})
    cat = catalog("02-gauss-seidel")
    stored, problems = load_results(cat.example, places())  # as plot and report read them
    assert problems == [] and len(stored) == len(records)
    style = styles(cat, stored)
    hue = {v: rgb_to_hsv(style[v][0][:3])[0] for v in variants}
    assert abs(hue["jax-lex"] - hue["kernex-lex"]) < 0.03  # one family: one hue ...
    assert abs(hue["jax-rb"] - hue["kernex-rb"]) < 0.03
    assert abs(hue["jax-lex"] - hue["jax-rb"]) > 0.2  # ... another family: another
    assert style["jax-lex"][1] != style["kernex-lex"][1]  # members differ by marker
    drawn = figures(cat, stored)
    stems = {f.stem for f in drawn}
    # Two K values: a figure each (named and titled by K), never one legend of both.
    assert {"time_vs_n_K10", "time_vs_n_K40", "memory_vs_n_K10", "memory_vs_n_K40"} <= stems
    for f in drawn:
        (legend,) = f.figure.legends
        assert len(legend.get_texts()) == len(variants)
        assert "K = 10" in f.title or "K = 40" in f.title
    time_fig = next(f for f in drawn if f.stem == "time_vs_n_K10").figure
    assert (
        "medians of 5 samples per point; bars: fastest to slowest sample"
        in time_fig._suptitle.get_text()
    )
    forward_axes = time_fig.axes[0]
    assert sum(isinstance(c, ErrorbarContainer) for c in forward_axes.containers) == len(variants)
    assert forward_axes.get_ylabel() == "median forward (loss) time [ms]"  # the table's unit
    # The bars span the fastest to the slowest sample, in ms.
    bars = next(c for c in forward_axes.containers if c.get_label() == "jax-lex")
    segments = bars.lines[2][0].get_segments()
    low, high = segments[0][:, 1]
    assert np.isclose(low, 0.8 * 1e-4 * 8 * 1e3) and np.isclose(high, 1.5 * 1e-4 * 8 * 1e3)


def test_bench_records_keep_their_spread_and_the_page_draws_them(project):
    from weanj._cli import main

    args = [
        "bench",
        "01-jacobi",
        "--variants",
        "jax-jacobi",
        "--ns",
        "4",
        "8",
        "--K",
        "2",
        "--samples",
        "3",
        "--memory-Ks",
    ]
    assert main(args) == 0
    (r, *_) = json.loads((project / "results/01-jacobi/bench/jax-cpu.json").read_text())["records"]
    for field in ("forward_s", "grad_s"):
        low, high = r["spread"][field]
        assert 0 < low <= r[field] <= high
    out = project / "r.html"
    assert _report("01-jacobi", "--out", str(out)) == 0
    page = assert_self_contained(out.read_text(encoding="utf-8"))
    assert page.imgs_in.get("01-jacobi::bench", 0) >= 4  # time, ratio, compile, memory
    assert "01-jacobi::bench::time_vs_n" in page.ids


def test_pictures_only_for_what_matters(project):
    """No failure: the agreeing pair of the largest error and the family references
    (not every pair against a recorded reference, as `diff --plot` once drew)."""
    import weanj
    from weanj._report._page import _pictures

    ej = weanj.diff("02-gauss-seidel")["02-gauss-seidel"]  # the recorded references only
    chosen, left = _pictures(ej)
    assert [j.case for j in chosen] == ["02-gauss-seidel::info::recorded/jax-lex~recorded/jax-rb"]
    assert left == 0


# --- the new verdicts on the page: faults, not compared, unavailable, zeros -----------------

FAULTS = "98-faults"
ZERO = "99-zero"


@pytest.fixture(scope="module")
def checked_root(tmp_path_factory):
    """The project root (`$WEANJ_ROOT`, a temporary folder) of the two examples below, for
    the tests of this module that read their check (they write only their own pages)."""
    root = tmp_path_factory.mktemp("verdicts")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        yield root


@pytest.fixture(scope="module")
def verdicts(checked_root):
    """Two examples, checked in both dtypes, once for the module's tests of them:
    `98-faults` with two correct variants, two at fault (one raises inside the kernel, one
    returns a vector loss) and one unavailable (it needs a module that does not exist);
    `99-zero`, whose reference gradient is all zeros (x == y), with `jax-zwrong` off by
    1e-9 there and its loss by 1e-15 (the reference loss is 0), in absolute terms."""
    import jax.numpy as jnp

    import weanj
    from weanj import _registry

    def xy(seed):
        rng = np.random.default_rng(seed)
        return {"x": rng.standard_normal(6), "y": rng.standard_normal(6)}

    ex = weanj.register_example(weanj.Example(name=FAULTS, arrays=("x", "y"), wrt="x", generate=xy))
    weanj.jax_variant(ex, "jax-a", family="f", loss=lambda x, y: jnp.sum((x - y) ** 2))
    weanj.jax_variant(ex, "jax-b", family="f", loss=lambda x, y: jnp.sum(x * x - 2 * x * y + y * y))

    @weanj.jax_variant(ex, "jax-raises", family="f")
    def raises(x, y):
        raise ValueError("the kernel broke")

    weanj.jax_variant(ex, "jax-vector", family="f", loss=lambda x, y: (x - y) ** 2)
    weanj.jax_variant(
        ex, "jax-gone", family="f", requires=("no_such_module_of_weanj_tests",),
        loss=lambda x, y: jnp.sum((x - y) ** 2),
    )  # fmt: skip
    zero = weanj.register_example(
        weanj.Example(
            name=ZERO, arrays=("x", "y"), wrt="x",
            generate=lambda seed: {"x": np.ones(6), "y": np.ones(6)},
        )
    )  # fmt: skip
    weanj.jax_variant(zero, "jax-z", family="z", loss=lambda x, y: jnp.sum((x - y) ** 2))
    weanj.jax_variant(zero, "jax-zwrong", family="z", grad=lambda x, y: 1e-9 * x)(
        lambda x, y: jnp.sum((x - y) ** 2) + 1e-15
    )
    for name in (FAULTS, ZERO):
        weanj.write_inputs(name)
    judgement = weanj.check([FAULTS, ZERO], say=lambda line: None)
    yield judgement
    for name in (FAULTS, ZERO):
        _registry.unregister_example(name)


def test_a_variant_at_fault_is_shown_once_with_its_line_and_command(verdicts, checked_root):
    from weanj import Verdict

    out = checked_root / "r.html"
    assert _report(FAULTS, ZERO, "--out", str(out)) == 0
    page = assert_self_contained(out.read_text(encoding="utf-8"))
    ej = verdicts[FAULTS]
    faults = ej.faults
    assert set(faults) == {"jax-raises", "jax-raises@float32", "jax-vector", "jax-vector@float32"}
    first = {row[0]: row for row in page.tables[0][1:]}
    assert first[FAULTS][1] == ej.state == "error"  # the judge's verdict of the example
    what = first[FAULTS][2]
    for name in ("jax-raises", "jax-vector"):
        j = faults[name]  # the judgement's own line and command, once each (not per dtype)
        line = f"{name}: error: {j.reason} (reproduce: `{j.command}`)"
        assert what.count(line) == 1, what
        assert j.command == f"weanj run {FAULTS} {name}"
        assert what.count(f"{name}@float32") == 0
    assert "jax-a ·" not in what and "jax-b ·" not in what  # the correct ones never accused
    table = next(t for t in page.tables if t[0][0] == "variant" and "jax-raises" in str(t))
    rows = {row[0]: dict(zip(table[0], row, strict=True)) for row in table[1:]}
    for name in ("jax-raises", "jax-vector"):
        assert rows[name]["verdict"] == "error"
        assert rows[name]["same-family pairs"] == "not compared"
        assert rows[name]["Taylor (min rate)"] == rows[name]["jvp (rel. error)"] == "not compared"
        assert rows[name]["note"].startswith(faults[name].reason[:60])
    assert rows["jax-gone"]["verdict"] == "unavailable"
    assert rows["jax-gone"]["float32 (max rel.)"] == "unavailable"
    assert "no_such_module_of_weanj_tests" in page.text(FAULTS)
    assert rows["jax-a"]["same-family pairs"] == rows["jax-b"]["same-family pairs"] == "ok ×1"
    # The cases not compared, counted once, as the judgement has them.
    blocked = {j.case for j in ej.judgements if j.blocked_by}
    assert blocked and all(ej.by_case()[c].verdict == Verdict.SKIPPED for c in blocked)
    assert f"Not compared: {len(blocked)} case(s) with jax-raises, jax-vector" in page.text(FAULTS)
    # The Markdown summary says the same, each fault once in the failures.
    assert _report(FAULTS, "--format", "md", "--out", str(checked_root / "r.md")) == 0
    md = (checked_root / "r.md").read_text(encoding="utf-8")
    for name in ("jax-raises", "jax-vector"):
        bullets = [x for x in md.splitlines() if x.startswith(f"- `{name}`: error: ")]
        assert len(bullets) == 1 and f"(reproduce: `weanj run {FAULTS} {name}`)" in bullets[0]
    assert f"- not compared: {len(blocked)} case(s) with `jax-raises`, `jax-vector`" in md
    assert "- unavailable `jax-gone`: " in md


def test_an_all_zero_reference_is_shown_in_absolute_terms(verdicts, checked_root):
    from weanj import Verdict
    from weanj._report._lines import ulp_text

    out = checked_root / "r.html"
    assert _report(ZERO, "--out", str(out)) == 0
    text = out.read_text(encoding="utf-8")
    page = assert_self_contained(text)
    # (the pictures' base64 bytes aside: any three letters turn up there by chance)
    words = re.sub(r"data:[a-z/+]+;base64,[A-Za-z0-9+/=]+", "", text)
    assert "NaN" not in words and "Inf" not in words.replace("Info", "")
    j = verdicts[ZERO].by_case()[f"{ZERO}::z::jax-z~jax-zwrong"]
    c = j.comparison
    assert j.verdict == Verdict.FAIL and c.reference_zero and c.max_rel is None
    assert c.max_abs == pytest.approx(1e-9, rel=1e-12)  # |Δ| = 1e-9·x, x = 1
    first = {row[0]: row for row in page.tables[0][1:]}[ZERO][2]
    # Two members, one failing pair: the one that also fails its own jvp check is named.
    assert "jax-zwrong · array x: FAIL: differs from jax-z, reference is all zeros; " in first
    assert "jax-z · array x: FAIL" not in first, first
    assert f"max|Δ| = {c.max_abs:.2e}" in first and "at numpy (0,)" in first
    pairs = next(t for t in page.tables if t[0][:2] == ["reference", "other"])
    row = next(dict(zip(pairs[0], r, strict=True)) for r in pairs[1:] if r[1] == "jax-zwrong")
    assert row["max|Δ|"] == f"{c.max_abs:.2e}"
    assert row["max|Δ|/max|g_ref|"].startswith("reference all zeros")
    assert f"noise floor {c.grad_floor:.2e}" in row["max|Δ|/max|g_ref|"]
    # The reference loss is 0: the loss in absolute terms too.
    assert c.loss_rel is None and c.loss_abs == pytest.approx(1e-15, rel=1e-6)
    assert row["|ΔL|/|L|"] == f"|ΔL| {c.loss_abs:.2e} (L_ref = 0)"
    # No ULP figure from a reference of zeros (4.5e18 ULP from about zero says nothing);
    # elsewhere ULPs in one form, as `_lines.ulp_text` writes them.
    assert c.reference_near_zero and c.ulp > 10**18 and row["ULP"] == "reference ≈ 0"
    ulps = [r[pairs[0].index("ULP")] for t in page.tables if t[0][:2] == ["reference", "other"]
            for r in t[1:]]  # fmt: skip
    assert ulps and all(
        re.fullmatch(r"\d{1,5} ULP|\d\.\de\d+ ULP|—|reference ≈ 0", u) for u in ulps
    ), ulps
    assert ulp_text(12) == "12 ULP" and ulp_text(4.5e18) == "4.5e18 ULP"


# --- one render path: the live judgement and its check.json ---------------------------------


def test_check_json_reads_back_the_judgement_the_check_returned(verdicts, checked_root):
    """check.json is the judgement's serialisation: read back, every case of each example
    is the live one, field for field (the numbers behind it included), and so are the
    subjects' provenance, what was skipped or unavailable, and when it was judged."""
    import dataclasses

    from weanj._places import places
    from weanj._registry import catalog
    from weanj._report._verdicts_file import read_check

    for name in (FAULTS, ZERO):
        live = verdicts[name]
        found = read_check(catalog(name), live.inputs, places())
        assert found.state == "current", found.note
        back = found.judgement
        assert type(back) is type(live) and back is not live
        assert [j.case for j in back.judgements] == [j.case for j in live.judgements]
        for a, b in zip(live.judgements, back.judgements, strict=True):
            assert type(b) is type(a)
            for f in dataclasses.fields(a):
                x, y = getattr(a, f.name), getattr(b, f.name)
                if f.name == "expected":
                    assert (x is None) == (y is None) and (x is None or x.to_json() == y.to_json())
                else:
                    assert _same(x, y), (a.case, f.name, x, y)
        assert list(back.subjects) == list(live.subjects)
        for label, g in live.subjects.items():
            h = back.subjects[label]
            assert (h.loss, h.key, h.dtype, h.source, h.seconds) == (
                g.loss, g.key, g.dtype, g.source, g.seconds
            )  # fmt: skip
            for array, values in g.gradients.items():  # from the store file check wrote
                assert np.array_equal(h.gradients[array], values)
        assert (back.skipped, back.unavailable, back.judged_at) == (
            live.skipped, live.unavailable, live.judged_at
        )  # fmt: skip
        assert back.verdict == live.verdict and back.suspects().keys() == live.suspects().keys()


def _same(x, y) -> bool:
    """Equal, NaN equal to NaN, tuples staying tuples, dataclasses field by field."""
    import dataclasses
    import math

    if dataclasses.is_dataclass(x):
        return type(x) is type(y) and all(
            _same(getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x)
        )
    if isinstance(x, float) and math.isnan(x):
        return isinstance(y, float) and math.isnan(y)
    if isinstance(x, (tuple, list)):
        return type(x) is type(y) and len(x) == len(y) and all(map(_same, x, y))
    if isinstance(x, dict):
        return type(y) is dict and x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    return type(x) is type(y) and x == y


def test_the_live_page_and_the_page_from_check_json_are_the_same_bytes(verdicts, checked_root):
    """`weanj.report(judgement=weanj.check(...))` and `weanj report` reading the check
    files that check wrote render one page: byte for byte, in HTML and in Markdown (the
    page's date is the judgement's, not the time of writing)."""
    import weanj

    for fmt in ("html", "md"):
        live, stored = checked_root / f"live.{fmt}", checked_root / f"stored.{fmt}"
        weanj.report([FAULTS, ZERO], out=live, judgement=verdicts)
        assert _report(FAULTS, ZERO, "--out", str(stored)) == 0
        a, b = live.read_bytes(), stored.read_bytes()
        assert a == b
        assert verdicts[FAULTS].judged_at in a.decode()
        # the x64 configuration the runs computed in, as `weanj check` prints it (§2.2)
        from weanj._report._text import x64_lines

        x64 = [line.strip() for line in x64_lines(verdicts[FAULTS])]
        assert x64 and x64[0].startswith("x64 on (") and "jax-a" in x64[0]
        if fmt == "html":
            shown = html.escape(x64[0], quote=False)
        else:
            from weanj._report._md import esc

            shown = f"- {esc(x64[0])}"
        assert shown in b.decode()
        assert "no longer holds what the check judged" not in b.decode()
    # The failing pair's picture, drawn from the gradients check stored, is on both pages.
    assert Page(live.with_suffix(".html").read_text()).imgs_in.get(f"{ZERO}::z::jax-z~jax-zwrong")
    assert "error" in (checked_root / "live.md").read_text()  # a page with something on it
    # The live judgement alone, for the examples it holds (its default).
    assert weanj.report(out=checked_root / "only.html", judgement=verdicts).verdict == "FAIL"
