"""`weanj report` and `weanj plot` against hostile files and paths (issue 34's battery):
they never replace weanj's data or a device, never write outside the project, escape
every name in Markdown, and turn a malformed check or benchmark file into one line and
the rest of the page, never a traceback.

Everything runs in-process on the built-in project (`project`: a temporary root) or on a
throwaway example registered for the test, through the command line's `main`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj import _registry
from weanj._cli import main
from weanj._io import _bench as bench_files
from weanj._places import places

from .helpers import assert_one_line_error, bench_record
from .test_report import Page, assert_github_tables, assert_self_contained


def _report(*args) -> int:
    return main(["report", *args])


# --- --out never replaces weanj's data, a device or a link ---------------------------------


def _weanj_data(root: Path) -> dict[str, Path]:
    """A file of each kind `--out` must never replace: a store file, a recorded reference,
    the shared inputs, a check file (and a link to the store file)."""
    recorded = sorted((root / "results" / "01-jacobi" / "recorded").glob("*.h5"))[0]
    store = root / "results" / "01-jacobi" / "gradients" / "jax-jacobi.h5"
    store.parent.mkdir(parents=True)
    store.write_bytes(recorded.read_bytes())
    check = root / "results" / "01-jacobi" / "check.json"
    check.write_text('{"weanj_check": 1}\n')
    link = root / "link-to-the-store.html"
    link.symlink_to(store)
    return {
        "store": store,
        "recorded": recorded,
        "inputs": root / "shared_inputs" / "01-jacobi.h5",
        "check": check,
        "link": link,
    }


@pytest.mark.parametrize("kind", ["store", "recorded", "inputs", "check", "link"])
@pytest.mark.parametrize("fmt", ["html", "md"])
def test_out_never_replaces_weanj_s_data(project, capsys, kind, fmt):
    target = _weanj_data(project)[kind]
    before = target.read_bytes()
    assert _report("01-jacobi", "--format", fmt, "--out", str(target)) == 2
    out, err = capsys.readouterr()
    assert not out
    assert_one_line_error(
        err, f"refusing to write the report to {target}: it is ", "choose another"
    )
    assert target.read_bytes() == before
    assert target.is_symlink() == (kind == "link")
    assert not list(target.parent.glob(".*.tmp"))


def _device(tmp_path: Path) -> Path:
    """A character device of the test's own (the null device's numbers), or a skip saying
    why: making one needs root (mknod)."""
    node = tmp_path / "null-device"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError) as e:
        pytest.skip(f"cannot make a character device here ({e}): needs root")
    return node


def test_out_onto_a_device_or_a_link_to_one_is_refused(project, capsys, tmp_path):
    device = _device(tmp_path)
    link = tmp_path / "to-the-device.html"
    link.symlink_to(device)
    for target in (device, link):
        assert _report("01-jacobi", "--out", str(target)) == 2
        assert_one_line_error(capsys.readouterr().err, f"{target}", "not a regular file")
    assert stat.S_ISCHR(os.stat(device, follow_symlinks=False).st_mode)  # still the device
    assert link.is_symlink() and os.readlink(link) == str(device)  # still the link
    # The null device itself, through a link to it: the link stays, /dev/null stays.
    null_link = tmp_path / "to-dev-null.md"
    null_link.symlink_to("/dev/null")
    assert _report("01-jacobi", "--out", str(null_link)) == 2
    capsys.readouterr()
    assert null_link.is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_out_onto_a_link_to_a_file_replaces_the_link(project, capsys, tmp_path):
    """weanj never writes through a link (docs/files.md, "Links"): the link becomes the
    page, the file it named stays as it was."""
    page = tmp_path / "pages" / "report.html"
    page.parent.mkdir()
    page.write_text("an older page")
    link = tmp_path / "latest.html"
    link.symlink_to(page)
    assert _report("01-jacobi", "--out", str(link)) == 0
    assert capsys.readouterr().out.startswith(f"wrote {link} (")
    assert not link.is_symlink() and page.read_text() == "an older page"
    text = link.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert [row[0] for row in Page(text).tables[0][1:]] == ["01-jacobi"]


# --- hostile names: escaped in Markdown (and HTML) -------------------------------------------

HOSTILE = "97-hostile"
TITLE = "`title` <img src=x onerror=alert(0)>"
FAMILY = "f`<img src=x onerror=alert(1)>`"
RAISED = "boom ``x`` <img src=x onerror=alert(2)> | [link](http://x.invalid)"


def code_spans(md: str) -> tuple[list[str], str]:
    """CommonMark's code spans of `md` (their contents, `\\|` read as `|` as in GitHub's
    tables) and the text outside them with backslash escapes removed. A backtick run
    that closes nothing is left in the text (where the caller sees it)."""
    spans, outside, i = [], [], 0
    while i < len(md):
        ch = md[i]
        if ch == "\\" and i + 1 < len(md) and md[i + 1] != "\n":
            i += 2  # an escaped character: text, never markup
            continue
        if ch == "`":
            run = len(re.match(r"`+", md[i:]).group())
            close = re.compile(rf"(?<!`)`{{{run}}}(?!`)")
            m = close.search(md, i + run)
            if m is None:
                outside.append(md[i : i + run])
                i += run
                continue
            content = md[i + run : m.start()]
            if len(content) > 1 and content[0] == content[-1] == " " and content.strip():
                content = content[1:-1]
            spans.append(content.replace("\\|", "|"))
            i = m.end()
            continue
        outside.append(ch)
        i += 1
    return spans, "".join(outside)


@pytest.fixture
def hostile(project):
    """An example whose title and family hold markup, and a variant raising with markup in
    its message; checked (its check file written), its agreeing pair in the store."""
    import jax.numpy as jnp

    ex = weanj.register_example(
        weanj.Example(
            name=HOSTILE,
            title=TITLE,
            arrays=("x",),
            wrt="x",
            generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(5)},
        )
    )
    weanj.jax_variant(ex, "jax-a", family=FAMILY, loss=lambda x: jnp.sum(x**2))
    # A hand-written gradient one rounding away from jax-a's: they agree, and not bitwise.
    weanj.jax_variant(ex, "jax-b", family=FAMILY, grad=lambda x: 2.0000000000000004 * x)(
        lambda x: jnp.sum(x**2)
    )

    @weanj.jax_variant(ex, "jax-raises", family=FAMILY)
    def raises(x):
        raise ValueError(RAISED)

    weanj.write_inputs(HOSTILE)
    judgement = weanj.check(HOSTILE, dtype="float64", say=lambda line: None)
    assert judgement[HOSTILE].run_of("jax-raises").verdict == weanj.Verdict.ERROR
    yield ex
    _registry.unregister_example(HOSTILE)


def test_markdown_escapes_every_name(hostile, capsys):
    assert _report(HOSTILE, "--format", "md", "--out", "-") == 0
    md = capsys.readouterr().out
    assert_github_tables(md)
    spans, outside = code_spans(md)
    # Outside code spans, nothing starts markup: every < > ` [ ] | was escaped.
    assert not re.search(r"[<>`\[\]]", outside), re.findall(r".{30}[<>`\[\]].{30}", outside)
    # The names are there, verbatim, as code (where no HTML is rendered).
    assert HOSTILE in spans and FAMILY not in outside
    assert "weanj run 97-hostile jax-raises" in spans  # the fault's command, once
    assert sum("jax-raises raised ValueError: boom" in line for line in md.splitlines()) == 2
    assert "**error**" in md  # the variant's row: its verdict, bold as every failure
    # The HTML page escapes them too: no element comes from a name.
    assert _report(HOSTILE, "--out", str(places().root / "r.html")) == 0
    html = (places().root / "r.html").read_text(encoding="utf-8")
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(2)&gt;" in html


# --- malformed check files ----------------------------------------------------------------------


def _corrupt(data: dict, how: str) -> None:
    """Change the judgement a check file holds as a hand, or another version, might."""
    judged = data["judgement"]
    cases = judged["judgements"]
    taylor = next(j for j in cases if j["kind"] == "taylor" and j.get("taylor"))
    jvp = next(j for j in cases if j["kind"] == "jvp" and j.get("directional"))
    if how == "no-case":
        del taylor["case"]
    elif how == "unknown-verdict":
        jvp["verdict"] = {"$verdict": "maybe"}
    elif how == "rates-as-text":
        taylor["taylor"]["directions"]["$tuple"][0]["remainders"] = {"$tuple": ["fast", "2.0"]}
    elif how == "jvp-error-as-text":
        jvp["directional"]["forward"] = "tiny"
    elif how == "seconds-as-text":
        judged["subjects"][0]["seconds"] = "slow"
    elif how == "unknown-class":
        taylor["taylor"]["$class"] = "os.system"
    elif how == "info-by-hand":  # a kink mask that is not its counts and why
        taylor["info"] = {"$dict": [["masked", 5]]}
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    "how",
    [
        "no-case",
        "unknown-verdict",
        "rates-as-text",
        "jvp-error-as-text",
        "seconds-as-text",
        "unknown-class",
        "info-by-hand",
    ],
)
def test_a_malformed_check_file_costs_its_judgement_not_the_page(hostile, capsys, how):
    """A check file whose judgement is not of the form `weanj check` writes is refused
    whole, in one line naming the command that rewrites it: the report never shows a
    judgement it cannot read back, and the page is written all the same."""
    path = places().check_file(HOSTILE)
    data = json.loads(path.read_text())
    _corrupt(data, how)
    path.write_text(json.dumps(data))
    out = places().root / "r.html"
    assert _report(HOSTILE, "--out", str(out)) == 0
    said, err = capsys.readouterr()
    assert "Traceback" not in err and said.startswith(f"wrote {out} (")
    page = assert_self_contained(out.read_text(encoding="utf-8"), images=False)
    summary = {row[0]: row for row in page.tables[0][1:]}[HOSTILE]
    assert summary[1] == "not checked"
    assert f"{path} is unreadable (" in summary[3]
    assert f"); rerun `weanj check {HOSTILE}`" in summary[3]
    assert not any(t[0][0] == "variant" for t in page.tables)  # no verdict of its own
    assert _report(HOSTILE, "--format", "md", "--out", "-") == 0
    md, err = capsys.readouterr()
    assert "Traceback" not in err and "is unreadable (" in md
    assert_github_tables(md)


# --- benchmark files: mathtext, too many records, paths from records -------------------------


def _bench_records(variant: str = "jax-jacobi", **changes) -> list[dict]:
    return [
        bench_record(
            variant,
            n,
            10,
            device="cpu",
            forward_s=1e-4 * n,
            grad_s=3e-4 * n,
            compile_s=0.5,
            peak_mem_bytes=1024 * n * n,
        )
        | changes
        for n in (8, 16, 32)
    ]


def _write_bench(root: Path, records: list[dict], name: str = "jax-cpu.json") -> Path:
    """A benchmark file as written by hand (not through weanj's checks)."""
    path = root / "results" / "01-jacobi" / "bench" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"environment": {}, "records": records}))
    return path


# Two dollars: matplotlib would parse what lies between them as mathtext, and fail.
MATHTEXT = r"jax-$\nosuchmacro{$"


def test_a_variant_named_like_mathtext_is_drawn_as_text(project, capsys):
    _write_bench(project, _bench_records() + _bench_records(MATHTEXT))
    assert main(["plot", "01-jacobi"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    plots = project / "results" / "01-jacobi" / "plots"
    assert {p.stem for p in plots.glob("*.png")} >= {"time_vs_n", "memory_vs_n"}
    assert _report("01-jacobi", "--out", str(project / "r.html")) == 0
    capsys.readouterr()
    page = assert_self_contained((project / "r.html").read_text(encoding="utf-8"))
    assert page.imgs_in.get("01-jacobi::bench", 0) >= 3
    from weanj._registry import catalog
    from weanj._report._bench_plots import figures

    records, _ = bench_files.load_results(weanj.example("01-jacobi"), places())
    drawn = figures(catalog("01-jacobi"), records)
    labels = {t.get_text() for f in drawn for legend in f.figure.legends for t in legend.texts}
    assert MATHTEXT.replace("$", r"\$") in labels  # an escaped dollar: drawn as it is


def test_a_dtype_like_mathtext_or_a_path_is_a_malformed_record(project, capsys, tmp_path):
    outside = tmp_path.parent
    before = sorted(p.name for p in outside.iterdir())
    bad = [
        *_bench_records(dtype=MATHTEXT)[:2],
        *_bench_records(dtype="../../OUTSIDE-plot/x")[:2],
    ]
    path = _write_bench(project, _bench_records() + bad)
    assert main(["plot", "01-jacobi"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    # One warning (a line, continued below it where a long path pushes it past 200 characters).
    assert err.startswith("weanj: warning:") and err.count("weanj: warning:") == 1, err
    warning = assert_one_line_error(err, f"{path}: skipped 4 record(s)")
    assert "field dtype must be float64 or float32" in warning
    plots = project / "results" / "01-jacobi" / "plots"
    written = sorted(p.relative_to(project) for p in project.rglob("*.png"))
    assert written and all(p.parent == plots.relative_to(project) for p in written), written
    assert all(re.fullmatch(r"[a-z_]+(_K\d+)?", p.stem) for p in written), written
    assert not list(project.rglob("*OUTSIDE*")) and not list(outside.rglob("*OUTSIDE*"))
    assert sorted(p.name for p in outside.iterdir()) == before
    assert _report("01-jacobi", "--out", str(project / "r.html")) == 0
    assert "Traceback" not in capsys.readouterr().err
    page = Page((project / "r.html").read_text(encoding="utf-8"))
    missing = {row[0]: row for row in page.tables[0][1:]}["01-jacobi"][3]
    assert "skipped 4 record(s)" in missing


def test_a_benchmark_file_of_too_many_records_is_refused_in_one_line(project, capsys):
    count = 120_000
    assert bench_files.MAX_RECORDS < count
    (record,) = _bench_records()[:1]
    _write_bench(project, [record] * count)
    assert main(["plot", "01-jacobi"]) == 2
    message = assert_one_line_error(capsys.readouterr().err, "jax-cpu.json")
    assert f"holds {count} records, more than the {bench_files.MAX_RECORDS}" in message
    assert not (project / "results" / "01-jacobi" / "plots").exists()
    assert _report("01-jacobi", "--out", str(project / "r.html")) == 0
    assert "Traceback" not in capsys.readouterr().err
    page = Page((project / "r.html").read_text(encoding="utf-8"))
    missing = {row[0]: row for row in page.tables[0][1:]}["01-jacobi"][3]
    assert f"holds {count} records" in missing and "benchmark" in missing


# --- Ctrl-C while the report is written ------------------------------------------------------


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler (a KeyboardInterrupt) while the test runs, whatever the
    runner installed; restored after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_while_the_report_is_written_leaves_no_temporary_file(
    project, capsys, monkeypatch, python_sigint
):
    """A Ctrl-C (a real SIGINT, raised at a moment the test chooses, no clock) just after
    the temporary file is made, and one while the page is written into it: the command
    ends with 130, the earlier page is whole and nothing is left beside it."""
    import tempfile

    import weanj._io._atomic as atomic

    out = project / "results" / "report.html"
    out.parent.mkdir(exist_ok=True)
    out.write_text("the earlier page")
    made = tempfile.mkstemp

    def made_then_interrupted(*args, **kwargs):
        found = made(*args, **kwargs)
        if kwargs.get("dir") == out.parent:
            signal.raise_signal(signal.SIGINT)
        return found

    monkeypatch.setattr(atomic.tempfile, "mkstemp", made_then_interrupted)
    assert _report("01-jacobi") == 130
    assert "weanj: interrupted" in capsys.readouterr().err
    assert out.read_text() == "the earlier page"
    assert sorted(p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")) == []
    monkeypatch.setattr(atomic.tempfile, "mkstemp", made)

    written = Path.write_text

    def interrupted_while_writing(self, text, *args, **kwargs):
        if self.parent == out.parent and self.name.endswith(".tmp"):
            written(self, text[: len(text) // 2], *args, **kwargs)
            signal.raise_signal(signal.SIGINT)
        return written(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", interrupted_while_writing)
    assert _report("01-jacobi") == 130
    capsys.readouterr()
    assert out.read_text() == "the earlier page"
    assert sorted(p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")) == []


EX = "01-jacobi"


def test_a_current_check_file_changed_by_hand_is_unreadable_not_a_traceback(project, capsys):
    """`weanj report` shows a check.json whose key is current: one whose contents are not
    of the form `weanj check` writes is reported as unreadable, and the page is written."""
    key = weanj.read_inputs(EX).key("float64")
    check = project / "results" / EX / "check.json"
    check.write_text(
        json.dumps({"weanj_check": 2, "example": EX, "key": key, "gradients": 5, "checks": [1]})
    )
    assert main(["report", EX, "--out", str(project / "report.md")]) == 0
    page = (project / "report.md").read_text()
    assert "is unreadable" in page and "are not what `weanj check` writes" in page
    capsys.readouterr()
    # The same in the report's data: the check file's state and why.
    done = weanj.report([EX], out=project / "again.md")
    (page,) = done.pages
    assert page.ej is None and page.verdict == "not checked"
    path = project / "results" / EX / "check.json"
    assert page.state == (
        f"{path} is unreadable (its gradients, checks are not what `weanj check` writes); "
        f"rerun `weanj check {EX}`"
    )
    assert page.rows == [] and done.path == project / "again.md"
