"""The words weanj's options, files and views share, each declared once and derived
everywhere: the dtypes under test and the device kinds a run is placed on. The verdicts
and the kinds of case are `_model/_verdicts.py`'s (`Verdict`, `CaseKind`)."""

DTYPES = ("float64", "float32")  # the dtypes under test, float64 (the reference) first
CHECK_DTYPES = (*DTYPES, "both")  # what `weanj check --dtype` and `weanj.check(dtype=)` take
DEVICES = ("cpu", "gpu", "tpu")  # the device kinds a run is placed on
ACCELERATORS = ("tpu", "gpu")  # the devices other than the CPU, in the order weanj looks


def listed(words: tuple[str, ...]) -> str:
    """`cpu, gpu or tpu`: the words as a sentence says them."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
