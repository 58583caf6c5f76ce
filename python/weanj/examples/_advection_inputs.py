"""03-advection's shared inputs: random fields and velocities with minmod ties at the
first step (the hazard the example exists to show), and their checks."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import weanj

LAMBDA = 0.25  # dt/dx: with |u|, |v| <= 1, λ(|u| + |v|) <= 0.5 (CFL)
N_SHARED = 64
ARRAYS = ("c0", "u", "v", "cobs")


def random_velocities(rng: np.random.Generator, n: int, speed: float = 0.9):
    """Face velocities with max(|u|, |v|) = `speed`: the discrete curl of a random
    streamfunction ψ (divergence-free) plus a quarter of the gradient of a random
    potential φ.

    Rough (white-noise ψ, φ), so that the first step breaks every tie of `c0` for good;
    slightly compressible, so that constant patches do not stay constant up to rounding
    (a divergence-free flow keeps them, and with them kinks at every step, at distances
    of 1e-17 that no finite difference can avoid). The compressible part concentrates c
    a little (on the shared inputs max|c| grows from 1.6 to 3.0 in 20 steps).
    """
    psi = rng.uniform(-1.0, 1.0, (n, n))
    phi = rng.uniform(-1.0, 1.0, (n, n))
    u = (psi - np.roll(psi, 1, 1)) + 0.25 * (np.roll(phi, -1, 0) - phi)
    v = (np.roll(psi, 1, 0) - psi) + 0.25 * (np.roll(phi, -1, 1) - phi)
    scale = speed / max(np.max(np.abs(u)), np.max(np.abs(v)), np.finfo(float).tiny)
    return u * scale, v * scale


def generate(seed: int, n: int = N_SHARED) -> dict[str, np.ndarray]:
    """Random `c0` and `cobs` in [−1, 1), random velocities, and, for n >= 16, minmod
    ties at the first step: four blocks of (n/4)×(n/4) cells holding two planes of
    exactly representable values (multiples of 1/16, so that every difference inside is
    exact and consecutive differences are exactly equal: `a == b != 0`, both axes, both
    signs) and two constant patches (`a == b == 0`, and `a*b == 0` at their edges)."""
    rng = np.random.default_rng(seed)
    c0 = rng.uniform(-1.0, 1.0, (n, n))
    u, v = random_velocities(rng, n)
    cobs = rng.uniform(-1.0, 1.0, (n, n))
    q = n // 8
    if q >= 2:
        i = np.arange(2 * q)[:, None]
        j = np.arange(2 * q)[None, :]
        c0[q : 3 * q, q : 3 * q] = 0.0625 * i - 0.125 * j + 0.5
        c0[5 * q : 7 * q, q : 3 * q] = -0.125 * i + 0.0625 * j + 0.25
        c0[q : 3 * q, 5 * q : 7 * q] = 0.5
        c0[5 * q : 7 * q, 5 * q : 7 * q] = -0.25
    return {"c0": c0, "u": u, "v": v, "cobs": cobs}


def validate(arrays: Mapping[str, np.ndarray]) -> None:
    c0 = arrays["c0"]
    if c0.ndim != 2 or c0.shape[0] != c0.shape[1] or c0.shape[0] < 1:
        raise weanj.InputError(
            f"c0 must be a square (n, n) array with n >= 1, got shape {c0.shape}"
        )
    for name in ARRAYS[1:]:
        if arrays[name].shape != c0.shape:
            raise weanj.InputError(
                f"{name} has shape {arrays[name].shape}, c0 has {c0.shape}; all four arrays "
                "must be (n, n)"
            )
    for name in ("u", "v"):
        worst = float(np.max(np.abs(arrays[name])))
        if worst > 1.0:
            raise weanj.InputError(
                f"|{name}| must be <= 1 everywhere (CFL with λ = {LAMBDA}), got "
                f"max|{name}| = {worst:.17g}"
            )


def describe(arrays: Mapping[str, np.ndarray]) -> dict:
    return {"n": int(arrays["c0"].shape[0])}
