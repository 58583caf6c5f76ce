"""Discrete adjoints of the Poisson iterations, as `jax.custom_vjp`.

Every iteration here (Jacobi, lexicographic or red-black Gauss–Seidel) is a splitting
of the symmetric 5-point matrix A = L + Lᵀ (L: the neighbours a point reads already
updated): one sweep solves (4I − L) u^k = Lᵀ u^{k−1} + h2·θ. So u^K is affine in θ,

    u^K = Σ_{k=1..K} M^{K−k} N h2·θ,    N = (4I − L)⁻¹,  M = N Lᵀ,

and for a cotangent ū (for the loss, 2·(u^K − uobs)) the vector–Jacobian product is

    θ̄ = h2 · Σ_{m=0..K−1} Nᵀ (Mᵀ)^m ū = h2 · z_K,   (4I − Lᵀ) z_{m+1} = ū + L z_m,  z_0 = 0,

since Mᵀ = L Nᵀ lets the sum be accumulated one sweep at a time. That recursion is K
sweeps of the same iteration with the roles of L and Lᵀ exchanged and ū as the source
in every sweep: for lexicographic sweeps the reverse visiting order (a forward sweep
on the grid flipped in both axes), for red-black the colours in reverse order, and
Jacobi (L = 0) is its own transpose. The factor h2 is the one multiplying θ in the
point update; the 1/4 is inside each sweep; the sum over sweeps is carried by z.

The backward pass needs no forward state (the map is affine), so the gradient's memory
does not grow with K, and it costs one more solve. `tests/crossval/test_adjoint.py`
checks each adjoint against JAX AD of the plain variant.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax

from . import _poisson


def with_adjoint(solve: Callable, transpose_solve: Callable) -> Callable:
    """`solve` with `transpose_solve` as its discrete adjoint.

    **Arguments:**

    - `solve`: `(theta, K) -> u^K`, the padded (n+2)×(n+2) grid from u⁰ = 0.
    - `transpose_solve`: `(source, K) -> z_K`, K transposed sweeps from z = 0 whose
      point update adds `source` (an (n, n) array, not scaled by h2); padded result.

    **Returns:** `(theta, K) -> u^K` (K static) whose reverse-mode derivative is
    `h2 · transpose_solve(ū)` instead of JAX's differentiation of `solve`.
    """

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def solved(theta, K):
        return solve(theta, K)

    def forward(theta, K):
        return solve(theta, K), None  # affine in θ: nothing to keep for the backward pass

    def backward(K, _, u_bar):
        n = u_bar.shape[0] - 2
        # The boundary is fixed at zero, so cotangents on it do not reach θ.
        z = transpose_solve(u_bar[1:-1, 1:-1], K)
        return (_poisson.h2(n) * z[1:-1, 1:-1],)

    solved.defvjp(forward, backward)
    return solved
