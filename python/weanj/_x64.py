"""JAX's 64-bit types as each variant's program has them (docs/DESIGN.md §2.2).

`jax_enable_x64` is one process-wide setting, and a JAX program's results depend on it:
with it off, float64 inputs are silently truncated to float32 and default-dtype arrays
(`jnp.arange(n)`, `jnp.zeros(k)`) are 32-bit; with it on they are 64-bit. weanj runs each
variant in the configuration its own program has, never one it chose:

1. `[tool.weanj] x64 = true | false`, where the project declares it (a program that
   enables x64 at start-up, outside its kernel modules; weanj's own examples declare
   `true`, `BUILTIN_X64`), for every variant one of the project's modules registers,
   whoever imported the module (weanj's registry, or a notebook's `import k` before weanj
   loaded the project); where the module's program sets it contrary to the declaration,
   the declaration holds, and its source names both;
2. else what importing the variant's module alone in a fresh interpreter leaves (its own
   imports included, from the interpreter's start: JAX's default, off, or
   `$JAX_ENABLE_X64`), whatever was imported before it in this process, crediting the
   module whose own code set it (`_x64_modules`, from the record of the imports the registry made);
3. a variant registered outside the project's modules (a notebook's cell, a test) runs in
   the session's setting at the time of the call: weanj switches nothing.

A float64 run of a variant that, so configured, computes in float32 is that variant's
fault, and so is a float32 run that comes back 64-bit (`fault_line`). The JAX backend
reads it (the project's own table: `_context.Project.x64_of`) into each run's
`Configuration`; nothing else does.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# weanj's own examples are float64 programs (their Julia originals compute in Float64): the
# declaration its pyproject.toml makes (`[tool.weanj] x64 = true`), kept for them wherever
# they load (`builtin = true`, a `$WEANJ_ROOT` without [tool.weanj]). tests/test_x64.py
# checks that the two agree.
BUILTIN_X64 = True
BUILTIN_SOURCE = "weanj's built-in examples declare x64 = true"


@dataclass(frozen=True)
class X64:
    """A program's `jax_enable_x64`: on or off, and where that comes from."""

    enabled: bool
    source: str

    @property
    def word(self) -> str:
        return "on" if self.enabled else "off"

    def describe(self) -> str:
        """`x64 on ([tool.weanj] x64 = true in /p/pyproject.toml)`."""
        return f"x64 {self.word} ({self.source})"

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "source": self.source}


_TRUE = ("1", "true", "yes", "on", "t", "y")


def _environment() -> X64 | None:
    value = os.environ.get("JAX_ENABLE_X64")
    if value is None:
        return None
    on = value.strip().lower() in _TRUE
    return X64(on, f"JAX_ENABLE_X64={value} in the environment")


def at_start() -> X64:
    """The setting a process starts with: `$JAX_ENABLE_X64`, else JAX's default (off)."""
    return _environment() or X64(False, "JAX's default")


def session_x64() -> X64:
    """The process's setting now (JAX imported or not)."""
    jax = sys.modules.get("jax")
    if jax is not None:
        on = bool(jax.config.jax_enable_x64)
        env = _environment()
        if env is not None and env.enabled == on:
            return env
        return X64(on, "the session's setting" if on else "JAX's default")
    return at_start()


def reading() -> bool:
    """The setting now, for the tracer: while JAX itself imports (its config not made
    yet), the interpreter's start, which JAX's import reads."""
    try:
        return session_x64().enabled
    except Exception:
        return at_start().enabled


def set_x64(on: bool) -> None:
    """Set the process's `jax_enable_x64` (importing JAX only when it must change)."""
    jax = sys.modules.get("jax")
    if jax is None:
        if session_x64().enabled == on:
            return
        import jax
    jax.config.update("jax_enable_x64", bool(on))


@contextlib.contextmanager
def importing(start: X64) -> Iterator[None]:
    """Import a module from the setting `start` (the declared one, else the interpreter's
    start), as a fresh interpreter would; the process's setting is put back afterwards, so
    one module's choice is never another's. What the module's program leaves is learnt
    from the record of the imports (`_x64_modules.TRACER`), not from this process's
    setting afterwards: a module imported earlier is not executed again here."""
    before = session_x64()
    if before.enabled != start.enabled:
        set_x64(start.enabled)
    try:
        yield
    finally:
        if session_x64().enabled != before.enabled:
            set_x64(before.enabled)


def executing_module() -> str:
    """The module whose top-level code is running now (the innermost frame of a module's
    own body): the one that registers a variant, whoever's function it calls to do so;
    `__main__` in a script or a notebook's cell."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            return str(frame.f_globals.get("__name__", ""))
        frame = frame.f_back
    return ""


def fault_line(name: str, config: X64, returned: str, dtype: str, what: str) -> str | None:
    """The one line of a run whose dtype follows from the x64 configuration, or None."""
    if dtype == "float64" and returned in ("float32", "complex64") and not config.enabled:
        return (
            f"{name} computes in float32 as configured: x64 is off ({config.source}), so its "
            f"float64 inputs are truncated to float32 ({what} is {returned}); enable x64 in the "
            'program (jax.config.update("jax_enable_x64", True) in the module, or x64 = true '
            'in [tool.weanj]), or declare the variant float32-only (dtypes=("float32",))'
        )
    if dtype == "float32" and returned in ("float64", "complex128") and config.enabled:
        return (
            f"{name} returned {returned} for float32 inputs ({what}): x64 is on "
            f"({config.source}), so default-dtype arrays (jnp.arange, jnp.zeros, constants "
            "made by jnp.array) are 64-bit and promote a float32 computation; give them the "
            "inputs' dtype (jnp.zeros(k, dtype=x.dtype)), or declare the variant "
            'float64-only (dtypes=("float64",))'
        )
    return None
