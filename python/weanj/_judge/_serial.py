"""The judge's objects as JSON, and back: `check.json` is their serialisation
(docs/files.md, "check.json"; DESIGN §8.2).

`encode_case`/`decode_case` give every field of a `CaseJudgement` back, the numbers
behind it included (`ArrayComparison`, `Tolerance`, and a gradient check's result: any type
registered in `_checks.RESULTS`, written under its name there, `taylor` or `directional`):
a tagged form of the dataclasses, lossless (a tuple stays a tuple, NaN and Inf are kept,
a verdict is a `Verdict`). A declaration (`weanj.Expected`, which may hold a function) is
written as its fields and read back as the catalog's own declaration of those fields
(`resolve_expected`). `encode_example`/`decode_example` do the same for an
`ExampleJudgement`, its subjects written as their provenance (a `Gradient` without its
arrays: those are in the store files the check wrote, which the caller loads).

Only the classes named here and the check results with the dataclasses their fields are
declared of are ever built from a file; anything else is a `ValueError` (a file changed by
hand is "unreadable", never a traceback).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._model import Expected, Gradient
from .._model._cost import Cost
from .._model._provenance import provenance_fields, provenance_json
from .._model._verdicts import Verdict
from . import _dot, _second  # noqa: F401 (their result types, registered for `RESULTS`)
from ._checks import RESULTS
from ._compare import ArrayComparison
from ._information import INFORMATION, information_fields, information_json
from ._policy import Tolerance
from ._regions import Region
from ._verdict import CaseJudgement, ExampleJudgement

_COMPARISON = (ArrayComparison, Region, Tolerance)


def _classes() -> dict[str, type]:
    """The classes a file may build: a comparison's, and every registered check result's
    with the dataclasses its fields are declared of (`TaylorDirection`, `TaylorPolicy`)."""
    return _classes_of(tuple(RESULTS.values()))


@functools.cache
def _classes_of(results: tuple[type, ...]) -> dict[str, type]:
    found: dict[str, type] = {}

    def add(hint: Any) -> None:
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            if hint.__name__ not in found:
                found[hint.__name__] = hint
                for h in _hints(hint).values():
                    add(h)
        for a in typing.get_args(hint):
            add(a)

    for c in (*_COMPARISON, *results):
        add(c)
    return found


_EXPECTED_FIELDS = ("variant", "against", "check", "verdict", "reason", "array", "bound")


def _enc(x: Any) -> Any:
    if isinstance(x, Verdict):
        return {"$verdict": x.value}
    if isinstance(x, enum.Enum):
        return x.value
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else {"$float": repr(x)}
    if isinstance(x, np.ndarray):
        return {"$array": [_enc(v) for v in x.tolist()], "dtype": str(x.dtype)}
    if isinstance(x, Path):
        return {"$path": str(x)}
    if isinstance(x, tuple):
        return {"$tuple": [_enc(v) for v in x]}
    if isinstance(x, list):
        return [_enc(v) for v in x]
    if isinstance(x, Mapping):
        return {"$dict": [[_enc(k), _enc(v)] for k, v in x.items()]}
    if isinstance(x, Expected):
        return {"$expected": {k: _enc(getattr(x, k)) for k in _EXPECTED_FIELDS}}
    if dataclasses.is_dataclass(x) and _classes().get(type(x).__name__) is type(x):
        return {
            "$class": type(x).__name__,
            **{f.name: _enc(getattr(x, f.name)) for f in dataclasses.fields(x) if f.init},
        }
    raise TypeError(f"cannot write {type(x).__name__} into a check file")


def _dec(x: Any, expected: Callable[[dict], Expected]) -> Any:
    if isinstance(x, list):
        return [_dec(v, expected) for v in x]
    if not isinstance(x, dict):
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise ValueError(f"a value of type {type(x).__name__}")
    if "$verdict" in x:
        return Verdict.parse(x["$verdict"])
    if "$float" in x:
        if x["$float"] not in ("nan", "inf", "-inf"):
            raise ValueError(f"a number {x['$float']!r}")
        return float(x["$float"])
    if "$array" in x:
        return np.asarray(_dec(x["$array"], expected), dtype=np.dtype(str(x["dtype"])))
    if "$path" in x:
        return Path(str(x["$path"]))
    if "$tuple" in x:
        return tuple(_dec(v, expected) for v in _list(x["$tuple"]))
    if "$dict" in x:
        return {_dec(k, expected): _dec(v, expected) for k, v in _list(x["$dict"])}
    if "$expected" in x:
        return expected(_dec(x["$expected"], expected))
    if "$class" in x:
        cls = _classes().get(x["$class"])
        if cls is None:
            raise ValueError(f"an object of class {str(x['$class'])[:40]!r}")
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        given = {k: _dec(v, expected) for k, v in x.items() if k != "$class"}
        if not set(given) <= names:
            raise ValueError(f"a {cls.__name__} with fields {sorted(set(given) - names)}")
        return _build(cls, given)
    return {str(k): _dec(v, expected) for k, v in x.items()}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _fits(v: Any, hint: Any) -> bool:
    """Whether a value read from a file is of its field's declared type (a number where
    a number is declared: a file changed by hand must never reach a view)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(v, a) for a in args)
    if hint is type(None):
        return v is None
    if hint is float:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if hint is int:
        return isinstance(v, int) and not isinstance(v, bool)
    if origin is tuple:
        if not isinstance(v, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(x, args[0]) for x in v)
        return len(args) == len(v) and all(map(_fits, v, args))
    if origin in (dict, Mapping) or hint is dict:
        return isinstance(v, dict) and (
            not args or all(_fits(k, args[0]) and _fits(x, args[1]) for k, x in v.items())
        )
    if origin is list:
        return isinstance(v, list) and all(_fits(x, args[0]) for x in v)
    if isinstance(hint, type):
        return isinstance(v, hint)
    return True


def _enum_of(hint: Any) -> type | None:
    """The enum a field is declared of (`CaseKind`, `Verdict`; alone or with None)."""
    for h in (hint, *typing.get_args(hint)):
        if isinstance(h, type) and issubclass(h, enum.Enum):
            return h
    return None


def _build(cls: type, given: dict[str, Any]) -> Any:
    """`cls(**given)`, each field of its declared type (a `ValueError` otherwise)."""
    hints = _hints(cls)
    for name, value in given.items():
        kind = _enum_of(hints.get(name, Any))
        if kind is not None and isinstance(value, str) and not isinstance(value, kind):
            given[name] = value = kind(value)  # its text (a `ValueError` for any other)
        if not _fits(value, hints.get(name, Any)):
            raise ValueError(f"a {cls.__name__} whose {name} is not of its kind")
    try:
        return cls(**given)
    except (TypeError, ValueError, ArithmeticError) as e:
        raise ValueError(f"a {cls.__name__} that cannot be ({e})") from None


def _list(x: Any) -> list:
    if not isinstance(x, list):
        raise ValueError("a list that is not one")
    return x


def resolve_expected(declarations: tuple[Expected, ...]) -> Callable[[dict], Expected]:
    """Reads a declaration back as the catalog's own (`Catalog.expectations`, the same
    fields: its elements, a function maybe, are the catalog's); one the catalog no longer
    declares comes back as those fields alone."""

    def find(fields: dict) -> Expected:
        if not isinstance(fields, dict):
            raise ValueError("a declaration that is not a mapping")
        for e in declarations:
            if all(getattr(e, k) == fields.get(k) for k in _EXPECTED_FIELDS):
                return e
        given = {k: fields[k] for k in _EXPECTED_FIELDS if fields.get(k) is not None}
        if "check" in given:
            given["check"] = str(given["check"])
        return Expected(**given)

    return find


# --- one case ---------------------------------------------------------------------------------


def encode_case(j: CaseJudgement) -> dict[str, Any]:
    """Every field of a case's judgement (the numbers behind it included); a check's
    `result` under its name in `RESULTS`, every other registered name null."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(j):
        if f.name == "result":
            out.update(_encode_result(j.result))
        elif f.name in INFORMATION:  # one mapping, `info`, where the first of them is
            out.setdefault("info", _enc(information_json(j)))
        else:
            out[f.name] = _enc(getattr(j, f.name))
    return out


def _encode_result(result: Any) -> dict[str, Any]:
    if result is not None and type(result) not in RESULTS.values():
        raise TypeError(f"cannot write a {type(result).__name__} as a check's result")
    return {name: _enc(result if type(result) is t else None) for name, t in RESULTS.items()}


def decode_case(data: Any, expected: Callable[[dict], Expected]) -> CaseJudgement:
    """The `CaseJudgement` `encode_case` wrote (a `ValueError` for anything else)."""
    if not isinstance(data, dict):
        raise ValueError("a case that is not a mapping")
    names = {f.name for f in dataclasses.fields(CaseJudgement)} - {"result"}
    given = {k: _dec(v, expected) for k, v in data.items()}
    results = {k: given.pop(k) for k in list(given) if k in RESULTS}
    given.update(information_fields(given.pop("info", {})))  # `info`: the typed fields
    if not set(given) <= names or not {"case", "kind", "verdict"} <= set(given):
        raise ValueError("a case without its case id, kind and verdict")
    found = [(k, r) for k, r in results.items() if r is not None]
    if len(found) > 1:
        raise ValueError("a case with the numbers of two checks")
    for k, r in found:
        if not isinstance(r, RESULTS[k]):
            raise ValueError(f"a case whose {k} is not a {RESULTS[k].__name__}")
        given["result"] = r
    return _build(CaseJudgement, given)


# --- one example ------------------------------------------------------------------------------

# The fields of a `Gradient` written as its provenance (the arrays: their shapes only).
_GRADIENT_FIELDS = (
    "variant",
    "family",
    "dtype",
    "loss",
    "params",
    "inputs_sha256",
    "key",
    "backend",
    "backend_version",
    "created",
    "path",
    "source",
    "format",
    "seconds",
    "noise",
    "levels_measured",
)


def encode_gradient(g: Gradient) -> dict[str, Any]:
    provenance = provenance_json(g)  # its device, x64, reuse, a file's own attributes
    extra = {k: v for k, v in provenance.items() if isinstance(v, (str, int, float, bool))}
    return {
        **{k: _enc(getattr(g, k)) for k in _GRADIENT_FIELDS},
        "label": g.label,
        "cost": g.cost.to_json(),
        "compiled": g.cost.compiled_json(),
        "extra": _enc(extra),
        "shapes": {name: list(np.shape(a)) for name, a in g.gradients.items()},
    }


def decode_gradient(
    data: Any, example: Any, find_variant: Callable[[str], Any], expected: Callable
) -> Gradient:
    if not isinstance(data, dict):
        raise ValueError("a subject that is not a mapping")
    given = {k: _dec(data.get(k), expected) for k in _GRADIENT_FIELDS if k in data}
    for k in ("variant", "family", "dtype", "key", "source"):
        if not isinstance(given.get(k), str):
            raise ValueError(f"a subject whose {k} is not text")
    extra = _dec(data.get("extra", {"$dict": []}), expected)
    if not isinstance(extra, dict):
        raise ValueError("a subject whose extra is not a mapping")
    provenance = provenance_fields(extra)  # its device, x64, reuse (`_model._provenance`)
    g = _build(Gradient, {"example": example, "gradients": {}, **provenance, **given})
    g.cost = Cost.from_json(data.get("cost", {}))
    g.cost.read_compiled(data.get("compiled"))
    g.of = find_variant(g.variant)
    return g


def encode_example(ej: ExampleJudgement) -> dict[str, Any]:
    """Everything an `ExampleJudgement` holds but its example and inputs (the caller
    writes which example and which inputs key), every case in case-table order."""
    return {
        "judgements": [encode_case(j) for j in ej.judgements],
        "subjects": [encode_gradient(g) for g in ej.subjects.values()],
        "skipped": dict(ej.skipped),
        "unavailable": dict(ej.unavailable),
        "dtypes": list(ej.dtypes),
        "error": ej.error,
        "notes": list(ej.notes),
        "seconds": ej.seconds,
        "reuse": dict(ej.reuse),
        "judged_at": ej.judged_at,
        "environment": _enc(ej.environment),
    }


def decode_example(
    data: Any,
    catalog: Any,
    inputs: Any,
    arrays: Callable[[Gradient], dict[str, np.ndarray]],
) -> ExampleJudgement:
    """The `ExampleJudgement` `encode_example` wrote, of `catalog`'s example on `inputs`;
    `arrays(g)`: each subject's gradient arrays (from its file; `{}` when they cannot be
    had). A `ValueError` for anything not of that form."""
    if not isinstance(data, dict):
        raise ValueError("a judgement that is not a mapping")
    expected = resolve_expected(tuple(catalog.expectations))
    subjects = {}
    for entry in _list(data.get("subjects", [])):
        g = decode_gradient(entry, catalog.example, catalog.find, expected)
        g.gradients = arrays(g)
        subjects[g.label] = g
    texts = {}
    for key in ("skipped", "unavailable", "reuse"):
        value = data.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ValueError(f"its {key} are not labels with reasons")
        texts[key] = dict(value)
    notes = _list(data.get("notes", []))
    dtypes = _list(data.get("dtypes", ["float64"]))
    error, when = data.get("error"), data.get("judged_at", "")
    seconds = data.get("seconds", 0.0)
    if not all(isinstance(x, str) for x in [*notes, *dtypes, when]):
        raise ValueError("its notes, dtypes or time are not text")
    if not (error is None or isinstance(error, str)) or not isinstance(seconds, (int, float)):
        raise ValueError("its error or seconds are not of their kind")
    environment = _dec(data.get("environment", {}), expected)
    if not isinstance(environment, dict):
        raise ValueError("its environment is not a mapping")
    return ExampleJudgement(
        catalog.example,
        inputs,
        judgements=[decode_case(j, expected) for j in _list(data.get("judgements", []))],
        subjects=subjects,
        dtypes=tuple(dtypes),
        error=error,
        notes=list(notes),
        seconds=float(seconds),
        judged_at=when,
        environment=environment,
        **texts,
    )
