"""The device dimension of the case table (docs/DESIGN.md §8.1; docs/devices.md).

Under `--device tpu` (or `gpu`; `[tool.weanj] devices`), each live variant's subject at each
dtype gets a device twin, `V@tpu` / `V@float32@tpu`, evaluated on that device
(`_on_device`). A device run is judged against its family's **CPU float64 reference**
(the Julia reference where it ran, else the family's next CPU member), once per gradient
array: `EX::FAMILY::REF~V@tpu[::ARRAY]`, by the same judge rule and the same
`weanj.Expected` declarations as any pair, its floors from the rounding level measured on
the device at the matmul precision in effect. A device run has no gradient checks of its
own (those are the CPU float64 run's) and no pairs with other members.

**Precision or bug**: a device pair that fails is re-run once at matmul precision
`highest` (`V@float32@tpu@highest`, not a subject) and judged against the same reference;
the judge's line (`_judge._platform.precision_or_bug`) joins the pair's reason.

A variant whose functions run on the CPU only (Julia, plain Python) has no device run:
one note per example says so, never a failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from ..._judge._contract import Fault
from ..._judge._information import DeviceComparison
from ..._judge._platform import precision_or_bug as precision_line
from ..._judge._verdict import CaseJudgement
from ..._model import DeviceProvenance, Gradient
from ..._model._verdicts import Verdict
from ..evaluation._on_device import CPU, CPU_ONLY, HIGHEST, device_label
from ..session._pair_rule import judge_pair_of


def on_devices(variant: Any) -> bool:
    """Whether a variant has device runs: its functions carry a placement (a JAX
    program's, `Functions.placed`), known once built; before that, a variant its backend
    configures for JAX (`Variant.configure`), whose functions carry one. A Julia or plain
    Python variant runs on the CPU only: the CPU reference, never a device row."""
    return variant.placement is not None or variant.configure is not None


def add_device_subjects(p: Any) -> None:
    """A device twin of every live CPU subject of a registered variant that has device
    runs (`on_devices`), per device."""
    cpu = [
        s
        for s in p.subjects.values()
        if s.device == CPU and s.variant is not None and s.live and on_devices(s.variant)
    ]
    for device in p.devices:
        if device == CPU:
            continue
        for s in cpu:
            label = device_label(s.label, device)
            p.subjects[label] = dataclasses.replace(s, label=label, device=device)


def add_device_pairs(p: Any, pair_cases: Callable, reference: Callable) -> None:
    """Each device subject against its family's CPU float64 reference."""
    cpu: dict[str, list] = {}
    for s in p.subjects.values():
        if s.device == CPU:
            cpu.setdefault(s.family, []).append(s)
    for s in list(p.subjects.values()):
        if s.device == CPU:
            continue
        ref = reference(cpu.get(s.family, []))
        if ref is not None:
            p.cases.extend(pair_cases(p, s.family, ref, s))


@contextlib.contextmanager
def judged_on(variant: Any, device: str):
    """A pair judged with its run's device as JAX's default device, so that a declaration
    that depends on where the port ran (`weanj.Expected(elements=...)` asking the platform:
    06-signed-grid's `xla_fuses_here`) sees the evaluation's device, not JAX's default."""
    placed = None if variant is None else variant.placement  # built by its evaluation
    if placed is None:
        yield
        return
    try:
        context = placed(device)
        context.__enter__()
    except Exception:  # an absent device: its runs are unavailable, nothing to judge there
        yield
        return
    try:
        yield
    finally:
        context.__exit__(None, None, None)


def cpu_only(s: Any, found: Any) -> bool:
    """A device subject of functions that run on the CPU only (said once, no row)."""
    return s.device != CPU and isinstance(found, Fault) and found.what == CPU_ONLY


def precision_or_bug(
    p: Any, case: Any, j: CaseJudgement, other: Any, session: Any
) -> CaseJudgement:
    """A device pair's judgement, with the device and the precision in effect named
    (`CaseJudgement.device`) and, where it fails, what its re-run at precision=highest
    says (the reason's last clause)."""
    s = p.subjects.get(case.subjects[1])
    if s is None or s.device == CPU or not isinstance(other, Gradient):
        return j
    run = other.device or DeviceProvenance(s.device, "", "default", False)  # as described
    precision, standin = run.precision, run.standin
    j.device = DeviceComparison(s.device, run.description, precision, standin)
    if not j.verdict.failing or j.verdict == Verdict.NONFINITE:
        return j
    highest = None
    if not run.precision_reduced:
        why = f"the matmul precision applies to 32-bit products, not to {s.dtype} ones"
        line = precision_line(s.device, precision, None, why, standin=standin)
    else:
        again = session.outcome(s.variant, p.inputs, s.dtype, s.device, HIGHEST)
        if isinstance(again, Fault):
            why = f"its re-run at precision=highest: {again.what}"
            line = precision_line(s.device, precision, None, why, standin=standin)
        else:
            ref = session_outcome_of(p, case.subjects[0], session)
            k = judge_pair_of(p.catalog, p.inputs, case.id, ref, again, case.array, session)
            agrees = not k.verdict.failing
            line = precision_line(s.device, precision, agrees, standin=standin)
            highest = str(k.verdict)
    device = dataclasses.replace(j.device, highest=highest, precision_or_bug=line)
    reason = f"{j.reason}; {line}" if j.reason else line
    return dataclasses.replace(j, reason=reason, device=device)


def session_outcome_of(p: Any, label: str, session: Any) -> Any:
    s = p.subjects[label]
    if s.gradient is not None:
        return s.gradient
    return session.outcome(s.variant, p.inputs, s.dtype, s.device)


def device_notes(p: Any, result: Any, session: Any) -> list[str]:
    """What an example with device runs says once: where they ran (the device kind, its
    software, the matmul precision in effect per dtype), what they are judged against,
    and which variants have no device run (the CPU reference)."""
    if p.devices == (CPU,):
        return []
    out = []
    no_run = sorted(
        {
            s.variant.name
            for s in p.subjects.values()
            if s.variant is not None
            and s.live
            and (
                (s.device == CPU and not on_devices(s.variant))
                or (
                    s.device != CPU
                    and s.skip is None
                    and cpu_only(s, session_outcome_of(p, s.label, session))
                )
            )
        }
    )
    for device in p.devices:
        if device == CPU:
            continue
        here = {label for label, s in p.subjects.items() if s.device == device}
        runs = [g for label, g in result.subjects.items() if label in here]
        if not runs:
            continue
        g = runs[0]
        where = g.device.description if g.device is not None else device
        software = g.device.software if g.device is not None else None
        out.append(
            f"  on {device}: {where}{f' ({software})' if software else ''}; each run judged "
            "against its family's CPU float64 reference"
        )
        precisions: dict[str, list[str]] = {}
        for run in runs:
            precision = run.device.precision if run.device is not None else "default"
            precisions.setdefault(precision, []).append(run.label)
        for name, labels in precisions.items():
            out.append(f"    matmul precision {name}: {', '.join(labels)}")
    if no_run:
        out.append(
            f"  no device run for {', '.join(no_run)}: not a JAX program, it runs on the CPU "
            "only (the CPU reference)"
        )
    return out
