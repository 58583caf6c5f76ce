"""A session: one command's run of variants.

Everything weanj computes by calling a user's code goes through a `Session`: the
evaluations (loss and gradient, `_evaluate`), the losses along the Taylor test's
directions, the forward-mode derivatives of the jvp check, and the example's kink masks.
Each runs under the session's `Watch` (a heartbeat on stderr and the time limit), and
each is computed once per session and kept by it (not by a module): a command, a notebook
call or a pytest session makes its own, and nothing outlives it.

The judge (`_judge`) then decides from these numbers alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..._check_options import DEFAULTS, CheckOptions
from ..._errors import say
from ..._judge._contract import Fault
from ..._judge._directions import checked_masks, second_direction
from ..._judge._events import EvaluationFinished, EvaluationStarted
from ..._judge._jvp import jvp_direction
from ..._model import Example, Gradient, Inputs, Variant
from ..._model._beyond import order_of
from ..._model._cost import Cost
from ..._watch import Watch
from ..evaluation._beyond import second_order_asked
from ..evaluation._calls import for_checks, forward_refusal
from ..evaluation._evaluate import evaluate
from ..evaluation._levels import measure_levels
from ..evaluation._on_device import label_of
from ._runs import push


class Session:
    """One run of variants (module docstring).

    **Arguments:**

    - `timeout_s`: the time limit of each call (None: none), verdict `timeout`.
    - `say`: where progress lines go (stderr by default).
    - `emit`: where the session's events go (`_judge._events`: an evaluation started,
      and finished with its outcome, `reused` where from an evaluation record).
    - `shown_path`: how a path is written in a reproducing command.
    - `records`: where evaluations are kept between runs and reused (`_records`), or None.
    - `checking`: gradient checks will run (a plan judged has them, `_cases.judge_case`; a
      worker's float64 evaluations): a variant's float64 CPU runs then call what its
      backend has for a check's runs (`_calls.for_checks`: a JAX variant's one program).
    - `family_here`: the session may evaluate a variant's family to choose the lender of
      a forward mode (`_donors`); a Dask worker's, whose tasks are one evaluation each,
      may not: such a jvp check is left to the client, which has the family's runs.
    - `options`: the check's options (`_check_options.CheckOptions`) its checks read:
      `fd`, central differences beside every gradient check (`weanj check --fd`), not only
      beside one that is not ok; `order`, 2 (`--order 2`) computes every checked variant's
      Hessian-vector products, as an example declaring `order=2` asks (docs/outputs.md).
    """

    def __init__(
        self,
        *,
        timeout_s: float | None = None,
        say: Callable[[str], None] = say,
        emit: Callable[[Any], None] | None = None,
        shown_path: Callable[[Any], str] = str,
        records: Any = None,
        checking: bool = False,
        family_here: bool = True,
        options: CheckOptions = DEFAULTS,
    ):
        self.watch = Watch(timeout_s=timeout_s, say=say)
        self.options = options  # what the check asks: its `fd`, its `order` (`_check_options`)
        self.timeout_s = timeout_s  # the limit asked for (each call's, the watch's)
        self.say = say
        self.emit = emit
        self.shown_path = shown_path
        self.records = records
        self.checking = checking
        self.family_here = family_here
        self._outcomes: dict[tuple, Gradient | Fault] = {}
        self._how: dict[int, tuple[Inputs, str, str | None]] = {}  # id(g): how it was run
        self._masks: dict[tuple, dict[str, np.ndarray]] = {}
        self._tangents: dict[tuple, dict[str, np.ndarray]] = {}
        self._forward: dict[tuple, dict[str, float] | Exception] = {}
        self._shared: dict[tuple, Any] = {}  # a check shared by a run's arrays (`checks/`)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Say which timed-out calls still run in the background (Python cannot stop them)."""
        if self.watch.abandoned:
            self.say(
                f"note: {len(self.watch.abandoned)} call(s) that timed out still run in the "
                "background: " + ", ".join(self.watch.abandoned)
            )
            self.watch.abandoned.clear()

    # --- progress ---------------------------------------------------------------------------

    def phase(self, text: str):
        """A context in which the heartbeat names `text` (`_watch.Watch.phase`): each
        gradient check, each pair judged."""
        return self.watch.phase(text)

    def step(self, text: str) -> None:
        """Where the current phase is (`direction 1 of 2, step 3 of at most 40`)."""
        self.watch.step(text)

    # --- evaluations -------------------------------------------------------------------------

    def outcome(
        self,
        variant: Variant,
        inputs: Inputs,
        dtype: str,
        device: str = "cpu",
        precision: str | None = None,
    ) -> Gradient | Fault:
        """The variant's evaluation on `inputs` in `dtype` (once per session), or its fault;
        on `device` with matmul `precision` (`_on_device`). A device run is reused from
        and kept in the evaluation records as a CPU run is, keyed by the device too; the
        precision-or-bug re-run (`precision`) is neither."""
        key = (id(variant), inputs.key(dtype), device, precision)
        if key not in self._outcomes:
            t0 = time.perf_counter()
            label = label_of(variant, dtype, device, precision)
            records = self.records if precision is None else None
            found = records.recall(variant, inputs, dtype, device=device) if records else None
            checked = self.checking and (dtype, device, precision) == ("float64", "cpu", None)
            second = self._second(variant, inputs) if checked else None
            if second is not None and second_order_asked(found, 2):
                records.not_reused(variant, dtype, "recomputed: its second order was asked")
                found = None
            reused = found is not None
            if found is None:
                self._tell(precision, EvaluationStarted(variant.example.name, label))
                tangents = self._jvp_tangents(variant, inputs) if checked else None
                found = evaluate(
                    variant,
                    inputs,
                    dtype,
                    self.watch,
                    shown_path=self.shown_path,
                    device=device,
                    precision=precision,
                    checking=self.checking,
                    levels=False,  # measured where a comparison needs them (`levels`)
                    tangents=tangents,
                    second=second,
                )
                if isinstance(found, Gradient) and tangents is not None:
                    self._pushed(variant, inputs, tangents, found)
                if records is not None:
                    records.keep(variant, inputs, dtype, found, device=device)
            self._outcomes[key] = found
            self._how[id(found)] = (inputs, device, precision)
            seconds = time.perf_counter() - t0
            if precision is not None:  # a re-run the judge asked for: no evaluation to count
                self.say(f"  {variant.example.name} {label}: {seconds:.1f} s (precision or bug)")
                self.watch.heard()
            else:
                how = "reused" if reused else f"{seconds:.1f} s"
                self._tell(precision, EvaluationFinished(variant.example.name, label, found, how))
        return self._outcomes[key]

    def _pushed(self, variant: Variant, inputs: Inputs, tangents: dict, g: Gradient) -> None:
        """What the jvp check reads of an evaluation that was given its tangents: the
        derivatives its call computed, or, where its check's program could not push the
        loss forward, why (a backend without such a program: nothing is known yet)."""
        key = self._forward_key(variant, inputs, tangents)
        if g.forward is not None:
            self._forward[key] = g.forward
            return
        built = for_checks(variant.built, True)
        if getattr(built, "evaluation", None) is not None:
            self._forward[key] = TypeError(forward_refusal(built))

    def _tell(self, precision: str | None, event: Any) -> None:
        """An evaluation's event, to the run's listeners (not of a precision-or-bug re-run:
        the judge's own evidence, no evaluation of the run's)."""
        if self.emit is not None and precision is None:
            self.emit(event)
            if isinstance(event, EvaluationFinished):
                self.watch.heard()  # a line may have been said: the heartbeat counts from it

    def once(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """`compute()` once per session and `key` (a check shared by a run's arrays, the
        central differences of an array: `_pipeline.checks`)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def levels(self, g: Gradient) -> bool:
        """Measure the rounding level of one of this session's evaluations where it was
        not (`Gradient.levels_measured`): the evidence a comparison asks for when the
        relative tolerance alone does not decide it (`_evaluate.measure_levels`), kept in
        its evaluation record. **Returns** whether it measured now."""
        how = self._how.get(id(g))
        if g.levels_measured or g.of is None or how is None:
            return False
        inputs, device, precision = how
        measure_levels(
            g,
            inputs,
            self.watch,
            device=device,
            precision=precision,
            checking=self.checking,
            says="escalated: its rounding level",
        )
        keep = getattr(self.records, "keep_levels", None)
        if keep is not None and precision is None:
            keep(g.of, g.dtype, g, device=device)
        return True

    def known(self, variant: Variant, inputs: Inputs, dtype: str) -> Gradient | Fault | None:
        """The variant's CPU evaluation where this session has made it, else None (nothing
        is evaluated: what a summary reports of a run that judged case by case)."""
        return self._outcomes.get((id(variant), inputs.key(dtype), "cpu", None))

    def forget(self) -> None:
        """Forget every evaluation (a notebook that redefined a variant)."""
        self._outcomes.clear()
        self._how.clear()
        self._masks.clear()
        self._tangents.clear()
        self._forward.clear()
        self._shared.clear()

    # --- what the gradient checks compute ------------------------------------------------

    def masks(self, example: Example, inputs: Inputs) -> dict[str, np.ndarray]:
        """The example's kink mask of every wrt array on these inputs (True: may be
        perturbed), computed once: a mask may be costly (03-advection traces its T steps)."""
        key = (id(example), inputs.key("float64"))
        if key not in self._masks:
            arrays = inputs.run_arrays("float64")
            given: Mapping[str, Any] = {}
            if example.fd.mask is not None:
                given = dict(
                    self.watch.run(
                        lambda: example.fd.mask(arrays, dict(inputs.params)),
                        f"{example.name} kink mask",
                    )
                )
            self._masks[key] = checked_masks(example, given, arrays)
        return {name: m.copy() for name, m in self._masks[key].items()}

    def tangents(self, example: Example, inputs: Inputs) -> dict[str, np.ndarray]:
        """Each wrt array's direction for the jvp check (`jvp_direction`, inside the kink
        mask), once per session: every member of a family is pushed forward along the
        same ones, so a borrower reads its lender's numbers."""
        key = (id(example), inputs.key("float64"))
        if key not in self._tangents:
            masks = self.masks(example, inputs)
            run = inputs.run_arrays("float64")
            self._tangents[key] = {
                a: jvp_direction(example, a, run[a], None if masks[a].all() else masks[a])
                for a in example.wrt_names
            }
        return self._tangents[key]

    def second_tangents(self, example: Example, inputs: Inputs) -> dict[str, np.ndarray]:
        """Each wrt array's second direction `u` at the second order (`second_direction`,
        inside the kink mask), once per session, shared by a family as `tangents` is."""
        key = (id(example), inputs.key("float64"), "second")
        if key not in self._tangents:
            masks = self.masks(example, inputs)
            run = inputs.run_arrays("float64")
            self._tangents[key] = {
                a: second_direction(example, a, run[a], None if masks[a].all() else masks[a])
                for a in example.wrt_names
            }
        return self._tangents[key]

    def _second(self, variant: Variant, inputs: Inputs) -> dict[str, np.ndarray] | None:
        """The second directions an evaluation's call takes where its example is checked
        at the second order (its own `order`, or the session's), else None."""
        if (
            order_of(variant.example, self.options.order) < 2
            or variant.unavailable_reason() is not None
        ):
            return None
        return self.second_tangents(variant.example, inputs)

    def _jvp_tangents(self, variant: Variant, inputs: Inputs) -> dict[str, np.ndarray] | None:
        """The tangents an evaluation pushes forward in its own call (`tangents`), where
        the variant runs here (None otherwise: nothing of the user's to call first)."""
        if variant.unavailable_reason() is not None:
            return None
        return self.tangents(variant.example, inputs)

    @staticmethod
    def _forward_key(variant: Variant, inputs: Inputs, tangents: dict[str, np.ndarray]):
        import hashlib

        digest = hashlib.sha256()
        for name in sorted(tangents):
            digest.update(name.encode() + np.ascontiguousarray(tangents[name]).tobytes())
        return (id(variant), inputs.key("float64"), digest.hexdigest())

    def forward(
        self, variant: Variant, inputs: Inputs, tangents: dict[str, np.ndarray], cost: Cost
    ) -> dict[str, float]:
        """`{array: jvp(L)(x; that array's tangent)}` by one variant, each wrt array pushed
        forward along its own tangent (the others zero): from its evaluation's own call
        where that computed them (`Session.outcome`), else in one call of its check's
        program, counted into `cost` under `jvp` (its compilations too); once per session,
        inputs and tangents. Raises where it has no forward mode (a custom_vjp, a Julia
        loss, Enzyme's forward)."""
        key = self._forward_key(variant, inputs, tangents)
        if key not in self._forward:
            try:
                self._forward[key] = push(self, variant, inputs, tangents, cost)
            except TimeoutError:
                raise
            except Exception as e:
                self._forward[key] = e
        found = self._forward[key]
        if isinstance(found, Exception):
            raise found
        return found
