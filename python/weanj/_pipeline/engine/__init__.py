"""A check run (`_run.CheckRun`): its session, the case table built and judged, the
device cases, the pair rule, and the events it emits to its listeners."""
