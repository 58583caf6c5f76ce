"""The kernels `detection.py` plants errors into: one JAX-AD variant's loss of each gallery
example on the gallery's shared inputs, and two kernels of its own whose three `wrt`
arrays differ in curvature by orders of magnitude (a tanh MLP and a nonlinear heat
stencil), where one array's curvature could hide another's error.

A `Kernel` is what a planted example needs: the loss (`loss(*arrays, *params)`), the
arrays in call order, the parameters, and the example's own check policies (its
`TaylorPolicy` per array and its kink mask, `FDPolicy`), so that the planted examples are
checked exactly as the gallery example is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import weanj

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Kernel:
    """One loss and its inputs, with the check policies of the example it comes from."""

    name: str
    title: str
    loss: Callable  # loss(*arrays, *params), traceable by JAX
    arrays: dict[str, np.ndarray]  # in call order
    wrt: tuple[str, ...]
    params: tuple[weanj.Param, ...] = ()
    values: dict[str, Any] = field(default_factory=dict)  # the parameters' values
    taylor: Any = field(default_factory=weanj.TaylorPolicy)
    fd: weanj.FDPolicy = field(default_factory=weanj.FDPolicy)

    def policy(self, array: str) -> weanj.TaylorPolicy:
        """The Taylor policy of `array`, as `Example.taylor_for` reads it."""
        if isinstance(self.taylor, dict):
            return self.taylor.get(array, weanj.TaylorPolicy())
        return self.taylor

    def mask(self, array: str) -> np.ndarray | None:
        """The example's kink mask of `array` on these inputs (None: every entry moves)."""
        if self.fd.mask is None:
            return None
        given = self.fd.mask(self.arrays, self.values).get(array)
        if given is None or np.all(given):
            return None
        return np.asarray(given, bool)

    def args(self, arrays: dict[str, np.ndarray] | None = None) -> tuple:
        """The loss's positional arguments: these arrays (default: the kernel's), then the
        parameters."""
        arrays = self.arrays if arrays is None else arrays
        return (*(arrays[a] for a in self.arrays), *(self.values[p.name] for p in self.params))


# --- the gallery: one JAX-AD variant of each example ----------------------------------------

# (example, its module, the loss of the variant used: plain JAX AD, no custom gradient).
# 02-gauss-seidel's red/black port rather than the lexicographic one: the same kind of
# loss, and its gradient takes milliseconds rather than seconds.
GALLERY = {
    "01-jacobi": ("jacobi", "jacobi_loss", "jax-jacobi"),
    "02-gauss-seidel": ("gauss_seidel", "rb_loss", "jax-rb"),
    "03-advection": ("advection", "muscl_loss", "jax-muscl"),
    "04-tridiagonal": ("tridiagonal", "thomas_loss", "jax-thomas"),
    "05-deposition": ("deposition", "scatter_loss", "jax-scatter"),
    "06-signed-grid": ("signed_grid", "integer_loss", "jax-signfit-integer"),
}


def gallery(name: str) -> Kernel:
    """The gallery example `name`'s JAX-AD loss (`GALLERY`) on its committed shared
    inputs (`shared_inputs/NAME.h5`), with its Taylor policy and kink mask."""
    module_name, loss_name, variant = GALLERY[name]
    module = importlib.import_module(f"weanj.examples.{module_name}")
    ex = module.EXAMPLE
    shared = weanj.load_inputs(ex, path=REPO / "shared_inputs" / f"{name}.h5")
    return Kernel(
        name=name,
        title=f"{variant}'s loss",
        loss=getattr(module, loss_name),
        arrays={a: np.asarray(shared[a]) for a in ex.arrays},
        wrt=ex.wrt_names,
        params=ex.params,
        values={p.name: shared[p.name] for p in ex.params},
        taylor=dict(ex.taylor) if isinstance(ex.taylor, dict) else ex.taylor,
        fd=ex.fd,
    )


# --- two kernels of our own, three wrt arrays of very different curvature --------------------


def mlp(n: int = 32, d: int = 4, h: int = 16) -> Kernel:
    """`Σ (tanh(X·W1ᵀ + b1)·W2ᵀ − Y)²` over n samples: weights W1 (h, d) and W2 (1, h) of
    order one, and a bias b1 (h,) of norm about 1e-3, whose own steps (1e-2·‖b1‖) bend
    the loss by far less than the weights' do."""
    rng = np.random.default_rng(69)
    arrays = {
        "W1": rng.standard_normal((h, d)) / np.sqrt(d),
        "b1": 3e-4 * rng.standard_normal(h),
        "W2": rng.standard_normal((1, h)) / np.sqrt(h),
        "X": rng.standard_normal((n, d)),
        "Y": rng.standard_normal((n, 1)),
    }

    def loss(W1, b1, W2, X, Y):
        import jax.numpy as jnp

        return jnp.sum((jnp.tanh(X @ W1.T + b1) @ W2.T - Y) ** 2)

    return Kernel("mlp", f"tanh MLP, {n} samples, {d}→{h}→1", loss, arrays, ("W1", "b1", "W2"))


def heat(n: int = 12, steps: int = 20) -> Kernel:
    """A 2-D nonlinear heat stencil, `u ← u + 0.2·k·(1 + u²)·Δu + 0.01·s`, `steps` explicit
    steps on a periodic n×n grid from u0, then `Σ (u − uobs)²`: the initial field u0 of
    order one, the conductivity k ≈ 0.1 and a small source s (≈ 1e-2), which enters each
    step linearly."""
    rng = np.random.default_rng(70)
    arrays = {
        "u0": rng.random((n, n)),
        "k": 0.1 + 0.05 * rng.random((n, n)),
        "s": 1e-2 * rng.random((n, n)),
        "uobs": rng.random((n, n)),
    }

    def loss(u0, k, s, uobs, T):
        import jax
        import jax.numpy as jnp

        def step(u, _):
            lap = (
                jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1)
            ) - 4 * u
            return u + 0.2 * k * (1 + u * u) * lap + 0.01 * s, None

        u, _ = jax.lax.scan(step, u0, None, length=T)
        return jnp.sum((u - uobs) ** 2)

    return Kernel(
        "heat",
        f"nonlinear heat stencil, {n}×{n}, {steps} steps",
        loss,
        arrays,
        ("u0", "k", "s"),
        params=(weanj.Param("T", default=steps),),
        values={"T": steps},
    )


OWN = {"mlp": mlp, "heat": heat}
KERNELS = (*GALLERY, *OWN)


def kernel(name: str, small: bool = False) -> Kernel:
    """A kernel by name (`KERNELS`); `small`: the own kernels at the tests' tiny sizes."""
    if name in OWN:
        sizes = {"mlp": dict(n=12, d=3, h=6), "heat": dict(n=6, steps=8)}
        return OWN[name](**(sizes[name] if small else {}))
    return gallery(name)
