"""Which variant of a failing family is most likely wrong, decided from the pairs' verdicts
alone (docs/verdicts.md, "The end of a run").

Within a family, the float64 subjects that were compared (a subject at fault, unavailable
or skipped is in none of the groups: its pairs are not compared) and that agree (verdict
`ok` or `kinks`) form groups (connected through agreeing pairs). The *trusted* group is
the largest one; on a tie the one holding the family's reference: its first subject that
was compared (`references`: where the designated reference, its first member, is at
fault, the family is judged against its next member that ran, and every view says so).
Every float64 subject outside it is a suspect, named with its failing pairs against the
trusted group only: a port whose gradient equals the reference is never blamed for its gap
to another wrong port, nor for disagreeing with a broken reference, and with several wrong
ports each is named. A float32 run that fails against its own float64 run (or, with none,
against the family's reference) is a suspect too, unless its float64 run already is.

A family whose every member fails the Taylor test of an array while their gradients agree
(every pair among them agrees) names no suspect: one port's mistake would not be every
port's. The judge names the likelier cause instead (`kink_hypotheses`): a kink of the
loss closer to the inputs than the test's steps reach, or a first step too large for it,
with the smaller `h0` to declare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._model._verdicts import CaseKind, Verdict
from ._remainder import RESOLVED
from ._taylor import TaylorResult

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


@dataclass(frozen=True)
class Reference:
    """A family's reference as it was judged: `designated`, its first member; where that one
    is at fault or did not run (`state` says which), the member the family was judged
    against instead (`judged_against`; None when no other member was compared)."""

    family: str
    designated: str
    state: str = ""  # "" when the designated reference was compared
    judged_against: str | None = None

    @property
    def line(self) -> str:
        """What every view says of a family whose designated reference stood aside."""
        if not self.state:
            return ""
        head = f"family {self.family}: {self.designated} is {self.state}; "
        if self.judged_against is None:
            return head + "no other member was compared"
        return head + f"family judged against {self.judged_against}"


def _family_pairs(ej: ExampleJudgement) -> list[CaseJudgement]:
    """The same-family pairs of the example (not the information pairs across families):
    their gradients, and their outputs and Hessian-vector products where compared (a port
    whose output alone parts ways is its family's suspect too)."""
    return [
        j
        for j in ej.judgements
        if CaseKind(j.kind).compares and " vs " not in j.family and len(j.subjects) == 2
    ]


def _compared(pairs: list[CaseJudgement]) -> list[str]:
    """The subjects of the pairs that were compared, in table order."""
    return list(dict.fromkeys(s for j in pairs if j.verdict != Verdict.SKIPPED for s in j.subjects))


def _state(ej: ExampleJudgement, label: str) -> str:
    """Why a subject stood aside: at fault, unavailable, skipped; "" when it ran."""
    run = ej.run_of(label)
    if run is not None and run.verdict.fault:
        return f"at fault ({run.verdict})"
    if label in ej.unavailable:
        return "unavailable here"
    return "skipped here" if label in ej.skipped else ""


def references(ej: ExampleJudgement) -> list[Reference]:
    """Each family's reference as judged (`Reference`), in table order: its first float64
    member, or, where that one is at fault or did not run, its first member that was
    compared (the next member that ran)."""
    pairs = [j for j in _family_pairs(ej) if not any("@" in s for s in j.subjects)]
    out = []
    for family in dict.fromkeys(j.family for j in pairs):
        mine = [j for j in pairs if j.family == family]
        designated = mine[0].subjects[0]
        state = _state(ej, designated)
        compared = [s for s in _compared(mine) if s != designated]
        against = (compared[0] if compared else None) if state else None
        out.append(Reference(family, designated, state, against))
    return out


def trusted_group(nodes: list[str], agree: list[tuple[str, str]]) -> set[str]:
    """The family's trusted members: of the groups that `agree` (pairs whose numbers
    agree) connects among `nodes` (the members compared, the reference first), the
    largest, on a tie the one holding the reference."""
    groups = _groups(nodes, agree)
    reference = nodes[0] if nodes else None
    return set(max(groups, key=lambda g: (len(g), reference in g), default=[]))


def agrees(j: CaseJudgement) -> bool:
    """The pair's numbers agree (`ok`, `kinks`; `unexpectedly ok` too: only the pair's
    declaration is wrong, which its own failure says, never a port)."""
    return j.verdict.agreeing or j.verdict.not_there


def _differs(j: CaseJudgement) -> bool:
    return j.failed and not agrees(j)


def suspects(ej: ExampleJudgement) -> list[Suspect]:
    """The suspects of every failing family of the example (module docstring)."""
    pairs = _family_pairs(ej)
    found: list[Suspect] = []
    for family in dict.fromkeys(j.family for j in pairs if _differs(j)):
        mine = [j for j in pairs if j.family == family]
        wide = [j for j in mine if not any("@" in s for s in j.subjects)]
        nodes = _compared(wide)  # a subject at fault or not run is in no group
        # two members agree where every case of theirs does (each gradient array, each
        # output, each Hessian product): one that differs keeps them apart
        apart = {frozenset(j.subjects) for j in wide if _differs(j)}
        agree = [j.subjects for j in wide if agrees(j) and frozenset(j.subjects) not in apart]
        trusted = trusted_group(nodes, agree)
        named = set()
        for label in nodes:
            if label in trusted:
                continue
            against = tuple(
                j for j in wide if label in j.subjects and _differs(j) and trusted & set(j.subjects)
            )
            if against:
                found.append(Suspect(family, label, against))
                named.add(label)
        for j in mine:
            narrow = [s for s in j.subjects if "@" in s]
            if not _differs(j) or not narrow:
                continue
            label = narrow[0]
            if label.split("@")[0] in named or label in named:
                continue
            other = [s for s in j.subjects if s != label]
            own = other and other[0] == label.split("@")[0]  # against its own float64 run
            if other and (own or other[0] in trusted or not trusted):
                found.append(Suspect(family, label, (j,)))
                named.add(label)
    return found


# --- a family that fails the Taylor test alike ---------------------------------------------


@dataclass(frozen=True)
class KinkHypothesis:
    """A family every member of which fails the Taylor test of `arrays` while every pair
    among them agrees: the judge's hypothesis, a kink of the loss within `reach[array]` of
    the inputs along the test's directions (the smallest step whose remainder still showed
    it), and the `h0` below it to declare. `cases`: the members' failing Taylor tests."""

    family: str
    members: tuple[str, ...]
    arrays: tuple[str, ...]
    reach: dict[str, float]
    cases: tuple[CaseJudgement, ...]

    @property
    def h0(self) -> dict[str, float]:
        """A first step a tenth of the reach, per array: the test then starts below the
        kink (`weanj.TaylorPolicy(h0=...)`)."""
        return {a: float(f"{self.reach[a] / 10:.0e}") for a in self.arrays}

    @property
    def line(self) -> str:
        """What every view says of it, in one line."""
        within = ", ".join(
            f"{self.reach[a]:.1e}" + (f" ({a})" if len(self.arrays) > 1 else "")
            for a in self.arrays
        )
        declared = ", ".join(f'"{a}": weanj.TaylorPolicy(h0={h:.0e})' for a, h in self.h0.items())
        return (
            f"family {self.family}: every member ({', '.join(self.members)}) fails the Taylor "
            f"test of {', '.join(self.arrays)} alike while their gradients agree: a kink of the "
            f"loss within about {within} of the inputs, which the test's steps cross, or a "
            f"first step too large for the loss, rather than a wrong port; to test below it, "
            f"declare Example(taylor={{{declared}}})"
        )


def _reach(result: TaylorResult) -> float:
    """The smallest step at which a remainder of the test was resolved (above rounding)."""
    return min(
        (
            h
            for d in result.directions
            for h, r, rho in zip(d.steps, d.remainders, d.rounding, strict=True)
            if r > RESOLVED * rho
        ),
        default=result.h0,
    )


def _alike(ej: ExampleJudgement, family: str, array: str) -> list[CaseJudgement] | None:
    """The members' failing Taylor tests of `array` when every member of `family` with a
    Taylor test of it fails it (at least two), each with a kink's signature (second
    differences that fall as h, `TaylorResult.kink`), and every pair among them agrees;
    else None: a family that shares a wrong gradient of a smooth loss gets no kink line."""
    tests = [
        j
        for j in ej.of_kind(CaseKind.TAYLOR)
        if j.family == family and j.array == array and j.taylor is not None and j.taylor.directions
    ]
    members = {j.subjects[0] for j in tests}
    if len(members) < 2 or any(j.verdict != Verdict.FAIL for j in tests):
        return None
    if not all(j.taylor.kink for j in tests):  # a smooth loss there: the gradient is wrong
        return None
    among = [j for j in _family_pairs(ej) if j.family == family and set(j.subjects) <= members]
    joined = {frozenset(j.subjects) for j in among}
    every = {frozenset((a, b)) for a in members for b in members if a != b}
    if joined != every or not all(agrees(j) for j in among):
        return None
    return tests


def kink_hypotheses(ej: ExampleJudgement) -> list[KinkHypothesis]:
    """The families that fail the Taylor test alike (`KinkHypothesis`), in table order."""
    out = []
    tests = ej.of_kind(CaseKind.TAYLOR)
    for family in dict.fromkeys(j.family for j in tests if j.verdict == Verdict.FAIL):
        arrays = dict.fromkeys(j.array for j in tests if j.family == family)
        found = {a: _alike(ej, family, a) for a in arrays}
        found = {a: cases for a, cases in found.items() if cases}
        if not found:
            continue
        cases = tuple(j for js in found.values() for j in js)
        reach = {a: min(_reach(j.taylor) for j in js) for a, js in found.items()}
        members = tuple(dict.fromkeys(j.subjects[0] for j in cases))
        out.append(KinkHypothesis(family, members, tuple(found), reach, cases))
    return out
