"""What a cold check compiles: one program per evaluation (issue 51, item 1).

Run by hand from the repository root:

    python benchmarks/compile_cost.py              # the whole gallery, both dtypes
    python benchmarks/compile_cost.py --quick      # 01-jacobi only (~15 s)
    python benchmarks/compile_cost.py --examples 02-gauss-seidel 04-tridiagonal
    python benchmarks/compile_cost.py --repeat 3   # three rounds, medians (~7 min idle)

For each example, twice, with JAX's in-memory caches emptied before each (`jax.clear_caches`)
and without the persistent compilation cache (never turned on here): the example's case
table judged as `weanj check --fresh` judges it (`_cases.read_plan` and `judge_plan` in a
`Session`: every evaluation in both dtypes with its loss floor, the Taylor, central-
difference and jvp checks and the pairs), once as weanj runs today (a JAX variant's loss
and gradient one program; in float64 that program holds the forward mode too, and each
call asks it only for what it needs, `_backends/_checking.py`), once with
every JAX variant compiled the old way (a loss program, a gradient program and a jvp
program, the extra losses from the loss program). The compilations are JAX's own
monitoring event (`/jax/core/compile/backend_compile_duration`,
`_io._jax_cache.compilations`), each put to the variant and dtype whose phase was running
(the heartbeat's phase text, `_watch`; a jvp borrowed from a family member is that
member's). Enzyme-JAX compiles a variant's forward on its own once per trace to find the
arguments XLA keeps (`enzyme_ad/jax/primitives.py`, `_kept_var_idx`): counted apart
("probes"), as weanj cannot avoid them. The wall seconds of each judgement are printed
beside them: compiling less is worth nothing if the steps then run longer.

The two ways run one after the other for each example, the first alternating between
examples and between rounds (`--repeat`). Printed: each round's totals; per variant and
dtype, compilations (probes) and the median seconds, both ways; then the acceptance
points: at most 2 compilations per (variant, dtype) in float64 (with the jvp check), at
most 1 in float32, probes apart; the median over the rounds of the total compile seconds
today / the old way <= 0.6. Exit status 1 when a point is missed. Timings move with the
machine's load: say what else ran when quoting them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time

import _common

import weanj
from weanj._io import _jax_cache
from weanj._model import DTYPES, Functions
from weanj._pipeline.engine._cases import judge_plan, read_plan
from weanj._pipeline.session._session import Session
from weanj._places import places
from weanj._registry import catalogs

ENZYME_PROBE = "jit(forward_for_enzyme)"
OTHER = ("(other)", "")


def subject(text: str | None, example: str) -> tuple[str, str]:
    """`(variant, dtype)` of the phase text that was running (`_watch.Watch.phase`):
    `compiling or running EX V@float32`, `EX V: loss floor …`, `EX V: jvp of a by W` (W's
    program); `OTHER` for anything else (a kink mask, a pair)."""
    if not text:
        return OTHER
    if " by " in text:
        label = text.rsplit(" by ", 1)[1]
    else:
        text = text.removeprefix("compiling or running ")
        if not text.startswith(example + " "):
            return OTHER
        label = text[len(example) + 1 :].split(":", 1)[0]
        if " " in label:
            return OTHER
    name, _, dtype = label.partition("@")
    return name, dtype or "float64"


@contextlib.contextmanager
def separate_programs(cat):
    """Every JAX variant of `cat` as weanj compiled it before issue 51: its `loss` and
    `grad` programs, no `value_and_grad` and no `evaluation_loss`."""
    saved = {}
    for v in cat.variants:
        if v.unavailable_reason() is not None:
            continue
        fns = v.functions()
        if fns.evaluation_loss is None:  # not a one-program variant (Julia)
            continue
        saved[v.name] = v._built["fns"]
        v._built["fns"] = Functions(fns.loss, fns.grad, fns.jvp)
    try:
        yield
    finally:
        for v in cat.variants:
            if v.name in saved:
                v._built["fns"] = saved[v.name]


def cold_check(cat, dtypes) -> tuple[dict, float]:
    """The example judged from cold: `{(variant, dtype): [compilations, probes, seconds]}`
    and the wall seconds."""
    import jax

    jax.clear_caches()
    plan = read_plan(cat, places(), live=True, dtypes=dtypes)
    t0 = time.perf_counter()
    with Session(say=lambda line: None) as session:
        with _jax_cache.compilations(session.watch.current) as found:
            judge_plan(plan, session)
    wall = time.perf_counter() - t0
    out: dict[tuple[str, str], list] = {}
    for text, program, seconds in found:
        row = out.setdefault(subject(text, cat.name), [0, 0, 0.0])
        row[1 if program == ENZYME_PROBE else 0] += 1
        row[2] += seconds
    return out, wall


def _cell(row) -> str:
    if row is None:
        return "-"
    count, probes, seconds = row
    return f"{count}" + (f" (+{probes})" if probes else "") + f" / {seconds:.2f} s"


def one_round(cats, dtypes, flip: bool) -> tuple[dict, dict]:
    """Every example judged from cold both ways, the first way alternating between examples
    (and between rounds, `flip`): a machine whose load changes during the run favours
    neither. **Returns** `({(example, variant, dtype): {"one": row, "separate": row}},
    {"one": [compile s, wall s], "separate": [...]})`."""
    rows: dict[tuple, dict] = {}
    totals = {"one": [0.0, 0.0], "separate": [0.0, 0.0]}
    for k, cat in enumerate(cats):
        found = {}
        for way in ("separate", "one") if (k % 2) != flip else ("one", "separate"):
            with separate_programs(cat) if way == "separate" else contextlib.nullcontext():
                found[way] = cold_check(cat, dtypes)
        for way, (table, wall) in found.items():
            totals[way][0] += sum(r[2] for r in table.values())
            totals[way][1] += wall
            for key, row in table.items():
                rows.setdefault((cat.name, *key), {})[way] = row
    return rows, totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", nargs="+", default=None, help="default: the gallery")
    parser.add_argument("--quick", action="store_true", help="01-jacobi only")
    parser.add_argument("--dtype", choices=("both", *DTYPES), default="both")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="judge the gallery N times both ways; the seconds are the medians (default 1)",
    )  # fmt: skip
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the figures")
    args = parser.parse_args()
    names = ["01-jacobi"] if args.quick else args.examples
    known = set(weanj.example_names())
    for name in names or ():
        if name not in known:
            raise weanj.InputError(f"no example {name!r} (known: {', '.join(sorted(known))})")
    if args.repeat < 1:
        raise weanj.InputError(f"--repeat takes a positive count, not {args.repeat}")
    dtypes = DTYPES if args.dtype == "both" else (args.dtype,)
    import jax

    if jax.config.jax_compilation_cache_dir:
        raise weanj.InputError(
            "the persistent compilation cache is on (JAX_COMPILATION_CACHE_DIR): unset it, "
            "a cold compile is what is measured"
        )
    print(f"cold check compilations; jax {jax.__version__}, {jax.devices()[0].device_kind}")
    cats = list(catalogs(names))
    rounds = []
    for r in range(args.repeat):
        rounds.append(one_round(cats, dtypes, flip=bool(r % 2)))
        _, totals = rounds[-1]
        print(
            f"round {r + 1} of {args.repeat}: compile seconds {totals['one'][0]:.1f} one "
            f"program, {totals['separate'][0]:.1f} separate programs "
            f"({_common.ratio(totals['one'][0], totals['separate'][0]):.3f}); wall seconds "
            f"of the checks {totals['one'][1]:.1f} / {totals['separate'][1]:.1f}",
            flush=True,
        )
    print("\ncompilations (+ Enzyme-JAX's own probes) / compile seconds (median of the rounds)\n")
    print("| example | run | one program | separate programs |\n|---|---|---:|---:|")
    worst = {"float64": 0, "float32": 0}
    figures = []
    for key in sorted({k for rows, _ in rounds for k in rows}):
        example, name, dtype = key
        cells = {}
        for way in ("one", "separate"):
            seen = [rows[key][way] for rows, _ in rounds if way in rows.get(key, {})]
            cells[way] = None if not seen else [
                max(s[0] for s in seen), max(s[1] for s in seen),
                statistics.median(s[2] for s in seen),
            ]  # fmt: skip
        label = name if dtype in ("", "float64") else f"{name}@{dtype}"
        print(f"| {example} | {label} | {_cell(cells['one'])} | {_cell(cells['separate'])} |")
        if (name, dtype) != OTHER and cells["one"] is not None:
            worst[dtype] = max(worst[dtype], cells["one"][0])
        figures.append({"example": example, "variant": name, "dtype": dtype, **cells})
    ratios = [_common.ratio(t["one"][0], t["separate"][0]) for _, t in rounds]
    print(
        "\ncompile seconds, one program / separate programs, per round: "
        + ", ".join(f"{x:.3f}" for x in ratios)
    )
    met = [
        _common.acceptance(
            "compilations per (variant, float64), with the jvp", worst["float64"], 2
        ),
        _common.acceptance("compilations per (variant, float32)", worst["float32"], 1),
        _common.acceptance(
            "compile seconds, one program / separate programs (median of the rounds)",
            statistics.median(ratios),
            0.6,
        ),
    ]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {"figures": figures, "rounds": [t for _, t in rounds], "ratios": ratios},
                f,
                indent=1,
            )
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(_common.entry(main))
