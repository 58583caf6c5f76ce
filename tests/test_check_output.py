"""`weanj check` is short by default (issue 62, item 6; docs/DESIGN.md §8.2): the gallery,
all ok, in at most 100 lines (stdout and stderr together): each example's table and
verdict, what is expected, what cannot run here said once with its install hint, and the
headline; `-v` shows what agreed (the pairs, the files, the reuse, a progress line per
evaluation).

The built-in examples in a temporary project (`project`), in this process (`weanj_main`).
"""

from __future__ import annotations

import re

import pytest

from .helpers import weanj_main

GALLERY = (
    "01-jacobi",
    "02-gauss-seidel",
    "03-advection",
    "04-tridiagonal",
    "05-deposition",
    "06-signed-grid",
)


HEARTBEAT = re.compile(r"  .+ … \d+ s")


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """`weanj check` of the gallery, then `weanj check -v` (its evaluations reused)."""
    import shutil

    from .conftest import REPO

    root = tmp_path_factory.mktemp("gallery")
    shutil.copytree(REPO / "shared_inputs", root / "shared_inputs")
    for recorded in (REPO / "results").glob("*/recorded"):
        shutil.copytree(recorded, root / recorded.relative_to(REPO))
    short = weanj_main("check", root=root)
    verbose = weanj_main("check", "-v", root=root)
    return short, verbose


def test_the_all_ok_gallery_check_prints_at_most_100_lines(checked):
    short, _ = checked
    assert short.returncode == 0, short.stdout[-3000:] + short.stderr[-3000:]
    out, err = short.stdout.splitlines(), short.stderr.splitlines()
    # the heartbeat of a phase that runs long (`  compiling or running … 4 s`) speaks
    # only where the machine is slow: what is counted is what the check itself prints
    err = [line for line in err if not HEARTBEAT.fullmatch(line)]
    assert len(out) + len(err) <= 100, "\n".join(err + out)
    # what it shows: each example's block and verdict, one progress line per example
    for name in GALLERY:
        assert any(line.startswith(f"== {name} (") for line in out)
        assert any(line.startswith(f"  {name}: ok") for line in out)
    assert [re.sub(r"\d+ evaluation.*", "", line) for line in err] == [
        f"[{i}/6] {name}: " for i, name in enumerate(GALLERY, 1)
    ]
    (overall,) = [line for line in out if line.startswith("overall: ")]
    assert overall.startswith("overall: ok — ")
    # what it leaves to -v: the agreeing pairs, the files read, the reuse per example
    assert not [line for line in out if line.startswith("  pairs (rel")]
    assert not [line for line in out if "file(s) of the store" in line]


def test_what_cannot_run_here_is_said_once_with_its_hint(checked):
    short, _ = checked
    out = short.stdout.splitlines()
    hinted = [line for line in out if "juliaup" in line]
    if not hinted:  # a machine with Julia: nothing to say
        pytest.skip("Julia runs here: no variant is unavailable")
    assert len(hinted) == 1 and hinted[0].startswith("unavailable here: julia-jacobi, ")


def test_without_julia_the_headline_says_what_was_compared_with_nothing_and_why(checked):
    """Without Julia, 03-advection's muscl-minmax family (jax-muscl-minmax and
    julia-muscl-minmax) has one member here: its ok compared nothing, and the headline and
    the example's line say so; every case that did not run did so for want of Julia."""
    short, _ = checked
    out = short.stdout.splitlines()
    if not any("juliaup" in line for line in out):
        pytest.skip("Julia runs here: every family has a member to compare with")
    assert (
        "  03-advection: ok — family muscl-minmax has one member here (julia-muscl-minmax did "
        "not run: no Julia found): nothing to compare jax-muscl-minmax with"
    ) in out
    (overall,) = [line for line in out if line.startswith("overall: ")]
    assert overall.startswith(
        "overall: ok — compared with nothing: 03-advection jax-muscl-minmax (family "
        "muscl-minmax: one member here); JAX only: julia-jacobi, "
    )
    # 8 Julia variants of 6 examples: their runs, pairs and checks, each "no Julia found"
    assert re.search(r", \d+ case\(s\) not run: no Julia found, ", overall), overall
    # the other families compare at least two members each: none is named
    assert sum("nothing to compare" in line for line in out) == 1


def test_verbose_shows_what_the_default_leaves_out(checked):
    short, verbose = checked
    assert verbose.returncode == 0
    out = verbose.stdout.splitlines()
    assert sum(line.startswith("  pairs (rel") for line in out) == len(GALLERY)
    assert sum("file(s) of the store and recorded/ read" in line for line in out) == len(GALLERY)
    assert sum(line.startswith("  evaluations: reused ") for line in out) == len(GALLERY)
    progress = [line for line in verbose.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 62 and all(line.endswith(": reused, ok") for line in progress)
    # every row of the default's tables is in the verbose output too
    rows = [line for line in short.stdout.splitlines() if line.startswith("  jax-")]
    assert rows and all(row.rsplit(" ", 2)[0] in verbose.stdout for row in rows)
