"""weanj's Julia bookkeeping of outputs and second derivatives (`julia/src/outputs.jl`,
`second_order.jl`, and the flat vectors of `gradients.jl`), transliterated line by line
into Python: each function names the Julia function it follows. A Julia array is a numpy
array with the same indices less one (as the worker passes them), so Julia's `vec(a)` is
`a.ravel(order="F")` (column-major) and `reshape(v, dims)` is `v.reshape(dims,
order="F")`. DifferentiationInterface's operators are stood in by what they compute
(its docs: `pullback` is `Jᵀ·dy`, `pushforward` `J·dx`, `hvp` `H·dx`), the Jacobian and
Hessian taken by central differences of the flat function (exact up to rounding on the
polynomial kernels of the tests). A reading of the Julia code, not a run of it
(tests/test_julia_flat_outputs.py says what is checked with it).
"""

from __future__ import annotations

import math

import numpy as np


def vec(a) -> np.ndarray:
    return np.asarray(a).ravel(order="F")


def reshape(v, dims) -> np.ndarray:
    return np.asarray(v).reshape(dims, order="F")


# --- gradients.jl ---------------------------------------------------------------------


def segment_of(x) -> tuple:
    return np.shape(x)  # a real array's `Segment{false}`: its dims


def piece(x, dims, offset: int):
    n = math.prod(dims)
    return reshape(x[offset : offset + n], dims), offset + n


def flatten(active) -> np.ndarray:
    return np.concatenate([vec(a) for a in active]) if active else np.zeros(0)


def rebuild(x, flags, segments, rest):
    out, at, segments, rest = [], 0, list(segments), list(rest)
    for flag in flags:
        if flag:
            a, at = piece(x, segments.pop(0), at)
            out.append(a)
        else:
            out.append(rest.pop(0))
    return out


def split_gradient(g, segments, at: int = 0) -> tuple:
    out = []
    for dims in segments:
        a, at = piece(g, dims, at)
        out.append(a)
    return tuple(out)


def flat_arguments(wrt, args):
    active = [a for a, flag in zip(args, wrt, strict=True) if flag]
    contexts = [a for a, flag in zip(args, wrt, strict=True) if not flag]
    segments = tuple(segment_of(a) for a in active)
    return wrt, segments, flatten(active), contexts


# --- outputs.jl -----------------------------------------------------------------------


def in_declared(found: tuple, layout: dict) -> tuple:
    return tuple(found[k - 1] for k in layout["order"])  # `order` holds 1-based places


def outputs_layout(loss, names, *args):
    L, outputs = loss(*args)
    returned = tuple(outputs)  # `keys(outputs)`: the kernel's order
    arrays = tuple(np.asarray(outputs[name]) for name in returned)
    order = tuple(returned.index(name) + 1 for name in names)  # findfirst
    layout = {"dims": tuple(np.shape(a) for a in arrays), "order": order}
    return {"value": [L], "outputs": in_declared(arrays, layout), "layout": layout}


def flat_part(o) -> np.ndarray:
    return vec(o)  # a number is `[o]`, a 0-dimensional array's vec one element alike


def flat_outputs(loss, flags, segments):
    """`FlatOutputs(loss, flags, segments)` as a function of `(x, rest)`."""

    def call(x, rest):
        L, outputs = loss(*rebuild(x, flags, segments, rest))
        return np.concatenate([[L], *(flat_part(o) for o in outputs.values())])

    return call


def cut_outputs(y, dims, at: int) -> tuple:
    out = []
    for d in dims:
        n = math.prod(d)
        out.append(reshape(y[at : at + n], d))
        at += n
    return tuple(out)


def flat_length(layout) -> int:
    return 1 + sum(math.prod(d) for d in layout["dims"])


def loss_seed(layout) -> np.ndarray:
    seed = np.zeros(flat_length(layout))
    seed[0] = 1.0
    return seed


def output_seeds(layout, weights) -> tuple:
    assert len(weights) == len(layout["dims"])
    starts = np.cumsum([1, *(math.prod(d) for d in layout["dims"])])
    seeds = [
        loss_seed(layout) if k == 0 else np.zeros(flat_length(layout))
        for k in range(len(weights) + 1)
    ]
    for k, w in enumerate(weights, start=1):
        p = layout["order"][k - 1]
        assert np.shape(w) == layout["dims"][p - 1]
        start = starts[p - 1]  # starts[p] of Julia's 1-based vector
        seeds[k][start : start + np.size(w)] = vec(w)
    return tuple(seeds)


def flat_direction(x, segments, k: int, v) -> np.ndarray:
    d = np.zeros_like(x)
    at = 0
    for i, dims in enumerate(segments, start=1):
        n = math.prod(dims)
        if i == k:
            assert np.shape(v) == dims
            d[at : at + n] = vec(v)
        at += n
    return d


def outputs_derivatives(di, loss, layout, wrt, args, tangents, weights):
    """`(value, gradients, outputs, pullbacks, pushforwards)` as outputs.jl computes them,
    `di` the stand-in for DifferentiationInterface's operators."""
    flags, segments, x, contexts = flat_arguments(wrt, args)
    flat = flat_outputs(loss, flags, segments)
    y, pulled = di.value_and_pullback(flat, x, output_seeds(layout, weights), contexts)
    by_array = [split_gradient(p, segments) for p in pulled[1:]]
    tx = tuple(flat_direction(x, segments, k, tangents[k - 1]) for k in range(1, len(segments) + 1))
    ty = di.pushforward(flat, x, tx, contexts)
    along = [in_declared(cut_outputs(t, layout["dims"], 1), layout) for t in ty]
    return {
        "value": [y[0]],
        "gradients": split_gradient(pulled[0], segments),
        "outputs": in_declared(cut_outputs(y, layout["dims"], 1), layout),
        "pullbacks": tuple(p for parts in by_array for p in parts),
        "pushforwards": tuple(p for parts in along for p in parts),
    }


# --- second_order.jl ------------------------------------------------------------------


def loss_hvps(di, loss, wrt, args, tangents, seconds) -> tuple:
    flags, segments, x, contexts = flat_arguments(wrt, args)

    def flat(x, rest):  # `FlatLoss`
        return loss(*rebuild(x, flags, segments, rest))

    A = len(segments)
    tx = []
    for i in range(1, 2 * A + 1):
        k = (i + 1) // 2
        tx.append(flat_direction(x, segments, k, tangents[k - 1] if i % 2 else seconds[k - 1]))
    tg = di.hvp(flat, x, tuple(tx), contexts)
    return tuple(split_gradient(tg[i - 1], segments)[(i + 1) // 2 - 1] for i in range(1, 2 * A + 1))


# --- DifferentiationInterface, by what its operators compute ---------------------------


class CentralDifferences:
    """`value_and_pullback`, `pushforward` and `hvp` of a flat function `f(x, rest)` by
    its Jacobian (or Hessian) of central differences with step `h`."""

    def __init__(self, h: float = 1e-2):
        self.h = h

    def jacobian(self, f, x, rest) -> np.ndarray:
        columns = []
        for k in range(x.size):
            e = np.zeros_like(x)
            e[k] = self.h
            columns.append(
                (np.atleast_1d(f(x + e, rest)) - np.atleast_1d(f(x - e, rest))) / (2 * self.h)
            )
        return np.stack(columns, axis=1)

    def value_and_pullback(self, f, x, seeds, rest):
        J = self.jacobian(f, x, rest)
        return f(x, rest), tuple(J.T @ s for s in seeds)

    def pushforward(self, f, x, tx, rest):
        J = self.jacobian(f, x, rest)
        return tuple(J @ t for t in tx)

    def hvp(self, f, x, tx, rest):
        H = self.jacobian(lambda z, r: self.jacobian(f, z, r)[0], x, rest)
        return tuple(H @ t for t in tx)
