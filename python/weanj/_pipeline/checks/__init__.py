"""The gradient checks: the Taylor remainder test's walk, forward against reverse, and
central differences, run and judged for a variant or any function."""
