"""The commands: each turns the parsed options into typed values, calls weanj's own
functions and prints what they return. Nothing here judges or computes."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from typing import Any

import numpy as np

from .._errors import InputError, WeanjError, error_text, say, with_list, wrapped


def param_values(ex, words: dict[str, str]) -> dict[str, Any]:
    """`{name: value}` from `--NAME V` words, each parsed by the example's `Param`."""
    out = {}
    for name, text in words.items():
        if name not in ex.param_names:
            # the case first (`--k` for `--K`: difflib sees no likeness in one letter)
            close = [p for p in ex.param_names if p.lower() == name.lower()]
            close = close or difflib.get_close_matches(name, ex.param_names, n=1, cutoff=0.5)
            hint = f"; did you mean --{close[0]}?" if close else ""
            head = f"{ex.name} has no parameter {name}{hint}"
            raise InputError(with_list(head, "its parameters", [f"--{p}" for p in ex.param_names]))
        out[name] = ex.param(name).parse(text)
    return out


def cmd_list(args: argparse.Namespace, words: dict) -> int:
    from .._registry import example, example_names, families, project, unavailable_variants

    config = project()
    names = [example(n).name for n in args.examples] if args.examples else example_names()
    print(f"{config.describe()}")
    for name in names:
        ex = example(name)
        print(f"{name}: {ex.title}" if ex.title else name)
        print(f"  arrays: {'; '.join(a.describe() for a in ex.specs)}")
        params = ", ".join(f"{p.name}={p.default} ({p.range_text})" for p in ex.params) or "none"
        print(f"  gradient wrt {', '.join(ex.wrt_names)}; parameters: {params}")
        missing = unavailable_variants(name)
        for family, members in families(name).items():
            print(f"  family {family}:")
            for member in members:
                why = missing.get(member)
                print(f"    {member:<24} {'available' if why is None else 'unavailable: ' + why}")
    return 0


def cmd_new(args: argparse.Namespace, words: dict) -> int:
    from .._scaffold import scaffold, stem_of

    commands = scaffold(args.name)
    stem = stem_of(args.name)
    print(f"wrote examples/{stem}.py, julia/{stem}.jl and [tool.weanj] in pyproject.toml")
    print("next:")
    for line in commands:
        print(f"  {line}")
    return 0


def cmd_inputs(args: argparse.Namespace, words: dict) -> int:
    from .._io._inputs import verify_inputs, write_inputs
    from .._registry import example, example_names

    names = [example(n).name for n in args.examples] if args.examples else example_names()
    if args.action == "regenerate":
        for name in names:
            print(f"wrote {write_inputs(name)}")
        return 0
    failed = 0
    for _name, ok, message in verify_inputs(names):
        line = ("ok    " if ok else "FAIL  ") + wrapped(message)
        print(line, file=sys.stdout if ok else sys.stderr)
        failed += not ok
    return 2 if failed else 0


def cmd_run(args: argparse.Namespace, words: dict) -> int:
    from .. import _cache
    from .._io._inputs import read_inputs
    from .._io._store import check_target, write_gradient
    from .._model import Gradient
    from .._registry import example, variant
    from .._run import apart_note, default_path, evaluate, shared_inputs_or_none
    from .._watch import Watch

    ex = example(args.example)
    v = variant(ex, args.variant)
    params = param_values(ex, words)
    _cache.enable()
    inputs = read_inputs(ex, args.inputs)
    # The shared inputs with their own parameters (before --K etc.): what the store holds.
    shared = inputs if inputs.shared else shared_inputs_or_none(ex)
    if params:
        inputs = inputs.with_params(params)
    shared_key = shared.key(args.dtype) if shared is not None else None
    if args.out is not None:  # a place no gradient may go is refused before the variant runs
        planned = Gradient(
            ex,
            v.name,
            v.family,
            args.dtype,
            {},
            None,
            dict(inputs.params),
            inputs.digest,
            inputs.key(args.dtype),
        )
        check_target(args.out, planned, shared_key, force=args.force)
    # No progress line before the run: a mistake it finds must be the only stderr line.
    try:
        g = Watch(timeout_s=args.timeout).run(
            lambda: evaluate(ex, v, inputs=inputs, dtype=args.dtype), f"{ex.name} {v.name}"
        )
    except TimeoutError as e:  # the verdict timeout (a failure, exit 1), not a bad input
        print(f"weanj: timeout: {e}; nothing was saved", file=sys.stderr)
        return 1
    if not g.finite:
        raise InputError(
            f"{v.name} produced NaN/Inf on these inputs ({g.nonfinite_text()}); nothing was saved"
        )
    target = check_target(args.out or default_path(g, shared), g, shared_key, force=args.force)
    path = write_gradient(g, target, force=args.force)
    shown = "".join(f"{k}={val} " for k, val in g.params.items())
    norms = "  ".join(f"‖∂L/∂{n}‖ = {float(np.linalg.norm(a)):.6e}" for n, a in g.gradients.items())
    print(
        f"{ex.name} {g.variant} {shown}{g.dtype}: loss "
        f"= {g.loss:.15e}  {norms}  ({g.seconds:.2f} s)"
    )
    print(f"saved {path}")
    if args.out is None and apart_note(g, shared):
        print(apart_note(g, shared))
    return 0


def cmd_diff(args: argparse.Namespace, words: dict) -> int:
    from .._check import diff_store
    from .._project import results_dir
    from .._registry import example
    from .._report._figures import plot_pairs
    from .._report._json import example_json
    from .._report._text import example_lines

    ex = example(args.example)
    ej = diff_store(ex.name)
    if not ej.subjects and not ej.of_kind("file"):
        raise WeanjError(
            f"no gradients of {ex.name} in {results_dir(ex.name)}; compute them with "
            f"`weanj check {ex.name}` or `weanj run {ex.name} VARIANT`"
        )
    plots = (
        plot_pairs(ej, results_dir(ex.name) / "diff", recorded=args.plot_recorded)
        if args.plot
        else []
    )
    if args.json:
        out = example_json(ej)
        out["plots"] = [str(path) for _, path in plots if path is not None]
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        print("\n".join(example_lines(ej, mode="diff")))
        for j, path in plots:
            where = f"wrote {path}" if path else "bitwise equal: no picture"
            say(f"  plot {j.subjects[0]} vs {j.subjects[1]} ({j.array}): {where}")
    return 0 if ej.ok else 1


def cmd_check(args: argparse.Namespace, words: dict) -> int:
    from .. import _cache
    from .._check import check_examples
    from .._report._text import example_lines, overall_line

    _cache.enable()
    clock = _cache.clock()
    t0 = time.perf_counter()
    dtypes = ("float64", "float32") if args.dtype == "both" else (args.dtype,)
    if args.dtype == "float32":
        dtypes = ("float64", "float32")  # float32 is judged against the float64 references
    results = check_examples(args.examples or None, dtypes=dtypes, timeout_s=args.timeout)
    from .._report._verdicts_file import write_check_verdicts

    write_check_verdicts(results)  # what `weanj report` shows of the gradient checks
    for ej in results:
        print("\n".join(example_lines(ej, mode="check")))
    print(overall_line(results, time.perf_counter() - t0, dtypes))
    print(clock.summary())
    errors = [ej.error for ej in results if ej.error is not None]
    for error in errors:  # an error is also one line on stderr (docs/DESIGN.md, "Command line")
        print(error_text(error), file=sys.stderr)
    if errors:
        return 2
    return 0 if all(ej.ok for ej in results) else 1


def cmd_bench(args: argparse.Namespace, words: dict) -> int:
    from .. import _bench, _cache
    from .._registry import example

    ex = example(args.example)
    _cache.enable()
    params = param_values(ex, words)
    memory_over: Any = _bench.DEFAULT
    if args.memory_Ks is not None:  # the Poisson examples' spelling of --memory-over K ...
        memory_over = ("K", args.memory_Ks) if args.memory_Ks else None
    if args.memory_over is not None:
        memory_over = _bench.sweep_option(args.memory_over, "--memory-over")
    by_backend = _bench.bench(
        ex.name,
        args.variants,
        sizes=args.sizes,
        params=params,
        dtype=args.dtype,
        device=args.device,
        budget_s=args.budget_s,
        samples=args.samples,
        over=_bench.sweep_option(args.over, "--over"),
        memory_over=memory_over,
        devices=args.devices,
        timeout_s=args.timeout,
    )
    if not by_backend:
        raise WeanjError(f"no variant of {ex.name} to benchmark on {args.device}")
    if not any(by_backend.values()):  # each variant's first point timed out (said above)
        print(
            f"weanj: timeout: no point of {ex.name} was measured within the time limit; "
            "nothing was written",
            file=sys.stderr,
        )
        return 1
    paths = _bench.write(ex.name, args.device, by_backend, replace=args.replace)
    print(_bench.markdown_table(ex, [r for rs in by_backend.values() for r in rs]))
    for path in paths:
        print(f"wrote {path}")
    return 0


def cmd_plot(args: argparse.Namespace, words: dict) -> int:
    from .._report._bench_plots import plot

    for path in plot(args.example):
        print(f"wrote {path}")
    return 0


def cmd_report(args: argparse.Namespace, words: dict) -> int:
    from .._report._page import command

    return command(args.examples or None, out=args.out, fmt=args.format)


def cmd_bisect(args: argparse.Namespace, words: dict) -> int:
    from .. import _cache
    from .._bisect import command
    from .._registry import example

    ex = example(args.example)
    _cache.enable()
    return command(
        ex, args.a, args.b, over=args.over, params=param_values(ex, words), timeout_s=args.timeout
    )


def cmd_fuzz(args: argparse.Namespace, words: dict) -> int:
    from .. import _cache
    from .._fuzz import command

    _cache.enable()
    pairs = [tuple(p) for p in args.pairs] if args.pairs else None
    return command(args.example, pairs=pairs, max_examples=args.max_examples, seconds=args.seconds)


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
    "bench": cmd_bench,
    "plot": cmd_plot,
}
