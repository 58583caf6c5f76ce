"""What a run writes to the store, and where a gradient written outside a check goes: the
one writer of gradient files beside `weanj record` (docs/DESIGN.md §8.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._io import _store
from ..._judge._events import ExampleJudged
from ..._judge._verdict import ExampleJudgement
from ..._model import Gradient, Inputs
from ..._places import Places
from ..evaluation._evaluate import configuration_of
from ._records import Records


class StoreWrites:
    """A listener of a check's events (`_judge._events`): each example judged, its live
    runs to the store (`save_to_store`)."""

    def __init__(self, places: Places, records: Records | None):
        self.places, self.records = places, records

    def __call__(self, event: Any) -> None:
        if isinstance(event, ExampleJudged) and event.judgement.error is None:
            save_to_store(event.judgement, self.places, self.records)


def save_to_store(ej: ExampleJudgement, here: Places, records: Records | None = None) -> None:
    """Each live run goes to its store file (NaN/Inf and faults are not saved: the
    verdicts say what happened), carrying the payload digest of its evaluation record
    (`Records.payload`): a file already written from that record is not written again."""
    for g in ej.subjects.values():
        if g.source == "run" and g.device is None:  # the store holds CPU runs
            target = here.gradient(ej.name, g.variant, g.dtype)
            evaluation = records.payload(g.of, g.dtype) if records and g.of else None
            if evaluation and _store.holds(target, evaluation):
                continue
            config = configuration_of(g, g.of, g.dtype)  # its evaluation's (a reused one's too)
            if config is not None and config.x64 is not None and g.x64 is None:
                g.x64 = config.x64.describe()
            extra = {"evaluation": evaluation} if evaluation else None
            _store.write_gradient(g, target, here, extra=extra)


def differences(g: Gradient, shared: Inputs | None) -> list[str]:
    """What sets a gradient apart from one on the shared inputs, as file-name parts
    (`inputs-1a2b3c4d5e6f`, `K5`, `float32`); empty when it is store material."""
    device = g.device  # a device run is never store material
    if shared is not None and shared.matches(g) and device is None:
        return []
    out = []
    if shared is None or g.inputs_sha256 != shared.digest:
        out.append(f"inputs-{g.inputs_sha256[:12]}")
    if shared is not None:
        out.extend(f"{k}{v}" for k, v in g.params.items() if shared.params.get(k) != v)
    if g.dtype != "float64":
        out.append(g.dtype)
    if device is not None:
        out.append(device.label)
    return out or [f"key-{g.key[:12]}"]


def outside_store_path(g: Gradient, shared: Inputs | None, here: Places) -> Path:
    """Where a gradient goes by default, for every front end that saves one (`weanj run`,
    `weanj.save_gradient`): its store file when it is store material (the shared inputs
    with their own parameters), else `results/<example>/runs/<variant>-<what differs>.h5`
    (`differences`). Files that older weanj wrote there as `<variant>-key-<key>.h5` read
    as before: a gradient file is read by its contents, never by its name."""
    if shared is not None and shared.matches(g) and g.device is None:
        return here.gradient(g.example.name, g.variant, g.dtype)
    return here.run_file(g.example.name, g.variant, differences(g, shared))


def apart_note(g: Gradient, shared: Inputs | None) -> str:
    """One line saying why a gradient was not saved to the store ("" when it was)."""
    if shared is not None and shared.matches(g) and g.device is None:
        return ""
    if g.device is not None:
        return f"not saved to the store: a run on {g.device.label} (the store holds CPU runs)"
    return (
        f"not saved to the store: computed on other inputs than the shared inputs "
        f"({', '.join(differences(g, shared))}); the store holds only gradients of the shared "
        "inputs and their parameters, which the judge compares"
    )


def save_gradient(
    g: Gradient,
    shared: Inputs | None,
    here: Places,
    *,
    out: str | Path | None = None,
    force: bool = False,
) -> Path:
    """The writer of one gradient a front end saves outside a check (`weanj run`,
    `weanj.save_gradient`): to `out`, else where `outside_store_path` says (its store file
    when it is store material), under the store's rules (`_store.check_target`: a file
    weanj did not write, a recorded reference without `force`, a file of other inputs in
    the store are refused). **Returns:** the path written."""
    shared_key = shared.key(g.dtype) if shared is not None else None
    path = out if out is not None else outside_store_path(g, shared, here)
    target = _store.check_target(path, g, shared_key, here, force=force)
    return _store.write_gradient(g, target, here, force=force)
