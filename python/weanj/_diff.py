"""`weanj diff`: every stored gradient of an example compared with every other, pairwise.

Gradients of one family compute the same function and must agree under the tolerance
policy (`_compare.TOLERANCES`); a pair that does not is a failure. Gradients of
different families are different algorithms: their family references are compared for
information only. A gradient or loss holding NaN/Inf is a failure whatever its family.

Each family's reference is its first registered variant present (then recorded
gradients, then unregistered names, alphabetically); within a pair, the left gradient
is the reference of the relative error `max|Δ| / max|g_ref|`. Examples with several
gradient arrays get one row per pair and array, each judged by its own `max|g_ref|`.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._compare import PairComparison, compare, tolerance
from ._errors import StaleGradientError, UnavailableError, WeanjError
from ._inputs import inputs_path, read_inputs_file
from ._registry import example, families, find_variant, kink_difference
from ._root import results_dir
from ._store import StoredGradient, stored_gradients

OK, FAIL, INFO, NONFINITE, KINKS = "ok", "FAIL", "info", "NaN/Inf", "kinks"


class NothingToCompareError(WeanjError):
    """The store holds no gradient of the example."""


@dataclass
class Entry:
    """A gradient in the report: its label (`jax-lex`, `recorded/julia-lex`) and contents."""

    label: str
    stored: StoredGradient

    @property
    def nonfinite_count(self) -> int:
        return sum(
            int(g.size - np.count_nonzero(np.isfinite(g))) for g in self.stored.gradients.values()
        )

    @property
    def nonfinite(self) -> bool:
        loss = self.stored.loss
        return self.nonfinite_count > 0 or (loss is not None and not math.isfinite(loss))


@dataclass
class Pair:
    """One comparison of one gradient array: `other` against `reference`, with the verdict."""

    reference: str
    other: str
    families: tuple[str, str]
    array: str
    comparison: PairComparison
    # A declared pair (`weanj.differ_at_kinks`) that agrees away from the kinks: why, and
    # the comparison on the entries away from them.
    kinks: str | None = None
    away_from_kinks: PairComparison | None = None

    @property
    def same_family(self) -> bool:
        return self.families[0] == self.families[1]

    @property
    def verdict(self) -> str:
        if self.comparison.nonfinite:
            return NONFINITE
        if not self.same_family:
            return INFO
        if self.comparison.agree:
            return OK
        return KINKS if self.kinks is not None else FAIL

    @property
    def failed(self) -> bool:
        return self.verdict in (FAIL, NONFINITE)


@dataclass
class DiffReport:
    """The pairwise comparison of an example's gradients."""

    example: str
    params: dict[str, int]
    inputs_sha256: str
    entries: list[Entry]
    pairs: list[Pair] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)  # elements per gradient array

    def failures(self) -> list[str]:
        """One line per failure: NaN/Inf gradients, then disagreeing same-family pairs."""
        out = []
        for e in self.entries:
            if e.nonfinite:
                out.append(_nonfinite_line(e))
        for p in self.pairs:
            if p.failed and p.same_family and p.verdict == FAIL:
                c = p.comparison
                tol = tolerance(c.dtype)
                out.append(
                    f"{p.families[0]}: {p.other} differs from {p.reference} in {p.array} by "
                    f"{c.max_rel:.2e}·max|g_ref| (tolerance {tol.grad:g}) at numpy "
                    f"{_index(c.worst)} / Julia {_index(c.worst_julia)}"
                    + (
                        f", loss by {c.loss_rel:.2e}·|L| (tolerance {tol.loss:g})"
                        if c.loss_rel is not None and c.loss_rel > tol.loss
                        else ""
                    )
                )
        return out

    @property
    def ok(self) -> bool:
        return not self.failures()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite numbers become `null`)."""
        gradients = []
        for e in self.entries:
            s = e.stored
            gradients.append(
                {
                    "label": e.label,
                    "variant": s.variant,
                    "family": s.family,
                    "recorded": s.recorded,
                    "path": str(s.path),
                    "dtype": s.dtype,
                    "backend": s.backend,
                    "backend_version": s.backend_version,
                    "created": s.created,
                    "loss": _finite(s.loss),
                    "arrays": {
                        name: {
                            "shape": list(g.shape),
                            "max_abs": _finite(float(np.max(np.abs(g))))
                            if np.all(np.isfinite(g)) and g.size
                            else None,
                        }
                        for name, g in s.gradients.items()
                    },
                    "nonfinite": e.nonfinite,
                    "nonfinite_count": e.nonfinite_count,
                }
            )
        pairs = []
        for p in self.pairs:
            c = p.comparison
            pairs.append(
                {
                    "reference": p.reference,
                    "other": p.other,
                    "families": list(p.families),
                    "same_family": p.same_family,
                    "array": p.array,
                    "max_abs": _finite(c.max_abs),
                    "max_rel": _finite(c.max_rel),
                    "worst": None if c.max_abs == 0 else list(c.worst),
                    "worst_julia": None if c.max_abs == 0 else list(c.worst_julia),
                    "ulp": c.ulp if c.ulp >= 0 else None,
                    "differing": c.differing,
                    "differing_at": [list(i) for i in c.differing_at],
                    "loss_abs": _finite(c.loss_abs),
                    "loss_rel": _finite(c.loss_rel),
                    "dtype": c.dtype,
                    "tolerance": {"grad": tolerance(c.dtype).grad, "loss": tolerance(c.dtype).loss},
                    "nonfinite": c.nonfinite,
                    "verdict": p.verdict,
                    "kinks": p.kinks,
                    "away_from_kinks_max_rel": _finite(p.away_from_kinks.max_rel)
                    if p.away_from_kinks is not None
                    else None,
                }
            )
        return {
            "example": self.example,
            "params": self.params,
            "inputs_sha256": self.inputs_sha256,
            "gradients": gradients,
            "pairs": pairs,
            "failures": self.failures(),
            "ok": self.ok,
        }

    def references(self) -> dict[str, str]:
        """`{family: label of its reference}`: the first entry of each family."""
        out: dict[str, str] = {}
        for e in self.entries:
            out.setdefault(e.stored.family, e.label)
        return out

    def lines(self, *, provenance: bool = True, all_pairs: bool = True) -> list[str]:
        """The human-readable report; `all_pairs=False` shows only the pairs with a family
        reference on the left, and the failing ones (the compact table of `weanj check`)."""
        shown = " ".join(f"{k}={v}" for k, v in self.params.items())
        out = [
            f"{self.example}: {len(self.entries)} gradient(s), {shown}, "
            f"inputs sha256 {self.inputs_sha256[:12]}…"
        ]
        if provenance:
            for e in self.entries:
                s = e.stored
                loss = "loss ?" if s.loss is None else f"loss {s.loss:.15e}"
                out.append(
                    f"  {e.label:<24} {s.family:<8} {s.dtype:<8} {loss}  "
                    f"{s.backend_version or s.backend}"
                )
        if self.pairs:
            out.append(
                "  pairs (rel = max|Δ| / max|g_ref|, ref = left; worst element as "
                "0-based numpy / 1-based Julia index):"
            )
            out.append(
                f"  {'ref':<22} {'other':<24} {'array':<8} {'max|Δ|':>9} {'rel':>9} "
                f"{'numpy':>10} {'Julia':>10} {'ULP':>17} {'|ΔL|/|L|':>9}  verdict"
            )
            references = set(self.references().values())
            for p in self.pairs:
                if not (all_pairs or p.reference in references or p.failed):
                    continue
                c = p.comparison
                fam = "" if p.same_family else f"  ({p.families[0]} vs {p.families[1]})"
                # Bitwise-equal gradients have no worst element.
                numpy_i, julia_i = (
                    ("—", "—") if c.max_abs == 0 else (_index(c.worst), _index(c.worst_julia))
                )
                out.append(
                    f"  {p.reference:<22} {p.other:<24} {p.array:<8} {_num(c.max_abs):>9} "
                    f"{_num(c.max_rel):>9} {numpy_i:>10} {julia_i:>10} "
                    f"{(str(c.ulp) if c.ulp >= 0 else '—'):>17} {_num(c.loss_rel):>9}  "
                    f"{p.verdict}{fam}"
                )
            shown_pairs = [
                p
                for p in self.pairs
                if p.comparison.differing and (all_pairs or p.reference in references or p.failed)
            ]
            if shown_pairs:
                out.append("  elements beyond the tolerance (count, then the first in C order):")
            for p in shown_pairs:
                out.append("  " + _differing_line(p, self.sizes.get(p.array, 0)))
                if p.kinks is not None:
                    out.append(
                        f"    differs only at the kinks, as declared ({p.kinks}); away from "
                        f"them max|Δ|/max|g_ref| = {_num(p.away_from_kinks.max_rel)}"
                    )
        elif len(self.entries) < 2:
            out.append("  nothing to compare: only one gradient")
        failures = self.failures()
        if failures:
            out.extend(f"  FAIL {f}" for f in failures)
        same = sum(p.same_family for p in self.pairs)
        out.append(
            f"  verdict: {'FAIL' if failures else 'ok'} ({same} same-family pair(s), "
            f"{len(failures)} failure(s))"
        )
        return out


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.2e}" if math.isfinite(x) else "NaN/Inf"


def _index(idx: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(i) for i in idx) + ")"


def _differing_line(p: Pair, size: int) -> str:
    """Where two gradients part ways: how many elements, and the first ones (both
    index conventions)."""
    c = p.comparison
    listed = c.differing_at
    more = ", …" if c.differing > len(listed) else ""
    numpy_i = ", ".join(_index(i) for i in listed) + more
    julia_i = ", ".join(_index(tuple(k + 1 for k in i)) for i in listed) + more
    tol = tolerance(c.dtype).grad
    return (
        f"{p.reference} vs {p.other} ({p.array}): {c.differing} of {size} elements differ by "
        f"more than {tol:g}·max|g_ref|, at numpy {numpy_i} / Julia {julia_i}"
    )


def _nonfinite_line(e: Entry) -> str:
    for name, g in e.stored.gradients.items():
        bad = np.argwhere(~np.isfinite(g))
        if len(bad):
            first = tuple(int(i) for i in bad[0])
            where = (
                f"{len(bad)} NaN/Inf value(s) in the gradient {name}, first at numpy "
                f"{_index(first)} / Julia {_index(tuple(i + 1 for i in first))}"
            )
            break
    else:
        where = f"the loss is {e.stored.loss}"
    return f"{e.label}: {where} ({e.stored.path})"


def _label(s: StoredGradient) -> str:
    return f"recorded/{s.path.stem}" if s.recorded else s.path.stem


def _order(example_name: str, stored: list[StoredGradient]) -> list[Entry]:
    """Entries grouped by family (registry order), each family's reference first."""
    registered = families(example_name)
    family_order = list(registered) + sorted({s.family for s in stored} - set(registered))
    rank = {name: i for names in registered.values() for i, name in enumerate(names)}

    def key(s: StoredGradient):
        return (family_order.index(s.family), rank.get(s.variant, len(rank)), s.recorded, _label(s))

    return [Entry(_label(s), s) for s in sorted(stored, key=key)]


def diff_gradients(
    example_name: str, stored: list[StoredGradient], *, params=None, inputs_sha256=None
) -> DiffReport:
    """Compare gradients computed on the same inputs (see `diff_store` for the checks).

    **Arguments:**

    - `stored`: gradients of one example, all with the same inputs, parameters and shape.
    - `params`, `inputs_sha256`: for the report's header (default: the first gradient's).

    **Returns:** a `DiffReport`: every same-family pair, and the family references
    against each other for information.
    """
    ex = example(example_name)
    entries = _order(ex.name, stored)
    first = entries[0].stored if entries else None
    report = DiffReport(
        example=ex.name,
        params=dict(params if params is not None else (first.params if first else {})),
        inputs_sha256=inputs_sha256 or (first.inputs_sha256 if first else ""),
        entries=entries,
        sizes={k: int(g.size) for k, g in first.gradients.items()} if first else {},
    )
    by_family: dict[str, list[Entry]] = {}
    for e in entries:
        by_family.setdefault(e.stored.family, []).append(e)
    for members in by_family.values():
        for a, b in itertools.combinations(members, 2):
            report.pairs.extend(_pairs(a, b))
    for fa, fb in itertools.combinations(by_family, 2):
        report.pairs.extend(_pairs(by_family[fa][0], by_family[fb][0]))
    by_label = {e.label: e.stored for e in entries}
    for pair in report.pairs:
        if pair.same_family and not pair.comparison.agree and not pair.comparison.nonfinite:
            _judge_at_kinks(ex, pair, by_label[pair.reference], by_label[pair.other], report.params)
    return report


def kink_mask(ex, params: dict[str, int], array: str) -> np.ndarray:
    """True away from the example's kinks on its shared inputs (its `FDPolicy.mask`)."""
    from ._check import fd_masks

    shared = read_inputs_file(ex.name, inputs_path(ex.name), shared=True)
    return fd_masks(ex, dict(shared["arrays"]), dict(params))[array]


def compare_away_from_kinks(ex, a: str, b: str, array: str, g_ref, g, loss_ref, loss, params):
    """For a declared pair (`weanj.differ_at_kinks`): `(why, comparison away from the
    kinks)`, or None when the pair is not declared."""
    why = kink_difference(ex.name, a, b)
    if why is None:
        return None
    keep = kink_mask(ex, params, array)
    return why, compare(np.asarray(g_ref)[keep], np.asarray(g)[keep], loss_ref, loss)


def _judge_at_kinks(ex, pair: Pair, a: StoredGradient, b: StoredGradient, params) -> None:
    judged = compare_away_from_kinks(
        ex,
        a.variant,
        b.variant,
        pair.array,
        a.gradients[pair.array],
        b.gradients[pair.array],
        a.loss,
        b.loss,
        params,
    )
    if judged is not None and judged[1].agree:
        pair.kinks, pair.away_from_kinks = judged


def _pairs(a: Entry, b: Entry) -> list[Pair]:
    """One row per gradient array of the example."""
    return [
        Pair(
            reference=a.label,
            other=b.label,
            families=(a.stored.family, b.stored.family),
            array=name,
            comparison=compare(g, b.stored.gradients[name], a.stored.loss, b.stored.loss),
        )
        for name, g in a.stored.gradients.items()
    ]


def _key(s: StoredGradient) -> tuple:
    return (s.inputs_sha256, tuple(sorted(s.params.items())), s.shapes)


def _shapes_text(shapes: tuple) -> str:
    if len(shapes) == 1:
        return f"shape {shapes[0][1]}"
    return "shapes " + ", ".join(f"{name} {shape}" for name, shape in shapes)


def _describe_key(key: tuple) -> str:
    sha, params, shapes = key
    shown = "".join(f"{k}={v}, " for k, v in params)
    return f"inputs sha256 {sha[:12]}…, {shown}{_shapes_text(shapes)}"


def _stale_line(s: StoredGradient, baseline: tuple, shared_params: dict[str, int]) -> str:
    sha, params, shapes = baseline
    differs = []
    if s.inputs_sha256 != sha:
        differs.append(f"inputs sha256 {s.inputs_sha256[:12]}… vs {sha[:12]}…")
    for name, value in params:
        if s.params.get(name) != value:
            differs.append(f"{name}={s.params.get(name, '?')} vs {name}={value}")
    if s.shapes != shapes:
        differs.append(f"{_shapes_text(s.shapes)} vs {_shapes_text(shapes)}")
    if s.recorded:
        fix = (
            "re-record it on the current inputs (README: Recording a reference gradient) "
            "or delete it"
        )
    elif find_variant(s.example, s.variant) is not None:
        flags = "".join(f" --{k} {v}" for k, v in params if shared_params.get(k) != v)
        fix = f"recompute it with `weanj run {s.example} {s.variant}{flags}`"
    else:
        fix = "recompute it on the current inputs or delete it"
    return f"{s.path} is stale ({'; '.join(differs)}): {fix}"


def check_comparable(example_name: str, stored: list[StoredGradient]) -> tuple:
    """The (inputs sha256, params, shape) of the current shared inputs, when every
    gradient of `stored` was computed on them; else `StaleGradientError` naming each
    file computed on other inputs, parameters or shapes, with the command that
    recomputes it. Without readable shared inputs nothing can be judged current: their
    `InputFileError` (with the command that regenerates them) is raised.
    """
    ex = example(example_name)
    shared = read_inputs_file(ex.name, inputs_path(ex.name), shared=True)
    shared_params = {k: int(v) for k, v in shared["params"].items()}
    current = (
        shared["sha256"],
        tuple(sorted(shared_params.items())),
        tuple((name, tuple(shared["arrays"][name].shape)) for name in ex.wrt_names),
    )
    stale = [s for s in stored if _key(s) != current]
    if not stale:
        return current
    every = "every gradient" if len(stale) == len(stored) else "gradients"
    raise StaleGradientError(
        f"refusing to compare {every} of {ex.name}: computed on other inputs than the "
        f"current shared inputs ({_describe_key(current)}): "
        + "; ".join(_stale_line(s, current, shared_params) for s in stale)
    )


def diff_store(example_name: str) -> DiffReport:
    """Compare every gradient of an example in the store (produced and recorded).

    Refuses (`StaleGradientError`, naming the stale files) gradients computed on
    different inputs, parameters or shapes; `NothingToCompareError` when there is none.
    """
    ex = example(example_name)
    stored = stored_gradients(ex.name)
    if not stored:
        raise NothingToCompareError(
            f"no gradients of {ex.name} in {results_dir(ex.name)}; compute them with "
            f"`weanj check {ex.name}` or `weanj run {ex.name} VARIANT`"
        )
    sha, params, _ = check_comparable(ex.name, stored)
    return diff_gradients(ex.name, stored, params=dict(params), inputs_sha256=sha)


def _plot_pair(report: DiffReport, pair: Pair, folder: Path) -> Path | None:
    """A PNG of |Δ| (log scale) for one pair and array: a heat map for a 2-D array, |Δ|
    against the index otherwise; None when there is nothing to show."""
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    grads = {e.label: e.stored.gradients[pair.array].astype(np.float64) for e in report.entries}
    delta = np.abs(grads[pair.other] - grads[pair.reference])
    shown = delta > 0  # False at equal elements and at NaN/Inf: masked (white)
    shown &= np.isfinite(delta)
    if not shown.any():
        return None
    c = pair.comparison
    fig = Figure(figsize=(6.4, 5.2))
    ax = fig.add_subplot()
    if delta.ndim == 2:
        values = np.ma.masked_where(~shown, delta)
        n_i, n_j = delta.shape
        # 1-based Julia indices on the axes: the first axis is i in both languages.
        image = ax.imshow(
            values,
            norm=LogNorm(vmin=values.min(), vmax=values.max()),
            cmap="viridis",
            extent=(0.5, n_j + 0.5, n_i + 0.5, 0.5),
            interpolation="nearest",
            aspect="auto" if max(n_i, n_j) > 8 * min(n_i, n_j) else "equal",
        )
        wi, wj = c.worst_julia[:2]
        ax.plot([wj], [wi], marker="s", markersize=8, markerfacecolor="none", color="red")
        ax.set_xlabel("second index (Julia, 1-based)")
        ax.set_ylabel("first index (Julia, 1-based)")
        fig.colorbar(image, ax=ax, label=f"|Δ{pair.array}|")
        blank = "white: equal or NaN/Inf"
    else:
        flat = delta.ravel()
        index = np.arange(1, flat.size + 1)
        ax.semilogy(index[shown.ravel()], flat[shown.ravel()], ".", markersize=3)
        worst = int(np.ravel_multi_index(c.worst, delta.shape)) + 1 if delta.ndim else 1
        ax.semilogy([worst], [flat[worst - 1]], "s", markerfacecolor="none", color="red")
        ax.set_xlabel("element (Julia's linear index in C order, 1-based)")
        ax.set_ylabel(f"|Δ{pair.array}|")
        ax.grid(True, which="both", alpha=0.3)
        blank = "equal elements not drawn"
    ax.set_title(
        f"|Δ{pair.array}| {pair.reference} vs {pair.other} ({pair.verdict})\n"
        f"max rel {_num(c.max_rel)} at numpy {_index(c.worst)} / Julia "
        f"{_index(c.worst_julia)}; {c.differing} beyond tolerance; {blank}",
        fontsize=9,
    )
    suffix = f"-{pair.array}" if len(report.sizes) > 1 else ""
    path = folder / f"{pair.reference}-vs-{pair.other}{suffix}.png".replace("/", "_")
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    return path


def plot_report(report: DiffReport) -> list[tuple[Pair, Path | None]]:
    """Plots of |Δ| under `results/<example>/diff/` (earlier ones removed first): every
    failing pair, or, when none fails, every same-family pair (a map of where two agreeing
    gradients differ in rounding), one per gradient array."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UnavailableError("--plot needs matplotlib: pip install 'weanj[plot]'") from None
    failing = [p for p in report.pairs if p.failed]
    chosen = failing or [p for p in report.pairs if p.same_family]
    folder = results_dir(report.example) / "diff"
    for old in folder.glob("*.png") if folder.is_dir() else ():
        old.unlink(missing_ok=True)  # plots of an earlier store must not pass for this one's
    return [(p, _plot_pair(report, p, folder)) for p in chosen]


def command(args) -> int:
    """`weanj diff EXAMPLE [--json] [--plot]`: exit 1 when a same-family pair fails."""
    report = diff_store(args.example)
    plots = plot_report(report) if args.plot else []
    if args.json:
        out = report.to_json()
        out["plots"] = [str(path) for _, path in plots if path is not None]
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        print("\n".join(report.lines()))
        for pair, path in plots:
            where = f"wrote {path}" if path else "bitwise equal (no finite |Δ| > 0): no heat map"
            print(
                f"  plot {pair.reference} vs {pair.other} ({pair.array}): {where}", file=sys.stderr
            )
    return 0 if report.ok else 1
