"""`Judgement`: what `weanj check` and `weanj diff` (and `weanj.check()`, `weanj.diff()`)
return — the same object the command line prints.

It is data (one `ExampleJudgement` per example, each with every case's judgement and
the numbers behind it) with views: a short `repr`, the terminal text (`lines`), JSON
(`to_json`), and in a notebook an HTML rendering (`_repr_html_`): the verdict table, the
variants' table and the pictures of what fails, self-contained (no script, images as
`data:` URIs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._judge._verdict import CaseJudgement, ExampleJudgement, Verdict

# At most this many pictures of failing pairs in a notebook cell.
MAX_PICTURES = 6


@dataclass
class Judgement:
    """Every example's judgement from one `check` or `diff`.

    - `examples`: `{name: ExampleJudgement}` in the order judged (also `judgement[name]`).
    - `ok`: every example judged and nothing failing; `failures`: every failing case.
    - `lines()`: the terminal's text; `to_json()`: the data; `exit_code`: 0, 1 (something
      fails) or 2 (an example could not be judged).
    """

    command: str  # "check" or "diff"
    examples: dict[str, ExampleJudgement] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ("float64",)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # compilation, reuse, what else was done
    # variants that did not run and that the result leans on: [(label, why, required)]
    did_not_run: list[tuple[str, str, bool]] = field(default_factory=list)
    suspects: list[Any] = field(default_factory=list)  # `_judge._suspects.Suspect`s, by example

    def __getitem__(self, name: str) -> ExampleJudgement:
        return self.examples[name]

    def __iter__(self):
        return iter(self.examples.values())

    def __len__(self) -> int:
        return len(self.examples)

    @property
    def ok(self) -> bool:
        return all(ej.ok for ej in self.examples.values()) and not self.required_missing

    @property
    def required_missing(self) -> list[tuple[str, str, bool]]:
        """The variants the project requires (`require`) that did not run."""
        return [m for m in self.did_not_run if m[2]]

    @property
    def failures(self) -> list[CaseJudgement]:
        return [j for ej in self.examples.values() for j in ej.failures]

    @property
    def not_judged(self) -> dict[str, str]:
        return {name: ej.error for name, ej in self.examples.items() if ej.error is not None}

    @property
    def verdict(self) -> str:
        if any(ej.judged and not ej.ok for ej in self.examples.values()):
            return str(Verdict.FAIL)
        if self.required_missing:
            return str(Verdict.FAIL)
        return "not judged" if self.not_judged else str(Verdict.OK)

    @property
    def exit_code(self) -> int:
        if self.not_judged:
            return 2
        return 0 if self.ok else 1

    @property
    def expected(self) -> list[CaseJudgement]:
        """Every case that differs as declared (`weanj.Expected`): verdict `expected`."""
        return [
            j
            for ej in self.examples.values()
            for j in ej.judgements
            if j.verdict == Verdict.EXPECTED
        ]

    def verdicts(self) -> dict[str, str]:
        """`{case id: verdict}` of every case of every example (what front ends compare)."""
        return {j.case: str(j.verdict) for ej in self for j in ej.judgements}

    # --- views ----------------------------------------------------------------------------

    def lines(self) -> list[str]:
        """The terminal's text: each example's block, then the overall line and notes."""
        from ._text import example_lines, overall_line, suspect_lines

        out = []
        for ej in self:
            out.extend(example_lines(ej, mode=self.command))
        if self.command == "check":
            out.append(overall_line(list(self), self.seconds, self.dtypes, self.did_not_run))
            out.extend(suspect_lines(self.suspects))
        out.extend(self.notes)
        return out

    def to_json(self) -> dict[str, Any]:
        from ._json import example_json

        return {
            "command": self.command,
            "verdict": self.verdict,
            "ok": self.ok,
            "dtypes": list(self.dtypes),
            "examples": [example_json(ej) for ej in self],
            "did_not_run": [
                {"variant": label, "why": why, "required": required}
                for label, why, required in self.did_not_run
            ],
            "suspects": [
                {
                    "example": example,
                    "family": s.family,
                    "variant": s.label,
                    "against": [j.case for j in s.against],
                }
                for example, s in self.suspects
            ],
        }

    def __repr__(self) -> str:
        from ._lines import expected_count

        parts = []
        for ej in self:
            notes = [f"{len(ej.failures)} failure(s)"] if ej.failures else []
            if ej.expected:
                notes.append(expected_count(len(ej.expected)))
            parts.append(f"{ej.name}: {ej.state}" + (f" ({', '.join(notes)})" if notes else ""))
        shown = "; ".join(parts[:8]) + ("; …" if len(parts) > 8 else "")
        return f"<weanj {self.command}: {self.verdict} — {shown}>"

    def _repr_html_(self) -> str:
        from ._notebook import judgement_html

        return judgement_html(self, max_pictures=MAX_PICTURES)


def worst_of(js: list[CaseJudgement]) -> Verdict | None:
    return Verdict.worst(j.verdict for j in js)
