"""What is known by name, and the one line for a name that is not: the front door's
refusals, written once, whether the names come from the registry or from its record.

**The record** (`names/<digest of the project's root>.json` beside the compilation cache:
`$WEANJ_COMPILATION_CACHE`, else the project's `.weanj-cache/`): what the project's
example modules registered at their last import, by name (each example's variants and
their families, its parameters and their ranges). The command line reads it before it
imports JAX (`_cli/_early.py`), so that a mistyped example, variant or parameter is
refused in well under a second instead of after JAX and every example module have
imported (15–25 s on a loaded machine). The record holds only while what decides it is
unchanged: its key is the digest of the code of every example module of the project (the
files of the project each reaches), of weanj's own sources, the `[tool.weanj]` table, the
core versions and the interpreter. Any change, a record missing or unreadable, or a
project that takes examples from installed packages (whose code no digest here follows):
no record, and the names are looked up after the modules import, as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import UnknownNameError, with_list
from .._model import Param
from .._model._names import closest
from .._project import ProjectConfig

VERSION = 1  # of the record's layout
CACHE_VARIABLE = "WEANJ_COMPILATION_CACHE"  # `_io._jax_cache`'s: the record lives beside it


def suggest(name: Any, known) -> str:
    meant = closest(name, known)
    return f"; did you mean {meant}?" if meant else ""


# --- the refusals -----------------------------------------------------------------------


def unknown_example(name: Any, config: ProjectConfig, tables: Mapping[str, Iterable[str]]):
    """The error for an example `name` the project does not have (`tables`: each example's
    variant names): a variant's name says whose it is, else the likeliest example."""
    owners = [ex for ex, table in tables.items() if isinstance(name, str) and name in table]
    hint = (
        f"; {name} is a variant of {owners[0]}: weanj check {owners[0]} --variants {name}"
        if owners
        else suggest(name, tables)
    )
    head = f"unknown example {name!r} in {config.describe()}{hint}"
    return UnknownNameError(with_list(head, "known examples", sorted(tables)))


def unknown_variant(name: Any, example: str, table: Iterable[str]):
    """The error for a variant `name` that `example` does not have."""
    table = list(table)
    head = f"unknown variant {name!r} of {example}{suggest(name, table)}"
    return UnknownNameError(with_list(head, "known variants", table))


def unknown_variants(unknown: list[str], known: list[str]):
    """The error for `--variants` naming some no chosen example has (`known`: theirs)."""
    close = [(n, closest(n, known)) for n in unknown]
    meant = [(n, c) for n, c in close if c]
    said = [c if len(unknown) == 1 else f"{c} (for {n})" for n, c in meant]
    hint = f"; did you mean {', '.join(said)}?" if said else ""
    head = f"unknown variant(s) {', '.join(unknown)}{hint}"
    return UnknownNameError(with_list(head, "known variants", sorted(known)))


# --- the record ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedExample:
    """An example as the record holds it: what the refusals and a parameter's parsing
    read (`name`, `param_names`, `param`), and its variants' families by name."""

    name: str
    variants: dict[str, str]
    params: tuple[Param, ...]

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


def record_file(config: ProjectConfig) -> Path:
    """Where the project's record is: beside the compilation cache (module docstring),
    named for the project's root, so that projects sharing a cache folder keep apart."""
    setting = os.environ.get(CACHE_VARIABLE, "").strip()
    root = Path(config.root).resolve()
    if setting and setting.lower() not in ("0", "off", "false", "no"):
        folder = Path(setting).expanduser()
    else:
        folder = root / ".weanj-cache"
    return folder / "names" / f"{hashlib.sha256(str(root).encode()).hexdigest()[:16]}.json"


def record_key(config: ProjectConfig, modules: list[str]) -> str | None:
    """What the record holds for (module docstring; `modules`: the project's example
    modules, `_loading.modules_to_load`), or None: a project whose code no digest here
    follows."""
    from .._context import registry_key
    from .._environment import core_versions
    from .._sources import code_digest, weanj_sources

    if config.entry_points:
        return None
    parts = [VERSION, repr(registry_key(config)), config.table, weanj_sources()]
    parts += [core_versions(), sys.executable, [(m, code_digest(m, config.roots)) for m in modules]]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def keep(config: ProjectConfig, registry, modules: list[str]) -> None:
    """Write the record of what the project's `modules` registered (the examples of the
    modules it imported, none a notebook's cell added), unless it holds that already; a
    folder weanj cannot write leaves it unkept."""
    key = record_key(config, modules)
    if key is None:
        return
    loaded = set(registry.digests)
    examples = [  # in the registry's order, which the refusals' lists and hints follow
        [
            name,
            [[v.name, v.family] for v in registry.variants.get(name, {}).values()],
            [_param_json(p) for p in ex.params],
        ]
        for name, ex in registry.examples.items()
        if ex.module in loaded
    ]
    text = json.dumps({"key": key, "examples": examples})
    path = record_file(config)
    try:
        if path.is_file() and path.read_text() == text:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        pass


def recorded(config: ProjectConfig, modules: list[str]) -> dict[str, RecordedExample] | None:
    """The record's examples, where it holds for the project (its example `modules`) as
    it is now; else None."""
    try:
        path = record_file(config)
        if path.stat().st_size > 4 * 2**20:  # no project registers this much
            return None
        data = json.loads(path.read_text())
        if data["key"] != record_key(config, modules):
            return None
        return {
            name: RecordedExample(name, dict(variants), tuple(Param(*p) for p in params))
            for name, variants, params in data["examples"]
        }
    except Exception:  # noqa: BLE001 - missing, unreadable or not ours: no record
        return None


def _param_json(p: Param) -> list:
    """`[name, default, kind, minimum, maximum]`, numbers as JSON numbers."""
    plain = [v.item() if hasattr(v, "item") else v for v in (p.default, p.minimum, p.maximum)]
    return [p.name, plain[0], p.kind, plain[1], plain[2]]
