"""`JudgementView`: what `weanj check` and `weanj diff` (and `weanj.check()`, `weanj.diff()`)
return — the same object the command line prints.

It is data (`_judge._judgement.Judgement`: one `ExampleJudgement` per example, each with
every case's judgement and the numbers behind it) with views: a short `repr`, the
terminal text (`lines`), JSON (`to_json`), and in a notebook an HTML rendering
(`_repr_html_`): the verdict table, the variants' table and the pictures of what fails,
self-contained (no script, images as `data:` URIs). The report's page renders the same
judgement (`weanj.report(judgement=J)`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .._judge._judgement import Judgement

# At most this many pictures of failing pairs in a notebook cell.
MAX_PICTURES = 6


@dataclass(repr=False)
class JudgementView(Judgement):
    """A `weanj.Judgement` (every example's judgement from one `check` or `diff`) with its
    views: `lines()`, the terminal's text; `to_json()`, the data; in a notebook,
    `_repr_html_`."""

    @classmethod
    def of(cls, data: Judgement) -> JudgementView:
        """The data a run finished with (`RunFinished.judgement`), with its views."""
        return cls(**{f.name: getattr(data, f.name) for f in fields(data)})

    # --- views ----------------------------------------------------------------------------

    def lines(self, verbose: bool = True) -> list[str]:
        """The terminal's text: each example's block, then what cannot run here (said once,
        without `verbose`), the overall line and notes. Not `verbose` (`weanj check`
        without `-v`): each example's table and what fails in full (`_text.example_lines`)."""
        from ._text import example_lines, suspect_lines, unavailable_lines

        out = []
        for ej in self:
            out.extend(example_lines(ej, mode=self.command, verbose=verbose, strict=self.strict))
        if self.command == "check":
            if not verbose:
                out.extend(unavailable_lines(list(self)))
            out.append(self.headline())
            out.extend(suspect_lines(self.suspects))
        out.extend(self.notes)
        return out

    def headline(self) -> str:
        """The overall line: the verdict, what was not judged, and what was."""
        from ._text import overall_line

        return overall_line(
            list(self), self.seconds, self.dtypes, self.did_not_run, self.coverage, self.strict
        )

    def to_json(self) -> dict[str, Any]:
        from ._json import example_json

        return {
            "command": self.command,
            "verdict": self.verdict,
            "ok": self.ok,
            "dtypes": list(self.dtypes),
            "headline": self.headline() if self.command == "check" else None,
            "coverage": self.coverage.to_json(),
            # the families compared with nothing (`_judge._alone`): failing with `strict`
            "alone": [a.to_json() for a in self.alone],
            "strict": self.strict,
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
        from ._lines import coverage_text, expected_count

        parts = []
        for ej in self:
            notes = [f"{len(ej.failures)} failure(s)"] if ej.failures else []
            if ej.expected:
                notes.append(expected_count(len(ej.expected)))
            parts.append(f"{ej.name}: {ej.state}" + (f" ({', '.join(notes)})" if notes else ""))
        shown = "; ".join(parts[:8]) + ("; …" if len(parts) > 8 else "")
        covered = coverage_text(self.coverage, self.did_not_run, self.alone)  # not judged
        return f"<weanj {self.command}: {self.verdict} — {shown}" + (
            f" — {covered}>" if covered else ">"
        )

    def _repr_html_(self) -> str:
        from ._notebook import judgement_html

        return judgement_html(self, max_pictures=MAX_PICTURES)


class Kept:
    """A listener of a run's events (`_judge._events`): the run's `Judgement` with its
    views (a `JudgementView`), once it finishes (what `weanj.check()` returns, and the
    notebook shows)."""

    def __init__(self) -> None:
        self.judgement: JudgementView | None = None

    def __call__(self, event: Any) -> None:
        from .._judge._events import RunFinished

        if isinstance(event, RunFinished):
            self.judgement = JudgementView.of(event.judgement)
