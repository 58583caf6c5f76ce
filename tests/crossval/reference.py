"""An independent reference for the Poisson examples: plain Python loops over numpy arrays.

Written straight from the mathematics in docs/DESIGN.md, sharing no code with weanj: the
padded (n+2)×(n+2) grid, `h2 = 1/(n+1)^2`, `u⁰ = 0`, the point update

    u[i,j] ← (h2*θ[i,j] + u[i-1,j] + u[i+1,j] + u[i,j-1] + u[i,j+1]) / 4

(Julia's 1-based interior indices; numpy's `theta[i-1, j-1]` is `θ[i,j]`) and the loss
`Σ (u^K − uobs)²` over the interior. The gradient is the discrete adjoint of these very
loops, derived by hand below, and independently central finite differences of the loop
code (exact up to rounding, since the loss is quadratic in θ). A dense solve of the
discrete Poisson system gives the fixed point all three algorithms converge to.

Python loops cost O(K·n²) interpreted steps: for small n only.
"""

from __future__ import annotations

import math

import numpy as np

from ..helpers import central_differences

ALGORITHMS = ("jacobi", "lex", "rb")


def h2(n: int) -> float:
    return 1.0 / (n + 1) ** 2


def _interior_neighbours(i: int, j: int, n: int) -> list[tuple[int, int]]:
    """The neighbours of (i, j) that are unknowns; boundary values are fixed zeros."""
    return [
        (a, b)
        for a, b in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1))
        if 1 <= a <= n and 1 <= b <= n
    ]


def sweep_order(algorithm: str, n: int) -> list[tuple[int, int]]:
    """The order in which a Gauss–Seidel sweep updates the points, in place.

    `lex`: the Julia loop `for j in 1:n, i in 1:n` (i fastest). `rb`: all red points
    ((i+j) even), then all black; within a colour the order does not matter, since a
    red point's neighbours are all black and vice versa.
    """
    lex = [(i, j) for j in range(1, n + 1) for i in range(1, n + 1)]
    if algorithm == "lex":
        return lex
    if algorithm == "rb":
        return [p for p in lex if sum(p) % 2 == 0] + [p for p in lex if sum(p) % 2 == 1]
    raise ValueError(f"no sweep order for {algorithm!r}")


def _point(u, theta, hh: float, i: int, j: int) -> float:
    # Exactly docs/DESIGN.md's order of additions, in IEEE float64 Python arithmetic.
    return (hh * theta[i - 1][j - 1] + u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1]) / 4


def solve(algorithm: str, theta, K: int) -> np.ndarray:
    """u^K, the padded (n+2)×(n+2) grid after K iterations (sweeps) from u⁰ = 0."""
    theta = np.asarray(theta, dtype=np.float64).tolist()
    n = len(theta)
    hh = h2(n)
    u = [[0.0] * (n + 2) for _ in range(n + 2)]
    for _ in range(K):
        if algorithm == "jacobi":
            old = [row[:] for row in u]
            for j in range(1, n + 1):
                for i in range(1, n + 1):
                    u[i][j] = _point(old, theta, hh, i, j)
        else:
            for i, j in sweep_order(algorithm, n):
                u[i][j] = _point(u, theta, hh, i, j)
    return np.array(u)


def loss(algorithm: str, theta, uobs, K: int) -> float:
    """`Σ (u^K[i,j] − uobs[i,j])²` over the interior, summed exactly (`math.fsum`)."""
    u = solve(algorithm, theta, K)
    uobs = np.asarray(uobs, dtype=np.float64)
    n = uobs.shape[0]
    return math.fsum(
        (float(u[i, j]) - float(uobs[i - 1, j - 1])) ** 2
        for j in range(1, n + 1)
        for i in range(1, n + 1)
    )


def adjoint_gradient(algorithm: str, theta, uobs, K: int) -> np.ndarray:
    """∂L/∂θ by the discrete adjoint of `solve`'s loops, run backwards by hand.

    Every update is affine in (u, θ) with constant coefficients, so the backward pass
    needs no stored iterates. With ū = ∂L/∂u, seeded by `2(u^K − uobs)`:

    - an in-place update `u[p] ← (h2 θ[p] + Σ_q u[q]) / 4`, undone in reverse order:
      `a = ū[p]; ū[p] = 0; θ̄[p] += h2·a/4; ū[q] += a/4` for each interior neighbour q
      (the update overwrote u[p], so the old u[p] has no other influence);
    - a Jacobi iteration `u_new = f(u_old)`: `ū_old[q] += ū_new[p]/4` for each interior
      neighbour q of every p, `θ̄[p] += h2·ū_new[p]/4`.
    """
    theta = np.asarray(theta, dtype=np.float64)
    uobs = np.asarray(uobs, dtype=np.float64)
    n = theta.shape[0]
    hh = h2(n)
    u = solve(algorithm, theta, K)
    ubar = np.zeros((n + 2, n + 2))
    ubar[1:-1, 1:-1] = 2.0 * (u[1:-1, 1:-1] - uobs)
    ubar = ubar.tolist()
    tbar = [[0.0] * n for _ in range(n)]
    for _ in range(K):
        if algorithm == "jacobi":
            older = [[0.0] * (n + 2) for _ in range(n + 2)]
            for j in range(1, n + 1):
                for i in range(1, n + 1):
                    a = ubar[i][j]
                    tbar[i - 1][j - 1] += hh * a / 4
                    for p, q in _interior_neighbours(i, j, n):
                        older[p][q] += a / 4
            ubar = older
        else:
            for i, j in reversed(sweep_order(algorithm, n)):
                a = ubar[i][j]
                ubar[i][j] = 0.0
                tbar[i - 1][j - 1] += hh * a / 4
                for p, q in _interior_neighbours(i, j, n):
                    ubar[p][q] += a / 4
    return np.array(tbar)


def fd_gradient(algorithm: str, theta, uobs, K: int, h: float = 1.0) -> np.ndarray:
    """∂L/∂θ by central differences of `loss`, one coordinate at a time.

    L is quadratic in θ, so `(L(θ+h e) − L(θ−h e)) / 2h` has no truncation error and a
    large `h` keeps the rounding error (≈ eps·L/h) small. 2n² loss evaluations.
    """
    return central_differences(lambda t: loss(algorithm, t, uobs, K), theta, h)


def poisson_matrix(n: int) -> np.ndarray:
    """`A` of the discrete Poisson system `A u = h2 θ` (`4u − Σ neighbours`), n²×n².

    Unknowns in numpy's C order of `theta`: `θ[i,j]` (1-based) is entry `(i-1)*n + (j-1)`.
    """
    A = np.zeros((n * n, n * n))
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            row = (i - 1) * n + (j - 1)
            A[row, row] = 4.0
            for p, q in _interior_neighbours(i, j, n):
                A[row, (p - 1) * n + (q - 1)] = -1.0
    return A


def fixed_point(theta) -> np.ndarray:
    """The solution u* (interior, (n, n)) of the discrete Poisson system, by a dense solve."""
    theta = np.asarray(theta, dtype=np.float64)
    n = theta.shape[0]
    return np.linalg.solve(poisson_matrix(n), h2(n) * theta.ravel()).reshape(n, n)


def fixed_point_gradient(theta, uobs) -> np.ndarray:
    """∂/∂θ of `Σ (u* − uobs)²`: `2 h2 A⁻¹ (u* − uobs)` (A is symmetric)."""
    theta = np.asarray(theta, dtype=np.float64)
    n = theta.shape[0]
    r = fixed_point(theta) - np.asarray(uobs, dtype=np.float64)
    return 2.0 * h2(n) * np.linalg.solve(poisson_matrix(n), r.ravel()).reshape(n, n)
