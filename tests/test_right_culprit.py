"""The verdict names the right culprit (issue 52, item 6), in a user's own project.

`51-culprit`, family `f`: `jax-a`, its designated reference (registered first), raises;
`jax-b` and `jax-c` are two correct ports of `L = Σ w·x²`; `jax-d` returns a gradient 1%
off at `x[2]` (wrong in float64, and its float32 run computes the same wrong gradient, so
it matches its own float64 run). Family `g`: `jax-g` and `jax-g-same`, the same function
written twice, the second declared to differ (`weanj.Expected`) although it does not.

- A family whose reference is at fault is judged against its next member that ran, and
  every view says so; every other member's float64 and float32 runs are judged; the
  suspects never blame a member for disagreeing with the broken reference.
- The float32 check compares a variant's float32 run with its own float64 run: `jax-d`'s
  float32 column is `ok`, its family pairs `FAIL` (its error reported once).
- `unexpectedly ok` reads as itself in every view; no number is printed twice in a line.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from .projects import run_here, weanj_here, write_project

CULPRIT = """\
import jax
import jax.numpy as jnp
import numpy as np
import weanj

jax.config.update("jax_enable_x64", True)  # float64 runs compute in float64

ex = weanj.register_example(weanj.Example(
    name="51-culprit", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).uniform(0.5, 1.5, 8)}))
W = np.linspace(1.0, 2.0, 8)


@weanj.jax_variant(ex, "jax-a", family="f")
def broken(x):
    raise ValueError("a broken reference")


@weanj.jax_variant(ex, "jax-b", family="f")
def weighted(x):
    return jnp.sum(jnp.asarray(W, x.dtype) * x**2)


@weanj.jax_variant(ex, "jax-c", family="f")
def dotted(x):
    return jnp.dot(x * x, jnp.asarray(W, x.dtype))


def one_percent_off(x):
    return (2 * jnp.asarray(W, x.dtype) * x).at[2].multiply(1.01)


weanj.jax_variant(ex, "jax-d", family="f", grad=one_percent_off)(weighted)
weanj.jax_variant(ex, "jax-g", family="g", loss=weighted)
weanj.jax_variant(
    ex, "jax-g-same", family="g", loss=dotted,
    expected=weanj.Expected(reason="a planted term", array="x"),
)
"""

EX = "51-culprit"
STAND_IN = "family f: jax-a is at fault (error); family judged against jax-b"


def _case(family: str, what: str) -> str:
    return f"{EX}::{family}::{what}"


@pytest.fixture(scope="module")
def culprit(tmp_path_factory):
    root = write_project(tmp_path_factory.mktemp("culprit"), {"kernels/culprit.py": CULPRIT})
    check = weanj_here(root, "check")
    api = run_here(
        root,
        "import json, weanj\n"
        "j = weanj.check(say=lambda line: None)\n"
        "stored = {f'{v}@{d}': weanj.load_gradient('51-culprit', v, dtype=d)"
        " for v in ('jax-b', 'jax-d') for d in ('float64', 'float32')}\n"
        "print(json.dumps({'verdicts': {c: str(v) for c, v in j.verdicts().items()},"
        " 'html': j._repr_html_(), 'stored': {k: [g.loss, g.gradients['x'].tolist()]"
        " for k, g in stored.items()},"
        " 'x': weanj.load_inputs('51-culprit')['x'].tolist(),"
        " 'info': (lambda i: [list(i.subjects), i.reason])("
        "j['51-culprit'].by_case()['51-culprit::info::jax-a~jax-g'])}))\n",
    )
    assert api.returncode == 0, api.stderr
    diff = weanj_here(root, "diff", EX)
    diff_json = weanj_here(root, "diff", EX, "--json")
    html = weanj_here(root, "report", "--out", "page.html")
    md = weanj_here(root, "report", "--out", "page.md")
    return {
        "root": root,
        "check": check,
        "api": json.loads(api.stdout.strip().splitlines()[-1]),
        "diff": diff,
        "diff_json": json.loads(diff_json.stdout),
        "html": (root / "page.html").read_text() if html.returncode in (0, 1) else html.stderr,
        "md": (root / "page.md").read_text() if md.returncode in (0, 1) else md.stderr,
    }


def _stored(culprit, variant: str, dtype: str = "float64") -> tuple[float, np.ndarray]:
    """A gradient the check stored (read back with `weanj.load_gradient`)."""
    loss, g = culprit["api"]["stored"][f"{variant}@{dtype}"]
    return loss, np.asarray(g)


def test_a_family_whose_reference_raises_is_judged_against_its_next_member(culprit):
    verdicts = culprit["api"]["verdicts"]
    assert culprit["check"].returncode == 1
    # the broken reference: its runs are its fault, once; its pairs are not compared
    assert verdicts[_case("f", "jax-a::run")] == "error"
    assert verdicts[_case("f", "jax-a@float32::run")] == "error"
    for other in ("jax-b", "jax-c", "jax-d"):
        assert verdicts[_case("f", f"jax-a~{other}")] == "skipped"
    # every other member's float64 and float32 runs are judged (none "not compared")
    for v in ("jax-b", "jax-c", "jax-d"):
        assert verdicts[_case("f", f"{v}::run")] == "ok"
        assert verdicts[_case("f", f"{v}@float32::run")] == "ok"
        assert verdicts[_case("f", f"{v}~{v}@float32")] == "ok"
    assert verdicts[_case("f", "jax-b~jax-c")] == "ok"
    # across families too: family f by jax-b, the member it was judged against
    assert verdicts[f"{EX}::info::jax-a~jax-g"] == "info"
    assert culprit["api"]["info"] == [
        ["jax-b", "jax-g"],
        "jax-a is at fault, jax-b stands in for it",
    ]
    assert verdicts[_case("f", "jax-b~jax-d")] == "FAIL"
    assert verdicts[_case("f", "jax-c~jax-d")] == "FAIL"
    # the premise of those verdicts, from the stored gradients, apart from the judge:
    # b and c are 2·w·x; d is 1% off at x[2] (far beyond 1e-11·max|g|)
    _, gb = _stored(culprit, "jax-b")
    _, gd = _stored(culprit, "jax-d")
    x = np.asarray(culprit["api"]["x"])
    np.testing.assert_allclose(gb, 2 * np.linspace(1.0, 2.0, 8) * x, rtol=1e-14)
    assert abs(gd[2] - gb[2]) / np.abs(gb).max() > 1e-3
    np.testing.assert_array_equal(np.delete(gd, 2), np.delete(gb, 2))


def test_every_view_says_which_member_the_family_was_judged_against(culprit):
    check, diff = culprit["check"].stdout, culprit["diff"].stdout
    assert f"  {STAND_IN}" in check.splitlines()
    assert f"  {STAND_IN}" in diff.splitlines()
    refs = culprit["diff_json"]["references"]  # (one example: its judgement alone)
    assert refs == [
        {
            "family": "f",
            "designated": "jax-a",
            "state": "at fault (error)",
            "judged_against": "jax-b",
            "line": STAND_IN,
        }
    ]
    assert STAND_IN in culprit["html"] and STAND_IN in culprit["md"]
    assert STAND_IN in culprit["api"]["html"]


def test_the_suspects_never_blame_a_member_for_the_broken_reference(culprit):
    lines = culprit["check"].stdout.splitlines()
    at = lines.index("suspects (the judge's most likely wrong variants, per failing family):")
    named = [line for line in lines[at + 1 :] if line.startswith(f"  {EX} family")]
    assert len(named) == 1 and named[0].startswith(
        f"  {EX} family f: jax-d (FAIL vs jax-b: x); look closer: `weanj diff {EX}`"
    )


def _row(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"  {label} "))


def test_a_port_wrong_in_float64_has_an_ok_float32_column_and_a_failing_family(culprit):
    loss64, g64 = _stored(culprit, "jax-d")
    loss32, g32 = _stored(culprit, "jax-d", "float32")
    # the premise: its float32 run matches its own float64 run within the float32 policy
    assert abs(loss32 - loss64) <= 1e-5 * abs(loss64)
    assert np.abs(g32 - g64).max() <= 1e-4 * np.abs(g64).max()
    row = _row(culprit["check"].stdout, "jax-d")
    assert re.search(r" ok \d\.\de[-+]\d\d +FAIL vs 2 of 2 ", row), row
    assert culprit["api"]["verdicts"][_case("f", "jax-d~jax-d@float32")] == "ok"
    # the error is the family pairs' alone: no float32 failure line
    failures = [line for line in culprit["check"].stdout.splitlines() if "@float32" in line]
    assert not any(": FAIL" in line for line in failures)


def test_a_float32_run_whose_own_float64_run_is_at_fault_is_not_compared_naming_it(culprit):
    data = culprit["diff_json"]
    skipped = {j["case"]: j for j in data["skipped"]}
    blocked = skipped[_case("f", "jax-a~jax-a@float32")]
    assert blocked["blocked_by"] == "jax-a"
    assert blocked["reason"] == "not compared: jax-a is in error"


def test_unexpectedly_ok_reads_as_itself_in_every_view(culprit):
    verdicts = culprit["api"]["verdicts"]
    assert verdicts[_case("g", "jax-g~jax-g-same")] == "unexpectedly ok"
    check = culprit["check"].stdout
    for label in ("jax-g", "jax-g-same"):
        row = _row(check, label)
        assert "unexpectedly ok vs" in row and "FAIL" not in row, row
    for page in (culprit["html"], culprit["api"]["html"]):  # (family f says 2 of 2, ×1)
        assert "ok ×0; FAIL vs" not in page and "FAIL vs 1 of 1" not in page
    # coloured as the failure it is (no port is the news: the judge names no suspect)
    for page in (culprit["html"], culprit["api"]["html"]):
        assert re.search(r'<td class="fail"[^>]*>ok ×0; unexpectedly ok vs', page)


NUMBER = re.compile(r"(?<![\w.])\d\.\d+e[-+]\d+")


def test_no_number_is_printed_twice_in_one_line(culprit):
    lines = [
        line
        for text in (culprit["check"].stdout, culprit["diff"].stdout)
        for line in text.splitlines()
    ]
    failing = [line for line in lines if "unexpectedly ok" in line or ": FAIL" in line]
    assert any("jax-g~jax-g-same: unexpectedly ok" in line for line in failing)
    for line in failing:
        values = [float(n) for n in NUMBER.findall(line) if float(n) != 0]
        rounded = [float(f"{v:.1e}") for v in values]
        assert len(rounded) == len(set(rounded)), line
