"""Every path weanj reads or writes under a project root, in one place (docs/DESIGN.md,
"Files"):

    shared_inputs/<example>.h5                       the shared inputs
    results/<example>/gradients/<variant>.h5         float64 runs on the shared inputs
    results/<example>/gradients/float32/<variant>.h5 float32 runs on the shared inputs
    results/<example>/recorded/<name>.h5             committed references (any dtype)
    results/<example>/runs/<variant>-<...>.h5        runs on other inputs; never compared
    results/<example>/cases/<stem>.h5                cases written by bisect and fuzz
    results/<example>/evaluations/<label>.npz        evaluation records (reuse)
    results/<example>/check.json                     the last check's verdicts (the report)
    results/<example>/bench/<backend>-<device>.json  benchmark records
    results/<example>/plots/, diff/                  pictures
    results/report.html, report.md                   the report
    results/.weanj-fuzz/<example>/<pairs>/           fuzz's Hypothesis database
    .weanj-cache/                                    JAX's compilation cache

A name that becomes a path component (an example, a variant, a backend or a dtype read
from a file) is checked here: nothing outside these folders is ever named.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ._errors import InputError
from ._project import project_root

PRODUCED, RECORDED, RUNS = "gradients", "recorded", "runs"
CHECK_FILE = "check.json"
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]{0,199}\Z")


def component(name: str, what: str = "name") -> str:
    """`name` if it can be one path component here (no separator, no `..`), else an
    `InputError`: names read from files never become paths unchecked."""
    if not isinstance(name, str) or not _COMPONENT.match(name) or ".." in name:
        shown = " ".join(repr(name).split())[:60]
        raise InputError(f"{what} {shown} cannot name a file (letters, digits and . _ + @ - only)")
    return name


@dataclass(frozen=True)
class ResultPath:
    """Where a path lies in a project's results: `kind` is "gradients", "recorded",
    "runs" or "other" (anything else under results/)."""

    example: str
    kind: str
    dtype: str = "float64"


@dataclass(frozen=True)
class Places:
    """The paths of one project root."""

    root: Path

    # --- inputs -----------------------------------------------------------------------

    @property
    def shared_inputs(self) -> Path:
        return self.root / "shared_inputs"

    def inputs(self, example: str) -> Path:
        return self.shared_inputs / f"{component(example, 'example')}.h5"

    # --- results ----------------------------------------------------------------------

    @property
    def results(self) -> Path:
        return self.root / "results"

    def results_of(self, example: str) -> Path:
        return self.results / component(example, "example")

    def gradients(self, example: str, dtype: str = "float64") -> Path:
        folder = self.results_of(example) / PRODUCED
        return folder if dtype == "float64" else folder / component(dtype, "dtype")

    def gradient(self, example: str, variant: str, dtype: str = "float64") -> Path:
        return self.gradients(example, dtype) / f"{component(variant, 'variant')}.h5"

    def recorded_dir(self, example: str) -> Path:
        return self.results_of(example) / RECORDED

    def recorded(self, example: str, name: str) -> Path:
        return self.recorded_dir(example) / f"{component(name, 'variant')}.h5"

    def runs(self, example: str) -> Path:
        return self.results_of(example) / RUNS

    def run_file(self, example: str, variant: str, parts: list[str]) -> Path:
        stem = "-".join([component(variant, "variant"), *parts])
        return self.runs(example) / f"{component(stem, 'file name')}.h5"

    def cases(self, example: str) -> Path:
        return self.results_of(example) / "cases"

    def case_file(self, example: str, stem: str) -> Path:
        return self.cases(example) / f"{component(stem, 'case')}.h5"

    def evaluations(self, example: str) -> Path:
        return self.results_of(example) / "evaluations"

    def check_file(self, example: str) -> Path:
        return self.results_of(example) / CHECK_FILE

    def bench(self, example: str) -> Path:
        return self.results_of(example) / "bench"

    def bench_file(self, example: str, backend: str, device: str) -> Path:
        name = f"{component(backend, 'backend')}-{component(device, 'device')}.json"
        return self.bench(example) / name

    def plots(self, example: str) -> Path:
        return self.results_of(example) / "plots"

    def diff_plots(self, example: str) -> Path:
        return self.results_of(example) / "diff"

    def report(self, fmt: str) -> Path:
        return self.results / f"report.{component(fmt, 'format')}"

    def fuzz_database(self, example: str, pairs_digest: str) -> Path:
        return self.results / ".weanj-fuzz" / component(example, "example") / pairs_digest

    @property
    def cache(self) -> Path:
        return self.root / ".weanj-cache"

    # --- what a path is -------------------------------------------------------------------

    def result_path(self, path: Path) -> ResultPath | None:
        """Where `path` lies in the results, or None outside `results/`."""
        results = self.results.resolve()
        try:
            # realpath, not Path.resolve: a symbolic link loop is no RuntimeError here
            parts = Path(os.path.realpath(path)).relative_to(results).parts
        except ValueError:
            return None
        if len(parts) == 3 and parts[1] in (PRODUCED, RECORDED, RUNS):
            return ResultPath(parts[0], parts[1])
        if len(parts) == 4 and parts[1] == PRODUCED and parts[2] == "float32":
            return ResultPath(parts[0], PRODUCED, "float32")
        return ResultPath(parts[0] if len(parts) > 1 else "", "other")

    def protected(self, path: Path) -> str | None:
        """Why no report, picture or benchmark may be written at `path` (None: it may):
        the shared inputs, the store, recorded references, cases, evaluation records and
        check files are weanj's data, never replaced by a page or a picture."""
        real = Path(os.path.realpath(path))
        if real.parent == self.shared_inputs.resolve():
            return "it is in shared_inputs/ (the shared inputs)"
        at = self.result_path(real)
        if at is None:
            return None
        if at.kind in (PRODUCED, RECORDED, RUNS):
            return f"it is in the gradient store (results/{at.example}/{at.kind}/)"
        inside = real.relative_to(self.results.resolve()).parts
        if len(inside) >= 2 and inside[1] in ("cases", "evaluations", "bench"):
            return f"it is in results/{inside[0]}/{inside[1]}/ (weanj's data)"
        if len(inside) == 2 and inside[1] == CHECK_FILE:
            return f"it is the verdicts file of {inside[0]} (results/{inside[0]}/{CHECK_FILE})"
        if inside and inside[0] == ".weanj-fuzz":
            return "it is in fuzz's database (results/.weanj-fuzz/)"
        return None

    def shown(self, path: Path) -> str:
        """`path` relative to the root where it lies inside (commands run there)."""
        try:
            return str(Path(path).resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)


def places() -> Places:
    """The paths of the current project."""
    return Places(project_root())
