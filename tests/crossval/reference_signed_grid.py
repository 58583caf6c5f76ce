"""An independent reference for 06-signed-grid: plain Python loops, docs/DESIGN.md's order.

Written from docs/DESIGN.md alone, sharing no code with weanj. For i = 0..n-1 (n the
length of `w`), in IEEE float64 Python arithmetic, each operation rounded on its own:

    t = -1 + (2i)/(n-1)            (the quotient rounded, then the sum: Julia's loop)
    r = sign(t);  p = 1;  for j = 0..m-1:  r = r - x[j]*p;  p = p*t
    L = Σ_i w[i]*(r*r)             (summed exactly, `math.fsum`)

At the midpoint of an odd n, (2i)/(n-1) is exactly 1 and t exactly 0, so sign(t) = 0.

The gradient is written out by hand: t does not depend on x or w, so

    ∂L/∂w[i] = r_i²,    ∂L/∂x[j] = -2 Σ_i w[i]·r_i·t_i^j   (t_i^j as the loop carries it)

and `test_signed_grid.py` checks it against central differences of `loss` (exact up to
rounding: L is quadratic in x and linear in w).

Python loops: for small n only.
"""

from __future__ import annotations

import math

import numpy as np

from ..helpers import central_differences

ALGORITHMS = {"signfit": "signfit"}
ARRAYS = ("x", "w")
WRT = ("x", "w")


def _check(algorithm: str) -> None:
    if algorithm != "signfit":
        raise ValueError(f"no reference algorithm {algorithm!r} (known: signfit)")


def inputs(m: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """x ~ N(0, 1) (m,), w ~ U(1/2, 3/2) (n,)."""
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(m), "w": rng.uniform(0.5, 1.5, n)}


def small_inputs(seed: int = 0) -> tuple[dict[str, np.ndarray], dict]:
    """A cubic on n = 9 points: the midpoint t = 0 is a grid point, and (n-1)/2 = 4 is a
    power of two, so 1/4 is exact and every port, the literal one included, computes that
    t exactly (the sizes where the literal port parts ways are test_signed_grid.py's)."""
    return inputs(4, 9, 20260601 + seed), {}


def eager_inputs(seed: int = 0) -> tuple[dict[str, np.ndarray], dict]:
    """For op-by-op (non-jit) runs: a quadratic on n = 5 points, the midpoint t = 0 on
    the grid and (n-1)/2 = 2 a power of two (every port agrees here too)."""
    return inputs(3, 5, 20260603 + seed), {}


def sized_inputs(m: int, n: int, seed: int = 0) -> tuple[dict[str, np.ndarray], dict]:
    return inputs(m, n, 20260602 + 1000 * seed + 10 * m + n), {}


def random_inputs(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict]:
    """Inputs never seen: m in 1..6, n in 2..40 (odd and even), x and w of any scale."""
    m, n = int(rng.integers(1, 7)), int(rng.integers(2, 41))
    scale = float(rng.uniform(0.1, 10.0))
    return {"x": scale * rng.standard_normal(m), "w": rng.uniform(0.0, 2.0, n)}, {}


def grid(n: int) -> list[float]:
    """t_i = -1 + (2i)/(n-1), the quotient and the sum each rounded (float64)."""
    return [-1.0 + (2 * i) / (n - 1) for i in range(n)]


def _sign(t: float) -> float:
    return 1.0 if t > 0 else (-1.0 if t < 0 else 0.0)


def _residuals(x: list[float], n: int) -> list[tuple[float, list[float]]]:
    """Per grid point: r and the powers t^j the loop used."""
    out = []
    for t in grid(n):
        r, p, powers = _sign(t), 1.0, []
        for xj in x:
            powers.append(p)
            r = r - xj * p
            p = p * t
        out.append((r, powers))
    return out


def loss(algorithm: str, arrays, params=None) -> float:
    _check(algorithm)
    x = np.asarray(arrays["x"], dtype=np.float64).tolist()
    w = np.asarray(arrays["w"], dtype=np.float64).tolist()
    return math.fsum(wi * (r * r) for wi, (r, _) in zip(w, _residuals(x, len(w)), strict=True))


def gradient(algorithm: str, arrays, params=None) -> dict[str, np.ndarray]:
    _check(algorithm)
    x = np.asarray(arrays["x"], dtype=np.float64).tolist()
    w = np.asarray(arrays["w"], dtype=np.float64).tolist()
    points = _residuals(x, len(w))
    gw = np.array([r * r for r, _ in points])
    gx = np.array(
        [
            -2.0 * math.fsum(wi * r * powers[j] for wi, (r, powers) in zip(w, points, strict=True))
            for j in range(len(x))
        ]
    )
    return {"x": gx, "w": gw}


def fd_gradient(arrays, h: float = 1e-3) -> dict[str, np.ndarray]:
    """Central differences of `loss`, one entry at a time."""
    return {
        name: central_differences(
            lambda v, name=name: loss("signfit", {**arrays, name: v}), arrays[name], h
        )
        for name in WRT
    }


# --- beyond the gradient: the residuals (06-signed-grid's output), their Jacobian and
# the loss's Hessian blocks, by hand (docs/outputs.md). r_i = sign(t_i) − Σ_j x[j]·p_ij
# with p_ij = t_i^j as the loop carries it, so
#     ∂r_i/∂x[j] = −p_ij,   ∂r_i/∂w[k] = 0,
#     ∂²L/∂x[j]∂x[k] = 2 Σ_i w[i]·p_ij·p_ik,   ∂²L/∂w[i]∂w[k] = 0 (L is linear in w).


def outputs(algorithm: str, arrays, params=None) -> dict[str, np.ndarray]:
    """The residuals `{"r": (n,)}`, each as the loop computes it."""
    _check(algorithm)
    x = np.asarray(arrays["x"], dtype=np.float64).tolist()
    n = np.shape(arrays["w"])[0]
    return {"r": np.array([r for r, _ in _residuals(x, n)])}


def jacobian(algorithm: str, arrays, params=None) -> dict[str, np.ndarray]:
    """`{"r::x": ∂r/∂x (n, m), "r::w": ∂r/∂w (n, n)}`: rows the output's elements, columns
    the array's (both in C order)."""
    _check(algorithm)
    x = np.asarray(arrays["x"], dtype=np.float64).tolist()
    n = np.shape(arrays["w"])[0]
    by_x = np.array([[-p for p in powers] for _, powers in _residuals(x, n)])
    return {"r::x": by_x, "r::w": np.zeros((n, n))}


def hessian(algorithm: str, arrays, params=None) -> dict[str, np.ndarray]:
    """Each wrt array's own Hessian block: `{"x": (m, m), "w": (n, n)}`."""
    _check(algorithm)
    x = np.asarray(arrays["x"], dtype=np.float64).tolist()
    w = np.asarray(arrays["w"], dtype=np.float64).tolist()
    powers = [p for _, p in _residuals(x, len(w))]
    m = len(x)
    xx = [
        [
            2.0 * math.fsum(wi * p[j] * p[k] for wi, p in zip(w, powers, strict=True))
            for k in range(m)
        ]
        for j in range(m)
    ]
    return {"x": np.array(xx), "w": np.zeros((len(w), len(w)))}
