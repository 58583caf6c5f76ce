"""Toy kernels that several tests' examples share, written once.

In-process tests import them (`from .toy_kernels import ...`); `projects.write_project`
copies this file into every throwaway user project, whose example modules import it as a
user imports a helper module of their own (`from toy_kernels import ...`). So it imports
nothing of the tests (and hypothesis only where a strategy needs it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import weanj


def xy_example(name: str, **fields) -> weanj.Example:
    """An example (not yet registered) of two arrays `x` and `y`, differentiated with
    respect to `x` unless `fields` say otherwise."""
    return weanj.Example(**{"name": name, "arrays": ("x", "y"), "wrt": "x", **fields})


def random_xy(seed: int, n: int) -> dict[str, np.ndarray]:
    """x and y of length n, independent standard normals."""
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(n), "y": rng.standard_normal(n)}


# --- Σ (Mˢx − y)², M the periodic smoothing (x[i-1] + 2 x[i] + x[i+1]) / 4 ------------------


def smooth(x):
    """One sweep of the periodic smoothing M."""
    return (jnp.roll(x, 1) + 2 * x + jnp.roll(x, -1)) / 4


def smooth_loop(x, y, S):
    """Σ (Mˢx − y)², the S sweeps in a Python loop."""
    for _ in range(S):
        x = smooth(x)
    return jnp.sum((x - y) ** 2)


def smooth_scan(x, y, S):
    """Σ (Mˢx − y)², the S sweeps in a `jax.lax.scan`."""
    x, _ = jax.lax.scan(lambda x, _: (smooth(x), None), x, None, length=S)
    return jnp.sum((x - y) ** 2)


def smooth_reference(x, y, S):
    """The loss and gradient of `smooth_loop` in numpy, by hand: M = (S₊ + 2I + S₋)/4 is
    symmetric, so ∇L = 2 (Mˢ)ᵀ (Mˢx − y) = 2 Mˢ (Mˢx − y)."""

    def smoothed(v):
        for _ in range(S):
            v = (np.roll(v, 1) + 2 * v + np.roll(v, -1)) / 4
        return v

    r = smoothed(x) - y
    return float(np.sum(r**2)), smoothed(2 * r)


# --- Σ min(x, y)², written two ways that differ only at the ties x == y (the kinks) ---------


def tied_xy(seed: int) -> dict[str, np.ndarray]:
    """x and y of length 12, standard normals but for four exact ties x == y (every third)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(12)
    y = rng.standard_normal(12)
    y[::3] = x[::3]
    return {"x": x, "y": y}


def away_from_ties(arrays, params):
    """The kink mask (`weanj.FDPolicy(mask=...)`): the entries where x != y."""
    return {"x": arrays["x"] != arrays["y"]}


def min_by_branches(x, y):
    """Σ min(x, y)², min by its branches: at a tie the whole derivative 2x goes to x."""
    return jnp.sum(jnp.where(x <= y, x, y) ** 2)


def min_by_minimum(x, y):
    """Σ min(x, y)², min by `jnp.minimum`: at a tie half the derivative goes to x."""
    return jnp.sum(jnp.minimum(x, y) ** 2)


def integer_xy(draw, longest: int, largest: int) -> dict[str, np.ndarray]:
    """In a hypothesis strategy: x and y of one length from 1 to `longest`, their entries
    integers from -`largest` to `largest`, so that ties x == y happen. Drawn as a list of
    (x_i, y_i) pairs, so that shrinking drops an element of both at once (from x and y
    drawn apart it cannot always reach the single tie that fails)."""
    from hypothesis import strategies as st

    entry = st.integers(-largest, largest)
    pairs = draw(st.lists(st.tuples(entry, entry), min_size=1, max_size=longest))
    return {
        "x": np.array([p[0] for p in pairs], float),
        "y": np.array([p[1] for p in pairs], float),
    }


# --- a float32-only bug: the iterate kept in bfloat16 from the fourth sweep on --------------

COARSE_FROM = 4  # the first sweep after which a float32 run rounds its iterate to bfloat16


def smooth_coarse_late(x, y, S):
    """Σ (Mˢx − y)² as `smooth_loop`, but a float32 run rounds its iterate to bfloat16 after
    each sweep from the `COARSE_FROM`-th on (a port that "saves memory" in low precision):
    a float64 run is `smooth_loop`'s."""
    for s in range(1, S + 1):
        x = smooth(x)
        if s >= COARSE_FROM and x.dtype == jnp.float32:
            x = x.astype(jnp.bfloat16).astype(jnp.float32)
    return jnp.sum((x - y) ** 2)


# --- Σ|w − c| + Σw², evaluated just above its kinks w = c -------------------------------------

KINK_AT = np.array([0.5, -0.3, 0.8])
ABOVE_KINK = 1e-9  # how far above c the inputs lie: far less than the Taylor test's first step


def above_the_kinks(seed: int) -> dict[str, np.ndarray]:
    """w = c + 1e-9 (every entry just above its kink; the seed is not used)."""
    return {"w": KINK_AT + ABOVE_KINK}


def kinked_by_abs(w):
    """Σ|w − c| + Σw², by `jnp.abs`."""
    return jnp.sum(jnp.abs(w - KINK_AT)) + jnp.sum(w**2)


def kinked_by_branches(w):
    """Σ|w − c| + Σw², |d| by its branches."""
    d = w - KINK_AT
    return jnp.sum(jnp.where(d > 0, d, -d)) + jnp.sum(w * w)


def kinked_by_relu(w):
    """Σ|w − c| + Σw², |d| = relu(d) + relu(−d)."""
    d = w - KINK_AT
    return jnp.sum(jax.nn.relu(d) + jax.nn.relu(-d)) + jnp.sum(w**2)
