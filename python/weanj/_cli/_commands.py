"""The command line's side of each command: the parsed options become typed values, the
command's function (`_commands`, the same the Python API calls) runs, and its result is
printed. Nothing here judges or computes. Results go to stdout; progress, notes and
errors to stderr, each once.
"""

from __future__ import annotations

import argparse
import difflib
import json
from typing import Any

import numpy as np

from .._errors import InputError, WeanjError, say, with_list, wrapped
from ._words import suggestion


def param_values(ex, words: dict[str, str], options: list[str] = ()) -> dict[str, Any]:
    """`{name: value}` from `--NAME V` words, each parsed by the example's `Param`; an
    unknown name is one line with the likeliest meaning (a parameter in another case, the
    command's own option it abbreviates, a typo)."""
    out = {}
    for name, text in words.items():
        if name not in ex.param_names:
            params = [f"--{p}" for p in ex.param_names]
            hint = suggestion(f"--{name}", params)
            if not hint:
                hint = suggestion(f"--{name}", list(options))
            if not hint:
                close = difflib.get_close_matches(name, ex.param_names, n=1, cutoff=0.5)
                hint = f"; did you mean --{close[0]}?" if close else ""
            head = f"{ex.name} has no parameter {name} (--{name}){hint}"
            raise InputError(with_list(head, "its parameters", params))
        out[name] = ex.param(name).parse(text)
    return out


def _example(name: str):
    from .._registry import example

    return example(name)


def _catalogs(names: list[str] | None):
    """The catalogs of the examples named (default: all): the names looked up once, here."""
    from .._registry import catalogs

    return catalogs(names or None)


def _catalog(name: str):
    from .._registry import catalog

    return catalog(name)


def cmd_list(args: argparse.Namespace, words: dict) -> int:
    from .._commands.listing import listing
    from .._registry import project

    cats = _catalogs(args.examples)
    print("\n".join(listing(cats, project())))
    return 0


def cmd_new(args: argparse.Namespace, words: dict) -> int:
    from .._commands.new import scaffold

    written, commands = scaffold(args.name)
    print(f"wrote {', '.join(written[:-1])} and {written[-1]}")
    print("next:")
    for line in commands:
        print(f"  {line}")
    return 0


def cmd_inputs(args: argparse.Namespace, words: dict) -> int:
    from .._commands import inputs

    cats = _catalogs(args.examples)
    if args.action == "regenerate":
        for path in inputs.regenerate(cats):
            print(f"wrote {path}")
        return 0
    failed = 0
    for _name, ok, message in inputs.verify(cats):
        if ok:
            print("ok    " + wrapped(message))
        else:
            say("FAIL  " + wrapped(message))
        failed += not ok
    return 2 if failed else 0


def cmd_run(args: argparse.Namespace, words: dict) -> int:
    from .._commands.run import run
    from .._registry import variant

    ex = _example(args.example)
    params = param_values(ex, words, args.options)
    done = run(
        ex,
        variant(ex, args.variant),
        inputs=args.inputs,
        params=params,
        dtype=args.dtype,
        out=args.out,
        force=args.force,
        timeout=args.timeout,
        processes=args.processes,
        traceback=args.traceback,
        device=args.device,
    )
    g = done.gradient
    shown = "".join(f"{k}={val} " for k, val in g.params.items())
    norms = "  ".join(f"‖∂L/∂{n}‖ = {float(np.linalg.norm(a)):.6e}" for n, a in g.gradients.items())
    print(
        f"{g.example.name} {g.label} {shown}{g.dtype}: loss "
        f"= {g.loss:.15e}  {norms}  ({g.seconds:.2f} s)"
    )
    if g.distributed is not None:
        print(f"evaluated under jax.distributed on {g.distributed.processes} processes")
    print(f"saved {done.path}")
    if done.note:
        print(done.note)
    return 0


def _not_judged_said(judgement) -> int:
    """The judgement's exit code (2 where an example could not be judged), the error of
    each such example said once, on stderr (`diff` and `check` alike)."""
    for name, error in judgement.not_judged.items():
        say(wrapped(f"weanj: {name} not judged: {error}"))
    return judgement.exit_code


def cmd_diff(args: argparse.Namespace, words: dict) -> int:
    from .._commands.diff import diff
    from .._model._verdicts import CaseKind
    from .._places import places

    judgement = diff(args.example, runs=args.runs or None)
    ej = judgement[_example(args.example).name]
    if ej.error is None and not ej.subjects and not ej.of_kind(CaseKind.FILE):
        raise WeanjError(
            f"no gradients of {ej.name} in {places().results_of(ej.name)}; compute them with "
            f"`weanj check {ej.name}` or `weanj run {ej.name} VARIANT`"
        )
    plots = []
    if args.plot and ej.error is None:
        from .._report._figures import plot_pairs

        plots = plot_pairs(ej, places().diff_plots(ej.name), recorded=args.plot_recorded)
    if args.json:
        out = judgement.to_json()["examples"][0]
        out["plots"] = [str(path) for _, path in plots if path is not None]
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        print("\n".join(judgement.lines()))
        for j, path in plots:
            where = f"wrote {path}" if path else "bitwise equal: no picture"
            say(f"  plot {j.subjects[0]} vs {j.subjects[1]} ({j.array}): {where}")
    return _not_judged_said(judgement)


def cmd_clean(args: argparse.Namespace, words: dict) -> int:
    from .._commands.clean import clean

    cats = _catalogs(args.examples)
    clean(cats, whole_project=not args.examples, yes=args.yes, dry_run=args.dry_run, say=print)
    return 0


def cmd_check(args: argparse.Namespace, words: dict) -> int:
    from .._check_options import CheckOptions
    from .._commands.check import checking
    from .._report._outputs import FORMATS

    judgement = checking(
        args.examples or None,
        CheckOptions.from_args(args),
        say=getattr(args, "say", say),  # `main`'s, which counts silence from the start
        listeners=[FORMATS[args.format](verbose=args.verbose)],  # what stdout shows
    )
    return _not_judged_said(judgement)


def cmd_bench(args: argparse.Namespace, words: dict) -> int:
    from .._commands import bench
    from .._registry import chosen_variants
    from .._report._bench_table import markdown_table

    cat = _catalog(args.example)
    ex = cat.example
    params = param_values(ex, words, args.options)
    memory_over: Any = bench.DEFAULT
    if args.memory_Ks is not None:  # the Poisson examples' spelling of --memory-over K ...
        memory_over = ("K", args.memory_Ks) if args.memory_Ks else None
    if args.memory_over is not None:
        memory_over = bench.sweep_option(args.memory_over, "--memory-over")
    chosen = chosen_variants(cat, args.variants) if args.variants else None
    done = bench.bench(
        cat,
        chosen,
        sizes=args.sizes,
        params=params,
        dtype=args.dtype,
        device=args.device,
        budget_s=args.budget_s,
        samples=args.samples,
        over=bench.sweep_option(args.over, "--over"),
        memory_over=memory_over,
        devices=args.devices,
        timeout=args.timeout,
        replace=args.replace,
    )
    if not done.records and not done.errors:
        if not done.by_backend:
            raise WeanjError(f"no variant of {ex.name} to benchmark on {args.device}")
        say(
            f"weanj: timeout: no point of {ex.name} was measured within the time limit; "
            "nothing was written"
        )
        return 1
    if done.records:
        print(markdown_table(ex, done.records))
    for path in done.paths:
        print(f"wrote {path}")
    return 1 if done.errors else 0


def cmd_plot(args: argparse.Namespace, words: dict) -> int:
    from .._commands.plot import plot

    for path in plot(_catalog(args.example)):
        print(f"wrote {path}")
    return 0


def cmd_report(args: argparse.Namespace, words: dict) -> int:
    from .._commands.report import report

    done = report(args.examples or None, out=args.out, format=args.format, force=args.force)
    if done.path is not None:
        size = done.path.stat().st_size
        print(f"wrote {done.path} ({size / 1024:.0f} KiB): {done.verdict} — {done.sentence}")
    return 0


def cmd_bisect(args: argparse.Namespace, words: dict) -> int:
    from .._commands.bisect import bisect
    from .._run_names import same_family_pair

    cat = _catalog(args.example)
    params = param_values(cat.example, words, args.options)
    a, b = same_family_pair(cat, args.a, args.b, "bisect", dtype=args.dtype, device=args.device)
    done = bisect(
        cat, a, b, over=args.over, params=params, inputs=args.inputs, timeout=args.timeout
    )
    return done.exit_code


def cmd_fuzz(args: argparse.Namespace, words: dict) -> int:
    from .._commands.fuzz import fuzz
    from .._run_names import chosen_pairs

    cat = _catalog(args.example)
    named = [tuple(p) for p in args.pairs or ()]
    pairs = chosen_pairs(cat, named, "--pairs", dtype=args.dtype, device=args.device)
    done = fuzz(
        cat,
        pairs=pairs or None,
        dtype=args.dtype or "float64",
        max_examples=args.max_examples,
        seconds=args.seconds,
        timeout=args.timeout,
        device=args.device,
        seed=args.seed,
    )
    return done.exit_code


COMMANDS = {
    "report": cmd_report,
    "bisect": cmd_bisect,
    "fuzz": cmd_fuzz,
    "list": cmd_list,
    "new": cmd_new,
    "inputs": cmd_inputs,
    "run": cmd_run,
    "diff": cmd_diff,
    "check": cmd_check,
    "clean": cmd_clean,
    "bench": cmd_bench,
    "plot": cmd_plot,
}
