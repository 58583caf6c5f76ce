"""Nothing is silent: every phase of a check (each evaluation, its loss floor, each
gradient check, each pair judged) says what it does within 5 s of starting and at least
every 15 s, its count going on from the phase's start (issue 49, item 5).

No test here waits or reads a real clock: the watch's clock is a simulated one, which
the slow stand-in variant moves as it "computes" (a quarter second at a time, the
heartbeat looking after each, as its thread would), so the lines are counted per
simulated second, however busy the machine.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import pytest

import weanj
from weanj._judge import _verdict
from weanj._model import Functions
from weanj._model._variant import CALLS, Checked
from weanj._pipeline.session import _session
from weanj._watch import Said, Watch

from .helpers import SMOOTH, registered_smooth
from .toy_kernels import smooth_loop

BEAT = re.compile(r"  (?P<text>.+) … (?P<n>\d+) s")


class SimulatedClock:
    """Seconds that pass only when the stand-in computes (`sleep`)."""

    def __init__(self):
        self.t = 1000.0
        self.watches: list[Watch] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        end = self.t + seconds
        while self.t < end:
            self.t = min(end, self.t + 0.25)
            for w in self.watches:
                w.beat()  # what the heartbeat thread does when a beat is due


@dataclass
class Span:
    text: str
    start: float
    end: float = float("nan")


def _recording_watch(sim: SimulatedClock, spans: list[Span]):
    class RecordingWatch(Watch):
        @contextlib.contextmanager
        def phase(self, text):
            span = Span(text, sim.t)
            spans.append(span)
            with super().phase(text):
                yield
            span.end = sim.t

    def make(**kw):
        w = RecordingWatch(**kw, clock=sim.now, beating=False)
        sim.watches.append(w)
        return w

    return make


def _slowed(sim: SimulatedClock, v, seconds: dict[str, float]) -> None:
    """`v`'s built functions, each call first taking `seconds[field]` simulated seconds;
    its loss alone (not its value_and_grad) noisy, 1e-10 of itself, so that the Taylor
    test's regime estimate is not borne out under the free floor and the check escalates
    to the loss's measured rounding level (the perturbed runs)."""
    import numpy as np

    fns = v.functions()

    def slow(fn, s, noisy=False):
        def call(*args):
            sim.sleep(s)
            value = fn(*args)
            if noisy:  # deterministic in x: a rounding-like jitter
                wobble = np.sin(1e7 * float(np.sum(np.asarray(args[0]))))
                value = float(value) * (1 + 1e-10 * wobble)
            return value

        return call

    # the calls alone (no `checking`: a check's runs then call these slowed ones)
    v._built["fns"] = Functions(
        *(
            None
            if f is None
            else Checked(
                v.example,
                v.name,
                slow(f.fn, seconds[name], noisy=name in ("loss", "evaluation_loss")),
                tangents=name == "jvp",
            )
            for name, f in zip(Functions._fields[:CALLS], fns, strict=False)
        )
    )


@pytest.fixture
def slow_check(project, monkeypatch):
    """A float64 check of `94-smooth` with `jax-loop` and a slow stand-in `jax-slow` (its
    loss and gradient 6 s a call, each further loss 2 s and noisy, its jvp 20 s), central
    differences asked for (`fd`), and a pair judged in 16 s; **yields** (lines said with
    their simulated times, the phases)."""
    sim, spans, said = SimulatedClock(), [], []
    monkeypatch.setattr(_session, "Watch", _recording_watch(sim, spans))
    judge_pair = _verdict.judge_pair

    def slow_judge_pair(*args, **kwargs):
        sim.sleep(16.0)
        return judge_pair(*args, **kwargs)

    monkeypatch.setattr(_verdict, "judge_pair", slow_judge_pair)
    with registered_smooth() as ex:
        v = weanj.jax_variant(ex, "jax-slow", family="smooth", loss=smooth_loop)
        seconds = dict(loss=2.0, grad=6.0, jvp=20.0, value_and_grad=6.0, evaluation_loss=2.0)
        _slowed(sim, v, seconds)
        judgement = weanj.check(
            SMOOTH,
            dtype="float64",
            say=lambda line: said.append((sim.t, line)),
            save=False,
            fd=True,
        )
    assert judgement.ok, [j.reason for j in judgement[SMOOTH].failures]
    yield said, spans


def test_every_phase_is_heard_within_5_s_and_then_every_15_s(slow_check):
    said, spans = slow_check
    times = [t for t, _ in said]
    start, end = min(s.start for s in spans), max(s.end for s in spans)
    assert end - start >= 100, "the stand-in should take minutes of simulated time"
    # a line within 5 s of the first phase's start, then never 15 s of silence
    edges = [start, *[t for t in times if start <= t <= end], end]
    gaps = [b - a for a, b in zip(edges, edges[1:], strict=False)]
    assert gaps[0] <= 5.0 and max(gaps) <= 15.0, (max(gaps), said)
    # every phase that lasts 5 s is heard, naming itself, within 5 s of its start
    for s in spans:
        if s.end - s.start >= 5.0:
            heard = [t for t, line in said if line.startswith(f"  {s.text}") and t >= s.start]
            assert heard and heard[0] <= s.start + 5.0, (s, said)


def test_each_phase_names_what_it_does(slow_check):
    said, _ = slow_check
    lines = [line for _, line in said]
    where = f"{SMOOTH} jax-slow"
    for expected in (
        rf"  compiling or running {where} … \d+ s",
        rf"  {where}: escalated: its rounding level, perturbed run \d of 4 … \d+ s",
        rf"  {where}: taylor test of x, direction 1 of 1, step h0/2\^-?\d+ … \d+ s",
        rf"  {where}: escalated: central differences of x, loss \d+ of \d+ … \d+ s",
        rf"  {where}: jvp of x … \d+ s",
        rf"  {SMOOTH}: judging jax-loop against jax-slow \(x\) … \d+ s",
    ):
        assert any(re.fullmatch(expected, line) for line in lines), (expected, lines)


def test_the_count_goes_on_within_a_phase(slow_check):
    """The seconds a line tells are those since its phase started (never since its
    latest call): within one phase they only grow, and a 20 s jvp call is heard twice."""
    said, spans = slow_check
    for s in spans:
        counts = []
        for t, line in said:
            m = BEAT.fullmatch(line)
            if m and s.start <= t <= s.end and line.startswith(f"  {s.text}"):
                counts.append(int(m.group("n")))
                assert int(m.group("n")) == round(t - s.start), (s, t, line)
        assert counts == sorted(counts), (s, counts)
        if s.text == f"{SMOOTH} jax-slow: jvp of x":
            assert len(counts) >= 2 and counts[-1] >= 15, (s, counts)
    taylor = [line for _, line in said if "taylor test of x" in line]
    steps = [
        int(re.search(r"h0/2\^(-?\d+)", line).group(1)) for line in taylor if "direction 1" in line
    ]
    assert len(set(steps)) >= 2, taylor


def test_the_watch_alone_counts_lines_per_simulated_second():
    """A phase of 100 s, then one of 3 s: the first is heard at 4 s and every 12 s after
    (its count from its own start, the step it is at named); the short one, less than
    `quiet_s` after the previous line, is silent; a progress line said elsewhere
    (`heard`) puts the next heartbeat off."""
    sim, said = SimulatedClock(), []
    watch = Watch(clock=sim.now, beating=False, say=lambda line: said.append((sim.t, line)))
    sim.watches.append(watch)
    t0 = sim.t
    with watch.phase("EX V: taylor test of u0"):
        for k in range(1, 11):
            watch.step(f"{k} of 10 steps")
            sim.sleep(10.0)
    assert [(t - t0, line) for t, line in said] == [
        (4.0, "  EX V: taylor test of u0, 1 of 10 steps … 4 s"),
        (16.0, "  EX V: taylor test of u0, 2 of 10 steps … 16 s"),
        (28.0, "  EX V: taylor test of u0, 3 of 10 steps … 28 s"),
        (40.0, "  EX V: taylor test of u0, 4 of 10 steps … 40 s"),
        (52.0, "  EX V: taylor test of u0, 6 of 10 steps … 52 s"),
        (64.0, "  EX V: taylor test of u0, 7 of 10 steps … 64 s"),
        (76.0, "  EX V: taylor test of u0, 8 of 10 steps … 76 s"),
        (88.0, "  EX V: taylor test of u0, 9 of 10 steps … 88 s"),
        (100.0, "  EX V: taylor test of u0, 10 of 10 steps … 100 s"),
    ]
    said.clear()
    with watch.phase("short"):
        sim.sleep(3.0)
    assert said == []
    watch.heard()
    with watch.phase("after a progress line"):
        sim.sleep(20.0)
    assert [line for _, line in said] == [
        "  after a progress line … 4 s",
        "  after a progress line … 16 s",
    ]
    # No phase open: nothing to say, whatever the clock.
    said.clear()
    sim.sleep(60.0)
    assert said == [] and watch.beat() is None


def test_the_heartbeat_thread_ends_with_its_phase():
    """The real thread (not simulated): one per outermost phase, gone once it closed."""
    import threading

    def beats():
        return [t for t in threading.enumerate() if t.name == "weanj heartbeat"]

    before = beats()
    watch = Watch(say=lambda line: None)
    with watch.phase("a"):
        with watch.phase("b"):
            assert len(beats()) == len(before) + 1
    for t in set(beats()) - set(before):  # joined by the phase's end (up to 1 s: a busy machine)
        t.join(60)
    assert beats() == before


def test_short_phases_in_a_row_are_heard_every_12_s_through_a_said():
    """Eighteen evaluations of 3 s each (02-gauss-seidel's, cold: 21 s without a line), each
    followed by `heard()` as the session calls it whether or not a progress line was said
    (a check's progress is one line per example): through a `Said`, the silence is
    counted from what was said, so a heartbeat names the phase every 12 s; a progress
    line said through it puts the next one off."""
    sim, said = SimulatedClock(), []
    lines = Said(lambda line: said.append((sim.t, line)), clock=sim.now)
    watch = Watch(clock=sim.now, beating=False, say=lines)
    sim.watches.append(watch)
    t0 = sim.t
    for k in range(18):
        with watch.phase(f"compiling or running EX v{k}"):
            sim.sleep(3.0)
        watch.heard()  # an evaluation finished: no line said
    times = [t - t0 for t, _ in said]
    assert times == [12.0, 24.0, 36.0, 48.0], said
    assert said[0][1] == "  compiling or running EX v3 … 3 s"
    said.clear()
    lines("[1/6] EX: 18 evaluation(s), 54.0 s, ok")  # a progress line, through the Said
    t1 = sim.t
    for k in range(5):
        with watch.phase(f"compiling or running EX w{k}"):
            sim.sleep(3.0)
        watch.heard()
    assert [t - t1 for t, _ in said[1:]] == [12.0], said
