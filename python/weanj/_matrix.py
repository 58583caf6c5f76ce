"""The cross-validation matrix of a project's examples: the cases and their checks.

One implementation with two front ends: `pytest --weanj` (the plugin, `_pytest_plugin`)
turns each case into a test item, and weanj's own `tests/crossval` parametrises its tests
with the same cases and runs the same checks. `weanj check` judges with the same pieces
(`compare`, the example's `FDPolicy` through `_check.fd_check_arrays`).

The cases, per example, all on the shared inputs:

- `pair`: every same-family pair of variants, per gradient array
  (id `02-gauss-seidel::lex::jax-lex~jax-wavefront`, with `::<array>` when there are several);
- `fd`: every variant against central differences under the example's `FDPolicy`
  (`…::lex::jax-lex::fd`);
- `recorded`: every variant against each recorded reference of its family in
  `results/<example>/recorded/` (`…::lex::jax-lex~recorded/julia-lex`).

Variants unavailable here give cases that skip, saying why.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from pathlib import Path

from ._compare import compare, tolerance
from ._diff import compare_away_from_kinks
from ._errors import WeanjError
from ._inputs import inputs_path, read_inputs_file
from ._registry import example, example_names, families, find_variant, unavailable_variants
from ._root import results_dir


@dataclass(frozen=True)
class Case:
    """One check of the matrix."""

    example: str
    kind: str  # "pair", "fd" or "recorded"
    family: str
    variants: tuple[str, ...]  # pair: (reference, other); fd and recorded: (variant,)
    array: str | None = None  # pair: the gradient array compared
    recorded: Path | None = None  # recorded: the reference file
    skip: str | None = None  # why the case cannot run here

    @property
    def id(self) -> str:
        if not self.variants:  # a recorded file that cannot be read
            return f"{self.example}::recorded/{self.recorded.stem}"
        head = f"{self.example}::{self.family}::"
        if self.kind == "pair":
            several = len(example(self.example).wrt_names) > 1
            return head + "~".join(self.variants) + (f"::{self.array}" if several else "")
        if self.kind == "fd":
            return head + f"{self.variants[0]}::fd"
        return head + f"{self.variants[0]}~recorded/{self.recorded.stem}"


def _skip_reason(example_name: str, names) -> str | None:
    missing = unavailable_variants(example_name)
    reasons = [f"{name}: {missing[name]}" for name in names if name in missing]
    return "; ".join(reasons) or None


def recorded_files(example_name: str) -> list[Path]:
    return sorted((results_dir(example_name) / "recorded").glob("*.h5"))


def cases(examples: list[str] | None = None) -> list[Case]:
    """Every case of the matrix of the given examples (default: the project's)."""
    from ._store import read_gradient_file

    out = []
    for ex_name in examples or example_names():
        ex = example(ex_name)
        recorded = []
        for path in recorded_files(ex.name):
            try:
                recorded.append((path, read_gradient_file(path).family))
            except WeanjError:  # unreadable: one case that fails, saying why
                out.append(Case(ex.name, "recorded", "", (), recorded=path))
        for family, names in families(ex.name).items():
            for a, b in itertools.combinations(names, 2):
                skip = _skip_reason(ex.name, (a, b))
                for array in ex.wrt_names:
                    out.append(Case(ex.name, "pair", family, (a, b), array, skip=skip))
            for name in names:
                out.append(Case(ex.name, "fd", family, (name,), skip=_skip_reason(ex.name, [name])))
            for name in names:
                for path, recorded_family in recorded:
                    if recorded_family == family:
                        out.append(
                            Case(
                                ex.name,
                                "recorded",
                                family,
                                (name,),
                                recorded=path,
                                skip=_skip_reason(ex.name, [name]),
                            )
                        )
    return out


@functools.cache
def _evaluation(example_name: str, name: str, path: str, sha256: str, params: tuple, dtype: str):
    from ._run import evaluate

    del path, sha256  # part of the cache key: another inputs file is another evaluation
    return evaluate(example_name, name, params=dict(params), dtype=dtype)


def shared_evaluation(example_name: str, name: str, params=None, dtype: str = "float64"):
    """`weanj.evaluate` of a variant on the shared inputs, once per process and inputs."""
    ex = example(example_name)
    path = inputs_path(ex.name)
    data = read_inputs_file(ex.name, path, shared=True)
    chosen = {**data["params"], **(params or {})}
    return _evaluation(
        ex.name, name, str(path), data["sha256"], tuple(sorted(chosen.items())), dtype
    )


class CheckFailure(AssertionError):
    """A case whose check failed; the message says where and by how much."""


class CaseSkipped(Exception):
    """A case that cannot be judged here (e.g. a reference recorded on other inputs)."""


def _index(idx) -> str:
    return "(" + ", ".join(str(i) for i in idx) + ")"


def _describe(c, what: str) -> str:
    tol = tolerance(c.dtype)
    more = "…" if c.differing > len(c.differing_at) else ""
    listed = ", ".join(_index(i) for i in c.differing_at[:5])
    text = (
        f"{what}: max|Δ|/max|g_ref| = {c.max_rel:.2e} (tolerance {tol.grad:g}) at numpy "
        f"{_index(c.worst)} / Julia {_index(c.worst_julia)}, {c.ulp} ULP; "
        f"{c.differing} element(s) beyond tolerance ({listed}{more})"
    )
    if c.loss_rel is not None:
        text += f"; |ΔL|/|L| = {c.loss_rel:.2e} (tolerance {tol.loss:g})"
    return text


def run_case(case: Case) -> str:
    """Run one case's check; raises `CheckFailure` when it fails, returns a summary when
    it passes (for reports)."""
    from ._check import fd_check_arrays

    ex = example(case.example)
    if case.kind == "pair":
        a, b = (shared_evaluation(ex.name, n) for n in case.variants)
        c = compare(a.gradients[case.array], b.gradients[case.array], a.loss, b.loss)
        what = f"{case.variants[1]} vs {case.variants[0]} ({case.array})"
        if not c.agree:
            judged = compare_away_from_kinks(
                ex,
                *case.variants,
                case.array,
                a.gradients[case.array],
                b.gradients[case.array],
                a.loss,
                b.loss,
                a.params,
            )
            if judged is None or not judged[1].agree:
                raise CheckFailure(_describe(c, what))
            return f"{what}: differs only at the kinks ({c.differing} element(s)): {judged[0]}"
        return f"{what}: max|Δ|/max|g_ref| = {c.max_rel:.1e}"
    if case.kind == "fd":
        from ._registry import variant

        (name,) = case.variants
        ev = shared_evaluation(ex.name, name)
        data = read_inputs_file(ex.name, inputs_path(ex.name), shared=True)
        results = fd_check_arrays(
            ex, variant(ex.name, name).loss, dict(data["arrays"]), ev.params, ev.gradients
        )
        bad = {k: r.error for k, r in results.items() if r.checked and r.error > ex.fd.threshold}
        left_out = {k: r.left_out for k, r in results.items() if r.left_out}
        detail = ", ".join(
            f"{k} {r.error:.1e}" if r.checked else f"{k} not checked" for k, r in results.items()
        )
        if left_out:
            detail += f"; left out by the mask: {left_out}"
        if bad or not any(r.checked for r in results.values()):
            raise CheckFailure(
                f"{name}: finite differences disagree beyond {ex.fd.threshold:g}: {detail}"
            )
        return f"{name}: fd error {detail}"
    return _run_recorded(case)


def _run_recorded(case: Case) -> str:
    from ._store import read_gradient_file

    try:
        stored = read_gradient_file(case.recorded)
    except WeanjError as e:
        raise CheckFailure(str(e)) from None
    registered = find_variant(case.example, stored.variant)
    if registered is not None and registered.family != stored.family:
        raise CheckFailure(
            f"{case.recorded} says variant {stored.variant} is of family {stored.family}, "
            f"but it is registered in family {registered.family}"
        )
    (name,) = case.variants
    current = read_inputs_file(case.example, inputs_path(case.example), shared=True)
    if stored.inputs_sha256 != current["sha256"]:
        raise CaseSkipped(
            f"{case.recorded.name} was recorded on other inputs (sha256 "
            f"{stored.inputs_sha256[:12]}…, current {current['sha256'][:12]}…); re-record it"
        )
    live = shared_evaluation(case.example, name, params=stored.params, dtype=stored.dtype)
    problems = []
    for array, g_ref in stored.gradients.items():
        c = compare(g_ref, live.gradients[array], stored.loss, live.loss)
        if not c.agree:
            problems.append(_describe(c, f"{array}"))
    if problems:
        raise CheckFailure(
            f"{name} vs recorded {case.recorded.name} ({stored.backend_version}): "
            + "; ".join(problems)
        )
    return f"{name} agrees with recorded/{case.recorded.stem}"


def record_references(examples: list[str] | None = None) -> list[Path]:
    """Write each family's reference gradient into `results/<example>/recorded/`: the
    family's first variant available here, on the shared inputs (`--weanj-record`)."""
    from ._registry import variants
    from ._store import gradient_path

    written = []
    for ex_name in examples or example_names():
        available = set(variants(ex_name))
        for names in families(ex_name).values():
            runnable = [n for n in names if n in available]
            if not runnable:
                continue
            ev = shared_evaluation(ex_name, runnable[0])
            written.append(ev.save(gradient_path(ex_name, runnable[0], recorded=True)))
    return written
