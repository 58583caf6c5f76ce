"""JAX's 64-bit types as each variant's program has them (docs/DESIGN.md §2.2).

`jax_enable_x64` is one process-wide setting, and a JAX program's results depend on it:
with it off, float64 inputs are silently truncated to float32 and default-dtype arrays
(`jnp.arange(n)`, `jnp.zeros(k)`) are 32-bit; with it on they are 64-bit. weanj runs each
variant in the configuration its own program has, never one it chose:

1. `[tool.weanj] x64 = true | false`, where the project declares it (a program that
   enables x64 at start-up, outside its kernel modules; weanj's own examples declare
   `true`, `BUILTIN_X64`), for every variant one of the project's example modules
   registers, whoever imported the module (weanj's registry, or a notebook's `import k`
   before weanj loaded the project); where a module's own code sets it contrary to the
   declaration, the declaration holds, and its source names both;
2. else what the variant's example module leaves at import, starting from the process's
   setting (JAX's default, off, or `$JAX_ENABLE_X64`);
3. a variant registered outside an example module (a notebook, a test) runs in the
   session's setting at the time of the call: weanj switches nothing.

A float64 run of a variant that, so configured, computes in float32 is that variant's
fault, and so is a float32 run that comes back 64-bit (`fault_line`). The JAX backend
reads this table (`program_x64`) into each run's `Configuration`; nothing else does.
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


# {module: X64}: what each example module's program has (set as it is imported), and
# {(example, variant): module} for the variants it registered.
_MODULES: dict[str, X64] = {}
_VARIANT_MODULE: dict[tuple[str, str], str] = {}
# {module: X64}: the setting a module's program had when it first registered a variant
# outside weanj's import of it (a notebook's `import k` before weanj loads the project).
_REGISTERED_UNDER: dict[str, X64] = {}

_TRUE = ("1", "true", "yes", "on", "t", "y")


def _environment() -> X64 | None:
    value = os.environ.get("JAX_ENABLE_X64")
    if value is None:
        return None
    on = value.strip().lower() in _TRUE
    return X64(on, f"JAX_ENABLE_X64={value} in the environment")


def _start() -> X64:
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
    return _start()


def set_x64(on: bool) -> None:
    """Set the process's `jax_enable_x64` (importing JAX only when it must change)."""
    jax = sys.modules.get("jax")
    if jax is None:
        if session_x64().enabled == on:
            return
        import jax
    jax.config.update("jax_enable_x64", bool(on))


def _holds_over(declared: X64, program: str) -> X64:
    """The declaration, its source naming the program's contrary setting it holds over
    (said once: in the x64 line of every view)."""
    return X64(declared.enabled, f"{declared.source}; it holds over {program}")


@contextlib.contextmanager
def importing(module: str, declared: X64 | None) -> Iterator[None]:
    """Import `module` as its own program: from the declared setting (else the process's),
    and note what it leaves; the process's setting is put back afterwards, so one module's
    choice is never another's. A module imported before (its import now a no-op) is
    judged by what its program had when it registered (`_already_imported`)."""
    if module in sys.modules:
        yield
        _already_imported(module, declared)
        return
    before = session_x64()
    base = declared or before
    if declared is not None:
        set_x64(declared.enabled)
    try:
        yield
    finally:
        after = session_x64()
        turned = "on" if after.enabled else "off"
        if after.enabled != base.enabled and declared is not None:
            _MODULES[module] = _holds_over(declared, f"{module}, which turns it {turned} at import")
        elif after.enabled != base.enabled:
            _MODULES[module] = X64(after.enabled, f"{module} turns it {turned} at import")
        elif declared is not None:
            _MODULES[module] = declared
        else:
            _MODULES[module] = X64(base.enabled, f"{base.source}; {module} leaves it")
        if after.enabled != before.enabled:
            set_x64(before.enabled)


def _already_imported(module: str, declared: X64 | None) -> None:
    """A project module the program imported before weanj loaded the project (`import k`
    first in a notebook): the declaration holds for its variants, as if weanj had imported
    it (named over the setting its program had when it registered them, where that was
    set contrary to both the declaration and the process's start); undeclared, its
    variants run in the session's setting at each call (rule 3)."""
    noted = _REGISTERED_UNDER.get(module)
    if declared is None:
        _MODULES.pop(module, None)
    elif noted is None or noted.enabled in (declared.enabled, _start().enabled):
        _MODULES[module] = declared
    else:
        had = "on" if noted.enabled else "off"
        program = f"{module}'s program, which had it {had} when it registered"
        _MODULES[module] = _holds_over(declared, program)


def registered(example: str, variant: str, module: str, *, by_weanj: bool) -> None:
    """Note the module a variant was registered by (`by_weanj`: while the registry imports
    it), and, registered outside weanj's import, the setting its program had then."""
    _VARIANT_MODULE[(example, variant)] = module
    if not by_weanj:
        _REGISTERED_UNDER.setdefault(module, session_x64())


def forget_example(example: str) -> None:
    for key in [k for k in _VARIANT_MODULE if k[0] == example]:
        del _VARIANT_MODULE[key]


def program_x64(example: str, variant: str) -> X64 | None:
    """The setting a variant's program pins (its module's, rule 1 or 2), or None: the
    session's at each call (rule 3). Read by the JAX backend's configuration only."""
    module = _VARIANT_MODULE.get((example, variant))
    return _MODULES.get(module) if module else None


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
