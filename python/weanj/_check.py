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
from ._errors import InputError
from ._inputs import digest, inputs_path, read_inputs_file
from ._registry import (
    Example,
    example,
    example_names,
    find_variant,
    unavailable_variants,
    variant,
    variants,
)
from ._run import evaluate
from ._store import read_gradient_file, stored_gradients

# Finite differences: each example's `FDPolicy` (directions, step, threshold, mask). The
# default is the seed notebook's: 10 random unit directions, h = 1e-2, threshold 1e-6.
# The Poisson losses are quadratic in theta (u^K is linear in theta), so central
# differences have no truncation error and only rounding remains: about eps·|L|/(h·|g·v|),
# measured at 1e-9…1e-8 on the shared inputs in float64. 1e-6 leaves two orders of margin
# and still flags any wrong gradient (a transposed, mis-scaled or sign-flipped gradient is
# off by O(1)); elementwise errors far below that are the diff's job.
DTYPE = "float64"


@dataclass
class FDResult:
    """The finite-difference check of one gradient array."""

    error: float | None  # None: not checked (the mask leaves no entry)
    left_out: int  # entries the mask kept out of the directions
    size: int

    @property
    def checked(self) -> bool:
        return self.error is not None


@dataclass
class VariantRun:
    """One variant's result in a check."""

    variant: str
    family: str
    threshold: float = 1e-6
    loss: float | None = None
    seconds: float | None = None
    fd: dict[str, FDResult] = field(default_factory=dict)  # per wrt array
    error: str | None = None  # why the variant could not be evaluated

    @property
    def fd_error(self) -> float | None:
        """The worst error over the arrays checked."""
        errors = [r.error for r in self.fd.values() if r.error is not None]
        return max(errors) if errors else None

    @property
    def fd_ok(self) -> bool:
        return self.fd_error is not None and self.fd_error <= self.threshold

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
    fd_note: str = ""  # what the example's fd mask leaves out and why

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs) and (self.diff is None or self.diff.ok)

    def lines(self) -> list[str]:
        shown = "".join(f"{k}={v}, " for k, v in self.params.items())
        out = [f"== {self.example} ({shown}{DTYPE}, inputs sha256 {self.inputs_sha256[:12]}…)"]
        out.append(f"  {'variant':<22} {'family':<12} {'loss':<22} {'fd rel. error':<18} time")
        for r in self.runs:
            if r.error is not None:
                out.append(f"  {r.variant:<22} {r.family:<12} ERROR {r.error}")
                continue
            fd = _fd_text(r)
            out.append(
                f"  {r.variant:<22} {r.family:<12} {r.loss:<22.15e} {fd:<18} {r.seconds:.1f} s"
            )
        if self.fd_note:
            out.append(f"  fd: {self.fd_note}")
        by_reason: dict[str, list[str]] = {}
        for name, why in self.skipped.items():  # one line per reason, however many variants
            by_reason.setdefault(why, []).append(name)
        for why, names in by_reason.items():
            out.append(f"  skipped {', '.join(names)}: {why}")
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


def _fd_text(r: VariantRun) -> str:
    if r.fd_error is None:
        return "not checked"
    worst = r.fd_error
    text = f"{worst:.1e} {'ok' if r.fd_ok else 'FAIL'}"
    if len(r.fd) > 1:  # several arrays: name the worst
        name = max((k for k, v in r.fd.items() if v.checked), key=lambda k: r.fd[k].error)
        text += f" ({name})"
    return text


def _progress(message: str, end: str = "\n") -> None:
    print(message, file=sys.stderr, end=end, flush=True)


# {(mask function, wrt, inputs digest, parameters): masks}: a mask depends on the inputs only, and
# may be costly (03-advection traces the T steps to find the kinks), while every variant,
# every `pytest --weanj` fd case and `weanj diff`'s kink check asks for it again.
_MASKS: dict[tuple, dict[str, np.ndarray]] = {}


def fd_masks(ex: Example, arrays: dict, params: dict) -> dict[str, np.ndarray]:
    """The example's fd mask per wrt array (all True where it declares none)."""
    # The mask function itself in the key: a redefined example never gets the old masks.
    key = (ex.fd.mask, ex.wrt_names, digest(ex, arrays), tuple(sorted(params.items())))
    if key not in _MASKS:
        _MASKS[key] = _compute_masks(ex, arrays, params)
    return {name: m.copy() for name, m in _MASKS[key].items()}


def _compute_masks(ex: Example, arrays: dict, params: dict) -> dict[str, np.ndarray]:
    given = dict(ex.fd.mask(arrays, params)) if ex.fd.mask is not None else {}
    unknown = set(given) - set(ex.wrt_names)
    if unknown:
        raise InputError(f"{ex.name}: the fd mask names arrays {sorted(unknown)} outside wrt")
    masks = {}
    for name in ex.wrt_names:
        m = np.asarray(given.get(name, np.ones(np.shape(arrays[name]), bool)), bool)
        if m.shape != np.shape(arrays[name]):
            raise InputError(
                f"{ex.name}: the fd mask of {name} has shape {m.shape}, not "
                f"{np.shape(arrays[name])}"
            )
        masks[name] = m
    return masks


def fd_check_arrays(
    ex: Example, loss, arrays: dict, params: dict, gradients: dict
) -> dict[str, FDResult]:
    """The example's finite-difference check of each wrt array in turn (the others fixed):
    `ex.fd.directions` directions within the array's mask, step `ex.fd.step`."""
    policy = ex.fd
    masks = fd_masks(ex, arrays, params)
    results = {}
    for name in ex.wrt_names:
        mask = masks[name]
        size = int(mask.size)
        if not mask.any():
            results[name] = FDResult(error=None, left_out=size, size=size)
            continue

        def loss_of(x, name=name):
            return float(np.asarray(loss(*ex.args({**arrays, name: x}, params))))

        error = fd_check(
            loss_of,
            arrays[name],
            gradients[name],
            n=policy.directions,
            h=policy.step,
            mask=None if mask.all() else mask,
        )
        results[name] = FDResult(error=error, left_out=size - int(mask.sum()), size=size)
    return results


def fd_note(ex: Example, results: dict[str, FDResult]) -> str:
    """One line on what the mask left out (empty when it left nothing out)."""
    parts = [
        f"{r.left_out} of {r.size} {name} entries left out"
        for name, r in results.items()
        if r.left_out
    ]
    if not parts:
        return ""
    why = f" ({ex.fd.why})" if ex.fd.why else ""
    return "; ".join(parts) + why


def _run_variant(ex_name: str, name: str, data: dict) -> tuple[VariantRun, object | None]:
    """Evaluate, save and fd-check one variant; errors are reported, not raised."""
    ex = example(ex_name)
    run = VariantRun(
        variant=name, family=find_variant(ex.name, name).family, threshold=ex.fd.threshold
    )
    try:
        v = variant(ex.name, name)
        ev = evaluate(ex.name, name, dtype=DTYPE)
        run.loss, run.seconds = ev.loss, ev.seconds
        # NaN/Inf are kept so that the diff reports them as the failure they are.
        path = ev.save(allow_nonfinite=True)
        run.fd = fd_check_arrays(ex, v.loss, dict(data["arrays"]), ev.params, ev.gradients)
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
            status = "error" if run.error else f"fd {_fd_text(run)}"
            _progress(f" {time.perf_counter() - t0:.1f} s, {status}")
            check.runs.append(run)
            if run.fd and not check.fd_note:
                check.fd_note = fd_note(example(ex_name), run.fd)
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
        f"variant run(s), {skipped} skipped ({DTYPE}), {time.perf_counter() - t0:.0f} s"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 0 if ok else 1
