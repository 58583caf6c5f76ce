"""The planted examples of `detection.py` (shared with `tests/test_detection.py`): a
kernel's gradient with a relative error planted into it, checked by weanj's real check,
and the reference, each array tested alone with every step walked.

**Planting.** Two examples are registered around the kernel's loss in a temporary
project, each a family of one, so that no sibling helps (the self-checks alone):

- `custom_vjp`: the loss wrapped in a `jax.custom_vjp` whose backward pass returns the
  gradient scaled by `1 + plant` (no forward mode: the jvp check is skipped, the Taylor
  test alone judges it);
- `grad=`: the plain loss with a hand-written `grad=` returning the same scaled gradient
  (the Taylor test, and the jvp check by the loss's own forward mode).

The planted relative error is an input array per `wrt` array (`plant_<name>`, not
differentiated), so one compiled program serves every error: each is a new inputs file
and one `weanj.check(..., dtype="float64", fresh=True)` of both examples, in this process
(`Bench.check`).

**The reference** is that array alone, every step walked both ways under the same
policy and kink mask (`taylor(..., walk_every_step=True)`), on the same planted gradient
(`Bench.reference`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

import numpy as np
from _detection_kernels import Kernel

import weanj
from weanj._judge._directions import random_direction
from weanj._judge._remainder import ROUNDING
from weanj._pipeline.checks._remainders import taylor, taylor_arrays
from weanj._registry import unregister_example

WAYS = ("custom_vjp", "grad=")


# --- the two planted examples and the reference --------------------------------------------


def planted_losses(kernel: Kernel):
    """`(plain loss, hand-written grad, custom_vjp loss)`, each taking the kernel's
    arrays, then one plant array per wrt array, then the parameters."""
    import jax
    import jax.numpy as jnp

    n, nw = len(kernel.arrays), len(kernel.wrt)
    at = [list(kernel.arrays).index(a) for a in kernel.wrt]

    def split(args):
        return list(args[:n]), args[n : n + nw], args[n + nw :]

    def value_and_grads(arrays, params):
        def of(*w):
            moved = list(arrays)
            for i, v in zip(at, w, strict=True):
                moved[i] = v
            return kernel.loss(*moved, *params)

        return jax.value_and_grad(of, argnums=tuple(range(nw)))(*(arrays[i] for i in at))

    def plain(*args):
        arrays, _, params = split(args)
        return kernel.loss(*arrays, *params)

    def by_hand(*args):
        arrays, plants, params = split(args)
        _, g = value_and_grads(arrays, params)
        out = tuple(gi * (1 + p) for gi, p in zip(g, plants, strict=True))
        return out[0] if nw == 1 else out

    def wrapped(*args):
        arrays, plants, params = split(args)

        @jax.custom_vjp
        def f(*inputs):
            return kernel.loss(*inputs[:n], *params)

        def forward(*inputs):
            value, g = value_and_grads(list(inputs[:n]), params)
            return value, (g, inputs)

        def backward(saved, ct):
            g, inputs = saved
            out = [jnp.zeros_like(x) for x in inputs]
            for j, i in enumerate(at):
                out[i] = ct * g[j] * (1 + inputs[n + j])
            return tuple(out)

        f.defvjp(forward, backward)
        return f(*arrays, *plants)

    return plain, by_hand, wrapped


class Bench:
    """The planted examples of one kernel (`register`, in the temporary project of
    `planted`), their checks and the reference."""

    def __init__(self, kernel: Kernel, ways: tuple[str, ...] = WAYS):
        import jax

        if not jax.config.jax_enable_x64:
            raise weanj.InputError("detection needs JAX's 64-bit types on (jax_enable_x64)")
        self.kernel, self.ways = kernel, ways
        self.names = {way: f"det-{kernel.name}-{way.strip('=').replace('_', '')}" for way in ways}
        self.registered: list[str] = []
        statics = tuple(range(len(kernel.arrays), len(kernel.arrays) + len(kernel.params)))
        self._loss = jax.jit(kernel.loss, static_argnums=statics)
        self.gradient = self._gradient()
        self._checked: dict[tuple, dict] = {}
        self._walked: dict[tuple, str] = {}
        self.masks = {a: kernel.mask(a) for a in kernel.wrt}  # 03-advection's traces T steps

    def register(self) -> None:
        """One example per way, the kernel's arrays and a plant array per wrt array, under
        the kernel's Taylor policy and kink mask; its one variant a family of its own."""
        kernel = self.kernel
        arrays = (*kernel.arrays, *(f"plant_{a}" for a in kernel.wrt))
        plain, by_hand, wrapped = planted_losses(kernel)
        for way, name in self.names.items():
            ex = weanj.register_example(
                weanj.Example(
                    name=name,
                    arrays=arrays,
                    wrt=kernel.wrt if len(kernel.wrt) > 1 else kernel.wrt[0],
                    generate=lambda seed: self._inputs({a: 0.0 for a in kernel.wrt}),
                    params=kernel.params,
                    taylor=kernel.taylor,
                    fd=kernel.fd,
                )
            )
            self.registered.append(name)
            if way == "grad=":
                weanj.jax_variant(ex, "jax-grad", family="grad", loss=plain, grad=by_hand)
            else:
                weanj.jax_variant(ex, "jax-vjp", family="vjp", loss=wrapped)

    def _inputs(self, plants) -> dict[str, np.ndarray]:
        k = self.kernel
        out = dict(k.arrays)
        for a in k.wrt:
            out[f"plant_{a}"] = np.broadcast_to(plants[a], np.shape(k.arrays[a])).copy()
        return out

    def _gradient(self) -> dict[str, np.ndarray]:
        import jax

        k = self.kernel
        at = tuple(list(k.arrays).index(a) for a in k.wrt)
        g = jax.grad(k.loss, argnums=at)(*k.args())
        return {a: np.asarray(gi) for a, gi in zip(k.wrt, g, strict=True)}

    def check(self, plants: dict[str, np.ndarray]) -> dict[str, dict[str, dict[str, str]]]:
        """`{way: {array: {"taylor"|"jvp": verdict}}}` of one fresh float64 check of both
        planted examples with these plants (once for the same plants: nothing planted is
        every planting's baseline)."""
        key = _key({a: plants[a] for a in self.kernel.wrt})
        if key not in self._checked:
            self._checked[key] = self._check(plants)
        return self._checked[key]

    def _check(self, plants: dict[str, np.ndarray]) -> dict[str, dict[str, dict[str, str]]]:
        for name in self.names.values():
            weanj.save_inputs(name, self._inputs(plants), params=self.kernel.values)
        judged = weanj.check(
            list(self.names.values()), dtype="float64", fresh=True, save=False, say=_quiet
        )
        out: dict[str, dict[str, dict[str, str]]] = {}
        for way, name in self.names.items():
            per = out.setdefault(way, {a: {} for a in self.kernel.wrt})
            for j in judged[name].judgements:
                if str(j.kind) in ("taylor", "jvp"):
                    per[j.array][str(j.kind)] = str(j.verdict)
        return out

    def loss_of(self, array: str):
        """The loss as a function of `array` alone, the other arrays as given."""
        k = self.kernel
        args = list(k.args())
        at = list(k.arrays).index(array)

        def loss(x):
            args[at] = x
            return float(self._loss(*args))

        return loss

    def reference(
        self, plants: dict[str, np.ndarray], array: str, check_floor: bool = False
    ) -> str:
        """The verdict of `array` tested alone, every step walked both ways (its policy,
        its kink mask), on the gradient with these plants (once for the same plants).
        `check_floor`: under the rounding floor the check starts from (`free_floor`: the
        loss's own, ε·Σ|x·∂L/∂x|, whichever array moves), the reference; without it,
        `taylor`'s 64·eps·|L| alone, a diagnosis of a difference between the two."""
        key = (check_floor, *_key(plants if check_floor else {array: plants[array]}))
        if key not in self._walked:
            self._walked[key] = self._reference(plants, array, check_floor)
        return self._walked[key]

    def _reference(self, plants: dict[str, np.ndarray], array: str, check_floor: bool) -> str:
        k = self.kernel
        g = self.gradient[array] * (1 + plants[array])
        if not check_floor:
            result = taylor(
                self.loss_of(array),
                k.arrays[array],
                g,
                k.policy(array),
                array=array,
                mask=self.masks[array],
                walk_every_step=True,
            )
            return str(result.judge()[0])
        loss = self.loss_of(array)
        result = taylor_arrays(
            lambda xs: loss(xs.get(array, k.arrays[array])),
            {array: k.arrays[array]},
            {array: g},
            {array: k.policy(array)},
            {array: self.masks[array]},
            floor=self.free_floor(plants),
            walk_every_step=True,
        )[array]
        return str(result.judge()[0])

    def rounding_level(self) -> float:
        """`64·eps·|L(x)|`: the rounding level `taylor` reads remainders against near x,
        where no floor is given (`_judge._remainder.ROUNDING`)."""
        k = self.kernel
        return ROUNDING * abs(self.loss_of(k.wrt[0])(k.arrays[k.wrt[0]]))

    def free_floor(self, plants: dict[str, np.ndarray]) -> float:
        """`ε·Σ|x·∂L/∂x|` over every wrt array, of the planted gradient: the rounding floor
        a check's Taylor test starts from (`_levels.backward_level`, float64)."""
        k = self.kernel
        total = sum(
            float(np.sum(np.abs(k.arrays[a]) * np.abs(self.gradient[a] * (1 + plants[a]))))
            for a in k.wrt
        )
        return float(np.finfo(np.float64).eps) * total


def curvature(kernel: Kernel, array: str) -> float:
    """`½·h0²·|dxᵀ∇²L dx|` along the Taylor test's own direction of `array` (its seed, its
    kink mask, its first step h0): the h² term of the remainder at the first step, the
    curvature another array's test would have had to see through when they moved at once."""
    import jax

    policy = kernel.policy(array)
    x, mask = kernel.arrays[array], kernel.mask(array)
    keep = np.ones(np.shape(x), bool) if mask is None else mask
    h0 = policy.h0 or 1e-2 * float(np.sqrt(np.sum(np.abs(x[keep]) ** 2)))
    dx = random_direction(np.random.default_rng(policy.seed), x, mask)
    args = list(kernel.args())
    at = list(kernel.arrays).index(array)

    def along(t):
        moved = list(args)
        moved[at] = x + t * dx
        return kernel.loss(*moved)

    return 0.5 * h0**2 * abs(float(jax.grad(jax.grad(along))(0.0)))


def _key(plants: dict[str, np.ndarray]) -> tuple:
    return tuple((a, np.asarray(p, np.float64).tobytes()) for a, p in sorted(plants.items()))


def _quiet(line: str) -> None:
    return None


@contextlib.contextmanager
def planted(kernel: Kernel, ways: tuple[str, ...] = WAYS) -> Iterator[Bench]:
    """The kernel's planted examples (one per way of planting, `WAYS`) in a temporary
    project (`$WEANJ_ROOT`), removed afterwards with the project, `$WEANJ_ROOT` as it
    was."""
    before = {v: os.environ.get(v) for v in ("WEANJ_ROOT", "WEANJ_COMPILATION_CACHE")}
    with tempfile.TemporaryDirectory(prefix="weanj-detection-") as root:
        os.environ["WEANJ_ROOT"] = root
        # JAX's persistent cache would be turned on in this temporary project, for the
        # rest of the process: every later compilation would write into a folder gone
        os.environ.setdefault("WEANJ_COMPILATION_CACHE", "off")
        bench = None
        try:
            bench = Bench(kernel, ways)
            bench.register()
            yield bench
        finally:
            for name in bench.registered if bench is not None else ():
                unregister_example(name)
            for variable, value in before.items():
                if value is None:
                    os.environ.pop(variable, None)
                else:
                    os.environ[variable] = value
