"""What `weanj check --workers N` says when its local Dask cluster does not start.

`distributed.LocalCluster` starts a scheduler and N nannies, each of which spawns a worker
process and waits for it to report. A worker that dies meanwhile (the memory killer, a
job scheduler's limit), a process the system refuses to spawn (a process or memory
limit), or a port that cannot be bound, ends the start with Dask's own exception at the
end of a page of its internals (`RuntimeError: Nanny failed to start.`). Dask has closed
what it had started by then (nothing is left running); weanj says it in one line naming
the executor, the cause Dask found and what to try, and the command exits 2.
"""

from __future__ import annotations

import errno


def _causes(e: BaseException) -> list[BaseException]:
    """`e` and the exceptions it was raised from, outermost first (Dask wraps the
    worker's own failure: `RuntimeError: Nanny failed to start.` from the nanny's)."""
    chain: list[BaseException] = []
    while e is not None and e not in chain and len(chain) < 10:
        chain.append(e)
        e = e.__cause__ or e.__context__
    return chain


def _words(e: BaseException) -> str:
    """What `e` says, short: an OSError's own words (`Address already in use`)."""
    text = " ".join(str(getattr(e, "strerror", None) or e).split())
    return text[:60] if text else type(e).__name__


def did_not_start(workers: int, e: BaseException) -> str:
    """The one line of a local cluster of `workers` workers that did not start because of
    `e`: the likely reason, what Dask said (its innermost cause) and what to try."""
    chain = _causes(e)
    codes = {getattr(c, "errno", None) for c in chain}
    if errno.EADDRINUSE in codes:
        why = "a port it needs is taken"
    elif codes & {errno.EAGAIN, errno.ENOMEM}:
        why = "the system refused a worker process"
    else:
        why = "a worker process died while starting"
    return (
        f"Dask's local cluster (--workers {workers}) did not start: {why} "
        f"({_words(chain[-1])}); try again, fewer --workers, or --workers 0 (in this process)"
    )
