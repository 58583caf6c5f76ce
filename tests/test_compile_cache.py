"""The persistent compilation cache covers every program a check compiles (issue 73,
item 3): a second cold process on the same machine, with the same cache folder, compiles
nothing new. Each process is a fresh `python -m weanj check --fresh` (an evaluation record
would compile nothing at all), and JAX's own log says, for every program it asks for,
whether the cache served it (`JAX_LOG_COMPILES`)."""

from __future__ import annotations

import re

from .projects import run_in, user_env, write_project

KERNEL = """\
import jax, jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="60-cached", arrays=("u0", "k"), wrt=("u0", "k"), params=(weanj.Param("T", default=3),),
    generate=lambda seed: {"u0": np.random.default_rng(seed).random(8),
                           "k": 0.1 + 0.1 * np.random.default_rng(seed + 1).random(8)}))


def step(u, k):
    return u + k * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)) * (1 + u * u) * 0.2


@weanj.jax_variant(ex, "jax-scan", family="heat")
def by_scan(u0, k, T):
    u, _ = jax.lax.scan(lambda u, _: (step(u, k), None), u0, None, length=T)
    return jnp.sum(u**2)


@jax.custom_vjp
def _same(u):
    return u


_same.defvjp(lambda u: (u, None), lambda _, g: (g,))


@weanj.jax_variant(ex, "jax-custom", family="heat")
def by_loop(u0, k, T):
    u = _same(u0)
    for _ in range(T):
        u = step(u, k)
    return jnp.sum(u**2)
"""


def _asked_and_served(log: str) -> tuple[list[str], list[str]]:
    """The programs JAX compiled or loaded (`Compiling jit(f) …`), and those the
    persistent cache served (`Persistent compilation cache hit for 'jit_f'`)."""
    asked = re.findall(r"Compiling (jit\(\w+\))", log)
    served = re.findall(r"Persistent compilation cache hit for 'jit_(\w+)'", log)
    return [a[4:-1] for a in asked], served


def test_a_second_cold_check_compiles_nothing_new(tmp_path):
    root = write_project(tmp_path, {"kernels/cached.py": KERNEL})
    env = user_env(
        WEANJ_COMPILATION_CACHE=str(tmp_path / "cache"), JAX_LOG_COMPILES="1", JAX_ENABLE_X64="1"
    )
    first = run_in(root, "-m", "weanj", "check", "--fresh", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    asked, served = _asked_and_served(first.stdout + first.stderr)
    # the float64 check's one program (the full one, or the reverse one for a custom_vjp),
    # and the float32 evaluation's; nothing in the cache yet
    assert sorted(asked) == ["full", "loss_and_gradient", "loss_and_gradient", "reverse"], asked
    assert served == []
    second = run_in(root, "-m", "weanj", "check", "--fresh", env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    asked_again, served_again = _asked_and_served(second.stdout + second.stderr)
    assert sorted(asked_again) == sorted(asked)
    assert sorted(served_again) == sorted(asked_again), (asked_again, served_again)
    assert f"{len(asked)} program(s) from the compilation cache" in second.stdout
