"""What a cold check compiles: one program per evaluation (issue 51, item 1).

Run by hand from the repository root:

    python benchmarks/compile_cost.py              # the whole gallery, both dtypes
    python benchmarks/compile_cost.py --quick      # 01-jacobi only (~15 s)
    python benchmarks/compile_cost.py --examples 02-gauss-seidel 04-tridiagonal

For each example, twice, with JAX's in-memory caches emptied before each (`jax.clear_caches`)
and without the persistent compilation cache (never turned on here): the example's case
table judged as `weanj check --fresh` judges it (`_cases.read_plan` and `judge_plan` in a
`Session`: every evaluation in both dtypes with its loss floor, the Taylor, central-
difference and jvp checks and the pairs), once as weanj runs today (a JAX variant's loss
and gradient one `value_and_grad` program, every further loss taken from it), once with
every JAX variant compiled the old way (a loss program and a gradient program, the extra
losses from the loss program). The compilations are JAX's own monitoring event
(`/jax/core/compile/backend_compile_duration`, `_io._jax_cache.compilations`), each put to
the variant and dtype whose phase was running (the heartbeat's phase text, `_watch`; a jvp
borrowed from a family member is that member's). Enzyme-JAX compiles a variant's forward
on its own once per trace to find the arguments XLA keeps (`enzyme_ad/jax/primitives.py`,
`_kept_var_idx`): counted apart ("probes"), as weanj cannot avoid them.

The two ways run one after the other for each example, the first alternating between
examples. Printed: per variant and dtype, compilations (probes) and seconds, both ways; then the
acceptance points: at most 2 compilations per (variant, dtype) in float64 (with the jvp
check), at most 1 in float32, probes apart; the total compile seconds today / the old way
<= 0.6. Exit status 1 when a point is missed. Timings move with the machine's load: say
what else ran when quoting them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

import _common

import weanj
from weanj._io import _jax_cache
from weanj._model import DTYPES, Functions
from weanj._pipeline._cases import judge_plan, read_plan
from weanj._pipeline._session import Session
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", nargs="+", default=None, help="default: the gallery")
    parser.add_argument("--quick", action="store_true", help="01-jacobi only")
    parser.add_argument("--dtype", choices=("both", *DTYPES), default="both")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the figures")
    args = parser.parse_args()
    names = ["01-jacobi"] if args.quick else args.examples
    known = set(weanj.example_names())
    for name in names or ():
        if name not in known:
            raise weanj.InputError(f"no example {name!r} (known: {', '.join(sorted(known))})")
    dtypes = DTYPES if args.dtype == "both" else (args.dtype,)
    import jax

    if jax.config.jax_compilation_cache_dir:
        raise weanj.InputError(
            "the persistent compilation cache is on (JAX_COMPILATION_CACHE_DIR): unset it, "
            "a cold compile is what is measured"
        )
    print(f"cold check compilations; jax {jax.__version__}, {jax.devices()[0].device_kind}")
    print("compilations (+ Enzyme-JAX's own probes) / compile seconds\n")
    print("| example | run | one program | separate programs |\n|---|---|---:|---:|")
    totals = {"one": [0.0, 0.0], "separate": [0.0, 0.0]}
    worst = {"float64": 0, "float32": 0}
    figures = []
    for k, cat in enumerate(catalogs(names)):
        # the two ways in turn, the first alternating between examples: a machine whose
        # load changes during the run favours neither
        if k % 2:
            with separate_programs(cat):
                separate, wall_separate = cold_check(cat, dtypes)
            one, wall_one = cold_check(cat, dtypes)
        else:
            one, wall_one = cold_check(cat, dtypes)
            with separate_programs(cat):
                separate, wall_separate = cold_check(cat, dtypes)
        totals["one"][0] += sum(r[2] for r in one.values())
        totals["one"][1] += wall_one
        totals["separate"][0] += sum(r[2] for r in separate.values())
        totals["separate"][1] += wall_separate
        for key in sorted(set(one) | set(separate)):
            name, dtype = key
            label = name if dtype in ("", "float64") else f"{name}@{dtype}"
            print(f"| {cat.name} | {label} | {_cell(one.get(key))} | {_cell(separate.get(key))} |")
            if key != OTHER and key in one:
                worst[dtype] = max(worst[dtype], one[key][0])
            figures.append(
                {"example": cat.name, "variant": name, "dtype": dtype,
                 "one": one.get(key), "separate": separate.get(key)}
            )  # fmt: skip
        sys.stdout.flush()
    print(
        f"\ncompile seconds: {totals['one'][0]:.1f} one program, "
        f"{totals['separate'][0]:.1f} separate programs; wall seconds of the checks: "
        f"{totals['one'][1]:.1f} / {totals['separate'][1]:.1f}"
    )
    met = [
        _common.acceptance(
            "compilations per (variant, float64), with the jvp", worst["float64"], 2
        ),
        _common.acceptance("compilations per (variant, float32)", worst["float32"], 1),
        _common.acceptance(
            "compile seconds, one program / separate programs",
            _common.ratio(totals["one"][0], totals["separate"][0]),
            0.6,
        ),
    ]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"figures": figures, "totals": totals}, f, indent=1)
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(_common.entry(main))
