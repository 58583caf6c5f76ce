"""The Dask side of `weanj check --workers`/`--scheduler` (imported only where Dask is
installed): the worker plugin that gives each worker process, and each one that joins or
restarts later, the client's project and the run's inputs, once; and the functions a
task and `client.run` call, each the worker side's (`_worker`, imported where it runs:
the client imports none of it)."""

from __future__ import annotations

from distributed import WorkerPlugin


def _worker_side():
    from . import _worker

    return _worker


class WeanjProject(WorkerPlugin):
    """The project (`setup`: its root and the compilation cache) and the inputs of one
    run (`payloads`: {digest: the inputs as plain data}); the scheduler keeps it and hands
    it to every worker, so a worker that restarts after a death has the inputs too."""

    def __init__(self, setup: dict, payloads: dict):
        self.setup_of = setup
        self.payloads = payloads

    def setup(self, worker) -> None:
        _worker_side().plugin_setup(self.setup_of, self.payloads)

    def teardown(self, worker) -> None:
        _worker_side().plugin_teardown(self.payloads)


def ready(setup: dict) -> str | None:
    """Load the project in this worker (`client.run`): None, or why it cannot."""
    return _worker_side().worker_ready(setup)


def run_task(*args):
    """One evaluation, on a worker (`_worker.evaluate_task`)."""
    return _worker_side().evaluate_task(*args)
