"""`weanj run EX V`: one variant's loss and gradient, saved.

On the shared inputs with their own parameters the result goes to the store
(`results/EX/gradients/`, the file the judge compares); on anything else (another inputs
file, another parameter value) it goes to `results/EX/runs/<variant>-<what differs>.h5`,
never into the store, unless `--out` says where. A variant at fault (`error`, `NaN/Inf`,
`timeout`) saves nothing: one line says what, with the command that reproduces it, and
the command exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import WeanjError
from .._io import _inputs, _store
from .._judge._contract import Fault
from .._model import Example, Gradient, Inputs, Variant, check_dtype
from .._model._verdicts import Verdict
from .._pipeline.engine._run import evaluation_run
from .._pipeline.records._store_writes import apart_note, differences, save_gradient
from .._pipeline.records._store_writes import outside_store_path as default_path
from .._places import Places, places

__all__ = ["Run", "apart_note", "default_path", "differences", "run"]


@dataclass
class Run:
    """What `weanj run` did: the gradient, where it went, and why not to the store."""

    gradient: Gradient
    path: Path
    note: str = ""


def _print_traceback(v, chosen, dtype: str) -> None:
    """Call the variant's loss and gradient again, unguarded, and print the traceback of
    what it raises (`weanj run --traceback`)."""
    import sys
    import traceback

    args = chosen.args(dtype)
    try:
        fns = v.built
        fns.loss(*args)
        fns.grad(*args)
    except Exception:
        traceback.print_exc(file=sys.stderr)


def run(
    ex: Example,
    v: Variant,
    *,
    inputs: str | Path | None = None,
    params: dict[str, Any] | None = None,
    dtype: str = "float64",
    out: str | Path | None = None,
    force: bool = False,
    timeout: float | None = None,
    processes: int | None = None,
    traceback: bool = False,
    device: str = "cpu",
) -> Run:
    """Evaluate one variant of an example (both looked up by the front end) and save its
    gradient (module docstring), through the `CheckRun` of one evaluation. `traceback`:
    where the variant raises, print the whole traceback on stderr before its one line.
    `device`: where it runs (`cpu`, `gpu`, `tpu`); a device run goes to `runs/`, never
    to the store (the store holds CPU runs)."""
    dtype = check_dtype(dtype)
    here = places()
    one = evaluation_run(here, timeout=timeout)
    chosen = _inputs.read_inputs(ex, here, inputs)
    # The shared inputs with their own parameters (before --K etc.): what the store holds.
    shared = chosen if chosen.shared else _shared_or_none(ex, here)
    if params:
        chosen = chosen.with_params(params)
    shared_key = shared.key(dtype) if shared is not None else None
    if out is not None:  # a place no gradient may go is refused before the variant runs
        planned = Gradient(
            ex,
            v.name,
            v.family,
            dtype,
            {},
            None,
            dict(chosen.params),
            chosen.digest,
            chosen.key(dtype),
        )
        _store.check_target(out, planned, shared_key, here, force=force)
    found = one.evaluate(v, chosen, dtype, processes=processes, device=device)
    if isinstance(found, Fault):
        raised = found.verdict == Verdict.ERROR and f"{v.name} raised " in found.what
        if traceback and raised:
            _print_traceback(v, chosen, dtype)
        hint = " (--traceback prints the whole traceback)" if raised and not traceback else ""
        raise found.error(f"; nothing was saved{hint}")
    path = save_gradient(found, shared, here, out=out, force=force)  # the one writer
    return Run(found, path, apart_note(found, shared) if out is None else "")


def _shared_or_none(ex, here: Places) -> Inputs | None:
    """The shared inputs, or None where they cannot be read (a run on another file can
    still go on; it just cannot be store material)."""
    try:
        return _inputs.read_inputs(ex, here)
    except WeanjError:
        return None
