"""Which variant of a failing family is most likely wrong, decided from the pairs' verdicts
alone (docs/verdicts.md, "The end of a run").

Within a family, the float64 subjects that agree (verdict `ok` or `kinks`) form groups
(connected through agreeing pairs). The *trusted* group is the largest one; on a tie the
one holding the family's reference (its first subject: a recorded or Julia reference
comes first). Every float64 subject outside it is a suspect, named with its failing pairs
against the trusted group only: a port whose gradient equals the reference is never blamed
for its gap to another wrong port, and with several wrong ports each is named. A float32
run that fails against its reference is a suspect too, unless its float64 run already is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._model._verdicts import CaseKind

# `_verdict` asks this module (`ExampleJudgement.suspects`), so this one names its types
# without importing them: a judgement is an `ExampleJudgement`, a case a `CaseJudgement`.
ExampleJudgement = CaseJudgement = Any


@dataclass(frozen=True)
class Suspect:
    """A subject the judge names as most likely wrong, with its failing pairs against the
    family's trusted group (the reference first)."""

    family: str
    label: str
    against: tuple[CaseJudgement, ...]

    @property
    def reference(self) -> str:
        """The trusted subject it is compared with first (what `weanj bisect` needs)."""
        j = self.against[0]
        return j.subjects[0] if j.subjects[1] == self.label else j.subjects[1]


def _groups(nodes: list[str], agree: list[tuple[str, str]]) -> list[list[str]]:
    parent = {n: n for n in nodes}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in agree:
        parent[root(a)] = root(b)
    out: dict[str, list[str]] = {}
    for n in nodes:
        out.setdefault(root(n), []).append(n)
    return list(out.values())


def suspects(ej: ExampleJudgement) -> list[Suspect]:
    """The suspects of every failing family of the example (module docstring)."""
    pairs = [
        j for j in ej.of_kind(CaseKind.PAIR) if " vs " not in j.family and len(j.subjects) == 2
    ]
    found: list[Suspect] = []
    for family in dict.fromkeys(j.family for j in pairs if j.failed):
        mine = [j for j in pairs if j.family == family]
        wide = [j for j in mine if not any("@" in s for s in j.subjects)]
        nodes = list(dict.fromkeys(s for j in wide for s in j.subjects))
        agree = [j.subjects for j in wide if j.verdict.agreeing]
        groups = _groups(nodes, agree)
        reference = nodes[0] if nodes else None
        trusted = set(
            max(groups, key=lambda g: (len(g), reference in g), default=[]) if groups else []
        )
        named = set()
        for label in nodes:
            if label in trusted:
                continue
            against = tuple(
                j for j in wide if label in j.subjects and j.failed and trusted & set(j.subjects)
            )
            if against:
                found.append(Suspect(family, label, against))
                named.add(label)
        for j in mine:
            narrow = [s for s in j.subjects if "@" in s]
            if not j.failed or not narrow:
                continue
            label = narrow[0]
            if label.split("@")[0] in named or label in named:
                continue
            other = [s for s in j.subjects if s != label]
            if other and (other[0] in trusted or not trusted):
                found.append(Suspect(family, label, (j,)))
                named.add(label)
    return found
