"""The verdicts of the last `weanj check`, kept for `weanj report`.

`weanj report` runs nothing, and the store alone cannot tell it the gradient checks
(Taylor, jvp: computed live by `weanj check`, never stored). So `weanj check` leaves
`results/<example>/check.json`: the judge's JSON of the example (`_json.example_json`,
the same fields as `weanj diff --json`), the subjects it skipped and why, when it ran and
in which environment. The report shows it only while it is *current*: while its inputs
key is the key of the inputs the report reads (docs/DESIGN.md, "The provenance key");
otherwise it says the file is stale and which command refreshes it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._environment import now
from .._io._atomic import atomic_path
from .._io._safeh5 import read_bytes
from .._judge._verdict import ExampleJudgement
from .._places import Places
from ._json import example_json

FORMAT = 1
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
        "timestamp": now(),
        "environment": env,
        **example_json(ej),
        "seconds": ej.seconds,
    }


def write_check_verdicts(results: list[ExampleJudgement], places: Places) -> list[Path]:
    """Write `results/<example>/check.json` for each judged example (atomically: a
    report never reads half a file); **Returns:** the paths written."""
    env = _environment()
    written = []
    for ej in results:
        if ej.error is not None:
            continue  # not judged: the last judged check stays, the report says it is stale
        path = places.check_file(ej.name)
        text = json.dumps(check_json(ej, env), indent=1, allow_nan=False)
        try:
            with atomic_path(path) as tmp:
                tmp.write_text(text + "\n", encoding="utf-8")
        except OSError as e:  # the check's own verdicts are printed all the same
            print(f"weanj: warning: cannot write {path} ({e.strerror or e})", file=sys.stderr)
            continue
        written.append(path)
    return written


@dataclass
class CheckVerdicts:
    """An example's check file as the report reads it."""

    path: Path
    state: str  # CURRENT, STALE, MISSING, UNREADABLE
    data: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # what is wrong with it and which command refreshes it

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
        if not isinstance(data, dict) or data.get("weanj_check") != FORMAT:
            raise ValueError(f"not a weanj check file of format {FORMAT}")
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
