"""Evaluation records: an evaluation is reused when nothing it was computed from changed
(docs/DESIGN.md, "Evaluation records").

A scientist re-runs `weanj check` after every edit of a port; build tools solved this
long ago (pytest-testmon, Bazel, joblib.Memory): a result is reused when everything it was
computed from is unchanged, and recomputed the moment one thing changes. The record of an
evaluation (a variant's loss, gradient and rounding noise at one dtype, its gradient
checks' numbers, the seconds its first calls took; or its fault) is kept in
`results/<example>/evaluations/<label>.npz`: the gradient arrays, each with its sha256, and
the record itself as JSON text (numpy's own format, read with `allow_pickle=False`: no
HDF5 library to guard against, so a warm check reads dozens of records in milliseconds),
with its key: the sha256 of

- **the inputs**: their provenance key (arrays, parameters, dtype);
- **the code**: every Python file the example's module reaches by its imports, directly or
  not, inside the project (its root and `pythonpath` folders) or inside weanj's own
  package, found by reading the imports (`ast`), not by running anything; and the
  variant's own source files beyond Python (a Julia kernel); a change in one example's
  module changes only the keys of the examples that reach it;
- **the project's `[tool.weanj]` table**;
- **the versions**: weanj (and, for a checkout of weanj, a digest of its own sources),
  jax, jaxlib, numpy, and the variant's backend (`Variant.backend_version()`: Enzyme-JAX,
  kernex, Julia and its packages).

When in doubt it recomputes: a record that cannot be read, of another form, or whose
gradient file's digests do not match is recomputed, with a one-line note; a timeout is
never reused (it depends on the machine's load); `fresh=True` (`weanj check --fresh`)
ignores every record. What is reused is the evaluation and its checks' *numbers*: the judge
judges every case afresh from them, so a changed tolerance or rule applies at once.
Imports made at run time (`importlib.import_module`, `__import__`) are not followed: a
module reached only that way is not part of the key (docs/DESIGN.md says so).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._environment import core_versions, now
from .._errors import WeanjError
from .._io._atomic import atomic_path
from .._io._h5 import array_sha256
from .._judge._contract import ERROR, NONFINITE, Fault
from .._model import Gradient, Inputs, Variant, provenance_key
from .._places import Places

FORMAT = 1
_PACKAGE = Path(__file__).resolve().parent.parent  # weanj's own package
_REUSED_FAULTS = (ERROR, NONFINITE)  # timeouts depend on the load; never reused


def _digest(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


_ENVIRONMENTS = tuple(
    Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p
)


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    """Inside the project (its roots), and not in an installed environment (a virtual
    environment kept in the project folder holds packages, not the project's code)."""
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return False
    if any(env == path or env in path.parents for env in _ENVIRONMENTS):
        return False
    return any(root == path or root in path.parents for root in roots)


def _origin(name: str) -> Path | None:
    """The source file of a module, found without importing anything: the top-level
    package by its finder, submodules by looking in its folders (resolving `a.b` with
    `importlib` would import `a`, and an installed package's import can do anything)."""
    module = sys.modules.get(name)
    found = getattr(module, "__file__", None) if module is not None else None
    if found is not None:
        return Path(found).resolve() if str(found).endswith(".py") else None
    top, *rest = name.split(".")
    try:
        spec = sys.modules[top].__spec__ if top in sys.modules else importlib.util.find_spec(top)
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    path = Path(spec.origin)
    folders = list(spec.submodule_search_locations or ())
    for part in rest:
        path = None
        for folder in folders:
            package, plain = Path(folder) / part / "__init__.py", Path(folder) / f"{part}.py"
            if package.is_file():
                path, folders = package, [package.parent]
                break
            if plain.is_file():
                path, folders = plain, []
                break
        if path is None:
            return None
    return path.resolve() if path.suffix == ".py" else None


def _imported_names(path: Path, module: str) -> set[str]:
    """The modules a source file imports (absolute names; `from X import Y` gives X and
    X.Y, since Y may be a submodule)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            if base:
                out.add(base)
                out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def reachable_files(module: str, roots: tuple[Path, ...], outside: Path | None = None) -> list[Path]:
    """Every source file inside `roots` (and not inside `outside`) that `module` reaches by
    its imports, itself included, directly or not (read from the code, nothing run)."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen or not name:
            continue
        path = _origin(name)
        if path is None or not _inside(path, roots) or (outside and _inside(path, (outside,))):
            seen[name] = Path()
            continue
        seen[name] = path
        parts = name.split(".")  # a submodule's import runs its packages' __init__ first
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(_imported_names(path, name))
    return sorted({p for p in seen.values() if p != Path()})


def _files_digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(str(path).encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()


def weanj_sources() -> str:
    """A digest of weanj's own sources: a checkout being edited changes it."""
    return _files_digest(sorted(_PACKAGE.rglob("*.py")))


@dataclass
class Records:
    """The evaluation records of one project, for one session (module docstring).

    - `places`: the project's paths; `config`: its `ProjectConfig` (root, pythonpath,
      `[tool.weanj]`); `fresh`: ignore every record (still write new ones).
    """

    places: Places
    config: Any
    fresh: bool = False
    reused: dict[tuple[str, str], str] = field(default_factory=dict)  # (ex, label): when
    recomputed: dict[tuple[str, str], str] = field(default_factory=dict)  # (ex, label): why
    notes: list[str] = field(default_factory=list)
    _code: dict[str, str] = field(default_factory=dict)
    _pending: dict[tuple[str, str], dict] = field(default_factory=dict)
    _recalled: dict[tuple[str, str], dict] = field(default_factory=dict)
    _weanj: str = ""

    # --- the key ----------------------------------------------------------------------------

    def _roots(self) -> tuple[Path, ...]:
        root = Path(self.config.root).resolve()
        return (root, *(Path(p).resolve() for p in self.config.pythonpath))

    def code_of(self, variant: Variant) -> str:
        """The digest of the code an example's evaluations depend on (module docstring):
        the files its module reaches inside the project; weanj's own files (a built-in
        example's too) are covered by the digest of weanj's sources, in every key."""
        module = variant.example.module
        if module not in self._code:
            files = reachable_files(module, self._roots(), _PACKAGE) if module else []
            self._code[module] = _files_digest(files) if files else _digest(f"unknown:{module}")
        extra = [Path(p) for p in getattr(variant, "sources", ())]
        return self._code[module] if not extra else _digest(self._code[module] + _files_digest(extra))

    def parts(self, variant: Variant, inputs: Inputs, dtype: str) -> dict[str, Any]:
        if not self._weanj:
            self._weanj = weanj_sources()
        table = json.dumps(self.config.table, sort_keys=True, default=str)
        return {
            "inputs": inputs.key(dtype),
            "code": self.code_of(variant),
            "config": _digest(table),
            "versions": {**core_versions(), "weanj sources": self._weanj},
            "backend": variant.backend_version(),
            "variant": variant.name,
            "family": variant.family,
        }

    # --- recall -------------------------------------------------------------------------------

    def _path(self, variant: Variant, dtype: str) -> Path:
        label = variant.name if dtype == "float64" else f"{variant.name}@{dtype}"
        return self.places.evaluations(variant.example.name) / f"{label}.npz"

    def recall(self, variant: Variant, inputs: Inputs, dtype: str) -> Gradient | Fault | None:
        """The recorded evaluation, where every part of its key is unchanged; else None
        (and why it is recomputed)."""
        ex = variant.example.name
        label = variant.name if dtype == "float64" else f"{variant.name}@{dtype}"
        current = self.parts(variant, inputs, dtype)
        if self.fresh:
            self.recomputed[(ex, label)] = "asked afresh (--fresh)"
            return None
        try:
            record, found = self._read(variant, inputs, dtype, self._path(variant, dtype))
        except (WeanjError, OSError, ValueError, KeyError, TypeError, RecursionError, EOFError) as e:
            first = (str(e).splitlines() or [type(e).__name__])[0][:160]
            self.notes.append(f"note: the evaluation record of {ex} {label} is unusable ({first}); recomputed")
            self.recomputed[(ex, label)] = "its record was unusable"
            return None
        if record is None:
            self.recomputed[(ex, label)] = "no earlier record"
            return None
        why = _why_changed(record.get("parts", {}), current)
        if why is not None:
            self.recomputed[(ex, label)] = why
            return None
        self.reused[(ex, label)] = str(record.get("created", "an earlier run"))
        self._recalled[(ex, label)] = record
        if isinstance(found, Gradient):
            found.source, found.of = "run", variant
            found.seconds = record.get("seconds")
            found.extra["reused"] = self.reused[(ex, label)]
        return found

    def _read(self, variant: Variant, inputs: Inputs, dtype: str, path: Path):
        """`(record, Gradient or Fault)` from a record file, (None, None) where there is
        none; anything not exactly what `flush` writes raises (and is recomputed)."""
        import zipfile

        import numpy as np

        if not path.is_file():
            return None, None
        if path.is_symlink() or path.stat().st_size > 2**31:
            raise ValueError("not a regular record file")
        try:
            with np.load(path, allow_pickle=False) as data:
                record = json.loads(str(data["record"][()]))
                arrays = {k[2:]: np.array(data[k]) for k in data.files if k.startswith("g_")}
        except zipfile.BadZipFile as e:
            raise ValueError(f"not a record ({e})") from None
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise ValueError("not a weanj evaluation record")
        if record.get("variant") != variant.name or record.get("dtype") != dtype:
            raise ValueError("it records another variant or dtype")
        if "fault" in record:
            f = record["fault"]
            if f.get("verdict") not in _REUSED_FAULTS:
                raise ValueError("not a reusable fault")
            return record, Fault(str(f["verdict"]), str(f["what"]), str(f.get("command", "")))
        ex = variant.example
        digests = record["sha256"]
        if set(arrays) != set(ex.wrt_names) or set(digests) != set(arrays):
            raise ValueError("its arrays are not the example's gradient arrays")
        for name, a in arrays.items():
            if array_sha256(a) != digests[name]:
                raise ValueError(f"the values of {name} do not match their sha256")
        g = Gradient(
            ex,
            variant.name,
            variant.family,
            dtype,
            {name: arrays[name] for name in ex.wrt_names},
            float(record["loss"]),
            dict(inputs.params),
            inputs.digest,
            provenance_key(inputs.digest, dict(inputs.params), dtype),
            backend=variant.backend,
            backend_version=str(record["parts"]["backend"]),
            created=str(record.get("created", "")),
            noise={k: float(v) for k, v in record.get("noise", {}).items()},
        )
        return record, g

    def recall_check(self, variant: Variant, dtype: str, kind: str, array: str) -> dict | None:
        """The recorded numbers of a gradient check of a reused evaluation, or None."""
        record = self._recalled.get((variant.example.name, variant.name if dtype == "float64" else f"{variant.name}@{dtype}"))
        if record is None:
            return None
        return record.get("checks", {}).get(f"{kind}::{array}")

    # --- keep ---------------------------------------------------------------------------------

    def keep(self, variant: Variant, inputs: Inputs, dtype: str, found: Gradient | Fault) -> None:
        """Note a new evaluation; written by `flush` once its checks are known."""
        label = variant.name if dtype == "float64" else f"{variant.name}@{dtype}"
        if isinstance(found, Fault) and found.verdict not in _REUSED_FAULTS:
            return
        self._pending[(variant.example.name, label)] = {
            "variant": variant,
            "dtype": dtype,
            "found": found,
            "record": {
                "format": FORMAT,
                "variant": variant.name,
                "dtype": dtype,
                "parts": self.parts(variant, inputs, dtype),
                "created": now(),
                "seconds": getattr(found, "seconds", None),
                "checks": {},
            },
        }

    def keep_check(self, variant: Variant, dtype: str, kind: str, array: str, numbers: dict) -> None:
        label = variant.name if dtype == "float64" else f"{variant.name}@{dtype}"
        pending = self._pending.get((variant.example.name, label))
        if pending is not None:
            pending["record"]["checks"][f"{kind}::{array}"] = numbers

    def flush(self) -> None:
        """Write the records noted since the last flush (atomically; a failure to write
        costs only the next run's reuse)."""
        import numpy as np

        for pending in self._pending.values():
            v, found, record = pending["variant"], pending["found"], pending["record"]
            path = self._path(v, pending["dtype"])
            arrays: dict[str, Any] = {}
            if isinstance(found, Fault):
                record["fault"] = {"verdict": found.verdict, "what": found.what, "command": found.command}
            else:
                arrays = {name: np.asarray(a) for name, a in found.gradients.items()}
                record["loss"] = found.loss
                record["noise"] = dict(found.noise)
                record["sha256"] = {name: array_sha256(a) for name, a in arrays.items()}
            try:
                with atomic_path(path) as tmp:
                    with open(tmp, "wb") as f:
                        text = np.array(json.dumps(record, default=str))
                        np.savez(f, record=text, **{f"g_{k}": a for k, a in arrays.items()})
            except (OSError, WeanjError) as e:
                self.notes.append(f"note: could not write the evaluation record {path} ({e})")
        self._pending.clear()

    def summary(self, example: str) -> tuple[dict[str, str], str | None]:
        """`({label: "reused" | "recomputed: why"}, one line)` for one example."""
        out = {label: f"reused (from {when})" for (ex, label), when in self.reused.items() if ex == example}
        out.update(
            {label: f"recomputed: {why}" for (ex, label), why in self.recomputed.items() if ex == example}
        )
        if not out:
            return out, None
        reused = sum(1 for (ex, _) in self.reused if ex == example)
        changed = {
            label: why
            for (ex, label), why in self.recomputed.items()
            if ex == example and why not in ("no earlier record",)
        }
        line = f"  evaluations: reused {reused} of {len(out)}"
        if changed:
            shown = "; ".join(f"{label}: recomputed — {why}" for label, why in list(changed.items())[:6])
            more = f"; … and {len(changed) - 6} more" if len(changed) > 6 else ""
            line += f" ({shown}{more})"
        return out, line


def _why_changed(stored: dict, current: dict) -> str | None:
    """Why a record does not hold for the current evaluation (None: it does)."""
    if stored.get("inputs") != current["inputs"]:
        return "the inputs changed (arrays, parameters or dtype)"
    if stored.get("code") != current["code"]:
        return "its example's module, or a module it imports, changed"
    if stored.get("config") != current["config"]:
        return "[tool.weanj] changed"
    old, new = stored.get("versions", {}), current["versions"]
    for name in sorted(new):
        if old.get(name) != new[name]:
            if name == "weanj sources":
                return "weanj's own sources changed"
            return f"{name} changed ({old.get(name)} → {new[name]})"
    if stored.get("backend") != current["backend"]:
        return f"its backend changed ({current['backend']})"
    if stored.get("variant") != current["variant"] or stored.get("family") != current["family"]:
        return "its name or family changed"
    return None
