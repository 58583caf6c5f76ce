"""One process of a `jax.distributed` evaluation (`_worker`, under `_processes`): the
cluster joined for a block, and a variant's results gathered whole on every process."""

from __future__ import annotations

import contextlib
from collections.abc import Callable


@contextlib.contextmanager
def distributed_process(coordinator: str, processes: int, index: int, *, collectives: str):
    """This process as process `index` of `processes` of a `jax.distributed` cluster
    (its CPU collectives `collectives`), for the duration of a block."""
    import jax

    jax.config.update("jax_cpu_collectives_implementation", collectives)
    jax.distributed.initialize(
        coordinator_address=coordinator, num_processes=processes, process_id=index
    )
    try:
        yield
    finally:
        jax.distributed.shutdown()


def gathering(fn: Callable) -> Callable:
    """`fn`, its result made whole on every process (an array sharded over other
    processes' devices cannot be read here until it is gathered)."""

    def gathered(*args):
        import jax
        from jax.experimental import multihost_utils

        def whole(x):
            if isinstance(x, jax.Array) and not x.is_fully_addressable:
                return multihost_utils.process_allgather(x, tiled=True)
            return x

        return jax.tree_util.tree_map(whole, fn(*args))

    return gathered


def global_device_count() -> int:
    """The devices of every process of the cluster (JAX's `device_count`)."""
    import jax

    return jax.device_count()
