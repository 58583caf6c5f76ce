"""Where evaluations run: in this process, on a Dask cluster, or on P processes under
`jax.distributed`; and the worker side that runs them there (`_worker`)."""
