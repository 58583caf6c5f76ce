"""The judgement of the last `weanj check`, kept for `weanj report`: its serialisation.

`weanj report` runs nothing, and renders only what the judge decided. So `weanj check`
leaves `results/<example>/check.json`: the example's `ExampleJudgement` written whole
(`_judge._serial`: every case with the numbers behind it, the subjects' provenance, what
was skipped or unavailable and why, when it was judged and in which environment), beside
the judge's JSON of `weanj diff --json` (`_json.example_json`, for readers of the file).
Reading it gives the same `ExampleJudgement` back, its subjects' arrays read from the
store files the check wrote. The report shows it only while it is *current*: while its
inputs key is the key of the inputs the report reads (docs/DESIGN.md, "The provenance
key"); otherwise, and where there is none, the example's state is one line naming
`weanj check EX`. A file of an older format is refused in one line naming `weanj check`,
which rewrites it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._environment import now
from .._errors import WeanjError
from .._io._atomic import atomic_path
from .._io._file_bytes import read_bytes
from .._io._gradient_files import read_gradient_file
from .._judge._serial import decode_example, encode_example
from .._judge._verdict import ExampleJudgement
from .._model import Catalog, Gradient, Inputs
from .._places import Places
from ._json import example_json

FORMAT = 2
NAME = "check.json"
MAX_CHECK_BYTES = 256 * 2**20  # far above any example's judgement

# States of an example's check file, as the report tells them.
CURRENT, STALE, MISSING, UNREADABLE = "current", "stale", "missing", "unreadable"


def _environment() -> dict[str, Any]:
    """Versions, device and date of this check (JAX is loaded already: check ran it)."""
    from .._environment import default_device, environment

    try:
        return environment(default_device())
    except Exception as e:  # a broken JAX must not lose the verdicts themselves
        return {"error": f"{type(e).__name__}: {e}"[:200]}


def check_json(ej: ExampleJudgement, env: dict[str, Any]) -> dict[str, Any]:
    """What `check.json` holds for one example."""
    return {
        "weanj_check": FORMAT,
        "timestamp": ej.judged_at or now(),
        "environment": env,
        **example_json(ej),
        "seconds": ej.seconds,
        "judgement": encode_example(ej),
    }


class CheckFiles:
    """A listener of a check's events (`_judge._events`): each example judged, its
    `check.json` written (`write_check_verdicts`), the environment read once."""

    def __init__(self, places: Places):
        self.places, self.env = places, None

    def __call__(self, event: Any) -> None:
        from .._judge._events import ExampleJudged

        if isinstance(event, ExampleJudged):
            if self.env is None:
                self.env = _environment()
            write_check_verdicts([event.judgement], self.places, self.env)


def write_check_verdicts(
    results: list[ExampleJudgement], places: Places, env: dict[str, Any] | None = None
) -> list[Path]:
    """Write `results/<example>/check.json` for each judged example (atomically: a
    report never reads half a file); **Returns:** the paths written."""
    env = _environment() if env is None else env
    written = []
    for ej in results:
        if ej.error is not None:
            continue  # not judged: the last judged check stays, the report says it is stale
        if not ej.environment:  # the live judgement carries it too (its page shows it)
            ej.environment = dict(env)
        path = places.check_file(ej.name)
        data = check_json(ej, env)
        if _steady(_written(path)) == _steady(data):
            continue  # the same judgement as the file holds: nothing to write
        text = json.dumps(data, indent=1, allow_nan=False)
        try:
            with atomic_path(path, foreign="aside") as tmp:
                tmp.write_text(text + "\n", encoding="utf-8")
        except OSError as e:  # the check's own verdicts are printed all the same
            print(f"weanj: warning: cannot write {path} ({e.strerror or e})", file=sys.stderr)
            continue
        written.append(path)
    return written


# What changes with every run, not with what was judged: when and how long.
_WHEN = ("timestamp", "seconds", "judged_at", "date")


def _steady(data: Any) -> Any:
    """A check file's data without when it was judged and how long it took (`_WHEN`, at
    any depth): two runs that judged the same give the same."""
    if isinstance(data, dict):
        return {k: _steady(v) for k, v in data.items() if k not in _WHEN}
    if isinstance(data, list):  # a `$dict`'s [key, value] pairs too (`_judge._serial`)
        pair = lambda v: isinstance(v, list) and len(v) == 2 and v[0] in _WHEN  # noqa: E731
        return [_steady(v) for v in data if not pair(v)]
    return data


def _written(path: Path) -> Any:
    """The data of the check file at `path` as JSON (None: none, or not readable JSON)."""
    try:
        return json.loads(path.read_bytes()) if path.is_file() else None
    except (OSError, ValueError):
        return None


@dataclass
class CheckVerdicts:
    """An example's check file as the report reads it."""

    path: Path
    state: str  # CURRENT, STALE, MISSING, UNREADABLE
    data: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # what is wrong with it and which command refreshes it
    judgement: ExampleJudgement | None = None  # read back (`read_check`), when current

    @property
    def current(self) -> bool:
        return self.state == CURRENT


def _check_shape(data: dict) -> None:
    """A `ValueError` unless the fields the report reads are of the form `check_json`
    writes them (a file changed by hand must be "unreadable", not a traceback)."""

    def judgements(v):
        return isinstance(v, list) and all(
            isinstance(j, dict)
            and isinstance(j.get("kind"), str)
            and isinstance(j.get("verdict"), str)
            and isinstance(j.get("failed"), bool)
            and isinstance(j.get("reason"), (str, type(None)))
            and isinstance(j.get("subjects"), list)
            and all(isinstance(s, str) for s in j["subjects"])
            for j in v
        )

    def texts(v):
        return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())

    shapes = {
        "gradients": lambda v: (
            isinstance(v, list)
            and all(isinstance(g, dict) and isinstance(g.get("label"), str) for g in v)
        ),
        **dict.fromkeys(("runs", "checks", "skipped", "pairs", "files"), judgements),
        "faults": lambda v: (
            isinstance(v, dict) and all(isinstance(f, dict) and texts(f) for f in v.values())
        ),
        "unavailable": texts,
        "skipped_subjects": texts,
        "environment": lambda v: isinstance(v, dict),
        "timestamp": lambda v: isinstance(v, str),
    }
    bad = [k for k, ok in shapes.items() if k in data and not ok(data[k])]
    if bad:
        raise ValueError(f"its {', '.join(bad)} are not what `weanj check` writes")


def read_check_verdicts(
    example_name: str, current_key: str | None, places: Places
) -> CheckVerdicts:
    """The check file of an example, judged current when its inputs key is `current_key`
    (the key of the shared inputs at float64, `Inputs.key("float64")`)."""
    path = places.check_file(example_name)
    refresh = f"`weanj check {example_name}`"
    if not path.is_file():
        return CheckVerdicts(path, MISSING, note=f"no gradient checks recorded: run {refresh}")
    try:  # a regular file of bounded size (a pipe never blocks), of bounded nesting
        data = json.loads(read_bytes(path, "check file", limit=MAX_CHECK_BYTES).decode("utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("weanj_check"), int):
            raise ValueError("not a weanj check file")
        if data["weanj_check"] != FORMAT:
            return CheckVerdicts(
                path,
                UNREADABLE,
                note=f"{path} is a check file of format {data['weanj_check']}, not "
                f"{FORMAT}: rewrite it with {refresh}",
            )
        if data.get("example") != example_name:
            raise ValueError(f"it is the check of {data.get('example')!r}")
        if not isinstance(data.get("key", ""), str):
            raise ValueError("its key is not text")
        _check_shape(data)
    except RecursionError:
        return CheckVerdicts(path, UNREADABLE, note=f"{path} is nested too deeply; rerun {refresh}")
    except (OSError, ValueError) as e:
        return CheckVerdicts(path, UNREADABLE, note=f"{path} is unreadable ({e}); rerun {refresh}")
    when = data.get("timestamp", "?")
    if current_key is None or data.get("key") != current_key:
        theirs = (data.get("key") or "none")[:12]
        ours = (current_key or "none")[:12]
        return CheckVerdicts(
            path,
            STALE,
            data,
            note=f"the last check ({when}) ran on other inputs (key {theirs}… vs {ours}…): "
            f"its verdicts are not shown; refresh them with {refresh}",
        )
    return CheckVerdicts(path, CURRENT, data, note=f"gradient checks of `weanj check` at {when}")


def read_check(cat: Catalog, inputs: Inputs, places: Places) -> CheckVerdicts:
    """The check file of `cat`'s example read back into its `ExampleJudgement`
    (`.judgement`) when it is current on `inputs`; otherwise its state and the one line
    saying what runs it (`.note`). A file whose judgement is not of the form `weanj check`
    writes is UNREADABLE, in one line (never a traceback)."""
    found = read_check_verdicts(cat.name, inputs.key("float64"), places)
    if not found.current:
        return found
    try:
        ej = decode_example(
            found.data.get("judgement"), cat, inputs, lambda g: _arrays(g, cat, places)
        )
    except (ValueError, TypeError, KeyError, WeanjError) as e:
        why = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        return CheckVerdicts(
            found.path,
            UNREADABLE,
            note=f"{found.path} is unreadable ({why}); rerun `weanj check {cat.name}`",
        )
    except RecursionError:
        return CheckVerdicts(
            found.path,
            UNREADABLE,
            note=f"{found.path} is nested too deeply; rerun `weanj check {cat.name}`",
        )
    bad = _unshowable(ej)
    if bad:
        return CheckVerdicts(
            found.path,
            UNREADABLE,
            note=f"{found.path} is unreadable (case {bad[:120]} cannot be shown); rerun "
            f"`weanj check {cat.name}`",
        )
    return CheckVerdicts(found.path, CURRENT, found.data, found.note, ej)


def _unshowable(ej: ExampleJudgement) -> str:
    """The first case whose text the views cannot write ("" when none): a file changed by
    hand in a field whose type alone does not say it (a case's extra numbers, `info`)."""
    from ._lines import details, summary

    for j in ej.judgements:
        try:
            summary(j)
            details(j)
        except Exception:  # any: a file's content must never be the report's traceback
            return j.case
    return ""


def _arrays(g: Gradient, cat: Catalog, places: Places) -> dict:
    """The arrays of a subject the check judged, from its file (the store file the check
    wrote of a run; the file it read otherwise) while that file still holds what was
    judged (the same key and loss, and creation time where the check knew it: a live run's
    file is dated when written); `{}` otherwise (no picture, said so). Its outputs and
    Hessian-vector products, where the file holds them, go into `g` beside (docs/outputs.md)."""
    path = g.path
    if path is None and g.source == "run":
        path = places.gradient(cat.name, g.variant, g.dtype)
    if path is None or not Path(path).is_file():
        return {}
    try:
        found = read_gradient_file(path, cat.example, places)
    except WeanjError:
        return {}
    same_loss = found.loss == g.loss or (found.loss is None and g.loss is None)
    if found.key != g.key or not same_loss or (g.created and found.created != g.created):
        return {}
    g.outputs, g.hvp, g.hvp_u = found.outputs, found.hvp, found.hvp_u
    g.pullback = found.pullback
    return dict(found.gradients)
