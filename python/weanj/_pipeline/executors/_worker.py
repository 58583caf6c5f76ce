"""What runs in a worker process: a Dask worker's evaluations (`weanj check --workers`,
`--scheduler`) and one process of a `jax.distributed` evaluation (`--processes`,
`python -m weanj._pipeline.executors._worker COORDINATOR P I REQUEST RESULT`);
docs/distributed.md.

A worker process is a front end of its own, as `python -m weanj` is: it loads the
client's project by its root and turns names (example, variant) into objects with the
registry, then runs the pipeline's own evaluation (`evaluation._evaluate`, the session's
gradient checks), exactly as the client would in-process. The client never imports this
module (`_dask_plugin` imports it on the worker, a subprocess runs it with `-m`): what
comes back is data, and the client alone writes files.
"""

from __future__ import annotations

import copy
import os
import pickle
import sys
import threading
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..._check_options import DEFAULTS
from ..._errors import WeanjError
from ..._judge._contract import Fault
from ..._model import Distributed, Gradient, Inputs
from ..._model._beyond import applies
from ..._model._verdicts import GRADIENT_CHECKS
from ..evaluation._evaluate import first_line
from ..session._session import Session
from ._executors import clock_figures

# --- a Dask worker ---------------------------------------------------------------------------

_WORKER: dict[str, Any] = {
    "root": None,
    "inputs": {},
    "payloads": {},
    "error": None,
    "sessions": {},  # {thread: ((run, timeout), Session)}
}
_WORKER_LOCK = threading.Lock()


def worker_ready(setup: dict) -> str | None:
    """Load the client's project in this worker process (once): its root as
    `$WEANJ_ROOT`, the compilation cache where the client keeps it unless this worker's
    own `$WEANJ_COMPILATION_CACHE` says otherwise (a node-local disk). **Returns** None, or
    why it cannot (one line)."""
    from ..._io import _jax_cache

    with _WORKER_LOCK:
        root = setup["root"]
        if _WORKER["root"] == root:
            return None
        if _WORKER["root"] is not None:
            return (
                f"this worker process already serves the project {_WORKER['root']}; a weanj "
                "worker serves one project (start workers for each)"
            )
        try:
            os.environ["WEANJ_ROOT"] = root
            if setup.get("cache") and _jax_cache.VARIABLE not in os.environ:
                os.environ[_jax_cache.VARIABLE] = setup["cache"]
            from ..._registry import project

            project()  # imports the example modules (their folders on sys.path)
            _jax_cache.enable(Path(root))
        except Exception as e:  # noqa: BLE001 - said in one line by the client
            return first_line(e)
        _WORKER["root"] = root
        return None


def _worker_inputs(example: Any, payload: dict) -> Inputs:
    """The run's inputs as `Inputs` of this worker's example (once per worker)."""
    key = (payload["example"], payload["digest"], tuple(sorted(payload["params"].items())))
    found = _WORKER["inputs"].get(key)
    if found is None:
        from ..._model._inputs import frozen_arrays

        found = Inputs(
            example,
            frozen_arrays(payload["arrays"]),
            MappingProxyType(dict(payload["params"])),
            payload["digest"],
            path=None if payload["path"] is None else Path(payload["path"]),
            shared=payload["shared"],
            attrs=MappingProxyType(dict(payload["attrs"])),
            legacy_of=payload["legacy"],
        )
        _WORKER["inputs"][key] = found
    return found


class WorkerRecords:
    """The records of a worker's session: nothing to recall; the checks' numbers kept, to
    go back to the client."""

    def __init__(self):
        self.checks: dict[tuple[str, str], dict] = {}

    def recall(self, *_, **__):
        return None

    def keep(self, *_, **__):
        pass

    def recall_check(self, *_):
        return None

    def keep_check(self, variant, dtype, kind, array, numbers) -> None:
        self.checks[(kind, array)] = numbers


def _session_of(setup: dict, timeout: float | None) -> Session:
    """This worker thread's session for this run: what one process shares between the
    members of a family in-process (a sibling's forward mode for the jvp check, an
    example's kink masks) is computed once per worker, not once per task. A new run
    (another `setup["run"]`) starts a new session; the plugin's teardown drops them."""
    from ..._places import Places

    run = (setup.get("run"), timeout)
    held = _WORKER["sessions"].get(threading.get_ident())
    if held is None or held[0] != run:
        session = Session(
            timeout_s=timeout,
            say=lambda _: None,
            shown_path=Places(Path(setup["root"])).shown,
            checking=True,  # its float64 evaluations' gradient checks run here too
            family_here=False,  # a borrowed forward mode's lender is the client's choice
            options=setup.get("options", DEFAULTS),  # the check's (its fd, its order)
        )
        held = _WORKER["sessions"][threading.get_ident()] = (run, session)
    return held[1]


def evaluate_task(
    setup: dict, digest: str, example: str, variant: str, dtype: str, timeout: float | None
) -> dict:
    """One evaluation on a worker: the variant's loss, gradient and noise on the run's
    inputs and, in float64, its gradient checks' numbers, as the in-process session
    computes them (the same functions)."""
    from ..._io import _jax_cache
    from ..._registry import catalog
    from ..checks._gradchecks import CHECKS

    error = worker_ready(setup)
    if error:
        raise WeanjError(error)
    cat = catalog(example)
    v = cat.find(variant)
    if v is None:
        raise WeanjError(f"this worker's project has no variant {variant} of {example}")
    payload = _WORKER["payloads"].get(digest)
    if payload is None:
        raise WeanjError(f"this worker did not receive the inputs {digest[:12]}… of {example}")
    inputs = _worker_inputs(cat.example, payload)
    kept = WorkerRecords()
    clock = _jax_cache.clock()
    before = clock_figures(clock)
    t0 = time.perf_counter()
    session = _session_of(setup, timeout)
    session.records = kept  # this task's checks' numbers, to go back with it
    found = session.outcome(v, inputs, dtype)
    if isinstance(found, Gradient) and dtype == "float64":
        for array in cat.example.wrt_names:
            for kind in (k for k in GRADIENT_CHECKS if applies(k, cat.example, 1)):
                try:
                    CHECKS[kind].judgement(session, "", cat, inputs, found, array)
                except TimeoutError as e:
                    kept.checks[(kind, array)] = {"timeout": str(e)}
                except Exception:  # noqa: BLE001 - left to the client, which then
                    pass  # computes it itself, exactly as in-process
    seconds = time.perf_counter() - t0
    if isinstance(found, Gradient):
        found = copy.copy(found)
        found.example = found.of = None  # this process's objects stay here
    compiled = [a - b for a, b in zip(clock_figures(clock), before, strict=True)]
    return {
        "found": found,
        "checks": kept.checks,
        "worker": _address(),
        "seconds": seconds,
        "compile": compiled,
    }


def plugin_setup(setup: dict, payloads: dict) -> None:
    """`_dask_plugin.WeanjProject.setup`: the project, and the run's inputs."""
    _WORKER["error"] = worker_ready(setup)
    _WORKER["payloads"].update(payloads)


def plugin_teardown(payloads: dict) -> None:
    """The run is over: its inputs and sessions go."""
    for digest in payloads:
        _WORKER["payloads"].pop(digest, None)
    _WORKER["sessions"].clear()
    _WORKER["inputs"].clear()


def _address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:  # noqa: BLE001 - a label only
        return f"pid {os.getpid()}"


# --- one process of a jax.distributed evaluation --------------------------------------------


def _one_process(coordinator: str, processes: int, index: int, request: Path, result: Path):
    from ._jax_processes import distributed_process
    from ._processes import COLLECTIVES

    with distributed_process(coordinator, processes, index, collectives=COLLECTIVES):
        with open(request, "rb") as f:
            asked = pickle.load(f)
        found = evaluate_here(asked)
        if index == 0:
            from ..._io._atomic import atomic_path

            with atomic_path(result) as tmp, open(tmp, "wb") as f:
                pickle.dump(found, f)


def evaluate_here(asked: dict) -> Gradient | Fault:
    """The evaluation in this process of a `jax.distributed` cluster (already started):
    the project loaded from `asked["root"]`, the variant's functions made to gather."""
    from ..._io import _jax_cache
    from ..._model._variant import CALLS, Checked, Functions
    from ..._places import Places
    from ..._registry import catalog
    from ..._watch import Watch
    from ..evaluation._evaluate import evaluate
    from ._jax_processes import gathering, global_device_count

    os.environ["WEANJ_ROOT"] = asked["root"]
    _jax_cache.enable(Path(asked["root"]))
    cat = catalog(asked["example"])
    v = cat.find(asked["variant"])
    inputs = _worker_inputs(cat.example, asked["inputs"])
    fns = v.functions()
    ex = cat.example
    # this process's copy of the variant: its built functions gather what they return
    v._built["fns"] = Functions(
        *(
            None if f is None else Checked(ex, v.name, gathering(f.fn), tangents=k == 2)
            for k, f in enumerate(fns[:CALLS])
        )
    )
    found = evaluate(
        v,
        inputs,
        asked["dtype"],
        Watch(timeout_s=asked["timeout"], say=lambda _: None),
        shown_path=Places(Path(asked["root"])).shown,
    )
    if isinstance(found, Gradient):
        found.distributed = Distributed(asked["processes"], global_device_count())
        found.example = found.of = None
    return found


def main(argv: list[str]) -> int:
    coordinator, processes, index, request, result = argv
    try:
        _one_process(coordinator, int(processes), int(index), Path(request), Path(result))
    except Exception as e:  # noqa: BLE001 - the parent reads this line from the log
        print(f"weanj: {first_line(e)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
