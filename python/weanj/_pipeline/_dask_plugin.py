"""The worker plugin of a `weanj check` on Dask (imported only where Dask is installed):
each worker process, and each one that joins or restarts later, loads the client's
project and receives the run's inputs, once (`_executors`)."""

from __future__ import annotations

from distributed import WorkerPlugin


class WeanjProject(WorkerPlugin):
    """The project (`setup`: its root and the compilation cache) and the inputs of one
    run (`payloads`: {digest: the inputs as plain data}); the scheduler keeps it and hands
    it to every worker, so a worker that restarts after a death has the inputs too."""

    def __init__(self, setup: dict, payloads: dict):
        self.setup_of = setup
        self.payloads = payloads

    def setup(self, worker) -> None:
        from ._executors import _WORKER, worker_ready

        _WORKER["error"] = worker_ready(self.setup_of)
        _WORKER["payloads"].update(self.payloads)

    def teardown(self, worker) -> None:
        from ._executors import _WORKER

        for digest in self.payloads:
            _WORKER["payloads"].pop(digest, None)
