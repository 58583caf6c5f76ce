"""The key of an evaluation record: what an evaluation was computed from (docs/DESIGN.md
§8.4): its inputs, its code (the files its module reaches), the project's `[tool.weanj]`,
the versions, its backend, its configuration, its device, its checks' policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..._environment import core_versions
from ..._model import Inputs, Variant
from ..._sources import code_digest, files_digest, text_digest, weanj_sources
from ._record_form import canonical, check_policy

# `[tool.weanj]` keys that change where or how long an evaluation runs, never a number of
# it (a timeout is never recorded).
NOT_IN_THE_KEY = frozenset({"scheduler", "timeout"})


class KeyParts:
    """The parts of the keys of one project's records (`config`: its `ProjectConfig`), the
    code digests computed once; `notes` takes the line said where a module changed since
    this process imported it."""

    def __init__(self, config: Any, notes: list[str]):
        self.config, self.notes = config, notes
        self._code: dict[str, str] = {}
        self._weanj = ""

    def code_of(self, variant: Variant) -> str:
        """The digest of the code an example's evaluations depend on (module docstring):
        the files its module reaches inside the project; weanj's own files (a built-in
        example's too) are covered by the digest of weanj's sources, in every key."""
        module = variant.example.module
        if module not in self._code:
            now_on_disk = code_digest(module, self.config.roots)
            imported = variant.example.code
            if imported and imported != now_on_disk:  # edited since the check reloaded it
                self.notes.append(
                    f"note: {module} (or a module it imports) changed during this check: its "
                    "evaluations use the code as the check began with; check again to judge "
                    "the edit"
                )
            self._code[module] = imported or now_on_disk
        extra = []
        for source in (
            Path(p).resolve() for p in getattr(variant, "sources", ())
        ):  # a folder: its Julia files
            extra.extend(sorted(source.rglob("*.jl")) if source.is_dir() else [source])
        return (
            self._code[module]
            if not extra
            else text_digest(self._code[module] + files_digest(extra, self.config.roots))
        )

    def parts(
        self, variant: Variant, inputs: Inputs, dtype: str, config=None, device=None
    ) -> dict[str, Any]:
        """The key's parts; of the evaluation's `Configuration`, what its backend sets; of
        a run on a device, the device's identity (`_on_device.identity`)."""
        config = config or variant.configuration(dtype)
        if not self._weanj:
            self._weanj = weanj_sources()
        table = self.config.table  # None where the root has no [tool.weanj] table
        if table:
            table = {k: v for k, v in table.items() if k not in NOT_IN_THE_KEY}
        table = json.dumps(table, sort_keys=True, default=str)
        return {
            "example": variant.example.name,
            "variant": variant.name,
            "family": variant.family,
            "dtype": dtype,
            "inputs": inputs.key(dtype),
            "code": self.code_of(variant),
            "config": text_digest(table),
            "versions": {**core_versions(), "weanj sources": self._weanj},
            "backend": variant.backend_version(),
            **config.key_parts(),
            **(device or {}),
            "checks": text_digest(canonical(check_policy(variant))),
        }


def why_changed(stored: dict, current: dict) -> str | None:
    """Why a record does not hold for the current evaluation (None: its parts say it does)."""
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
    if any(stored.get(k) != current.get(k) for k in ("device_kind", "device_software", "standin")):
        return f"the device changed (now {current.get('device_kind')})"
    if stored.get("x64") != current.get("x64"):
        return "jax_enable_x64 changed"
    if stored.get("checks") != current["checks"]:
        return "the gradient-check policy changed"
    if stored.get("variant") != current["variant"] or stored.get("family") != current["family"]:
        return "its name or family changed"
    if stored != current:
        return "its key changed"
    return None
