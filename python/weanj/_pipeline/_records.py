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

import json
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
from .._sources import code_digest, files_digest, text_digest

FORMAT = 1
_PACKAGE = Path(__file__).resolve().parent.parent  # weanj's own package
_REUSED_FAULTS = (ERROR, NONFINITE)  # timeouts depend on the load; never reused


def weanj_sources() -> str:
    """A digest of weanj's own sources: a checkout being edited changes it."""
    return files_digest(sorted(_PACKAGE.rglob("*.py")))


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
            now_on_disk = code_digest(module, self._roots())
            imported = variant.example.code
            if imported and imported != now_on_disk:  # the process runs the code as imported
                self.notes.append(
                    f"note: {module} (or a module it imports) changed since this process "
                    "imported it: its evaluations use the code as imported; restart the kernel, "
                    "or run `weanj check`, to check the edit"
                )
            self._code[module] = imported or now_on_disk
        extra = []
        for source in (
            Path(p) for p in getattr(variant, "sources", ())
        ):  # a folder: its Julia files
            extra.extend(sorted(source.rglob("*.jl")) if source.is_dir() else [source])
        return (
            self._code[module]
            if not extra
            else text_digest(self._code[module] + files_digest(extra))
        )

    def parts(self, variant: Variant, inputs: Inputs, dtype: str) -> dict[str, Any]:
        if not self._weanj:
            self._weanj = weanj_sources()
        table = json.dumps(self.config.table, sort_keys=True, default=str)
        return {
            "inputs": inputs.key(dtype),
            "code": self.code_of(variant),
            "config": text_digest(table),
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
        except (
            WeanjError,
            OSError,
            ValueError,
            KeyError,
            TypeError,
            RecursionError,
            EOFError,
        ) as e:
            first = (str(e).splitlines() or [type(e).__name__])[0][:160]
            self.notes.append(
                f"note: the evaluation record of {ex} {label} is unusable ({first}); recomputed"
            )
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
        record = self._recalled.get(
            (
                variant.example.name,
                variant.name if dtype == "float64" else f"{variant.name}@{dtype}",
            )
        )
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

    def keep_check(
        self, variant: Variant, dtype: str, kind: str, array: str, numbers: dict
    ) -> None:
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
                record["fault"] = {
                    "verdict": found.verdict,
                    "what": found.what,
                    "command": found.command,
                }
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
        out = {
            label: f"reused (from {when})"
            for (ex, label), when in self.reused.items()
            if ex == example
        }
        out.update(
            {
                label: f"recomputed: {why}"
                for (ex, label), why in self.recomputed.items()
                if ex == example
            }
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
            by_why: dict[str, list[str]] = {}
            for label, why in changed.items():  # one reason once, however many variants
                by_why.setdefault(why, []).append(label)
            shown = "; ".join(
                f"{', '.join(labels[:4])}{' …' if len(labels) > 4 else ''}: recomputed — {why}"
                for why, labels in by_why.items()
            )
            line += f" ({shown})"
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
