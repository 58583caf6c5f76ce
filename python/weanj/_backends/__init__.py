"""Backends: how a variant's loss and gradient are built (JAX, Enzyme-JAX, Julia)."""
