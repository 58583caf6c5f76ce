"""The execution layer: everything that calls a user's code. Its parts, each a package:
`engine` (a check run, its session, the case table judged, its progress), `evaluation`
(one variant's loss and gradient on a device, its calls counted, its rounding level),
`checks` (the gradient checks' numbers), `records` (evaluation records, the store writes,
stale results), `executors` (where evaluations run: in process, Dask, `jax.distributed`;
the worker side), `search` (fuzz and the minimal case) and `bench` (benchmark points)."""
