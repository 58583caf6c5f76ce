"""`weanj check`: the main job. For each example, run every variant available here on the
shared inputs, save the gradients, check each against finite differences, and diff them
together with the recorded references (`results/<example>/recorded/`).

Only this run's gradients and the recorded references computed on the same inputs are
diffed; other files in the store (a user's experiments, stale runs) are `weanj diff`'s.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ._compare import fd_check
from ._diff import DiffReport, diff_gradients
from ._inputs import inputs_path, read_inputs_file
from ._registry import example, example_names, find_variant, unavailable_variants, variant, variants
from ._run import evaluate
from ._store import read_gradient_file, save_gradient, stored_gradients

# Finite-difference check: central differences along FD_DIRECTIONS random unit directions
# with step FD_STEP, as in the seed notebook. The Poisson losses are quadratic in theta
# (u^K is linear in theta), so central differences have no truncation error and only
# rounding remains: about eps·|L|/(h·|g·v|), measured at 1e-9…1e-8 on the shared inputs
# in float64. 1e-6 leaves two orders of margin and still flags any wrong gradient (a
# transposed, mis-scaled or sign-flipped gradient is off by O(1)); elementwise errors
# far below that are the diff's job.
FD_DIRECTIONS, FD_STEP = 10, 1e-2
FD_THRESHOLD = {"float64": 1e-6}
DTYPE = "float64"


@dataclass
class VariantRun:
    """One variant's result in a check."""

    variant: str
    family: str
    loss: float | None = None
    seconds: float | None = None
    fd_error: float | None = None
    error: str | None = None  # why the variant could not be evaluated

    @property
    def fd_ok(self) -> bool:
        return self.fd_error is not None and self.fd_error <= FD_THRESHOLD[DTYPE]

    @property
    def ok(self) -> bool:
        return self.error is None and self.fd_ok


@dataclass
class ExampleCheck:
    """The outcome of checking one example."""

    example: str
    params: dict[str, int]
    inputs_sha256: str
    runs: list[VariantRun] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # variant: why
    recorded_skipped: dict[str, str] = field(default_factory=dict)  # file: why
    diff: DiffReport | None = None

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs) and (self.diff is None or self.diff.ok)

    def lines(self) -> list[str]:
        shown = " ".join(f"{k}={v}" for k, v in self.params.items())
        out = [f"== {self.example} ({shown}, {DTYPE}, inputs sha256 {self.inputs_sha256[:12]}…)"]
        out.append(f"  {'variant':<22} {'family':<8} {'loss':<22} {'fd rel. error':<18} time")
        for r in self.runs:
            if r.error is not None:
                out.append(f"  {r.variant:<22} {r.family:<8} ERROR {r.error}")
                continue
            fd = f"{r.fd_error:.1e} {'ok' if r.fd_ok else 'FAIL'}"
            out.append(
                f"  {r.variant:<22} {r.family:<8} {r.loss:<22.15e} {fd:<18} {r.seconds:.1f} s"
            )
        for name, why in self.skipped.items():
            out.append(f"  skipped {name}: {why}")
        for name, why in self.recorded_skipped.items():
            out.append(f"  skipped recorded/{name}: {why}")
        if self.diff is not None:
            out.extend(self.diff.lines(provenance=False, all_pairs=False)[1:-1])
        failed = [r.variant for r in self.runs if not r.ok]
        out.append(
            f"  {self.example}: {'ok' if self.ok else 'FAIL'}"
            + (f" (failed: {', '.join(failed)})" if failed else "")
        )
        return out


def _progress(message: str, end: str = "\n") -> None:
    print(message, file=sys.stderr, end=end, flush=True)


def _run_variant(ex_name: str, name: str, data: dict) -> tuple[VariantRun, object | None]:
    """Evaluate, save and fd-check one variant; errors are reported, not raised."""
    ex = example(ex_name)
    run = VariantRun(variant=name, family=find_variant(ex.name, name).family)
    try:
        v = variant(ex.name, name)
        ev = evaluate(ex.name, name, dtype=DTYPE)
        run.loss, run.seconds = ev.loss, ev.seconds
        # NaN/Inf are kept so that the diff reports them as the failure they are.
        path = save_gradient(
            ex.name,
            name,
            ev.gradient,
            loss=ev.loss,
            family=ev.family,
            params=ev.params,
            inputs_sha256=ev.inputs_sha256,
            allow_nonfinite=True,
        )
        arrays = dict(data["arrays"])

        def loss_of_wrt(x):
            return float(np.asarray(v.loss(*ex.args({**arrays, ex.wrt: x}, ev.params))))

        run.fd_error = fd_check(
            loss_of_wrt, arrays[ex.wrt], ev.gradient, n=FD_DIRECTIONS, h=FD_STEP
        )
        return run, path
    except Exception as e:  # one broken variant must not hide the others' report
        first = str(e).splitlines()[0] if str(e) else ""
        run.error = f"{type(e).__name__}: {first} (details: `weanj run {ex.name} {name}`)"
        return run, None


def check_examples(names: list[str]) -> list[ExampleCheck]:
    """Run, fd-check and diff every available variant of each example (progress on stderr)."""
    names = [example(n).name for n in names]  # unknown names fail before any work
    todo = [(n, variants(n)) for n in names]
    total, done = sum(len(v) for _, v in todo), 0
    checks = []
    for ex_name, available in todo:
        data = read_inputs_file(ex_name, inputs_path(ex_name), shared=True)
        params = {k: int(v) for k, v in data["params"].items()}
        check = ExampleCheck(ex_name, params, data["sha256"], skipped=unavailable_variants(ex_name))
        fresh = []
        for name in available:
            done += 1
            _progress(f"[{done}/{total}] {ex_name} {name} ...", end="")
            t0 = time.perf_counter()
            run, path = _run_variant(ex_name, name, data)
            status = (
                "error" if run.error else (f"fd {run.fd_error:.1e} {'ok' if run.fd_ok else 'FAIL'}")
            )
            _progress(f" {time.perf_counter() - t0:.1f} s, {status}")
            check.runs.append(run)
            if path is not None:
                fresh.append(read_gradient_file(path))
        for s in stored_gradients(ex_name, produced=False, recorded=True):
            if s.inputs_sha256 != check.inputs_sha256 or s.params != params:
                check.recorded_skipped[s.path.stem] = (
                    f"recorded on other inputs (sha256 {s.inputs_sha256[:12]}…, "
                    + " ".join(f"{k}={v}" for k, v in s.params.items())
                    + ")"
                )
            else:
                fresh.append(s)
        if fresh:
            check.diff = diff_gradients(
                ex_name, fresh, params=params, inputs_sha256=check.inputs_sha256
            )
        checks.append(check)
    return checks


def command(args) -> int:
    """`weanj check [EXAMPLE...]`: exit 1 on a same-family disagreement, a failed
    finite-difference check or a variant that could not be evaluated."""
    t0 = time.perf_counter()
    checks = check_examples(args.examples or example_names())
    for check in checks:
        print("\n".join(check.lines()))
    runs = [r for c in checks for r in c.runs]
    skipped = sum(len(c.skipped) for c in checks)
    ok = all(c.ok for c in checks)
    failed = [c.example for c in checks if not c.ok]
    print(
        f"overall: {'ok' if ok else 'FAIL'} — {len(checks)} example(s), {len(runs)} "
        f"variant run(s), {skipped} skipped; fd threshold {FD_THRESHOLD[DTYPE]:g} ({DTYPE}), "
        f"{time.perf_counter() - t0:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 0 if ok else 1
