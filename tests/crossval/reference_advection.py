"""An independent reference for 03-advection: plain Python loops over lists of floats.

Written straight from docs/DESIGN.md's mathematics, sharing no code with weanj: a periodic
n×n grid (0-based indices mod n), λ = 0.25, one step

    minmod(a, b) = 0 if a*b <= 0;  else a if |a| <= |b|;  else b
    sx[i,j] = minmod(c[i+1,j] − c[i,j], c[i,j] − c[i−1,j]);  sy likewise along j
    F[i,j]  = u[i,j] * (c[i,j]   + 0.5*(1 − λ*u[i,j])*sx[i,j])      if u[i,j] >= 0
              u[i,j] * (c[i+1,j] − 0.5*(1 + λ*u[i,j])*sx[i+1,j])    otherwise;  G likewise
    c'[i,j] = c[i,j] − λ*(F[i,j] − F[i−1,j]) − λ*(G[i,j] − G[i,j−1])

in exactly this order of operations (Python floats are IEEE float64, one rounding per
operation), and the loss `Σ (c^T − cobs)²`, summed exactly (`math.fsum`).

The gradient is the discrete adjoint of these loops, derived by hand (`gradient`): the
steps run backwards over the stored trajectory, each minmod passing its cotangent on by
its partial derivatives at the point where it was evaluated. Those partials are where
the conventions differ (`minmod_partials`): `"branch"` follows the branch taken (docs/DESIGN.md;
jax-muscl, julia-muscl); `"jax-minmax"` is what JAX's rules give for
`0.5*(sign(a)+sign(b))*minimum(abs(a), abs(b))` (jax-muscl-minmax); `"julia-minmax"` is
what Julia's `min`/`abs`/`sign` give under Enzyme as read from their sources (see
`python/weanj/examples/advection.py`): a prediction, never a Julia result. Away from the
kinks all three are the same, and the adjoint is checked against central differences of
`loss` (exact up to rounding there: the loss is piecewise quadratic in c0).

`fma=True` rounds as XLA's CPU backend does for jax-muscl (which lets LLVM contract a
multiply feeding an add into one fused multiply-add, rounded once): the bracket
`c + k*s` (or `c_next − k*s_next`, k = 0.5*(1 ∓ λu)) is one fma, and so is
`F[i,j] − F[i−1,j]` = fma(u[i,j], bracket[i,j], −F[i−1,j]) along axis 0 (not G's
difference along axis 1). The other products are by λ = 0.25 or 0.5, exact, so
contracting them changes nothing. With it, c^T is bitwise jax-muscl's (a test checks it):
this contraction is the whole difference between the plain loops and XLA's program.

Python loops: O(T·n²) interpreted steps, for small n only.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..helpers import central_differences

LAMBDA = 0.25

# Which reference each family computes (families are algorithms); the minmax family's
# gradient follows JAX's convention at the kinks (the Julia variant of that family follows
# another one there: see `minmod_partials`).
ALGORITHMS = {"muscl": "muscl", "muscl-minmax": "muscl-minmax"}
CONVENTIONS = {
    "muscl": "branch",
    "muscl-minmax": "jax-minmax",
    "muscl-minmax-julia": "julia-minmax",
}


# --- inputs --------------------------------------------------------------------------------


def random_case(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Random c0, cobs in [−1, 1) and face velocities in [−1, 1] (no ties, with
    probability one): a generic point, away from every kink."""
    return {
        "c0": rng.uniform(-1.0, 1.0, (n, n)),
        "u": rng.uniform(-1.0, 1.0, (n, n)),
        "v": rng.uniform(-1.0, 1.0, (n, n)),
        "cobs": rng.uniform(-1.0, 1.0, (n, n)),
    }


def small_inputs(seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """n = 5, T = 2: every cell feels every other (the stencil reaches 2 cells per step,
    periodic), in few enough operations for op-by-op (non-jit) runs."""
    return random_case(np.random.default_rng(seed), 5), {"T": 2}


def tie_inputs(seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """n = 6, T = 2, with minmod kinks at the first step where the three conventions
    differ: a ramp of multiples of 1/8 down column 1 (a == b != 0 along i), a constant
    patch in rows 3–5 of column 4 (a == b == 0 inside, a*b == 0 at its ends), and the
    same along j in row 0. For fixtures of the Julia variants' conventions at ties (the
    loss is piecewise quadratic: no finite differences here)."""
    arrays = random_case(np.random.default_rng(seed), 6)
    c0 = arrays["c0"]
    c0[:, 1] = 0.125 * np.arange(6) - 0.25  # wraps: c0[5,1] → c0[0,1] is no tie
    c0[3:6, 4] = 0.5
    c0[0, :] = 0.375 - 0.125 * np.arange(6)
    return arrays, {"T": 2}


def random_inputs(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Issue 13, acceptance 1: n in 5..20, T in 1..10."""
    n = int(rng.integers(5, 21))
    T = int(rng.integers(1, 11))
    return random_case(rng, n), {"T": T}


# --- the loops -----------------------------------------------------------------------------


def minmod(a: float, b: float) -> float:
    if a * b <= 0:
        return 0.0
    if abs(a) <= abs(b):
        return a
    return b


def _fma(x: float, y: float, z: float) -> float:
    """x*y + z rounded once (exact rational arithmetic, then one correct rounding)."""
    return float(Fraction(x) * Fraction(y) + Fraction(z))


def _slopes(c: list[list[float]], n: int) -> tuple[list[list[float]], list[list[float]]]:
    sx = [[0.0] * n for _ in range(n)]
    sy = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            sx[i][j] = minmod(c[(i + 1) % n][j] - c[i][j], c[i][j] - c[(i - 1) % n][j])
            sy[i][j] = minmod(c[i][(j + 1) % n] - c[i][j], c[i][j] - c[i][(j - 1) % n])
    return sx, sy


def _bracket(w: float, c_here, c_next, s_here, s_next, fma: bool) -> float:
    """The bracket of F (or G): `c + 0.5*(1 − λw)*s` upwind, `c_next − 0.5*(1 + λw)*s_next`
    otherwise."""
    if w >= 0:
        k = 0.5 * (1 - LAMBDA * w)
        return _fma(k, s_here, c_here) if fma else c_here + k * s_here
    k = 0.5 * (1 + LAMBDA * w)
    return _fma(-k, s_next, c_next) if fma else c_next - k * s_next


def step(c, u, v, fma: bool = False):
    """One step c → c' on lists of lists; returns c'."""
    n = len(c)
    sx, sy = _slopes(c, n)
    # F = w * bracket: the face velocity and the bracket, kept apart for the fma variant.
    Fw = [[0.0] * n for _ in range(n)]
    Fb = [[0.0] * n for _ in range(n)]
    G = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            ip, jp = (i + 1) % n, (j + 1) % n
            Fw[i][j] = u[i][j]
            Fb[i][j] = _bracket(u[i][j], c[i][j], c[ip][j], sx[i][j], sx[ip][j], fma)
            G[i][j] = v[i][j] * _bracket(v[i][j], c[i][j], c[i][jp], sy[i][j], sy[i][jp], fma)
    new = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            im, jm = (i - 1) % n, (j - 1) % n
            if fma:  # F[i,j] − F[i−1,j] as fma(u[i,j], bracket[i,j], −F[i−1,j])
                dF = _fma(Fw[i][j], Fb[i][j], -(Fw[im][j] * Fb[im][j]))
            else:
                dF = Fw[i][j] * Fb[i][j] - Fw[im][j] * Fb[im][j]
            new[i][j] = c[i][j] - LAMBDA * dF - LAMBDA * (G[i][j] - G[i][jm])
    return new


def trajectory(arrays, T: int, fma: bool = False) -> list[list[list[float]]]:
    """[c^0, c^1, ..., c^T] as lists of lists."""
    c = np.asarray(arrays["c0"], dtype=np.float64).tolist()
    u = np.asarray(arrays["u"], dtype=np.float64).tolist()
    v = np.asarray(arrays["v"], dtype=np.float64).tolist()
    states = [c]
    for _ in range(T):
        c = step(c, u, v, fma)
        states.append(c)
    return states


def solve(arrays, T: int, fma: bool = False) -> np.ndarray:
    """c^T as an (n, n) array."""
    return np.array(trajectory(arrays, T, fma)[-1])


def loss(algorithm: str, arrays, params) -> float:
    """`Σ (c^T − cobs)²`, summed exactly. Both families have this loss (to the bit)."""
    if algorithm not in ALGORITHMS.values() and algorithm not in CONVENTIONS:
        raise ValueError(f"no reference algorithm {algorithm!r}")
    c = solve(arrays, int(params["T"]))
    cobs = np.asarray(arrays["cobs"], dtype=np.float64)
    return math.fsum(((c - cobs) ** 2).ravel().tolist())


# --- the hand adjoint ----------------------------------------------------------------------


def _sign(x: float) -> float:
    return (x > 0) - (x < 0)


def minmod_partials(a: float, b: float, convention: str) -> tuple[float, float]:
    """(∂minmod/∂a, ∂minmod/∂b) at (a, b) under a convention (see the module docstring).

    - `"branch"`: that of the branch taken: 0 where a*b <= 0, (1, 0) where |a| <= |b|
      (so at a tie a == b, that of a), else (0, 1).
    - `"jax-minmax"`: JAX AD of `0.5*(sign(a)+sign(b))*minimum(abs(a), abs(b))`: sign' = 0,
      abs'(x) = +1 for x >= 0 (−1 below), and `minimum` gives a tie half each way.
    - `"julia-minmax"`: Enzyme on Julia's `0.5*(sign(a)+sign(b))*min(abs(a), abs(b))`:
      `sign(x)` returns x itself at x == 0 (sign'(0) = 1, else 0), fabs'(x) = −1 for
      x < 0, else +1, and `min(x, y)` passes the cotangent to y unless x < y.
    """
    if convention == "branch":
        if a * b <= 0:
            return 0.0, 0.0
        return (1.0, 0.0) if abs(a) <= abs(b) else (0.0, 1.0)
    s = 0.5 * (_sign(a) + _sign(b))
    m = min(abs(a), abs(b))
    if convention == "jax-minmax":
        if abs(a) < abs(b):
            to_a, to_b = 1.0, 0.0
        elif abs(a) > abs(b):
            to_a, to_b = 0.0, 1.0
        else:
            to_a, to_b = 0.5, 0.5
        abs_a = 1.0 if a >= 0 else -1.0
        abs_b = 1.0 if b >= 0 else -1.0
        return s * to_a * abs_a, s * to_b * abs_b
    if convention == "julia-minmax":
        to_a, to_b = (1.0, 0.0) if abs(a) < abs(b) else (0.0, 1.0)
        fabs_a = -1.0 if a < 0 else 1.0
        fabs_b = -1.0 if b < 0 else 1.0
        sign_a = 1.0 if a == 0 else 0.0
        sign_b = 1.0 if b == 0 else 0.0
        return (0.5 * sign_a * m + s * to_a * fabs_a, 0.5 * sign_b * m + s * to_b * fabs_b)
    raise ValueError(f"unknown minmod convention {convention!r}")


def _step_adjoint(c, u, v, cbar_new, convention: str):
    """c̄ (cotangent of c) from c̄' by the adjoint of `step` at c."""
    n = len(c)
    lam = LAMBDA
    cbar = [row[:] for row in cbar_new]  # c'[i,j] = c[i,j] − ...
    # c'[i,j] = ... − λF[i,j] + λF[i−1,j] ...: F[i,j] reaches c'[i,j] and c'[i+1,j].
    Fbar = [[0.0] * n for _ in range(n)]
    Gbar = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            Fbar[i][j] = -lam * cbar_new[i][j] + lam * cbar_new[(i + 1) % n][j]
            Gbar[i][j] = -lam * cbar_new[i][j] + lam * cbar_new[i][(j + 1) % n]
    sxbar = [[0.0] * n for _ in range(n)]
    sybar = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            ip, jp = (i + 1) % n, (j + 1) % n
            w = u[i][j]
            if w >= 0:  # F = w*(c[i] + 0.5(1 − λw) sx[i])
                cbar[i][j] += w * Fbar[i][j]
                sxbar[i][j] += w * 0.5 * (1 - lam * w) * Fbar[i][j]
            else:  # F = w*(c[i+1] − 0.5(1 + λw) sx[i+1])
                cbar[ip][j] += w * Fbar[i][j]
                sxbar[ip][j] -= w * 0.5 * (1 + lam * w) * Fbar[i][j]
            w = v[i][j]
            if w >= 0:
                cbar[i][j] += w * Gbar[i][j]
                sybar[i][j] += w * 0.5 * (1 - lam * w) * Gbar[i][j]
            else:
                cbar[i][jp] += w * Gbar[i][j]
                sybar[i][jp] -= w * 0.5 * (1 + lam * w) * Gbar[i][j]
    for i in range(n):
        for j in range(n):
            im, ip, jm, jp = (i - 1) % n, (i + 1) % n, (j - 1) % n, (j + 1) % n
            # sx = minmod(a, b), a = c[i+1] − c[i], b = c[i] − c[i−1]
            da, db = minmod_partials(c[ip][j] - c[i][j], c[i][j] - c[im][j], convention)
            g = sxbar[i][j]
            cbar[ip][j] += da * g
            cbar[i][j] += (db - da) * g
            cbar[im][j] -= db * g
            da, db = minmod_partials(c[i][jp] - c[i][j], c[i][j] - c[i][jm], convention)
            g = sybar[i][j]
            cbar[i][jp] += da * g
            cbar[i][j] += (db - da) * g
            cbar[i][jm] -= db * g
    return cbar


def gradient(algorithm: str, arrays, params) -> dict[str, np.ndarray]:
    """{"c0": ∂L/∂c0} by the hand adjoint; `algorithm` is a value of `ALGORITHMS` or a key
    of `CONVENTIONS` (e.g. `"muscl-minmax-julia"`, the predicted Julia convention)."""
    convention = CONVENTIONS.get(algorithm)
    if convention is None:
        raise ValueError(f"no reference algorithm {algorithm!r}")
    T = int(params["T"])
    u = np.asarray(arrays["u"], dtype=np.float64).tolist()
    v = np.asarray(arrays["v"], dtype=np.float64).tolist()
    states = trajectory(arrays, T)
    cobs = np.asarray(arrays["cobs"], dtype=np.float64)
    cbar = (2.0 * (np.array(states[-1]) - cobs)).tolist()
    for t in reversed(range(T)):
        cbar = _step_adjoint(states[t], u, v, cbar, convention)
    return {"c0": np.array(cbar)}


def fd_gradient(arrays, params, h: float = 1e-6) -> np.ndarray:
    """∂L/∂c0 by central differences of `loss`, one entry at a time (2n² losses).

    Exact up to rounding (≈ eps·L/h) where no entry's ±h crosses a kink: the loss is
    piecewise quadratic in c0."""
    return central_differences(
        lambda c0: loss("muscl", {**arrays, "c0": c0}, params), arrays["c0"], h
    )


def minmod_arguments(c: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"x": (a, b), "y": (a, b)}: the arguments of every sx and sy at the field c
    (numpy, for counting ties from the inputs alone)."""
    c = np.asarray(c, dtype=np.float64)
    return {
        "x": (np.roll(c, -1, 0) - c, c - np.roll(c, 1, 0)),
        "y": (np.roll(c, -1, 1) - c, c - np.roll(c, 1, 1)),
    }
