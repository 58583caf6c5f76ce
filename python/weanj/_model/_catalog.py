"""A catalog: an example with everything registered for it, as one object.

The front ends (command line, pytest plugin, Python API) look names up in the registry
once and hand a `Catalog` down: the example, its variants in registration order, the
pairs declared to differ at kinks and the fuzz strategies. Nothing below the front ends
looks a name up again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ._example import Example
from ._expected import Expected
from ._variant import Variant


@dataclass(frozen=True)
class Catalog:
    """One example and what is registered for it."""

    example: Example
    variants: tuple[Variant, ...]
    kinks: Mapping[frozenset, str] = field(default_factory=dict)  # {{a, b}: why}
    strategies: tuple[Callable, ...] = ()
    expectations: tuple[Expected, ...] = ()  # the example's and its variants' `expected=`
    # registered variants left out of this run (`--variants`): their files are not judged
    left_out: frozenset = frozenset()

    def __repr__(self) -> str:
        names = ", ".join(v.name for v in self.variants)
        return f"Catalog({self.example.name!r}, variants=({names}))"

    @property
    def name(self) -> str:
        return self.example.name

    def families(self) -> dict[str, list[Variant]]:
        """`{family: [variants]}` in registration order."""
        out: dict[str, list[Variant]] = {}
        for v in self.variants:
            out.setdefault(v.family, []).append(v)
        return out

    def find(self, name: str) -> Variant | None:
        """The registered variant of that name, or None."""
        return next((v for v in self.variants if v.name == name), None)

    def kink_difference(self, a: Variant | None, b: Variant | None) -> str | None:
        """Why `a` and `b` may differ at the kinks (declared with `weanj.differ_at_kinks`)."""
        if a is None or b is None or a is b:
            return None
        return self.kinks.get(frozenset((a.name, b.name)))

    def declared_pair(self, a: Variant | None, b: Variant | None) -> tuple[Expected, ...]:
        """The declarations of the pair of `a` and `b` (`weanj.Expected`)."""
        if a is None or b is None:
            return ()
        return tuple(e for e in self.expectations if e.concerns_pair(a.name, b.name))

    def declared_check(self, kind: str, v: Variant | None) -> tuple[Expected, ...]:
        """The declarations of `v`'s run or gradient check of `kind`."""
        if v is None:
            return ()
        return tuple(e for e in self.expectations if e.concerns_check(kind, v.name))

    def unavailable(self) -> dict[str, str]:
        """`{variant name: why it cannot run here}`."""
        reasons = {v.name: v.unavailable_reason() for v in self.variants}
        return {name: why for name, why in reasons.items() if why is not None}
