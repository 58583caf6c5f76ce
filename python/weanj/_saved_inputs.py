"""`weanj.save_inputs`: an inputs file from arrays a user already has (a case found
outside weanj), with the provenance and validation of `weanj inputs regenerate`.

The arrays are checked as generated ones are (`Example.check_arrays`: names, kinds,
shapes, index ranges, the example's `validate`), digested the same way, and written the
same way (atomically, byte-identical each time), so that `weanj check`, `weanj run
--inputs FILE` and `weanj bisect --inputs FILE` judge them like the shared inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._errors import InputError
from ._io._file_bytes import MAX_BYTES_VARIABLE, max_file_bytes
from ._io._h5probe import size_text
from ._io._inputs import GIVEN, write_inputs_file
from ._model import Example
from ._model._inputs import from_arrays
from ._places import places
from ._registry import example as example_named


def save_inputs(
    example: Example | str,
    arrays: Mapping[str, Any],
    *,
    params: Mapping[str, Any] | None = None,
    path: Path | str | None = None,
    force: bool = False,
) -> Path:
    """Write an inputs file of `example` holding `arrays`.

    **Arguments:**

    - `arrays`: `{array name: array}`, every array of the example, of its declared kinds
      and shapes (refused in one `InputError` line otherwise).
    - `params`: the parameters the file records (default: the example's defaults).
    - `path`: where to write; default: the example's shared inputs file (which `weanj
      check` then judges; `weanj inputs verify` reports that it is not the generator's).
      A file there is replaced only if weanj wrote it (it carries weanj's mark), or with
      `force=True`; never a `.py` module, never through a link (docs/files.md).

    Refused in one line, before anything is allocated or written: an array the example does
    not declare or one it declares missing, and arrays whose file would exceed what weanj
    reads from one file (`$WEANJ_MAX_FILE_BYTES`, default 4 GiB).

    **Returns:** the path written.
    """
    ex = example_named(example)
    if not isinstance(arrays, Mapping):
        raise InputError(
            f"save_inputs: arrays must be a dict {{array name: array}}, got {type(arrays).__name__}"
        )
    from . import _arguments as arg

    path = arg.out_path(path, "path", "save_inputs")
    force = arg.flag(force, "force", "save_inputs")
    params = arg.mapping(params, "params", "save_inputs")
    what = f"the arrays given to save_inputs({ex.name!r})"
    undeclared = [str(k) for k in arrays if k not in ex.arrays]
    if undeclared:
        raise InputError(
            f"{what}: {ex.name} declares no array {', '.join(map(repr, undeclared))} (its "
            f"arrays: {', '.join(ex.arrays)}); nothing written"
        )
    _check_size(ex, arrays, what)
    inputs = from_arrays(ex, arrays, params, what=what)
    target = Path(path) if path is not None else places().inputs(ex.name)
    return write_inputs_file(inputs, target, seed=ex.seed, origin=GIVEN, force=force)


# Bytes per element in an inputs file, by kind (floats as float64, complex as complex128;
# integers at most 8, bools 1).
_STORED_BYTES = {"float": 8, "complex": 16, "int": 8, "bool": 1}


def _check_size(ex: Example, arrays: Mapping[str, Any], what: str) -> None:
    """Refuse, from the shapes alone (nothing converted or copied yet), arrays whose file
    weanj would refuse to read (`max_file_bytes`): a 1e9-element array is one line, not a
    MemoryError while it is converted, digested or written."""
    total = 0
    for spec in ex.specs:  # an array missing is `from_arrays`' to name, with the others
        shape = getattr(arrays.get(spec.name), "shape", None)
        if not isinstance(shape, tuple):
            continue  # a list or a number: as_array checks it (its size is already in memory)
        total += math.prod(int(n) for n in shape) * _STORED_BYTES.get(spec.kind, 8)
    limit = max_file_bytes()
    if total > limit:
        raise InputError(
            f"{what}: they would make an inputs file of {size_text(total)}, past the "
            f"{size_text(limit)} weanj reads from one file (${MAX_BYTES_VARIABLE}); "
            "nothing written"
        )
