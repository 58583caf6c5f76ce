"""Inputs: the typed arrays and parameters a run is computed on, with their provenance.

`Inputs` is the object every command passes along: the example, its arrays (as the
inputs file stores them, read-only), its parameters (typed), the digest of the arrays
and the provenance key. A command reads, digests and validates each inputs file once
(`read_inputs`, memoised per file state), then hands the object on.

`shared_inputs/<example>.h5` (format 2) holds one dataset per array, of its declared
kind and shape exactly (float64, complex128, the integer dtype, bool; a 0-d array as a
scalar dataset), and the attributes `format`, `example`, every parameter (typed),
`seed`, `generator`, `layout = "C"`, `sha256` (the digest, docs/DESIGN.md "Inputs
files") and what the example describes. Files are byte-identical on every
regeneration (no timestamps, fixed attribute order, written atomically). Format-1 files
(float64 only, an older digest) are refused with the command that rewrites them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .._errors import InputError, InputFileError
from .._model import Example, Inputs, from_arrays, shown
from .._model._inputs import digest, stored_inputs
from .._places import Places
from ._atomic import atomic_path, not_written
from ._h5 import read_array, read_attributes, write_array, write_attributes
from ._safeh5 import parsed, trust_file

FORMAT = 2
# Bump when the generating code changes what it writes; recorded in every inputs file.
GENERATOR = "weanj-inputs/2"


def regenerate_hint(example_name: str) -> str:
    return f"`weanj inputs regenerate {example_name}`"


def generate_inputs(ex: Example, seed: int | None = None) -> Inputs:
    """The shared inputs of an example, computed from its seed (or `seed`)."""
    seed = ex.seed if seed is None else seed
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise InputError(
            f"{ex.name}: the inputs' seed must be an integer >= 0 (weanj.Example(seed=...) or "
            f"seed=), got {seed!r}"
        )
    generated = ex.generate(int(seed))
    if not isinstance(generated, Mapping):
        raise InputError(
            f"{ex.name}: generate must return a dict of arrays, got {type(generated).__name__}"
        )
    return from_arrays(ex, generated, what=f"{ex.name}'s generator")


# `origin` of a file written from arrays a user gave (`weanj.save_inputs`), not by the
# example's generator: never refused as stale for not being what the generator makes.
GIVEN = "given arrays"


def file_attributes(inputs: Inputs, seed: int, origin: str | None = None) -> dict[str, Any]:
    """The attributes of an inputs file, in their fixed order."""
    ex = inputs.example
    attrs: dict[str, Any] = {"format": FORMAT, "example": ex.name}
    attrs.update(ex.describe(dict(inputs.arrays)))
    attrs.update(inputs.params)
    attrs.update(seed=int(seed), generator=GENERATOR, layout="C", sha256=inputs.digest)
    if origin is not None:
        attrs["origin"] = origin
    return attrs


def write_inputs_file(
    inputs: Inputs,
    path: Path,
    *,
    seed: int,
    origin: str | None = None,
    force: bool = False,
    foreign: str = "refuse",
) -> Path:
    """Write `inputs` as an inputs file (atomically, byte-identical each time); `origin`:
    `GIVEN` for arrays a user gave rather than the generator's. A file there that weanj did
    not write is refused unless `force`, or kept aside (`foreign`: `_atomic.atomic_path`)."""
    try:
        with atomic_path(path, force=force, foreign=foreign) as tmp:
            with h5py.File(tmp, "w", track_order=False) as f:
                for name in inputs.example.arrays:
                    write_array(f, name, inputs.arrays[name])
                write_attributes(f, file_attributes(inputs, seed, origin))
            trust_file(tmp)  # weanj wrote these bytes itself: no need to probe them on reading
    except OSError as e:
        raise not_written("inputs file ", path, e) from None
    return path


def write_inputs(
    ex: Example, places: Places, path: Path | None = None, *, force: bool = False
) -> Path:
    """Write the shared inputs file of an example (atomically, byte-identical each time).
    The shared file is the generator's to rewrite: one weanj cannot read as its own (a
    damaged one, which commands tell to regenerate) is kept aside, not refused; a `path`
    the caller names replaces only an inputs file weanj wrote, unless `force`."""
    target = Path(path) if path else places.inputs(ex.name)
    foreign = "refuse" if path else "aside"
    return write_inputs_file(
        generate_inputs(ex), target, seed=ex.seed, force=force, foreign=foreign
    )


def read_inputs(ex: Example, places: Places, path: Path | str | None = None) -> Inputs:
    """The `Inputs` of an inputs file: the shared inputs (`path` None), or any HDF5 file
    holding the example's arrays (`weanj run --inputs FILE`).

    Shared files must be format 2, for this example, and match their `sha256`; other
    files need only the arrays (cast to their declared kinds where that loses nothing);
    an `example` attribute, where present, must name this example. The file is probed
    before it is parsed (`_safeh5`).
    """
    shared_path = places.inputs(ex.name)
    # realpath, not Path.resolve: a symbolic link loop is then an error line, not a RuntimeError
    shared = path is None or os.path.realpath(path) == os.path.realpath(shared_path)
    return _read(ex, shared_path if path is None else Path(path), shared)


def _read_file(ex: Example, path: Path, hint: str) -> tuple[dict, dict]:
    where = f"inputs file {path}"
    lookups = (*ex.arrays, *ex.param_names, "example", "sha256", "format")
    with parsed(path, "inputs file", hint, lookups) as f:
        missing = [a for a in ex.arrays if a not in f]
        if missing:
            raise InputFileError(f"{where} lacks dataset(s) {', '.join(missing)}{hint}")
        extra = sorted(set(f) - set(ex.arrays))
        if extra:  # data weanj would not read, digest nor judge: not these inputs
            raise InputFileError(
                f"{where} holds {', '.join(map(repr, extra))}, which {ex.name} does not declare "
                f"(its arrays: {', '.join(ex.arrays)}){hint or _ARRAYS_ONLY}"
            )
        refused = _declared_shapes(ex, f, where, hint)
        if refused is None:  # refused: raised outside, where `parsed` leaves it as it is
            arrays = {name: read_array(f[name], f"{where}: {name}", hint) for name in ex.arrays}
            attrs = read_attributes(f.attrs, where, hint)
    if refused is not None:
        raise refused
    return arrays, attrs


# What a user's inputs file with more than the example's arrays is told.
_ARRAYS_ONLY = "; an inputs file holds the example's arrays only (weanj.save_inputs writes one)"


def _declared_shapes(ex: Example, f, where: str, hint: str) -> Exception | None:
    """The arrays' shapes as the file declares them, checked against the example before a
    byte is read: a small compressed file may declare gigabytes. (Groups, links and data not
    stored in the file are the reader's to refuse, next.)"""
    nodes = {n: f.get(n, getlink=False) for n in ex.arrays}
    if not all(isinstance(node, h5py.Dataset) for node in nodes.values()):
        return None
    try:
        ex.check_shapes({n: tuple(node.shape) for n, node in nodes.items()})
    except InputError as e:
        if not hint:  # a user's file: its arrays refused, as after reading
            return InputError(f"{where}: {e}")
        return InputFileError(f"{where}: {e}{hint}")
    return None


def _check_registered_params(ex: Example, params: dict, where: str, hint: str) -> None:
    """A shared inputs file holds the parameters its example registers: one whose `K` was
    edited (or an example whose `K` changed since the file was generated) would otherwise
    have every variant run at the file's value and agree (docs/DESIGN.md, "Inputs files")."""
    registered = ex.check_params({})
    changed = [k for k in ex.param_names if params[k] != registered[k]]
    if changed:
        found = ", ".join(f"{k} = {params[k]!r}" for k in changed)
        wanted = ", ".join(f"{k} = {registered[k]!r}" for k in changed)
        raise InputFileError(
            f"{where} holds {found} where {ex.name} registers {wanted} (edited after it was "
            f"written, or the example changed since){hint}"
        )


def _read(ex: Example, path: Path, shared: bool) -> Inputs:
    hint = f"; regenerate it with {regenerate_hint(ex.name)}" if shared else ""
    where = f"inputs file {path}"
    arrays, attrs = _read_file(ex, path, hint)
    named = attrs.get("example", ex.name)
    if not isinstance(named, str) or named != ex.name:  # an array attribute: not a name
        raise InputFileError(f"{where} is for example {shown(named)}, not {ex.name}{hint}")
    fmt = attrs.get("format", 1)
    current = type(fmt) is int and fmt == FORMAT  # an array or a bool is no format number
    if shared and not current:
        raise InputFileError(
            f"{where} was written by an earlier weanj (format {shown(attrs.get('format', 1))}, "
            f"not {FORMAT}); rewrite it with {regenerate_hint(ex.name)}"
        )
    lacking = [k for k in ("example", *ex.param_names) if k not in attrs]
    if shared and lacking:  # the writer writes them all: a file without one is not its own
        raise InputFileError(f"{where} lacks attribute(s) {', '.join(lacking)}{hint}")
    try:
        stored = ex.check_arrays(arrays, str(path))
    except InputError as e:
        if not shared:
            raise
        raise InputFileError(f"{e}{hint}") from None  # generated files: bad arrays = damage
    if shared:
        for name, a in arrays.items():
            if a.dtype != stored[name].dtype:
                raise InputFileError(
                    f"{where}: {name} is stored as {a.dtype}, not {stored[name].dtype}{hint}"
                )
    sha = digest(ex, stored)
    recorded = attrs.get("sha256")
    checked = shared or (current and recorded is not None)
    if checked and (not isinstance(recorded, str) or recorded != sha):
        raise InputFileError(
            f"{where} does not match its recorded sha256 (modified or corrupt){hint}"
        )
    try:
        params = ex.check_params({k: attrs[k] for k in ex.param_names if k in attrs})
    except InputError as e:
        raise InputFileError(f"{where}: attribute {e}{hint}") from None
    if shared:  # the parameters are part of the inputs: the generator writes the registered ones
        _check_registered_params(ex, params, where, hint)
    return stored_inputs(ex, stored, params, sha, path=path, shared=shared, attrs=attrs)


def _differing_attrs(expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """Names of the attributes that are missing, extra or different in `found`."""

    def same(a, b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
        return type(a) is type(b) and a == b

    keys = set(expected) | set(found)
    return sorted(
        k for k in keys if k not in expected or k not in found or not same(expected[k], found[k])
    )


def verify_inputs(ex: Example, places: Places) -> tuple[bool, str]:
    """Recompute an example's inputs and compare them with its committed file:
    **Returns** `(ok, message)`; a missing, corrupt or outdated file is not ok."""
    path = places.inputs(ex.name)
    generated = generate_inputs(ex)
    try:
        found = read_inputs(ex, places)
    except InputFileError as e:
        return False, str(e)
    fix = f"regenerate it with {regenerate_hint(ex.name)}"
    if found.digest != generated.digest:
        return False, (
            f"{path} differs from what the generator makes "
            f"(sha256 {found.digest[:16]}… vs {generated.digest[:16]}…); {fix}"
        )
    wrong = _differing_attrs(file_attributes(generated, ex.seed), dict(found.attrs))
    if wrong:
        return False, (
            f"{path} has attribute(s) {', '.join(wrong)} other than the generator writes; {fix}"
        )
    return True, f"{path}: sha256 {found.digest[:16]}… ok"


# --- stale inputs: a shared file the current generator would not write ------------------------

_FRESH_FILE = ".weanj-inputs-checked.json"  # in results/: which files matched which generator
PROBED_FILE = ".weanj-h5-probed.json"  # in results/: which HDF5 bytes were found safe (_safeh5)


def generator_digest(ex: Example, places: Places) -> str:
    """The digest of the code of the module that defines the example's generator (what it
    reaches in the project, named relative to it); a built-in example's generator is
    weanj's own code."""
    from .._project import project_config
    from .._sources import PACKAGE, code_digest, inside, weanj_sources

    module = getattr(ex.generate, "__module__", None) or ex.module or ""
    found = sys.modules.get(module)
    origin = getattr(found, "__file__", None)
    if origin and inside(Path(origin).resolve(), (PACKAGE,)):
        return weanj_sources()
    try:
        pythonpath = tuple(Path(p) for p in project_config(places.root).pythonpath)
    except Exception:  # a project without [tool.weanj] (the gallery): its root alone
        pythonpath = ()
    return code_digest(module, (Path(places.root), *pythonpath))


def check_fresh(ex: Example, places: Places, inputs: Inputs) -> None:
    """Refuse shared inputs that the example's generator, as it is now, would not write
    (`generate` edited, the file not regenerated): `InputFileError`, one line naming
    `weanj inputs regenerate EX`. Cheap on every command: the file is regenerated in
    memory and compared (what `weanj inputs verify` does) only when the generator's code
    changed since the file was last found to match (`results/.weanj-inputs-checked.json`);
    an edit that leaves the inputs as they were is accepted without a word."""
    import json

    if inputs.attrs.get("origin") == GIVEN:  # the user's own arrays: no generator to follow
        return
    code = generator_digest(ex, places)
    mark = (ex.name, inputs.digest, code)
    from .._context import current

    fresh_here = current().fresh_inputs  # the project's: found fresh in this process
    if mark in fresh_here:
        return
    ledger = places.results / _FRESH_FILE
    try:
        known = json.loads(ledger.read_text(encoding="utf-8")) if ledger.is_file() else {}
    except (OSError, ValueError, RecursionError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    if known.get(ex.name) != [inputs.digest, code]:
        seed = inputs.attrs.get("seed", ex.seed)
        generated = generate_inputs(ex, seed if type(seed) is int else ex.seed)
        if generated.digest != inputs.digest:
            raise InputFileError(
                f"{places.inputs(ex.name)} is stale: {ex.name}'s generator now makes other "
                f"inputs (sha256 {generated.digest[:12]}…, the file {inputs.digest[:12]}…); "
                f"regenerate it with {regenerate_hint(ex.name)}"
            )
        known[ex.name] = [inputs.digest, code]
        try:
            # weanj's own hidden memo (no mark of its own): rewritten whatever it holds
            with atomic_path(ledger, force=True) as tmp:
                tmp.write_text(json.dumps(known, sort_keys=True) + "\n", encoding="utf-8")
        except (OSError, InputFileError):  # a read-only project: checked again next time
            pass
    fresh_here.add(mark)
