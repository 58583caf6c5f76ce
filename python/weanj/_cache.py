"""JAX's persistent compilation cache, on for weanj's commands and `pytest --weanj`.

A scientist re-runs `weanj check` after every edit of a port; with the cache, a second
run of an unchanged program loads its executables instead of compiling them again. The
cache lives in `<project root>/.weanj-cache/jax-<jax version>-jaxlib-<jaxlib version>/`,
so that two JAX versions never share entries (JAX's keys include them too; separate
folders make it plain and easy to delete). `$WEANJ_COMPILATION_CACHE` moves it (a path)
or turns it off (`0`, `off`, `false`).

`CompileClock` adds up, from JAX's own monitoring events, the seconds spent in XLA
compilation and the seconds the cache saved, for `weanj check`'s summary line and the
benchmark records (a first call served from the cache is marked as such, so compile
times stay honest).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

VARIABLE = "WEANJ_COMPILATION_CACHE"
_OFF = ("0", "off", "false", "no")
_state: dict = {"dir": None, "done": False, "clock": None}
_lock = threading.Lock()

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
SAVED_EVENT = "/jax/compilation_cache/compile_time_saved_sec"
HIT_EVENT = "/jax/compilation_cache/cache_hits"


def cache_dir(root: Path | None = None) -> Path | None:
    """Where the cache goes for this JAX (None: turned off)."""
    setting = os.environ.get(VARIABLE, "").strip()
    if setting.lower() in _OFF:
        return None
    import importlib.metadata as md

    versions = f"jax-{md.version('jax')}-jaxlib-{md.version('jaxlib')}"
    if setting:
        return Path(setting).expanduser() / versions
    if root is None:
        from ._project import project_root

        root = project_root()
    return Path(root) / ".weanj-cache" / versions


def enable(root: Path | None = None) -> Path | None:
    """Turn the cache on for this process (once; later calls return the same folder)."""
    with _lock:
        if _state["done"]:
            return _state["dir"]
        _state["done"] = True
        folder = cache_dir(root)
        if folder is None:
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None  # a read-only project: run without the cache rather than fail
        import jax

        jax.config.update("jax_compilation_cache_dir", str(folder))
        # weanj's kernels compile in tens of milliseconds to seconds: cache them all.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        _state["dir"] = folder
        return folder


@dataclass
class CompileClock:
    """Seconds of XLA compilation, seconds saved by the cache, and cache hits, counted
    from JAX's monitoring events since the clock was made (`clock()`)."""

    compiled_s: float = 0.0
    saved_s: float = 0.0
    hits: int = 0

    def _on_duration(self, event: str, seconds: float, **_) -> None:
        if event == COMPILE_EVENT:
            self.compiled_s += seconds
        elif event == SAVED_EVENT:
            self.saved_s += seconds

    def _on_event(self, event: str, **_) -> None:
        if event == HIT_EVENT:
            self.hits += 1

    def summary(self) -> str:
        where = _state["dir"]
        if where is None:
            return f"compilation {self.compiled_s:.1f} s (compilation cache off)"
        return (
            f"compilation {self.compiled_s:.1f} s, {self.hits} program(s) from the compilation "
            f"cache saved {self.saved_s:.1f} s ({where})"
        )


def clock() -> CompileClock:
    """The process's clock, made (and its listeners registered) on first use."""
    with _lock:
        if _state["clock"] is None:
            from jax import monitoring

            c = CompileClock()
            monitoring.register_event_duration_secs_listener(c._on_duration)
            monitoring.register_event_listener(c._on_event)
            _state["clock"] = c
        return _state["clock"]
