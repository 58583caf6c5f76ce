"""The gradient store: one HDF5 file per (example, variant, dtype), with provenance.

    results/<example>/gradients/<variant>.h5          float64 runs on the shared inputs
    results/<example>/gradients/float32/<variant>.h5  float32 runs on the shared inputs
    results/<example>/recorded/<name>.h5              committed references (any dtype)
    results/<example>/runs/<variant>-<...>.h5         anything else; never compared

A gradient file (format 2) holds the dataset `gradient` (one `wrt` array) or a group
`gradient` with one dataset per array, each with the `sha256` of its values, and the
attributes `format`, `key` (the provenance key), `loss`, `variant`, `family`, `example`,
every parameter (typed), `dtype`, `inputs_sha256`, `backend`, `backend_version` and
`created`. Files are written atomically (`_atomic`) and read without trusting them
(`_safeh5`, then every attribute's type, every dataset's digest and dtype, and the key
recomputed from the attributes). Format-1 files (no `format`, no `key`) are still read.

The store is weanj's to write (`check_target`): a file of `gradients/` holds exactly
that variant's gradient of this example on the shared inputs' key at that dtype, and a
recorded reference is never replaced without `force` (the old file is kept aside).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .._environment import now
from .._errors import InputFileError, WeanjError
from .._model import Gradient
from .._places import PRODUCED, RECORDED, Places
from ._atomic import aside_path, atomic_path, not_written
from ._beyond_files import write_beyond
from ._gradient_files import FORMAT, read_gradient_file
from ._h5 import array_sha256, write_array, write_attributes
from ._safeh5 import trust_file


def check_target(
    path: Path | str, g: Gradient, shared_key: str | None, places: Places, *, force: bool = False
) -> Path:
    """`path` if `g` may be written there, else an `InputFileError` saying why.

    Under `results/`: a file of `gradients/` must be this example's file of this very
    variant at this dtype, computed on the shared inputs (`shared_key`); a recorded
    reference must be of this example and the shared inputs too, and an existing one is
    replaced only with `force`; `runs/` takes anything of the example; nothing else
    there. Elsewhere: not a directory, not `shared_inputs/`, not an existing file that
    is not a readable weanj gradient file.
    """
    if path is None or not str(path).strip():
        raise InputFileError("the output path is empty; give a file name, e.g. --out grad.h5")
    target = Path(path).expanduser()
    if target.is_dir():
        raise InputFileError(
            f"{target} is a directory; give a file name, e.g. {target / 'gradient.h5'}"
        )
    above = target.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise InputFileError(f"cannot write {target}: {above} is a file, not a directory")
    if Path(os.path.realpath(target)).parent == places.shared_inputs.resolve():
        raise InputFileError(
            f"refusing to write a gradient into {target.parent} (the shared inputs)"
        )
    at = places.result_path(target)
    if at is None:
        if not force:  # `--force`: the user named this file and said to replace it
            _check_outside(target, g, places)
        return target
    ex = g.example.name
    if at.kind in ("other", "") or at.example != ex or target.suffix != ".h5":
        raise InputFileError(
            f"refusing to write {target}: under results/ weanj writes only "
            f"results/{ex}/gradients/, recorded/ and runs/ files of {ex}"
        )
    fresh = shared_key is not None and g.key == shared_key
    if at.kind == PRODUCED:
        if target.stem != g.variant or at.dtype != g.dtype:
            raise InputFileError(
                f"refusing to write {g.variant} ({g.dtype}) to {target}: that is the store file of "
                f"{target.stem} ({at.dtype}); omit --out to use the store"
            )
        if not fresh:
            raise InputFileError(
                f"refusing to write {target}: the store holds only gradients of the shared inputs "
                f"and their parameters; omit --out (the run then goes to results/{ex}/runs/)"
            )
    elif at.kind == RECORDED:
        if not fresh:
            raise InputFileError(
                f"refusing to record {target}: a reference must be computed on the shared inputs "
                "and their parameters"
            )
        if target.exists() and not force:
            raise InputFileError(
                f"{target} exists: a recorded reference is replaced only with --force "
                "(the old file is then kept aside)"
            )
    return target


def _check_outside(target: Path, g: Gradient, places: Places) -> None:
    if target.exists():
        try:
            read_gradient_file(target, g.example, places)
        except WeanjError:
            raise InputFileError(
                f"refusing to overwrite {target}: it is not a readable weanj gradient file "
                "(only those are replaced); choose another file, remove it, or name it with "
                "--force"
            ) from None


def _keep_aside(target: Path) -> Path | None:
    if not target.exists():
        return None
    aside = aside_path(target, "replaced")
    os.replace(target, aside)
    return aside


def _attributes(g: Gradient) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "format": FORMAT,
        "variant": g.variant,
        "family": g.family,
        "example": g.example.name,
        **g.params,
        "dtype": g.dtype,
        "inputs_sha256": g.inputs_sha256,
        "key": g.key,
        "backend": g.backend,
        "backend_version": g.backend_version,
        "created": g.created or now(),
    }
    if g.loss is not None:
        attrs["loss"] = float(g.loss)
    if "loss" in g.noise:
        attrs["noise_loss"] = float(g.noise["loss"])
    if g.evaluated:  # a weanj evaluation's: whether its rounding levels were gathered
        attrs["levels"] = "measured" if g.levels_measured else "not measured"
    if g.x64 is not None:  # the JAX x64 configuration it ran in (`_x64`)
        attrs["x64"] = g.x64
    return attrs


def holds(target: Path, evaluation: str) -> bool:
    """Whether the store file `target` was written from the evaluation record whose
    payload digest is `evaluation` (its `evaluation` attribute; read without its arrays):
    then a re-check that reused that record has nothing to write."""
    if not evaluation or not target.is_file() or target.is_symlink():
        return False
    try:
        from ._h5 import read_attributes
        from ._safeh5 import parsed

        with parsed(target, "gradient file") as f:
            return read_attributes(f.attrs, str(target)).get("evaluation") == evaluation
    except (WeanjError, OSError):
        return False


def write_gradient(
    g: Gradient,
    target: Path,
    places: Places,
    *,
    force: bool = False,
    extra: dict[str, str] | None = None,
) -> Path:
    """Write `g` to `target` (already checked by `check_target`), atomically; with
    `force`, a recorded reference it replaces is moved aside first. `extra`: further text
    attributes (an evaluation record's key and checks)."""
    at = places.result_path(target)
    if force and at is not None and at.kind == RECORDED:
        _keep_aside(target)
    names = g.example.wrt_names
    # weanj's own store keeps aside a file there it cannot read as its own (a damaged one);
    # a file the user named (`--out`) is replaced only if weanj wrote it, or with `force`
    foreign = "aside" if at is not None and at.kind == PRODUCED else "refuse"
    try:
        with atomic_path(target, force=force, foreign=foreign) as tmp:
            with h5py.File(tmp, "w", track_order=False) as f:
                if len(names) == 1:
                    datasets = {(names[0], "gradient"): g.gradients[names[0]]}
                else:
                    f.create_group("gradient", track_order=True)
                    datasets = {(n, f"gradient/{n}"): g.gradients[n] for n in names}
                for (name, where), values in datasets.items():
                    ds = write_array(f, where, np.asarray(values))
                    ds.attrs["sha256"] = array_sha256(values)
                    if name in g.noise:
                        ds.attrs["noise"] = np.float64(g.noise[name])
                if set(names) <= set(g.noise_entries):  # each entry's level, laid out alike
                    if len(names) > 1:
                        f.create_group("noise", track_order=True)
                    for name, where in datasets:
                        where = where.replace("gradient", "noise", 1)
                        write_array(f, where, np.asarray(g.noise_entries[name], np.float64))
                write_beyond(f, g)  # its outputs, its Hessian products (`_beyond_files`)
                write_attributes(f, {**_attributes(g), **(extra or {})})
            trust_file(tmp)  # weanj wrote these bytes itself: no need to probe them on reading
    except OSError as e:
        if isinstance(e, WeanjError):
            raise
        raise not_written("gradient file ", target, e, "; choose a writable place") from None
    return target
