"""`pytest --weanj --weanj-record`: write each family's reference gradient into
`results/<example>/recorded/`: its first variant available here, evaluated on the shared
inputs; an earlier reference is kept aside, not lost (pytest-regressions' `--force-regen`)."""

from __future__ import annotations

from pathlib import Path

from .._errors import VariantError
from .._io import _inputs, _store
from .._judge._contract import Fault
from .._model import Catalog
from .._pipeline.session._session import Session
from .._places import places


def record_references(catalog: Catalog) -> list[Path]:
    """Write the references of one example; **Returns:** the paths written."""
    here = places()
    inputs = _inputs.read_inputs(catalog.example, here)
    written = []
    with Session(shown_path=here.shown) as session:
        for members in catalog.families().values():
            runnable = [v for v in members if v.unavailable_reason() is None]
            if not runnable:
                continue
            found = session.outcome(runnable[0], inputs, "float64")
            if isinstance(found, Fault):
                raise VariantError(f"{found.verdict}: {found.line}; nothing recorded")
            target = _store.check_target(
                here.recorded(catalog.name, runnable[0].name),
                found,
                inputs.key("float64"),
                here,
                force=True,
            )
            written.append(_store.write_gradient(found, target, here, force=True))
    return written
