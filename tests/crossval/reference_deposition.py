"""An independent reference for 05-deposition: plain Python loops over Python floats.

Written straight from docs/DESIGN.md (05-deposition), sharing no code with weanj: for each
particle p in order, `gx = pos[p,0]*n − 0.5`, `i0 = floor(gx)`, `fx = gx − i0` (likewise
along axis 1), all indices mod n, then the four corners in the order (i0,j0), (i1,j0),
(i0,j1), (i1,j1), added into ρ from ρ = 0. Python floats are IEEE doubles and Python
never fuses a multiply and an add, so ρ here is the loop's to the last bit.

The gradient is derived by hand from the same loop (`gradient`), with floor's derivative
zero: on a kink (gx integral, fx = 0) it is the derivative of the cell the particle is
assigned to, i.e. the one-sided derivative from above. `test_deposition.py` checks it
against central differences away from the kinks and one-sided ones on them.

The contract of `tests/crossval/reference_<stem>.py`: ALGORITHMS, small_inputs,
random_inputs, loss, gradient.
"""

from __future__ import annotations

import math

import numpy as np

ALGORITHMS = {"cic": "cic"}

# Corner order of the loop, as (di, dj): (i0,j0), (i1,j0), (i0,j1), (i1,j1).
CORNERS = ((0, 0), (1, 0), (0, 1), (1, 1))


def particle(x: float, y: float, n: int):
    """Cells and fractions of one particle: (i0, i1, fx), (j0, j1, fy), 0-based, mod n."""
    gx, gy = x * n - 0.5, y * n - 0.5
    fx0, fy0 = math.floor(gx), math.floor(gy)
    fx, fy = gx - fx0, gy - fy0
    return (fx0 % n, (fx0 + 1) % n, fx), (fy0 % n, (fy0 + 1) % n, fy)


def corner_weights(fx: float, fy: float) -> tuple[float, float, float, float]:
    """The bilinear weights, parenthesised as in docs/DESIGN.md (q multiplies them last)."""
    return ((1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy)


def contributions(pos, q, n: int):
    """The loop's updates in its order: (particle, corner, i, j, q*weight)."""
    out = []
    for p in range(len(q)):
        (i0, i1, fx), (j0, j1, fy) = particle(float(pos[p][0]), float(pos[p][1]), n)
        cells = ((i0, j0), (i1, j0), (i0, j1), (i1, j1))
        for c, ((i, j), w) in enumerate(zip(cells, corner_weights(fx, fy), strict=True)):
            out.append((p, c, i, j, float(q[p]) * w))
    return out


def deposit(pos, q, n: int, *, order: str = "loop") -> np.ndarray:
    """ρ (n, n) from ρ = 0, adding the contributions in the loop's order, or with
    `order="corner-major"` all first corners, then all second ones, ... (the order of four
    scatters applied one after the other)."""
    updates = contributions(pos, q, n)
    if order == "corner-major":
        updates = sorted(updates, key=lambda u: (u[1], u[0]))
    elif order != "loop":
        raise ValueError(f"unknown order {order!r}")
    rho = [[0.0] * n for _ in range(n)]
    for _, _, i, j, w in updates:
        rho[i][j] += w
    return np.array(rho)


def _check(algorithm: str) -> None:
    if algorithm != "cic":
        raise ValueError(f"no reference algorithm {algorithm!r} for 05-deposition")


def loss(algorithm: str, arrays: dict, params: dict) -> float:
    """Σ (ρ − rhoobs)², summed in row-major order, float64."""
    _check(algorithm)
    rhoobs = arrays["rhoobs"]
    n = rhoobs.shape[0]
    rho = deposit(arrays["pos"], arrays["q"], n)
    total = 0.0
    for i in range(n):
        for j in range(n):
            total += (float(rho[i, j]) - float(rhoobs[i, j])) ** 2
    return total


def gradient(algorithm: str, arrays: dict, params: dict) -> dict[str, np.ndarray]:
    """∂L/∂pos and ∂L/∂q by hand.

    With r = 2(ρ − rhoobs) and r_c its value at corner c of particle p:

        ∂L/∂q[p]     = Σ_c w_c r_c          (w_c the weights of `corner_weights`)
        ∂L/∂pos[p,0] = n q[p] ((1−fy)(r_10 − r_00) + fy (r_11 − r_01))
        ∂L/∂pos[p,1] = n q[p] ((1−fx)(r_01 − r_00) + fx (r_11 − r_10))

    since ∂fx/∂pos[p,0] = n (floor contributes nothing) and the weights are bilinear.
    """
    _check(algorithm)
    pos, q, rhoobs = arrays["pos"], arrays["q"], arrays["rhoobs"]
    n = rhoobs.shape[0]
    r = 2.0 * (deposit(pos, q, n) - rhoobs)
    gpos, gq = np.zeros((len(q), 2)), np.zeros(len(q))
    for p in range(len(q)):
        (i0, i1, fx), (j0, j1, fy) = particle(float(pos[p][0]), float(pos[p][1]), n)
        r00, r10, r01, r11 = r[i0, j0], r[i1, j0], r[i0, j1], r[i1, j1]
        w = corner_weights(fx, fy)
        gq[p] = w[0] * r00 + w[1] * r10 + w[2] * r01 + w[3] * r11
        gpos[p, 0] = n * float(q[p]) * ((1 - fy) * (r10 - r00) + fy * (r11 - r01))
        gpos[p, 1] = n * float(q[p]) * ((1 - fx) * (r01 - r00) + fx * (r11 - r10))
    return {"pos": gpos, "q": gq}


def _inputs(rng: np.random.Generator, P: int, n: int, kinks: int) -> dict[str, np.ndarray]:
    pos = rng.random((P, 2))
    q = 1.0 + 0.25 * rng.standard_normal(P)
    rhoobs = (P / n**2) * (1.0 + 0.1 * rng.standard_normal((n, n)))
    # Coordinates at the double nearest to a kink line (k + 0.5)/n: exactly on it where
    # the loop's pos*n − 0.5 rounds to k (always for n a power of two), else an ulp away,
    # on either side: a variant that rounded gx differently would pick another cell.
    picks = rng.choice(P * 2, size=min(kinks, P * 2), replace=False)
    pos.reshape(-1)[picks] = (rng.integers(0, n, len(picks)) + 0.5) / n
    return {"pos": pos, "q": q, "rhoobs": rhoobs}


def small_inputs(seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """P = 12 particles on an 8×8 grid: one at the origin (i0 = j0 = −1 → 7), one at the
    largest double below 1 (i1 = j1 = 8 → 0), one with x on a kink line, one with y on
    one, one on a grid node (both), one on the wrap's kink gx = 0."""
    rng = np.random.default_rng(seed)
    arrays = _inputs(rng, 12, 8, kinks=0)
    pos = arrays["pos"]
    pos[0] = 0.0
    pos[1] = np.nextafter(1.0, 0.0)
    pos[2, 0] = 3.5 / 8
    pos[3, 1] = 6.5 / 8
    pos[4] = (1.5 / 8, 7.5 / 8)
    pos[5, 0] = 0.5 / 8
    return arrays, {}


def random_inputs(rng: np.random.Generator) -> tuple[dict, dict]:
    """P in 3..200, n in 4..16 (issue 15, acceptance 1), about 5 % of the coordinates at
    the double nearest to a kink line."""
    P, n = int(rng.integers(3, 201)), int(rng.integers(4, 17))
    return _inputs(rng, P, n, kinks=max(1, P // 10)), {}
