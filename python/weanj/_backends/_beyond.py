"""A check's one program where the example asks for more than the gradient (docs/outputs.md):
its named outputs, their Jacobian's dot-product numbers and, at the second order, the
Hessian-vector products of each `wrt` array.

It is `_checking`'s program grown, not a second one: one compiled program per (variant,
dtype, device) still serves the evaluation, the Taylor steps and the loss floor. A call
`full(*args, seeds, asked)` computes what `asked` says:

- `LOSS_ONLY`: the loss, and the outputs with it (a forward pass computes them anyway);
- `GRADIENT`: the loss and its gradient alone (a forward and a backward: what the rounding
  level's perturbed runs and the second-order Taylor test's steps ask);
- `DERIVATIVES`: `jax.linearize` of `x -> (loss, outputs)`: the gradient is its map's
  transpose at `(1, 0)`; each wrt array's tangent `v_a` pushed forward gives the loss's
  directional derivative (the jvp check's) and each output's `J·v_a`, of which `⟨w, J·v_a⟩`
  is kept (`w` the output's seeded weight, `seeds["weights"]`); one more transpose per
  output, at `(0, w)`, gives `Jᵀ·w`, kept (each wrt array's part, compared across
  variants) with `⟨(Jᵀ·w)_a, v_a⟩`: the dot-product test's two sides, at one backward per
  output and no forward beyond the jvp check's;
- `SECOND` (an order-2 program): the derivatives, and each wrt array's own Hessian block
  times its two seeded directions, `H_aa·v_a` and `H_aa·u_a` (`seeds["second"]`), each
  by one forward-over-reverse execution (`jax.jvp` of the variant's gradient: its own
  adjoint, a `custom_vjp`'s backward included, is what gets differentiated).

Where the loss cannot be pushed forward (a `custom_vjp` inside), the `reverse` program
serves as in `_checking`: `jax.vjp` of `x -> (loss, outputs)` gives the gradient and the
outputs' `Jᵀ·w` (the dot-product test borrows `⟨w, J·v⟩` from a family member's forward
mode), and forward-over-reverse still gives the Hessian-vector products. An order-2
program is built the first time a run asks for the second order (`BeyondRuns`); where it
cannot be traced (a backend whose gradient has no forward mode, as Enzyme-JAX's), the
first-order program serves and the second order is refused, saying why.
"""

from __future__ import annotations

from collections.abc import Callable

from .._model import Example
from ._checking import forward_mode_found, scalar_loss

LOSS_ONLY, GRADIENT, DERIVATIVES, SECOND = 0, 1, 2, 3


def _parts(example: Example, loss: Callable, args: list):
    """`(F, primals)`: `F(*wrt values) -> (loss, {output: array})` of the variant's loss
    with the wrt arrays moved, and the wrt arrays at x."""
    positions, declared = example.wrt_positions, bool(example.outputs)

    def evaluated(moved):
        found = loss(*moved)
        if not declared:
            return found, {}
        return found[0], dict(found[1])

    def F(*values):
        moved = list(args)
        for i, value in zip(positions, values, strict=True):
            moved[i] = value
        return evaluated(moved)

    return F, tuple(args[i] for i in positions), evaluated


def _sum(a, b, like):
    """`[Σ a·b, Σ |a·b|]` (the inner product and the size of its terms), in the loss's
    dtype (every branch of the program returns one structure)."""
    import jax.numpy as jnp

    terms = a * b
    return jnp.stack([jnp.sum(terms), jnp.sum(jnp.abs(terms))]).astype(like.dtype)


def _hvps(example: Example, gradient_of: Callable, primals: tuple, seeds: dict) -> dict:
    """`{"hvp": {a: H_aa·v_a}, "hvp_u": {a: H_aa·u_a}}`: the derivative of array a's own
    gradient along each of its two directions, the other arrays still."""
    import jax

    names = example.wrt_names
    out: dict[str, dict] = {"hvp": {}, "hvp_u": {}}
    for i, a in enumerate(names):

        def own(x, i=i, a=a):
            moved = list(primals)
            moved[i] = x
            return gradient_of(moved)[a]

        for key, tangent in (("hvp", seeds["tangents"][a]), ("hvp_u", seeds["second"][a])):
            out[key][a] = jax.jvp(own, (primals[i],), (tangent,))[1]
    return out


def beyond_program(
    example: Example,
    loss: Callable,
    in_convention: Callable,
    gradient: Callable | None = None,
    order: int = 1,
):
    """`(full, reverse)`, not yet jitted (module docstring): `full(*args, seeds, asked) ->
    (loss, gradient, directional, beyond)`, `reverse(*args, seeds, asked) -> (loss,
    gradient, beyond)`; `beyond` `{"outputs", "vjp", "pullback", "jvp" (full only), "hvp",
    "hvp_u" (order 2)}`; `seeds` `{"tangents": {array: v}, "weights": {output: w}, "second":
    {array: u}}`."""
    program = _Program(example, loss, in_convention, gradient, order)
    return program.full, program.reverse


class _Program:
    """The pieces of `beyond_program`'s two programs (each traced by `jax.jit`)."""

    def __init__(self, example, loss, in_convention, gradient, order):
        self.example, self.loss, self.in_convention = example, loss, in_convention
        self.gradient, self.order, self.names = gradient, order, example.wrt_names

    def gradient_of(self, args):
        """The variant's gradient as a function of the wrt arrays: what the Hessian is of
        (its own adjoint where it has one: a hand-written gradient, a `custom_vjp`)."""
        import jax

        ex = self.example

        def of(moved_primals):
            moved = list(args)
            for i, value in zip(ex.wrt_positions, moved_primals, strict=True):
                moved[i] = value
            if self.gradient is not None:
                return ex.gradients(self.gradient(*moved))
            F, primals, _ = _parts(ex, self.loss, moved)
            g = jax.grad(lambda *p: F(*p)[0], argnums=tuple(range(len(primals))))(*primals)
            return dict(zip(self.names, g, strict=True))

        return of

    def own_gradient(self, args, value, outs, transpose):
        """The gradient: a hand-written one, else the transpose of the map at `(1, 0)`."""
        import jax
        import jax.numpy as jnp

        if self.gradient is not None:
            return self.gradient(*args)
        no_outputs = jax.tree.map(jnp.zeros_like, outs)
        return self.in_convention(transpose((jnp.ones_like(value), no_outputs)))

    def zero_gradient(self, args, primals):
        import jax
        import jax.numpy as jnp

        if self.gradient is not None:  # its own form (the parameters stay static)
            shapes = jax.eval_shape(lambda: self.gradient(*args))
            return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
        return self.in_convention(tuple(jnp.zeros_like(p) for p in primals))

    def vjps(self, transpose, value, outs, seeds) -> dict:
        """`{"vjp": ..., "pullback": ...}`: each output's `Jᵀ·w` per wrt array (its
        `pullback`, compared across variants) and `[⟨(Jᵀ·w)_a, v_a⟩, the size of its
        terms]` (the dot-product test's): one backward per output, at `(0, w)`."""
        import jax
        import jax.numpy as jnp

        no_outputs = jax.tree.map(jnp.zeros_like, outs)
        dots, pulled = {}, {}
        for o in outs:
            weight = {k: seeds["weights"][o] if k == o else v for k, v in no_outputs.items()}
            back = transpose((jnp.zeros_like(value), weight))
            dots[o] = {
                a: _sum(back[i], seeds["tangents"][a], value) for i, a in enumerate(self.names)
            }
            pulled[o] = dict(zip(self.names, back, strict=True))
        return {"vjp": dots, "pullback": pulled}

    def zeros(self, value, outs, primals, with_jvp):
        """What a loss-only call returns beyond its loss (the same structure, zeros)."""
        import jax.numpy as jnp

        zero = jnp.zeros(2, value.dtype)
        found = {
            "outputs": outs,
            "vjp": {o: {a: zero for a in self.names} for o in outs},
            "pullback": {
                o: {a: jnp.zeros_like(p) for a, p in zip(self.names, primals, strict=True)}
                for o in outs
            },
        }
        if with_jvp:
            found["jvp"] = {o: {a: zero for a in self.names} for o in outs}
        return found

    def with_second(self, found, args, primals, seeds, asked_second: bool):
        """`found`, and at the second order the Hessian products (zeros where not asked)."""
        import jax.numpy as jnp

        if self.order < 2:
            return found
        if asked_second:
            return {**found, **_hvps(self.example, self.gradient_of(args), primals, seeds)}
        zeros = {a: jnp.zeros_like(p) for a, p in zip(self.names, primals, strict=True)}
        return {**found, "hvp": zeros, "hvp_u": dict(zeros)}

    def switch(self, asked, loss_alone, gradient_alone, derivatives):
        import jax

        branches = [loss_alone, gradient_alone, lambda: derivatives(False)]
        if self.order >= 2:
            branches.append(lambda: derivatives(True))
        return jax.lax.switch(asked, branches)

    def full(self, *call):
        import jax
        import jax.numpy as jnp

        *args, seeds, asked = call
        F, primals, evaluated = _parts(self.example, self.loss, args)

        def derivatives(second: bool):
            (value, outs), linear = jax.linearize(F, *primals)
            scalar_loss(value)
            forward_mode_found(linear, primals)
            transpose = jax.linear_transpose(linear, *primals)
            g = self.own_gradient(args, value, outs, transpose)
            directional, jvp = [], {o: {} for o in outs}
            zeros = [jnp.zeros_like(p) for p in primals]
            for i, a in enumerate(self.names):
                alone = list(zeros)
                alone[i] = seeds["tangents"][a]
                d_value, d_outs = linear(*alone)
                directional.append(d_value)
                for o in outs:
                    jvp[o][a] = _sum(seeds["weights"][o], d_outs[o], value)
            found = {"outputs": outs, **self.vjps(transpose, value, outs, seeds), "jvp": jvp}
            found = self.with_second(found, args, primals, seeds, second)
            return value, g, jnp.stack(directional), found

        def loss_alone():
            value, outs = evaluated(args)
            scalar_loss(value)
            found = self.with_second(
                self.zeros(value, outs, primals, True), args, primals, seeds, False
            )
            directional = jnp.zeros(len(self.names), value.dtype)
            return value, self.zero_gradient(args, primals), directional, found

        def gradient_alone():
            (value, outs), pullback = jax.vjp(F, *primals)
            scalar_loss(value)
            found = self.with_second(
                self.zeros(value, outs, primals, True), args, primals, seeds, False
            )
            directional = jnp.zeros(len(self.names), value.dtype)
            return value, self.own_gradient(args, value, outs, pullback), directional, found

        return self.switch(asked, loss_alone, gradient_alone, derivatives)

    def reverse(self, *call):
        import jax

        *args, seeds, asked = call
        F, primals, evaluated = _parts(self.example, self.loss, args)

        def derivatives(second: bool):
            (value, outs), pullback = jax.vjp(F, *primals)
            scalar_loss(value)
            g = self.own_gradient(args, value, outs, pullback)
            found = {"outputs": outs, **self.vjps(pullback, value, outs, seeds)}
            return value, g, self.with_second(found, args, primals, seeds, second)

        def loss_alone():
            value, outs = evaluated(args)
            scalar_loss(value)
            found = self.with_second(
                self.zeros(value, outs, primals, False), args, primals, seeds, False
            )
            return value, self.zero_gradient(args, primals), found

        def gradient_alone():
            (value, outs), pullback = jax.vjp(F, *primals)
            scalar_loss(value)
            found = self.with_second(
                self.zeros(value, outs, primals, False), args, primals, seeds, False
            )
            return value, self.own_gradient(args, value, outs, pullback), found

        return self.switch(asked, loss_alone, gradient_alone, derivatives)
