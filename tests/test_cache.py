"""The persistent compilation cache's folder, switch and summary line
(`weanj._io._jax_cache`).

The summary's "saved" is an estimate from the folder's ledger of compiled programs
(jax 0.10 stores a compile time of 0 in its entries, so JAX's own saved-time event is
minus the retrieval time): the numbers below are fed as JAX's monitoring events would
be, and the expected line is worked out by hand from the docstring's formula.
"""

from __future__ import annotations

import importlib.metadata as md
import json

import pytest

from weanj._io import _jax_cache as _cache

VERSIONS = f"jax-{md.version('jax')}-jaxlib-{md.version('jaxlib')}"


@pytest.mark.parametrize("off", ["0", "off", "false", "no", " OFF "])
def test_the_cache_can_be_turned_off(monkeypatch, off):
    monkeypatch.setenv(_cache.VARIABLE, off)
    assert _cache.cache_dir() is None


def test_the_folder_is_per_jax_version(monkeypatch, tmp_path):
    monkeypatch.setenv(_cache.VARIABLE, str(tmp_path / "c"))
    assert _cache.cache_dir() == tmp_path / "c" / VERSIONS
    monkeypatch.delenv(_cache.VARIABLE)
    assert _cache.cache_dir(tmp_path) == tmp_path / ".weanj-cache" / VERSIONS


def _clock(compiled_s, retrieval_s, requests, hits) -> _cache.CompileClock:
    c = _cache.CompileClock()
    c._on_duration(_cache.COMPILE_EVENT, compiled_s)
    c._on_duration(_cache.RETRIEVAL_EVENT, retrieval_s)
    for _ in range(requests):
        c._on_event(_cache.REQUEST_EVENT)
    for _ in range(hits):
        c._on_event(_cache.HIT_EVENT)
    return c


def test_a_cold_run_fills_the_ledger_and_a_warm_one_is_estimated_from_it(monkeypatch, tmp_path):
    monkeypatch.setitem(_cache._state, "dir", tmp_path)
    # Cold: 4 cacheable programs, none served: 4 programs, 6.0 s into the ledger.
    cold = _clock(compiled_s=6.0, retrieval_s=0.0, requests=4, hits=0)
    assert cold.summary() == f"compilation 6.0 s, none from the cache ({tmp_path})"
    assert json.loads((tmp_path / _cache.LEDGER).read_text()) == {"programs": 4, "seconds": 6.0}
    # Warm: 3 programs served in 0.3 s, one compiled in 1.7 s (2.0 - 0.3): the ledger
    # becomes 5 programs, 7.7 s; saved ≈ 3 × 7.7/5 − 0.3 = 4.32 s.
    warm = _clock(compiled_s=2.0, retrieval_s=0.3, requests=4, hits=3)
    assert warm.summary() == (
        f"compilation 2.0 s, 3 program(s) from the compilation cache, saving about 4.3 s "
        f"({tmp_path})"
    )
    ledger = json.loads((tmp_path / _cache.LEDGER).read_text())
    assert ledger["programs"] == 5 and ledger["seconds"] == pytest.approx(7.7)


def test_a_damaged_ledger_is_no_estimate_and_no_error(monkeypatch, tmp_path):
    monkeypatch.setitem(_cache._state, "dir", tmp_path)
    (tmp_path / _cache.LEDGER).write_text("{not json")
    line = _clock(compiled_s=0.5, retrieval_s=0.5, requests=2, hits=2).summary()
    assert line.endswith(
        f"2 program(s) from the compilation cache, saving an unknown time (no program "
        f"compiled into it was timed) ({tmp_path})"
    )


def test_with_the_cache_off_the_line_says_so(monkeypatch):
    monkeypatch.setitem(_cache._state, "dir", None)
    assert _clock(1.25, 0.0, 0, 0).summary() == "compilation 1.2 s (compilation cache off)"


# A process whose cache cannot be written: JAX's own write raises what a full disk raises
# (a stand-in), for each of three programs, and warns; the command's stderr is the rest.
FULL_DISK = """\
import errno, sys, warnings
import jax, jax.numpy as jnp
from jax._src import compilation_cache
from weanj._io import _jax_cache

warnings.simplefilter("default")  # JAX's warnings shown, as a command's are
folder = _jax_cache.enable(sys.argv[1])

def full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")

compilation_cache.put_executable_and_time = full
for k in range(3):
    jax.jit(lambda x: jnp.sin(x) * k)(1.0).block_until_ready()
warnings.warn("a warning of someone else's")  # still shown, as before
print(folder)
"""


def test_a_cache_that_cannot_be_written_is_one_line_naming_it(tmp_path):
    from .helpers import run_python, subprocess_env

    env = subprocess_env()
    env.pop(_cache.VARIABLE, None)
    done = run_python("-c", FULL_DISK, tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    folder = done.stdout.strip()
    assert folder == str(tmp_path / ".weanj-cache" / VERSIONS)
    lines = done.stderr.strip().splitlines()
    assert lines[0] == (
        f"weanj: note: cannot keep compiled programs in {folder}: no space left on the device "
        "(WEANJ_COMPILATION_CACHE moves the cache)"
    ), done.stderr
    assert "persistent compilation cache" not in done.stderr  # JAX's own, none of them
    assert "UserWarning: a warning of someone else's" in lines[1] and len(lines) == 2, lines


def test_the_running_clock_leaves_out_compilation_counted_once(monkeypatch):
    """Spans of tracing, lowering and compiling (as JAX reports them) are taken out of the
    clock once, however they nest or overlap; other events' spans are not."""
    monkeypatch.setattr(_cache.time, "monotonic", lambda: 100.0)
    clock = _cache.RunningClock()
    trace, lower, compile_ = _cache.PREPARING
    clock._on_span(trace, 10.0, 14.0)  # a trace, a jit traced inside it
    clock._on_span(trace, 11.0, 12.0)
    clock._on_span(lower, 13.5, 15.0)  # overlapping its end
    clock._on_span(compile_, 20.0, 22.5)
    clock._on_span("/jax/some/other/event", 0.0, 50.0)
    assert clock.compiling_s == 5.0 + 2.5
    assert clock() == 100.0 - 7.5
