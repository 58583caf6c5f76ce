"""An independent reference for 04-tridiagonal: plain Python loops, docs/DESIGN.md's order.

Written from docs/DESIGN.md alone, sharing no code with weanj. Per row of the (m, n) arrays
(0-based k), in exactly this order, in IEEE float64 Python arithmetic:

    cp[0] = c[0]/b[0];  dp[0] = d[0]/b[0]
    for k = 1..n-1:  w = b[k] - a[k]*cp[k-1];  cp[k] = c[k]/w (k <= n-2);
                     dp[k] = (d[k] - a[k]*dp[k-1])/w
    x[n-1] = dp[n-1];  for k = n-2 down to 0:  x[k] = dp[k] - cp[k]*x[k+1]

and the loss `Σ (x - xobs)²`, summed exactly (`math.fsum`). The gradient with respect to
a, b, c, d is the reverse mode of these very loops, written out by hand below (no
λ = A⁻ᵀx̄ formula: that is what `jax-thomas-adjoint` uses, and this reference should not
share its derivation); `test_tridiagonal.py` checks it against central differences of
`loss` and against the dense-matrix formula `dense_gradient`.

Python loops: for small m, n only.
"""

from __future__ import annotations

import math

import numpy as np

from ..helpers import central_differences

ALGORITHMS = {"thomas": "thomas"}
ARRAYS = ("a", "b", "c", "d", "xobs")
WRT = ("a", "b", "c", "d")


def _dominant(rng: np.random.Generator, m: int, n: int, margin: float) -> dict[str, np.ndarray]:
    """Random strictly dominant systems; `a[:, 0]` and `c[:, n-1]` hold values that are
    not part of any system (nonzero on purpose: every implementation must ignore them)."""
    a = rng.standard_normal((m, n))
    c = rng.standard_normal((m, n))
    inner_a, inner_c = np.abs(a), np.abs(c)
    inner_a[:, 0] = 0.0
    inner_c[:, n - 1] = 0.0
    sign = rng.choice([-1.0, 1.0], (m, n))
    b = sign * (inner_a + inner_c + margin + rng.uniform(0.0, 1.0, (m, n)))
    d = rng.standard_normal((m, n))
    xobs = 0.5 * rng.standard_normal((m, n))
    return {"a": a, "b": b, "c": c, "d": d, "xobs": xobs}


def small_inputs(seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """3 systems of size 6 (tiny: every variant runs on it several times, also op by op)."""
    return _dominant(np.random.default_rng(20261204 + seed), 3, 6, 0.5), {}


def sized_inputs(m: int, n: int, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """m random dominant systems of size n (margin 0.3), e.g. the 1×1 and 2×2 edge cases."""
    return _dominant(np.random.default_rng(20261205 + 1000 * seed + 10 * m + n), m, n, 0.3), {}


def random_inputs(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Inputs never seen (issue 14, acceptance 1): m in 1..8, n in 2..40, margin 0.1..1."""
    m = int(rng.integers(1, 9))
    n = int(rng.integers(2, 41))
    return _dominant(rng, m, n, float(rng.uniform(0.1, 1.0))), {}


def _check(algorithm: str) -> None:
    if algorithm != "thomas":
        raise ValueError(f"no reference algorithm {algorithm!r} (known: thomas)")


def _rows(arrays) -> tuple[list[list[float]], ...]:
    return tuple(np.asarray(arrays[k], dtype=np.float64).tolist() for k in ("a", "b", "c", "d"))


def _thomas_row(a, b, c, d):
    """One system: (cp, dp, w, x) as lists, w[0] = b[0]; cp[n-1] is never computed."""
    n = len(b)
    cp, dp, w, x = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    w[0] = b[0]
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for k in range(1, n):
        w[k] = b[k] - a[k] * cp[k - 1]
        if k <= n - 2:
            cp[k] = c[k] / w[k]
        dp[k] = (d[k] - a[k] * dp[k - 1]) / w[k]
    x[n - 1] = dp[n - 1]
    for k in range(n - 2, -1, -1):
        x[k] = dp[k] - cp[k] * x[k + 1]
    return cp, dp, w, x


def solve(arrays) -> np.ndarray:
    """x (m, n), the Thomas loops' solution of every row's system."""
    a, b, c, d = _rows(arrays)
    return np.array([_thomas_row(a[r], b[r], c[r], d[r])[3] for r in range(len(b))])


def loss(algorithm: str, arrays, params=None) -> float:
    """`Σ (x - xobs)²`, summed exactly."""
    _check(algorithm)
    x = solve(arrays)
    xobs = np.asarray(arrays["xobs"], dtype=np.float64)
    return math.fsum(float(v) ** 2 for v in (x - xobs).ravel())


def gradient(algorithm: str, arrays, params=None) -> dict[str, np.ndarray]:
    """∂L/∂a, ∂L/∂b, ∂L/∂c, ∂L/∂d by the reverse mode of the loops, by hand.

    Per row, seeded with x̄ = 2(x - xobs), undoing the statements in reverse order:

    - `x[k] = dp[k] - cp[k]*x[k+1]` (k = 0..n-2 ascending, the reverse of the loop):
      `dp̄[k] += x̄[k]`, `cp̄[k] -= x̄[k]*x[k+1]`, `x̄[k+1] -= x̄[k]*cp[k]`;
      then `x[n-1] = dp[n-1]`: `dp̄[n-1] += x̄[n-1]`.
    - k = n-1 down to 1: `dp[k] = (d[k] - a[k]*dp[k-1])/w`, with t = dp̄[k]/w:
      `d̄[k] += t`, `ā[k] -= t*dp[k-1]`, `dp̄[k-1] -= t*a[k]`, `w̄ -= t*dp[k]`;
      `cp[k] = c[k]/w` (k <= n-2), with s = cp̄[k]/w: `c̄[k] += s`, `w̄ -= s*cp[k]`;
      `w = b[k] - a[k]*cp[k-1]`: `b̄[k] += w̄`, `ā[k] -= w̄*cp[k-1]`, `cp̄[k-1] -= w̄*a[k]`.
    - `cp[0] = c[0]/b[0]`, `dp[0] = d[0]/b[0]`: `c̄[0] += cp̄[0]/b[0]`,
      `d̄[0] += dp̄[0]/b[0]`, `b̄[0] -= (cp̄[0]*cp[0] + dp̄[0]*dp[0])/b[0]`.

    `a[:, 0]` and `c[:, n-1]` are never read, so their gradient stays zero.
    """
    _check(algorithm)
    a, b, c, d = _rows(arrays)
    xobs = np.asarray(arrays["xobs"], dtype=np.float64).tolist()
    m, n = len(b), len(b[0])
    out = {name: np.zeros((m, n)) for name in WRT}
    for r in range(m):
        cp, dp, w, x = _thomas_row(a[r], b[r], c[r], d[r])
        abar, bbar, cbar, dbar = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
        xbar = [2.0 * (x[k] - xobs[r][k]) for k in range(n)]
        cpbar, dpbar = [0.0] * n, [0.0] * n
        for k in range(0, n - 1):
            dpbar[k] += xbar[k]
            cpbar[k] -= xbar[k] * x[k + 1]
            xbar[k + 1] -= xbar[k] * cp[k]
        dpbar[n - 1] += xbar[n - 1]
        for k in range(n - 1, 0, -1):
            wbar = 0.0
            t = dpbar[k] / w[k]
            dbar[k] += t
            abar[k] -= t * dp[k - 1]
            dpbar[k - 1] -= t * a[r][k]
            wbar -= t * dp[k]
            if k <= n - 2:
                s = cpbar[k] / w[k]
                cbar[k] += s
                wbar -= s * cp[k]
            bbar[k] += wbar
            abar[k] -= wbar * cp[k - 1]
            cpbar[k - 1] -= wbar * a[r][k]
        cbar[0] += cpbar[0] / b[r][0]
        dbar[0] += dpbar[0] / b[r][0]
        bbar[0] -= (cpbar[0] * cp[0] + dpbar[0] * dp[0]) / b[r][0]
        for name, g in zip(WRT, (abar, bbar, cbar, dbar), strict=True):
            out[name][r] = g
    return out


def matrix(arrays, r: int) -> np.ndarray:
    """The dense n×n matrix of system r (a[r, 0] and c[r, n-1] left out)."""
    a, b, c = (np.asarray(arrays[k], dtype=np.float64)[r] for k in ("a", "b", "c"))
    return np.diag(b) + np.diag(a[1:], -1) + np.diag(c[:-1], 1)


def dense_gradient(arrays) -> dict[str, np.ndarray]:
    """The exact-arithmetic gradient by dense solves: λ = A⁻ᵀ 2(x - xobs) with
    x = A⁻¹ d, then d̄ = λ, b̄ = -λx, ā[k] = -λ[k]x[k-1], c̄[k] = -λ[k]x[k+1]."""
    d = np.asarray(arrays["d"], dtype=np.float64)
    xobs = np.asarray(arrays["xobs"], dtype=np.float64)
    m, n = d.shape
    out = {name: np.zeros((m, n)) for name in WRT}
    for r in range(m):
        A = matrix(arrays, r)
        x = np.linalg.solve(A, d[r])
        lam = np.linalg.solve(A.T, 2.0 * (x - xobs[r]))
        out["d"][r] = lam
        out["b"][r] = -lam * x
        out["a"][r, 1:] = -lam[1:] * x[:-1]
        out["c"][r, :-1] = -lam[:-1] * x[1:]
    return out


def fd_gradient(arrays, h: float = 1e-5) -> dict[str, np.ndarray]:
    """Central differences of `loss`, one entry at a time (truncation ~ h², rounding
    ~ eps·L/h: about 1e-10 relative at h = 1e-5 on well-dominated systems)."""
    return {
        name: central_differences(
            lambda v, name=name: loss("thomas", {**arrays, name: v}), arrays[name], h
        )
        for name in WRT
    }
