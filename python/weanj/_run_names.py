"""The names every view gives a run, read back at the front door: `weanj bisect`, `weanj
fuzz --pairs` and `weanj diff` take `V`, `V@float32`, `V@tpu` and `V@float32@tpu` (the
variant in that dtype, on that device), so that whatever a view prints can be followed.

**A pair of names** (`bisect EX A B`, `fuzz --pairs A B`): a run runs where its name says,
B on `--device` where its name names no device, A (the reference side) on the CPU. Where
neither name gives a dtype, both sides run in `--dtype` (default float64): `A B --dtype
float32` compares the two ports in float32. Where one does, the names are read as the
views print them, a bare name being the float64 run: `V V@float32` is the pair `weanj
check` judges in float32 (a variant's float32 run against its own float64 run); a
`--dtype` that contradicts a name's own dtype (`A@float64 B --dtype float32`) is refused in
one line, never dropped. Either way the one judge decides under the coarser dtype's
tolerance.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._errors import InputError
from ._model import DTYPES, Catalog, Variant, VariantRun
from ._registry import registered_variant, variant
from ._vocabulary import DEVICES


def parse_run(
    cat: Catalog, name: str, *, available: bool = True
) -> tuple[Variant, str | None, str | None]:
    """The variant a run's name names, and the dtype and the device its `@` suffixes name
    (None where it names none). An unknown variant is one line with the likeliest name;
    with `available`, a variant that cannot run here is one line saying why."""
    look_up = variant if available else registered_variant
    base, words = str(name), []
    while "@" in base and cat.find(base) is None:  # a variant's own name may hold an "@"
        base, _, word = base.rpartition("@")
        words.insert(0, word)
    if cat.find(base) is None:
        look_up(cat.example, name)  # raises: unknown variant, with the likeliest meaning
    dtype = device = None
    for word in words:
        if word in DTYPES and dtype is None:
            dtype = word
        elif word in DEVICES and device is None:
            device = word
        else:
            raise InputError(
                f"{name}: @{word} is not a dtype ({', '.join(DTYPES)}) or a device "
                f"({', '.join(DEVICES)}) of a run, or names one twice; a run is named "
                f"as the views name it: {base}, {base}@float32, {base}@tpu, {base}@float32@tpu"
            )
    return look_up(cat.example, base), dtype, device


def same_family_pair(
    cat: Catalog, a: str, b: str, what: str, *, dtype: str | None = None, device: str = "cpu"
) -> tuple[VariantRun, VariantRun]:
    """Two runs of available variants of one family (what `bisect` and `fuzz --pairs`
    compare, read as the module docstring says), or an `InputError` naming `what` asked:
    two families (other algorithms, expected to differ), a dtype a variant does not
    declare, a `dtype` given (`--dtype`) that a name's own contradicts, a device named
    twice differently, or the same run twice. `dtype` None: float64 where no name gives
    one."""
    (va, da, xa), (vb, db, xb) = parse_run(cat, a), parse_run(cat, b)
    against = [name for name, d in ((a, da), (b, db)) if None not in (d, dtype) and d != dtype]
    if against:  # the flag would be dropped without a word: refused
        bare = next((n for n, d in ((a, da), (b, db)) if d is None), None)
        said = f"; name each run's dtype ({bare}@{dtype})" if bare else ""
        raise InputError(
            f"{what} {a} {b}: --dtype {dtype} contradicts {against[0]} (a bare name beside "
            f"it runs in float64){said} or leave --dtype out"
        )
    dtype = dtype or "float64"
    if va.family != vb.family:
        raise InputError(
            f"{what} {a} {b}: {a} ({va.family}) and {b} ({vb.family}) are of different families "
            f"(other algorithms, expected to differ); {what} compares members of one family"
        )
    if device not in DEVICES:
        raise InputError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if xb is not None and device not in ("cpu", xb):
        raise InputError(f"{what} {a} {b}: {b} runs on {xb}, but --device says {device}")
    if da is None and db is None:
        da = db = dtype
    try:
        runs = (
            VariantRun(va, da or "float64", xa or "cpu"),
            VariantRun(vb, db or "float64", xb or device),
        )
    except InputError as e:
        raise InputError(f"{what} {a} {b}: {e}") from None
    if runs[0].label == runs[1].label:
        raise InputError(
            f"{what} needs two different variants or runs of one variant, got {runs[0].label} "
            f"twice (a run is not compared with itself; {va.name} {va.name}@float32 compares "
            "its float32 run with its float64 run)"
        )
    return runs


def chosen_pairs(
    cat: Catalog,
    pairs: Iterable[tuple[str, str]],
    what: str,
    *,
    dtype: str | None = None,
    device: str = "cpu",
) -> list[tuple[VariantRun, VariantRun]]:
    """The pairs named (`fuzz --pairs`), each read as `same_family_pair` reads one; a pair
    of runs named twice is taken once."""
    out: dict[tuple[str, str], tuple[VariantRun, VariantRun]] = {}
    for a, b in pairs:
        found = same_family_pair(cat, a, b, what, dtype=dtype, device=device)
        out.setdefault((found[0].label, found[1].label), found)
    return list(out.values())


def stored_labels(cat: Catalog, names: Iterable[str], stored: Iterable[str]) -> list[str]:
    """The labels of the runs named for `weanj diff EX RUN...`, each one the store holds
    (`stored`: the labels of its files, recorded references and users' files among them,
    taken as they are). A registered variant's run is named as the views name it, whether
    or not it can run here; a device run, or a run with no file, is one line saying what
    holds it instead."""
    stored = set(stored)
    out = []
    for name in names:
        if name in stored:
            out.append(name)
            continue
        v, dtype, device = parse_run(cat, name, available=False)
        if device not in (None, "cpu"):
            raise InputError(
                f"diff {cat.name} {name}: the store holds CPU runs only; a run on {device} is "
                f"judged by `weanj check {cat.name} --device {device}` (its verdicts: `weanj "
                f"report {cat.name}`)"
            )
        try:
            label = VariantRun(v, dtype or "float64").label
        except InputError as e:
            raise InputError(f"diff {cat.name} {name}: {e}") from None
        if label not in stored:
            flag = f" --dtype {dtype}" if dtype and dtype != "float64" else ""
            raise InputError(
                f"diff {cat.name}: no stored run {label} in the store; compute it with "
                f"`weanj run {cat.name} {v.name}{flag}` or `weanj check {cat.name}`"
            )
        out.append(label)
    return list(dict.fromkeys(out))
