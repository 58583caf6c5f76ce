"""Platform limits: a program the device cannot run is not the port's fault
(docs/DESIGN.md §8, "unavailable on <device>").

XLA refuses some programs on some platforms: a TPU all-reduces only sums in float64 (a
`pmax` of a float64 scalar is `UNIMPLEMENTED` there), some ops have no lowering for some
dtypes. The port is right; the device cannot run it. Such a run is `unavailable on tpu:
<the op and dtype>` (never `error`), a failure only where the user requires that device
(`--require tpu`). Which errors count is this one table, each entry a pattern of the error
text and the one line it becomes; an error no entry matches stays the port's `error`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .._vocabulary import ACCELERATORS


@dataclass(frozen=True)
class PlatformLimit:
    """One row: `pattern` (a regular expression searched in the error's text, DOTALL) and
    `line(match, kind)` the one line that says what the device cannot do."""

    pattern: str
    line: Callable[[re.Match, str], str]
    why: str  # what the limit is, for docs/devices.md and the tests


def _all_reduce(m: re.Match, kind: str) -> str:
    op, dtype = m.group("op"), m.group("dtype")
    return f"{op} of {dtype} (the {kind.upper()} all-reduces only sums in {_dtype_word(dtype)})"


def _unsupported(m: re.Match, kind: str) -> str:
    return f"{m.group('what').strip()[:120]} (not supported on {kind.upper()})"


def _dtype_word(dtype: str) -> str:
    return {"f64": "float64", "f32": "float32", "c128": "complex128"}.get(dtype, dtype)


PLATFORM_LIMITS: tuple[PlatformLimit, ...] = (
    # the TPU's text (jax 0.10.2, libtpu 0.0.42.1): "UNIMPLEMENTED: Supported lowering only
    # of Sum all reduce, original computation: %region_1.2 (pmax.2: f64[], pmax.3: f64[]) ..."
    PlatformLimit(
        r"UNIMPLEMENTED: Supported lowering only of Sum all reduce.*?\((?P<op>p\w+)\.\d+: "
        r"(?P<dtype>[a-z]+\d*)\[",
        _all_reduce,
        "an all-reduce other than a sum (pmax, pmin) of a float64 value",
    ),
    PlatformLimit(
        r"UNIMPLEMENTED: Supported lowering only of Sum all reduce",
        lambda m, kind: f"an all-reduce other than a sum (the {kind.upper()} lowers only sums)",
        "an all-reduce other than a sum, its op not named",
    ),
    PlatformLimit(
        r"UNIMPLEMENTED: (?P<what>[^\n]*?(?:not (?:yet )?(?:implemented|supported)|"
        r"[Uu]nsupported)[^\n]*)",
        _unsupported,
        "an op or dtype XLA has no lowering for on this platform",
    ),
)


def platform_limit(text: str, kind: str) -> str | None:
    """The one line of a platform limit the error `text` shows on a device of `kind`
    (`tpu`, `gpu`), or None: an error of the port. On the CPU nothing is a platform limit
    (the CPU is the reference)."""
    if kind == "cpu":
        return None
    for limit in PLATFORM_LIMITS:
        m = re.search(limit.pattern, text, re.DOTALL)
        if m is not None:
            return limit.line(m, kind)
    return None


def past_the_limit(kind: str, text: str) -> str | None:
    """The one line of a run on a device of `kind` that did not finish within the time
    limit (`text`, the `TimeoutError`'s), or None on the CPU, where it is the port's
    `timeout`. On an accelerator a program can be far slower than on the CPU for reasons
    that are the platform's (float64 emulated on a TPU; a sequential recurrence lowered as
    thousands of tiny steps): the device cannot run it in the time given, like an op it
    has no lowering for; `--require tpu` makes it a failure."""
    if kind == "cpu":
        return None
    found = re.search(r"time limit of (?P<s>[0-9.e+]+) s", text)
    limit = f"the time limit of {found.group('s')} s" if found else "the time limit"
    return (
        f"did not finish within {limit} on the {kind.upper()} (--timeout S or "
        "[tool.weanj] timeout gives it longer)"
    )


def unavailable_on(kind: str, what: str, *, standin: bool = False) -> str:
    """`unavailable on tpu: pmax of f64 (...)` (`tpu (stand-in)` for the stand-in)."""
    return f"unavailable on {kind}{' (stand-in)' if standin else ''}: {what}"


# --- precision or bug: what a failing device pair's re-run at precision=highest says --------


def precision_or_bug(
    kind: str, precision: str, highest_agrees: bool | None, why: str = "", *, standin: bool = False
) -> str:
    """The line a failing device pair gets, from its run re-judged at matmul precision
    `highest` (`highest_agrees`; None: no re-run, `why` says why). `precision`: the one in
    effect."""
    device = kind.upper() if kind in ACCELERATORS else kind
    device = f"stand-in {device}" if standin else device
    if highest_agrees is None:
        return f"not the device's matmul precision: {why}"
    if highest_agrees:
        return (
            f"agrees under precision=highest: the difference is the {device}'s default matmul "
            f"precision ({precision}; set jax_default_matmul_precision or declare it)"
        )
    return "still differs under precision=highest: not the device's arithmetic"
