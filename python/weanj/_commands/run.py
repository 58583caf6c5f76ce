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
from .._io import _inputs, _jax_cache, _store
from .._judge._contract import Fault
from .._model import Gradient, Inputs, check_dtype
from .._pipeline._evaluate import evaluate
from .._places import Places, places
from .._registry import example as example_named
from .._registry import variant as variant_named
from .._watch import Watch


@dataclass
class Run:
    """What `weanj run` did: the gradient, where it went, and why not to the store."""

    gradient: Gradient
    path: Path
    note: str = ""


def differences(g: Gradient, shared: Inputs | None) -> list[str]:
    """What sets a run apart from one on the shared inputs, as file-name parts
    (`inputs-1a2b3c4d5e6f`, `K5`, `float32`); empty when it is store material."""
    if shared is not None and shared.matches(g):
        return []
    out = []
    if shared is None or g.inputs_sha256 != shared.digest:
        out.append(f"inputs-{g.inputs_sha256[:12]}")
    if shared is not None:
        out.extend(f"{k}{v}" for k, v in g.params.items() if shared.params.get(k) != v)
    if g.dtype != "float64":
        out.append(g.dtype)
    return out or [f"key-{g.key[:12]}"]


def default_path(g: Gradient, shared: Inputs | None, here: Places) -> Path:
    """The store file for store material, else `results/<example>/runs/...`."""
    if shared is not None and shared.matches(g):
        return here.gradient(g.example.name, g.variant, g.dtype)
    return here.run_file(g.example.name, g.variant, differences(g, shared))


def apart_note(g: Gradient, shared: Inputs | None) -> str:
    """One line saying why a run was not saved to the store ("" when it was)."""
    if shared is not None and shared.matches(g):
        return ""
    return (
        f"not saved to the store: computed on other inputs than the shared inputs "
        f"({', '.join(differences(g, shared))}); the store holds only gradients of the shared "
        "inputs and their parameters, which the judge compares"
    )


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
    example: str,
    variant: str,
    *,
    inputs: str | Path | None = None,
    params: dict[str, Any] | None = None,
    dtype: str = "float64",
    out: str | Path | None = None,
    force: bool = False,
    timeout: float | None = None,
    processes: int | None = None,
    traceback: bool = False,
) -> Run:
    """Evaluate one variant and save its gradient (module docstring). `traceback`: where
    the variant raises, print the whole traceback on stderr before its one line."""
    ex = example_named(example)
    v = variant_named(ex, variant)
    dtype = check_dtype(dtype)
    here = places()
    _jax_cache.enable()
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
    if processes is None:
        found = evaluate(v, chosen, dtype, Watch(timeout_s=timeout), shown_path=here.shown)
    else:  # a sharded variant under jax.distributed on P local processes
        from .._pipeline._processes import check_sharded, evaluate_across

        check_sharded(v)
        found = evaluate_across(
            v, chosen, dtype, processes, root=here.root, timeout=timeout, shown_path=here.shown
        )
    if isinstance(found, Fault):
        raised = found.verdict == "error" and f"{v.name} raised " in found.what
        if traceback and raised:
            _print_traceback(v, chosen, dtype)
        hint = " (--traceback prints the whole traceback)" if raised and not traceback else ""
        raise found.error(f"; nothing was saved{hint}")
    target = _store.check_target(
        out if out is not None else default_path(found, shared, here),
        found,
        shared_key,
        here,
        force=force,
    )
    path = _store.write_gradient(found, target, here, force=force)
    return Run(found, path, apart_note(found, shared) if out is None else "")


def _shared_or_none(ex, here: Places) -> Inputs | None:
    """The shared inputs, or None where they cannot be read (a run on another file can
    still go on; it just cannot be store material)."""
    try:
        return _inputs.read_inputs(ex, here)
    except WeanjError:
        return None
