"""The judge: the tolerance policy, comparisons, gradient checks and every verdict."""
