"""The command line's refusals that need no JAX, made before JAX is imported: a project
that is no project, or whose `[tool.weanj]` has an unknown key, and an example, variant,
parameter or parameter value that the project's modules do not have.

Which examples, variants and parameters a project has is known for certain only once its
example modules have imported (with JAX, 15–25 s on a loaded machine). What they
registered at their last import is kept beside the results (`_registry._names`), valid
while their code, weanj's and `[tool.weanj]` are what they were; where it is, a name it
does not hold is refused here, in the same words and the same order as the command would
refuse it after the import (the same functions build the line). Where no such record is,
nothing is refused here: the command refuses it, later. A name the record holds is never
taken as known: the command still looks it up.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .._errors import WeanjError
from .._project import project_config
from .._registry._loading import modules_to_load
from .._registry._names import (
    RecordedExample,
    recorded,
    unknown_example,
    unknown_variant,
    unknown_variants,
)
from .._vocabulary import DEVICES, DTYPES
from ._commands import param_values

Known = dict[str, RecordedExample]


def refuse_early(args: argparse.Namespace, words: dict[str, str]) -> None:
    """Raise the error the command would raise for its project or a name it is given,
    where that needs no JAX (module docstring); else return, and the command runs."""
    config = project_config()  # no project, an unknown key: its one line
    check = _CHECKS.get(args.command)
    if check is None:
        return
    try:
        known = recorded(config, [m for m, _ in modules_to_load(config)])
        if known is not None:
            check(args, words, _Names(config, known))
    except WeanjError:
        raise
    except Exception:  # noqa: BLE001 - only a shortcut: what it cannot tell, the command does
        return


class _Names:
    """The project's recorded names, and the lookups that refuse as the registry does."""

    def __init__(self, config, known: Known):
        self.config, self.known = config, known

    def example(self, name: str) -> RecordedExample:
        if name not in self.known:
            tables = {ex: r.variants for ex, r in self.known.items()}
            raise unknown_example(name, self.config, tables)
        return self.known[name]

    def examples(self, names: list[str] | None) -> list[RecordedExample]:
        return [self.example(n) for n in dict.fromkeys(names or sorted(self.known))]

    def variant(self, ex: RecordedExample, name: str) -> None:
        if name not in ex.variants:
            raise unknown_variant(name, ex.name, ex.variants)

    def run(self, ex: RecordedExample, name: str) -> bool:
        """A run's name (`V`, `V@float32`, `V@tpu`), read as `_run_names.parse_run` reads
        it (a variant's own name may hold an `@`): an unknown variant refused; **Returns**
        whether the name is a run's name as far as names tell (else the command says what
        is wrong with it, first)."""
        base, words = name, []
        while "@" in base and base not in ex.variants:
            base, _, word = base.rpartition("@")
            words.append(word)
        if base not in ex.variants:
            self.variant(ex, name)
        dtypes, devices = [w for w in words if w in DTYPES], [w for w in words if w in DEVICES]
        return len(dtypes) <= 1 and len(devices) <= 1 and len(dtypes) + len(devices) == len(words)


def _unique(names) -> bool:
    """Names the command's own argument checks accept as they are (each once, none
    empty): others are refused there, first, in other words."""
    names = list(names or ())
    return len(set(names)) == len(names) and all(n.strip() for n in names)


def _check(args, words, names: _Names) -> None:
    if not _unique(args.examples) or not _unique(args.variants):
        return
    cats = names.examples(args.examples or None)
    if args.variants:
        known = {v for ex in cats for v in ex.variants}
        unknown = sorted(set(args.variants) - known)
        if unknown:
            raise unknown_variants(unknown, sorted(known))


def _examples(args, words, names: _Names) -> None:
    if _unique(args.examples):
        names.examples(args.examples or None)


def _one(args, words, names: _Names) -> RecordedExample:
    return names.example(args.example)


def _run(args, words, names: _Names) -> None:
    ex = _one(args, words, names)
    param_values(ex, words, args.options)
    names.variant(ex, args.variant)


def _bench(args, words, names: _Names) -> None:
    ex = _one(args, words, names)
    param_values(ex, words, args.options)
    for name in dict.fromkeys(args.variants or ()):
        names.variant(ex, name)


def _bisect(args, words, names: _Names) -> None:
    ex = _one(args, words, names)
    param_values(ex, words, args.options)
    if names.run(ex, args.a):
        names.run(ex, args.b)


def _fuzz(args, words, names: _Names) -> None:
    """The first pair's names (what the command reads before anything else of a pair)."""
    ex = _one(args, words, names)
    for a, b in (args.pairs or ())[:1]:
        if names.run(ex, a):
            names.run(ex, b)


_CHECKS: dict[str, Callable] = {
    "check": _check,
    "list": _examples,
    "inputs": _examples,
    "clean": _examples,
    "report": _examples,
    "run": _run,
    "bench": _bench,
    "plot": _one,
    "diff": _one,
    "bisect": _bisect,
    "fuzz": _fuzz,
}
