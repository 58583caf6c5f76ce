"""What a check can see (issue 69, item 6): the smallest relative gradient error the
self-checks catch, per kernel, array, planting and check, beside that array tested alone
with every step walked.

Run by hand from the repository root:

    python benchmarks/detection.py                          # every kernel, ~10 min on 2 cores
    python benchmarks/detection.py --kernels mlp heat       # the two kernels of our own
    python benchmarks/detection.py --kernels mlp --small --stop-after 1   # seconds

Kernels: one JAX-AD variant's loss of each gallery example (01-jacobi ... 06-signed-grid)
on the gallery's shared inputs, with the example's Taylor policy and kink mask, and two of
our own whose three `wrt` arrays differ in curvature by orders of magnitude (`mlp`: a
tanh MLP, W1, b1, W2; `heat`: a nonlinear heat stencil, u0, k, s). Into the gradient go
relative errors ε = 1e-2, 3e-3, ..., 1e-9 (half decades): one element (the entry of
median |g| among the nonzero ones the kink mask keeps, named in the table), one whole
array, or every array. Each is checked by `weanj.check(..., dtype="float64",
fresh=True)` in a family of one, two ways (`_detection.py`): a `custom_vjp` returning the
wrong gradient (the Taylor test alone: no forward mode, its jvp skipped) and a
hand-written `grad=` (the Taylor test and the jvp check by the loss's own forward mode).
The reference ("walk alone") is that array tested alone, every step walked both ways,
same policy (`taylor(..., walk_every_step=True)`).

Printed per planting: each check's smallest ε caught (every ε of the grid from 1e-2 down
to it caught; `>1e-02`: not even the largest; `≤1e-09`: every one), and the self-checks'
ratio to the reference (`_detection_measure.py`: 1 at the same grid point, else both
thresholds bisected between half decades). The goal: every ratio ≤ 2. `--json FILE`
writes every record (each ε's outcome included). Exit 1 where a ratio is above 2 or a
check fails a correct gradient (nothing planted).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import _common
import _detection
import _detection_kernels as kernels
import _detection_measure as measuring
import numpy as np

import weanj

# the self-checks of each way against the reference (the goal's); `grad= taylor` is shown
JUDGED = ("custom_vjp taylor", "grad= either")
COLUMNS = (
    ("walk alone", "walk alone", None),
    ("custom_vjp: taylor", "custom_vjp taylor", "custom_vjp taylor"),
    ("grad=: taylor", "grad= taylor", "grad= taylor"),
    ("grad=: jvp", "grad= jvp", None),
    ("grad=: either", "grad= either", "grad= either"),
)


def shown(eps: float | None, bottom: float) -> str:
    if eps is None:
        return f">{measuring.EPSILONS[0]:.0e}"
    return f"≤{eps:.0e}" if eps <= bottom else f"{eps:.0e}"


def shown_ratio(found: dict) -> str:
    if found["how"] != "bisected":
        return "1" if found["ratio"] == 1 else f"{found['ratio']:g}"
    r = found["ratio"]
    text = f"{found['bound']}{r:.3f}" if r >= 0.01 else f"{found['bound']}{r:.0e}"
    return f"**{text}**" if r > 2 else text  # past the goal


def floor_note(record: dict) -> str:
    """Where a Taylor test and the walk alone part: the walk with no floor but 64·eps·|L|."""
    walk = record[measuring.FLOOR_WALK]
    threshold = walk["threshold"]
    found = "not caught up to ε = 1" if threshold is None else f"{threshold:.3g}"
    check = record["ratios"]["custom_vjp taylor"].get("check")
    mine = "" if check is None else f" (custom_vjp's taylor: {check:.3g})"
    return (
        f"walk alone with no floor but 64·eps·|L|, {walk['rounding']:.1e} (the check's "
        f"{walk['floor']:.1e}): {found}{mine}"
    )


def row(record: dict, bottom: float) -> str:
    """One planting's line of the Markdown table."""
    cells = [record["kernel"], record["planting"]]
    for _, series, compared in COLUMNS:
        cell = shown(record["smallest"].get(series), bottom)
        if compared is not None:
            cell += f" ({shown_ratio(record['ratios'][compared])})"
        cells.append(cell)
    notes = []
    if any(v for k, v in record["baseline"].items() if k != "elsewhere"):
        notes.append("a correct gradient fails")
    if any(r["elsewhere"] for r in record["grid"]):
        notes.append("another array fails")
    if measuring.FLOOR_WALK in record:
        notes.append(floor_note(record))
    if record["below"]:
        notes.append("caught below a miss: " + ", ".join(sorted(record["below"])))
    return "| " + " | ".join([*cells, "; ".join(notes)]) + " |"


def header() -> str:
    names = [c[0] for c in COLUMNS]
    return (
        "| kernel | planted | " + " | ".join(names) + " | notes |\n|" + " --- |" * (len(names) + 3)
    )


def run_kernel(name: str, args: argparse.Namespace, say) -> tuple[dict, list[dict]]:
    """`(the kernel's description, its plantings' records)`."""
    kernel = kernels.kernel(name, small=args.small)
    with _detection.planted(kernel) as bench:
        about = {
            "title": kernel.title,
            "wrt": list(kernel.wrt),
            "shapes": {a: list(kernel.arrays[a].shape) for a in kernel.wrt},
            "curvature": {a: _detection.curvature(kernel, a) for a in kernel.wrt},
        }
        records = []
        for planting in measuring.plantings(bench):
            started = time.perf_counter()
            records.append(
                measuring.measure(
                    bench, planting, steps=args.bisections, stop_after=args.stop_after
                )
            )
            say(f"{name} {planting.label}: {time.perf_counter() - started:.1f} s")
    return about, records


def _strict(value):
    """`value` as strict JSON holds it: an infinite ratio as the string "inf", numpy
    numbers as Python's."""
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else str(float(value))
    return value


def _write_json(path: str, payload: dict) -> None:
    """The records, written whole or not at all (a temporary file renamed over it)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as f:
            f.write(json.dumps(_strict(payload), indent=2, allow_nan=False) + "\n")
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", nargs="+", default=list(kernels.KERNELS), metavar="NAME")
    parser.add_argument("--small", action="store_true", help="mlp and heat at the tests' sizes")
    parser.add_argument(
        "--stop-after",
        type=int,
        default=None,
        metavar="N",
        help="end a planting's scan once every check has missed N ε in a row (default: all)",
    )
    parser.add_argument("--bisections", type=int, default=measuring.BISECTIONS, metavar="N")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the records")
    args = parser.parse_args()
    unknown = [k for k in args.kernels if k not in kernels.KERNELS]
    if unknown:
        raise weanj.InputError(
            f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(kernels.KERNELS)}"
        )
    if (args.stop_after is not None and args.stop_after < 1) or args.bisections < 0:
        raise weanj.InputError("--stop-after must be >= 1 and --bisections >= 0")
    if args.json and not Path(args.json).resolve().parent.is_dir():
        raise weanj.InputError(f"--json {args.json}: its folder does not exist")

    import jax

    jax.config.update("jax_enable_x64", True)  # the gallery's examples are float64 programs
    say = (lambda line: None) if args.quiet else (lambda line: print(line, file=sys.stderr))
    env = weanj.environment("cpu")
    print(
        f"smallest relative gradient error caught (float64 checks on the CPU); "
        f"{env['cpu_model']} ({env['cpu_count']} cores), jax {env['jax']}, revision "
        f"{env['git_revision']}, {env['date']}",
        flush=True,
    )
    abouts, records = {}, []
    for name in args.kernels:
        abouts[name], found = run_kernel(name, args, say)
        records.extend(found)
        curvature = ", ".join(f"{a} {c:.1e}" for a, c in abouts[name]["curvature"].items())
        print(f"{name}: {abouts[name]['title']}; curvature ½h0²|dxᵀHdx|: {curvature}", flush=True)
    return report(records, abouts, args, env)


def report(records: list[dict], abouts: dict, args: argparse.Namespace, env: dict) -> int:
    """The table, the acceptance line, and `--json`; **Returns** the exit code."""
    bottom = min(measuring.EPSILONS)
    print("\n" + header())
    for record in records:
        print(row(record, bottom))
    worst = max((r["ratios"][s]["ratio"] for r in records for s in JUDGED), default=0.0)
    alarms = [
        f"{r['kernel']} {r['planting']}"
        for r in records
        if any(v for k, v in r["baseline"].items() if k != "elsewhere")
    ]
    print()
    met = _common.acceptance(
        "largest ratio, self-checks' smallest caught ε / walk alone's", worst, 2.0
    )
    if alarms:
        print(f"  a correct gradient fails: {', '.join(alarms)}")
    if args.json:
        payload = {
            "environment": env,
            "command": sys.argv,
            "epsilons": list(measuring.EPSILONS),
            "kernels": abouts,
            "records": records,
        }
        _write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0 if met and not alarms else 1


if __name__ == "__main__":
    sys.exit(_common.entry(main))
