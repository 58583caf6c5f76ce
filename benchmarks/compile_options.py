"""Would an XLA option compile a check's programs faster, with the same numbers? (issue 51)

Run by hand from the repository root:

    python benchmarks/compile_options.py                 # the gallery (~8 min idle)
    python benchmarks/compile_options.py --examples 01-jacobi --no-bits

`compile_cost.py` measures what one program per evaluation saves against the separate
programs. This asks what is left: whether XLA's CPU compiler, told to work less, compiles
those same programs in fewer seconds without changing a single number of the check. Two
measurements per option set:

- **compile seconds**: every program a cold check of each example compiles (as
  `compile_cost.py` judges it, one-program way), each compiled again under every option
  set right after its own compilation, twice in alternating order, the faster of the two
  kept: paired, so the machine's load moves every option set alike. The hook is JAX's
  private `jax._src.compiler.backend_compile_and_load` (the options go in as
  `CompileOptions.env_option_overrides`, what `jax.jit(compiler_options=...)` sets).
- **the numbers**: `weanj check --fresh` of the gallery in a fresh folder per option set
  (`XLA_FLAGS`, the same options for every program), and its gradient files compared bit
  for bit with the default's (`--no-bits` skips this part).

An option that changes bits changes what weanj would judge: the check would no longer
compute the numbers the user's own call of the variant computes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common

import weanj

OPTIONS: dict[str, list[tuple[str, object]]] = {
    "default": [],
    "optimization level 1": [("xla_backend_optimization_level", 1)],
    "optimization level 0": [("xla_backend_optimization_level", 0)],
    "fusion emitters off": [("xla_cpu_use_fusion_emitters", False)],
    "vector width 128": [("xla_cpu_prefer_vector_width", 128)],
    "codegen split 1": [("xla_cpu_parallel_codegen_split_count", 1)],
}


def compile_seconds(names: list[str] | None) -> dict[str, float]:
    """`{option set: seconds}` summed over every program of a cold check (module docstring)."""
    import compile_cost
    from jax._src import compiler

    from weanj._model import DTYPES
    from weanj._registry import catalogs

    seconds = {k: 0.0 for k in OPTIONS}
    original = compiler.backend_compile_and_load
    busy = [False]

    def again(backend, module, devices, options, callbacks):
        out = original(backend, module, devices, options, callbacks)
        if busy[0] or callbacks:
            return out
        busy[0] = True
        saved = list(options.env_option_overrides)
        best = {}
        try:
            for order in (list(OPTIONS), list(OPTIONS)[::-1]):
                for name in order:
                    options.env_option_overrides = saved + OPTIONS[name]
                    t0 = time.perf_counter()
                    backend.compile_and_load(
                        module, executable_devices=devices, compile_options=options
                    )
                    dt = time.perf_counter() - t0
                    best[name] = min(best.get(name, dt), dt)
        finally:
            options.env_option_overrides = saved
            busy[0] = False
        for name, dt in best.items():
            seconds[name] += dt
        return out

    compiler.backend_compile_and_load = again
    try:
        for cat in catalogs(names):
            compile_cost.cold_check(cat, DTYPES)
            print(f"  compiled {cat.name} under {len(OPTIONS)} option sets", file=sys.stderr)
    finally:
        compiler.backend_compile_and_load = original
    return seconds


def gradient_bits(folder: Path) -> dict[str, bytes]:
    """`{file/dataset: bytes}` of every float dataset of the check's gradient files."""
    import h5py

    out = {}
    for path in sorted(folder.glob("results/*/gradients/**/*.h5")):
        with h5py.File(path, "r") as f:

            def keep(name, obj, path=path):
                if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "fc":
                    out[f"{path.relative_to(folder)}/{name}"] = obj[()].tobytes()

            f.visititems(keep)
    return out


def check_under(flags: list[tuple[str, object]], names: list[str] | None, where: Path):
    """`weanj check --fresh` of the examples in a fresh folder under these options:
    `(seconds, {dataset: bytes})`."""
    here = Path.cwd()
    where.mkdir()
    shutil.copy(here / "pyproject.toml", where / "pyproject.toml")
    shutil.copytree(here / "shared_inputs", where / "shared_inputs")
    env = dict(os.environ, WEANJ_ROOT=str(where))
    env["XLA_FLAGS"] = " ".join(f"--{k}={str(v).lower()}" for k, v in flags)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "weanj", "check", "--fresh", *(names or [])],
        cwd=where, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        timeout=1800, check=False,
    )  # fmt: skip
    return time.perf_counter() - t0, gradient_bits(where)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", nargs="+", default=None, help="default: the gallery")
    parser.add_argument("--no-bits", action="store_true", help="compile seconds only")
    args = parser.parse_args()
    known = set(weanj.example_names())
    for name in args.examples or ():
        if name not in known:
            raise weanj.InputError(f"no example {name!r} (known: {', '.join(sorted(known))})")
    import jax

    print(f"XLA CPU options and a cold check's compile seconds; jax {jax.__version__}")
    seconds = compile_seconds(args.examples)
    bits: dict[str, tuple[float, int, int]] = {}
    if not args.no_bits:
        with tempfile.TemporaryDirectory(prefix="weanj-options-") as tmp:
            base = None
            for k, (name, flags) in enumerate(OPTIONS.items()):
                wall, found = check_under(flags, args.examples, Path(tmp) / f"run{k}")
                base = found if base is None else base
                same = sum(found.get(key) == value for key, value in base.items())
                bits[name] = (wall, same, len(base))
                print(f"  checked under {name}", file=sys.stderr)
    print("\n| options | compile seconds | of the default's | weanj check --fresh | "
          "gradient datasets bitwise the default's |\n|---|---:|---:|---:|---:|")  # fmt: skip
    for name in OPTIONS:
        row = f"| {name} | {seconds[name]:.2f} | {seconds[name] / seconds['default']:.3f} |"
        if name in bits:
            wall, same, total = bits[name]
            row += f" {wall:.0f} s | {same} of {total} |"
        else:
            row += " - | - |"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(_common.entry(main))
