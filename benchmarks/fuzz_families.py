"""`weanj fuzz` on every built-in example, S seconds each (issue 23, acceptance 5).

Run by hand from the repository root (about 5 minutes at the default 60 s):

    python benchmarks/fuzz_families.py                   # every built-in example, 60 s each
    python benchmarks/fuzz_families.py --seconds 20 03-advection

Each example runs `python -m weanj fuzz EX --seconds S` in a fresh process (as a user
runs it; the compilation cache and the fuzz database live in the checkout's ignored
folders), in a copy of nothing: the draws never touch the shared inputs or the store, and
failing draws go to `results/EX/cases/` and `results/.weanj-fuzz/` (both ignored by git).
Printed per example: the pairs, how many draws ran in how many seconds, and every
failure with its shrunk case (the command's own lines starting with FAIL or a verdict);
then a summary table. Exit status: 1 when any example found a disagreement.

The database makes a second run start from what the first found: delete
`results/.weanj-fuzz/` for a fresh search.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def builtin_examples() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", "import weanj; print('\\n'.join(weanj.example_names()))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


def fuzz(example: str, seconds: float, max_examples: int) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable, "-m", "weanj", "fuzz", example,
            "--seconds", str(seconds), "--max-examples", str(max_examples),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    return r.returncode, r.stdout + r.stderr, time.perf_counter() - t0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", help="default: every built-in example")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-examples", type=int, default=100_000, help="default: no bound")
    args = parser.parse_args(argv)
    rows = []
    for example in args.examples or builtin_examples():
        print(f"=== {example}: weanj fuzz --seconds {args.seconds:g}", flush=True)
        code, text, wall = fuzz(example, args.seconds, args.max_examples)
        keep = [
            line
            for line in text.splitlines()
            if line.startswith(("fuzz ", "FAIL", "  skipped", "  drawing", "  x", "  case"))
            or re.match(r"\s+\S+::\S+: ", line)
            or "element(s) in" in line
            or "error" in line.lower()
        ]
        print("\n".join(keep), flush=True)
        summary = next(
            (line for line in reversed(text.splitlines()) if line.startswith("fuzz ")), ""
        )
        rows.append((example, code, wall, summary))
    print("\n| example | exit | wall [s] | summary |\n| --- | ---: | ---: | --- |")
    for example, code, wall, summary in rows:
        print(f"| {example} | {code} | {wall:.0f} | {summary} |")
    return 1 if any(code != 0 for _, code, _, _ in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
