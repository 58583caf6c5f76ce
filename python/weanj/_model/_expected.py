"""A declared expectation: a difference a project knows of and keeps, as data.

Some pairs differ on purpose: a literal port kept to show a hazard, a float32 variant
known to lose a digit on one input, a Julia AD that disagrees with Enzyme on a branch.
`weanj.Expected` says which pair (or which variant's run or gradient check), why, and as
much of the difference as is known: the verdict, the gradient array, the elements or the
region, and a bound on its size. The judge (`_judge._expected`) holds every case it
concerns to it: as declared, `expected` (it passes, with the reason); not there at all,
`unexpectedly ok` (it fails: strict, like pytest's `xfail(strict=True)`); there but other
than declared, it fails saying how. Nothing here knows the judge or the registry.
"""

from __future__ import annotations

import operator
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import DefinitionError
from ._verdicts import DECLARABLE, GRADIENT_CHECKS, CaseKind, Verdict

# What a declaration may expect: a pair or a gradient check that fails, or a run whose
# variant is at fault (`DECLARABLE`, from `Verdict`); and what it may declare instead of
# a pair: a run, a gradient check.
DECLARABLE_KINDS = (CaseKind.RUN, *GRADIENT_CHECKS)
_NAMED = {"variant": "a variant's", "against": "a variant's", "array": "an array's"}


@dataclass(frozen=True, eq=False)  # one declaration is itself (its elements may be a function)
class Expected:
    """A known difference, declared: `expected=` on a variant or on the `weanj.Example`.

    **Arguments:**

    - `variant`, `against`: which pair. On a variant both are optional: by default the
      variant against every other member of its family it is compared with (its
      family's reference first); `against` names one. On an example, `variant` is
      required.
    - `reason`: why, one sentence (shown with the verdict).
    - `check`: `"taylor"` or `"jvp"`: the variant's gradient check instead of a pair;
      `"run"`: its run (implied by `verdict="error"` or `"NaN/Inf"`).
    - `verdict`: what is expected: `"FAIL"` (default), `"error"`, `"NaN/Inf"`.
    - `array`: the gradient array that differs (default: any).
    - `elements`: the indices where it differs (`[0]`, `[(2, 3), (2, 4)]`), or
      `arrays -> indices` (they may depend on the inputs; none: not expected to differ
      on these inputs); `region`: a box of it (`numpy.s_[2:5, :]`). Elsewhere the pair
      must agree under the tolerance policy.
    - `bound`: the largest difference expected, relative to the reference
      (`max|Δ| / max|g_ref|`, the `rel` of `weanj check`).
    """

    variant: str | None = None
    against: str | None = None
    reason: str = ""
    check: CaseKind | str | None = None  # a `CaseKind` once made (its text given)
    verdict: Verdict | str = Verdict.FAIL  # a `Verdict` once made (its text given)
    array: str | None = None
    elements: Iterable[Any] | Callable[[Mapping[str, np.ndarray]], Iterable[Any]] | None = None
    region: Any = None
    bound: float | None = None
    # where the project declared it (`file:line`), for the messages that name it
    declared_at: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "declared_at", _declared_at())
        if not isinstance(self.reason, str) or not self.reason.strip() or "\n" in self.reason:
            raise DefinitionError(
                f"weanj.Expected needs a reason: one line saying why ({self.declared_at})"
            )
        for name in ("variant", "against", "array"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise DefinitionError(
                    f"weanj.Expected: {name} must be {_NAMED[name]} name (str), got {value!r} "
                    f"({self.declared_at})"
                )
        if self.against is not None and self.against == self.variant:
            raise DefinitionError(self._against_itself(self.variant))
        check, verdict = self._check_and_verdict()
        if self.elements is not None and self.region is not None:
            raise DefinitionError("weanj.Expected: give elements or a region, not both")
        if self.bound is not None:
            if check is not None:
                raise DefinitionError("weanj.Expected: a bound is a pair's (max|Δ|/max|g_ref|)")
            if isinstance(self.bound, bool) or not isinstance(self.bound, (int, float)):
                raise DefinitionError(f"weanj.Expected: bound must be a number, got {self.bound!r}")
            if not np.isfinite(self.bound) or self.bound <= 0:
                raise DefinitionError(f"weanj.Expected: bound must be positive, got {self.bound}")
        region = self.region
        if region is not None and not isinstance(region, tuple):
            region = (region,)
        if region is not None and not all(_box_part(s) for s in region):
            raise DefinitionError(
                f"weanj.Expected: region is a box of slices and indices, integers only, e.g. "
                f"numpy.s_[2:5, :], got {self.region!r} ({self.declared_at})"
            )
        elements = self.elements
        if elements is not None and not callable(elements):
            if isinstance(elements, (str, bytes, Mapping)) or not isinstance(elements, Iterable):
                raise DefinitionError(
                    f"weanj.Expected: elements must be a list of indices or a function of the "
                    f"inputs, got {elements!r} ({self.declared_at})"
                )
            try:
                elements = tuple(_index(i) for i in elements)
            except DefinitionError as e:
                raise DefinitionError(f"{e} ({self.declared_at})") from None
        object.__setattr__(self, "check", check)
        object.__setattr__(self, "verdict", verdict)
        object.__setattr__(self, "region", region)
        object.__setattr__(self, "elements", elements)

    def _check_and_verdict(self) -> tuple[CaseKind | None, Verdict]:
        """The declared check (a run's where a verdict other than FAIL names none) and
        verdict, as their types, each checked against the other and against what the
        declaration says of a pair (`against`, `elements`, `region`, `bound`)."""
        if not isinstance(self.verdict, str) or self.verdict not in DECLARABLE:
            raise DefinitionError(
                f"weanj.Expected: verdict {self.verdict!r} is not one of {', '.join(DECLARABLE)}"
            )
        verdict = Verdict.parse(self.verdict)
        check = self.check
        if check is None and verdict != Verdict.FAIL:
            check = CaseKind.RUN  # a variant at fault shows in its run
        if check is not None and (not isinstance(check, str) or check not in DECLARABLE_KINDS):
            raise DefinitionError(
                f"weanj.Expected: check {check!r} is not one of {', '.join(DECLARABLE_KINDS)}"
            )
        check = None if check is None else CaseKind(check)
        if check is not None and self.against is not None:
            raise DefinitionError(
                "weanj.Expected: a check is the variant's own; it has no `against`"
            )
        if check == CaseKind.RUN and verdict == Verdict.FAIL:
            raise DefinitionError(
                f"weanj.Expected: a run does not {Verdict.FAIL}; expect verdict "
                f"{Verdict.ERROR.value!r} or {Verdict.NONFINITE.value!r}"
            )
        if check == CaseKind.RUN and (self.elements, self.region, self.bound) != (None, None, None):
            raise DefinitionError(
                "weanj.Expected: a run has no elements, region or bound (those are a pair's)"
            )
        return check, verdict

    def __repr__(self) -> str:
        return f"Expected({self.what()!r}, reason={self.reason!r})"

    def named(self) -> str:
        """The declaration in messages: what it names and where it was declared."""
        where = f", declared at {self.declared_at}" if self.declared_at else ""
        return f"weanj.Expected({self.what()}{where})"

    def _against_itself(self, variant: str | None) -> str:
        return (
            f"weanj.Expected: against={variant!r} names the variant itself; a pair is two "
            f"variants (leave against out for its whole family) ({self.declared_at})"
        )

    # --- what it names ----------------------------------------------------------------

    def on(self, variant: str) -> Expected:
        """This declaration given on `variant` (`expected=` of a variant constructor)."""
        if self.variant not in (None, variant):
            raise DefinitionError(
                f"variant {variant}: its expected= names variant {self.variant!r}; on a variant, "
                "leave variant out (or name the other side with against=)"
            )
        if self.against == variant:
            raise DefinitionError(self._against_itself(variant))
        return self if self.variant == variant else _replace(self, variant=variant)

    def concerns_pair(self, a: str, b: str) -> bool:
        """Whether it declares the pair of variants `a` and `b` (of one family)."""
        if self.check is not None or a == b or self.variant not in (a, b):
            return False
        other = b if self.variant == a else a
        return self.against is None or self.against == other

    def concerns_check(self, kind: str, variant: str) -> bool:
        return self.check == kind and self.variant == variant

    def mask(self, array: str, arrays: Mapping[str, np.ndarray], shape: tuple) -> np.ndarray | None:
        """The declared elements of `array` as booleans shaped `shape` (None: the whole
        array; an empty mask: not expected to differ on these inputs). A region or elements
        that do not fit the array (its rank, its extent), or an `elements` function that
        raises or returns no indices, are a `DefinitionError` naming the declaration."""
        if self.array is not None and self.array != array:
            return np.zeros(shape, bool)
        if self.elements is None and self.region is None:
            return None
        out = np.zeros(shape, bool)
        of = f"{array}, of shape {tuple(shape)} ({len(shape)}-d)"
        if self.region is not None:
            text = ", ".join(_slice_text(s) for s in self.region)
            try:
                out[self.region] = True
            except (IndexError, TypeError, ValueError):
                raise DefinitionError(
                    f"{self.named()}: its region [{text}] does not fit {of}"
                ) from None
            past = _past_the_end(self.region, tuple(shape))  # numpy clips a slice silently
            if past is not None:
                raise DefinitionError(f"{self.named()}: its region [{text}] {past} {of}")
            return out
        for i in self._found(arrays):
            try:
                out[i] = True
            except IndexError:
                raise DefinitionError(f"{self.named()}: element {i!r} is outside {of}") from None
        return out

    def _found(self, arrays: Mapping[str, np.ndarray]) -> tuple[tuple[int, ...], ...]:
        """The declared elements as index tuples (the `elements` function called on
        `arrays`), or a `DefinitionError` naming the declaration."""
        if not callable(self.elements):
            return self.elements
        function = getattr(self.elements, "__name__", "elements")
        try:
            found = self.elements(arrays)
        except Exception as e:  # the project's function: its failure is one line here
            first = str(e).splitlines()[0] if str(e) else ""
            raise DefinitionError(
                f"{self.named()}: its elements function {function} raised "
                f"{type(e).__name__}{': ' + first if first else ''}"
            ) from None
        if found is None or isinstance(found, (str, bytes)) or not isinstance(found, Iterable):
            raise DefinitionError(
                f"{self.named()}: its elements function {function} returned {found!r}, not a "
                "list of indices (return [] where nothing is expected to differ)"
            )
        try:
            return tuple(_index(i) for i in found)
        except DefinitionError as e:
            why = str(e).removeprefix("weanj.Expected: ")
            raise DefinitionError(f"{self.named()}: {why}") from None

    def validate(self, arrays: Mapping[str, np.ndarray], wrt: Sequence[str]) -> None:
        """Hold the declaration to the inputs once they are known (before anything runs):
        its region or elements must fit each gradient array it may concern (a gradient has
        its array's shape). A `DefinitionError` naming the declaration otherwise."""
        for array in (self.array,) if self.array is not None else tuple(wrt):
            if array in arrays:
                self.mask(array, arrays, np.shape(arrays[array]))

    def where(self, arrays: Mapping[str, np.ndarray] | None = None, array: str = "") -> str:
        """The declared place in words: `x`, `x[0]`, `w[5], w[6]`, `x[2:5, :]` (`array`:
        the one judged, where the declaration names none)."""
        array = self.array or array or "any array"
        if self.region is not None:
            return f"{array}[{', '.join(_slice_text(s) for s in self.region)}]"
        if self.elements is None:
            return array
        found = self.elements
        if callable(found):
            if arrays is None:
                return f"{array} (elements chosen from the inputs)"
            found = self._found(arrays)
        if not found:
            return f"no element of {array}"
        return ", ".join(f"{array}[{', '.join(str(k) for k in i)}]" for i in found)

    def what(self) -> str:
        """Which cases: `jax-a vs its family`, `jax-a~jax-b`, `jax-a::taylor`."""
        if self.check is not None:
            return f"{self.variant}::{self.check}"
        if self.against is not None:
            return f"{self.variant} vs {self.against}"
        return f"{self.variant} vs its family"

    def to_json(self, arrays: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "against": self.against,
            "check": self.check,
            "verdict": self.verdict,
            "reason": self.reason,
            "array": self.array,
            "where": self.where(arrays),
            "bound": self.bound,
        }


def _index(i: Any) -> tuple[int, ...]:
    if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
        return (int(i),)
    try:
        if isinstance(i, (str, bytes, Mapping, set, frozenset)):  # no order: no index
            raise TypeError
        return tuple(operator.index(k) for k in i)
    except TypeError:
        raise DefinitionError(
            f"weanj.Expected: element {i!r} is not an index (an int or a tuple of ints)"
        ) from None


def _bound(x: Any) -> bool:
    return x is None or (isinstance(x, (int, np.integer)) and not isinstance(x, bool))


def _box_part(s: Any) -> bool:
    """One part of a region: an integer index, or a slice whose bounds are integers."""
    if isinstance(s, slice):
        return _bound(s.start) and _bound(s.stop) and _bound(s.step)
    return _bound(s) and s is not None


# weanj's own code, whose frames are not where a declaration was made (its examples are)
_WEANJ = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_EXAMPLES = os.path.join(_WEANJ, "examples")


def _declared_at() -> str:
    """`file:line` of the project's code that made the declaration: the first frame
    outside weanj (its examples count as a project's) and dataclasses' `__init__`."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        ours = name.startswith(_WEANJ + os.sep) and not name.startswith(_EXAMPLES + os.sep)
        generated = name == "<string>" and frame.f_code.co_name == "__init__"
        if not ours and not generated:
            try:
                shown = os.path.relpath(name)
            except ValueError:  # another drive (Windows)
                shown = name
            return f"{name if shown.startswith('..') else shown}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def _past_the_end(region: tuple, shape: tuple) -> str | None:
    """Where a region reaches past its array (a slice bound beyond the extent of its axis,
    which numpy would clip), or None."""
    for axis, (part, n) in enumerate(zip(region, shape, strict=False)):
        if isinstance(part, slice):
            for bound in (part.start, part.stop):
                if bound is not None and not -n <= bound <= n:
                    return f"reaches {bound} on axis {axis}, past the end of"
            if part.start is not None and not -n <= part.start < n:
                return f"starts at {part.start} on axis {axis}, the end of"
    return None


def _slice_text(s: Any) -> str:
    if isinstance(s, int):
        return str(s)
    lo = "" if s.start is None else str(s.start)
    hi = "" if s.stop is None else str(s.stop)
    return f"{lo}:{hi}" if s.step is None else f"{lo}:{hi}:{s.step}"


def _replace(e: Expected, **changes: Any) -> Expected:
    import dataclasses

    fields = {f.name: getattr(e, f.name) for f in dataclasses.fields(e) if f.init}
    fields.update(changes)
    made = Expected(**fields)
    object.__setattr__(made, "declared_at", e.declared_at)  # where the project declared it
    return made


def as_declarations(value: Any, where: str) -> tuple[Expected, ...]:
    """`expected=` as a tuple of declarations (one, several, or None)."""
    if value is None:
        return ()
    found = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if not all(isinstance(e, Expected) for e in found):
        raise DefinitionError(f"{where}: expected= takes weanj.Expected declarations")
    return found
