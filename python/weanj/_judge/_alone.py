"""Nothing compares nothing in silence (docs/verdicts.md, "Compared with nothing"): the
variants of an example that ran here and that no other member of their family was
compared with, per family, read from an `ExampleJudgement` alone (so `weanj check`, its
`check.json` read back by `weanj report`, `weanj diff` and `pytest --weanj` say the same).

A variant whose family has no other member here passes its own checks and is compared
with nothing: a family-name typo (`family="wav"` beside `"wave"`) passes a wrong port
with nothing but a "—" to show for it, and a family whose other members cannot run here
(a Julia reference without Julia) is no cross-validation at all. Neither is a failing
verdict (the verdicts stay the judge's, case by case); each is a clause that every
headline and the example's verdict line carry, and `weanj check --strict` fails on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._model._names import closest
from .._model._verdicts import CaseKind
from ._contract import first_clause
from ._verdict import ExampleJudgement


@dataclass(frozen=True)
class Alone:
    """A family of an example whose members that ran here were compared with no other
    member: `members` (the variants that ran), `absent` (`(variant, why)`: its other
    members that did not run here), `meant` (the example's family whose name is close to
    this one's, for a family of one member: "did you mean")."""

    example: str
    family: str
    members: tuple[str, ...]
    absent: tuple[tuple[str, str], ...] = ()
    meant: str | None = None

    @property
    def line(self) -> str:
        """The example's clause: `family wav has one member here, jax-bug: nothing to
        compare it with; did you mean wave?` ("here": in this check, on this machine; the
        judgement does not know the members a `--variants` left out)."""
        who = " and ".join(self.members)
        if len(self.members) == 1 and self.absent:
            gone = ", ".join(f"{v} did not run: {why}" for v, why in self.absent)
            here = f"family {self.family} has one member here ({gone})"
            return f"{here}: nothing to compare {who} with"
        if len(self.members) == 1:
            hint = f"; did you mean {self.meant}?" if self.meant else ""
            here = f"family {self.family} has one member here, {who}"
            return f"{here}: nothing to compare it with{hint}"
        return f"family {self.family}: {who} compared with nothing"

    @property
    def short(self) -> str:
        """The headline's words for it: `03-advection jax-x (family x: one member here)`."""
        what = "one member here" if len(self.members) == 1 else "compared with nothing"
        hint = f"; did you mean {self.meant}?" if self.meant else ""
        return f"{self.example} {', '.join(self.members)} (family {self.family}: {what}{hint})"

    def to_json(self) -> dict[str, Any]:
        return {
            "example": self.example,
            "family": self.family,
            "members": list(self.members),
            "absent": [{"variant": v, "why": why} for v, why in self.absent],
            "did_you_mean": self.meant,
            "line": self.line,
        }


def _variant_of(ej: ExampleJudgement, label: str) -> str:
    """The variant a subject's label is a run or a file of (`jax-a@float32@tpu`,
    `recorded/jax-a`: `jax-a`)."""
    g = ej.subjects.get(label)
    if g is not None and getattr(g, "variant", None):
        return g.variant
    return label.split("@")[0].rpartition("/")[2]


def _compared(ej: ExampleJudgement) -> dict[str, set[str]]:
    """`{variant: the other variants of its family it was compared with}`: the pairs of
    one family that the judge judged (not skipped, not information), a recorded file of
    another member included, one of its own runs or files not."""
    out: dict[str, set[str]] = {}
    for j in ej.of_kind(CaseKind.PAIR):
        if not j.verdict.judged or len(j.subjects) != 2 or " vs " in j.family:
            continue
        a, b = (_variant_of(ej, s) for s in j.subjects)
        if a != b:
            out.setdefault(a, set()).add(b)
            out.setdefault(b, set()).add(a)
    return out


def _families(ej: ExampleJudgement) -> dict[str, dict[str, str | None]]:
    """`{family: {variant: None where it ran here, else why it did not}}` in table order:
    the live check's float64 CPU runs, or the subjects of a store (`weanj diff`)."""
    out: dict[str, dict[str, str | None]] = {}
    for j in ej.of_kind(CaseKind.RUN):
        label = j.subjects[0]
        if "@" not in label:
            why = None if j.verdict.ran else first_clause(j.reason or str(j.verdict))
            out.setdefault(j.family, {})[label] = why
    if not out:
        for label, g in ej.subjects.items():
            if "@" not in label and "/" not in label:
                out.setdefault(g.family, {})[g.variant] = None
    return out


def alone(ej: ExampleJudgement) -> list[Alone]:
    """The families of `ej` with members that ran here and were compared with no other
    member (none at fault: a failure says it), each with the members that did not run
    and, for a family of one member, the example's other family its name is close to."""
    if not ej.judged:
        return []
    families = _families(ej)
    compared = _compared(ej)
    faults = ej.faults
    out = []
    for family, members in families.items():
        if any(v in faults for v in members):
            continue  # a member at fault: its failure speaks
        lonely = tuple(v for v, why in members.items() if why is None and not compared.get(v))
        if not lonely:
            continue
        absent = tuple((v, why) for v, why in members.items() if why is not None)
        others = [f for f in families if f != family]
        meant = closest(family, others) if len(members) == 1 else None
        out.append(Alone(ej.name, family, lonely, absent, meant))
    return out
