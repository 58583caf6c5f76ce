"""`weanj report` opened in a real browser: headless Chromium (Debian's `chromium`
package; the test set-up installs it with `apt-get install -y chromium`, and this module
skips, saying so, where /usr/bin/chromium is absent).

The page: the built-in examples with their recorded references, `01-jacobi` with two
stored variants of which one is wrong at one element, and benchmark records to plot.
Chromium takes a screenshot (not blank: many colours, the FAIL cells' red among them),
dumps the DOM it rendered (the verdict table's text is in it) and writes a network log.
"No request left the file" is asserted on that log: no URL request that the page
initiated (Chromium's own background requests, initiated by no document, are not the
page's); a control page that does refer to the network shows the log would tell.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from .test_report import Page, assert_self_contained

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="no /usr/bin/chromium: install Debian's chromium package (apt-get install -y chromium) "
    "to test the report in a browser",
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
FAIL_RED = (0xF9, 0xD6, 0xD5)  # the page's background of a FAIL cell


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        timeout=180,
        check=False,
    )


def page_requests(netlog: Path) -> list[str]:
    """The http(s) URLs requested on behalf of a document (Chromium's own requests, e.g.
    its clock or account checks, have the initiator "not an origin")."""
    log = json.loads(netlog.read_text())
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    out = []
    for event in log["events"]:
        params = event.get("params") or {}
        if names.get(event["type"]) != "URL_REQUEST_START_JOB":
            continue
        url = str(params.get("url", ""))
        if url.startswith(("http:", "https:")) and params.get("initiator") != "not an origin":
            out.append(url)
    return out


def _wrong_store(project: Path) -> None:
    """`jax-jacobi` in the store as computed, and `jax-jacobi-adjoint` off at theta[3, 4];
    the judge's judgement of that store left as the check file the report renders (what
    `weanj check` leaves: the report judges nothing itself)."""
    import weanj
    from weanj._places import places
    from weanj._report._verdicts_file import write_check_verdicts

    g = weanj.evaluate("01-jacobi", "jax-jacobi")
    weanj.save_gradient("01-jacobi", "jax-jacobi", g.gradients["theta"], loss=g.loss)
    theta = np.array(g.gradients["theta"])
    theta[3, 4] *= 1 + 1e-6
    weanj.save_gradient("01-jacobi", "jax-jacobi-adjoint", theta, loss=g.loss)
    assert write_check_verdicts(list(weanj.diff("01-jacobi")), places())


def _bench(project: Path) -> None:
    from weanj import write_results

    records = [
        {
            "variant": v,
            "device": "cpu",
            "dtype": "float64",
            "N": n * n,
            "n": n,
            "K": 20,
            "sweep": "n",
            "forward_s": 1e-4 * n * f,
            "grad_s": 3e-4 * n * f,
            "compile_s": 0.5,
            "peak_mem_bytes": 2048 * n * n,
            "samples": 5,
            "spread": {
                "forward_s": [0.9e-4 * n * f, 1.2e-4 * n * f],
                "grad_s": [2.8e-4 * n * f, 3.5e-4 * n * f],
            },
        }
        for v, f in (("jax-jacobi", 1), ("jax-jacobi-adjoint", 1.5))
        for n in (16, 32, 64)
    ]
    write_results("01-jacobi", "jax", "cpu", records, env={"note": "written by a test"})


def test_the_page_in_chromium(project, tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    from weanj._cli import main

    _wrong_store(project)
    _bench(project)
    report = tmp_path / "report.html"
    assert main(["report", "--out", str(report)]) == 0
    assert report.stat().st_size < 5 * 2**20
    assert_self_contained(report.read_text(encoding="utf-8"))

    shot = tmp_path / "shot.png"
    r = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", report.as_uri())
    assert shot.is_file(), r.stderr.decode(errors="replace")[-2000:]
    image = PIL.open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, tables, verdict colours: not blank
    assert any(rgb == FAIL_RED for _, rgb in colours), "no FAIL cell visible at the top"

    netlog = tmp_path / "net.json"
    r = chromium(tmp_path, f"--log-net-log={netlog}", "--dump-dom", report.as_uri())
    dom = r.stdout.decode("utf-8")
    rendered = Page(dom)
    first = rendered.tables[0]
    assert first[0][:2] == ["example", "verdict"]
    rows = {row[0]: row for row in first[1:]}
    assert rows["01-jacobi"][1] == "FAIL"
    assert "jax-jacobi-adjoint · array theta: FAIL: differs from jax-jacobi" in rows["01-jacobi"][2]
    others = [rows[name][1] for name in rows if name != "01-jacobi"]
    assert others and all(v in ("ok", "not judged", "not checked") for v in others)
    assert "overall: FAIL" in dom
    assert rendered.imgs_in.get("01-jacobi::jacobi::jax-jacobi~jax-jacobi-adjoint") == 1
    assert rendered.imgs_in.get("01-jacobi::bench", 0) >= 4
    assert page_requests(netlog) == []

    # The control: a page that refers to the network, and the log names its requests.
    control = tmp_path / "control.html"
    control.write_text(
        '<!DOCTYPE html><html><head><link rel="stylesheet" href="https://cdn.invalid/x.css">'
        '</head><body><p>control</p><img src="http://127.0.0.1:9/x.png"></body></html>'
    )
    control_log = tmp_path / "control.json"
    chromium(tmp_path, f"--log-net-log={control_log}", "--dump-dom", control.as_uri())
    assert set(page_requests(control_log)) == {
        "https://cdn.invalid/x.css",
        "http://127.0.0.1:9/x.png",
    }
