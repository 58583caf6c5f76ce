"""Evaluation records (read, checked, keyed, reused), the store writes of a run, and the
results no longer of the project."""
