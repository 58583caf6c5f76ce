"""30-ports: the Julia package MyPorts (`MyPorts/src/MyPorts.jl`) as the reference of a
JAX port: `L = Σ (Mˢx − y)²`, M the periodic smoothing `(x[i-1] + 2x[i] + x[i+1]) / 4`
applied S times. Three Julia variants of one kernel with different gradients (Enzyme,
ForwardDiff through DifferentiationInterface, the adjoint written by hand) are judged
against each other and against JAX's."""

import jax.numpy as jnp
import numpy as np

import weanj


def smoothed(v, S):
    for _ in range(S):
        v = (jnp.roll(v, 1) + 2 * v + jnp.roll(v, -1)) / 4
    return v


def misfit(x, y, S):
    """Σ (Mˢx − y)², the JAX port of MyPorts.misfit."""
    return jnp.sum((smoothed(x, S) - y) ** 2)


def inputs(seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(16), "y": rng.standard_normal(16)}


ex = weanj.register_example(
    weanj.Example(
        name="30-ports",
        arrays=("x", "y"),
        wrt="x",
        params=(weanj.Param("S", default=3),),
        generate=inputs,
    )
)
weanj.jax_variant(ex, "jax-ports", family="ports", loss=misfit)
mine = dict(family="ports", package="MyPorts", loss="MyPorts.misfit")
weanj.julia_variant(ex, "julia-ports", **mine)
weanj.julia_variant(ex, "julia-ports-forwarddiff", ad="forwarddiff", **mine)
weanj.julia_variant(ex, "julia-ports-adjoint", gradient="MyPorts.misfit_adjoint", **mine)
