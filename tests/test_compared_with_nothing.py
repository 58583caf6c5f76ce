"""Nothing compares nothing in silence (issue 70, item 1; docs/verdicts.md, "Compared with
nothing"): a family-name typo puts a wrong port in a family of one, where its own checks
pass (its gradient is right for its wrong loss) and nothing compares it. Every front end
names that family, with "did you mean", and `weanj check --strict` fails on it.

`40-wave` (family `wave`): `jax-roll` and `jax-pad`, two right ports of a smoothed energy;
`jax-typo` a port that forgets the boundary term, registered as `family="wav"`. Run as a
user runs it (in this process, `weanj_here`, `run_here`; pytest in a fresh process).
"""

from __future__ import annotations

import json

import pytest

from .projects import pytest_weanj_in, run_here, weanj_here, write_project

WAVE = """\
import jax
import jax.numpy as jnp
import numpy as np
import weanj

jax.config.update("jax_enable_x64", True)

ex = weanj.register_example(weanj.Example(
    name="40-wave", arrays=("u", "c"), wrt="u",
    generate=lambda seed: {"u": np.random.default_rng(seed).standard_normal(12),
                           "c": np.random.default_rng(seed + 1).standard_normal(12)}))


@weanj.jax_variant(ex, "jax-roll", family="wave")
def roll(u, c):
    return jnp.sum(c * (jnp.roll(u, -1) - u) ** 2)


@weanj.jax_variant(ex, "jax-pad", family="wave")
def pad(u, c):
    nxt = jnp.concatenate([u[1:], u[:1]])
    return jnp.sum(c * (nxt - u) ** 2)


@weanj.jax_variant(ex, "jax-typo", family="wav")
def typo(u, c):  # the wrap-around term forgotten: wrong, and compared with nothing
    return jnp.sum(c[:-1] * (u[1:] - u[:-1]) ** 2)
"""

LINE = "family wav has one member here, jax-typo: nothing to compare it with; did you mean wave?"
HEADLINE = (
    "compared with nothing: 40-wave jax-typo (family wav: one member here; did you mean wave?)"
)


@pytest.fixture(scope="module")
def wave(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("wave"), {"kernels/wave.py": WAVE})


def _overall(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("overall: ")]
    return line


def test_a_family_typo_is_named_in_the_headline_and_the_examples_line(wave):
    r = weanj_here(wave, "check", "--dtype", "float64")
    assert r.returncode == 0, r.stdout + r.stderr  # its verdicts are all ok: exit unchanged
    assert _overall(r.stdout).startswith(f"overall: ok — {HEADLINE} — 1 example(s)")
    assert f"  40-wave: ok — {LINE}" in r.stdout.splitlines()
    # the right ports compare with each other, and say nothing of the kind
    assert "family wave" not in r.stdout


def test_strict_makes_it_a_failure(wave):
    r = weanj_here(wave, "check", "--dtype", "float64", "--strict")
    assert r.returncode == 1, r.stdout + r.stderr
    said = _overall(r.stdout)
    assert said.startswith(f"overall: FAIL — {HEADLINE.replace('nothing:', 'nothing (--strict):')}")
    assert f"  40-wave: FAIL — {LINE}" in r.stdout.splitlines()


def test_the_json_lines_check_json_and_the_report_say_it(wave):
    r = weanj_here(wave, "check", "--dtype", "float64", "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    (example,) = [e for e in events if e["event"] == "example"]
    (run,) = [e for e in events if e["event"] == "run"]
    expected = {
        "example": "40-wave",
        "family": "wav",
        "members": ["jax-typo"],
        "absent": [],
        "did_you_mean": "wave",
        "line": LINE,
    }
    assert example["alone"] == [expected] and run["alone"] == [expected]
    assert run["ok"] is True and run["strict"] is False and HEADLINE in run["headline"]
    written = json.loads((wave / "results" / "40-wave" / "check.json").read_text())
    assert written["alone"] == [expected]
    for page in ("page.md", "page.html"):
        assert weanj_here(wave, "report", "--out", page, "--force").returncode == 0
        text = (wave / page).read_text()
        assert LINE in text and "compared with nothing: 40-wave jax-typo" in text, page


def test_the_notebooks_judgement_says_it(wave):
    code = (
        "import weanj\n"
        "j = weanj.check(dtype='float64', save=False, say=lambda l: None)\n"
        "print(j.ok, [a.line for a in j.alone])\n"
        "print(repr(j))\n"
        "print(j._repr_html_())\n"
    )
    r = run_here(wave, code)
    assert r.returncode == 0, r.stderr
    first, shown, page = r.stdout.split("\n", 2)
    assert first == f"True {[LINE]}"
    assert HEADLINE in shown
    assert LINE in page and HEADLINE in page


def test_pytest_weanj_says_it_in_its_summary(wave):
    r = pytest_weanj_in(wave, "-q", "-k", "40-wave and run")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"weanj: 40-wave: {LINE}" in r.stdout.splitlines()


def test_pytest_weanj_strict_fails_the_run_on_it(wave):
    """`--weanj-strict` is `weanj check --strict`'s option, declared once
    (`_check_options`): every item passes, the run fails, saying why."""
    r = pytest_weanj_in(wave, "-q", "-k", "40-wave and run", "--weanj-strict")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"weanj: 40-wave: {LINE} (--weanj-strict: the run fails)" in r.stdout.splitlines()
    assert " failed" not in r.stdout  # no item failed: the run did


def test_a_family_whose_other_members_cannot_run_here_is_named_without_a_guess():
    from weanj._judge._alone import alone
    from weanj._judge._verdict import CaseJudgement, ExampleJudgement
    from weanj._model._verdicts import CaseKind, Verdict

    class Named:
        name = "03-advection"

    def run(label, family, verdict, reason=""):
        case = f"03-advection::{family}::{label}::run"
        return CaseJudgement(case, CaseKind.RUN, verdict, family, (label,), reason=reason)

    def pair(a, b, family, verdict):
        case = f"03-advection::{family}::{a}~{b}"
        return CaseJudgement(case, CaseKind.PAIR, verdict, family, (a, b), array="c0")

    ej = ExampleJudgement(Named(), None)
    ej.judgements = [
        run("jax-muscl", "muscl", Verdict.OK),
        run("kernex-muscl", "muscl", Verdict.OK),
        run("jax-muscl-minmax", "muscl-minmax", Verdict.OK),
        run("julia-muscl-minmax", "muscl-minmax", Verdict.UNAVAILABLE, "no Julia found (…)"),
        pair("jax-muscl", "kernex-muscl", "muscl", Verdict.OK),
        # its own recorded reference and its float32 run: no other member
        pair("jax-muscl-minmax", "recorded/jax-muscl-minmax", "muscl-minmax", Verdict.OK),
        pair("jax-muscl-minmax", "jax-muscl-minmax@float32", "muscl-minmax", Verdict.OK),
        pair("jax-muscl-minmax", "julia-muscl-minmax", "muscl-minmax", Verdict.SKIPPED),
    ]
    (found,) = alone(ej)
    assert found.line == (
        "family muscl-minmax has one member here (julia-muscl-minmax did not run: no Julia "
        "found): nothing to compare jax-muscl-minmax with"
    )
    assert found.meant is None  # a family of two members is no typo
    # a recorded reference of the other member is a comparison
    ej.judgements.append(
        pair("jax-muscl-minmax", "recorded/julia-muscl-minmax", "muscl-minmax", Verdict.OK)
    )
    assert alone(ej) == []
